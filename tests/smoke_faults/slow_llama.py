#!/usr/bin/env python3
"""A llama-bench that runs slowly, for rocmrevive's smoke tests: runs the real one with its CPU
oversubscribed (the CPU is what CPU test mode computes on: ``-t`` set to SLOW times the CPUs this
process may use, so its threads wait on each other at every step, the way a card held at a
fraction of its clock delivers a fraction of its tokens/s). The results and what it prints are
the real program's. Install it as ``llama-bench`` in a folder beside a link to the real
``llama-completion``; it stays in place for the clean runs too (the build is the same).

    ROCMREVIVE_TEST_LLAMA_BENCH_REAL=/path/to/llama-bench  the real program
    ROCMREVIVE_TEST_LLAMA_SLOW=4      oversubscribe 4 times (unset or 0: run as asked)

Measured on a 2-core machine: -t 8 takes the tiny model from about 110,000 to 16,000 prompt
tokens/s and from 15,000 to 430 generated tokens/s (the best of 5 repetitions).
"""
import os
import sys


def main() -> int:
    real = os.environ["ROCMREVIVE_TEST_LLAMA_BENCH_REAL"]
    argv = sys.argv[1:]
    slow = int(os.environ.get("ROCMREVIVE_TEST_LLAMA_SLOW") or 0)
    if slow > 0 and argv != ["--list-devices"] and "-t" not in argv:
        argv += ["-t", str(slow * len(os.sched_getaffinity(0)))]
        sys.stderr.write("fault: llama-bench with -t %s\n" % argv[-1])
    os.execv(real, [real] + argv)
    return 127


if __name__ == "__main__":
    sys.exit(main())
