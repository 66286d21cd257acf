"""The results cache: arrays as .npz (never pickled) plus a JSON manifest per result, written atomically.

Layout: ``results/<experiment>/<tag>.json``, the manifest, and the data file it lists, ``<tag>.<sha256[:12]>.npz``
(named after its content, so that a new result never overwrites the old one's data: the manifest's rename replaces
the pair at once; older results name theirs ``<tag>.npz``). The manifest holds the experiment name, the full
configuration, the key, the sha256 of the data file, and provenance (git commit, ncbook, torch and numpy versions,
device, seeds, wall time, date, command). The key is a hash of the canonical configuration and of the code that
produces the result (``ncbook.codehash``), so changing that code makes the result visibly stale.
"""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import io
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
MAX_FILE_BYTES = 1 << 30
"""A stored file larger than this is refused unread, which bounds the time of ``verify``."""


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


ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_tile")
"""The instruction-set flags that change which float kernels a CPU runs (recorded when the CPU has them)."""


def cpu_description() -> dict:
    """The CPU model, its instruction-set flags among :data:`ISA_FLAGS`, the kernel level torch dispatches to
    (e.g. AVX2, AVX512) and the BLAS torch was built with: what decides whether a rerun is bit-identical."""
    import torch

    model, flags = platform.processor() or platform.machine(), []
    try:
        info = Path("/proc/cpuinfo").read_text()
        model = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")), model)
        have = next((ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")), [])
        flags = [f for f in ISA_FLAGS if f in have]
    except OSError:                                          # not Linux
        pass
    blas = next((w.split("=", 1)[1] for w in torch.__config__.show().replace(",", " ").split()
                 if w.startswith("BLAS_INFO=")), "unknown")
    return {"cpu_model": model, "cpu_flags": flags, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "blas": blas}


def provenance(device: str, seeds: list[int], wall_time_s: float, command: str) -> dict:
    import torch

    import ncbook

    name = torch.cuda.get_device_name() if device.startswith("cuda") else (platform.processor() or platform.machine())
    return {"git_commit": git_commit(), "ncbook_version": ncbook.__version__, "torch_version": torch.__version__,
            "numpy_version": np.__version__, "python": platform.python_version(), "device": device,
            "device_name": name, "cpu_threads": torch.get_num_threads(), **cpu_description(), "seeds": list(seeds),
            "wall_time_s": round(wall_time_s, 2),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "command": command}


def paths(name: str, scale: str, root: Path | None = None) -> tuple[Path, Path]:
    """The result's folder and its manifest."""
    d = (root or RESULTS_DIR) / name
    return d, d / f"{scale}.json"


def save(name: str, scale: str, config: dict, key: str, arrays: dict[str, np.ndarray], prov: dict,
         root: Path | None = None, extra: dict | None = None) -> Path:
    """Store a result as a pair: the arrays under a name of their own content, then the manifest (with ``extra``
    fields) that lists them, replaced by one atomic rename, then the previous data file, no longer listed. A kill at
    any instant leaves either the previous pair or the new one (at worst with an orphan data file, which ``verify``
    reports). Returns the manifest path."""
    folder, manifest_path = paths(name, scale, root)
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    for k, v in arrays.items():
        if v.dtype == object:
            raise TypeError(f"array {k!r} has dtype object, which cannot be stored without pickling")
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    digest = hashlib.sha256(buf.getvalue()).hexdigest()
    data_path = folder / f"{scale}.{digest[:12]}.npz"
    atomic_write(data_path, lambda tmp: tmp.write_bytes(buf.getvalue()))
    try:
        previous = set(read_manifest(name, scale, root)["files"])
    except CacheError:
        previous = set()
    manifest = {"experiment": name, "scale": scale, "key": key, "config": config,
                "files": {data_path.name: digest}, "arrays": sorted(arrays), "provenance": prov, **(extra or {})}
    atomic_write(manifest_path, lambda tmp: tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n"))
    for old in previous - {data_path.name}:
        (folder / old).unlink(missing_ok=True)
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


def stored_file(folder: Path, name: str, regen: str) -> Path:
    """``folder/name`` if it is a plain, regular file of at most :data:`MAX_FILE_BYTES` inside ``folder`` (not a
    path elsewhere, a symbolic link or a device), else CacheError."""
    f = folder / name
    if not isinstance(name, str) or not name or name != Path(name).name or name in (".", ".."):
        raise CacheError(f"{folder}: the manifest lists {name!r}, which is not a file name inside the result's "
                         f"folder. Regenerate it with `{regen}`")
    if f.is_symlink():
        raise CacheError(f"{f} is a symbolic link; results are plain files. Regenerate it with `{regen}`")
    if not f.exists():
        raise CacheError(f"{f} is missing. Regenerate it with `{regen}`", "missing")
    if not f.is_file():
        raise CacheError(f"{f} is not a regular file. Regenerate it with `{regen}`")
    if f.stat().st_size > MAX_FILE_BYTES:
        raise CacheError(f"{f} is larger than {MAX_FILE_BYTES} bytes, more than any result. Regenerate it with "
                         f"`{regen}`")
    return f


MANIFEST_FIELDS = {"experiment": str, "key": str, "config": dict, "files": dict, "arrays": list}
"""The fields every manifest has, with their JSON types."""


def read_manifest(name: str, scale: str, root: Path | None = None, regen: str = "the experiment runner") -> dict:
    """The manifest of a stored result, checked for its fields and their types, or CacheError saying what is wrong
    and naming ``regen``, the command that makes the result (the runner's ``regen_command``)."""
    folder, manifest_path = paths(name, scale, root)
    if not manifest_path.exists() and not manifest_path.is_symlink():
        raise CacheError(f"no cached result for {name} at scale {scale!r}: {manifest_path} is missing. Make it "
                         f"with `{regen}`", "missing")
    try:
        manifest = json.loads(stored_file(folder, manifest_path.name, regen).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CacheError(f"manifest {manifest_path} is not valid JSON ({err}). Regenerate it with `{regen}`") from None
    wrong = ["the manifest is not a JSON object"] if not isinstance(manifest, dict) else [
        f"{k!r} should be a {t.__name__}" for k, t in MANIFEST_FIELDS.items() if not isinstance(manifest.get(k), t)]
    if not wrong:
        files = manifest["files"]
        if not all(isinstance(v, str) for v in files.values()) or sum(f.endswith(".npz") for f in files) != 1:
            wrong.append("'files' should map names to sha256 digests and list exactly one .npz")
    if wrong:
        raise CacheError(f"manifest {manifest_path} is malformed: {'; '.join(wrong)}. Regenerate it with `{regen}`")
    return manifest


def data_file(manifest: dict) -> str:
    """The name of the data file (.npz) a manifest lists."""
    return next(f for f in manifest["files"] if f.endswith(".npz"))


def check(name: str, scale: str, key: str, root: Path | None = None, regen: str = "the experiment runner") -> dict:
    """Verify a stored result against the expected key and its checksums; return its manifest or raise CacheError
    naming ``regen``, the command that regenerates it."""
    manifest = read_manifest(name, scale, root, regen)
    folder, manifest_path = paths(name, scale, root)
    if manifest["key"] != key:
        raise CacheError(f"cached result {manifest_path} is stale: it was made with key {manifest['key']}, the "
                         f"current configuration and code give {key}. Regenerate it with `{regen}`", "stale")
    for fname, digest in manifest["files"].items():
        if sha256_file(stored_file(folder, fname, regen)) != digest:
            raise CacheError(f"{folder / fname} is corrupted: its sha256 does not match {manifest_path}. "
                             f"Regenerate it with `{regen}`")
    return manifest


def load(name: str, scale: str, key: str, root: Path | None = None,
         regen: str = "the experiment runner") -> tuple[dict[str, np.ndarray], dict]:
    """Load a verified result: (arrays, manifest). Never unpickles (``allow_pickle=False``)."""
    manifest = check(name, scale, key, root, regen)
    folder, manifest_path = paths(name, scale, root)
    try:
        with np.load(folder / data_file(manifest), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (ValueError, OSError, EOFError) as err:     # object arrays (never unpickled), a damaged zip
        raise CacheError(f"{folder / data_file(manifest)} does not load as plain arrays ({err}). Regenerate it with "
                         f"`{regen}`") from None
    if sorted(arrays) != sorted(manifest["arrays"]):
        raise CacheError(f"{folder / data_file(manifest)} holds arrays {sorted(arrays)}, its manifest "
                         f"{manifest_path} lists {manifest['arrays']}. Regenerate it with `{regen}`")
    return arrays, manifest
