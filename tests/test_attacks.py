"""Issue 20's attacks on the runner, the cache and the command line, replayed: each test is one attack that once
stored a wrong result, lost a good one, crashed with a traceback or hung."""

import numpy as np
import pytest

from ncbook import cache, runner


def test_an_int_and_a_float_name_one_result_in_get_and_the_runner(tmp_path):
    """`--set lr=1` was stored as lr=1.0 and `get(..., lr=1)` then said it was missing."""
    runner.run_and_cache("jacot_mlp", "tiny", progress=False, root=tmp_path, lr=1, steps=3)
    a = runner.get("jacot_mlp", "tiny", root=tmp_path, lr=1, steps=3)
    b = runner.get("jacot_mlp", "tiny", root=tmp_path, lr=1.0, steps=3)
    assert [p.name for p in (tmp_path / "jacot_mlp").glob("*.json")] == ["tiny--lr=1.0,steps=3.json"]
    assert all(np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a)
    with pytest.raises(ValueError, match="setting lr of jacot_mlp: expected float, got 'fast'"):
        runner.get("jacot_mlp", "tiny", root=tmp_path, lr="fast")
    with pytest.raises(ValueError, match="no setting 'lrr'"):
        runner.get("jacot_mlp", "tiny", root=tmp_path, lrr=1.0)
    with pytest.raises(cache.CacheError, match=r"--set lr=2.0"):
        runner.get("jacot_mlp", "tiny", root=tmp_path, lr=2)


def _stored(root, **overrides):
    """One real tiny result in ``root``: its manifest path."""
    return runner.run_and_cache("jacot_mlp", "tiny", progress=False, root=root, steps=3, **overrides)


@pytest.mark.parametrize("kill_at", [1, 2, 3])
def test_a_rerun_killed_at_any_instant_leaves_the_previous_result_loadable(tmp_path, monkeypatch, kill_at):
    """A killed `--force` rerun replaced the npz, then the manifest: killed between the two, the old manifest named
    the new data ("corrupted"). Now the data file is named after its content and the manifest's rename swaps the
    pair; the kill comes at the data's rename (1), the manifest's (2), or the old data's removal (3)."""
    manifest = _stored(tmp_path)
    before = runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3)
    calls = {"n": 0}
    real_replace, real_unlink = cache.os.replace, type(manifest).unlink

    def replace(*args):
        calls["n"] += 1
        if calls["n"] == kill_at:
            raise KeyboardInterrupt("killed")
        return real_replace(*args)

    def unlink(self, *args, **kwargs):
        if self.suffix == ".npz" and kill_at == 3:
            raise KeyboardInterrupt("killed")
        return real_unlink(self, *args, **kwargs)

    monkeypatch.setattr(cache.os, "replace", replace)
    monkeypatch.setattr(type(manifest), "unlink", unlink)
    new = {k: v + 1 if v.dtype.kind == "f" else v for k, v in before.items()}     # a different result
    with pytest.raises(KeyboardInterrupt):
        cache.save("jacot_mlp", "tiny--steps=3", *_same_manifest_fields(manifest), new,
                   {"command": "attack"}, tmp_path, {"base_scale": "tiny", "overrides": {"steps": 3}})
    monkeypatch.undo()
    after = runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3)
    expected = before if kill_at < 3 else new             # the pair is the old one, or entirely the new one
    assert all(np.array_equal(after[k], expected[k], equal_nan=after[k].dtype.kind == "f") for k in before)
    orphans = [p for p, why in runner.anomalies(tmp_path) if "no manifest lists" in why]
    assert len(orphans) == (kill_at >= 2)       # 2: the new data, never listed; 3: the old, not yet removed


def _same_manifest_fields(manifest_path):
    import json
    m = json.loads(manifest_path.read_text())
    return m["config"], m["key"]


def _rows(root):
    return {(name, tag): status for name, tag, status in runner.verify(root)}


@pytest.mark.parametrize("content,match", [("null", "not a JSON object"), ("[1, 2]", "not a JSON object"),
                                           ('{"experiment": "jacot_mlp", "key": "k", "config": {}, "files": "x.npz",'
                                            ' "arrays": []}', "'files' should be a dict"),
                                           ("{", "not valid JSON")])
def test_verify_and_list_survive_a_malformed_manifest_and_still_check_the_others(tmp_path, content, match, capsys,
                                                                                 monkeypatch):
    _stored(tmp_path)
    (tmp_path / "jacot_mlp" / "tiny.json").write_text(content)
    rows = _rows(tmp_path)
    assert rows[("jacot_mlp", "tiny--steps=3")] == "ok"
    assert match in rows[("jacot_mlp", "tiny")]
    from ncbook.__main__ import main
    monkeypatch.setattr(cache, "RESULTS_DIR", tmp_path)
    assert main(["list"]) == 0 and main(["verify"]) == 1
    out = capsys.readouterr().out
    assert "1 of 2 stored results verified" in out


def test_verify_reports_every_anomaly_of_the_folder(tmp_path, monkeypatch):
    manifest = _stored(tmp_path)
    folder = manifest.parent
    data = folder / cache.data_file(__import__("json").loads(manifest.read_text()))
    (folder / ".tiny.json.abc.tmp").write_text("half")                        # an interrupted write
    (folder / "stray.txt").write_text("?")
    (folder / "elsewhere.json").symlink_to(manifest)                          # a symbolic link
    other = _stored(tmp_path, lr=0.5)
    other_data = folder / cache.data_file(__import__("json").loads(other.read_text()))
    other.unlink()                                                            # a deleted manifest
    problems = {p.name: why for p, why in runner.anomalies(tmp_path)}
    assert "interrupted write" in problems[".tiny.json.abc.tmp"]
    assert "unexpected file" in problems["stray.txt"]
    assert "symbolic link" in problems["elsewhere.json"]
    assert "no manifest lists" in problems[other_data.name]
    assert data.name not in problems
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no results" in runner.anomalies(empty)[0][1]
    assert "is missing" in runner.anomalies(tmp_path / "nowhere")[0][1]
    from ncbook.__main__ import main
    monkeypatch.setattr(cache, "RESULTS_DIR", tmp_path / "nowhere")
    assert main(["verify"]) == 1


@pytest.mark.parametrize("attack,match", [
    ("files_outside", "not a file name inside"), ("dev_zero", "not a file name inside"),
    ("symlinked_data", "symbolic link"), ("edited_config", "edited"), ("object_array", "does not load as plain"),
])
def test_verify_refuses_what_it_once_passed(tmp_path, attack, match):
    import json
    manifest = _stored(tmp_path)
    m = json.loads(manifest.read_text())
    folder, name = manifest.parent, cache.data_file(m)
    if attack == "files_outside":
        m["files"]["../../../../etc/passwd"] = "0" * 64
    elif attack == "dev_zero":
        m["files"]["/dev/zero"] = "0" * 64
    elif attack == "symlinked_data":
        target = tmp_path / "outside.npz"
        (folder / name).rename(target)
        (folder / name).symlink_to(target)
    elif attack == "edited_config":
        m["config"]["lr"] = 123.0
    elif attack == "object_array":
        np.savez(folder / name, x=np.array([{"a": 1}], dtype=object))
        m["files"][name] = cache.sha256_file(folder / name)
    manifest.write_text(json.dumps(m))
    assert match in _rows(tmp_path)[("jacot_mlp", "tiny--steps=3")]


def test_manifests_record_the_cpu_its_kernels_and_the_blas(tmp_path):
    """Manifests said "x86_64" only, while a rerun on an AVX-512 machine differed by 4e-4."""
    import json
    prov = json.loads(_stored(tmp_path).read_text())["provenance"]
    assert prov["cpu_model"] and prov["cpu_capability"] in ("DEFAULT", "AVX2", "AVX512", "ZVECTOR", "VSX", "SVE256")
    assert isinstance(prov["cpu_flags"], list) and prov["blas"] != "unknown" and prov["cpu_threads"] >= 1


def test_a_second_identical_run_is_refused_while_the_first_works(tmp_path):
    """Two identical runs at once both did the full work, the second "resuming" the first's checkpoint."""
    import subprocess
    import sys
    import time
    run = runner.Run.of("jacot_mlp", "tiny", steps=3)
    lock_file = tmp_path / ".locks" / f"{run.checkpoint(tmp_path).stem}.lock"
    lock_file.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", f"""
import time
from ncbook import runner
with runner.lock(__import__('pathlib').Path({str(lock_file)!r}), runner.Run.of("jacot_mlp", "tiny", steps=3)):
    print("locked", flush=True)
    time.sleep(60)
"""], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.perf_counter()
        with pytest.raises(cache.CacheError, match=r"being computed right now by another process \(pid \d+\)"):
            runner.execute(run, root=tmp_path, progress=False)
        assert time.perf_counter() - t0 < 5 and not list(tmp_path.glob("jacot_mlp/*.json"))
    finally:
        holder.kill()
        holder.wait()
    runner.execute(run, root=tmp_path, progress=False)          # the lock dies with its process
    assert runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3)


def test_sweep_workers_exit_when_their_parent_dies(tmp_path):
    """Killing a `sweep` parent left its workers running (~660 MB each)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    parent = subprocess.Popen([sys.executable, "-c", """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "from ncbook import runner; import time; runner.exit_with_parent(0.1); print('ready', flush=True); time.sleep(60)"],
    stdout=subprocess.PIPE, text=True)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(60)
"""], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the worker outlived its parent by 10 s")


@pytest.mark.parametrize("name,setting,match", [
    ("edge_of_stability", "power_iters=0", "power_iters must be >= 1"),
    ("edge_of_stability", "lrs=()", "lrs must not be empty"),
    ("jacot_phases", "weight_decays=(-0.1,)", "weight_decays must be >= 0"),
    ("jacot_phases", "every=0", "every must be >= 1"),
    ("trained_ntk", "steps=0", "steps must be >= 1"),
    ("jacot_mlp", "widths=(64,1000000000000,10)", "ask for a weight matrix of up to"),
    ("tirer_layerwise", "data_root=" + "x" * 300, "data_root is not a usable path"),
])
def test_every_bad_setting_is_refused_in_one_line_before_any_work(name, setting, match, tmp_path, monkeypatch,
                                                                  capsys):
    """These stored wrong results (sharpness 0, empty arrays, a negative weight decay) or raised tracebacks."""
    from ncbook.__main__ import main
    monkeypatch.setattr(cache, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(runner, "execute", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(SystemExit) as err:
        main(["run", name, "--scale", "tiny", "--device", "cpu", "--set", setting])
    assert match in str(err.value) and "\n" not in str(err.value) and str(err.value).startswith("invalid settings")


def test_huge_seeds_and_a_missing_slurm_are_refused_before_any_work(tmp_path, monkeypatch):
    from ncbook.__main__ import main
    monkeypatch.setattr(cache, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(runner, "execute", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(SystemExit, match=r"seeds must lie in 0..2\*\*63-1"):
        main(["run", "jacot_mlp", "--scale", "tiny", "--seeds", "99999999999999999999999"])
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(SystemExit, match="needs SLURM"):
        main(["sweep", "jacot_mlp", "--scale", "tiny", "--grid", "lr=0.1,0.2", "--executor", "slurm"])


def test_non_finite_settings_are_refused_through_the_api():
    with pytest.raises(ValueError, match=r"invalid settings for jacot_mlp: .*lr must be > 0 \(got nan\)"):
        runner.Run.of("jacot_mlp", "tiny", lr=float("nan"))
    with pytest.raises(ValueError, match="invalid settings for edge_of_stability: lrs must be finite"):
        runner.Run.of("edge_of_stability", "tiny", lrs=(float("inf"),))


@pytest.mark.parametrize("name,overrides", [
    ("tirer_layerwise", {"lr": 1e9}), ("jacot_mlp", {"lr": 3.0}), ("linear_head", {"lr": 50.0}),
    ("edge_of_stability", {"lrs": (50.0,)}), ("trained_ntk", {"lrs": (50.0,)}),
])
def test_a_blown_up_run_stops_with_the_reason_and_stores_nothing(tmp_path, name, overrides):
    """These stored losses up to 1e202 as a valid result (or died in ARPACK), and `verify` passed them."""
    with pytest.raises(FloatingPointError, match=r"at step \d+ is .* times its initial value.*diverged"):
        runner.run_and_cache(name, "tiny", progress=False, root=tmp_path, **overrides)
    assert not list(tmp_path.rglob("*.json")) and not list(tmp_path.rglob("*.npz"))
    assert not list(tmp_path.rglob("*.pt"))                    # no checkpoint resumes the blow-up


def test_a_diverging_runs_checkpoints_are_removed(tmp_path, monkeypatch):
    """A run that checkpointed before it blew up leaves no checkpoint behind."""
    from ncbook import train
    real = train.check_divergence

    def blows_up_late(loss, step, *args, **kwargs):
        if step == 40:
            raise FloatingPointError("loss at step 40 is 1e9 times its initial value: the run diverged")
        return real(loss, step, *args, **kwargs)

    monkeypatch.setattr(train, "check_divergence", blows_up_late)
    with pytest.raises(FloatingPointError):
        runner.run_and_cache("jacot_mlp", "tiny", progress=False, root=tmp_path)   # checkpoints every 3 steps
    assert not list(tmp_path.rglob("*.pt")) and not list(tmp_path.rglob("*.json"))


def test_the_apis_reject_bad_input_in_bounded_time_and_memory():
    """Each of these hung, took 7 GB, returned NaN or a silently wrong answer."""
    import time

    import torch

    from ncbook import data, metrics, ufm
    Z = torch.randn(6, 3, dtype=torch.float64)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="100000001 classes but only 2 samples"):
        metrics.nc1_trace_ratio(Z[:2], torch.tensor([0, 10**8]))
    assert time.perf_counter() - t0 < 1
    with pytest.raises(ValueError, match="too large for float64"):
        metrics.nc1_trace_ratio(Z * 1e200, torch.tensor([0, 0, 1, 1, 2, 2]))
    with pytest.raises(ValueError, match="at least 2 classes"):
        metrics.simplex_etf_gram(1)
    with pytest.raises(ValueError, match="labels must be integers"):
        metrics.StreamingClassStats(3, 3).update(Z[:2], np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="per_class must be 1..500"):
        data.mnist5k(per_class=10**6)
    with pytest.raises(ValueError, match="finite and >= 0"):
        data.gaussian_mixture(3, 4, 5, within=float("nan"))
    p = ufm.UFM(3, 2, 4, 0.5, 0.1)
    H0 = np.random.default_rng(0).normal(size=(4, 6))
    for t_end, num in [(float("nan"), 10), (float("inf"), 10), (1.0, 0), (-1.0, 10)]:
        with pytest.raises(ValueError, match="finite t_end > 0 and num >= 2"):
            ufm.flow(H0, p, t_end, num)
    with pytest.raises(ValueError, match="depth is a number of layers"):
        ufm.layerwise(H0, p, -1)
    with pytest.raises(ValueError, match=r"W must be K x d = 3 x 4"):
        ufm.objective(np.zeros((4, 3)), H0, p)
    with pytest.raises(ValueError, match=r"H must be d x Kn = 4 x 6"):
        ufm.optimal_W(H0.T, p)
    with pytest.raises(ValueError, match="lam_W must be finite"):
        ufm.UFM(3, 2, 4, float("inf"), 0.1)


# ---- Issue 39: manifests and arrays no file can forge, loads that check what verify checks, early refusals


def _two_stored(root):
    """Two real tiny results: (the one attacked, the one that must stay readable)."""
    return _stored(root), _stored(root, lr=0.5)


def _nested(depth: int) -> str:
    return '{"experiment": "jacot_mlp", "key": "k", "config": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("attack,field", [
    ("deep", "nests deeper"), ("digits", "digits"), ("arrays_int", "field 'arrays'"),
    ("arrays_items", "field 'arrays'"), ("overrides_list", "field 'overrides'"), ("huge", "larger than"),
    ("provenance_str", "field 'provenance'"), ("shapes_bad", "field 'shapes'"),
])
def test_a_malformed_manifest_is_one_line_and_every_other_result_stays_readable(tmp_path, attack, field,
                                                                                monkeypatch, capsys):
    """A manifest nested 200,000 deep, a 5,000-digit integer or "arrays" as an integer stopped verify, list and
    book_result with a traceback (RecursionError, ValueError, TypeError)."""
    import json
    manifest, other = _two_stored(tmp_path)
    m = json.loads(manifest.read_text())
    text = {"deep": lambda: _nested(200_000), "digits": lambda: json.dumps(m).replace('"steps": 3', '"steps": '
                                                                                       + "9" * 5000),
            "arrays_int": lambda: json.dumps({**m, "arrays": 5}),
            "arrays_items": lambda: json.dumps({**m, "arrays": [1, 2]}),
            "overrides_list": lambda: json.dumps({**m, "overrides": [["steps", 3]]}),
            "huge": lambda: json.dumps({**m, "pad": "x" * (cache.MAX_MANIFEST_BYTES + 1)}),
            "provenance_str": lambda: json.dumps({**m, "provenance": "made by hand"}),
            "shapes_bad": lambda: json.dumps({**m, "shapes": {"loss": "big"}})}[attack]()
    manifest.write_text(text)
    rows = _rows(tmp_path)
    assert rows[("jacot_mlp", other.stem)] == "ok"
    bad = rows[("jacot_mlp", manifest.stem)]
    assert field in bad and "\n" not in bad and f"jacot_mlp/{manifest.stem}" in bad
    with pytest.raises(cache.CacheError, match=field) as err:
        runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3)
    assert "\n" not in str(err.value)
    runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3, lr=0.5)
    from ncbook.__main__ import main
    monkeypatch.setattr(cache, "RESULTS_DIR", tmp_path)
    assert main(["list"]) == 0 and main(["verify"]) == 1
    assert "1 of 2 stored results verified" in capsys.readouterr().out


@pytest.mark.parametrize("edit,match", [
    (lambda m: m["config"].update(lr=0.123), "edited"),
    (lambda m: m.update(overrides={"steps": 4}), "describes the result tiny--steps=4"),
    (lambda m: m.update(experiment="linear_head"), "names experiment 'linear_head'"),
    (lambda m: m.update(base_scale="cpu"), "describes the result cpu--steps=3"),
])
def test_loading_refuses_what_verify_refuses(tmp_path, edit, match):
    """An edited config, overrides or experiment was flagged by verify but loaded by get and book_result."""
    import json
    manifest, _ = _two_stored(tmp_path)
    m = json.loads(manifest.read_text())
    edit(m)
    manifest.write_text(json.dumps(m))
    assert match in _rows(tmp_path)[("jacot_mlp", "tiny--steps=3")]
    with pytest.raises(cache.CacheError, match=match):
        runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3)


def test_a_result_folder_outside_the_tree_is_refused_by_loading(tmp_path):
    import shutil
    root, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    _stored(root)
    shutil.move(root / "jacot_mlp", elsewhere)
    (root / "jacot_mlp").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(cache.CacheError, match="symbolic link or leaves the results folder"):
        runner.get("jacot_mlp", "tiny", root=root, steps=3)
    assert "symbolic link" in _rows(root)[("jacot_mlp", "tiny--steps=3")]


def _forge(manifest, write):
    """Replace a result's data file by ``write(path)``'s, with its manifest's checksum updated (a forger who edits
    both)."""
    import json
    m = json.loads(manifest.read_text())
    data = manifest.parent / cache.data_file(m)
    write(data)
    m["files"][data.name] = cache.sha256_file(data)
    manifest.write_text(json.dumps(m))


def test_forged_arrays_are_refused_from_their_headers_before_any_allocation(tmp_path, monkeypatch):
    """An npz declaring shape (10**12,) died with MemoryError (7.28 TiB); one inflating past the limit passed."""
    import io
    import zipfile
    manifest, other = _two_stored(tmp_path)

    def huge_shape(path):
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 12,)})
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("loss.npy", buf.getvalue() + b"\0" * 64)
    _forge(manifest, huge_shape)
    with pytest.raises(cache.CacheError, match=r"declares shape \(1000000000000,\)"):
        runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3)
    assert "declares shape" in _rows(tmp_path)[("jacot_mlp", "tiny--steps=3")]

    monkeypatch.setattr(cache, "MAX_FILE_BYTES", 1 << 20)         # a bomb at a small limit: the same check

    def bomb(path):
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("loss.npy", np.lib.format.header_data_from_array_1_0(np.zeros(1)) and _npy(np.zeros(1 << 18)))
    _forge(manifest, bomb)
    assert manifest.parent.joinpath(cache.data_file(__import__("json").loads(manifest.read_text()))).stat().st_size \
        < 1 << 16
    with pytest.raises(cache.CacheError, match="inflates to"):
        runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3)
    runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3, lr=0.5)


def _npy(array) -> bytes:
    import io
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def test_arrays_whose_shapes_differ_from_the_manifest_are_refused(tmp_path):
    manifest, _ = _two_stored(tmp_path)
    arrays = runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3)
    _forge(manifest, lambda path: np.savez(path, **{k: v[..., :1] if v.ndim else v for k, v in arrays.items()}))
    with pytest.raises(cache.CacheError, match="shapes or dtypes of .* differ from its manifest"):
        runner.get("jacot_mlp", "tiny", root=tmp_path, steps=3)


@pytest.mark.parametrize("name,overrides,match", [
    ("jacot_mlp", {"widths": (64, 32, 32, 32, 16, 16, 5)}, "widths must end at 10"),
    ("jacot_mlp", {"widths": (100, 32, 32, 32, 16, 16, 10)}, "widths must start at 64, the input width of digits"),
    ("edge_of_stability", {"widths": (64, 16, 12, 12, 7)}, "widths must end at 10"),
])
def test_widths_that_do_not_fit_the_data_are_refused_before_any_work(name, overrides, match):
    """5 outputs for 10 classes died in training with a traceback; a first width the run ignores gave a second key
    for one computation."""
    with pytest.raises(ValueError, match=match):
        runner.Run.of(name, "tiny", **overrides)


def test_a_default_given_explicitly_names_the_same_result():
    """`--set steps=60` (the default) was stored as tiny--steps=60 beside tiny: one computation, two keys."""
    plain, explicit = runner.Run.of("jacot_mlp", "tiny"), runner.Run.of("jacot_mlp", "tiny", steps=60, lr=0.05)
    assert (explicit.tag, explicit.key, explicit.overrides) == (plain.tag, plain.key, {}) == ("tiny", plain.key, {})


def test_long_settings_get_a_bounded_tag_and_file_errors_are_one_line(tmp_path, monkeypatch):
    """`--seeds $(seq 0 79)` died with OSError: File name too long (an uncaught traceback)."""
    run = runner.Run.of("jacot_mlp", "tiny", seeds=tuple(range(80)))
    assert len(run.tag) <= 120 and len(run.checkpoint(tmp_path).name) < 255
    assert runner.Run.of("jacot_mlp", "tiny", seeds=tuple(range(80))).tag == run.tag != runner.Run.of(
        "jacot_mlp", "tiny", seeds=tuple(range(81))).tag
    assert cache.Tag.parse(run.tag).scale == "tiny"
    from ncbook.__main__ import main
    monkeypatch.setattr(cache, "RESULTS_DIR", tmp_path)

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("ncbook.__main__.run_point", full_disk)
    with pytest.raises(SystemExit, match="jacot_mlp stopped: .*No space left on device") as err:
        main(["run", "jacot_mlp", "--scale", "tiny"])
    assert "\n" not in str(err.value)


def test_a_hashed_tag_result_verifies_and_loads(tmp_path):
    seeds = tuple(range(40))
    run = runner.Run.of("jacot_mlp", "tiny", seeds=seeds, steps=2, record_every=1)
    assert run.tag.startswith("tiny--sha256-")
    runner.execute(run, progress=False, root=tmp_path)
    assert _rows(tmp_path) == {("jacot_mlp", run.tag): "ok"}
    assert 40 in runner.get("jacot_mlp", "tiny", root=tmp_path, seeds=seeds, steps=2, record_every=1)["loss"].shape


def test_the_gradient_flow_is_bounded_in_time_and_memory(monkeypatch):
    """t_end=1e12 ran past 20 s with no bar and no refusal; num=10**8 allocated 3.3 GB before failing."""
    from ncbook import ufm
    H0 = np.random.default_rng(0).normal(size=(4, 6))
    with pytest.raises(ValueError, match=r"overflows float64 .* ask for an earlier t_end"):
        ufm.flow(H0, ufm.UFM(3, 2, 4, 0.5, 0.1), 1e12)
    with pytest.raises(ValueError, match=r"num=100000000 times .* GiB; the limit is 1 GiB"):
        ufm.flow(H0, ufm.UFM(3, 2, 4, 0.5, 0.1), 1.0, num=10 ** 8)
    monkeypatch.setattr(ufm, "MAX_FLOW_EVALS", 2000)          # the same stop, sooner
    with pytest.raises(ValueError, match=r"more than 2000 .* reached only t = "):
        ufm.flow(H0, ufm.UFM(3, 2, 4, 0.5, 0.0), 1e12)


def test_broken_data_files_are_named_with_what_is_wrong(tmp_path):
    """Empty or /dev/zero MNIST files gave a 33-line traceback ending "Dataset not found"; CIFAR files at /dev/zero
    "need at least one array to concatenate"."""
    import os

    from ncbook import data
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    files = data.data_files("mnist", tmp_path)
    for f in files:
        f.write_bytes(b"")
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte is not an idx file of images \(0 bytes"):
        data.load_dataset("mnist", tmp_path)
    for f in files:
        f.unlink()
        os.symlink("/dev/zero", f)
    with pytest.raises(ValueError, match="train-images-idx3-ubyte is not a regular file"):
        data.load_dataset("mnist", tmp_path)
    cifar = data.data_files("cifar10", tmp_path)
    cifar[0].parent.mkdir()
    for f in cifar:
        os.symlink("/dev/zero", f)
    with pytest.raises(ValueError, match="data_batch_1.bin is not a regular file"):
        data.load_dataset("cifar10", tmp_path)
    run = runner.Run.of("jacot_mlp", "tiny", dataset="mnist", data_root=str(tmp_path),
                        widths=(784, 32, 32, 32, 16, 16, 10))
    with pytest.raises(ValueError, match="train-images-idx3-ubyte is not a regular file"):     # before any work
        runner.execute(run, progress=False, root=tmp_path / "r")
    assert not (tmp_path / "r" / ".checkpoints").exists()


def test_operator_norm_refuses_nan_like_every_metric():
    import torch

    from ncbook import metrics
    with pytest.raises(ValueError, match="NaN entries"):
        metrics.operator_norm(torch.full((5, 3), float("nan"), dtype=torch.float64))
    with pytest.raises(ValueError, match="NaN entries"):
        metrics.operator_norm(torch.full((300, 300), float("nan"), dtype=torch.float64))
