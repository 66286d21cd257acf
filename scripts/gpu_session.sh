#!/usr/bin/env bash
# One GPU session in one command (issue 49), from the repository's root on a machine with a CUDA GPU:
#
#   OUT=<folder> BUDGET_MIN=3 bash scripts/gpu_session.sh
#
# 1. installs the wheels in .whl/ if there are any (a machine without network: `pip download --no-deps -d .whl
#    mlxtend filelock` beforehand, for the packages it lacks);
# 2. benchmarks/bench_gpu.py (at most 5 minutes): the steps eager and captured, the metric suite, each gpu-scale
#    experiment's predicted wall time; figures in $OUT/bench.json and $OUT/bench.txt;
# 3. python -m ncbook run --all --scale gpu: every gpu result that is not current, cheapest first, with captured steps
#    where the benchmark found them faster (bench.json's capture_pays), stopped after BUDGET_MIN minutes (the next
#    session resumes it), packed into $OUT/gpu.tar.gz for `python -m ncbook import` on the machine the book lives on.
set -euo pipefail
out=${OUT:-gpu-session}
mkdir -p "$out"
shopt -s nullglob
wheels=(.whl/*.whl)
if ((${#wheels[@]})); then
    python -m pip install --quiet --no-index --no-deps "${wheels[@]}"
fi
timeout 300 python benchmarks/bench_gpu.py --device cuda --budget-s 150 --json "$out/bench.json" \
    2>&1 | tee "$out/bench.txt" || echo "bench_gpu.py stopped early; what it measured is in $out/bench.json"
capture=$(python -c 'import json, sys; print(int(json.load(open(sys.argv[1])).get("capture_pays", False)))' \
    "$out/bench.json" 2>/dev/null || echo 0)
echo "NCBOOK_CAPTURE=$capture"
NCBOOK_CAPTURE=$capture python -m ncbook run --all --scale gpu --device cuda --budget-min "${BUDGET_MIN:-3}" \
    --archive "$out/gpu.tar.gz" 2>&1 | tee "$out/run.txt"
