"""ncbook.compare: the readers of stored results pick the right entries."""

import numpy as np

from ncbook import compare, reproduce


def test_claim_helpers_read_the_right_entries():
    """Table 1 from a synthetic result: mean/sd over seeds at the last record of the deepest features, and the
    deviations from the baseline in the order of ABLATIONS[1:]."""

    rng = np.random.default_rng(0)
    nc1 = rng.random((2, 3, 5, 4, 3))              # [loss, seed, setting, record, layer]
    nc1[..., -1, -2] = np.arange(5)[None, None, :] + np.array([0.0, 1.0, 2.0])[None, :, None]
    table = compare.ablation_table({"nc1_pinv": nc1, "nc2_etf_distance": nc1})
    assert np.allclose(table["NC1"], np.arange(5) + 1.0) and np.allclose(table["NC1_sd"], np.std([0, 1, 2]))
    assert np.allclose(compare.deviation_from_baseline(table, "NC1"), [[1, 2, 3, 4]] * 2)
    m = rng.random((2, 3, 5, 4, 7))               # [depth, seed, weight decay, record, layer]
    values = compare.head_values({"num_layers": np.array([6, 7]), "m": m}, "m", first=1)
    assert values["last"].shape == (2, 3, 5) and np.allclose(values["last"][1], m[1, :, :, -1, 5])
    assert np.allclose(values["first"][0], m[0, :, :, -1, 1])
    ends = compare.head_ends({"num_layers": np.array([6, 7, 8])}, first=4)
    assert ends["last"].tolist() == [4, 5, 6] and ends["first"].tolist() == [4, 4, 4]
    assert len(compare.TIRER_TABLE1) == 4 and all(len(v["NC1"]) == len(reproduce.ABLATIONS)
                                                   for v in compare.TIRER_TABLE1.values())


def test_feature_decay_verdicts_are_per_seed_and_can_fail():
    """Seed 2 has the last layer's change move NC1 more (doubling): its verdict is False, the others True; a seed
    mean that hid it would not."""
    nc1 = np.zeros((1, 3, 5, 1, 2))
    nc1[0, :, :, -1, 0] = [[1.0, 1.1, 1.5, 1.2, 2.0], [1.0, 1.1, 1.5, 1.2, 2.0], [1.0, 1.9, 1.2, 1.2, 2.0]]
    result = {"nc1_pinv": nc1, "nc2_etf_distance": nc1.copy()}
    v = compare.feature_decay_verdicts(result, ("mse",), layer=0)
    assert v[("mse", "NC1", "doubling")].tolist() == [True, True, False]
    assert v[("mse", "NC2", "zeroing")].tolist() == [True, True, True]
    assert np.abs(nc1[0, :, 2, -1, 0] - 1).mean() > np.abs(nc1[0, :, 1, -1, 0] - 1).mean()   # the mean says True


def test_tirer_table1_has_both_data_sets_with_sds():
    assert set(compare.TIRER_TABLE1) == {"CIFAR-10, MSE", "CIFAR-10, CE", "MNIST, MSE", "MNIST, CE"}
    for column in compare.TIRER_TABLE1.values():
        assert set(column) == {"NC1", "NC1_sd", "NC2", "NC2_sd"} and all(len(v) == 5 for v in column.values())
