"""Re-key stored results after a change to how code is hashed (ncbook/codehash.py), where the change is only in the
hashing: a result whose code is provably the code of today keeps its arrays and gets the key of today.

A result is re-keyed only when all of this holds (else it is listed with what failed, to be regenerated):
1. its manifest names the clean commit C that made it (``provenance.git_commit``, not ``+dirty``);
2. C's own ``codehash``, on C's code, gives the key the manifest records (the manifest belongs to that code);
3. today's ``codehash``, on C's code, gives the same code hash as on today's code (nothing the result runs has
   changed since C, including what C's hasher could not see);
4. everything else ``python -m ncbook verify`` checks holds (checksums, configuration, arrays).
The manifest keeps its provenance and gains a ``rekeyed`` entry (old key, new key, C, today's commit, date).

    python scripts/rekey_results.py --why "what changed in the hashing"   # re-key what can be proven, list the rest
    python scripts/rekey_results.py --check    # re-prove the recorded re-keys (needs the git history)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ncbook import cache  # noqa: E402
from ncbook.runner import Run, check_stored, stored_tags  # noqa: E402
from ncbook.transfer import extract  # noqa: E402

HASHES = """import json, sys; sys.path.insert(0, sys.argv[1])
from ncbook.codehash import code_hash; from ncbook.registry import get_experiment
print(json.dumps({name: code_hash(get_experiment(name).run) for name in sys.argv[2:]}))"""


def tree_at(commit: str, into: Path, hasher: Path | None = None) -> Path:
    """The ncbook package of ``commit`` extracted under ``into`` (with ``hasher`` as its codehash.py if given)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit, "ncbook"], cwd=ROOT, capture_output=True, check=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            extract(tar, into, tar.getmembers())
    if hasher is not None:
        (into / "ncbook" / "codehash.py").write_text(hasher.read_text())
    return into


def code_hashes(package_parent: Path, names: list[str]) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-c", HASHES, str(package_parent), *names], capture_output=True,
                         text=True, cwd=package_parent)
    if out.returncode:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed")
    return json.loads(out.stdout)


def head_commit() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def dirty() -> bool:
    return bool(subprocess.run(["git", "status", "--porcelain", "ncbook"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip())


def prove(name: str, config: dict, old_key: str, made_at: str, today: Path, work: Path) -> tuple[str, str | None]:
    """(the key of ``today``'s code, None) if the code that made the result (at commit ``made_at``) is provably
    ``today``'s code (points 1-3 of the module docstring; ``today`` holds the ncbook package and its hasher), else
    (key, why not)."""
    strict_today = code_hashes(today, [name])[name]
    key = cache.result_key(config, strict_today)
    if made_at.endswith("+dirty") or len(made_at) != 40:
        return key, f"made at {made_at!r}, not a clean commit: its code cannot be read back"
    folder = work / f"{made_at}-{abs(hash(today))}"
    if not folder.exists():
        tree_at(made_at, folder / "own")
        tree_at(made_at, folder / "strict", hasher=today / "ncbook" / "codehash.py")
    try:
        own = code_hashes(folder / "own", [name])[name]
        strict = code_hashes(folder / "strict", [name])[name]
    except RuntimeError as err:
        return key, f"the code of {made_at[:12]} does not import ({err})"
    if cache.result_key(config, own) != old_key:
        return key, f"the code of {made_at[:12]} does not give the key its manifest records"
    if strict != strict_today:
        return key, f"code it runs changed since {made_at[:12]} (seen by the strict hasher): regenerate it"
    return key, None


def write(path: Path, manifest: dict) -> None:
    cache.atomic_write(path, lambda t: t.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n"))


def rekey(check_only: bool, why_text: str = "") -> int:
    if not check_only and dirty():
        raise SystemExit("ncbook/ has uncommitted changes: commit them first (a re-key names the commit it proves)")
    failed, head = 0, head_commit()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, tag in tqdm(stored_tags(), desc="results", unit="result"):
            manifest = cache.read_manifest(name, tag)
            made_at = str(manifest.get("provenance", {}).get("git_commit", "unknown"))
            if check_only:
                for rec in manifest.get("rekeyed", []):
                    at = work / f"at-{rec['rekeyed_at']}"
                    if not at.exists():
                        tree_at(rec["rekeyed_at"], at)
                    key, why = prove(name, manifest["config"], rec["from"], made_at, at, work)
                    why = why or (None if key == rec["to"] else f"the code of {rec['rekeyed_at'][:12]} gives {key}")
                    print(f"{name}/{tag}: re-key {rec['from']} -> {rec['to']}: {why or 'proven'}")
                    failed += why is not None
                continue
            run = Run.of(name, manifest.get("base_scale", tag), **manifest.get("overrides", {}))
            if manifest["key"] == run.key:
                continue
            key, why = prove(name, manifest["config"], manifest["key"], made_at, ROOT, work)
            if why or key != run.key:
                print(f"{name}/{tag}: not re-keyed: {why or 'its configuration changed: regenerate it'}")
                failed += 1
                continue
            record = {"from": manifest["key"], "to": key, "rekeyed_at": head,
                      "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                      "why": f"{why_text}; the code this result ran is, under that hash, the code of rekeyed_at "
                             "(scripts/rekey_results.py)"}
            path, old = cache.paths(name, tag)[1], manifest
            write(path, {**manifest, "key": key, "rekeyed": [*manifest.get("rekeyed", []), record]})
            try:
                check_stored(name, tag)
            except cache.CacheError as err:
                write(path, old)
                print(f"{name}/{tag}: not re-keyed: {err}")
                failed += 1
                continue
            print(f"{name}/{tag}: re-keyed {record['from']} -> {key} (made at {made_at[:12]})")
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="re-prove the re-keys the manifests record")
    parser.add_argument("--why", default="", help="what changed in ncbook/codehash.py (recorded in each re-key)")
    args = parser.parse_args()
    if not args.check and not args.why.strip():
        parser.error("--why is required: say what changed in the hashing (it is recorded in every re-key)")
    sys.exit(rekey(args.check, args.why.strip()))
