#!/bin/bash
# The smoke's speed, fault and soak figures on a real GPU (issue 36), in one go, on a machine whose
# /var/lib/rocmrevive/smoke records may be replaced (a lent test machine, not a user's).
#   OUT=/tmp/out bash bench/gpu_smoke.sh [PYTHON] [RUNS_A] [RUNS_B] [SOAK]
# Writes under $OUT: spread-a.json / spread-b.json (bench/smoke_spread.py: RUNS_A clean runs, then RUNS_B
# more after the faults), slow.json, slow-decode.json, after.json, soak.json, and log.txt.
set -u
PY=${1:-python3}; RUNS_A=${2:-10}; RUNS_B=${3:-10}; SOAK=${4:-60s}
OUT=${OUT:-/tmp/gpu-smoke}; mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
rr() { python3 -m rocmrevive.cli.main "$@"; }
log() { echo "== $(date -u +%T) $*" | tee -a "$OUT/log.txt"; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>&1 || true; } >>"$OUT/log.txt"
log "spread A: $RUNS_A clean runs after the first (which records)"
python3 bench/smoke_spread.py --gpu --python "$PY" --runs "$RUNS_A" --json-out "$OUT/spread-a.json" 2>&1 | tail -12 | tee -a "$OUT/log.txt"
faults="$HERE/tests/smoke_faults"
for f in slow slow-decode; do
  log "fault $f"
  PYTHONPATH="$faults:$PYTHONPATH" ROCMREVIVE_TEST_TORCH_FAULT=$f rr smoke --torch --python "$PY" --json >"$OUT/$f.json" 2>>"$OUT/log.txt"
  echo "exit $?" | tee -a "$OUT/log.txt"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=d.get('error') or {}; print(e.get('exit'), e.get('message'))" "$OUT/$f.json" | tee -a "$OUT/log.txt"
done
log "clean run after the faults (text)"
rr smoke --torch --python "$PY" --no-progress >>"$OUT/log.txt" 2>&1; echo "exit $?" | tee -a "$OUT/log.txt"
log "soak $SOAK"
rr smoke --torch --python "$PY" --soak "$SOAK" --json >"$OUT/soak.json" 2>>"$OUT/log.txt"; echo "exit $?" | tee -a "$OUT/log.txt"
log "spread B: $RUNS_B more clean runs"
python3 bench/smoke_spread.py --gpu --python "$PY" --runs "$RUNS_B" --json-out "$OUT/spread-b.json" 2>&1 | tail -12 | tee -a "$OUT/log.txt"
log done
