"""Every paper and gpu configuration runs end to end for a few steps on the CPU (issue 21, point 3): the papers'
architectures and widths exactly, on tiny fake data files in the real formats (MNIST's idx files as torchvision
reads them, CIFAR-10's binary batches), with only the lengths (steps, epochs, records, checkpoints, seeds) and the
samples per class cut. A paper-scale result stored with ``data_root`` set is found by ``get`` without it."""
import math
from dataclasses import fields

import numpy as np
import pytest

from ncbook import runner
from ncbook.registry import EXPERIMENTS

from helpers import scale_cases

PER_CLASS = 4          # fake samples of each class in each split


def _idx(path, array: np.ndarray, code: int) -> None:
    """An idx file: magic (0, 0, dtype code 0x08 = ubyte, ndim), the dimensions as big-endian int32, the bytes."""
    header = bytes([0, 0, code, array.ndim]) + np.array(array.shape, dtype=">i4").tobytes()
    path.write_bytes(header + array.astype(np.uint8).tobytes())


@pytest.fixture(scope="module")
def fake_root(tmp_path_factory):
    return write_fake_data(tmp_path_factory.mktemp("data"))


def write_fake_data(root):
    """Fake MNIST (root/MNIST/raw) and CIFAR-10 (root/cifar-10-batches-bin) with PER_CLASS images per class."""
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(10), PER_CLASS)
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for stem in ("train", "t10k"):
        _idx(raw / f"{stem}-images-idx3-ubyte", rng.integers(0, 256, (len(labels), 28, 28)), 0x08)
        _idx(raw / f"{stem}-labels-idx1-ubyte", labels, 0x08)
    cifar = root / "cifar-10-batches-bin"
    cifar.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        pixels = rng.integers(0, 256, (len(labels), 3 * 32 * 32))
        (cifar / f"{name}.bin").write_bytes(np.column_stack([labels, pixels]).astype(np.uint8).tobytes())
    return root


SHORT = {"steps": 2, "epochs": 1, "record_every": 2, "record_every_epochs": 1, "every": 2, "power_iters": 2,
         "seeds": (0,)}
"""Lengths cut to a few steps; grids to one point (the deepest network); everything that shapes the networks and the
optimiser stays as configured."""


def short(name: str, scale: str) -> dict:
    cfg = EXPERIMENTS[name].config(scale)
    names = {f.name for f in fields(cfg)}
    out = {k: v for k, v in SHORT.items() if k in names}
    for grid in ("weight_decays", "lrs", "weight_decays_last"):     # one point of each grid ...
        if grid in names:
            out[grid] = getattr(cfg, grid)[:1]
    if "depths" in names:                                             # ... and the deepest network
        out["depths"] = (max(cfg.depths),)
    if "checkpoints" in names:        # a run as long as its last checkpoint (20,000 GD steps): its first two
        out["checkpoints"] = cfg.checkpoints[:2]
    if "per_class" in names:          # the fake files hold PER_CLASS per class; digits and MNIST-5k are cut too
        out["per_class"] = 2
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name, scale", scale_cases(short))
def test_configuration_runs_end_to_end(name, scale, fake_root):
    exp = EXPERIMENTS[name]
    runtime = {"data_root": str(fake_root)} if "data_root" in {f.name for f in fields(exp.config(scale))} else {}
    cfg = exp.config(scale, **short(name, scale), **runtime)
    arrays = exp.run(cfg, device="cpu", progress=False)
    assert arrays and all(isinstance(v, np.ndarray) for v in arrays.values())
    measured = [v for v in arrays.values() if v.dtype.kind == "f" and v.size]
    assert any(np.isfinite(v).all() for v in measured)     # NaN pads layers and marks what a network lacks
    if "loss" in arrays:
        assert np.isfinite(arrays["loss"]).all()


@pytest.mark.slow
def test_a_paper_result_stored_with_data_root_is_found_without_it(tmp_path, fake_root):
    results, settings = tmp_path / "results", short("jacot_mlp", "paper")
    runner.execute(runner.Run.of("jacot_mlp", "paper", data_root=str(fake_root), **settings), progress=False,
                   root=results)
    loss = runner.get("jacot_mlp", "paper", root=results, **settings)["loss"]
    assert loss.shape[:2] == (1, 1) and math.isfinite(loss[0, 0, -1])
