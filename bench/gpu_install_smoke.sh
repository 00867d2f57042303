#!/bin/bash
# `rocmrevive install --smoke` for real on a GPU (issue 36): the PyTorch smoke right before the first
# change and after the install, compared product by product, on tests/test_install.py's demo machine
# (the dual-MI50 sysfs fixture, a mini rocBLAS 6.4.3 tree lacking gfx906, a real .deb source and a
# manifest) whose root is a folder; the smoke itself runs the GPU the machine has. The GPU version
# of tests/test_install_smoke.py (there on the CPU test mode):
#   1. install --check --smoke: exit 20, no smoke run;
#   2. a clean install --smoke (the pass before it records), then rollback;
#   3. install --smoke with the `slow` fault (tests/smoke_faults: every product with N >= 4096
#      computed 10 times over) set to apply only once a file the install adds exists
#      (ROCMREVIVE_TEST_FAULT_IF_EXISTS): the line must say the time went up, exit 0;
#   4. install --smoke again (nothing left to change: no smoke), then rollback;
#   5. a clean install --smoke again: the line must stay near 1; then `status`.
# The demo machine is built where clang is (the mini rocBLAS is compiled) at the same absolute path
# it has here, since the manifest and the arguments name it:
#   python3 -c "import sys; sys.path.insert(0, '.'); from pathlib import Path; \
#     from tests.test_install import demo_machine; demo_machine(Path('/tmp/gi'))"
#   tar -C / -czf DIR/gi.tgz tmp/gi
# then, on the GPU machine (PYTHON: an interpreter with PyTorch that root may run):
#   OUT=/tmp/out bash bench/gpu_install_smoke.sh DIR/gi.tgz [PYTHON]
# Writes under $OUT: check.json, clean1.json, slow.json, again.json, clean2.json, rollback*.json,
# status.txt, err.txt (the installs' stderr), log.txt (exits, lines, per-class ratios, seconds).
# EXTRA (env) adds arguments to each install (--smoke-cpu-test-mode to rehearse it on a CPU).
# Ran 2026-12-07 14:52-14:54 UTC on the lent machine, one NVIDIA H100 80GB HBM3 (driver 580.159.04,
# CUDA 13.0, torch 2.11.0+cu130, 16 CPUs), first try, 103 s in all (191 s of device time with the
# machine's start), every step as planned (figures: docs/smoke.md, "`install --smoke` on an H100").
# There the checkout is the session's, so this script and gi.tgz travelled in one carried folder
# (.gi/): `OUT=/tmp/o timeout 540 bash .gi/gpu_install_smoke.sh .gi/gi.tgz python3`, then /tmp/o was
# packed into one tar (only 8 files come back). Rehearsed on a CPU first with
# `EXTRA=--smoke-cpu-test-mode ROCMREVIVE_TEST_FAULT_MIN_SIZE=256` (56 s, the same exits).
set -u
GI=$1; PY=${2:-python3}
OUT=${OUT:-/tmp/gpu-install-smoke}; mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")/.." && pwd); cd "$HERE" || exit 1
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}" NO_COLOR=1
PY=$(command -v "$PY" || echo "$PY")
D=/tmp/gi; ROOT=$D/m
rm -rf "$D"; tar -C / -xzf "$GI" || { echo "cannot unpack $GI"; exit 1; }
ARGS=(--manifests "$D/manifests" --from "$D/librocblas4_6.4.4-4_amd64.deb" --cache "$D/cache" --yes)
ADDED=$ROOT/opt/rocm-6.4.3/lib/rocblas/library/TensileLibrary_lazy_gfx906.dat
SMOKE=(--smoke-python "$PY")
# shellcheck disable=SC2206
[ -n "${EXTRA:-}" ] && SMOKE+=($EXTRA)
log() { echo "== $(date -u +%T) $*" | tee -a "$OUT/log.txt"; }
summ() { python3 - "$1" <<'PY' | tee -a "$OUT/log.txt"
import json, sys
d = json.load(open(sys.argv[1]))
e = d.get("error") or {}
print("  exit code", e.get("code", "OK"), "|", e.get("message") or "")
print("  copies", [c.get("status") for c in d.get("copies") or []])
sm = d.get("smoke")
if sm is None:
    print("  smoke: none"); sys.exit()
print("  python", sm.get("python"), "| line:", sm.get("line"))
for w in ("before", "after"):
    r = sm.get(w)
    if r:
        t = r.get("torch") or {}
        print(f"  {w}: {r.get('code')} {r.get('seconds')} s, torch {t.get('torch')} cuda {t.get('cuda')}, "
              f"devices {[x.get('name') for x in r.get('devices') or []]}, speed_records {len(r.get('speed_records') or [])}, "
              f"message {r.get('message')}, slow {[s for j in r.get('speed') or [] for s in j.get('slow') or []]}")
for dev in (sm.get("comparison") or {}).get("devices") or []:
    print(f"  device {dev['device']} {dev.get('name')}: overall {dev['overall']:.3f}, slowest {dev['slowest']}, classes",
          {c: round(v["ratio"], 3) for c, v in sorted(dev["classes"].items())})
PY
}
step() {   # step NAME TIMEOUT [ENV=...] -- ARGS...: one install, its JSON, exit and summary
  local name=$1 lim=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  log "$name"
  local t0; t0=$(date +%s.%N)
  env "${envs[@]}" timeout "$lim" python3 -m rocmrevive.cli.main --root "$ROOT" --json "$@" \
    >"$OUT/$name.json" 2> >(tee -a "$OUT/err.txt" >&2)
  local rc=$?
  echo "  exit $rc, $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$t0" "$(date +%s.%N)") s" | tee -a "$OUT/log.txt"
  summ "$OUT/$name.json" 2>>"$OUT/log.txt" || true
}
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>&1 || true
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())" 2>&1
  echo "python $PY; $(nproc) CPUs; demo root $ROOT"; } | tee -a "$OUT/log.txt"
FAULTS="$HERE/tests/smoke_faults"
step check 60 -- install --check --smoke "${SMOKE[@]}" "${ARGS[@]}"
step clean1 240 -- install "${SMOKE[@]}" "${ARGS[@]}"
step rollback1 60 -- rollback
log "the added file after rollback: $(test -e "$ADDED" && echo present || echo absent)"
step slow 300 PYTHONPATH="$FAULTS:$PYTHONPATH" ROCMREVIVE_TEST_TORCH_FAULT=slow ROCMREVIVE_TEST_FAULT_IF_EXISTS="$ADDED" \
  -- install "${SMOKE[@]}" "${ARGS[@]}"
step again 120 PYTHONPATH="$FAULTS:$PYTHONPATH" ROCMREVIVE_TEST_TORCH_FAULT=slow ROCMREVIVE_TEST_FAULT_IF_EXISTS="$ADDED" \
  -- install "${SMOKE[@]}" "${ARGS[@]}"
step rollback2 60 -- rollback
step clean2 240 -- install "${SMOKE[@]}" "${ARGS[@]}"
log "status"
timeout 60 python3 -m rocmrevive.cli.main --root "$ROOT" status >"$OUT/status.txt" 2>&1; echo "  exit $?" | tee -a "$OUT/log.txt"
grep -i "smoke\|speed" "$OUT/status.txt" | head -8 | tee -a "$OUT/log.txt"
cp -r "$ROOT/var/lib/rocmrevive/smoke" "$OUT/records" 2>/dev/null
log "done"
