"""How each result was made, in words and tables: provenance, scales, what ran, configuration differences."""

from __future__ import annotations

import html
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from ..compare import WRAP
from ..registry import get_experiment
from .reading import RESULTS
from .tirer import GOVERNS

_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:e[-+]?\d+)?|>1e12")


def unbroken_numbers(text: str) -> str:
    """HTML of ``text`` with every number kept on one line (8.91e-05 is never split at its minus sign)."""
    out, at = [], 0
    for m in _NUMBER.finditer(text):
        out += [html.escape(text[at:m.start()]), f"<span class='n'>{html.escape(m.group())}</span>"]
        at = m.end()
    return "".join(out) + html.escape(text[at:])


@dataclass(frozen=True)
class Provenance:
    """How each result a paper's claims tables read was made: for every one cached and current at ``scales``, the
    machine (device, threads), the date, the commit, the wall time and the command; a table on the page, text
    elsewhere (the manifests' provenance, :func:`ncbook.cache.provenance`)."""

    paper: str
    scales: tuple[str, ...] = ("cpu", "gpu")
    root: Any = None

    HEADS = ("result", "made on", "date", "commit", "wall time", "command")

    @property
    def rows(self) -> list[tuple[str, ...]]:
        from .. import cache
        from ..runner import Run, cached_current

        out: list[tuple[str, ...]] = []
        for name in RESULTS[self.paper]:
            exp, overrides = GOVERNS[name]
            for scale in self.scales:
                if scale not in get_experiment(exp).scales:
                    continue
                run = Run.of(exp, scale, **overrides)
                if cached_current(run, self.root) is None:
                    continue
                p = cache.read_manifest(exp, run.tag, self.root)["provenance"]
                threads = p.get("cpu_threads", "?")
                where = (f"{p.get('cpu_model', 'CPU')}, {threads} thread{'s' * (threads != 1)}"
                         if p.get("device") == "cpu" else str(p.get("device_name", p.get("device", "?")))) + beside(p)
                out.append((f"{exp}/{run.tag}", where, str(p.get("date", "?"))[:10], str(p.get("git_commit", "?"))[:7],
                             wall_time(p), str(p.get("command", ""))))
        return out

    def __repr__(self) -> str:
        return "\n".join(textwrap.fill("; ".join(r), WRAP, subsequent_indent="    ") for r in self.rows)

    def _repr_html_(self) -> str:
        e = html.escape
        head = "".join(f"<th>{e(h)}</th>" for h in self.HEADS)
        body = "".join("<tr>" + "".join(f"<td>{e(c) if i != 5 else f'<code>{e(c)}</code>'}</td>"
                                         for i, c in enumerate(r)) + "</tr>" for r in self.rows)
        return (f"<details class='ncbook-claims-detail'><summary>How each result these verdicts read was made "
                f"({len(self.rows)})</summary><table class='ncbook-provenance'><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table></details>")


def wall_time(provenance: dict) -> str:
    """A result's recorded wall time, and how it was resumed (:func:`resumes`)."""
    from ..cost import duration

    return duration(float(provenance.get("wall_time_s", 0.0))) + resumes(provenance)


def beside(provenance: dict) -> str:
    """What ran beside a run (``runner.MachineLoad``): ", machine load 2.9 on 2 CPUs" (the mean one-minute load
    average while it ran; a one-thread run alone reads about 1), or "" where it was not recorded."""
    load = provenance.get("load")
    return f", machine load {load['mean_1min']:.1f} on {load['cpus']} CPUs" if load else ""


def resumes(provenance: dict) -> str:
    """What a wall time covers where a run was stopped and resumed (``runner.stopped_segments``): ", resumed once",
    or that it lacks the segments before the last resume; "" for a run made in one go."""
    if provenance.get("wall_time_partial"):
        return " (after its last resume only)"
    resumed = int(provenance.get("segments", 1)) - 1
    return f", resumed {({1: 'once', 2: 'twice'}).get(resumed, f'{resumed} times')}" if resumed else ""


SCALE_ROLES = {"cpu": "shipped with the book, made on 2 CPU cores",
               "gpu": "the papers' widths on the shipped data, for one GPU",
               "paper": "the paper's setting where it states one (full data sets)"}
"""What each scale of Part IV is for (the `tiny` one only tests the code); the glossary defines them."""

_DATA = {"mnist5k": "MNIST-5k", "mnist": "MNIST", "cifar10": "CIFAR-10", "digits": "digits"}


@dataclass(frozen=True)
class Scales:
    """Each of a paper's experiments at each scale: the network, the data, the length and the seeds, and where and in
    how long the result was made (from its manifest; "not made" where none is cached): Part IV's opening table."""

    paper: str
    scales: tuple[str, ...] = ("cpu", "gpu", "paper")
    root: Any = None

    def cell(self, exp: str, scale: str) -> tuple[str, str]:
        """(what runs, where it ran and for how long) for one experiment at one scale."""
        return what_ran(exp, scale, self.root)

    @property
    def experiments(self) -> list[str]:
        return list(dict.fromkeys(GOVERNS[r][0] for r in RESULTS[self.paper]))

    def __repr__(self) -> str:
        lines = [f"{s}: {SCALE_ROLES[s]}" for s in self.scales]
        for exp in self.experiments:
            lines += [textwrap.fill(f"{exp} [{s}]: " + "; ".join(self.cell(exp, s)), WRAP, subsequent_indent="    ")
                      for s in self.scales]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        head = "<th>experiment</th>" + "".join(f"<th>{e(s)}<br><span class='claim-metric'>{e(SCALE_ROLES[s])}</span>"
                                               f"</th>" for s in self.scales)
        body = "".join(f"<tr><td><code>{e(exp)}</code></td>" + "".join(
            f"<td data-label='{e(s)}'>{e(what)}<br><i>{e(where)}</i></td>"
            for s, (what, where) in ((s, self.cell(exp, s)) for s in self.scales)) + "</tr>"
            for exp in self.experiments)
        return f"<table class='ncbook-scales'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@dataclass(frozen=True)
class Notes:
    """Each of a paper's experiments' configuration notes, scale by scale (where it departs from the paper and what
    it assumes; ``python -m ncbook list --notes``), each once, as a folded table on the page."""

    paper: str

    def notes(self) -> list[tuple[str, str, str]]:
        return [(exp, scale, note) for exp in Scales(self.paper).experiments
                for scale, note in get_experiment(exp).notes.items()]

    def __repr__(self) -> str:
        return "\n".join(textwrap.fill(f"{exp} [{scale}]: {note}", WRAP, subsequent_indent="    ")
                         for exp, scale, note in self.notes())

    def _repr_html_(self) -> str:
        e = html.escape
        body = "".join(f"<tr><td data-label='experiment'><code>{e(exp)}</code></td><td data-label='scale'>{e(scale)}"
                       f"</td><td data-label='note'>{e(note)}</td></tr>" for exp, scale, note in self.notes())
        return (f"<details class='ncbook-claims-detail'><summary>Each experiment's notes, scale by scale "
                f"({len(self.notes())})</summary><table class='ncbook-claims ncbook-notes'><thead><tr><th>experiment"
                f"</th><th>scale</th><th>where it departs from the paper, and what it assumes</th></tr></thead>"
                f"<tbody>{body}</tbody></table></details>")


def lambda_t_ratios(paper: str, scale: str = "cpu") -> dict[str, float]:
    """Ours over the paper's λt (geometric mid-ranges, :class:`ncbook.scaling.Governing`) of every result ``paper``'s
    claims read (:data:`RESULTS`), by name: 1 is matched, 0.1 a tenth of the paper's time."""
    from dataclasses import replace

    from ..scaling import governing

    out = {}
    for name in RESULTS[paper]:
        exp, overrides = GOVERNS[name]
        cfg, paper_cfg = replace(get_experiment(exp).config(scale), **overrides), get_experiment(exp).config("paper")
        found = [g for g in governing(cfg, paper_cfg) if g.name == "λt"]
        if found:
            out[name] = 1 / found[0].ratio
    return out


def what_ran(exp: str, scale: str, root: Any = None) -> tuple[str, str]:
    """(what runs, where it ran and for how long) for experiment ``exp`` at ``scale``: the network, the data, the
    length and the seeds from its configuration; the device and wall time from its result's manifest ("not
    made" where no current result is cached)."""
    from .. import cache
    from ..runner import Run, cached_current

    cfg = get_experiment(exp).config(scale)
    per = f" x {cfg.per_class}" if getattr(cfg, "per_class", None) else ""
    length = (f"{cfg.steps:,} steps" if getattr(cfg, "steps", None) else f"{cfg.epochs:,} epochs")
    seeds = len(cfg.seeds)
    net = (f"ResNet-{cfg.resnet_depth} (width {cfg.resnet_width})" if hasattr(cfg, "resnet_depth") else
           f"width {cfg.width}" if getattr(cfg, "width", None) else
           f"width {max(cfg.hidden)}" if getattr(cfg, "hidden", None) else
           f"width {max(cfg.widths[1:-1])}" if getattr(cfg, "widths", None) else "")
    what = (f"{net + '; ' if net else ''}{_DATA.get(cfg.dataset, cfg.dataset)}{per}, {length}, "
            f"{seeds} seed{'s' * (seeds != 1)}")
    run = Run.of(exp, scale)
    if cached_current(run, root) is None:
        return what, "not made"
    p = cache.read_manifest(exp, run.tag, root)["provenance"]
    where = ("CPU" if p.get("device") == "cpu" else str(p.get("device_name", p.get("device", "?"))))
    return what, f"{where}, {wall_time(p)}"


@dataclass(frozen=True)
class ConfigDifferences:
    """Every setting in which each of a paper's experiments at ``scale`` differs from its `paper` configuration (the
    recording cadence left out), "ours / the paper's": one table instead of a paragraph per chapter."""

    paper: str
    scale: str = "cpu"

    @staticmethod
    def _value(name: str, v: Any) -> str:
        if name == "seeds":
            return f"{len(v)} seed{'s' * (len(v) != 1)}"
        if name == "widths":
            return f"{len(v) - 2} hidden layers of {v[1]}"
        if v is None:
            return "full batch" if name == "batch_size" else "all"
        return ", ".join(map(str, v)) if isinstance(v, tuple) else str(v)

    @property
    def rows(self) -> list[tuple[str, str]]:
        import dataclasses

        out = []
        for name in dict.fromkeys(GOVERNS[r][0] for r in RESULTS[self.paper]):
            exp = get_experiment(name)
            ours, theirs = exp.config(self.scale), exp.config("paper")
            diffs = [f"{f.name} {self._value(f.name, getattr(ours, f.name))} / "
                     f"{self._value(f.name, getattr(theirs, f.name))}"
                     for f in dataclasses.fields(ours) if not f.name.startswith("record_every")
                     and getattr(ours, f.name) != getattr(theirs, f.name)]
            out.append((name, "; ".join(diffs)))
        return out

    def __repr__(self) -> str:
        return "\n".join(textwrap.fill(f"{n}: {d}", WRAP, subsequent_indent="    ") for n, d in self.rows)

    def _repr_html_(self) -> str:
        e = html.escape
        body = "".join(f"<tr><td><code>{e(n)}</code></td><td>{unbroken_numbers(d)}</td></tr>" for n, d in self.rows)
        return (f"<table class='ncbook-provenance'><thead><tr><th>experiment</th><th>setting: ours at {e(self.scale)} "
                f"/ the paper's</th></tr></thead><tbody>{body}</tbody></table>")
