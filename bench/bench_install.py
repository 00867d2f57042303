#!/usr/bin/env python3
"""Whole `rocmrevive install` from a warm cache on a realistic tree, against the reference
pipeline a user types by hand, in one run.

Tree: AMD's layout (opt/rocm-6.4.3/lib/rocblas/library) filled with Debian's real rocBLAS 4.4.1
files minus gfx906 (hard links), on the dual-MI50 fixture machine: the tests' machine
(tests/machines/build.py, build_amd_layout_from_debian). Source: Debian's real
librocblas4 6.4.4-4 (280 MB), already in the cache.

    python bench/bench_install.py

Reference: `dpkg-deb --fsys-tarfile X | tar -x --wildcards '*gfx906*'` into a temp folder, then
`cp` of the 140 files into the tree: what the forum recipe does, with no check at all.
rocmrevive does the same work plus: detection, verify before (7,761-solution cross-reference),
extraction, staged verification, the journaled apply, verify after.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.conftest import TRIPLET, _ensure_debian  # noqa: E402
from tests.machines.build import build_amd_layout_from_debian  # noqa: E402


def main() -> int:
    debs, dirs = _ensure_debian()
    deb = debs["librocblas4_6.4.4-4_amd64"]
    pkg = dirs["librocblas4_6.4.4-4_amd64"]
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        rr = [sys.executable, "-m", "rocmrevive.cli.main"]
        # warm the cache once (and the page cache)
        warm = build_amd_layout_from_debian(tmp / "warm/m", pkg)
        subprocess.run(rr + ["--root", str(warm), "install", "--yes", "--from", str(deb), "--cache", str(cache)],
                       check=True, capture_output=True)
        root = build_amd_layout_from_debian(tmp / "t1/m", pkg)
        t = time.perf_counter()
        subprocess.run(rr + ["--root", str(root), "install", "--yes", "--cache", str(cache), "--from", str(deb)],
                       check=True, capture_output=True)
        t_install = time.perf_counter() - t
        shutil.rmtree(cache / "extracted")          # only the package cached: extract again
        root0 = build_amd_layout_from_debian(tmp / "t0/m", pkg)
        t = time.perf_counter()
        subprocess.run(rr + ["--root", str(root0), "install", "--yes", "--cache", str(cache), "--from", str(deb)],
                       check=True, capture_output=True)
        t_cold = time.perf_counter() - t
        t = time.perf_counter()
        subprocess.run(rr + ["--root", str(root), "rollback"], check=True, capture_output=True)
        t_rollback = time.perf_counter() - t

        ref = build_amd_layout_from_debian(tmp / "t2/m", pkg)
        x = tmp / "x"
        x.mkdir()
        t = time.perf_counter()
        subprocess.run(f"dpkg-deb --fsys-tarfile '{deb}' | tar -x -C '{x}' --wildcards '*gfx906*'",
                       shell=True, check=True)
        files = list((x / TRIPLET / "rocblas/4.4.1/library").iterdir())
        subprocess.run(["cp", *map(str, files), str(ref / "opt/rocm-6.4.3/lib/rocblas/library")], check=True)
        t_ref = time.perf_counter() - t
    print(f"rocmrevive install, package cached (extracts, verifies 3x, applies)      {t_cold:7.2f} s")
    print(f"rocmrevive install, package + extracted members cached                   {t_install:7.2f} s")
    print(f"dpkg-deb | tar -x '*gfx906*' + cp (no checks)                            {t_ref:7.2f} s")
    print(f"ratios: package cached {t_cold / t_ref:5.2f}x, members cached {t_install / t_ref:5.2f}x")
    print(f"rocmrevive rollback                                                       {t_rollback:7.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
