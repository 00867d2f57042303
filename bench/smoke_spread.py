#!/usr/bin/env python3
"""Run-to-run spread of the smoke's per-shape-class times, the figure SLOW_FACTOR is chosen from.

Runs `rocmrevive smoke --torch --cpu-test-mode` N times on one scratch root (the first records a
pass; each later run is compared with the pass before it, as on a user's machine) and prints,
per shape class, the ratios seen (run time / recorded time, geometric mean over the class) and
the worst; and how many runs failed (exit 12 would be a false alarm).

    python3 bench/smoke_spread.py --runs 20 --root /var/tmp/spread
    python3 bench/smoke_spread.py --runs 20 --root /var/tmp/spread-llama --llama DIR   # llama.cpp's tokens/s

With ``--llama DIR`` the runs are `smoke --llama --llama-bin DIR --cpu-test-mode` instead: the class
is "llama" (its time per token, prompt and generation, against the last passes of the same build).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--root", required=True)
    ap.add_argument("--cpu-devices", default="1")
    ap.add_argument("--llama", metavar="DIR", help="llama.cpp's folder: measure its tokens/s instead")
    a = ap.parse_args()
    part = (["--llama", "--llama-bin", a.llama] if a.llama else
            ["--torch", "--python", sys.executable, "--cpu-devices", a.cpu_devices])
    Path(a.root).mkdir(parents=True, exist_ok=True)
    ratios: dict[str, list[float]] = {}
    codes = []
    repeated = 0   # llama.cpp runs judged slow once and measured again
    for i in range(a.runs + 1):
        r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", a.root, "smoke", *part,
                            "--cpu-test-mode", "--json"], capture_output=True, text=True, cwd=REPO)
        doc = json.loads(r.stdout)
        codes.append(r.returncode)
        repeated += any(run.get("repeated") for run in (doc.get("llama") or {}).get("runs") or [])
        for j in doc.get("speed") or []:
            for cls, c in ((j.get("record") or {}).get("classes") or {}).items():
                ratios.setdefault(cls, []).append(c["ratio"])
        print(f"run {i}: exit {r.returncode}", {c: v[-1] for c, v in ratios.items()} if i else "(records)",
              flush=True)
    print("per class: min / max ratio over", a.runs, "compared runs")
    worst = 0.0
    for cls, v in sorted(ratios.items()):
        worst = max(worst, max(v))
        print(f"  {cls:8s} {min(v):.3f} / {max(v):.3f}")
    print(f"worst class ratio {worst:.3f}; runs not exit 0: {sum(1 for c in codes if c)}"
          + (f"; llama.cpp measured again after a slow first measurement in {repeated} runs" if a.llama else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
