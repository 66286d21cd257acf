"""Results made elsewhere, brought in: ``python -m ncbook import PATH`` takes a folder or a ``.tar.gz`` of results
(as a GPU machine returns them), checks each one as ``verify`` does, in a staging folder of its own, and copies the
good ones into the results folder with their provenance; each bad one is refused on one line and leaves the results
folder as it was.

A result is ``<experiment>/<tag>.json`` (its manifest) beside the data file it lists, anywhere up to
:data:`MAX_DEPTH` folders below PATH (``results/jacot_mlp/gpu.json``, ``out/results/...``)."""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import shutil
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import cache
from .registry import EXPERIMENTS
from .runner import check_stored

MAX_DEPTH = 4
"""How deep below PATH a result's experiment folder may lie."""
MAX_MEMBERS = 10_000
"""The most members a results archive may have (a result has two files)."""


class ImportProblem(ValueError):
    """PATH itself cannot be read as results (not there, not a folder or a .tar.gz, a damaged archive)."""


@dataclass(frozen=True)
class Outcome:
    """What became of one result found under PATH: ``status`` is imported, unchanged (the same result is already
    here), kept (another current result of the same tag is here; ``replace=True`` takes the new one) or refused;
    ``detail`` says why, on one line."""

    experiment: str
    tag: str
    status: str
    detail: str = ""


def found_results(folder: Path) -> tuple[list[tuple[str, str, Path]], list[str]]:
    """(experiment, tag, manifest) of every manifest ``<experiment>/<tag>.json`` under ``folder`` whose folder is
    named after an experiment of the registry, at most :data:`MAX_DEPTH` folders down, in path order; and a line
    for each other JSON file there (left out)."""
    out, other = [], []
    for depth in range(1, MAX_DEPTH + 2):
        for manifest in sorted(folder.glob("/".join(["*"] * depth) + ".json")):
            rel = manifest.relative_to(folder)
            if manifest.parent.name in EXPERIMENTS and manifest.is_file() and not manifest.is_symlink():
                out.append((manifest.parent.name, manifest.stem, manifest))
            elif manifest.is_symlink():
                other.append(f"{rel}: a symbolic link, left out")
            else:
                other.append(f"{rel}: not in a folder named after an experiment, left out")
    return sorted(out, key=lambda r: str(r[2])), other


def inside(member: tarfile.TarInfo, into: Path) -> Path:
    """Where a plain file or folder of an archive lands under ``into``, as tarfile's ``data`` filter places it (leading
    slashes dropped); ImportProblem, naming the member, when that is outside ``into`` (``..``, an absolute path, a
    symbolic link already there on the way)."""
    name = member.name.lstrip("/" + os.sep)
    root = os.path.realpath(into)
    target = os.path.realpath(os.path.join(root, name))
    if os.path.isabs(name) or os.path.commonpath([root, target]) != root:
        raise ImportProblem(f"{member.name!r} would land outside the folder it is unpacked into")
    return Path(target)


def extract(tar: tarfile.TarFile, into: Path, members: list[tarfile.TarInfo]) -> None:
    """Extract ``members`` (plain files and folders) under ``into``: each checked by :func:`inside` first, then by
    tarfile's ``data`` filter (Python 3.11.4 and later); on an older Python, where there is none, each is written by
    hand as that filter writes it (no owner; the owner may read and write, only the owner may write, no special
    bits, executable by others only where it is by the owner), so that every Python refuses the same members."""
    for member in members:
        if not (member.isfile() or member.isdir()):
            raise ImportProblem(f"{member.name!r} is not a plain file or folder")
        inside(member, into)
    if hasattr(tarfile, "data_filter"):
        tar.extractall(into, members=members, filter="data")
        return
    for member in members:
        target = inside(member, into)
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        source = tar.extractfile(member)
        assert source is not None                        # a plain file always has its bytes
        with source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)
        target.chmod((member.mode | 0o600) & (0o755 if member.mode & 0o100 else 0o644))


def unpack(archive: Path, into: Path) -> list[str]:
    """Extract a ``.tar.gz`` of results into ``into``: plain files and folders only, inside ``into`` (:func:`extract`,
    the same on every Python), bounded in members and bytes. Returns one line per member left out (a link, a
    device)."""
    skipped: list[str] = []
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = []
            for i, member in enumerate(tar):
                if i >= MAX_MEMBERS:
                    raise ImportProblem(f"{archive} has more than {MAX_MEMBERS} members, far more than results")
                if member.isfile() or member.isdir():
                    if member.isfile() and member.size > cache.MAX_FILE_BYTES:
                        skipped.append(f"{member.name}: larger than {cache.MAX_FILE_BYTES} bytes, left out")
                        continue
                    members.append(member)
                else:
                    skipped.append(f"{member.name}: not a plain file (a link or a device), left out")
            try:
                extract(tar, into, members)
            except ImportProblem as err:
                raise ImportProblem(f"{archive} is not a readable .tar.gz of results ({err})") from None
    except (tarfile.TarError, OSError, EOFError) as err:
        raise ImportProblem(f"{archive} is not a readable .tar.gz of results ({str(err)[:160]})") from None
    return skipped


def _tar(path: Path) -> bool:
    """Is ``path`` a tar archive (compressed or not)? A damaged one is ImportProblem."""
    try:
        return tarfile.is_tarfile(path)
    except (tarfile.TarError, OSError, EOFError) as err:
        raise ImportProblem(f"{path} is not a readable .tar.gz of results ({str(err)[:160]})") from None


def stage(name: str, tag: str, manifest_path: Path, staging: Path) -> Path:
    """A results folder of its own holding this one result: its manifest and the files it lists (each a plain file
    beside it, :func:`cache.stored_file`), so that it is checked exactly as ``verify`` checks the results folder."""
    folder = staging / name
    folder.mkdir(parents=True)
    text = manifest_path.read_bytes()
    (folder / f"{tag}.json").write_bytes(text)
    try:
        files = json.loads(text).get("files", {})
    except (ValueError, AttributeError):
        files = {}                            # malformed: check_stored says what is wrong
    for fname in files if isinstance(files, dict) else []:
        if isinstance(fname, str) and fname == Path(fname).name and fname not in (".", ".."):
            src = manifest_path.parent / fname
            if src.is_file() and not src.is_symlink() and src.stat().st_size <= cache.MAX_FILE_BYTES:
                shutil.copyfile(src, folder / fname)
    return staging


def bring_in(name: str, tag: str, staging: Path, manifest: dict, source: str, root: Path | None) -> None:
    """Copy a checked result from ``staging`` into the results folder, as :func:`cache.save` writes one: the data
    file (named after its content), then the manifest by one atomic rename, with an ``imported`` record; then the
    data file of the result it replaces."""
    folder, manifest_path = cache.paths(name, tag, root)
    try:
        previous = set(cache.read_manifest(name, tag, root)["files"])
    except cache.CacheError:
        previous = set()
    for fname in manifest["files"]:
        data = (staging / name / fname).read_bytes()
        cache.atomic_write(folder / fname, functools.partial(Path.write_bytes, data=data))
    record = {"from": source, "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
              "git_commit": cache.git_commit()}
    out = {**manifest, "imported": [*manifest.get("imported", []), record]}
    cache.atomic_write(manifest_path, lambda tmp: tmp.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n"))
    for old in previous - set(manifest["files"]):
        (folder / old).unlink(missing_ok=True)


def import_one(name: str, tag: str, manifest_path: Path, source: str, root: Path | None, replace: bool) -> Outcome:
    """Check one result found under PATH in a staging folder, then bring it in, keep what is here, or refuse it."""
    with tempfile.TemporaryDirectory(prefix="ncbook-import-") as tmp:
        staging = stage(name, tag, manifest_path, Path(tmp))
        try:
            manifest = check_stored(name, tag, staging)
        except cache.CacheError as err:
            why = str(err).replace(str(staging / name), str(manifest_path.parent)).split(". Regenerate it with")[0]
            return Outcome(name, tag, "refused", why)
        try:
            here = check_stored(name, tag, root)
        except cache.CacheError:
            here = None
        if here is not None and here["files"] == manifest["files"]:
            return Outcome(name, tag, "unchanged", "the same data is already here")
        if here is not None and not replace:
            return Outcome(name, tag, "kept", "a current result of this tag is already here (made "
                           f"{here.get('provenance', {}).get('date', '?')}); add --replace to take the imported one")
        bring_in(name, tag, staging, manifest, source, root)
        prov = manifest.get("provenance", {})
        return Outcome(name, tag, "imported", f"made on {prov.get('device_name', '?')} ({prov.get('device', '?')}), "
                       f"Python {prov.get('python', '?')}, torch {prov.get('torch_version', '?')}")


def import_results(path: Path, root: Path | None = None, replace: bool = False) -> tuple[list[Outcome], list[str]]:
    """Import every result under ``path`` (a folder, or a ``.tar.gz`` of one) into the results folder ``root``
    (default :func:`cache.results_dir`): each result's :class:`Outcome`, and the lines for what was left out of
    the archive. ImportProblem when ``path`` cannot be read as results at all."""
    path = Path(path)
    cache.results_dir(root)                                   # no results folder: the one-line error, first
    if not path.exists():
        raise ImportProblem(f"{path} does not exist")
    with tempfile.TemporaryDirectory(prefix="ncbook-unpack-") as tmp:
        skipped: list[str] = []
        if path.is_dir():
            folder = path
        elif path.is_file() and _tar(path):
            folder, skipped = Path(tmp), unpack(path, Path(tmp))
        else:
            raise ImportProblem(f"{path} is neither a folder nor a .tar.gz of results")
        found, other = found_results(folder)
        skipped += other
        if not found:
            raise ImportProblem(f"{path} holds no results (<experiment>/<tag>.json beside its data, at most "
                                f"{MAX_DEPTH} folders down, for an experiment of: {', '.join(EXPERIMENTS)})")
        count = Counter((name, tag) for name, tag, _ in found)
        outcomes = [Outcome(name, tag, "refused", f"{path} holds {count[name, tag]} results {name}/{tag}: which "
                            f"one is meant? ({manifest})") if count[name, tag] > 1
                    else import_one(name, tag, manifest, path.name, root, replace) for name, tag, manifest in found]
        return outcomes, skipped
