#!/usr/bin/env python3
"""Benchmark `rocmrevive verify` on Debian's whole rocBLAS 4.4.1 library for gfx906: the
cross-reference of all 7,761 solutions (88 placeholders, 100 code objects, every kernel as a
.kd symbol and a metadata entry), the target and code-object-version checks, and the host
library's fat binary; then the same through the command line, start-up included.

    python bench/bench_verify.py [LIBDIR] [--runs N]

LIBDIR is the folder holding librocblas.so.4.4 and rocblas/4.4.1/library (Debian's layout).
Each figure is the best of N runs with a warm page cache. Goal (docs/architecture.md, "Decisions"; issue 6): a few
seconds for the whole verify; about a second for the cross-reference.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

DEFAULT = "/var/tmp/rocmrevive-test-cache/unpacked/librocblas4_6.4.4-4_amd64/usr/lib/x86_64-linux-gnu"
TARGET = "gfx906:sramecc+:xnack-"


def best(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("libdir", nargs="?", default=DEFAULT)
    ap.add_argument("--runs", type=int, default=3)
    opts = ap.parse_args()
    runs = opts.runs
    libdir = Path(opts.libdir)
    library = libdir / "rocblas/4.4.1/library"
    host = libdir / "librocblas.so.4.4"
    if not library.is_dir() or not host.is_file():
        print(f"no Debian rocBLAS 4.4.1 under {libdir}; run tests/fixtures/fetch_debian.sh first",
              file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from rocmrevive.codeobj.targetid import TargetId
    from rocmrevive.diagnose.verify import verify_copy
    from rocmrevive.tensile.xref import cross_reference

    dev = TargetId.parse(TARGET)
    t_xref, rep = best(lambda: cross_reference(library, dev), runs)
    if not rep.ok or rep.kernels_found != 7761:
        print(f"unexpected: ok={rep.ok} kernels_found={rep.kernels_found}", file=sys.stderr)
        return 1
    t_verify, res = best(lambda: verify_copy(library, [dev], host_library=host), runs)
    exe = [sys.executable, "-m", "rocmrevive.cli.main"]

    def cli():
        out = subprocess.run(exe + ["--json", "verify", "--tree", str(libdir), "--target", TARGET],
                             capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
        return out.returncode, json.loads(out.stdout)

    t_cli, (code, doc) = best(cli, runs)
    print(f"library: {library}")
    print(f"  {rep.placeholders} placeholders, {rep.solutions} solutions ({rep.asm_solutions} asm / "
          f"{rep.source_solutions} source), {rep.kernels_found} kernels found, "
          f"{rep.referenced}/{len(rep.on_disk)} code objects referenced")
    print(f"cross-reference (tensile.xref)             {t_xref:7.3f} s")
    print(f"all checks, one copy (diagnose.verify)     {t_verify:7.3f} s   ok={res.ok}")
    print(f"rocmrevive verify, a new process           {t_cli:7.3f} s   exit={code} ok={doc.get('ok')}")
    print(f"goal: a few seconds for verify ({'met' if t_cli <= 5 else 'NOT met'}); "
          f"about a second for the cross-reference ({'met' if t_xref <= 1.5 else 'NOT met'})")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    from bytecode import use_bytecode

    use_bytecode()  # as an installed copy runs: from compiled modules
    sys.exit(main())
