#!/usr/bin/env python3
"""Benchmark `explain` on a long log: rocmrevive's reading (every catalogue entry and rule, each searched
only in lines that hold its pattern's required literal text) against the same reading with that cheap test
off (every pattern searched in every line, as before), in one run, and print the ratio; GNU grep with the
literal keys (`grep -c -F -f KEYS`) is printed beside it as the floor of any reading of the log.

    python bench/bench_explain.py [LINES]

The log: LINES lines (default 20,000) of an Ollama-like server log, one in a hundred a real failure text
(rocBLAS's Tensile load failure, HIP's invalid device function, an amdgpu page fault, llama.cpp's
out-of-memory). The two readings are timed in turn, N rounds (interleaved, so a burst of load on the shared
machine falls on both), each figure the best of its N; both must give the same diagnoses.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rocmrevive.diagnose import catalogue, explain  # noqa: E402

FAILURES = (
    "rocBLAS error: Cannot read /opt/rocm-6.4.1/lib/rocblas/library/TensileLibrary.dat: No such file or directory "
    "for GPU arch : gfx906",
    "HIP error: invalid device function",
    "amdgpu 0000:45:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:88 vmid:8 pasid:32769)",
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 5120.00 MiB on device 0: cudaMalloc failed: out of memory",
)


def the_log(lines: int) -> str:
    out = []
    for i in range(lines):
        if i % 100 == 99:
            out.append(FAILURES[(i // 100) % len(FAILURES)])
        else:
            out.append(f'time=2025-10-02T23:39:{i % 60:02d}.093Z level=INFO source=server.go:{400 + i % 300} '
                       f'msg="request served" path=/api/generate status=200 took={i % 997}ms tokens={i % 4096}')
    return "\n".join(out) + "\n"


def use(entries, rules) -> None:
    """The entries and rules explain reads (its module globals, looked up at each call)."""
    catalogue.keyed_from_data = lambda: entries  # type: ignore[assignment]
    explain.rules_keyed = lambda: rules  # type: ignore[assignment]


def main(argv: list[str]) -> int:
    lines = int(argv[1]) if len(argv) > 1 else 20000
    text = the_log(lines)
    rounds = 3
    explain.explain_text("warm up")
    keyed_entries, keyed_rules = catalogue.keyed_from_data(), explain.rules_keyed()
    unkeyed_entries, unkeyed_rules = catalogue.answered_from_data(), explain._UNKEYED_RULES
    keys = sorted({k for _, k in keyed_entries if k} | {k for _, k in keyed_rules if k})
    best = {"keyed": 1e9, "unkeyed": 1e9, "grep": 1e9}
    answers = {}
    with tempfile.TemporaryDirectory() as tmp:
        log, kf = Path(tmp, "log"), Path(tmp, "keys")
        log.write_text(text)
        kf.write_text("\n".join(keys) + "\n")
        for _ in range(rounds):
            for name in ("keyed", "unkeyed", "grep"):
                t = time.perf_counter()
                if name == "grep":
                    subprocess.run(["grep", "-c", "-F", "-f", str(kf), str(log)], capture_output=True, check=False,
                                   env={**os.environ, "LC_ALL": "C"})
                else:
                    use(*((keyed_entries, keyed_rules) if name == "keyed" else (unkeyed_entries, unkeyed_rules)))
                    answers[name] = [(d.rule, tuple(d.lines)) for d in explain.explain_text(text)]
                best[name] = min(best[name], time.perf_counter() - t)
    assert answers["keyed"] == answers["unkeyed"], "the cheap test changed an answer"
    print(f"{lines:,} lines, {len(answers['keyed'])} diagnoses, {len(keys)} literal keys, best of {rounds}")
    for name in ("keyed", "unkeyed", "grep"):
        print(f"  {name:8s} {best[name]:7.3f} s  ({lines / best[name]:,.0f} lines/s)")
    print(f"ratio: keyed {best['keyed'] / best['unkeyed']:.2f}x the unkeyed reading; "
          f"{best['keyed'] / best['grep']:.0f}x grep -F with the keys")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
