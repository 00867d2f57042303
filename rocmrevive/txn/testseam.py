"""The one test seam of the transaction code: crash on purpose at a step boundary.

``ROCMREVIVE_TEST_KILL_AT=<step>:<n>`` makes the process SIGKILL itself when it reaches the n-th
boundary named ``step`` (``*`` counts every boundary). Steps, in the order an apply meets them:
``begin backup mkdir stage intent rename dirsync done commit``; a rollback/undo meets
``undo_begin undo undo_temps rmdir rolled_back``; a roll-forward meets ``forward``. Unset (always,
outside tests), ``checkpoint`` costs one dictionary lookup.

    ROCMREVIVE_TEST_KILL_AT='rename:3' python -c '...apply_plan(...)'   # dies after the 3rd rename
    ROCMREVIVE_TEST_KILL_AT='rename:2:INT,undo:1:INT' ...   # Ctrl-C, then Ctrl-C again while undoing

``ROCMREVIVE_TEST_CLOCK=<seconds since the epoch>`` freezes the clock a transaction id is made from,
so a test can start two transactions "in the same second" without sleeping or hoping.
"""
from __future__ import annotations

import os
import signal
import threading
import time

ENV = "ROCMREVIVE_TEST_KILL_AT"
CLOCK_ENV = "ROCMREVIVE_TEST_CLOCK"
_counts: dict[str, int] = {}
_mutex = threading.Lock()


def checkpoint(step: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    # several specs separated by commas; an optional third field names the signal (INT: the
    # Ctrl-C a user gives), SIGKILL otherwise
    for one in spec.split(","):
        name, _, rest = one.partition(":")
        if name not in (step, "*"):
            continue
        n, _, sig = rest.partition(":")
        with _mutex:
            key = f"{name}:{n}:{sig}"
            _counts[key] = _counts.get(key, 0) + 1
            hit = _counts[key] == int(n or 1)
        if hit:
            os.kill(os.getpid(), getattr(signal, f"SIG{sig}") if sig else signal.SIGKILL)


def clock() -> float:
    """Seconds since the epoch: the real clock, or the frozen one a test set in ``ROCMREVIVE_TEST_CLOCK``."""
    frozen = os.environ.get(CLOCK_ENV)
    return float(frozen) if frozen else time.time()
