"""The registry of experiments, as data: for each, its run function, a typed configuration per scale (``tiny`` for
tests, ``cpu`` for the results shipped with the book, ``paper`` for the source paper's settings on a GPU) and notes
on what the paper leaves unstated. :mod:`ncbook.runner` runs them into the results cache.

A result's key hashes its configuration and the code its run function reaches (:mod:`ncbook.codehash`), so
adding or editing an entry here leaves every other result current."""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from . import cache
from .codehash import code_hash
from .experiments import (
    CollapsePicture,
    EdgeOfStability,
    GDPhases,
    HeadBounds,
    HeadDepth,
    MLPCollapse,
    run_collapse_picture,
    run_edge_of_stability,
    run_gd_phases,
    run_head_bounds,
    run_head_depth,
    run_mlp_collapse,
    run_trained_ntk,
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


def conform(value, tp):
    """``value`` as the type annotation ``tp`` asks (int, float, str, bool, X | None, tuple[X, ...]): an int given
    for a float becomes a float (so lr=1 and lr=1.0 are one result), one value for a tuple a 1-tuple; raise
    TypeError if it does not fit."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        for option in typing.get_args(tp):
            try:
                return conform(value, option)
            except TypeError:
                pass
    elif typing.get_origin(tp) is tuple:
        items = value if isinstance(value, tuple | list) else (value,)
        return tuple(conform(v, typing.get_args(tp)[0]) for v in items)
    elif tp is type(None) and value is None or tp is bool and isinstance(value, bool) or tp is str and isinstance(
            value, str) or tp is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    elif tp is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"expected {getattr(tp, '__name__', tp)}, got {value!r}")


AT_LEAST_ONE = {"blur", "epochs", "every", "head_width", "num_layers", "num_linear", "per_class", "power_iters",
                "record_every", "record_every_epochs", "resnet_depth", "resnet_width", "steps", "width", "batch_size",
                "depths", "hidden", "relu_widths", "widths"}
"""Counts and sizes: every value >= 1 (a tuple of them must also be non-empty)."""
NON_EMPTY = {"depths", "hidden", "relu_widths", "widths", "lrs", "weight_decays", "weight_decays_last", "seeds",
             "losses", "blurred"}
"""Grids and lists that need at least one entry."""
POSITIVE = {"lr", "lrs", "beta", "input_scale"}
"""Finite and > 0."""
NON_NEGATIVE = {"weight_decay", "weight_decays", "weight_decay_total", "weight_decays_last", "gamma", "backbone",
                "num_nonlinear", "blurred"}
"""Finite and >= 0 (weight decays, counts that may be zero, class indices)."""
UNIT_INTERVAL = {"momentum": "[0, 1)", "gamma": "[0, 1)", "lr_drops": "(0, 1)"}
"""Fractions and factors, with their open or closed ends."""
MAX_SEED = 2 ** 63 - 1
MAX_MATRIX_BYTES = 8 * 2 ** 30
"""The largest weight matrix a configuration may ask for (float64), far above any experiment's (a typo guard)."""
MAX_PATH = 1024
NUM_CLASSES = 10
"""Every data set of the experiments has ten classes (digits 0-9, CIFAR-10's ten)."""
INPUT_WIDTHS = {"digits": 64, "mnist5k": 784, "mnist": 784, "fashion-mnist": 784, "cifar10": 3072}
"""The flattened input width of each data set an MLP experiment reads."""
RUNTIME_SETTINGS = ("data_root", "download")
"""Settings that say where the data comes from, not what is computed: they are not part of a result's key or tag
(a result made with ``--set data_root=...`` is the result of the scale; the manifest records them)."""


def check_settings(cfg) -> None:
    """Every field of a configuration against its meaning, before any work: ValueError naming each bad setting, the
    value and what it must be, on one line."""
    problems = []
    for f, value in asdict(cfg).items():
        values = list(value) if isinstance(value, tuple) else [value]
        nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        if f in NON_EMPTY and isinstance(value, tuple) and not value:
            problems.append(f"{f} must not be empty")
        if any(isinstance(v, float) and not math.isfinite(v) for v in nums):
            problems.append(f"{f} must be finite (got {value})")
        elif f in AT_LEAST_ONE and any(v < 1 for v in nums):
            problems.append(f"{f} must be >= 1 (got {value})")
        elif f in POSITIVE and any(v <= 0 for v in nums):
            problems.append(f"{f} must be > 0 (got {value})")
        elif f in NON_NEGATIVE and any(v < 0 for v in nums):
            problems.append(f"{f} must be >= 0 (got {value})")
        elif f in UNIT_INTERVAL and any(not (0 <= v < 1 if UNIT_INTERVAL[f] == "[0, 1)" else 0 < v < 1) for v in nums):
            problems.append(f"{f} must lie in {UNIT_INTERVAL[f]} (got {value})")
        elif f in ("seed", "seeds") and any(not 0 <= v <= MAX_SEED for v in nums):
            problems.append(f"{f} must lie in 0..2**63-1 (got {value})")
        if f == "data_root" and (len(value) > MAX_PATH or any(len(part) > 255 for part in value.split("/"))):
            problems.append(f"data_root is not a usable path ({len(value)} characters): give the folder that holds "
                            "the data set")
    widths, dataset = getattr(cfg, "widths", None), getattr(cfg, "dataset", "digits")
    if isinstance(widths, tuple) and widths and dataset in INPUT_WIDTHS:
        if widths[-1] != NUM_CLASSES:
            problems.append(f"widths must end at {NUM_CLASSES}, one output per class of {dataset} (got {widths})")
        if widths[0] != INPUT_WIDTHS[dataset]:
            problems.append(f"widths must start at {INPUT_WIDTHS[dataset]}, the input width of {dataset} (got "
                            f"{widths}; the run takes its input width from the data)")
    sizes = [v for f in ("widths", "relu_widths", "hidden") for v in getattr(cfg, f, ())]
    sizes += [v for f in ("width", "head_width", "resnet_width") if isinstance(v := getattr(cfg, f, None), int)]
    if sizes and all(isinstance(v, int) for v in sizes) and min(sizes) >= 1:
        biggest = max(sizes) ** 2 * 8                # an upper bound on its largest (square-or-smaller) matrix
        if biggest > MAX_MATRIX_BYTES:
            problems.append(f"the widths {sizes} ask for a weight matrix of up to {biggest / 2 ** 30:.3g} GiB; the "
                            f"limit is {MAX_MATRIX_BYTES // 2 ** 30} GiB")
    if problems:
        raise ValueError("; ".join(dict.fromkeys(problems)))


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    run: Callable[..., dict[str, np.ndarray]]
    scales: dict[str, typing.Any]
    notes: dict[str, str] = field(default_factory=dict)
    splits: dict[str, int] = field(default_factory=dict)
    """The settings whose values are computed independently (each its own models, seeds and minibatches), each with
    the axis it indexes in the result's arrays: a run can be cut along them into pieces (:mod:`ncbook.pieces`)."""

    def config_type(self, scale: str) -> type:
        """The configuration class of a scale (its fields are the settings ``--set`` accepts)."""
        if scale not in self.scales:
            raise ValueError(f"experiment {self.name!r} has no scale {scale!r}; choose one of {sorted(self.scales)}")
        return type(self.scales[scale])

    def settings(self, scale: str, overrides: dict) -> dict:
        """``overrides`` in their one canonical form, each conformed to its field's type (lr=1 is lr=1.0, a list a
        tuple), so that the command line and :func:`ncbook.runner.get` name the same result; ValueError for an
        unknown setting or a value of the wrong type."""
        known = typing.get_type_hints(self.config_type(scale))
        out = {}
        for k, v in overrides.items():
            if k not in known:
                raise ValueError(f"{self.name} has no setting {k!r}; settings: {', '.join(known)}")
            try:
                out[k] = conform(v, known[k])
            except TypeError as err:
                raise ValueError(f"setting {k} of {self.name}: {err}") from None
        return out

    def config(self, scale: str, **overrides) -> typing.Any:
        """The configuration of a scale with ``overrides`` (canonical, :meth:`settings`) applied, checked by its own
        ``__post_init__``."""
        overrides = self.settings(scale, overrides)
        try:
            cfg = replace(self.scales[scale], **overrides)       # the configuration's own checks
            check_settings(cfg)
        except (TypeError, ValueError) as err:
            raise ValueError(f"invalid settings for {self.name}: {err}") from None
        return cfg

    def computed(self, cfg) -> dict:
        """What a result depends on: the experiment's name and its configuration with every runtime setting
        (:data:`RUNTIME_SETTINGS`) at its default; this is what its key hashes and its manifest records."""
        defaults = {f.name: f.default for f in fields(cfg) if f.name in RUNTIME_SETTINGS}
        return {"experiment": self.name, **asdict(replace(cfg, **defaults))}

    def key(self, cfg) -> str:
        return cache.result_key(self.computed(cfg), code_hash(self.run))


_EOS_SCALES = {                       # edge_of_stability and trained_ntk train the same networks
    "tiny": EdgeOfStability(widths=(64, 16, 12, 12, 10), per_class=3, lrs=(0.05,), steps=20, every=10, power_iters=5),
    "cpu": EdgeOfStability(),
    "gpu": EdgeOfStability(per_class=None, widths=(64, 512, 256, 256, 256, 10), lrs=(2e-4, 5e-4, 1e-3),
                           weight_decay=0.018, steps=20_000, every=500, dtype="float32"),
    "paper": EdgeOfStability(per_class=None, widths=(64, 512, 256, 256, 256, 10), lrs=(2e-4, 5e-4, 1e-3),
                             weight_decay=0.018, steps=20_000, every=500, dtype="float32"),
}
_EOS_STABLE = ("Learning rates 2e-4, 5e-4 and 1e-3: on all 1,797 digits the summed loss's Hessian at initialisation "
               "has top eigenvalue 239 (the cpu scale's network on 100 digits: 5.33), so GD is stable at the start "
               "only below 2/239 = 0.0084; these put lr times that eigenvalue at 0.048, 0.12 and 0.24, as the cpu "
               "scale's 0.01-0.05 do there (0.053-0.27), and the cpu scale's rates diverge at once here (2.4-12). "
               "Weight decay 0.018 = 0.001 x 1797/100: the summed loss grows with the samples, so this keeps the "
               "cpu scale's balance of data term and regulariser (lambda / N). In float32 (the cpu scale's "
               "float64 is not needed: sharpness and 2/lr are compared to 10-30%).")

_TIRER_MSE = ("Square loss: PyTorch's nn.MSELoss, (1/(NK)) ||Z - Y||^2, the mean over samples and classes, as in the "
              "code of the baseline Tirer et al. follow (Zhu et al. 2021; their experiments do not state it, their "
              "theory writes (1/(2Kn)) ||Z - Y||^2, the book's (1/(2N)) ||Z - Y||^2). It is 2/K = 1/5 of the book's: "
              "under the book's, the same lr and weight decays would take K/2 = 5 times the step with 1/5 of the "
              "weight decay's pull relative to the data term, and ResNet18 at lr 0.05 diverges within 5 steps "
              "(tests/test_first_steps.py). The cpu ablation under the other reading: --set mse_over_classes=False.")

_PHASES_STABLE = ("Learning rates 1e-4 and 2e-4: on all 1,797 digits the summed loss's Hessian at initialisation has "
                  "top eigenvalue 189 (the cpu scale's network on 100 digits: 3.8), so GD is stable at the start "
                  "only below 2/189 = 0.011; these put lr times that eigenvalue at 0.019 and 0.038, as the cpu "
                  "scale's 0.005 and 0.01 do there, and its 0.005 diverges here within 20 steps (lr times the "
                  "eigenvalue 0.95: the loss's curvature grows in the first steps). Weight decays 0.36, 0.9, 1.8 = "
                  "the cpu scale's x 1797/100 (the same lambda / N: the summed loss grows with the samples).")

EXPERIMENTS: dict[str, Experiment] = {exp.name: exp for exp in (
    Experiment(
        name="collapse_picture",
        description="the first picture: last hidden features of an MLP on three MNIST digits over GD (index, Ch. 1)",
        run=run_collapse_picture,
        scales={
            "tiny": CollapsePicture(per_class=5, hidden=(16, 16, 8), checkpoints=(0, 2, 5)),
            "cpu": CollapsePicture(),
            "gpu": CollapsePicture(per_class=500, checkpoints=(0, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000,
                                                               10_000, 20_000)),
            "paper": CollapsePicture(per_class=500, checkpoints=(0, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000,
                                                                 10_000, 20_000)),
        },
        notes={"gpu": "All 500 digits of each of the three classes of MNIST-5k and 20,000 GD steps.",
               "paper": "no paper has this experiment: it is the book's own picture of collapse happening (Papyan "
                        "et al. 2020 show such pictures for deep networks); the paper scale is the gpu one"},
    ),
    Experiment(
        name="jacot_mlp",
        description="MLP with a deep linear head, square loss + weight decay, lr drop at 80% (Jacot et al. Fig. 4)",
        run=run_mlp_collapse,
        splits={"weight_decays": 1},
        scales={
            "tiny": MLPCollapse(dataset="digits", per_class=20, widths=(64, 32, 32, 32, 16, 16, 10), num_nonlinear=3,
                                weight_decays=(1e-3, 1e-2), seeds=(0, 1), steps=60, lr=0.05, momentum=0.0,
                                record_every=20, dtype="float64"),
            "cpu": MLPCollapse(per_class=500, steps=10_000, record_every=250),
            "gpu": MLPCollapse(dataset="mnist5k", per_class=500, widths=(784,) + (1024,) * 8 + (10,),
                               num_nonlinear=5, weight_decays=(1.8e-3,), seeds=(0, 1, 2), steps=400_000, lr=1e-3,
                               batch_size=128, momentum=0.0, record_every=20_000),
            "paper": MLPCollapse(dataset="mnist", per_class=None, widths=(784,) + (1024,) * 8 + (10,),
                                 num_nonlinear=5, weight_decays=(1.8e-3,), seeds=(0, 1, 2, 3, 4), steps=4_690_000,
                                 lr=1e-3, batch_size=128, momentum=0.0, record_every=46_900),
        },
        notes={"cpu": "Fig. 4's depth (5 ReLU + 4 linear layers) and weight decay 0.0018 at width 128, on all 5,000 "
                      "MNIST digits of MNIST-5k (500 per class): 10,000 full-batch GD steps (the paper's 10,000 "
                      "epochs, one pass each) with momentum 0.9, lr 0.05 dropped ten-fold at 80%; 3 seeds instead "
                      "of 5. The paper's lr 0.001 (optimiser not stated) does not train at this size: plain SGD "
                      "with batch 128 at lr 0.001 left the training error at 86-90% after 1,000 epochs (8,000 "
                      "steps), because an epoch here is 8 steps where the paper's is 469.",
               "gpu": "Fig. 4's network (784, 8 x 1024, 10; 5 non-linear layers), weight decay 0.0018, lr 0.001, on "
                        "MNIST-5k: 400,000 SGD steps of batch 128 in shuffled passes (40 per epoch) = the paper's "
                        "10,000 epochs; 3 seeds instead of 5 to fit 10 minutes.",
               "paper": "Jacot et al. App. A: 5 non-linear + 4 linear layers, weight decay 0.0018, lr 0.001, "
                        "10,000 epochs, 5 runs. Width, optimiser and batch size are not stated in the text; "
                        "width 1024, plain SGD with batch 128 are our assumptions: 4,690,000 steps = 10,000 epochs "
                        "of 469 batches in shuffled passes, a record every 100 epochs."},
    ),
    Experiment(
        name="linear_head",
        description="chapter 1's MLP with a linear head of 1-4 layers, for 4 weight decays (the λ x depth figure)",
        run=run_head_depth,
        splits={"depths": 0, "weight_decays": 1},
        scales={
            "tiny": HeadDepth(depths=(1, 2), weight_decays=(0.0, 1e-2), dataset="digits", per_class=10,
                              relu_widths=(16,), head_width=8, steps=20, record_every=10),
            "cpu": HeadDepth(),
            "gpu": HeadDepth(depths=(1, 2, 3, 4, 5, 6), dataset="mnist5k", per_class=500, relu_widths=(512, 512),
                             head_width=512, steps=10_000, lr=0.05, record_every=500, dtype="float32"),
            "paper": HeadDepth(depths=(1, 2, 3, 4, 5, 6), dataset="mnist", per_class=None, relu_widths=(512, 512),
                               head_width=512, steps=20_000, lr=0.05, record_every=500, dtype="float32"),
        },
        notes={"gpu": "Not a figure of either paper: the sweep of chapter 1 with 512-wide layers on all of MNIST-5k, "
                        "full batch, in float32 (the cpu scale's float64 is not needed: no value it plots comes "
                        "near float32's resolution).",
               "paper": "Not a figure of either paper: the same sweep on full MNIST with wide layers, for a GPU."},
    ),
    Experiment(
        name="jacot_bounds",
        description="MLPs with linear heads of 2-5 layers, 3 weight decays, measured against Jacot et al. Thm 3.1",
        run=run_head_bounds,
        splits={"depths": 0, "weight_decays": 1},
        scales={
            "tiny": HeadBounds(depths=(2, 3), weight_decays=(1e-3, 1e-2), dataset="digits", per_class=10,
                               relu_widths=(16,), head_width=12, steps=30, record_every=10),
            "cpu": HeadBounds(),
            "gpu": HeadBounds(depths=(2, 3, 4, 5, 6), dataset="mnist5k", per_class=500, relu_widths=(1024,) * 5,
                              head_width=1024, steps=3000, lr=0.05, record_every=500, dtype="float32"),
            "paper": HeadBounds(depths=(2, 3, 4, 5, 6), dataset="mnist", per_class=None, relu_widths=(1024,) * 5,
                                head_width=1024, steps=20_000, lr=0.05, record_every=1000, dtype="float32"),
        },
        notes={"gpu": "Fig. 2's network (5 non-linear layers of 1024, 1-5 linear) on MNIST-5k, full batch, 3,000 "
                        "steps, trained in float32 (the bounds are evaluated in float64 whatever the training's "
                        "precision: they hold for any weights, so the training's rounding cannot make one fail); "
                        "width and optimiser are our assumptions, as at the paper scale.",
               "paper": "Jacot et al. Fig. 2 setting (5 non-linear layers, 1-5 linear) at width 1024, full batch; "
                        "widths and optimiser are our assumptions."},
    ),
    Experiment(
        name="jacot_phases",
        description="GD with weight decay on a pyramidal smoothed-leaky-ReLU MLP: loss and balancedness (Thm 4.4)",
        run=run_gd_phases,
        splits={"lrs": 0, "weight_decays": 1},
        scales={
            "tiny": GDPhases(widths=(64, 40, 16, 12, 10), per_class=4, lrs=(0.01,), weight_decays=(0.05,), steps=40,
                             every=10),
            "cpu": GDPhases(),
            "gpu": GDPhases(per_class=None, widths=(64, 2048, 256, 128, 128, 10), lrs=(1e-4, 2e-4),
                            weight_decays=(0.36, 0.9, 1.8), steps=50_000, every=500),
            "paper": GDPhases(per_class=None, widths=(64, 2048, 256, 128, 128, 10), lrs=(1e-4, 2e-4),
                              weight_decays=(0.36, 0.9, 1.8), steps=200_000, every=500),
        },
        notes={'gpu': "The paper scale's network on all 1,797 digits, 50,000 full-batch GD steps instead of 200,000. "
                      + _PHASES_STABLE + " lr x lambda x steps, which sets how far the phases run, is 1.8-18 here "
                      "(the cpu scale's 0.8-8).",
               "paper": "the paper has no such experiment; this is the full digits set with a wider first layer. "
                        + _PHASES_STABLE},
    ),
    Experiment(
        name="edge_of_stability",
        description="full-batch GD at three learning rates; top Hessian eigenvalue vs 2/lr (Sec. 5.2)",
        run=run_edge_of_stability,
        splits={"lrs": 0},
        scales=_EOS_SCALES,
        notes={'gpu': "The paper scale's networks and length (20,000 steps) on all 1,797 digits. " + _EOS_STABLE,
               "paper": "Jacot et al. discuss but do not run this; a larger version for a GPU. " + _EOS_STABLE},
    ),
    Experiment(
        name="trained_ntk",
        description="edge_of_stability's networks: NTK norm, sharpness and head conditioning at the end (Prop 5.3)",
        run=run_trained_ntk,
        splits={"lrs": 0},
        scales=_EOS_SCALES,
        notes={'gpu': "The paper scale's networks and length on all 1,797 digits. " + _EOS_STABLE,
               "paper": "the larger edge_of_stability networks; the NTK norm is matrix-free (Lanczos on J J^T). "
                        + _EOS_STABLE},
    ),
    # ---- Part IV: the experiments of both papers
    Experiment(
        name="jacot_head_depth",
        description="MLP, 5 ReLU layers + a linear head of 1-5 layers, 2 weight decays (Jacot et al. Fig. 2 left)",
        run=run_head_depth_sweep,
        splits={"depths": 0, "weight_decays": 2},
        scales={
            "tiny": HeadDepthSweep(dataset="digits", per_class=10, num_nonlinear=2, depths=(1, 2), width=16,
                                   seeds=(0,), steps=20, record_every=10),
            "cpu": HeadDepthSweep(lr=0.005),
            "gpu": HeadDepthSweep(dataset="mnist5k", per_class=500, width=1024, seeds=(0, 1, 2), steps=40_000,
                                  lr=1e-3, momentum=0.0, batch_size=128, record_every=2000),
            "paper": HeadDepthSweep(dataset="mnist", per_class=None, width=1024, seeds=(0, 1, 2, 3, 4),
                                    steps=100_000, lr=1e-3, momentum=0.0, batch_size=128, record_every=2000),
        },
        notes={"cpu": "Fig. 2 (left)'s depths (5 ReLU + 1-5 linear layers) and weight decays 0.001/0.004 at width 64 "
                      "on 500 MNIST digits: 2,000 full-batch GD steps (each a full pass; the paper states no length) "
                      "with lr 0.005 and momentum 0.9, / 10 at 80%, 3 seeds instead of 5: λt 0.082/0.33, the "
                      "paper's under the assumed 100k SGD steps at lr 0.001 (at lr 0.05 it was ten times that).",
               "gpu": "Fig. 2 (left) at the paper's widths (1024), weight decays 0.001/0.004 and lr 0.001 on "
                        "MNIST-5k: 40,000 SGD steps of batch 128 (about 1,000 epochs' worth; the paper states no "
                        "length), 3 seeds instead of 5.",
               "paper": "Jacot et al. Sec. 6: MNIST, 5 non-linear layers, 1-5 linear, weight decay 0.001 and 0.004, "
                        "lr 0.001, 5 runs. Width, optimiser, batch and length are not stated: width 1024, SGD with "
                        "batch 128 for 100k steps (~213 epochs) are our assumptions."},
    ),
    Experiment(
        name="jacot_resnet_head",
        description="ResNet + 1 ReLU layer + 1-6 linear layers, 2 weight decays (Jacot et al. Fig. 2 right, Fig. 5)",
        run=run_resnet_head_depth,
        splits={"depths": 0, "seeds": 1, "weight_decays": 2},
        scales={
            "tiny": ResNetHeadDepth(per_class=4, resnet_width=4, head_width=12, depths=(1, 2), weight_decays=(1e-3,),
                                    epochs=2, batch_size=20, record_every_epochs=1),
            "cpu": ResNetHeadDepth(weight_decays=(0.013, 0.052), seeds=(0, 1, 2)),
            "gpu": ResNetHeadDepth(dataset="mnist5k", per_class=500, resnet_depth=20, resnet_width=16,
                                   head_width=256, seeds=(0,), epochs=300, batch_size=128, lr=1e-3, momentum=0.0,
                                   record_every_epochs=30),
            "paper": ResNetHeadDepth(dataset="cifar10", per_class=None, resnet_depth=20, resnet_width=16,
                                     head_width=256, seeds=(0, 1, 2, 3, 4), epochs=5000, batch_size=128, lr=1e-3,
                                     momentum=0.0, record_every_epochs=100),
        },
        notes={"cpu": "Fig. 2 (right)'s head (1 ReLU + 1-6 linear layers of 64) on a depth-8 CIFAR ResNet (widths "
                      "8-16-32) and 500 MNIST digits: 60 epochs of SGD in shuffled passes (batch 100, lr 0.05, "
                      "momentum 0.9, / 10 at 80%), 3 seeds instead of 5; ResNet20 on CIFAR-10 for 5,000 epochs is "
                      "far beyond 2 cores. Weight decays 0.013/0.052, 13 times the paper's 0.001/0.004, so that "
                      "λt (1.6/6.4) matches the paper's under its assumed batch and optimiser: λt, not the lr:wd "
                      "ratio, governs the collapse (ncbook.scaling); the paper's pair at this length had a 13th.",
               "gpu": "Fig. 5's setting (ResNet20, width 16, a 256-wide head) on MNIST-5k: 300 epochs of SGD batch "
                        "128, lr 0.001, instead of the paper's 5,000 on CIFAR-10 (--set dataset=cifar10 where it is "
                        "present); one seed.",
               "paper": "Jacot et al. Sec. 6: ResNet20 on CIFAR-10, one non-linear head layer and 1-6 linear, weight "
                        "decay 0.001/0.004, lr 0.001, 5000 epochs. Head width and batch size are our assumptions. "
                        "Fig. 5 (MNIST): --set dataset=mnist."},
    ),
    Experiment(
        name="jacot_resnet_fig1",
        description="ResNet + 3 ReLU layers + 3 linear layers, weight decay 0.001 (Jacot et al. Fig. 1)",
        run=run_resnet_head_depth,
        splits={"depths": 0, "seeds": 1, "weight_decays": 2},
        scales={
            "tiny": ResNetHeadDepth(per_class=4, resnet_width=4, head_width=12, num_nonlinear=3, depths=(3,),
                                    weight_decays=(1e-3,), epochs=2, batch_size=20, record_every_epochs=1),
            "cpu": ResNetHeadDepth(num_nonlinear=3, depths=(3,), weight_decays=(1e-2,), seeds=(0, 1, 2), lr=0.01,
                                   init="he", epochs=500, record_every_epochs=25),
            "gpu": ResNetHeadDepth(dataset="mnist5k", per_class=500, resnet_depth=20, resnet_width=16,
                                   head_width=256, num_nonlinear=3, depths=(3,), weight_decays=(1e-3,),
                                   seeds=(0, 1, 2), epochs=1000, batch_size=128, lr=1e-3, momentum=0.0,
                                   record_every_epochs=25),
            "paper": ResNetHeadDepth(dataset="cifar10", per_class=None, resnet_depth=20, resnet_width=16,
                                     head_width=256, num_nonlinear=3, depths=(3,), weight_decays=(1e-3,),
                                     seeds=(0, 1, 2, 3, 4), epochs=5000, batch_size=128, lr=1e-3, momentum=0.0,
                                     record_every_epochs=50),
        },
        notes={"cpu": "A depth-8 ResNet (widths 8-16-32) on MNIST-5k (50 per class), 500 epochs of SGD in shuffled "
                      "passes (batch 100) with momentum 0.9 and lr 0.01, 3 seeds: the head of Fig. 1 (3 ReLU + 3 "
                      "linear layers of 64) on the backbone 2 cores can train. Weight decay 0.01 keeps the paper's "
                      "ratio of lr to weight decay (1) and matches its λt (2.0 against 1.6; ncbook.scaling): at the "
                      "paper's 0.001 the run has a tenth of it (0.21) and its linear layers stay unbalanced (1.26 "
                      "+- 0.48 at the end, 3 seeds). The head is He-initialised: with "
                      "PyTorch's default initialisation no seed "
                      "fitted the data (training error 37-67% at lr 0.05, 80-90% at lr 0.01; 21-63% even with weight "
                      "decay 1e-4), and at lr 0.05 the He-initialised run diverges.",
               "gpu": "Fig. 1's network (ResNet20, width 16, 3 ReLU + 3 linear head layers) with the paper's weight "
                      "decay and lr on MNIST-5k, 1,000 epochs instead of 5,000, 3 seeds (--set dataset=cifar10 where "
                      "CIFAR-10 is present).",
               "paper": "Jacot et al. Sec. 6: ResNet20 on CIFAR-10 with 6 extra layers, the first three with a ReLU, "
                        "weight decay 0.001, lr 0.001, 5,000 epochs, lr / 10 after 80%. Not stated: the head's width "
                        "(256), the batch (128), plain SGD, the number of runs (5, as Fig. 4). The paper's caption "
                        "of Fig. 1 describes the MLP of Fig. 4 (a 9-layer MLP on MNIST, weight decay 0.0018); we "
                        "follow the text."},
    ),
    Experiment(
        name="jacot_nonlinear_depth",
        description="MLPs with 4-12 ReLU layers: balancedness and negativity of the non-linear layers (Jacot Fig. 3)",
        run=run_nonlinear_depth_sweep,
        splits={"depths": 0, "lrs": 1},
        scales={
            "tiny": NonlinearDepthSweep(dataset="digits", per_class=10, depths=(3, 4), num_linear=1, width=16,
                                        seeds=(0,), lrs=(0.01,), steps=20, record_every=10),
            "cpu": NonlinearDepthSweep(lrs=(0.005, 0.01), steps=3000),
            "gpu": NonlinearDepthSweep(dataset="mnist5k", per_class=500, width=1024, lrs=(1e-3, 2e-3),
                                       seeds=(0, 1, 2), steps=20_000, momentum=0.0, batch_size=128, init="default",
                                       record_every=2000),
            "paper": NonlinearDepthSweep(dataset="mnist", per_class=None, width=1024, lrs=(1e-3, 2e-3),
                                         seeds=(0, 1, 2, 3, 4), steps=100_000, momentum=0.0, batch_size=128,
                                         init="default", record_every=2000),
        },
        notes={"cpu": "Fig. 3's depths (4-12 ReLU layers, the first two the backbone), 3 linear layers and weight "
                      "decay 0.016/L at width 64 on 500 MNIST digits: 3,000 full-batch GD steps with momentum 0.9 "
                      "at lr 0.005 and 0.01 (the paper's ratio of 2; 0.02 diverges), / 10 at 80%, He "
                      "initialisation (PyTorch's default does not train 15 layers in a few thousand steps), 3 seeds.",
               "gpu": "Fig. 3 at width 1024, lr 0.001/0.002, weight decay 0.016/L on MNIST-5k: 20,000 SGD steps of "
                        "batch 128 (about 500 epochs' worth), 3 seeds.",
               "paper": "Jacot et al. Sec. 6: non-linear depth 4-12 (first two layers = backbone), lr 0.001 or "
                        "0.002, 5 runs, weight decay 0.016/L. Linear-head depth, width and optimiser are not stated; "
                        "3 linear layers, width 1024, SGD batch 128 are our assumptions."},
    ),
    Experiment(
        name="tirer_layerwise",
        description="MLP grown and trained one hidden layer at a time: NC1 of the deepest features (Tirer Fig. 2)",
        run=run_layerwise,
        splits={"seeds": 0},
        scales={
            "tiny": LayerwiseTraining(dataset="digits", per_class=10, width=16, num_layers=3, epochs=1, batch_size=32,
                                      seeds=(0,)),
            "cpu": LayerwiseTraining(),
            "gpu": LayerwiseTraining(dataset="mnist5k", per_class=500, width=3072, seeds=(0, 1, 2)),
            "paper": LayerwiseTraining(dataset="cifar10", per_class=None, width=3072, seeds=(0,)),
        },
        notes={"gpu": "App. E.1 exactly (10 layers of 3072 with batch norm, 3 epochs of Adam per layer, lr 1e-4, "
                        "batch 256) on MNIST-5k instead of CIFAR-10.",
               "paper": "Tirer et al. App. E.1 exactly: CIFAR-10, 10 hidden layers of 3072 units with batch norm, "
                        "3 epochs of Adam (lr 1e-4, batch 256, cross-entropy) per added layer."},
    ),
    Experiment(
        name="tirer_wd_ablation",
        description="weight decay doubled/zeroed on the last layer vs the feature layers, MSE and CE (Tirer Fig. 3)",
        run=run_weight_decay_ablation,
        splits={"losses": 0, "seeds": 1},
        scales={
            "tiny": WeightDecayAblation(dataset="digits", per_class=10, hidden=(16, 16), seeds=(0,), epochs=2,
                                        batch_size=32, record_every_epochs=1),
            "cpu": WeightDecayAblation(hidden=(128, 128, 128), batch_size=256, epochs=500, record_every_epochs=25),
            "gpu": WeightDecayAblation(dataset="mnist5k", per_class=500, arch="resnet18", batch_size=256,
                                       epochs=100, record_every_epochs=5, seeds=(0,)),
            "paper": WeightDecayAblation(dataset="cifar10", per_class=None, arch="resnet18", batch_size=256,
                                         epochs=100, record_every_epochs=5),
        },
        notes={"cpu": "App. E.2's optimisation exactly (SGD batch 256 in shuffled epochs, lr 0.05 / 10 at 40% and 80%, "
                      "momentum 0.9, weight decay 5e-4, 3 seeds, MSE and CE) on MNIST-5k, with a bias-free "
                      "MLP 784-128-128-128-10 instead of ResNet18 (2 cores cannot train ResNet18s in the time), "
                      "for 500 epochs instead of 100: an epoch of 5,000 digits is 20 steps where the paper's is 118 "
                      "(MNIST 3K per class) to 196 (CIFAR-10), and 500 epochs give λt 1.1 against the paper's 1.3 "
                      "to 2.2 (ncbook.scaling); 100 epochs gave 0.22. " + _TIRER_MSE,
               "gpu": "App. E.2 exactly (ResNet18, SGD batch 256, lr 0.05 / 10 at 40% and 80%, momentum 0.9, weight "
                        "decay 5e-4, 100 epochs, MSE and CE) on MNIST-5k, one seed (each further seed: --seeds N, 8 "
                        "more minutes). " + _TIRER_MSE,
               "paper": "Tirer et al. Sec. 6 / App. E.2 exactly: ResNet18, SGD batch 256, lr 0.05 / 10 every 40 "
                        "epochs, momentum 0.9, weight decay 5e-4, 100 epochs, 3 seeds. Figs. 4-5 and Table 1's "
                        "MNIST columns: --set dataset=mnist --set per_class=3000 (or 5000). " + _TIRER_MSE},
    ),
    Experiment(
        name="tirer_blur",
        description="digits 4 and 9 blurred, last-layer weight decay 5e-4, 5e-5, 0: per-class NC1 (Tirer Fig. 6)",
        run=run_blurred_classes,
        splits={"seeds": 1},
        scales={
            "tiny": BlurredClasses(dataset="digits", per_class=10, hidden=(16, 16), blur=3, seeds=(0,), epochs=2,
                                   batch_size=32, record_every_epochs=1),
            "cpu": BlurredClasses(hidden=(128, 128, 128), batch_size=256, epochs=400, record_every_epochs=20),
            "gpu": BlurredClasses(dataset="mnist5k", per_class=500, arch="resnet18", batch_size=256, epochs=100,
                                  record_every_epochs=5),
            "paper": BlurredClasses(dataset="mnist", per_class=3000, arch="resnet18", batch_size=256, epochs=100,
                                    record_every_epochs=5),
        },
        notes={"cpu": "App. E.2's blur experiment with the baseline's optimisation (SGD batch 256 in shuffled epochs, "
                      "lr 0.05 / 10 at 40% and 80%, momentum 0.9, cross-entropy) on MNIST-5k (500 per class instead "
                      "of 3,000), with the MLP 784-128-128-128-10 instead of ResNet18, 3 seeds, for 400 epochs "
                      "instead of 100: λt 0.88 against the paper's 1.3 (ncbook.scaling); 100 epochs gave 0.22.",
               "gpu": "App. E.2's blur experiment (ResNet18, 100 epochs, last-layer weight decay 5e-4, 5e-5, 0) on "
                        "MNIST-5k, 500 per class instead of 3,000, 3 seeds.",
               "paper": "Tirer et al. App. E.2: ResNet18 on MNIST with 3K samples per class, digits 4 and 9 blurred "
                        "by a 9x9 uniform kernel, last-layer weight decay 5e-4, 5e-5, 0, baseline schedule."},
    ),
)}


def get_experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise KeyError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    return EXPERIMENTS[name]


SCALES: tuple[str, ...] = tuple(dict.fromkeys(s for exp in EXPERIMENTS.values() for s in exp.scales))
"""Every scale some experiment has, in registry order (the command line's choices)."""
