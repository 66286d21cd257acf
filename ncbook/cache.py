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
import math
import os
import platform
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def default_results_dir() -> Path | None:
    """Where results live unless a call names a folder: the one ``NCBOOK_RESULTS`` names; else, when ncbook runs from
    the book's repository (the package beside its ``pyproject.toml``), that repository's ``results/``; else None: an
    installed ncbook has no results folder of its own and never reads or writes inside site-packages."""
    if os.environ.get("NCBOOK_RESULTS"):
        return Path(os.environ["NCBOOK_RESULTS"]).expanduser()
    if (ROOT / "pyproject.toml").is_file() and (ROOT / "ncbook" / "__init__.py").is_file():
        return ROOT / "results"
    return None


RESULTS_DIR = default_results_dir()


def results_dir(root: Path | None = None) -> Path:
    """``root`` if given, else :data:`RESULTS_DIR`; a one-line error saying what to set when there is neither."""
    if root is not None:
        return Path(root)
    if RESULTS_DIR is None:
        raise CacheError("ncbook has no results folder: set NCBOOK_RESULTS to a folder (e.g. the results/ of a "
                         "clone of the book, or an empty one for your own runs), or pass root=", "no-results-dir")
    return RESULTS_DIR

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


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
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
    """How a result was made: commit, versions, device, threads, seeds, wall time, date and command (the runner adds
    ``captured_steps`` where the training steps were compiled)."""
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
    d = results_dir(root) / name
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
    np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as its allow_pickle
    digest = hashlib.sha256(buf.getvalue()).hexdigest()
    data_path = folder / f"{scale}.{digest[:12]}.npz"
    atomic_write(data_path, lambda tmp: tmp.write_bytes(buf.getvalue()))
    try:
        previous = set(read_manifest(name, scale, root)["files"])
    except CacheError:
        previous = set()
    manifest = {"experiment": name, "scale": scale, "key": key, "config": config,
                "files": {data_path.name: digest}, "arrays": sorted(arrays), "provenance": prov,
                "shapes": {k: [list(v.shape), v.dtype.str] for k, v in sorted(arrays.items())}, **(extra or {})}
    atomic_write(manifest_path, lambda tmp: tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n"))
    for old in previous - {data_path.name}:
        (folder / old).unlink(missing_ok=True)
    return manifest_path


MAX_TAG_CHARS = 100
"""Overrides longer than this, written out, are named in a tag by their hash (:class:`Tag`)."""
HASHED_TAG = "sha256-"


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
        if len(sets) > MAX_TAG_CHARS:           # a file name has at most 255 bytes: name the settings by their hash
            sets = HASHED_TAG + hashlib.sha256(sets.encode()).hexdigest()[:16]
        return (self.scale + "--" + sets if sets else self.scale).replace("/", "_")

    @classmethod
    def parse(cls, text: str) -> Tag:
        """The tag a file stem names (values read as Python literals where they parse, else kept as text; a hashed
        tag's settings are in its manifest only, and parse as none)."""
        scale, _, sets = text.partition("--")
        if sets.startswith(HASHED_TAG):
            return cls(scale)
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
OPTIONAL_FIELDS = {"scale": str, "base_scale": str, "overrides": dict, "runtime": dict, "provenance": dict,
                   "shapes": dict, "rekeyed": list, "imported": list}
"""The fields a manifest may have, with their JSON types."""
MAX_MANIFEST_BYTES = 1 << 20
"""A manifest is a few kB; a larger one is refused unread."""
MAX_DEPTH = 16
"""The deepest nesting of lists and objects a manifest may have (a configuration nests 3 deep)."""
MAX_INT_DIGITS = 25
"""The most digits of an integer in a manifest (seeds are below 2**63, 19 digits)."""


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (the limit is {MAX_INT_DIGITS})")
    return int(text)


def parse_manifest(text: str) -> tuple[Any, str | None]:
    """Parsed manifest JSON and None, or (None, what is wrong) for text that is not JSON, nests deeper than
    :data:`MAX_DEPTH` (counted outside strings before parsing, so never a RecursionError) or holds integers longer
    than :data:`MAX_INT_DIGITS` digits."""
    nesting = depth = 0
    for ch in text.replace('\\\\', "").replace('\\"', ""):       # escapes cannot open or close a string
        if ch == '"':
            nesting ^= 1
        elif not nesting and ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return None, f"it nests deeper than {MAX_DEPTH} levels"
        elif not nesting and ch in "]}":
            depth -= 1
    try:
        obj = json.loads(text, parse_int=_bounded_int)
    except ValueError as err:                 # JSONDecodeError, an integer too long, a float out of range
        return None, f"it is not valid JSON ({str(err)[:120]})"
    return obj, None


def manifest_problems(manifest: Any) -> list[str]:
    """What is wrong with a parsed manifest's fields and their types (empty if nothing), each naming the field."""
    if not isinstance(manifest, dict):
        return [f"it is not a JSON object (a {type(manifest).__name__})"]
    wrong = [f"field {k!r} should be a {t.__name__} (got {type(manifest.get(k)).__name__})"
             for k, t in MANIFEST_FIELDS.items() if not isinstance(manifest.get(k), t)]
    wrong += [f"field {k!r} should be a {t.__name__} (got {type(manifest[k]).__name__})"
              for k, t in OPTIONAL_FIELDS.items() if k in manifest and not isinstance(manifest[k], t)]
    if isinstance(manifest.get("key"), str) and not 0 < len(manifest["key"]) <= 64:
        wrong.append("field 'key' should be a hash of at most 64 characters")
    files = manifest.get("files")
    if isinstance(files, dict) and (not all(isinstance(v, str) and len(v) == 64 and _hex(v) for v in files.values())
                                    or sum(f.endswith(".npz") for f in files) != 1):
        wrong.append("field 'files' should map names to sha256 digests and list exactly one .npz")
    if isinstance(manifest.get("arrays"), list) and not all(isinstance(a, str) for a in manifest["arrays"]):
        wrong.append("field 'arrays' should list the arrays' names")
    if isinstance(manifest.get("overrides"), dict) and not all(isinstance(k, str) for k in manifest["overrides"]):
        wrong.append("field 'overrides' should map setting names to values")
    if isinstance(manifest.get("shapes"), dict) and not all(
            isinstance(v, list) and len(v) == 2 and isinstance(v[0], list) and isinstance(v[1], str)
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in v[0])
            for v in manifest["shapes"].values()):
        wrong.append("field 'shapes' should map each array to [shape, dtype]")
    return wrong


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def read_manifest(name: str, scale: str, root: Path | None = None, regen: str = "the experiment runner") -> dict:
    """The manifest of a stored result, parsed defensively (:func:`parse_manifest`) and checked for its fields and
    their types (:func:`manifest_problems`), or CacheError on one line naming the result, what is wrong and
    ``regen``, the command that makes the result (the runner's ``regen_command``)."""
    folder, manifest_path = paths(name, scale, root)
    if not manifest_path.exists() and not manifest_path.is_symlink():
        raise CacheError(f"no cached result for {name} at scale {scale!r}: {manifest_path} is missing. Make it "
                         f"with `{regen}`", "missing")
    tree = results_dir(root).resolve()
    if folder.is_symlink() or folder.resolve().parent != tree:
        raise CacheError(f"{name}/{scale}: the folder {folder} is a symbolic link or leaves the results folder "
                         f"{tree}; results are plain folders inside it. Regenerate it with `{regen}`")
    path = stored_file(folder, manifest_path.name, regen)
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise CacheError(f"{name}/{scale}: manifest {manifest_path} is larger than {MAX_MANIFEST_BYTES} bytes, far "
                         f"more than a manifest. Regenerate it with `{regen}`")
    try:
        manifest, wrong = parse_manifest(path.read_bytes().decode())
    except UnicodeDecodeError:
        manifest, wrong = None, "it is not UTF-8 text"
    problems = [wrong] if wrong else manifest_problems(manifest)
    if problems:
        raise CacheError(f"{name}/{scale}: manifest {manifest_path} is malformed: {'; '.join(problems)}. "
                         f"Regenerate it with `{regen}`")
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


MAX_ARRAYS = 1000
"""The most arrays a data file may hold (a result has a few dozen)."""


def array_specs(path: Path, regen: str = "the experiment runner") -> dict[str, tuple[list[int], str]]:
    """Each array's declared (shape, dtype) in an .npz, read from the zip directory and the .npy headers alone:
    CacheError if they are not plain arrays, if a header's shape and dtype disagree with the bytes stored, or if the
    arrays would inflate to more than :data:`MAX_FILE_BYTES` (checked before anything is read or allocated)."""
    def bad(why: str) -> CacheError:
        return CacheError(f"{path} {why}. Regenerate it with `{regen}`")

    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ARRAYS:
                raise bad(f"holds {len(infos)} files, more than any result ({MAX_ARRAYS})")
            total = sum(i.file_size for i in infos)
            if total > MAX_FILE_BYTES:
                raise bad(f"inflates to {total} bytes, more than the {MAX_FILE_BYTES} a result may hold")
            specs = {}
            for info in infos:
                if not info.filename.endswith(".npy") or info.filename.count("/"):
                    raise bad(f"holds {info.filename!r}, not an array")
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                    if version not in read:
                        raise bad(f"array {info.filename!r} has .npy format version {version}")
                    shape, _, dtype = read[version](f)
                    if dtype.hasobject:
                        raise bad(f"does not load as plain arrays: {info.filename[:-4]!r} has dtype object, which "
                                  "would need unpickling")
                    payload = info.file_size - f.tell()
                if math.prod(shape) * dtype.itemsize != payload:
                    raise bad(f"array {info.filename[:-4]!r} declares shape {shape} of {dtype} "
                              f"({math.prod(shape) * dtype.itemsize} bytes) but holds {payload} bytes")
                specs[info.filename[:-4]] = ([int(n) for n in shape], dtype.str)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as err:
        raise bad(f"is not a readable .npz ({str(err)[:160]})") from None
    return specs


def load(name: str, scale: str, key: str, root: Path | None = None,
         regen: str = "the experiment runner") -> tuple[dict[str, np.ndarray], dict]:
    """Load a verified result: (arrays, manifest). Never unpickles (``allow_pickle=False``)."""
    manifest = check(name, scale, key, root, regen)
    folder, manifest_path = paths(name, scale, root)
    data = folder / data_file(manifest)
    specs = array_specs(data, regen)
    if sorted(specs) != sorted(manifest["arrays"]):
        raise CacheError(f"{data} holds arrays {sorted(specs)}, its manifest {manifest_path} lists "
                         f"{manifest['arrays']}. Regenerate it with `{regen}`")
    if "shapes" in manifest and {k: list(v) for k, v in specs.items()} != manifest["shapes"]:
        wrong = sorted(k for k in specs if manifest["shapes"].get(k) != list(specs[k]))
        raise CacheError(f"{data}: the shapes or dtypes of {wrong or sorted(manifest['shapes'])} differ from its "
                         f"manifest {manifest_path}. Regenerate it with `{regen}`")
    try:
        with np.load(data, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:     # never unpickled; a damaged zip
        raise CacheError(f"{data} does not load as plain arrays ({str(err)[:160]}). Regenerate it with "
                         f"`{regen}`") from None
    return arrays, manifest
