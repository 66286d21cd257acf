"""ncbook.pieces: a run cut along a setting, each piece a result, assembled into the whole (issue 61)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from ncbook import cache
from ncbook.pieces import assemble, assemble_arrays, assemble_tree, grid_settings, pieces, settings_to_cut
from ncbook.registry import EXPERIMENTS
from ncbook.runner import Run, check_stored, execute, get

SECOND = {"weight_decays": (1e-3, 1e-2), "seeds": (0, 1), "losses": ("mse", "ce")}
"""Two values for a setting the tiny scale has only one of."""

CUTS = [(name, setting) for name, exp in EXPERIMENTS.items() for setting in exp.splits]


def two_values(name: str, setting: str):
    """The tiny configuration with at least two values of ``setting``, on minibatches of 7 where the gpu scale trains
    on minibatches (whose order is drawn from a seed: a cut must not change it)."""
    cfg = EXPERIMENTS[name].scales["tiny"]
    if getattr(EXPERIMENTS[name].scales["gpu"], "batch_size", None):
        cfg = replace(cfg, batch_size=7)
    values = getattr(cfg, setting)
    if len(values) > 1:
        return cfg
    if setting in ("lrs", "depths"):
        return replace(cfg, **{setting: (values[0], values[0] / 2 if setting == "lrs" else values[0] + 1)})
    return replace(cfg, **{setting: SECOND[setting]})


def whole_and_assembled(name: str, cfg, setting: str) -> tuple[dict, dict]:
    """The run of ``cfg`` and the arrays assembled from its runs at each value of ``setting``."""
    exp = EXPERIMENTS[name]
    whole = exp.run(cfg, progress=False)
    parts = [exp.run(replace(cfg, **{setting: (v,)}), progress=False) for v in getattr(cfg, setting)]
    return whole, assemble_arrays(parts, setting, exp.splits[setting], grid_settings(cfg, setting))


def same(a: dict, b: dict, rtol: float = 0.0) -> bool:
    """The same names, shapes, dtypes and values: bit for bit, or floats within ``rtol`` (NaN where NaN)."""
    return sorted(a) == sorted(b) and all(
        a[k].shape == b[k].shape and a[k].dtype == b[k].dtype
        and (np.allclose(a[k], b[k], rtol=rtol, atol=0, equal_nan=True) if rtol and a[k].dtype.kind == "f"
             else np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f")) for k in a)


FLOAT32 = 1e-4
"""How far an ensemble's metrics may move when its models are trained stacked or one by one: float32 training, and
a maths library whose batched product need not round as its slices do. MKL on an AMD EPYC (Zen 4) does not: the
stacked weight decays of jacot_head_depth moved its NC2 by up to 1.7e-5 relative (2026-12-07); under MKL's
reproducible mode (MKL_CBWR) they are the same bits, which the child test below checks."""


@pytest.mark.parametrize("name,setting", CUTS, ids=[f"{n}-{s}" for n, s in CUTS])
def test_every_declared_cut_assembles_to_the_whole_run(name, setting):
    """For every setting an experiment declares it can be cut along, the arrays assembled from its pieces are those
    of the whole run: names, shapes, dtypes and values (layer axes padded as the run pads them; floats to
    :data:`FLOAT32`), on minibatches where the experiment's gpu scale has them."""
    cfg = two_values(name, setting)
    whole, assembled = whole_and_assembled(name, cfg, setting)
    moved = [k for k in whole if not same({k: whole[k]}, {k: assembled.get(k, np.zeros(0))}, FLOAT32)]
    assert same(whole, assembled, FLOAT32), moved


@pytest.mark.slow
def test_under_mkls_reproducible_mode_the_stacked_cut_is_the_whole_run_bit_for_bit():
    """The case that moves on an AMD CPU (models stacked along their weight decays), in a child process under
    MKL_CBWR=AVX2 (read when MKL starts): the assembled arrays are the whole run's bit for bit, so what differs
    without it is the library's rounding, not the cut."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tests = Path(__file__).resolve().parent
    code = ("import test_pieces as t; cfg = t.two_values('jacot_head_depth', 'weight_decays'); "
            "assert t.same(*t.whole_and_assembled('jacot_head_depth', cfg, 'weight_decays'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tests.parent, capture_output=True, text=True,
                          env=os.environ | {"MKL_CBWR": "AVX2", "PYTHONPATH": str(tests)}, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_a_resnet18_ablation_cut_per_seed_is_the_whole_run():
    """The case the cut is for: Tirer et al.'s ResNet18s (a checkpoint of about 90 MB each), one seed per piece."""
    cfg = replace(EXPERIMENTS["tirer_wd_ablation"].scales["tiny"], arch="resnet18", losses=("mse",), seeds=(0, 1),
                  epochs=1, per_class=5)
    assert same(*whole_and_assembled("tirer_wd_ablation", cfg, "seeds"))


def test_a_cut_along_a_setting_whose_values_share_minibatches_is_not_the_whole_run():
    """Why seeds is not a split of jacot_head_depth: its seeds are trained as one ensemble on the minibatches of the
    first seed, so a piece of seed 1 alone draws other minibatches, and its arrays differ from the whole run's (the
    equality above can fail)."""
    exp = EXPERIMENTS["jacot_head_depth"]
    cfg = replace(exp.scales["tiny"], seeds=(0, 1), batch_size=8, momentum=0.0)
    whole = exp.run(cfg, progress=False)
    parts = [exp.run(replace(cfg, seeds=(s,)), progress=False) for s in (0, 1)]
    assembled = assemble_arrays(parts, "seeds", 1, grid_settings(cfg, "seeds"))
    assert np.array_equal(whole["loss"][:, :1], assembled["loss"][:, :1])        # seed 0: the same minibatches
    assert not np.array_equal(whole["loss"][:, 1:], assembled["loss"][:, 1:])    # seed 1: others
    with pytest.raises(ValueError, match="cannot be cut along 'seeds'; it can be cut along: depths, weight_decays"):
        pieces(Run.of("jacot_head_depth", "tiny", seeds=(0, 1)), "seeds")


def test_pieces_that_disagree_on_what_they_share_are_refused():
    """Pieces whose shared arrays (records, other settings) differ are not one run's: a one-line ValueError."""
    a = {"steps": np.arange(3), "seeds": np.array([0]), "loss": np.zeros((1, 3))}
    b = {"steps": np.arange(4), "seeds": np.array([1]), "loss": np.zeros((1, 4))}
    with pytest.raises(ValueError, match="disagree on steps"):
        assemble_arrays([a, b], "seeds", 0)
    with pytest.raises(ValueError, match="hold different arrays"):
        assemble_arrays([a, {k: v for k, v in a.items() if k != "loss"}], "seeds", 0)
    joined = assemble_arrays([a, {**a, "seeds": np.array([1])}], "seeds", 0)
    assert joined["seeds"].tolist() == [0, 1] and joined["loss"].shape == (2, 3)


def test_a_run_cut_twice_is_assembled_from_its_stored_pieces(tmp_path):
    """jacot_resnet_head (tiny, two seeds) cut along depths and each depth along seeds: the four pieces made by the
    runner, the whole assembled from them, stored, verified, and equal to the run made whole; its provenance names
    the pieces and sums their wall times. Nothing is assembled while a piece is missing."""
    run = Run.of("jacot_resnet_head", "tiny", seeds=(0, 1))
    assert settings_to_cut(run) == ["depths", "seeds"]
    cuts = {run.key: "depths"} | {p.key: "seeds" for p in pieces(run, "depths")}
    leaves = [q for p in pieces(run, "depths") for q in pieces(p, "seeds")]
    assert [q.overrides for q in leaves] == [{"depths": (1,)}, {"depths": (1,), "seeds": (1,)},
                                             {"depths": (2,)}, {"depths": (2,), "seeds": (1,)}]
    for q in leaves[:3]:
        execute(q, progress=False, root=tmp_path)
    made_on = cache.paths(leaves[0].name, leaves[0].tag, tmp_path)[1]   # one piece made on a GPU (this machine has
    manifest = json.loads(made_on.read_text())                          # none: assembling must not ask CUDA)
    manifest["provenance"] |= {"device": "cuda", "device_name": "NVIDIA H200"}
    made_on.write_text(json.dumps(manifest))
    assert not assemble_tree(run, cuts, tmp_path)                    # a piece is missing
    execute(leaves[3], progress=False, root=tmp_path)
    assert assemble_tree(run, cuts, tmp_path)
    check_stored(run.name, run.tag, tmp_path)
    whole = EXPERIMENTS["jacot_resnet_head"].run(run.config, progress=False)
    assert same(get("jacot_resnet_head", "tiny", tmp_path, seeds=(0, 1)), whole)
    prov = json.loads(cache.paths(run.name, run.tag, tmp_path)[1].read_text())["provenance"]
    assert [p["tag"] for p in prov["assembled_from"]] == [p.tag for p in pieces(run, "depths")]
    assert prov["device"] == "cuda + cpu" and prov["device_name"].startswith("NVIDIA H200 + ")
    assert prov["wall_time_s"] == pytest.approx(sum(p["wall_time_s"] for p in prov["assembled_from"]), abs=0.05)
    with pytest.raises(cache.CacheError):
        assemble(Run.of("jacot_resnet_head", "tiny", seeds=(0, 2)), "seeds", tmp_path)     # no such pieces


def test_pieces_of_several_values_pool_into_the_whole_run():
    """Issue 74: Fig. 4's seeds are read pooled from stored results of five seeds each (ncbook.claims.POOLS); on
    full-batch GD every seed is its own network on the same data, so pieces of two seeds each pooled along the seeds
    are the four-seed run (to FLOAT32), and the pool the claims read joins its members' arrays the same way."""
    exp = EXPERIMENTS["jacot_mlp"]
    cfg = replace(exp.scales["tiny"], seeds=(0, 1, 2, 3), weight_decays=(1e-3,))
    whole = exp.run(cfg, progress=False)
    parts = [exp.run(replace(cfg, seeds=s), progress=False) for s in ((0, 1), (2, 3))]
    pooled = assemble_arrays(parts, "seeds", 0, grid_settings(cfg, "seeds"))
    assert pooled["seeds"].tolist() == [0, 1, 2, 3] and pooled["train_error"].shape == whole["train_error"].shape
    assert same(whole, pooled, FLOAT32)
    with pytest.raises(ValueError, match="disagree on weight_decays"):
        assemble_arrays([parts[0], exp.run(replace(cfg, seeds=(2, 3), weight_decays=(1e-2,)), progress=False)],
                        "seeds", 0, grid_settings(cfg, "seeds"))
