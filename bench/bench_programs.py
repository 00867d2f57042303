#!/usr/bin/env python3
"""Benchmark the user's-programs scan of `rocmrevive audit` on a machine folder holding the real
cyllama-rocm 0.7.0 wheel (llama.cpp's libggml-hip: 187 MB, 420 code objects) and the real
cupy-rocm-7-0 14.2.0 wheel, against the reference tools, in one run, and print the ratios.

    python bench/bench_programs.py

References: `llvm-readelf -S` over the same HIP files (the least any tool must read to find
their .hip_fatbin), and `strings FILE | grep gfx` per file (what users do today, and wrong: it
prints target names the file has no code for). rocmrevive's figure is the whole `audit --json`
process (start-up, sysfs, the machine's ROCm tree and every Python environment included).
Each timing is the best of N runs with a warm page cache.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CYLLAMA = ("cyllama-rocm", "0.7.0", "e6ebb996d986f1add67a29300ded7781d50456c3f5311ae648f1d72a3b144b9c")
CUPY = ("cupy-rocm-7-0", "14.2.0", "4912fcd48491adc332ebc7ed6f1d7487545ee2b9cf6fcc906b7827dbe182fe7f")


def best(cmd, runs=5) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t)
    return min(times)


def walk64(top: Path) -> int:
    """The plain reference for the scan (issue 40): walk the machine folder, read the first 64
    bytes of every regular file (no link followed). Returns the files read."""
    n = 0
    for d, _dirs, files in os.walk(top):
        for f in files:
            try:
                fd = os.open(os.path.join(d, f), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.read(fd, 64)
                    n += 1
            finally:
                os.close(fd)
    return n


def main() -> int:
    from tests.fixtures.wheels import cached_wheel, unpack_wheel
    from tests.machines.build import build

    readelf = shutil.which("llvm-readelf") or shutil.which("llvm-readelf-15")
    with tempfile.TemporaryDirectory() as tmp:
        root = build("dual-mi50", Path(tmp) / "m")
        site = root / "home/alice/venv/lib/python3.12/site-packages"
        for name, version, sha in (CYLLAMA, CUPY):
            unpack_wheel(cached_wheel(name, version, sha, python_version="3.12"), site)
        exe = [sys.executable, "-m", "rocmrevive.cli.main", "--json", "--root", str(root), "audit"]
        doc = json.loads(subprocess.run(exe, capture_output=True, text=True).stdout)
        hip = [str(root) + p["path"] for p in doc["programs"]]
        print(f"{len(doc['programs'])} HIP files with device code among {doc['program_files_read']} candidates; "
              f"{len(doc['programs_cannot_run'])} cannot run on the MI50")
        from rocmrevive.codeobj.targetid import TargetId
        from rocmrevive.diagnose.programs import find_programs
        from rocmrevive.rootfs import Root

        scans = []
        for _ in range(5):
            t = time.perf_counter()
            find_programs(Root(str(root)), [TargetId.parse("gfx906:sramecc+:xnack-")])
            scans.append(time.perf_counter() - t)
        t_scan = min(scans)
        walks = []
        for _ in range(5):
            t = time.perf_counter()
            n_walked = walk64(root)
            walks.append(time.perf_counter() - t)
        t_walk = min(walks)
        t_audit = best(exe)
        t_base = best(exe + ["--no-programs"])
        t_readelf = best([readelf, "-S"] + hip)
        script = 'for f in "$@"; do strings "$f" | grep gfx >/dev/null; done'
        t_strings = best(["sh", "-c", script, "sh"] + hip, runs=2)
    print(f"rocmrevive audit (whole process)   {t_audit:8.3f} s")
    print(f"audit --no-programs                {t_base:8.3f} s")
    print(f"llvm-readelf -S, one process       {t_readelf:8.3f} s")
    print(f"strings | grep gfx, per file       {t_strings:8.3f} s")
    print(f"ratio audit / llvm-readelf -S      {t_audit / t_readelf:8.2f}x")
    print(f"programs scan in-process           {t_scan:8.3f} s")
    print(f"ratio scan in-process / readelf -S {t_scan / t_readelf:8.2f}x")
    print(f"plain walk, 64 bytes of each file  {t_walk:8.3f} s   ({n_walked} files)")
    print(f"ratio scan in-process / plain walk {t_scan / t_walk:8.2f}x (goal <= 2x)")
    print(f"speed-up over strings|grep         {t_strings / t_audit:8.1f}x")
    return 0


if __name__ == "__main__":
    from bytecode import use_bytecode

    use_bytecode()  # as an installed copy runs: from compiled modules
    sys.exit(main())
