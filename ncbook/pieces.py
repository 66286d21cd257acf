"""A run cut into pieces: one result per value of a setting, assembled into the whole (issue 61).

A GPU session of the relay (:mod:`ncbook.relay`) has minutes, and a stopped run's checkpoints travel to the next
fresh machine only if they fit the carry limit: a ResNet18 with its momentum is about 90 MB, an ensemble of 1024-wide
MLPs as much. Such a run is cut along a setting whose values are computed independently of each other (each value
its own models, from its own seed, on minibatches that do not depend on the other values): its pieces are the same
experiment with that setting at one value, each a result of its own that one session can finish, and the whole is
their arrays put back together along the setting's axis. Which settings an experiment can be cut along, and the axis
each indexes in its arrays, is :attr:`ncbook.registry.Experiment.splits`; ``tests/test_pieces.py`` checks, for every
one, that the assembled arrays are those of the whole run.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np

from . import cache
from .registry import get_experiment
from .runner import Run, cached_current, regen_command

AXES = ("steps", "step", "epochs", "sharpness_steps", "hidden_layers")
"""Arrays that index records or layers, the same in every piece."""


def pieces(run: Run, setting: str) -> list[Run]:
    """The run with ``setting`` at each of its values, one value each (ValueError if the experiment cannot be cut
    along it)."""
    splits = get_experiment(run.name).splits
    if setting not in splits:
        raise ValueError(f"{run.name} cannot be cut along {setting!r}; it can be cut along: "
                         f"{', '.join(splits) or 'nothing'}")
    values = getattr(run.config, setting)
    return [Run.of(run.name, run.scale, **(run.overrides | run.runtime | {setting: (v,)})) for v in values]


def settings_to_cut(run: Run) -> list[str]:
    """The settings the run can still be cut along: declared splits with more than one value."""
    return [s for s in get_experiment(run.name).splits if len(getattr(run.config, s)) > 1]


def grid_settings(cfg, but: str = "") -> tuple[str, ...]:
    """The configuration's tuple-valued settings (its grids, whose values the result's arrays of those names list),
    less ``but``."""
    return tuple(f.name for f in fields(cfg) if isinstance(getattr(cfg, f.name), tuple) and f.name != but)


def _pad(a: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray:
    """``a`` padded at the end of every axis but ``axis`` to ``shape`` (NaN, or "" for names)."""
    width = [(0, 0) if i == axis else (0, n - m) for i, (m, n) in enumerate(zip(a.shape, shape))]
    if not any(after for _, after in width):
        return a
    if a.dtype.kind not in "fU":
        raise ValueError(f"the pieces' {a.dtype} arrays differ in shape: only floats and names are padded")
    return np.pad(a, width, constant_values="" if a.dtype.kind == "U" else np.nan)


def assemble_arrays(parts: list[dict[str, np.ndarray]], setting: str, axis: int,
                    coordinates: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """The arrays of a whole run from those of its pieces along ``setting`` (in the order of its values): the
    setting's own array and every array with a length-1 ``axis`` are joined along it (shorter layer axes padded, as
    the run pads a shallower network's), the record axes (:data:`AXES`) and the other settings' arrays
    (``coordinates``) are kept, and must be the same in every piece; ValueError where the pieces do not fit. A piece
    may hold several values of the setting (runs pooled along it, :data:`ncbook.claims.POOLS`): an array is joined
    where its ``axis`` has as many entries as the piece has values."""
    names = list(parts[0])
    if any(list(p) != names for p in parts):
        raise ValueError(f"the pieces along {setting} hold different arrays: {[sorted(p) for p in parts]}")
    counts = [np.asarray(p[setting]).shape[0] if setting in p else 1 for p in parts]
    out = {}
    for name in names:
        arrays = [np.asarray(p[name]) for p in parts]
        joined = name == setting or (name not in AXES and name not in coordinates
                                     and all(a.ndim > axis and a.shape[axis] == c for a, c in zip(arrays, counts)))
        if joined:
            axis_of = 0 if name == setting else axis
            if len({a.ndim for a in arrays}) > 1:
                raise ValueError(f"the pieces' {name} differ in their number of axes")
            most = tuple(max(s) for s in zip(*(a.shape for a in arrays)))
            out[name] = np.concatenate([_pad(a, most, axis_of) for a in arrays], axis=axis_of)
        elif all(a.shape == arrays[0].shape and np.array_equal(a, arrays[0], equal_nan=a.dtype.kind == "f")
                 for a in arrays):
            out[name] = arrays[0]
        else:
            raise ValueError(f"the pieces along {setting} disagree on {name}, which is not indexed by it")
    return out


def assemble(run: Run, setting: str, root: Path | None = None) -> Path:
    """Store the run's result assembled from its stored pieces along ``setting`` (each loaded verified), with a
    provenance that sums their wall times and names them; the manifest's path. CacheError if a piece is missing or
    not current."""
    exp, parts = get_experiment(run.name), pieces(run, setting)
    loaded = [cache.load(p.name, p.tag, p.key, root, p.command) for p in parts]
    coordinates = grid_settings(run.config, but=setting)
    arrays = assemble_arrays([a for a, _ in loaded], setting, exp.splits[setting], coordinates)
    provs = [m["provenance"] for _, m in loaded]
    device = provs[0]["device"]
    # the machine that assembled them (joining arrays: CPU work, wherever the pieces ran), then where they ran
    prov = cache.provenance("cpu", list(getattr(run.config, "seeds", [])), sum(p["wall_time_s"] for p in provs),
                            regen_command(run.name, run.scale, run.overrides) + f" --device {device}")
    prov.update({k: " + ".join(dict.fromkeys(d for p in provs for d in str(p.get(k)).split(" + ")))
                 for k in ("device", "device_name")})
    prov["assembled_from"] = [{"tag": p.tag, "device_name": q.get("device_name"), "wall_time_s": q["wall_time_s"],
                               "date": q.get("date")} for p, q in zip(parts, provs)]
    extra = {"base_scale": run.scale, "overrides": run.overrides} | ({"runtime": run.runtime} if run.runtime else {})
    return cache.save(run.name, run.tag, exp.computed(run.config), run.key, arrays, prov, root, extra=extra)


def assemble_tree(run: Run, cuts: dict[str, str], root: Path | None = None) -> bool:
    """Make the run current from its pieces where it was cut (``cuts``: a run's key -> the setting it was cut
    along), its pieces first, recursively; whether it is current now."""
    if cached_current(run, root) is not None:
        return True
    setting = cuts.get(run.key)
    if setting is None:
        return False
    if not all([assemble_tree(p, cuts, root) for p in pieces(run, setting)]):
        return False
    assemble(run, setting, root)
    return True
