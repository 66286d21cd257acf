"""Both papers' claims read on the stored results, at a scale and along the sweeps of the governing time."""

from __future__ import annotations

import textwrap

import numpy as np

from ..compare import WRAP
from ..registry import get_experiment
from ..scaling import assumptions_text, decay_time_at, governing_text
from .jacot import EXTRA, FIG1_FIVE, FIG4_POOLED, FIVE_SEEDS, POOLS, X10, _head_sweep_specs, jacot_specs
from .regime import evaluate
from .rule import Spec
from .tirer import GOVERNS, TIRER_EXTRA, tirer_specs
from .verdicts import Claim


def _governing(spec: Spec, scale: str | None) -> str:
    """The row's governing quantities, ours (the paper's), with the paper's settings we assume and its runs."""
    if scale is None:
        return ""
    name, overrides = GOVERNS[spec.result]
    paper = ({"dataset": "mnist", "per_class": 3000 if overrides.get("per_class") == 300 else 5000}
             if name == "tirer_wd_ablation" else None)
    parts = [governing_text(name, scale, paper=paper, **overrides)]
    if spec.where.startswith("Table 1"):
        parts.append("Table 1's MNIST samples per class not stated (Figs. 4, 5: 3K, 5K; compared with 5K)")
    parts += [t for t in (assumptions_text(name),) if t]
    exp = get_experiment(name)
    ours, theirs = (len(getattr(exp.config(s, **(overrides if s == scale else {})), "seeds", ()))
                    for s in (scale, "paper"))
    if ours and theirs:
        parts.append(f"seeds {ours} (paper {theirs})")
    return "; ".join(parts)


def jacot_claims(results: dict[str, dict], scale: str | None = None) -> list[Claim]:
    """Every claim of Jacot et al. on cached ``results`` (by experiment name), each checked on every run."""
    runs = _jacot_runs(results)
    extra = tuple(k for k in EXTRA if k in results)
    return [evaluate(s, runs, _governing(s, scale)) for s in jacot_specs(scale or "cpu", extra)]


def head_sweep_claims(name: str, r: dict, where: str, scale: str | None = None) -> list[Claim]:
    """Jacot et al.'s Fig. 2 rows read on one head sweep ``r`` (the run :data:`EXTRA` names ``name``) under the label
    ``where``, as the claims table reads its own: a chapter's comparison beside the table."""
    return [evaluate(s, {name: r}, _governing(s, scale)) for s in _head_sweep_specs(where, name)]


def tirer_claims(results: dict[str, dict], losses: tuple[str, ...], blurred: tuple[int, ...],
                 scale: str | None = None) -> list[Claim]:
    """Every claim of Tirer et al. on cached ``results`` (by experiment name; the 300-per-class ablation as
    "tirer_wd_ablation@300"), each checked on every run."""
    return [evaluate(s, results, _governing(s, scale)) for s in tirer_specs(losses, blurred, tuple(results))
            if s.result in results]


def at_record(r: dict, k: int) -> dict:
    """The result as if training had stopped at record ``k``: every per-record array cut after it (the records of one
    run are a sweep of λt); arrays without a record axis (the end-of-training Gram matrices) are kept as they are."""
    R = len(r["steps"])
    out = dict(r)
    for name, v in r.items():
        if name in ("steps", "epochs"):
            out[name] = np.asarray(v)[:k + 1]
        elif name in ("train_error", "loss"):
            out[name] = np.asarray(v)[..., :k + 1]
        elif isinstance(v, np.ndarray) and v.ndim >= 2 and v.shape[-2] == R and name != "class_mean_cosines":
            out[name] = v[..., :k + 1, :]
    return out


def lambda_t_sweep(specs: list[Spec], r: dict, cfg, weight_decay: float,
                   fractions: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0)) -> list[tuple[float, list[Claim]]]:
    """The rows ``specs`` (which read result ``r`` at the end of training only) judged as if training had stopped at
    the records where λt (at ``weight_decay``, under ``cfg``'s schedule) first reaches each fraction of its final value:
    how a verdict moves with λt, on the runs already made (issue 50, point 6)."""
    t = decay_time_at(np.asarray(r["steps"]), cfg, weight_decay)
    out = []
    for f in fractions:
        k = int(np.argmax(t >= f * t[-1] * (1 - 1e-9)))
        cut = at_record(r, k)
        out.append((float(t[k]), [evaluate(s, {s.result: cut}) for s in specs]))
    return out


def jacot_fig2_sweep(results: dict[str, dict], scale: str = "cpu") -> list[tuple[float, list[Claim]]]:
    """Fig. 2's MLP rows along λt (at the first weight decay): the records of the run at the assumed λt and of the one
    at ten times it (:data:`X10`), from a tenth of the assumed λt to ten times it."""
    runs, cfg = _jacot_runs(results), get_experiment("jacot_head_depth").config(scale)
    out = lambda_t_sweep(_head_sweep_specs("Fig. 2, MLP", "jacot_head_depth"), runs["jacot_head_depth"], cfg,
                         cfg.weight_decays[0])
    if X10 in runs:
        name, overrides = EXTRA[X10]
        cfg10 = get_experiment(name).config(scale, **overrides)
        out += lambda_t_sweep(_head_sweep_specs("Fig. 2, MLP", X10), runs[X10], cfg10, cfg10.weight_decays[0])
    return sorted(out, key=lambda point: point[0])


def tirer_ablation_sweep(results: dict[str, dict], scale: str = "cpu") -> list[tuple[float, list[Claim]]]:
    """The ablation's rows (H over W, Table 1's directions; 500 per class) along λt: its records from a tenth of the
    final λt to the end."""
    cfg = get_experiment("tirer_wd_ablation").config(scale)
    specs = [s for s in specs_at("Tirer", scale) if s.result == "tirer_wd_ablation" and s.view in ("h_over_w",
                                                                                                 "settings")]
    return lambda_t_sweep(specs, results["tirer_wd_ablation"], cfg, cfg.weight_decay)


def format_sweep(sweep: list[tuple[float, list[Claim]]]) -> str:
    """A λt sweep as text: one line per row, its verdict (k of n) at each λt."""
    lines = ["λt: " + " | ".join(f"{t:.2g}" for t, _ in sweep)]
    for i, c in enumerate(sweep[0][1]):
        cells = [f"{rows[i].verdict} ({int(np.sum(rows[i].holds))}/{np.size(rows[i].holds)})" for _, rows in sweep]
        lines.append(textwrap.fill(f"[{c.where}] {c.claim}: " + " | ".join(cells), WRAP, subsequent_indent="    "))
    return "\n".join(lines)


RESULTS = {"Jacot": ("jacot_mlp", "jacot_resnet_fig1", "jacot_head_depth", "jacot_resnet_head", "jacot_nonlinear_depth",
                     *EXTRA),
           "Tirer": ("tirer_layerwise", "tirer_wd_ablation", "tirer_wd_ablation@300", "tirer_blur", *TIRER_EXTRA)}
"""The results (names of :data:`GOVERNS`) each paper's claims read."""


def cached_results(paper: str, scale: str, root=None) -> dict[str, dict]:
    """Those of ``paper``'s results (:data:`RESULTS`) that are cached and current at ``scale``, by name."""
    from ..runner import cached_scales, get

    out = {}
    for name in RESULTS[paper]:
        exp, overrides = GOVERNS[name]
        if name in POOLS:
            if (pooled := pooled_result(name, scale, root)) is not None:
                out[name] = pooled
        elif scale in cached_scales(exp, root, **overrides):
            out[name] = get(exp, scale, root, **overrides)
    return out


def pooled_result(name: str, scale: str, root=None) -> dict | None:
    """The arrays of a pool of :data:`POOLS` at ``scale``: its members' results, each loaded verified, joined along
    the pooled setting (:func:`ncbook.pieces.assemble_arrays`); None unless every member is cached."""
    from ..pieces import assemble_arrays, grid_settings
    from ..runner import cached_scales, get

    exp, overrides = GOVERNS[name]
    setting, axis, members = POOLS[name]
    if not all(scale in cached_scales(exp, root, **m) for m in members):
        return None
    parts = [get(exp, scale, root, **m) for m in members]
    return assemble_arrays(parts, setting, axis, grid_settings(get_experiment(exp).config(scale, **overrides),
                                                               but=setting))


def claims_at(paper: str, scale: str, results: dict[str, dict]) -> dict[tuple[str, str], Claim]:
    """Every claim of ``paper`` ("Jacot" or "Tirer") whose result is among ``results`` (at ``scale``), checked on
    every run, by (where, claim): the claims of a scale where only some results exist."""
    runs = _jacot_runs(results) if paper == "Jacot" else results
    specs = specs_at(paper, scale, tuple(k for k in (*EXTRA, *TIRER_EXTRA) if k in results))
    return {(s.where, s.claim): evaluate(s, runs, _governing(s, scale)) for s in specs if s.result in runs}


def specs_at(paper: str, scale: str, extra: tuple[str, ...] = (*EXTRA, *TIRER_EXTRA)) -> list[Spec]:
    """``paper``'s claims as read on the configurations of ``scale`` (Jacot's with the runs ``extra`` beside it)."""
    if paper == "Jacot":
        return jacot_specs(scale, extra)
    return tirer_specs(get_experiment("tirer_wd_ablation").config(scale).losses,
                       get_experiment("tirer_blur").config(scale).blurred, extra)


def verdicts_reading(name: str, tag: str) -> str:
    """How many claim rows of each paper read experiment ``name``'s stored result ``tag`` (a scale, or a scale with
    overrides): "Tirer 1", or "" where none does (``python -m ncbook list``: which scale each verdict comes from); a
    pool's rows at its first member's result."""
    from ..runner import Run

    scale = tag.split("--")[0]
    if scale not in get_experiment(name).scales:
        return ""
    out = []
    for paper, names in RESULTS.items():
        # a pool's rows are counted once, at its first member (every member is read: :data:`POOLS`)
        hits = {r for r in names if GOVERNS[r][0] == name
                and Run.of(name, scale, **(POOLS[r][2][0] if r in POOLS else GOVERNS[r][1])).tag == tag}
        count = sum(s.result in hits for s in specs_at(paper, scale)) if hits else 0
        out += [f"{paper} {count}"] if count else []
    return ", ".join(out)


def beside_scales(paper: str, shown: str = "cpu", scales: tuple[str, ...] = ("cpu", "gpu", "paper"),
                  root=None) -> dict[str, dict[tuple[str, str], Claim]]:
    """The verdicts of every scale but ``shown`` at which at least one of ``paper``'s results is cached, for the
    columns beside ``shown``'s (:class:`ClaimsTable`); none where no such result exists."""
    out = {}
    for scale in scales:
        if scale != shown and (results := cached_results(paper, scale, root)):
            out[scale] = claims_at(paper, scale, results)
    return out


def _jacot_runs(results: dict[str, dict]) -> dict[str, dict]:
    """Jacot et al.'s results as their claims read them: Figs. 1 and 4's one network per seed (:func:`_one_network`)."""
    return {k: _one_network(v) if k in ("jacot_mlp", "jacot_resnet_fig1", FIVE_SEEDS, FIG4_POOLED, FIG1_FIVE) else v
            for k, v in results.items()}


def _one_network(r: dict) -> dict:
    """Jacot Figs. 1 and 4 train one network per seed: drop the result's depth and weight-decay axes of length one,
    leaving [seed, record(, layer)] (and [seed, layer, K, K] for the class-mean cosines)."""
    out = dict(r)
    for k, v in r.items():
        v = np.asarray(v)
        if k == "layer_names" and v.ndim == 2:
            out[k] = v[0]
        elif k == "class_mean_cosines":
            out[k] = v.reshape(-1, *v.shape[-3:])
        elif k in ("loss", "train_error"):
            out[k] = v.reshape(-1, v.shape[-1])
        elif v.ndim >= 3:
            out[k] = v.reshape(-1, *v.shape[-2:])
    return out
