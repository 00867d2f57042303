"""Apply time against a plain ``cp -r`` of the same bytes to the same filesystem, in one run.

140 files of random bytes, ~140 MB in all (the size of rocBLAS 4.4.1's gfx906 set), staged in
one folder; a tree with a few files of its own. Timed: ``cp -r STAGE COPY`` (one process, page
cache, no fsync) and ``apply_plan`` of a plan putting the same files into the tree (journal,
fsync of every file, folder and journal group, sha256 check of every byte), then rolled back.
Also shown: cp followed by ``sync``, the durable equivalent. Goal (docs/architecture.md, "Decisions"): apply <= 1.5x cp.
Rounds alternate cp and apply; medians are reported.

    python bench/bench_apply.py [--dir /var/tmp] [--files 140] [--mb 140] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
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
from rocmrevive.txn.fsutil import sha256_file  # noqa: E402
from rocmrevive.txn.plan import FileChange, Op, Plan  # noqa: E402
from rocmrevive.txn.undo import rollback  # noqa: E402

LIB = "/opt/rocm-6.4.3/lib/rocblas/library"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/var/tmp", help="filesystem to run on (staging, cp target and tree)")
    ap.add_argument("--files", type=int, default=140)
    ap.add_argument("--mb", type=float, default=140.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rocmrevive-bench-apply-", dir=args.dir))
    try:
        stage = work / "stage"
        stage.mkdir()
        machine = work / "machine"
        lib = machine / LIB.lstrip("/")
        lib.mkdir(parents=True)
        for i in range(20):  # the tree's own files (their mode/owner is what new files get)
            (lib / f"TensileLibrary_lazy_gfx{900 + i}.dat").write_bytes(os.urandom(4096))
        per = int(args.mb * 1e6 / args.files)
        changes = []
        for i in range(args.files):
            name = f"TensileLibrary_Type_{i:03d}_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx906.co"
            p = stage / name
            p.write_bytes(os.urandom(per + (i % 7) * 1000))
            sha, size = sha256_file(p)  # planning hashes staged files; not part of apply
            changes.append(FileChange(f"{LIB}/{name}", p, sha, size, Op.CREATE, "bench"))
        total = sum(c.size for c in changes)
        plan = Plan("/opt/rocm-6.4.3", changes, {"manifest": "bench"})
        root = Root(machine)
        os.sync()

        cps, syncs, applies, rollbacks = [], [], [], []
        for r in range(args.rounds):  # alternate, each from a settled disk
            copy = work / f"copy{r}"
            t0 = time.perf_counter()
            subprocess.run(["cp", "-r", str(stage), str(copy)], check=True)
            cps.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            os.sync()
            syncs.append(time.perf_counter() - t0)
            shutil.rmtree(copy)
            os.sync()

            t0 = time.perf_counter()
            res = apply_plan(root, plan)
            applies.append(time.perf_counter() - t0)
            assert res.changed and len(res.actions) == args.files
            t0 = time.perf_counter()
            rollback(root)
            rollbacks.append(time.perf_counter() - t0)
            os.sync()
        t_cp, t_sync = statistics.median(cps), statistics.median(syncs)
        t_apply, t_rollback = statistics.median(applies), statistics.median(rollbacks)

        fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", str(work)], capture_output=True,
                            text=True).stdout.strip() or "?"
        print(f"bench_apply: {args.files} files, {total / 1e6:.1f} MB on {args.dir} ({fs}), "
              f"{os.cpu_count()} CPUs, median of {args.rounds} alternating rounds")
        print(f"  cp -r            {t_cp:7.3f} s")
        print(f"  cp -r + sync     {t_cp + t_sync:7.3f} s")
        print(f"  apply_plan       {t_apply:7.3f} s   ({total / 1e6 / t_apply:.0f} MB/s, journal + fsync + sha256)")
        print(f"  rollback         {t_rollback:7.3f} s")
        print(f"  apply rounds     {' '.join(f'{t:.3f}' for t in applies)}; cp rounds {' '.join(f'{t:.3f}' for t in cps)}")
        print(f"  ratio apply / cp -r:        {t_apply / t_cp:.2f}x (goal <= 1.5x)")
        print(f"  ratio apply / (cp + sync):  {t_apply / (t_cp + t_sync):.2f}x")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
