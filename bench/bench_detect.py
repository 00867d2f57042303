#!/usr/bin/env python3
"""Benchmark `rocmrevive detect --json` on the 8-GPU fixture machine (tests/machines, built from
captures/gfx906_mi50x8_rccl_init_log_rocm633_rccltests163.txt) and print the figure.

    python bench/bench_detect.py [--runs N]

Each run is a fresh process (start-up included), as Ansible would call it on every host. The
goal (issue 3): well under a second. For scale, the same runs of `rocmrevive --help` and of a
bare `python -c pass` are timed too, and `detect --deep` on the same machine.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from machines.build import build  # noqa: E402


def timed(cmd: list[str], runs: int) -> tuple[float, float, str]:
    times, out = [], ""
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        times.append(time.perf_counter() - t)
        out = p.stdout
    return min(times), statistics.median(times), out


def main() -> int:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 10
    with tempfile.TemporaryDirectory() as tmp:
        root = build("mi50x8", Path(tmp) / "mi50x8")
        cli = [sys.executable, "-m", "rocmrevive.cli.main"]
        best, med, out = timed(cli + ["--json", "--root", str(root), "detect"], runs)
        doc = json.loads(out)
        assert len(doc["gpus"]) == 8 and len(doc["pairs"]) == 28, "the fixture should have 8 GPUs"
        deep_best, deep_med, _ = timed(cli + ["--json", "--root", str(root), "detect", "--deep"], runs)
        help_best, help_med, _ = timed(cli + ["--help"], runs)
        py_best, py_med, _ = timed([sys.executable, "-c", "pass"], runs)
    print(f"detect --json, 8 GPUs, 28 pairs: best {best * 1000:.0f} ms, median {med * 1000:.0f} ms ({runs} runs)")
    print(f"detect --json --deep:            best {deep_best * 1000:.0f} ms, median {deep_med * 1000:.0f} ms")
    print(f"rocmrevive --help:               best {help_best * 1000:.0f} ms, median {help_med * 1000:.0f} ms")
    print(f"python -c pass:                  best {py_best * 1000:.0f} ms, median {py_med * 1000:.0f} ms")
    print(f"goal: well under 1 s -> {'met' if med < 1.0 else 'NOT met'} ({med / 1.0:.2f}x of the budget)")
    return 0 if med < 1.0 else 1


if __name__ == "__main__":
    from bytecode import use_bytecode

    use_bytecode()  # as an installed copy runs: from compiled modules
    sys.exit(main())
