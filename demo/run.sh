#!/usr/bin/env bash
# The demo: rocmrevive's main path on the embedded dual-MI50 machine, with no network.
#
# demo/machines/dual-mi50 is a machine in a folder, built from a real capture (two MI50 32GB on
# different root complexes, ROCm#4793). The demo copies it to a temporary folder, gives its
# /opt/rocm-6.4.3 a small but real rocBLAS 4.4 library without gfx906 (compiled here with
# clang-15: demo/minirocblas.py), builds a real librocblas4 .deb with the gfx906 files and a
# manifest pinned to it, then runs what a user runs:
#   detect → doctor → install --check → install → verify → status → install again → rollback
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
# ROCMREVIVE=/path/to/rocmrevive runs an installed copy (tests/test_dist.py: a wheel in a fresh venv)
RR=${ROCMREVIVE:-python3 -m rocmrevive.cli.main}
WORK=${DEMO_DIR:-$(mktemp -d /tmp/rocmrevive-demo.XXXXXX)}
M="$WORK/machine"
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  step() { printf '\n\033[1m$ rocmrevive %s\033[0m\n' "$*"; }
else
  step() { printf '\n$ rocmrevive %s\n' "$*"; }
fi

rm -rf "$M"; mkdir -p "$WORK"; cp -a demo/machines/dual-mi50 "$M"
python3 demo/minirocblas.py tree "$M" --replace >/dev/null
python3 demo/minirocblas.py deb "$WORK/librocblas4_6.4.4-4_amd64.deb" > "$WORK/deb.json"
python3 - "$WORK" <<'PY'
import hashlib, json, sys, pathlib
work = pathlib.Path(sys.argv[1])
deb = work / "librocblas4_6.4.4-4_amd64.deb"
data = deb.read_bytes()
shipped = pathlib.Path("manifests/rocblas-4.4-gfx906.toml").read_text().split("[[sources]]")[0]
shipped = shipped.replace('id = "rocblas-4.4-gfx906"', 'id = "rocblas-4.4-gfx906-demo"')
(work / "manifests").mkdir(exist_ok=True)
(work / "manifests" / "demo.toml").write_text(shipped + f'''
# The demo's source: a small real .deb built by demo/minirocblas.py, pinned like the real one.
[[sources]]
name = "demo-librocblas4"
kind = "debian"
package = "librocblas4"
version = "6.4.4-4"
suite = "sid"
filename = "pool/main/r/rocblas/librocblas4_6.4.4-4_amd64.deb"
size = {len(data)}
sha256 = "{hashlib.sha256(data).hexdigest()}"
member_prefix = "./usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/"
rocblas_version = "4.4.1"
compatible = ">=4.4.0,<4.5"
''')
PY
SRC=(--manifests "$WORK/manifests" --from "$WORK/librocblas4_6.4.4-4_amd64.deb" --cache "$WORK/cache")
tree_hash() { (cd "$M/opt" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16); }

echo "demo machine: $M (a copy of demo/machines/dual-mi50)"
step --root M detect;                 $RR --root "$M" detect
step --root M doctor;                 $RR --root "$M" doctor --user alice || true
before=$(tree_hash)
step --root M install --check;        $RR --root "$M" install --check "${SRC[@]}" || [ $? -eq 20 ]
step --root M install --yes --diff;   $RR --root "$M" install --yes --diff "${SRC[@]}"
step --root M verify;                 $RR --root "$M" verify
step --root M status;                 $RR --root "$M" status
step --root M install --yes --json;   $RR --root "$M" install --yes --json "${SRC[@]}" | python3 -c \
  'import json,sys; d=json.load(sys.stdin); print("changed:", d["changed"], "| copies:", [c["status"] for c in d["copies"]])'
step --root M rollback;               $RR --root "$M" rollback
after=$(tree_hash)
echo
echo "tree hash before install: $before"
echo "tree hash after rollback: $after"
[ "$before" = "$after" ] && echo "rollback restored /opt byte for byte" || { echo "MISMATCH"; exit 1; }
[ -n "${DEMO_DIR:-}" ] || rm -rf "$WORK"
