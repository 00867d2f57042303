#!/usr/bin/env python3
"""Benchmark `rocmrevive inspect` on Debian's rocBLAS 4.4.1 library folder (1,349 files) against
the reference tools, in one run, and print the ratios.

    python bench/bench_inspect.py [LIBRARY_DIR] [--skip-strings]

References: one `llvm-readelf -h` process over the 970 ELF files of the folder (llvm-readelf
stops at the first file that is not an ELF, so it is given the ELF files only: the faster and
fairer reference), and `strings FILE | grep gfx` per file (what users do today).
Each timing is the best of N runs with a warm page cache; start-up is included.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time

DEFAULT = ("/var/tmp/rocmrevive-test-cache/unpacked/librocblas4_6.4.4-4_amd64/"
           "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library")


def best(cmd, runs=5, **kw) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, **kw)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    lib = args[0] if args else DEFAULT
    if not os.path.isdir(lib):
        print(f"no library folder at {lib}; run tests/fixtures/fetch_debian.sh first", file=sys.stderr)
        return 2
    files = sorted(glob.glob(os.path.join(lib, "*")))
    elves = [f for f in files if open(f, "rb").read(4) == b"\x7fELF"]
    readelf = shutil.which("llvm-readelf") or shutil.which("llvm-readelf-15")
    exe = [sys.executable, "-m", "rocmrevive.cli.main"]
    if shutil.which("rocmrevive"):
        exe = [shutil.which("rocmrevive")]
    # check the two agree before timing anything
    out = subprocess.run(exe + ["--json", "inspect", lib], capture_output=True, text=True)
    import json

    doc = json.loads(out.stdout)
    print(f"folder: {lib}: {len(files)} files, {len(elves)} ELF; inspect found "
          f"{doc['summary']['code_objects']} code objects, {doc['summary']['problems']} problems")
    t_inspect = best(exe + ["--json", "inspect", lib])
    t_deep = best(exe + ["--json", "inspect", "--deep", lib], runs=2)
    t_readelf = best([readelf, "-h"] + elves)
    print(f"rocmrevive inspect (headers)      {t_inspect:8.3f} s")
    print(f"rocmrevive inspect --deep (notes)  {t_deep:8.3f} s")
    print(f"llvm-readelf -h, one process       {t_readelf:8.3f} s")
    print(f"ratio inspect / llvm-readelf       {t_inspect / t_readelf:8.2f}x   (goal <= 5x)")
    if "--skip-strings" not in sys.argv:
        script = 'for f in "$@"; do strings "$f" | grep gfx >/dev/null; done'
        t_strings = best(["sh", "-c", script, "sh"] + files, runs=1)
        print(f"strings | grep gfx, per file       {t_strings:8.3f} s")
        print(f"speed-up over strings|grep         {t_strings / t_inspect:8.1f}x   (goal >= 40x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
