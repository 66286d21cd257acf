"""The results cache: round trip, tamper and stale detection, atomic writes, no pickles; the shipped results."""

import json

import numpy as np
import pytest

from ncbook import cache

from helpers import stored_data


def _store(root, arrays=None, key="k1", config=None):
    arrays = arrays if arrays is not None else {"a": np.arange(6.0).reshape(2, 3), "steps": np.array([0, 10])}
    return cache.save("exp", "tiny", config or {"lr": 0.1}, key, arrays, {"device": "cpu"}, root)


def test_round_trip_keeps_arrays_and_records_checksums(tmp_path):
    manifest_path = _store(tmp_path)
    arrays, manifest = cache.load("exp", "tiny", "k1", tmp_path)
    np.testing.assert_array_equal(arrays["a"], np.arange(6.0).reshape(2, 3))
    data = stored_data(tmp_path, "exp", "tiny")
    assert data.name.startswith("tiny.") and manifest["files"][data.name] == cache.sha256_file(data)
    assert json.loads(manifest_path.read_text())["config"] == {"lr": 0.1}


def test_flipping_one_byte_is_detected_and_named(tmp_path):
    _store(tmp_path)
    data = stored_data(tmp_path, "exp", "tiny")
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    data.write_bytes(bytes(raw))
    with pytest.raises(cache.CacheError, match=r"tiny\.\w+\.npz is corrupted.*`make exp`"):
        cache.load("exp", "tiny", "k1", tmp_path, regen="make exp")


def test_wrong_key_is_reported_stale_with_the_command(tmp_path):
    _store(tmp_path, key="old")
    with pytest.raises(cache.CacheError, match=r"stale.*`make exp`"):       # the caller's command (the runner's)
        cache.load("exp", "tiny", "new", tmp_path, regen="make exp")


def test_object_arrays_are_refused_and_pickles_never_loaded(tmp_path):
    with pytest.raises(TypeError, match="pickling"):
        _store(tmp_path, arrays={"bad": np.array([{"a": 1}], dtype=object)})
    # a pickled array smuggled into the data file is refused by np.load(allow_pickle=False)
    _store(tmp_path)
    data = stored_data(tmp_path, "exp", "tiny")
    np.savez(data, a=np.array([{"x": 1}], dtype=object))
    manifest = json.loads((tmp_path / "exp" / "tiny.json").read_text())
    manifest["files"][data.name] = cache.sha256_file(data)
    (tmp_path / "exp" / "tiny.json").write_text(json.dumps(manifest))
    with pytest.raises(cache.CacheError, match="does not load as plain arrays.*unpickling"):
        cache.load("exp", "tiny", "k1", tmp_path)


def test_atomic_write_keeps_old_content_when_the_writer_fails(tmp_path):
    target = tmp_path / "f.txt"
    target.write_text("old")

    def failing(tmp):
        tmp.write_text("half-written")
        raise OSError("disk full (injected)")

    with pytest.raises(OSError, match="injected"):
        cache.atomic_write(target, failing)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]      # no temporary file left behind


def test_interrupted_save_leaves_previous_result_valid(tmp_path, monkeypatch):
    _store(tmp_path, arrays={"a": np.ones(3)})

    def boom(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing (injected)")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(KeyboardInterrupt):
        _store(tmp_path, arrays={"a": np.zeros(3)})
    monkeypatch.undo()
    arrays, _ = cache.load("exp", "tiny", "k1", tmp_path)
    np.testing.assert_array_equal(arrays["a"], np.ones(3))


def test_a_tag_formats_and_parses_itself():
    tag = cache.Tag.of("cpu", {"steps": 200, "lr": 0.01, "losses": ("mse",), "dataset": "digits"})
    assert str(tag) == "cpu--dataset=digits,losses=('mse',),lr=0.01,steps=200"
    assert cache.Tag.parse(str(tag)) == tag and cache.Tag.parse("cpu") == cache.Tag("cpu")
    assert str(cache.Tag.of("paper", {"data_root": "/data/x"})) == "paper--data_root=_data_x"    # a file stem
