#!/usr/bin/env bash
# One session of the GPU relay (issues 61, 75), from the repository's root on a bare machine (ncbook not installed):
#
#   OUT=<folder> BUDGET_MIN=8 bash scripts/gpu_session.sh
#
# with the last session's $OUT carried in as .gpu-state/ (absent the first time). It writes the next state to $OUT
# (ncbook/relay.py: results.tar.gz, checkpoints.tar.gz, relay.json, bench.json, log.txt), valid at every instant:
# the carried state goes into $OUT first, every change lands there as it happens, and SIGINT or SIGTERM stop the
# running run at a step boundary with a checkpoint; at home, `python -m ncbook import $OUT/results.tar.gz` brings the
# results in, and $OUT is carried as .gpu-state next time.
# One deadline: BUDGET_MIN minutes from this script's start cover the wheels, the benchmark, the runs and the
# packing (keep it 2 minutes under the command's limit: 8 for the device tool's 10).
# 1. the wheels in .whl/ (carried; `pip download --no-deps --only-binary=:all: -d .whl mlxtend`) go into .whl/site,
#    put on PYTHONPATH; one line says what could not be installed, and the session goes on;
# 2. python3 -m ncbook relay --benchmark: benchmarks/bench_gpu.py once per device kind (its figures kept in
#    bench.json, one slot per kind), then a carried checkpoint first, then what fits the time left.
# Settings: PYTHON (default python3), SCALE (gpu), PLAN (a JSON list of units; default every experiment of SCALE),
# DEVICE (cuda if there is one, else cpu), STATE (.gpu-state).
set -uo pipefail
started=$(date +%s)
py=${PYTHON:-python3}
out=${OUT:-gpu-session}
state=${STATE:-.gpu-state}
mkdir -p "$out"
shopt -s nullglob
wheels=(.whl/*.whl)
if ((${#wheels[@]})); then
    if $py -m pip install --quiet --no-index --no-deps --target .whl/site "${wheels[@]}" >/dev/null 2>&1; then
        export PYTHONPATH=$PWD/.whl/site${PYTHONPATH:+:$PYTHONPATH}
        echo "gpu_session: the carried wheels installed: ${wheels[*]}" | tee -a "$out/log.txt"
    else
        echo "gpu_session: the carried wheels did not install (${wheels[*]}); going on without them" \
            | tee -a "$out/log.txt"
    fi
fi
device=${DEVICE:-$($py -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")' 2>/dev/null || echo cpu)}
args=(--out "$out" --scale "${SCALE:-gpu}" --device "$device" --budget-min "${BUDGET_MIN:-8}" --started "$started"
      --benchmark)
[[ -d $state ]] && args+=(--state "$state")
[[ -n ${PLAN:-} ]] && args+=(--plan "$PLAN")
exec $py -m ncbook relay "${args[@]}"
