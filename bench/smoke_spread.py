#!/usr/bin/env python3
"""Run-to-run spread of the smoke's per-shape-class times, the figure SLOW_FACTOR is chosen from.

Runs `rocmrevive smoke --torch --cpu-test-mode` N times on one scratch root (the first records a
pass; each later run is compared with the pass before it, as on a user's machine) and prints,
per shape class, the ratios seen (run time / recorded time, geometric mean over the class) and
the worst; and how many runs failed (exit 12 would be a false alarm).

    python3 bench/smoke_spread.py --runs 20 --root /var/tmp/spread
    python3 bench/smoke_spread.py --runs 20 --gpu --python python3 --json-out spread.json   # a real GPU

With ``--gpu`` the smoke runs on the machine's GPUs (no ``--cpu-test-mode``) and, without ``--root``,
keeps its records where a user's would be (/var/lib/rocmrevive/smoke/perf): run it on a machine
whose records may be replaced.
With ``--llama DIR`` the runs are `smoke --llama --llama-bin DIR` instead: the class is "llama"
(its time per token, prompt and generation, against the last passes of the same build).

    python3 bench/smoke_spread.py --runs 20 --root /var/tmp/spread-llama --llama DIR   # llama.cpp's tokens/s
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--root", help="scratch root (required without --gpu)")
    ap.add_argument("--cpu-devices", default="1")
    ap.add_argument("--gpu", action="store_true", help="the real GPUs, not the CPU test mode")
    ap.add_argument("--python", default=sys.executable, help="the interpreter with torch")
    ap.add_argument("--json-out", help="write every run's exit, seconds and class ratios here")
    ap.add_argument("--llama", metavar="DIR", help="llama.cpp's folder: measure its tokens/s instead")
    a = ap.parse_args()
    if not a.gpu and not a.root:
        ap.error("--root is required in CPU test mode")
    if a.root:
        Path(a.root).mkdir(parents=True, exist_ok=True)
    runs: list[dict] = []
    ratios: dict[str, list[float]] = {}
    codes = []
    repeated = 0   # llama.cpp runs judged slow once and measured again
    part = (["--llama", "--llama-bin", a.llama] if a.llama else ["--torch", "--python", a.python])
    for i in range(a.runs + 1):
        cmd = [sys.executable, "-m", "rocmrevive.cli.main"] + (["--root", a.root] if a.root else []) + [
            "smoke", *part, "--json"]
        if not a.gpu:
            cmd += ["--cpu-test-mode"] + ([] if a.llama else ["--cpu-devices", a.cpu_devices])
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        took = time.monotonic() - t0
        doc = json.loads(r.stdout)
        codes.append(r.returncode)
        repeated += any(run.get("repeated") for run in (doc.get("llama") or {}).get("runs") or [])
        this: dict[str, float] = {}
        for j in doc.get("speed") or []:
            for cls, c in ((j.get("record") or {}).get("classes") or {}).items():
                ratios.setdefault(cls, []).append(c["ratio"])
                this[f"{j.get('device', '?')}:{cls}"] = c["ratio"]
        runs.append({"run": i, "exit": r.returncode, "seconds": round(took, 2), "ratios": this})
        print(f"run {i}: exit {r.returncode}", {c: v[-1] for c, v in ratios.items()} if i else "(records)",
              flush=True)
    print("per class: min / max ratio over", a.runs, "compared runs")
    worst = 0.0
    for cls, v in sorted(ratios.items()):
        worst = max(worst, max(v))
        print(f"  {cls:8s} {min(v):.3f} / {max(v):.3f}")
    print(f"worst class ratio {worst:.3f}; runs not exit 0: {sum(1 for c in codes if c)}"
          + (f"; llama.cpp measured again after a slow first measurement in {repeated} runs" if a.llama else ""))
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({"runs": runs, "worst": worst, "repeated": repeated, "classes": {
            c: [min(v), max(v)] for c, v in ratios.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
