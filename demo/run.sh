#!/usr/bin/env bash
# The demo: rocmrevive's main path on the embedded dual-MI50 machine (demo/machines/dual-mi50,
# built from a real capture), with no network. Each step is a real command a user would type.
set -euo pipefail
cd "$(dirname "$0")/.."
RR="python3 -m rocmrevive.cli.main"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

# 1. What code objects does a real ROCm library carry? (Debian's rocBLAS, if fetched)
LIB=/var/tmp/rocmrevive-test-cache/unpacked/librocblas4_6.4.4-4_amd64/usr/lib/x86_64-linux-gnu/librocblas.so.4.4
if [ -f "$LIB" ]; then
  step $RR inspect "$LIB" | tail -n 1
fi
