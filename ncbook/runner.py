"""The experiment runner: the registry of named experiments (one typed configuration per scale and a run function
each), running one into the results cache, loading a verified result, and verifying them all.

A result's key hashes its configuration and the source of the modules listed in its registry entry (the ones that
produce it); this registry only dispatches, so adding an experiment here leaves every other result current."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

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
from .reproduce import (
    BlurredClasses,
    HeadDepthSweep,
    LayerwiseTraining,
    NonlinearDepthSweep,
    ResNetHeadDepth,
    WeightDecayAblation,
    run_blurred_classes,
    run_head_depth_sweep,
    run_layerwise,
    run_nonlinear_depth_sweep,
    run_resnet_head_depth,
    run_weight_decay_ablation,
)
from .stability import run_trained_ntk


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
_REPRODUCE_MODULES = ("reproduce", *_TRAINING_MODULES)

_EOS_MODULES = (*_BOUNDS_MODULES, "stability")
_EOS_SCALES = {                       # edge_of_stability and trained_ntk train the same networks
    "tiny": EdgeOfStability(widths=(64, 16, 12, 12, 10), per_class=3, lrs=(0.05,), steps=20, every=10, power_iters=5),
    "cpu": EdgeOfStability(),
    "paper": EdgeOfStability(per_class=None, widths=(64, 512, 256, 256, 256, 10), steps=20_000, every=500),
}

EXPERIMENTS: dict[str, Experiment] = {exp.name: exp for exp in (
    Experiment(
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
    Experiment(
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
    Experiment(
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
    Experiment(
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
    Experiment(
        name="edge_of_stability",
        description="full-batch GD at three learning rates; top Hessian eigenvalue vs 2/lr (Sec. 5.2)",
        run=run_edge_of_stability,
        scales=_EOS_SCALES,
        modules=_EOS_MODULES,
        notes={"paper": "Jacot et al. discuss but do not run this; a larger version for a GPU"},
    ),
    Experiment(
        name="trained_ntk",
        description="edge_of_stability's networks: NTK norm, sharpness and head conditioning at the end (Prop 5.3)",
        run=run_trained_ntk,
        scales=_EOS_SCALES,
        modules=_EOS_MODULES,
        notes={"paper": "the larger edge_of_stability networks; the NTK norm is matrix-free (Lanczos on J J^T)"},
    ),
    # ---- Part IV: the experiments of both papers
    Experiment(
        name="jacot_head_depth",
        description="MLP, 5 ReLU layers + a linear head of 1-5 layers, 2 weight decays (Jacot et al. Fig. 2 left)",
        run=run_head_depth_sweep,
        scales={
            "tiny": HeadDepthSweep(dataset="digits", per_class=10, num_nonlinear=2, depths=(1, 2), width=16,
                                   seeds=(0,), steps=20, record_every=10),
            "cpu": HeadDepthSweep(),
            "paper": HeadDepthSweep(dataset="mnist", per_class=None, width=1024, seeds=(0, 1, 2, 3, 4),
                                    steps=100_000, lr=1e-3, momentum=0.0, batch_size=128, record_every=2000),
        },
        modules=_REPRODUCE_MODULES,
        notes={"paper": "Jacot et al. Sec. 6: MNIST, 5 non-linear layers, 1-5 linear, weight decay 0.001 and 0.004, "
                        "lr 0.001, 5 runs. Width, optimiser, batch and length are not stated: width 1024, SGD with "
                        "batch 128 for 100k steps (~213 epochs) are our assumptions."},
    ),
    Experiment(
        name="jacot_resnet_head",
        description="ResNet + 1 ReLU layer + 1-6 linear layers, 2 weight decays (Jacot et al. Fig. 2 right, Fig. 5)",
        run=run_resnet_head_depth,
        scales={
            "tiny": ResNetHeadDepth(per_class=4, resnet_width=4, head_width=12, depths=(1, 2), weight_decays=(1e-3,),
                                    epochs=2, batch_size=20, record_every_epochs=1),
            "cpu": ResNetHeadDepth(),
            "paper": ResNetHeadDepth(dataset="cifar10", per_class=None, resnet_depth=20, resnet_width=16,
                                     head_width=256, seeds=(0, 1, 2, 3, 4), epochs=5000, batch_size=128, lr=1e-3,
                                     momentum=0.0, record_every_epochs=100),
        },
        modules=_REPRODUCE_MODULES,
        notes={"paper": "Jacot et al. Sec. 6: ResNet20 on CIFAR-10, one non-linear head layer and 1-6 linear, weight "
                        "decay 0.001/0.004, lr 0.001, 5000 epochs. Head width and batch size are our assumptions. "
                        "Fig. 5 (MNIST): --set dataset=mnist."},
    ),
    Experiment(
        name="jacot_nonlinear_depth",
        description="MLPs with 4-12 ReLU layers: balancedness and negativity of the non-linear layers (Jacot Fig. 3)",
        run=run_nonlinear_depth_sweep,
        scales={
            "tiny": NonlinearDepthSweep(dataset="digits", per_class=10, depths=(3, 4), num_linear=1, width=16,
                                        seeds=(0,), lrs=(0.01,), steps=20, record_every=10),
            "cpu": NonlinearDepthSweep(lrs=(0.005, 0.01), steps=3000),
            "paper": NonlinearDepthSweep(dataset="mnist", per_class=None, width=1024, lrs=(1e-3, 2e-3),
                                         seeds=(0, 1, 2, 3, 4), steps=100_000, momentum=0.0, batch_size=128,
                                         init="default", record_every=2000),
        },
        modules=_REPRODUCE_MODULES,
        notes={"paper": "Jacot et al. Sec. 6: non-linear depth 4-12 (first two layers = backbone), lr 0.001 or "
                        "0.002, 5 runs, weight decay 0.016/L. Linear-head depth, width and optimiser are not stated; "
                        "3 linear layers, width 1024, SGD batch 128 are our assumptions."},
    ),
    Experiment(
        name="tirer_layerwise",
        description="MLP grown and trained one hidden layer at a time: NC1 of the deepest features (Tirer Fig. 2)",
        run=run_layerwise,
        scales={
            "tiny": LayerwiseTraining(dataset="digits", per_class=10, width=16, num_layers=3, epochs=1, batch_size=32,
                                      seeds=(0,)),
            "cpu": LayerwiseTraining(),
            "paper": LayerwiseTraining(dataset="cifar10", per_class=None, width=3072, seeds=(0,)),
        },
        modules=_REPRODUCE_MODULES,
        notes={"paper": "Tirer et al. App. E.1 exactly: CIFAR-10, 10 hidden layers of 3072 units with batch norm, "
                        "3 epochs of Adam (lr 1e-4, batch 256, cross-entropy) per added layer."},
    ),
    Experiment(
        name="tirer_wd_ablation",
        description="weight decay doubled/zeroed on the last layer vs the feature layers, MSE and CE (Tirer Fig. 3)",
        run=run_weight_decay_ablation,
        scales={
            "tiny": WeightDecayAblation(dataset="digits", per_class=10, hidden=(16, 16), seeds=(0,), epochs=2,
                                        batch_size=32, record_every_epochs=1),
            "cpu": WeightDecayAblation(hidden=(128, 128, 128), epochs=60, record_every_epochs=5),
            "paper": WeightDecayAblation(dataset="cifar10", per_class=None, arch="resnet18", batch_size=256,
                                         epochs=100, record_every_epochs=5),
        },
        modules=_REPRODUCE_MODULES,
        notes={"paper": "Tirer et al. Sec. 6 / App. E.2 exactly: ResNet18, SGD batch 256, lr 0.05 / 10 every 40 "
                        "epochs, momentum 0.9, weight decay 5e-4, 100 epochs, 3 seeds. Figs. 4-5 and Table 1's "
                        "MNIST columns: --set dataset=mnist --set per_class=3000 (or 5000)."},
    ),
    Experiment(
        name="tirer_blur",
        description="digits 4 and 9 blurred, last-layer weight decay 5e-4, 5e-5, 0: per-class NC1 (Tirer Fig. 6)",
        run=run_blurred_classes,
        scales={
            "tiny": BlurredClasses(dataset="digits", per_class=10, hidden=(16, 16), blur=3, seeds=(0,), epochs=2,
                                   batch_size=32, record_every_epochs=1),
            "cpu": BlurredClasses(hidden=(128, 128, 128), epochs=60, record_every_epochs=5),
            "paper": BlurredClasses(dataset="mnist", per_class=3000, arch="resnet18", batch_size=256, epochs=100,
                                    record_every_epochs=5),
        },
        modules=_REPRODUCE_MODULES,
        notes={"paper": "Tirer et al. App. E.2: ResNet18 on MNIST with 3K samples per class, digits 4 and 9 blurred "
                        "by a 9x9 uniform kernel, last-layer weight decay 5e-4, 5e-5, 0, baseline schedule."},
    ),
)}


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
    ckpt = _checkpoint_file(name, tag, key, root)
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    left = _readable_checkpoints(ckpt)
    if left and progress:
        print(f"{name}: resuming from the checkpoint{'s' * (len(left) > 1)} of a stopped run: "
              f"{', '.join(p.name for p in left)}", file=sys.stderr)
    t0 = time.perf_counter()
    arrays = exp.run(cfg, device=device, progress=progress, checkpoint=ckpt)
    prov = cache.provenance(device, list(getattr(cfg, "seeds", [])), time.perf_counter() - t0,
                            command or f"python -m ncbook run {name} --scale {scale} --device {device}")
    manifest = cache.save(name, tag, {"experiment": name, **asdict(cfg)}, key, arrays, prov, root,
                          extra={"base_scale": scale, "overrides": overrides})
    for part in ckpt.parent.glob(ckpt.stem + ".*"):     # the run's checkpoint and those of its parts
        part.unlink(missing_ok=True)
    return manifest


def run_point(name: str, scale: str, device: str, overrides: dict, progress: bool = False,
              threads: int | None = None) -> tuple[str, float]:
    """One run of the command line or one point of a sweep: (manifest path, wall seconds). It lives here, not in
    ``__main__``, because a sweep's spawned workers must import it by name."""
    if threads is not None:       # a worker of a sweep: its share of the CPU threads
        torch.set_num_threads(threads)
    t0 = time.perf_counter()
    path = run_and_cache(name, scale, device=device, progress=progress,
                         command=regen_command(name, scale, overrides) + f" --device {device}", **overrides)
    return str(path), time.perf_counter() - t0


def checkpoint_path(name: str, scale: str, root: Path | None = None, **overrides) -> Path:
    """Where a run saves its checkpoint (multi-part runs add ``.<part>`` before the suffix); a killed run resumes
    from it when the same command is run again, with the same configuration and code (both are in the key)."""
    exp = get_experiment(name)
    return _checkpoint_file(name, _scale_tag(scale, overrides), exp.key(exp.config(scale, **overrides)), root)


def _checkpoint_file(name: str, tag: str, key: str, root: Path | None) -> Path:
    return (root or cache.RESULTS_DIR) / ".checkpoints" / f"{name}--{tag}--{key}.pt"


def _readable_checkpoints(ckpt: Path) -> list[Path]:
    """The checkpoints a stopped run left for this configuration and code; an unreadable one is refused by name
    rather than failing deep inside the run."""
    parts = sorted(ckpt.parent.glob(ckpt.stem + ".*"))
    for part in parts:
        try:
            torch.load(part, weights_only=True)
        except Exception as err:  # torch raises several types for a truncated or foreign file
            why = (str(err).splitlines() or [""])[0][:200]
            raise cache.CacheError(f"checkpoint {part} cannot be read ({type(err).__name__}: {why}); delete it "
                                   "and run the same command again (that part restarts from step 0)") from None
    return parts


def cached_current(name: str, scale: str, root: Path | None = None, **overrides) -> Path | None:
    """The manifest of a stored result that is intact and current for this configuration and code, else None."""
    exp = get_experiment(name)
    tag = _scale_tag(scale, overrides)
    try:
        cache.check(name, tag, exp.key(exp.config(scale, **overrides)), root)
    except cache.CacheError:
        return None
    return cache.paths(name, tag, root)[1]


def regen_command(name: str, scale: str, overrides: dict) -> str:
    """The command that regenerates one cached result."""
    sets = "".join(f" --set {k}={_cli_value(v)}" for k, v in sorted(overrides.items()))
    return f"python -m ncbook run {name} --scale {scale}{sets}"


def _cli_value(v) -> str:
    return ",".join(str(x) for x in v) if isinstance(v, list | tuple) else str(v)


def check_stored(name: str, tag: str, root: Path | None = None) -> dict:
    """Check one stored result (a scale, or a scale with overrides) against its checksums and the key the current
    configuration and code give: its manifest, or CacheError saying what is wrong and how to regenerate it."""
    manifest = cache.read_manifest(name, tag, root)
    try:
        exp = get_experiment(manifest.get("experiment", name))
        scale, overrides = manifest.get("base_scale", tag), manifest.get("overrides", {})
        key = exp.key(exp.config(scale, **overrides))
    except (KeyError, ValueError) as err:     # an experiment or a setting that no longer exists
        raise cache.CacheError(f"{name}/{tag}: {err}", "stale") from None
    return cache.check(name, tag, key, root, regen_command(name, scale, overrides))


def stored_tags(root: Path | None = None) -> list[tuple[str, str]]:
    """(experiment, tag) of every stored result, in file order."""
    return [(p.parent.name, p.stem) for p in sorted((root or cache.RESULTS_DIR).glob("*/*.json"))]


def verify(root: Path | None = None) -> list[tuple[str, str, str]]:
    """Check every stored result: (experiment, tag, "ok" or the problem), in file order."""
    rows = []
    for name, tag in stored_tags(root):
        try:
            check_stored(name, tag, root)
            rows.append((name, tag, "ok"))
        except cache.CacheError as err:
            rows.append((name, tag, str(err)))
    return rows


def shipped_cost(root: Path | None = None) -> dict[tuple[str, str], tuple[float, int]]:
    """(wall time in seconds from the manifest, bytes on disk of .npz + .json) of every stored result."""
    out = {}
    for name, tag in stored_tags(root):
        try:
            wall = float(cache.read_manifest(name, tag, root)["provenance"]["wall_time_s"])
        except (cache.CacheError, KeyError, TypeError, ValueError):    # unreadable: `verify` and `list` say so
            continue
        out[(name, tag)] = (wall, sum(p.stat().st_size for p in cache.paths(name, tag, root) if p.exists()))
    return out


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
