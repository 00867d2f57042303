"""The reviewed list of reasons a test may skip for. Any other skip fails the run (tests/conftest.py).

A skip checks nothing, so this list holds only what no setup can change: the GPU hardware this
machine has or lacks, and facts of the host it runs on. A missing tool is never a reason: it goes
into scripts/setup-system.sh or the ``test`` extra, and the run installs it. Add a line here only
with a reviewer, and say why in the commit.
"""
from __future__ import annotations

import re

ALLOWED = [
    # the fixture machines stand in for GPUs; the tests that need the machine to have none
    (r"this machine has an AMD GPU", "a real AMD GPU is present"),
    # tests that need real GPUs, one or two
    (r"no (AMD )?GPU\b.*", "no GPU on this machine"),
    (r"no second (AMD )?GPU\b.*", "one GPU only"),
    # the check it makes is about a host whose C library is older than sid's builds need
    (r"this host's glibc is new enough for sid's 6\.4\.3 builds", "the host's own glibc"),
]
_COMPILED = [re.compile(p) for p, _ in ALLOWED]


def allowed(reason: str) -> bool:
    """True when ``reason`` (the text after "Skipped: ") is on the list."""
    return any(rx.fullmatch(reason.strip()) for rx in _COMPILED)
