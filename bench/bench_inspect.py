#!/usr/bin/env python3
"""Benchmark `rocmrevive inspect` on Debian's rocBLAS 4.4.1 library folder (1,349 files) against
the reference tools, in one run, and print the ratios.

    python bench/bench_inspect.py [LIBRARY_DIR] [--before CHECKOUT] [--skip-strings] [--runs N]

Goal (issue 17): `inspect DIR` as a person runs it, the report included, within 2x of one
`llvm-readelf -h` process over the folder's 970 ELF files (llvm-readelf stops at the first file
that is not an ELF, so it gets the ELF files only: the faster and fairer reference). The report
goes to a pseudo-terminal 160 columns wide (as a person runs it; colours on) and, separately,
to a pipe. `--json` and `--deep` are timed too, and `strings FILE | grep gfx` per file
(what users do today).

Each timing is the best of N runs with a warm page cache, start-up included, as wall-clock and
as CPU time (user + system of the child, from wait4: steadier on a busy machine).
`--before CHECKOUT` also times another checkout of rocmrevive (e.g. `git archive main | tar -x`)
in the same run, so that before/after is one measurement.
"""
from __future__ import annotations

import fcntl
import glob
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
import time

DEFAULT = ("/var/tmp/rocmrevive-test-cache/unpacked/librocblas4_6.4.4-4_amd64/"
           "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best(cmd, runs=5, env=None, tty=False) -> tuple[float, float]:
    """(best wall-clock seconds, best CPU seconds) of ``cmd``, its output to a pipe, or with
    ``tty`` to a pseudo-terminal 160 columns wide (as a person runs it)."""
    walls, cpus = [], []
    # cwd "/": `python -m` puts the working folder before PYTHONPATH, which would make every
    # checkout run the code of the folder the bench was started from
    for _ in range(runs):
        t = time.perf_counter()
        if tty:
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
            p = subprocess.Popen(cmd, stdout=slave, stderr=subprocess.DEVNULL, env=env, cwd="/")
            os.close(slave)
            while True:
                try:
                    if not os.read(master, 1 << 16):
                        break
                except OSError:  # EIO: the child closed the terminal
                    break
            os.close(master)
        else:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd="/")
            for _chunk in iter(lambda: p.stdout.read(1 << 16), b""):
                pass
        _pid, status, usage = os.wait4(p.pid, 0)  # the child's own rusage, exactly
        p.returncode = os.waitstatus_to_exitcode(status)
        walls.append(time.perf_counter() - t)
        cpus.append(usage.ru_utime + usage.ru_stime)
    return min(walls), min(cpus)


def rocmrevive(checkout: str) -> tuple[list[str], dict]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}  # colours on, as people run it
    env["PYTHONPATH"] = checkout
    return [sys.executable, "-m", "rocmrevive.cli.main"], env


def main() -> int:
    argv = sys.argv[1:]
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 5
    before = argv[argv.index("--before") + 1] if "--before" in argv else None
    skip = {a for i, a in enumerate(argv) if a.startswith("--") or (i and argv[i - 1] in ("--runs", "--before"))}
    args = [a for a in argv if a not in skip]
    lib = args[0] if args else DEFAULT
    if not os.path.isdir(lib):
        print(f"no library folder at {lib}; run tests/fixtures/fetch_debian.sh first", file=sys.stderr)
        return 2
    files = sorted(glob.glob(os.path.join(lib, "*")))
    elves = []
    for f in files:
        with open(f, "rb") as fh:
            if fh.read(4) == b"\x7fELF":
                elves.append(f)
    readelf = shutil.which("llvm-readelf") or shutil.which("llvm-readelf-15")
    if readelf is None:
        print("llvm-readelf is not installed (apt-get install llvm)", file=sys.stderr)
        return 2
    exe, env = rocmrevive(REPO)
    out = subprocess.run(exe + ["--json", "inspect", lib], capture_output=True, text=True, env=env)
    doc = json.loads(out.stdout)
    print(f"folder: {lib}: {len(files)} files, {len(elves)} ELF; inspect found "
          f"{doc['summary']['code_objects']} code objects, {doc['summary']['problems']} problems")

    rows = []
    ref = best([readelf, "-h"] + elves, runs)
    rows.append(("llvm-readelf -h, one process", ref))
    checkouts = [("after", REPO)] + ([("before", before)] if before else [])
    ratios = []
    for label, checkout in checkouts:
        exe, env = rocmrevive(checkout)
        table = best(exe + ["inspect", lib], runs, env, tty=True)
        piped = best(exe + ["inspect", lib], runs, env)
        js = best(exe + ["--json", "inspect", lib], runs, env)
        rows.append((f"inspect DIR on a terminal ({label})", table))
        rows.append((f"inspect DIR > pipe ({label})", piped))
        rows.append((f"inspect --json DIR ({label})", js))
        ratios.append((label, table, js))
    exe, env = rocmrevive(REPO)
    rows.append(("inspect --deep --json DIR (after)", best(exe + ["--json", "inspect", "--deep", lib], 2, env)))
    print(f"{'':40} {'wall s':>8} {'cpu s':>8}")
    for name, (wall, cpu) in rows:
        print(f"{name:40} {wall:8.3f} {cpu:8.3f}")
    for label, table, js in ratios:
        print(f"ratio inspect DIR / llvm-readelf ({label:6})  wall {table[0] / ref[0]:5.2f}x   "
              f"cpu {table[1] / ref[1]:5.2f}x   (goal <= 2x)")
        print(f"ratio terminal report / --json ({label:6})    wall {table[0] / js[0]:5.2f}x   "
              f"cpu {table[1] / js[1]:5.2f}x   (the report's own cost)")
    if "--skip-strings" not in argv:
        script = 'for f in "$@"; do strings "$f" | grep gfx >/dev/null; done'
        t_strings = best(["sh", "-c", script, "sh"] + files, runs=1)
        print(f"strings | grep gfx, per file       {t_strings[0]:8.3f} s")
        print(f"speed-up over strings|grep         {t_strings[0] / ratios[0][1][0]:8.1f}x   (goal >= 40x)")
    return 0


if __name__ == "__main__":
    from bytecode import use_bytecode

    use_bytecode()  # as an installed copy runs: from compiled modules
    sys.exit(main())
