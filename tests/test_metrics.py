"""ncbook.metrics against naive float64 formulas, constructed collapse, invariances, streaming and bad input."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from ncbook import metrics as m

import naive


def random_problem(seed, K=4, d=7, sizes=None, scale=1.0):
    rng = np.random.default_rng(seed)
    sizes = sizes or [5 + 3 * c for c in range(K)]
    y = np.concatenate([np.full(n, c) for c, n in enumerate(sizes)])
    mus = rng.normal(size=(K, d)) * 3
    Z = mus[y] + scale * rng.normal(size=(len(y), d))
    W = rng.normal(size=(K, d))
    return Z, y, W


def collapsed(K, d, frame="etf", n=6, seed=0):
    """Features equal to their class mean; means form a simplex ETF or an orthogonal frame, rotated randomly."""
    R, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    if frame == "etf":
        means = (np.eye(K) - 1.0 / K)[:, :K] @ np.eye(K, d)   # rows: e_c - 1/K, centred, in the first K coords
    else:
        means = np.eye(K, d)
    means = 2.5 * means @ R.T
    y = np.repeat(np.arange(K), n)
    return means[y], y, means


@pytest.mark.parametrize("seed,sizes,gm", [(0, None, "samples"), (1, [3, 3, 3, 3], "samples"),
                                           (2, [2, 9, 4, 6], "class_means"), (3, None, "class_means")])
def test_every_metric_equals_naive_formula(seed, sizes, gm):
    Z, y, W = random_problem(seed, sizes=sizes)
    K = 4
    s = m.class_stats(Z, y)
    assert m.nc1_trace_ratio(s, global_mean=gm) == pytest.approx(naive.nc1_trace_ratio(Z, y, K, gm), rel=1e-12)
    assert m.nc1_pinv(s, global_mean=gm) == pytest.approx(naive.nc1_pinv(Z, y, K, gm), rel=1e-10)
    assert m.nc2_etf_distance(s, global_mean=gm) == pytest.approx(naive.nc2_etf_distance(Z, y, K, gm), rel=1e-10)
    assert m.nc3_etf_distance(s, W, global_mean=gm) == pytest.approx(naive.nc3_etf_distance(Z, y, W, gm), rel=1e-10)
    assert m.nc2_condition_number(s) == pytest.approx(naive.nc2_condition_number(Z, y, K), rel=1e-10)
    assert m.nc2_orthogonal_frame_distance(s) == pytest.approx(naive.nc2_orthogonal_frame_distance(Z, y, K), rel=1e-10)
    assert m.nc3_cosine(Z, y, W) == pytest.approx(naive.nc3_cosine(Z, y, W), rel=1e-12)
    assert m.nc3_class_mean_cosine(s, W) == pytest.approx(naive.nc3_class_mean_cosine(Z, y, W), rel=1e-12)
    np.testing.assert_allclose(m.nc1_per_class(s), naive.nc1_per_class(Z, y, K), rtol=1e-10)
    np.testing.assert_allclose(m.within_class_covariance(Z, y).numpy(), naive.sigma_w(Z, y, K), atol=1e-12)
    Mu = m.class_means(Z, y)
    np.testing.assert_allclose(m.between_class_covariance(Mu, torch.bincount(torch.as_tensor(y)), gm).numpy(),
                               naive.sigma_b(Z, y, K, gm), atol=1e-12)


def test_per_class_nc1_averages_to_nc1():
    Z, y, _ = random_problem(5, sizes=[4, 11, 6, 8])
    n = np.bincount(y)
    assert (n / n.sum() * m.nc1_per_class(Z, y)).sum() == pytest.approx(m.nc1_pinv(Z, y), rel=1e-12)


def test_balancedness_and_negativity_equal_naive():
    rng = np.random.default_rng(0)
    W1, W2, Z = rng.normal(size=(6, 9)), rng.normal(size=(4, 6)), rng.normal(size=(30, 8))
    assert m.balancedness(W2, W1) == pytest.approx(naive.balancedness(W2, W1), rel=1e-10)
    assert m.negativity(Z) == pytest.approx(naive.negativity(Z), rel=1e-10)


@pytest.mark.parametrize("K,d", [(3, 3), (4, 10), (10, 12)])
def test_exact_collapse_simplex_etf(K, d):
    Z, y, means = collapsed(K, d, "etf")
    W = means  # classifier rows aligned with the class means
    assert m.nc1_trace_ratio(Z, y) == pytest.approx(0, abs=1e-14)
    assert m.nc1_pinv(Z, y) == pytest.approx(0, abs=1e-14)
    assert np.allclose(m.nc1_per_class(Z, y), 0, atol=1e-14)
    assert m.nc2_etf_distance(Z, y) == pytest.approx(0, abs=1e-12)
    assert m.nc3_cosine(Z, y, W) == pytest.approx(1, abs=1e-12)
    assert m.nc3_class_mean_cosine(Z, W, labels=y) == pytest.approx(1, abs=1e-12)
    assert m.nc3_etf_distance(Z, W, labels=y) == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("K,d", [(2, 2), (4, 10), (10, 10)])
def test_exact_collapse_orthogonal_frame(K, d):
    Z, y, means = collapsed(K, d, "orthogonal")
    assert m.nc1_pinv(Z, y) == pytest.approx(0, abs=1e-14)
    assert m.nc2_condition_number(Z, y) == pytest.approx(1, abs=1e-12)
    assert m.nc2_orthogonal_frame_distance(Z, y) == pytest.approx(0, abs=1e-12)
    # centred orthogonal frame is a simplex ETF (Tirer et al. Thm 2.2)
    assert m.nc2_etf_distance(Z, y) == pytest.approx(0, abs=1e-12)
    assert m.nc3_cosine(Z, y, means) == pytest.approx(1, abs=1e-12)


def test_metrics_detect_departure_from_collapse():
    Z, y, means = collapsed(4, 6, "orthogonal")
    noisy = Z + 0.1 * np.random.default_rng(1).normal(size=Z.shape)
    assert m.nc1_trace_ratio(noisy, y) > 1e-3
    assert m.nc1_pinv(noisy, y) > 1e-3
    assert m.nc2_condition_number(noisy, y) > 1.0 + 1e-3
    assert m.nc3_cosine(noisy, y, means) < 1 - 1e-4


def test_invariances_rotation_scale_order():
    Z, y, W = random_problem(7, K=4, d=6)
    R, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(6, 6)))
    perm = np.random.default_rng(1).permutation(len(y))
    base = m.nc_metrics(Z, y, W)
    for Z2, y2, W2 in [(Z @ R.T, y, W @ R.T), (3.7 * Z, y, 0.2 * W), (Z[perm], y[perm], W)]:
        other = m.nc_metrics(Z2, y2, W2)
        for k, v in base.items():
            assert other[k] == pytest.approx(v, rel=1e-9), k
    # NC1 (both variants) is also translation invariant; the uncentred NC2 is not
    shifted = Z + 5.0
    assert m.nc1_pinv(shifted, y) == pytest.approx(base["nc1_pinv"], rel=1e-9)
    assert m.nc1_trace_ratio(shifted, y) == pytest.approx(base["nc1_trace_ratio"], rel=1e-9)
    assert m.nc2_condition_number(shifted, y) != pytest.approx(base["nc2_condition_number"], rel=1e-3)
    # balancedness is invariant under W_l -> U W_l V, W_{l+1} -> W' U^T
    rng = np.random.default_rng(2)
    W1, W2 = rng.normal(size=(6, 5)), rng.normal(size=(3, 6))
    U, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    V, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    assert m.balancedness(W2 @ U.T, U @ W1 @ V) == pytest.approx(m.balancedness(W2, W1), rel=1e-9)


def test_balancedness_zero_for_balanced_pair():
    rng = np.random.default_rng(3)
    U, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    V, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    S = np.diag(rng.uniform(0.5, 2, 5))
    # W_l = U S V^T and W_{l+1} = V' S U^T give W_{l+1}^T W_{l+1} = U S^2 U^T = W_l W_l^T
    assert m.balancedness(V @ S @ U.T, U @ S @ V.T) == pytest.approx(0, abs=1e-12)
    assert m.negativity(np.abs(rng.normal(size=(10, 4)))) == 0.0


def test_two_pass_streaming_equals_one_shot_and_keeps_per_class_nc1():
    Z, y, W = random_problem(11, K=5, d=9, sizes=[7, 3, 12, 5, 9])
    order = np.random.default_rng(1).permutation(len(y))
    Z, y = Z[order] + 40.0, y[order]                            # an offset: the shift must keep it exact
    batches = [(Z[i:i + 6].astype(np.float32), y[i:i + 6]) for i in range(0, len(y), 6)]
    s = m.streamed_class_stats(batches, 5, classifier=W)
    one = m.class_stats(Z, y, classifier=W)                     # float64, one shot
    for metric in (m.nc1_pinv, m.nc1_trace_ratio, m.nc2_etf_distance, m.nc2_condition_number, m.nc3_cosine):
        assert metric(s) == pytest.approx(metric(one), rel=1e-5), metric.__name__    # float32 input
    np.testing.assert_allclose(m.nc1_per_class(s), m.nc1_per_class(one), rtol=1e-5)
    s64 = m.streamed_class_stats([(Z[i:i + 6], y[i:i + 6]) for i in range(0, len(y), 6)], 5)     # float64
    np.testing.assert_allclose(m.nc1_per_class(s64), m.nc1_per_class(one), rtol=1e-10)
    with pytest.raises(ValueError, match="changed between the two passes"):
        m.streamed_class_stats(iter(batches), 5)                 # a one-shot iterator is empty on pass 2
    with pytest.raises(ValueError, match=r"class\(es\) \[4\] received no samples"):
        m.streamed_class_stats([(Zb[yb != 4], yb[yb != 4]) for Zb, yb in batches], 5)


def test_streaming_equals_one_shot_with_merge():
    Z, y, W = random_problem(11, K=5, d=9, sizes=[7, 3, 12, 5, 9])
    order = np.random.default_rng(0).permutation(len(y))
    Z, y = Z[order], y[order]
    a = m.StreamingClassStats(5, 9, classifier=W)
    for start in range(0, 20, 6):
        a.update(Z[start:min(start + 6, 20)], y[start:min(start + 6, 20)])
    b = m.StreamingClassStats(5, 9, classifier=W)
    b.update(Z[20:31], y[20:31]).update(Z[31:], y[31:])
    s = a.merge(b).finalize()
    one = m.class_stats(Z, y)
    assert m.nc1_pinv(s) == pytest.approx(m.nc1_pinv(one), rel=1e-10)
    assert m.nc1_trace_ratio(s) == pytest.approx(m.nc1_trace_ratio(one), rel=1e-12)
    np.testing.assert_allclose(m.nc1_per_class(s), m.nc1_per_class(one), rtol=1e-10)
    assert m.nc2_etf_distance(s) == pytest.approx(m.nc2_etf_distance(one), rel=1e-10)
    assert m.nc2_condition_number(s) == pytest.approx(m.nc2_condition_number(one), rel=1e-10)
    assert a.nc3_cosine() == pytest.approx(m.nc3_cosine(Z, y, W), rel=1e-12)


def test_float32_input_matches_float64_on_near_collapsed_features():
    rng = np.random.default_rng(0)
    K, d, n = 10, 256, 50
    means = rng.normal(size=(K, d)) * 10
    y = np.repeat(np.arange(K), n)
    Z32 = (means[y] + 1e-3 * rng.normal(size=(K * n, d))).astype(np.float32)
    Z64 = Z32.astype(np.float64)  # the very same numbers, in float64
    s32, s64 = m.class_stats(torch.from_numpy(Z32), y), m.class_stats(Z64, y)
    for f in (m.nc1_pinv, m.nc1_trace_ratio, m.nc2_etf_distance, m.nc2_condition_number):
        assert f(s32) == pytest.approx(f(s64), rel=1e-5), f.__name__
    W = means + rng.normal(size=means.shape)
    assert m.nc3_cosine(torch.from_numpy(Z32), y, W) == pytest.approx(naive.nc3_cosine(Z64, y, W), rel=1e-6)
    ref = naive.nc1_pinv(Z64, y, K, within=naive.sigma_w_fast)
    assert m.nc1_pinv(s32) == pytest.approx(ref, rel=1e-6)
    assert m.nc1_pinv(s32) > 0


@pytest.mark.parametrize("dtype,N,d,K,with_W,tol", [
    (np.float32, 700, 33, 3, False, 1e-6),     # N not a multiple of the block, r = q = 3 odd (padded)
    (np.float32, 50, 64, 10, True, 1e-6),      # fewer rows than one block, r = q + K = 20
    (np.float64, 513, 5, 7, True, 1e-13),      # d < K: q = d = 5, r = 12
    (np.float64, 300, 1, 2, False, 1e-13),     # d = 1: q = r = 1
])
def test_fused_cpu_pass_equals_the_torch_pass(dtype, N, d, K, with_W, tol):
    """The numba kernel and the torch operations compute the same second pass of class_stats."""
    rng = np.random.default_rng(N)
    y = torch.from_numpy(rng.integers(0, K - 1, N))              # class K-1 gets no row: an empty class in a batch
    Z = torch.from_numpy((rng.normal(size=(K, d))[y] + 1e-3 * rng.normal(size=(N, d))).astype(dtype))
    means = torch.from_numpy(rng.normal(size=(K, d)))
    a, Q = means.to(Z.dtype), m.mean_basis(means)
    R = torch.cat([Q, torch.from_numpy(rng.normal(size=(d, K)))], dim=1) if with_W else Q
    fused, plain = m._shifted_moments_cpu(Z, y, a, R, Q.shape[1]), m._shifted_moments_torch(Z, y, a, R, Q.shape[1])
    for u, v in zip(fused, plain, strict=True):
        assert u.dtype == v.dtype == torch.float64 and u.shape == v.shape
        np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=tol, atol=tol * float(v.abs().max()))
    assert not fused[2][K - 1].any()


def test_fused_pass_floats_do_not_depend_on_the_thread_count():
    Z, y, W = random_problem(5, K=6, d=40, sizes=[300, 200, 400, 250, 350, 280])
    Z = torch.from_numpy(Z.astype(np.float32))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = m.class_stats(Z, y, classifier=W)
        torch.set_num_threads(2)
        two = m.class_stats(Z, y, classifier=W)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one.scatter_q, two.scatter_q) and torch.equal(one.scatter_trace, two.scatter_trace)
    assert one.cos_sum == two.cos_sum


def test_the_fused_pass_leaves_torch_thread_count_as_it_was():
    """numba's OpenMP layer resets the OpenMP thread count on its first parallel call; a run on one thread (as the
    results are regenerated, two at a time) must stay on one thread, or the two runs fight over both cores."""
    code = ("import torch; from ncbook import metrics; assert torch.get_num_threads() == 1; "
            "metrics.class_stats(torch.randn(600, 8), torch.arange(600) % 3); print(torch.get_num_threads())")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_nc3_cosine_from_stats_needs_classifier():
    Z, y, W = random_problem(3)
    s = m.class_stats(Z, y, classifier=W)
    assert m.nc3_cosine(s) == pytest.approx(naive.nc3_cosine(Z, y, W), rel=1e-12)
    with pytest.raises(ValueError, match="without a classifier"):
        m.nc3_cosine(m.class_stats(Z, y))


def test_numpy_and_torch_inputs_agree_and_device_is_kept():
    Z, y, W = random_problem(2)
    a = m.nc_metrics(Z, y, W)
    b = m.nc_metrics(torch.from_numpy(Z), torch.from_numpy(y), torch.from_numpy(W))
    assert a == pytest.approx(b, rel=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu():
    Z, y, W = random_problem(4, K=4, d=7)
    cpu = m.nc_metrics(Z, y, W)
    gpu = m.nc_metrics(torch.from_numpy(Z).cuda(), torch.from_numpy(y).cuda(), torch.from_numpy(W).cuda())
    assert gpu == pytest.approx(cpu, rel=1e-9)
    st = m.StreamingClassStats(4, 7, device="cuda").update(torch.from_numpy(Z).cuda(), torch.from_numpy(y).cuda())
    assert m.nc1_pinv(st.finalize()) == pytest.approx(cpu["nc1_pinv"], rel=1e-9)


@pytest.mark.parametrize("Z,y,match", [
    (np.ones((4, 3)), np.zeros(4, dtype=int), "at least 2 classes"),
    (np.random.default_rng(0).normal(size=(6, 3)), np.array([0, 0, 2, 2, 0, 2]), r"class\(es\) \[1\]"),
    (np.ones((4, 3)), np.array([0, 1, 0]), "one label per row"),
    (np.ones((4, 3)), np.array([0, 1, -1, 1]), "0..K-1"),
    (np.ones(4), np.array([0, 1, 0, 1]), "2-D"),
    (np.array([[np.nan, 1.0], [0, 1], [1, 1], [2, 2]]), np.array([0, 1, 0, 1]), "NaN or inf"),
    (np.ones((4, 3)), np.array([0.0, 1, 0, 1]), "integers"),
])
def test_bad_input_gives_clear_errors(Z, y, match):
    with pytest.raises((ValueError, TypeError), match=match):
        m.nc1_pinv(Z, y)


def test_no_samples_is_named_as_such():
    """Empty features and labels: the error says so (it said "need at least 2 classes, got 0"), on every route."""
    Z, y = np.ones((0, 3)), np.zeros(0, dtype=int)
    calls = [lambda: m.nc1_trace_ratio(Z, y), lambda: m.nc1_pinv(torch.from_numpy(Z), torch.from_numpy(y)),
             lambda: m.class_stats(Z, y, num_classes=3), lambda: m.class_means(Z, y)]
    for call in calls:
        with pytest.raises(ValueError, match="^no samples: features and labels are empty$"):
            call()


def test_errors_for_labels_out_of_range_dimension_and_degenerate_means():
    Z, y, W = random_problem(0, K=4, d=3)
    with pytest.raises(ValueError, match="d >= 4"):
        m.nc2_condition_number(Z, y)
    with pytest.raises(ValueError, match=r"0\.\.2"):
        m.class_stats(Z, y, num_classes=3)
    with pytest.raises(ValueError, match="shape"):
        m.nc3_cosine(Z, y, W[:, :2])
    same = np.ones((6, 3))
    with pytest.raises(ValueError, match="coincide"):
        m.nc1_pinv(same, np.array([0, 1, 0, 1, 0, 1]))
    with pytest.raises(ValueError, match="chain"):
        m.balancedness(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="received no samples"):
        m.StreamingClassStats(3, 3).update(Z[:2], np.array([0, 1])).finalize()


@pytest.mark.parametrize("shape", [(600, 40), (40, 600), (30, 30), (50, 35)])
def test_op_norm_from_the_small_gram_equals_the_svd(shape):
    A = torch.randn(*shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert abs(float(m.operator_norm(A)) / float(torch.linalg.svdvals(A)[0]) - 1) < 1e-12


def test_a_batch_with_nan_or_inf_is_refused_and_huge_finite_values_are_not():
    Z = np.ones((4, 3), dtype=np.float32)
    for bad in (np.nan, np.inf, -np.inf):
        Zb = Z.copy()
        Zb[2, 1] = bad
        with pytest.raises(ValueError, match="NaN or inf"):
            m.check_batch(Zb, np.array([0, 1, 0, 1]), 2)
    huge = np.full((4, 3), 3e38, dtype=np.float32)              # finite, but their sum overflows to inf
    assert m.check_batch(huge, np.array([0, 1, 0, 1]), 2)[0].shape == (4, 3)
    with pytest.raises(ValueError, match="integers"):
        m.check_batch(Z, np.array([0.0, 1.0, 0.5, 1.0]), 2)


@pytest.mark.parametrize("shape", [(400, 300), (300, 800), (256, 256)])
def test_op_norm_by_lanczos_equals_the_svd(shape):
    """From LANCZOS_MIN_DIM on the norm comes from Lanczos on the Gram operator, never a dense decomposition."""
    A = torch.from_numpy(np.random.default_rng(1).normal(size=shape))
    assert min(shape) >= m.LANCZOS_MIN_DIM
    assert abs(float(m.operator_norm(A)) / float(torch.linalg.svdvals(A)[0]) - 1) < 1e-12


@pytest.mark.parametrize("scale_B", [0.5, 2.0])
def test_balancedness_by_lanczos_equals_naive(scale_B):
    """At d_l = 300 (Lanczos path) against the SVD of the formed Grams; with scale_B = 2 the largest-magnitude
    eigenvalue of W2^T W2 - W1 W1^T is negative, so a solver for the largest algebraic one would fail."""
    rng = np.random.default_rng(2)
    W2, W1 = rng.normal(size=(10, 300)) / 17, scale_B * rng.normal(size=(300, 500)) / 22
    M = W2.T @ W2 - W1 @ W1.T
    assert (np.abs(np.linalg.eigvalsh(M)).argmax() == 0) == (scale_B > 1)     # the dominant eigenvalue's sign
    assert m.balancedness(W2, W1) == pytest.approx(naive.balancedness(W2, W1), rel=1e-10)


def test_balancedness_by_lanczos_is_zero_for_a_balanced_pair():
    rng = np.random.default_rng(3)
    U = np.linalg.qr(rng.normal(size=(300, 300)))[0]
    V = np.linalg.qr(rng.normal(size=(300, 300)))[0]
    S = np.diag(rng.uniform(0.5, 2.0, 300))
    assert m.balancedness(V @ S @ U.T, U @ S @ V.T) == pytest.approx(0, abs=1e-12)


def test_cosine_bound_is_wielandts_and_tight():
    """Every pairwise |cosine| of a matrix's columns is at most (κ²-1)/(κ²+1); two unit columns at angle θ attain it."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        M = rng.normal(size=(12, 4)) @ np.diag(rng.uniform(0.1, 3, 4))
        s = np.linalg.svd(M, compute_uv=False)
        C = M / np.linalg.norm(M, axis=0)
        cos = np.abs(C.T @ C - np.eye(4)).max()
        assert cos <= m.cosine_bound(s[0] / s[-1]) + 1e-12
    c = 0.6
    M = np.array([[1.0, c], [0.0, np.sqrt(1 - c * c)]])
    s = np.linalg.svd(M, compute_uv=False)
    assert m.cosine_bound(s[0] / s[1]) == pytest.approx(c, rel=1e-12)
    assert m.cosine_bound(np.inf) == 1.0 and m.cosine_bound(1.0) == 0.0


# ----------------------------------------------------------------------------------------------------------------
# the peers' metrics: CDNV, equinorm, equiangularity, maximal-angle deviation, coherence, NC4


@pytest.mark.parametrize("seed,sizes", [(0, None), (1, [3, 3, 3, 3]), (2, [2, 9, 4, 6])])
def test_peer_metrics_equal_their_textbook_formulas_one_shot_and_streamed(seed, sizes):
    Z, y, W = random_problem(seed, sizes=sizes)
    K = 4
    cos = naive.centred_cosines(Z, y, K)
    expected = {"cdnv": naive.cdnv(Z, y, K), "equinorm": naive.equinorm(Z, y, K),
                "equiangularity": float(np.std(cos, ddof=1)), "coherence": float(np.abs(cos).max()),
                "max_angle_deviation": float(np.mean(np.abs(cos + 1 / (K - 1))))}
    streamed = m.StreamingClassStats(K, Z.shape[1])
    for a in range(0, len(y), 5):
        streamed.update(Z[a:a + 5], y[a:a + 5])
    for stats in (m.class_stats(Z, y), streamed.finalize()):
        for name, value in expected.items():
            assert getattr(m, name)(stats) == pytest.approx(value, rel=1e-10), name
    norms = np.linalg.norm(W, axis=1)
    assert m.classifier_equinorm(W) == pytest.approx(np.std(norms, ddof=1) / norms.mean(), rel=1e-12)
    means = naive.means_counts(Z, y, K)[0]
    preds = np.random.default_rng(seed).integers(0, K, len(y))
    preds[::2] = y[::2]
    assert m.nc4_ncc_agreement(Z, preds, means) == pytest.approx(naive.ncc_agreement(Z, preds, means), abs=0)
    acc = m.StreamingNCCAgreement(means)
    for a in range(0, len(y), 7):
        acc.update(Z[a:a + 7], preds[a:a + 7])
    assert acc.value() == naive.ncc_agreement(Z, preds, means)


@pytest.mark.parametrize("K,d", [(3, 3), (4, 10), (10, 12)])
def test_peer_metrics_at_exact_collapse_and_the_welch_bound(K, d):
    """At a collapsed simplex ETF every one of them is at its ideal value; coherence is then exactly the Welch bound
    1/(K-1), which no other K centred means reach; NC4 agrees on every sample, held-out ones too."""
    Z, y, means = collapsed(K, d, "etf")
    assert m.cdnv(Z, y) == pytest.approx(0, abs=1e-14)
    assert m.equinorm(Z, y) == pytest.approx(0, abs=1e-12)
    assert m.equiangularity(Z, y) == pytest.approx(0, abs=1e-12)
    assert m.max_angle_deviation(Z, y) == pytest.approx(0, abs=1e-12)
    assert m.coherence(Z, y) == pytest.approx(1 / (K - 1), rel=1e-12)
    Zr, yr, _ = random_problem(K, K=K, d=d)
    assert m.coherence(Zr, yr) > 1 / (K - 1) + 1e-3
    held_out = means[y] + 0.01 * np.random.default_rng(1).normal(size=Z.shape)
    assert m.nc4_ncc_agreement(held_out, y, m.class_means(Z, y)) == 1.0


def test_peer_metrics_refuse_what_they_cannot_measure():
    Z, y, _ = random_problem(0)
    with pytest.raises(ValueError, match="coincide"):
        m.cdnv(np.vstack([Z, Z]), np.repeat([0, 1], len(y)))          # two classes, one mean
    with pytest.raises(ValueError, match="share d"):
        m.nc4_ncc_agreement(Z, y, np.zeros((4, 3)))
    with pytest.raises(ValueError, match="predictions for"):
        m.nc4_ncc_agreement(Z, y[:-1], m.class_means(Z, y))
    with pytest.raises(ValueError, match="no samples were added"):
        m.StreamingNCCAgreement(m.class_means(Z, y)).value()
    with pytest.raises(ValueError, match="K >= 2"):
        m.classifier_equinorm(np.ones((1, 3)))
    bad = Z.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        m.nc4_ncc_agreement(bad, y, m.class_means(Z, y))


@pytest.mark.parametrize("r,above", [(2.0, (2, 2, 2)), (1.0, (2, 2, 2)), (3.0, (1, 1, 1)), (2.0, (3, 3, 3)),
                                     (2.0, (1, 2, 3)), (1.0, (2, 3, 2))])
def test_pinv_nc1_vanishes_when_the_spread_is_orthogonal_to_the_means_span_and_the_trace_ratio_does_not(r, above):
    """Chapter 1 (issues 50, 59): "both vanish exactly when every sample sits on its class mean" is wrong for Tirer et
    al.'s NC1_+: three classes of 4 samples on an equilateral triangle of circumradius r, each sample one unit above
    or below its plane, ``above[c]`` of class c above. With the same share p above in every class NC1_+ = 0 and
    NC1_tr = 4 p (1 - p) / r^2 (1/4 only at r = 2, p = 1/2); with different shares NC1_+ > 0."""
    import math

    corners = r * torch.tensor([[1.0, 0.0], [-0.5, math.sqrt(3) / 2], [-0.5, -math.sqrt(3) / 2]], dtype=torch.float64)
    up = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    H = torch.stack([torch.cat([corners[c], torch.zeros(1, dtype=torch.float64)]) + (1.0 if i < above[c] else -1.0) * up
                     for c in range(3) for i in range(4)])
    y = torch.arange(3).repeat_interleave(4)
    if len(set(above)) == 1:
        p = above[0] / 4
        assert m.nc1_pinv(H, y) == pytest.approx(0.0, abs=1e-12)
        assert m.nc1_trace_ratio(H, y) == pytest.approx(4 * p * (1 - p) / r**2, rel=1e-12)
    else:
        assert m.nc1_pinv(H, y) > 1e-3


def test_coherence_reaches_the_welch_bound_off_an_etf_with_unbalanced_classes():
    """Chapter 1 (issue 50): coherence 1/(K-1) is reached exactly when the centred means' directions are a simplex
    ETF's, not only at an ETF: with 1, 2 and 3 samples per class and means of norms 1/n_c along a simplex's
    directions (so the samples' mean is 0) it is 1/2 while NC2 and equinorm are far from 0; with balanced classes the
    same directions force equal norms."""
    import math

    u = torch.tensor([[1.0, 0.0], [-0.5, math.sqrt(3) / 2], [-0.5, -math.sqrt(3) / 2]], dtype=torch.float64)
    counts = [1, 2, 3]
    H = torch.cat([(u[c] / n).repeat(n, 1) for c, n in enumerate(counts)])
    y = torch.cat([torch.full((n,), c) for c, n in enumerate(counts)])
    assert m.coherence(H, y) == pytest.approx(0.5, abs=1e-12)
    assert m.nc2_etf_distance(H, y) > 0.5 and m.equinorm(H, y) > 0.5
    assert m.coherence(H, y, global_mean="class_means") > 0.5 + 1e-3      # the means' mean: not the bound


def test_an_exact_etf_with_imbalance_100_reads_ideal_centred_at_the_class_means():
    """Issue 51: a simplex ETF of class means (noise 1e-3), class sizes from 1,000 down to 10. Centred at the mean of
    the class means every NC2 metric reads its ideal value (0, or the Welch bound 1/(K-1) for the coherence);
    centred at the samples' mean, the default, the large classes pull the centre away and every one misreads."""
    K, d = 10, 32
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((d, K)))
    M = (U @ (np.eye(K) - 1 / K)).T * 5.0 + rng.standard_normal(d)        # the ETF, off the origin
    counts = np.round(np.geomspace(1000, 10, K)).astype(int)
    y = np.repeat(np.arange(K), counts)
    Z = M[y] + 1e-3 * rng.standard_normal((len(y), d))
    nc2 = (m.nc2_etf_distance, m.equinorm, m.equiangularity, m.max_angle_deviation)
    assert all(f(Z, y, global_mean="class_means") < 1e-3 for f in nc2)
    assert m.coherence(Z, y, global_mean="class_means") == pytest.approx(1 / (K - 1), rel=1e-3)
    assert all(f(Z, y) > 0.1 for f in nc2) and m.coherence(Z, y) > 0.5         # the default misreads imbalance
    balanced = np.repeat(np.arange(K), 50)                                    # where the two centrings agree
    Zb = M[balanced] + 1e-3 * rng.standard_normal((len(balanced), d))
    assert m.nc2_etf_distance(Zb, balanced) == pytest.approx(m.nc2_etf_distance(Zb, balanced, "class_means"))


@pytest.mark.parametrize("device_chunk", [1 << 26, 3000])          # one launch; several, of whole blocks
def test_class_sums_at_once_are_the_blocked_class_sums(monkeypatch, device_chunk):
    """The device path of the class sums (every block summed per class in one launch) adds the same float32 terms
    per block as the CPU loop, and the blocks in float64."""
    monkeypatch.setattr(m, "DEVICE_CHUNK_ELEMENTS", device_chunk)
    rng = np.random.default_rng(3)
    y = torch.from_numpy(rng.integers(0, 7, 5003))
    Z = torch.from_numpy(rng.normal(3.0, 1.0, size=(5003, 40)).astype(np.float32))
    rows = 128
    monkeypatch.setattr(m, "CHUNK_ELEMENTS", rows * 40)
    cpu = m._class_sums(Z, y, 7)
    once = m._class_sums_at_once(Z, y, 7, rows)
    np.testing.assert_allclose(once.numpy(), cpu.numpy(), rtol=1e-14)      # float32 sums of other blocks: ~1e-7


def unbalanced_etf(K: int, sizes: list[int], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """:func:`collapsed`'s simplex ETF moved off the origin, with classes of ``sizes``."""
    _, _, means = collapsed(K, K + 2, seed=seed)
    y = np.repeat(np.arange(K), sizes)
    return means[y] + np.random.default_rng(seed).normal(size=K + 2), y


GEOMETRY = ("nc2_etf_distance", "equinorm", "equiangularity", "max_angle_deviation", "coherence")


@pytest.mark.parametrize("K", [3, 4, 6])
def test_an_unbalanced_exact_etf_reads_ideal_under_the_class_means_centre_only_for_k_at_least_3(K):
    """Chapter 1 (issue 59): with K >= 3 unbalanced classes every metric of the means' geometry reads an exact ETF as
    ideal centred at the mean of the class means and as not ideal centred at the samples' mean (the coherence above
    1/(K-1), the rest above 0)."""
    Z, y = unbalanced_etf(K, [1 + 3 * c for c in range(K)])
    ideal = {"coherence": 1 / (K - 1)}
    for name in GEOMETRY:
        f = getattr(m, name)
        assert f(Z, y, global_mean="class_means") == pytest.approx(ideal.get(name, 0.0), abs=1e-9), name
        assert f(Z, y, global_mean="samples") > ideal.get(name, 0.0) + 1e-3, name
    Zb, yb = unbalanced_etf(K, [5] * K)                                  # balanced: the two centres agree
    assert all(getattr(m, n)(Zb, yb) == pytest.approx(ideal.get(n, 0.0), abs=1e-9) for n in GEOMETRY)


def test_with_two_classes_coherence_and_the_maximal_angle_read_ideal_under_either_centre():
    """Chapter 1 (issue 59): for K = 2 any centre between the two means leaves them opposite, so the coherence (1) and
    the maximal-angle deviation (0) read an unbalanced exact ETF as ideal under both centrings; NC2 and equinorm
    still tell them apart; equiangularity (one pair) is refused on one line."""
    Z, y = unbalanced_etf(2, [2, 9])
    for centre in ("samples", "class_means"):
        assert m.coherence(Z, y, global_mean=centre) == pytest.approx(1.0, abs=1e-12)
        assert m.max_angle_deviation(Z, y, global_mean=centre) == pytest.approx(0.0, abs=1e-12)
    assert m.equinorm(Z, y, global_mean="class_means") < 1e-12 < 1e-3 < m.equinorm(Z, y)
    assert m.nc2_etf_distance(Z, y, global_mean="class_means") < 1e-9 < 1e-3 < m.nc2_etf_distance(Z, y)
    with pytest.raises(ValueError, match=r"^equiangularity needs K >= 3 classes .* got K=2$"):
        m.equiangularity(Z, y)


def test_coherence_at_the_welch_bound_centred_at_the_class_means_is_an_etf_whatever_the_class_sizes():
    """``metrics.coherence`` (issue 59): its docstring said "equality is an ETF only for balanced classes"; centred
    at the mean of the class means the centred means sum to 0, so equality forces a simplex ETF with any sizes. The
    construction that reaches 1/(K-1) off an ETF centred at the samples (norms 1/n_c along a simplex's directions)
    is above the bound centred at the class means, and an exact ETF with sizes 1, 2, 3 is at it."""
    import math

    u = torch.tensor([[1.0, 0.0], [-0.5, math.sqrt(3) / 2], [-0.5, -math.sqrt(3) / 2]], dtype=torch.float64)
    counts = [1, 2, 3]
    H = torch.cat([(u[c] / n).repeat(n, 1) for c, n in enumerate(counts)])
    y = torch.cat([torch.full((n,), c) for c, n in enumerate(counts)])
    assert m.coherence(H, y) == pytest.approx(0.5, abs=1e-12)
    assert m.coherence(H, y, global_mean="class_means") > 0.5 + 1e-2
    Z, yz = unbalanced_etf(3, counts)
    assert m.coherence(Z, yz, global_mean="class_means") == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_streamed_scatter_is_the_whole_symmetric_scatter_across_bands(dtype):
    """StreamingClassStats takes each class's product in bands of SYMMETRIC_ROWS rows from the diagonal rightwards and
    mirrors them: with d = 150 (three bands) its scatter is every class's full (z - a)(z - a)^T sum, both triangles,
    and the statistics finalize gives equal the one-shot ones (a missing mirror leaves the lower triangle short)."""
    K, d = 3, 150
    rng = np.random.default_rng(5)
    y = np.arange(600) % K
    Z = (rng.normal(size=(600, d)) + 3 * rng.normal(size=(K, d))[y]).astype(dtype)
    acc = m.StreamingClassStats(K, d)
    for a in range(0, len(y), 50):          # 12 batches: one flush at 8, the rest at finalize
        acc.update(Z[a:a + 50], y[a:a + 50])
    stats = acc.finalize()
    assert d > 2 * m.SYMMETRIC_ROWS
    for c in range(K):
        D = Z[y == c].astype(np.float64) - acc.shift[c].numpy()
        np.testing.assert_allclose(acc.scatter[c].numpy(), D.T @ D, rtol=1e-5, atol=1e-3 * len(D))
    exact = m.class_stats(Z.astype(np.float64), y)
    q = exact.scatter_q.numpy()
    np.testing.assert_allclose(stats.scatter_q.numpy(), q, rtol=1e-5, atol=1e-6 * np.abs(q).max())
    assert m.nc1_pinv(stats) == pytest.approx(m.nc1_pinv(exact), rel=1e-6)



@pytest.mark.parametrize("as_tensor", [False, True])
def test_features_without_dimensions_are_refused_in_one_line(as_tensor):
    """Issue 75, point 5: NC metrics of (N, 0) features say what is wrong (no dimensions), not "all class means
    coincide"."""
    H, y = np.zeros((3, 0)), np.array([0, 1, 2])
    if as_tensor:
        H, y = torch.zeros(3, 0, dtype=torch.float64), torch.tensor([0, 1, 2])
    for metric in (m.nc1_trace_ratio, m.nc1_pinv):
        with pytest.raises(ValueError, match=r"^the features have no dimensions \(shape \(3, 0\)\): the NC metrics "
                                             r"need at least one$"):
            metric(H, y)
