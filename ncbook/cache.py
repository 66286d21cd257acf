"""The results cache: arrays as .npz (never pickled) plus a JSON manifest per result, written atomically.

Layout: ``results/<experiment>/<scale>.npz`` and ``results/<experiment>/<scale>.json``. The manifest holds the
experiment name, the full configuration, the key, the sha256 of the data file, and provenance (git commit, ncbook,
torch and numpy versions, device, seeds, wall time, date, command). The key is a hash of the canonical configuration
and of the code that produces the result (``ncbook.codehash``), so changing that code makes the result visibly stale.
"""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(os.environ.get("NCBOOK_RESULTS", ROOT / "results"))


class CacheError(RuntimeError):
    """A result is missing, stale or corrupted (``kind``); the message names the file and the command that
    regenerates it."""

    def __init__(self, message: str, kind: str = "corrupted"):
        super().__init__(message)
        self.kind = kind


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the form that is hashed."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def result_key(config: dict, code: str) -> str:
    """Key of a result: hash of the canonical configuration and of the producing code's hash
    (``ncbook.codehash.code_hash`` of the experiment's run function)."""
    return hashlib.sha256((canonical_json(config) + code).encode()).hexdigest()[:16]


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path`` (atomic on POSIX).

    If ``write`` raises, ``path`` keeps its previous content and the temporary file is removed.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)          # mkstemp makes 0600 files; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "ncbook"], cwd=ROOT, capture_output=True, text=True,
                               timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(device: str, seeds: list[int], wall_time_s: float, command: str) -> dict:
    import torch

    import ncbook

    name = torch.cuda.get_device_name() if device.startswith("cuda") else (platform.processor() or platform.machine())
    return {"git_commit": git_commit(), "ncbook_version": ncbook.__version__, "torch_version": torch.__version__,
            "numpy_version": np.__version__, "python": platform.python_version(), "device": device,
            "device_name": name, "cpu_threads": torch.get_num_threads(), "seeds": list(seeds),
            "wall_time_s": round(wall_time_s, 2),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "command": command}


def paths(name: str, scale: str, root: Path | None = None) -> tuple[Path, Path]:
    d = (root or RESULTS_DIR) / name
    return d / f"{scale}.npz", d / f"{scale}.json"


def save(name: str, scale: str, config: dict, key: str, arrays: dict[str, np.ndarray], prov: dict,
         root: Path | None = None, extra: dict | None = None) -> Path:
    """Write the arrays and then the manifest (with ``extra`` fields), each atomically; returns the manifest path."""
    data_path, manifest_path = paths(name, scale, root)
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    for k, v in arrays.items():
        if v.dtype == object:
            raise TypeError(f"array {k!r} has dtype object, which cannot be stored without pickling")
    atomic_write(data_path, lambda tmp: np.savez(open(tmp, "wb"), **arrays))
    manifest = {"experiment": name, "scale": scale, "key": key, "config": config,
                "files": {data_path.name: sha256_file(data_path)}, "arrays": sorted(arrays), "provenance": prov,
                **(extra or {})}
    atomic_write(manifest_path, lambda tmp: tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n"))
    return manifest_path


@dataclass(frozen=True)
class Tag:
    """The file stem of a stored result: its scale, and the settings a sweep point overrides, in name order
    (``cpu``, ``cpu--lr=0.01,steps=200``). ``str`` formats it, :meth:`parse` reads it back."""

    scale: str
    overrides: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, scale: str, overrides: dict) -> Tag:
        return cls(scale, tuple(sorted(overrides.items())))

    def __str__(self) -> str:
        sets = ",".join(f"{k}={v}" for k, v in self.overrides)
        return (self.scale + "--" + sets if sets else self.scale).replace("/", "_")

    @classmethod
    def parse(cls, text: str) -> Tag:
        """The tag a file stem names (values read as Python literals where they parse, else kept as text)."""
        scale, _, sets = text.partition("--")
        return cls(scale, tuple((k, _literal(v)) for k, _, v in (item.partition("=") for item in _top_level(sets))))


def _top_level(sets: str) -> list[str]:
    """``a=1,b=(2, 3)`` split at the commas outside brackets: ``["a=1", "b=(2, 3)"]``."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(sets + ","):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "," and depth == 0:
            items += [sets[start:i]] if sets[start:i] else []
            start = i + 1
    return items


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def read_manifest(name: str, scale: str, root: Path | None = None, regen: str = "the experiment runner") -> dict:
    """The manifest of a stored result, or CacheError saying what is wrong and naming ``regen``, the command that
    makes the result (the runner's ``regen_command``)."""
    _, manifest_path = paths(name, scale, root)
    try:
        return json.loads(manifest_path.read_text())
    except FileNotFoundError:
        raise CacheError(f"no cached result for {name} at scale {scale!r}: {manifest_path} is missing. Make it "
                         f"with `{regen}`", "missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CacheError(f"manifest {manifest_path} is not valid JSON ({err}). Regenerate it with `{regen}`") from None


def check(name: str, scale: str, key: str, root: Path | None = None, regen: str = "the experiment runner") -> dict:
    """Verify a stored result against the expected key and its checksums; return its manifest or raise CacheError
    naming ``regen``, the command that regenerates it."""
    manifest = read_manifest(name, scale, root, regen)
    data_path, manifest_path = paths(name, scale, root)
    if manifest.get("key") != key:
        raise CacheError(f"cached result {manifest_path} is stale: it was made with key {manifest.get('key')}, the "
                         f"current configuration and code give {key}. Regenerate it with `{regen}`", "stale")
    for fname, digest in manifest.get("files", {}).items():
        f = manifest_path.parent / fname
        if not f.exists():
            raise CacheError(f"{f} is missing (listed in {manifest_path}). Regenerate it with `{regen}`", "missing")
        if sha256_file(f) != digest:
            raise CacheError(f"{f} is corrupted: its sha256 does not match {manifest_path}. Regenerate it with "
                             f"`{regen}`")
    if data_path.name not in manifest.get("files", {}):
        raise CacheError(f"manifest {manifest_path} does not list {data_path.name}. Regenerate it with `{regen}`")
    return manifest


def load(name: str, scale: str, key: str, root: Path | None = None,
         regen: str = "the experiment runner") -> tuple[dict[str, np.ndarray], dict]:
    """Load a verified result: (arrays, manifest). Never unpickles (``allow_pickle=False``)."""
    manifest = check(name, scale, key, root, regen)
    data_path, _ = paths(name, scale, root)
    with np.load(data_path, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}, manifest
