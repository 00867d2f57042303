#!/bin/bash
# llama.cpp's tokens/s records and the slow-PyTorch re-measure on a real GPU (issue 36), in one go,
# on a lent test machine (its /var/lib/rocmrevive/smoke records may be replaced):
#   OUT=/tmp/out bash bench/gpu_smoke_llama.sh LLAMA_SDIST [PYTHON] [RUNS]
# Builds llama-bench and llama-completion from the sdist (CUDA, flash-attention kernels off), then:
# RUNS+1 `smoke --llama` (the first records), one with a GPU hog beside it (another job on the card:
# a bf16 matrix-product loop in its own process), one clean after; a `smoke --torch` that records,
# and `smoke --torch` with the `slow` fault (10x on N >= 4096, tests/smoke_faults), which must exit 12
# with the second measurement (torch.measured_again) also slow.
# Ran 2026-12-07 14:16-14:21 UTC on the lent machine, one NVIDIA H100 80GB HBM3 (driver 580.159.04,
# CUDA 13.0, torch 2.11.0+cu130, 16 CPUs), first try, RUNS=8: 299 s in all, the build 196 s; every step
# as planned (figures: docs/smoke.md, "llama.cpp's tokens/s and the re-measure on an H100"). There only
# 8 files come back, so it ran as `OUT=/tmp/o timeout 515 bash bench/gpu_smoke_llama.sh SDIST python3 8`
# and then packed /tmp/o into one tar.
set -u
SDIST=$1; PY=${2:-python3}; RUNS=${3:-8}
OUT=${OUT:-/tmp/gpu-llama}; mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")/.." && pwd); cd "$HERE"
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
rr() { python3 -m rocmrevive.cli.main "$@"; }
log() { echo "== $(date -u +%T) $*" | tee -a "$OUT/log.txt"; }
B=/tmp/llama-build; rm -rf "$B"; mkdir -p "$B"
log "build"
tar -xzf "$SDIST" -C "$B" --strip-components=1 --wildcards '*/llama.cpp/*'
t0=$(date +%s)
log "$(nvcc --version | tail -1); $(cmake --version | head -1); $(nproc) CPUs"
cmake -S "$B/llama.cpp" -B "$B/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DGGML_CUDA_FA=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DLLAMA_BUILD_TOOLS=ON >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build "$B/build" -j "$(nproc)" --target llama-bench llama-completion >"$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log"; exit 1; }
log "built in $(( $(date +%s) - t0 )) s"
BIN="$B/build/bin"
summ() { python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = d.get("error") or {}
sp = [(j.get("label") or j.get("device"), {c: v.get("ratio") for c, v in ((j.get("record") or {}).get("classes") or {}).items()})
      for j in d.get("speed") or []]
runs = [(r.get("label"), r.get("prompt_best_tps"), r.get("gen_best_tps"), r.get("repeated"))   # the figures kept
        for r in (d.get("llama") or {}).get("runs") or []]
print("exit", e.get("exit", 0), "|", e.get("message") or "", "| speed", sp, "| runs (label, best prompt/gen tokens/s, measured again)", runs,
      "| measured_again", (d.get("torch") or {}).get("measured_again"))
PY
}
for i in $(seq 0 "$RUNS"); do
  rr smoke --llama --llama-bin "$BIN" --json >"$OUT/l$i.json" 2>>"$OUT/err.txt"; echo "llama run $i: exit $?" >>"$OUT/log.txt"
  summ "$OUT/l$i.json" >>"$OUT/log.txt"
done
log "llama with a GPU hog beside it"
python3 - <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 60:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
PY
HOG=$!; sleep 8
rr smoke --llama --llama-bin "$BIN" --json >"$OUT/l-hog.json" 2>>"$OUT/err.txt"; echo "exit $?" >>"$OUT/log.txt"
summ "$OUT/l-hog.json" >>"$OUT/log.txt"; kill $HOG 2>/dev/null; wait $HOG 2>/dev/null
rr smoke --llama --llama-bin "$BIN" --json >"$OUT/l-after.json" 2>>"$OUT/err.txt"; echo "after: exit $?" >>"$OUT/log.txt"
summ "$OUT/l-after.json" >>"$OUT/log.txt"
log "torch: record, then the slow fault (measured again)"
rr smoke --torch --python "$PY" --json >"$OUT/t0.json" 2>>"$OUT/err.txt"; echo "exit $?" >>"$OUT/log.txt"
PYTHONPATH="$HERE/tests/smoke_faults:$PYTHONPATH" ROCMREVIVE_TEST_TORCH_FAULT=slow \
  rr smoke --torch --python "$PY" --json >"$OUT/t-slow.json" 2>>"$OUT/err.txt"; echo "exit $?" >>"$OUT/log.txt"
summ "$OUT/t-slow.json" >>"$OUT/log.txt"
log done
cat "$OUT/log.txt"
