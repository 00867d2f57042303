"""Does an install cost more on a machine with a long history? Apply, rollback and dpkg-diversion
check times after 0, 10 and 100 prior install + rollback cycles, against the first, in one run.

The machine is bench_apply's (140 files staged for AMD's rocBLAS library folder of a tree with a
few files of its own; ``--mb`` in all, 14 MB by default so the part that could grow with the
history, reading the journals, weighs more than in a real install). One cycle is ``apply_plan``
then ``rollback``: each leaves one journal of 140 files in the state folder. At each history
size the apply is timed ``--reps`` times (each followed by its rollback, not timed) interleaved
with ``cp -r`` + ``sync`` of the same files (the reference, to see the machine's load); the
ratios are medians. The rollback that follows each timed apply is timed too, and the check
every ``install`` runs for dpkg diversions (``txn.divert.reconcile``, nothing to change: it
reads what each transaction wants and its state) ``--reps`` times after it. Goal (issue 40): the
apply after 100 cycles within 1.25x the first; the rollback and the check likewise.

    python bench/bench_history.py [--dir /var/tmp] [--files 140] [--mb 14] [--reps 5] [--profile N]
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocmrevive.rootfs import Root  # noqa: E402
from rocmrevive.txn.apply import apply_plan  # noqa: E402
from rocmrevive.txn.divert import reconcile  # noqa: E402
from rocmrevive.txn.fsutil import sha256_file  # noqa: E402
from rocmrevive.txn.plan import FileChange, Op, Plan  # noqa: E402
from rocmrevive.txn.undo import rollback  # noqa: E402

LIB = "/opt/rocm-6.4.3/lib/rocblas/library"
LEVELS = (0, 10, 100)


def build(work: Path, files: int, mb: float) -> tuple[Root, Plan, Path]:
    stage = work / "stage"
    stage.mkdir()
    lib = work / "machine" / LIB.lstrip("/")
    lib.mkdir(parents=True)
    for i in range(20):
        (lib / f"TensileLibrary_lazy_gfx{900 + i}.dat").write_bytes(os.urandom(4096))
    per = int(mb * 1e6 / files)
    changes = []
    for i in range(files):
        name = f"TensileLibrary_Type_{i:03d}_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx906.co"
        p = stage / name
        p.write_bytes(os.urandom(per + (i % 7) * 1000))
        sha, size = sha256_file(p)
        changes.append(FileChange(f"{LIB}/{name}", p, sha, size, Op.CREATE, "bench"))
    return Root(work / "machine"), Plan("/opt/rocm-6.4.3", changes, {"manifest": "bench"}), stage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--files", type=int, default=140)
    ap.add_argument("--mb", type=float, default=14.0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--profile", type=int, default=0, help="print the top N of a cProfile of the last apply")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rocmrevive-bench-history-", dir=args.dir))
    try:
        root, plan, stage = build(work, args.files, args.mb)
        os.sync()
        done = 0  # cycles so far
        rows = []
        for level in LEVELS:
            while done < level:
                apply_plan(root, plan)
                rollback(root)
                done += 1
            applies, cpus, refs, rbs, rb_cpus, checks = [], [], [], [], [], []
            for r in range(args.reps):
                copy = work / "copy"
                t0 = time.perf_counter()
                subprocess.run(["cp", "-r", str(stage), str(copy)], check=True)
                os.sync()
                refs.append(time.perf_counter() - t0)
                shutil.rmtree(copy)
                os.sync()
                t0, c0 = time.perf_counter(), time.process_time()
                res = apply_plan(root, plan)
                applies.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)  # every thread of this process: steadier under load
                assert res.changed
                t0, c0 = time.perf_counter(), time.process_time()
                rollback(root)
                rbs.append(time.perf_counter() - t0)
                rb_cpus.append(time.process_time() - c0)
                os.sync()
                t0 = time.perf_counter()
                assert reconcile(root, "/var/lib/rocmrevive") == []
                checks.append(time.perf_counter() - t0)
            done += args.reps
            rows.append((level, statistics.median(applies), statistics.median(refs), os.getloadavg()[0],
                         statistics.median(cpus), statistics.median(rbs), statistics.median(checks),
                         statistics.median(rb_cpus)))
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            apply_plan(root, plan)
            rollback(root)
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)
        print(f"bench_history: {args.files} files, {args.mb:.0f} MB, {args.reps} reps per level, "
              f"{os.cpu_count()} CPUs")
        first = rows[0]
        for level, t_apply, t_ref, load, cpu, t_rb, t_check, rb_cpu in rows:
            print(f"  after {level:3d} cycles: apply {t_apply:6.3f} s (CPU {cpu:6.3f} s)  cp+sync {t_ref:6.3f} s  "
                  f"apply/first {t_apply / first[1]:5.2f}x  CPU/first's {cpu / first[4]:5.2f}x  "
                  f"(apply/ref)/(first's) {(t_apply / t_ref) / (first[1] / first[2]):5.2f}x  load {load:.2f}")
            print(f"                     rollback {t_rb:6.3f} s (CPU {rb_cpu:6.3f} s)  rollback/first {t_rb / first[5]:5.2f}x  "
                  f"CPU/first's {rb_cpu / first[7]:5.2f}x  "
                  f"divert check {t_check * 1e3:6.2f} ms  check/first {t_check / first[6]:5.2f}x")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
