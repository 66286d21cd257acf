"""Execute every chapter under arithmetic variants that emulate other CPUs and compare its printed text with the
committed notebook: a digit that moves with the processor or the maths library fails here.

    python scripts/check_variants.py [--variant NAME ...] [--jobs 2] [book/ch05_balanced.md ...]

A variant is a set of environment variables given to the chapter's kernel (VARIANTS below). Each chapter runs in a
fresh kernel, exactly as nbval runs it (progress bars off, live sliders), and every code cell's text outputs
(stdout, stderr, text/plain, errors), sanitised with nbval's rules (scripts/nbval_sanitize.cfg), must equal the
committed ones; cells tagged nbval-ignore-output or nbval-skip are not compared, as in nbval. One line per
difference names the variant, chapter, cell and the first line that differs. Exit status 1 on any difference.

Why these variants suffice (docs/details.md, "What passes on any machine"): the chapters' numbers go through three
arithmetic libraries, and each variant changes the code path of at least one of them from what this machine picks
by itself: torch's products and factorisations (MKL: instruction set and conditional-numerical-reproducibility
mode), torch's own vectorised kernels (ATen's CPU capability: reductions, elementwise), numpy's and scipy's
products (OpenBLAS's core type) and the thread count (which splits every parallel reduction differently).
"""

from __future__ import annotations

import argparse
import configparser
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from execute_chapters import coalesce_streams  # noqa: E402  (how the committed notebooks merged their streams)

ROOT = Path(__file__).resolve().parents[1]
SANITIZE = ROOT / "scripts" / "nbval_sanitize.cfg"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

# name -> environment (None: unset). nbval's two runs give one and two threads; the variants one and four.
VARIANTS: dict[str, dict[str, str | None]] = {
    # a CPU without AVX: MKL's reproducible path (COMPATIBLE: SSE2 code, the one MKL can take on any x86 CPU; on an
    # Intel CPU SSE4.2 at most), ATen's scalar kernels (no FMA), OpenBLAS's SSE3 kernels
    "sse": {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default",
            "OPENBLAS_CORETYPE": "Prescott", **ONE_THREAD},
    # a four-core Intel CPU with AVX2 (Haswell and later): MKL's fixed AVX2 branch (MKL_CBWR=AVX2 pins it on an AMD
    # CPU too, where MKL_ENABLE_INSTRUCTIONS alone changes nothing), ATen's AVX2 kernels (on an AVX-512 machine,
    # where ATen picks AVX512 by itself), OpenBLAS's Haswell kernels, and four threads that MKL really uses
    # (MKL_DYNAMIC=FALSE: by default it uses no more threads than cores, and a machine with more cores splits its
    # reductions otherwise); passive waiting keeps four threads on two cores from spinning
    "avx2": {"MKL_ENABLE_INSTRUCTIONS": "AVX2", "MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
             "OPENBLAS_CORETYPE": "Haswell",
             "MKL_DYNAMIC": "FALSE", "OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4", "OPENBLAS_NUM_THREADS": "1",
             "OMP_WAIT_POLICY": "PASSIVE"},
}


def sanitizers() -> list[tuple[re.Pattern, str]]:
    """nbval's sanitising rules, read from the same file that nbval is given."""
    cfg = configparser.ConfigParser()
    cfg.read(SANITIZE)
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


def text_outputs(cell: nbformat.NotebookNode, rules: list[tuple[re.Pattern, str]]) -> list[str]:
    """The text nbval compares in one code cell's outputs, sanitised."""
    texts = []
    for out in coalesce_streams(cell.get("outputs", [])):
        kind = out.get("output_type")
        if kind == "stream":
            t = f"{out['name']}: " + "".join(out["text"])
        elif kind in ("execute_result", "display_data"):
            if "text/plain" not in out.get("data", {}):
                continue
            t = "text/plain: " + "".join(out["data"]["text/plain"])
        elif kind == "error":
            t = f"error: {out['ename']}: {out['evalue']}"
        else:
            continue
        for pattern, replace in rules:
            t = pattern.sub(replace, t)
        texts.append(t)
    return ["".join(texts)] if texts else []


def compared(cell: nbformat.NotebookNode) -> bool:
    tags = cell.get("metadata", {}).get("tags", [])
    return cell.cell_type == "code" and "nbval-ignore-output" not in tags and "nbval-skip" not in tags


def first_difference(a: str, b: str) -> str:
    for la, lb in zip(a.splitlines(), b.splitlines()):
        if la != lb:
            return f"committed {la.strip()!r} | here {lb.strip()!r}"
    return f"committed {len(a.splitlines())} lines | here {len(b.splitlines())} lines"


def run_chapter(ipynb: Path, variant: str) -> list[str]:
    """Execute one chapter under one variant; the differences from its committed text outputs, one line each."""
    env = dict(os.environ, TQDM_DISABLE="1", PYTHONHASHSEED="0")
    for key, value in VARIANTS[variant].items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    committed = nbformat.read(ipynb, as_version=4)
    nb = nbformat.read(ipynb, as_version=4)
    client = NotebookClient(nb, timeout=1800, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(ipynb.parent)}})
    client.execute(env=env, stderr=subprocess.DEVNULL)     # the kernel's own log; cells' stderr still comes back
    rules = sanitizers()
    diffs = []
    for i, (old, new) in enumerate(zip(committed.cells, nb.cells)):
        if compared(old):
            a, b = "".join(text_outputs(old, rules)), "".join(text_outputs(new, rules))
            if a != b:
                diffs.append(f"{variant}: {ipynb.name} cell {i}: {first_difference(a, b)}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapters (.md or .ipynb); default: every chapter")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="default: every variant")
    parser.add_argument("--jobs", type=int, default=2, help="chapters executed side by side (default 2)")
    args = parser.parse_args(argv)
    chapters = [Path(p).resolve().with_suffix(".ipynb") for p in args.chapters] or sorted(
        (ROOT / "book").glob("ch*.ipynb"))
    variants = args.variant or list(VARIANTS)
    jobs = [(ch, v) for v in variants for ch in chapters]
    t0 = time.perf_counter()

    def one(job: tuple[Path, str]) -> list[str]:
        ch, v = job
        t = time.perf_counter()
        diffs = run_chapter(ch, v)
        print(f"{v:5s} {ch.name}: {'same text' if not diffs else f'{len(diffs)} cells differ'} "
              f"({time.perf_counter() - t:.0f} s)", flush=True)
        return diffs

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        diffs = [d for ds in pool.map(one, jobs) for d in ds]
    for d in diffs:
        print(d)
    print(f"{len(jobs) - len({d.split(' cell ')[0] for d in diffs})} of {len(jobs)} chapter runs print the "
          f"committed text ({', '.join(variants)}; {time.perf_counter() - t0:.0f} s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
