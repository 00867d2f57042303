#!/usr/bin/env python3
"""Whole `rocmrevive install` from a warm cache on a realistic tree, against the reference
pipeline a user types by hand, in one run.

Tree: AMD's layout (opt/rocm-6.4.3/lib/rocblas/library) filled with Debian's real rocBLAS 4.4.1
files minus gfx906 (hard links), on the dual-MI50 fixture machine: the tests' machine
(tests/machines/build.py, build_amd_layout_from_debian). Source: Debian's real
librocblas4 6.4.4-4 (280 MB), already in the cache.

    python bench/bench_install.py [--rounds 3]

Reference: `dpkg-deb --fsys-tarfile X | tar -x --wildcards '*gfx906*'` into a temp folder, then
`cp` of the 140 files into the tree: what the forum recipe does, with no check at all.
rocmrevive does the same work plus: detection, verify before (7,761-solution cross-reference),
extraction, staged verification, the journaled apply, verify after.

Rounds alternate which side runs first, each on fresh trees, so a busy machine hurts both alike;
each run is timed as wall-clock and as CPU time (user + system of it and every process it
started, from getrusage: steadier on a shared machine). The ratios are medians of the rounds.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.conftest import TRIPLET, _ensure_debian  # noqa: E402
from tests.machines.build import build_amd_layout_from_debian  # noqa: E402


def timed(cmd, **kw) -> tuple[float, float]:
    """(wall seconds, CPU seconds of ``cmd`` and every process it waited for)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, **kw)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def reference(deb: Path, tree: Path, x: Path) -> tuple[float, float]:
    """dpkg-deb | tar -x '*gfx906*' into ``x``, then cp of the files into the tree: (wall, CPU)."""
    x.mkdir()
    w1, c1 = timed(f"dpkg-deb --fsys-tarfile '{deb}' | tar -x -C '{x}' --wildcards '*gfx906*'", shell=True)
    files = list((x / TRIPLET / "rocblas/4.4.1/library").iterdir())
    w2, c2 = timed(["cp", *map(str, files), str(tree / "opt/rocm-6.4.3/lib/rocblas/library")])
    return w1 + w2, c1 + c2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    debs, dirs = _ensure_debian()
    deb = debs["librocblas4_6.4.4-4_amd64"]
    pkg = dirs["librocblas4_6.4.4-4_amd64"]
    load0 = os.getloadavg()[0]
    runs: dict[str, list[tuple[float, float]]] = {"cold": [], "members": [], "ref": []}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        rr = [sys.executable, "-m", "rocmrevive.cli.main"]

        def install(root: Path) -> tuple[float, float]:
            return timed(rr + ["--root", str(root), "install", "--yes", "--cache", str(cache), "--from", str(deb)])

        # warm the cache once (and the page cache)
        install(build_amd_layout_from_debian(tmp / "warm/m", pkg))
        for i in range(args.rounds):
            trees = [build_amd_layout_from_debian(tmp / f"r{i}-{side}/m", pkg) for side in ("cold", "members", "ref")]

            def ours() -> None:
                shutil.rmtree(cache / "extracted")          # only the package cached: extract again
                runs["cold"].append(install(trees[0]))
                runs["members"].append(install(trees[1]))   # the package and its extracted members cached

            def ref() -> None:
                runs["ref"].append(reference(deb, trees[2], tmp / f"x{i}"))
            for step in ((ours, ref) if i % 2 == 0 else (ref, ours)):
                step()
        t_rollback, _cpu = timed(rr + ["--root", str(trees[1]), "rollback"])

    def row(name: str, key: str) -> None:
        walls, cpus = [w for w, _c in runs[key]], [c for _w, c in runs[key]]
        print(f"{name:58s} wall {statistics.median(walls):6.2f} s  CPU {statistics.median(cpus):6.2f} s  "
              f"(walls: {', '.join(f'{w:.1f}' for w in walls)})")

    def ratio(key: str, part: int) -> float:
        return statistics.median(o[part] / r[part] for o, r in zip(runs[key], runs["ref"]))

    print(f"{args.rounds} alternating rounds, {os.cpu_count()} CPUs, load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    row("rocmrevive install, package cached (extracts, verifies)", "cold")
    row("rocmrevive install, package + extracted members cached", "members")
    row("dpkg-deb | tar -x '*gfx906*' + cp (no checks)", "ref")
    print(f"ratios (median of rounds): package cached wall {ratio('cold', 0):5.2f}x CPU {ratio('cold', 1):5.2f}x; "
          f"members cached wall {ratio('members', 0):5.2f}x CPU {ratio('members', 1):5.2f}x")
    print(f"rocmrevive rollback {t_rollback:7.2f} s")
    return 0


if __name__ == "__main__":
    from bytecode import use_bytecode

    use_bytecode()  # as an installed copy runs: from compiled modules
    sys.exit(main())
