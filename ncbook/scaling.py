"""The dimensionless quantities that govern Part IV's claims, computed from an experiment's configuration, for the
paper's setting and for every scale: what a small run must match for its verdict to speak for the paper's.

- ``λt``: weight decay times the gradient-flow time t = Σ_k η_k / (1 - μ) of SGD with heavy-ball momentum μ. Under
  gradient flow on L + λ/2 ||θ||², the linear layers' imbalance W_{l+1}ᵀW_{l+1} - W_l W_lᵀ decays like exp(-2λt)
  (Jacot et al. Sec. 4.2, the second phase), and the pull towards the regularised optimum acts on the same clock.
- samples per class: within-class variability has as many samples to collapse as there are per class; Tirer et
  al.'s Figs. 4 and 5 differ only in it (3K vs 5K).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .registry import get_experiment

DATASET_SIZES = {"mnist": 60_000, "cifar10": 50_000, "mnist5k": 5_000, "digits": 1_797}
"""Training-set sizes of the data sets the experiments read (``mnist5k``: 500 digits per class)."""

MATCH = 2.0
"""A scale matches the paper in a quantity when the two agree within this factor (issue 33)."""


def num_classes(cfg) -> int:
    """Classes an experiment trains on: its ``digits`` where it picks some (the first picture), else 10."""
    return len(getattr(cfg, "digits", ())) or 10


def num_samples(cfg) -> int:
    """Training samples of an experiment's configuration: its classes x ``per_class``, else the whole data set."""
    per_class = getattr(cfg, "per_class", None)
    return num_classes(cfg) * per_class if per_class else DATASET_SIZES[getattr(cfg, "dataset", "digits")]


def samples_per_class(cfg) -> int:
    """Training samples per class (balanced classes; the digits set is nearly balanced)."""
    return num_samples(cfg) // num_classes(cfg)


def num_steps(cfg) -> int:
    """SGD steps of one run: ``steps`` (the last of ``checkpoints``), or ``epochs`` shuffled passes of ceil(n / batch)
    minibatches."""
    if hasattr(cfg, "steps"):
        return cfg.steps
    if hasattr(cfg, "checkpoints"):
        return cfg.checkpoints[-1]
    return cfg.epochs * math.ceil(num_samples(cfg) / cfg.batch_size)


def lr_sum(steps: int, lr: float, lr_drops: tuple[float, ...] = (), factor: float = 0.1) -> float:
    """Σ_{k < steps} η_k in closed form, with the drop points of :meth:`ncbook.train.TrainConfig.lr_at`."""
    edges = [0, *sorted(round(f * steps) for f in lr_drops), steps]
    return lr * sum((b - a) * factor ** i for i, (a, b) in enumerate(zip(edges, edges[1:])))


def decay_time_at(steps: np.ndarray, cfg, weight_decay: float, lr: float | None = None) -> np.ndarray:
    """λt after each of ``steps`` of a run of ``cfg`` (its schedule over :func:`num_steps`) at ``weight_decay``
    (and ``lr``, default the configuration's): the clock a result's records are read against."""
    total, lr = num_steps(cfg), cfg.lr if lr is None else lr
    edges = sorted(round(f * total) for f in getattr(cfg, "lr_drops", ()))
    k = np.asarray(steps, dtype=float)
    done = sum(0.1 ** i * (np.clip(k, a, b) - a) for i, (a, b) in enumerate(zip([0, *edges], [*edges, np.inf])))
    return weight_decay * lr * done / (1 - getattr(cfg, "momentum", 0.0))


def _weight_decays(cfg) -> list[float]:
    if hasattr(cfg, "weight_decay_total"):                       # Jacot Fig. 3: 0.016 / L for every depth
        return [cfg.weight_decay_total / (d + cfg.num_linear) for d in cfg.depths]
    if hasattr(cfg, "weight_decays"):
        return list(cfg.weight_decays)
    return [cfg.weight_decay] if hasattr(cfg, "weight_decay") else []


def decay_times(cfg) -> np.ndarray:
    """λt = λ Σ_k η_k / (1 - μ) for every (learning rate, weight decay) the configuration trains (module docstring);
    empty for a run without weight decay or with Adam."""
    lrs = getattr(cfg, "lrs", None) or [cfg.lr]
    flow = [lr_sum(num_steps(cfg), lr, getattr(cfg, "lr_drops", ())) / (1 - getattr(cfg, "momentum", 0.0))
            for lr in lrs]
    return np.array(sorted(t * wd for t in flow for wd in _weight_decays(cfg) if wd > 0))


@dataclass(frozen=True)
class Governing:
    """One governing quantity of an experiment at a scale and at the paper's setting (ranges over its runs)."""

    name: str
    scale: tuple[float, float]
    paper: tuple[float, float]

    @property
    def ratio(self) -> float:
        """Paper over scale, geometric mid-ranges: 1 is matched, 10 means the scale has a tenth of it."""
        return math.sqrt(self.paper[0] * self.paper[1] / (self.scale[0] * self.scale[1]))

    @property
    def matched(self) -> bool:
        return 1 / MATCH <= self.ratio <= MATCH

    def __str__(self) -> str:
        fmt = (lambda v: f"{v:,.0f}") if self.name == "per class" else (lambda v: f"{v:.2g}")   # noqa: E731
        span = lambda r: fmt(r[0]) if math.isclose(*r) else f"{fmt(r[0])}-{fmt(r[1])}"    # noqa: E731
        verdict = "matched" if self.matched else f"ours / paper = {1 / self.ratio:.2g}"
        return f"{self.name} {span(self.scale)} ({span(self.paper)}; {verdict})"


def governing(cfg, paper_cfg) -> list[Governing]:
    """The governing quantities of a configuration against the paper's: λt where it trains with weight decay,
    samples per class always."""
    out = []
    t, tp = decay_times(cfg), decay_times(paper_cfg)
    if t.size and tp.size:
        out.append(Governing("λt", (t.min(), t.max()), (tp.min(), tp.max())))
    n, n_paper = samples_per_class(cfg), samples_per_class(paper_cfg)
    out.append(Governing("per class", (n, n), (n_paper, n_paper)))
    return out


def governing_text(name: str, scale: str, paper: dict | None = None, **overrides) -> str:
    """The governing quantities of experiment ``name`` at ``scale`` (with ``overrides``) and at its paper scale (with
    the overrides ``paper``), as one line: "λt 0.21 (1.6; ours / paper = 0.13); per class 50 (5,000; ours / paper =
    0.01)"."""
    exp = get_experiment(name)
    cfg, paper_cfg = replace(exp.config(scale), **overrides), replace(exp.config("paper"), **(paper or {}))
    return "; ".join(map(str, governing(cfg, paper_cfg)))


ASSUMED = {
    "jacot_mlp": ("batch_size", "momentum"),
    "jacot_resnet_fig1": ("batch_size", "momentum"),
    "jacot_resnet_head": ("batch_size", "momentum"),
    "jacot_head_depth": ("batch_size", "momentum", "steps"),
    "jacot_nonlinear_depth": ("batch_size", "momentum", "steps"),
}
"""The settings that govern λt which the paper does not state; the values assumed for them are the `paper`
configuration's (Jacot et al. Sec. 6 and App. A give epochs, or for Figs. 2-3 no length, and neither batch nor
optimiser)."""

PLAUSIBLE = {"batch_size": (64, 512), "momentum": (0.0, 0.9), "steps": (0.1, 10.0)}
"""The range of each unstated setting over which :func:`paper_decay_time_range` reads the paper's λt: batch 64 to
512, plain SGD or heavy-ball momentum 0.9, and a length from a tenth to ten times the one assumed."""


def paper_decay_time_range(name: str) -> tuple[float, float]:
    """The paper's λt (smallest and largest over its runs) over :data:`PLAUSIBLE` values of what it does not state
    (:data:`ASSUMED`): a stated length in epochs takes ceil(n / batch) steps each, an unstated one a factor on the
    assumed steps; momentum μ multiplies the flow time by 1 / (1 - μ)."""
    cfg = get_experiment(name).config("paper")
    t = decay_times(cfg)
    unstated = ASSUMED.get(name, ())
    lo, hi = t.min(), t.max()
    if "batch_size" in unstated and "steps" not in unstated:
        per_epoch = [math.ceil(num_samples(cfg) / b) for b in PLAUSIBLE["batch_size"]]
        now = math.ceil(num_samples(cfg) / cfg.batch_size)
        lo, hi = lo * per_epoch[1] / now, hi * per_epoch[0] / now
    if "steps" in unstated:
        lo, hi = lo * PLAUSIBLE["steps"][0], hi * PLAUSIBLE["steps"][1]
    if "momentum" in unstated:
        hi = hi / (1 - PLAUSIBLE["momentum"][1])
    return float(lo), float(hi)


def assumptions_text(name: str) -> str:
    """What the paper does not state and we assume for its λt, and the λt range over plausible values: "" when the
    paper states every governing setting."""
    unstated = ASSUMED.get(name)
    if not unstated:
        return ""
    cfg = get_experiment(name).config("paper")
    said = {"batch_size": f"batch {cfg.batch_size}", "steps": f"{num_steps(cfg):,} steps",
            "momentum": "plain SGD" if cfg.momentum == 0 else f"momentum {cfg.momentum:g}"}
    over = {"batch_size": "batch {:g}-{:g}", "momentum": "momentum {:g}-{:g}", "steps": "length x{:g}-{:g}"}
    varied = [k for k in PLAUSIBLE if k in unstated and not (k == "batch_size" and "steps" in unstated)]
    lo, hi = paper_decay_time_range(name)
    return (f"assumed, not stated: {', '.join(said[k] for k in unstated)}; paper λt {lo:.2g}-{hi:.2g} over "
            + ", ".join(over[k].format(*PLAUSIBLE[k]) for k in varied))
