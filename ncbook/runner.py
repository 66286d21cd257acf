"""The experiment runner: the registry of named experiments (one typed configuration per scale and a run function
each), running one into the results cache, loading a verified result, and verifying them all.

A result's key hashes its configuration and the source of the modules listed in its registry entry (the ones that
produce it); this registry only dispatches, so adding an experiment here leaves every other result current."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from . import cache
from .experiments import (
    EdgeOfStability,
    GDPhases,
    HeadBounds,
    HeadDepth,
    MLPCollapse,
    run_edge_of_stability,
    run_gd_phases,
    run_head_bounds,
    run_head_depth,
    run_mlp_collapse,
)


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    run: Callable[..., dict[str, np.ndarray]]
    scales: dict[str, object]
    modules: tuple[str, ...]                 # ncbook modules whose code the result depends on (for the key)
    heavy: bool = True
    notes: dict[str, str] = field(default_factory=dict)

    def config(self, scale: str, **overrides) -> object:
        if scale not in self.scales:
            raise ValueError(f"experiment {self.name!r} has no scale {scale!r}; choose one of {sorted(self.scales)}")
        try:
            return replace(self.scales[scale], **overrides)
        except TypeError as err:
            raise ValueError(f"bad override for {self.name}: {err}") from None

    def key(self, cfg) -> str:
        return cache.result_key({"experiment": self.name, **asdict(cfg)}, self.modules)


_TRAINING_MODULES = ("experiments", "train", "nets", "metrics", "data")
_BOUNDS_MODULES = (*_TRAINING_MODULES, "bounds")

EXPERIMENTS: dict[str, Experiment] = {
    "jacot_mlp": Experiment(
        name="jacot_mlp",
        description="MLP with a deep linear head, square loss + weight decay, lr drop at 80% (Jacot et al. Fig. 4)",
        run=run_mlp_collapse,
        scales={
            "tiny": MLPCollapse(dataset="digits", per_class=20, widths=(64, 32, 32, 32, 16, 16, 10), num_nonlinear=3,
                                weight_decays=(1e-3, 1e-2), seeds=(0, 1), steps=60, lr=0.05, momentum=0.0,
                                record_every=20, dtype="float64"),
            "cpu": MLPCollapse(),
            "paper": MLPCollapse(dataset="mnist", per_class=None, widths=(784,) + (1024,) * 8 + (10,),
                                 num_nonlinear=5, weight_decays=(1.8e-3,), seeds=(0, 1, 2, 3, 4), steps=100_000,
                                 lr=1e-3, batch_size=128, momentum=0.0, record_every=1000),
        },
        modules=_TRAINING_MODULES,
        notes={"paper": "Jacot et al. App. A: 5 non-linear + 4 linear layers, weight decay 0.0018, lr 0.001, "
                        "10,000 epochs, 5 runs. Width, optimiser and batch size are not stated in the text; "
                        "width 1024, plain SGD with batch 128 are our assumptions (steps cover far fewer epochs)."},
    ),
    "linear_head": Experiment(
        name="linear_head",
        description="chapter 1's MLP with a linear head of 1-4 layers, for 4 weight decays (the λ x depth figure)",
        run=run_head_depth,
        scales={
            "tiny": HeadDepth(depths=(1, 2), weight_decays=(0.0, 1e-2), dataset="digits", per_class=10,
                              relu_widths=(16,), head_width=8, steps=20, record_every=10),
            "cpu": HeadDepth(),
            "paper": HeadDepth(depths=(1, 2, 3, 4, 5, 6), dataset="mnist", per_class=None, relu_widths=(512, 512),
                               head_width=512, steps=20_000, lr=0.05, record_every=500),
        },
        modules=_TRAINING_MODULES,
        notes={"paper": "Not a figure of either paper: the same sweep on full MNIST with wide layers, for a GPU."},
    ),
    "jacot_bounds": Experiment(
        name="jacot_bounds",
        description="MLPs with linear heads of 2-5 layers, 3 weight decays, measured against Jacot et al. Thm 3.1",
        run=run_head_bounds,
        scales={
            "tiny": HeadBounds(depths=(2, 3), weight_decays=(1e-3, 1e-2), dataset="digits", per_class=10,
                               relu_widths=(16,), head_width=12, steps=30, record_every=10),
            "cpu": HeadBounds(),
            "paper": HeadBounds(depths=(2, 3, 4, 5, 6), dataset="mnist", per_class=None, relu_widths=(1024,) * 5,
                                head_width=1024, steps=20_000, lr=0.05, record_every=1000),
        },
        modules=_BOUNDS_MODULES,
        notes={"paper": "Jacot et al. Fig. 2 setting (5 non-linear layers, 1-5 linear) at width 1024, full batch; "
                        "widths and optimiser are our assumptions."},
    ),
    "jacot_phases": Experiment(
        name="jacot_phases",
        description="GD with weight decay on a pyramidal smoothed-leaky-ReLU MLP: loss and balancedness (Thm 4.4)",
        run=run_gd_phases,
        scales={
            "tiny": GDPhases(widths=(64, 40, 16, 12, 10), per_class=4, lrs=(0.01,), weight_decays=(0.05,), steps=40,
                             every=10),
            "cpu": GDPhases(),
            "paper": GDPhases(per_class=None, widths=(64, 2048, 256, 128, 128, 10), steps=200_000, every=500),
        },
        modules=(*_TRAINING_MODULES, "stability"),
        notes={"paper": "the paper has no such experiment; this is the full digits set with a wider first layer"},
    ),
    "edge_of_stability": Experiment(
        name="edge_of_stability",
        description="full-batch GD at three learning rates; top Hessian eigenvalue vs 2/lr (Sec. 5.2)",
        run=run_edge_of_stability,
        scales={
            "tiny": EdgeOfStability(widths=(64, 16, 12, 12, 10), per_class=3, lrs=(0.05,), steps=20, every=10,
                                    power_iters=5),
            "cpu": EdgeOfStability(),
            "paper": EdgeOfStability(per_class=None, widths=(64, 512, 256, 256, 256, 10), steps=20_000, every=500),
        },
        modules=(*_BOUNDS_MODULES, "stability"),
        notes={"paper": "Jacot et al. discuss but do not run this; a larger version for a GPU"},
    ),
}


def get_experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise KeyError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    return EXPERIMENTS[name]


def run_and_cache(name: str, scale: str, device: str = "cpu", progress: bool = True, root: Path | None = None,
                  command: str = "", **overrides) -> Path:
    """Run one experiment at one scale and store its result (with provenance) in the cache."""
    exp = get_experiment(name)
    cfg = exp.config(scale, **overrides)
    tag, key = _scale_tag(scale, overrides), exp.key(cfg)
    # a killed run resumes from here when the same command is run again (same configuration and code)
    ckpt = (root or cache.RESULTS_DIR) / ".checkpoints" / f"{name}--{tag}--{key}.pt"
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    arrays = exp.run(cfg, device=device, progress=progress, checkpoint=ckpt)
    prov = cache.provenance(device, list(getattr(cfg, "seeds", [])), time.perf_counter() - t0,
                            command or f"python -m ncbook run {name} --scale {scale} --device {device}")
    manifest = cache.save(name, tag, {"experiment": name, **asdict(cfg)}, key, arrays, prov, root,
                          extra={"base_scale": scale, "overrides": overrides})
    ckpt.unlink(missing_ok=True)
    return manifest


def regen_command(name: str, scale: str, overrides: dict) -> str:
    """The command that regenerates one cached result."""
    sets = "".join(f" --set {k}={_cli_value(v)}" for k, v in sorted(overrides.items()))
    return f"python -m ncbook run {name} --scale {scale}{sets}"


def _cli_value(v) -> str:
    return ",".join(str(x) for x in v) if isinstance(v, list | tuple) else str(v)


def verify(root: Path | None = None) -> list[tuple[str, str, str]]:
    """Check every stored result: (experiment, tag, "ok" or the problem), in file order."""
    rows = []
    for manifest_path in sorted((root or cache.RESULTS_DIR).glob("*/*.json")):
        name, tag = manifest_path.parent.name, manifest_path.stem
        try:
            manifest = cache.read_manifest(name, tag, root)
            exp = get_experiment(manifest.get("experiment", name))
            scale, overrides = manifest.get("base_scale", tag), manifest.get("overrides", {})
            cfg = exp.config(scale, **overrides)
            cache.check(name, tag, exp.key(cfg), root, regen_command(name, scale, overrides))
            rows.append((name, tag, "ok"))
        except (cache.CacheError, KeyError, ValueError) as err:
            rows.append((name, tag, str(err)))
    return rows


def _scale_tag(scale: str, overrides: dict) -> str:
    """File stem of a result: the scale, plus the overrides of a sweep point (e.g. ``cpu--lr=0.01``)."""
    if not overrides:
        return scale
    return scale + "--" + ",".join(f"{k}={v}" for k, v in sorted(overrides.items())).replace("/", "_")


def get(name: str, scale: str = "cpu", root: Path | None = None, **overrides) -> dict[str, np.ndarray]:
    """Load a verified result. On a miss: in CI, or for a heavy experiment, raise with the command to run;
    otherwise (a light experiment, outside CI) compute it with a progress bar and store it."""
    exp = get_experiment(name)
    cfg = exp.config(scale, **overrides)
    tag = _scale_tag(scale, overrides)
    try:
        return cache.load(name, tag, exp.key(cfg), root, regen_command(name, scale, overrides))[0]
    except cache.CacheError as err:
        missing = not cache.paths(name, tag, root)[1].exists()
        if missing and not exp.heavy and not os.environ.get("CI"):
            run_and_cache(name, scale, root=root, **overrides)
            return cache.load(name, tag, exp.key(cfg), root)[0]
        raise cache.CacheError(f"{err} (experiment {name!r}, scale {scale!r})") from None
