"""The command line a run records as its own: in a transaction's journal (the begin record's
``argv``) and in the lock files it holds (``PID command line``, for the human who has to wait).
The CLI says what it is (``cli/main.py``, from the arguments click parses); nothing below it reads
``sys.argv``, so a core called by an Ansible module, the bench or a test records what its caller
gave, never the host program's arguments (an empty list by default).

    with recorded(["rocmrevive", "install", "--yes"]):
        apply_plan(...)              # journal: "argv": ["rocmrevive", "install", "--yes"]
    holder_line()                    # "4242 rocmrevive install --yes\\n" inside, "4242 \\n" outside
"""
from __future__ import annotations

import contextlib
import os
from contextvars import ContextVar
from typing import Iterator, Sequence

_COMMAND_LINE: ContextVar[tuple[str, ...]] = ContextVar("rocmrevive_command_line", default=())


@contextlib.contextmanager
def recorded(argv: Sequence[str]) -> Iterator[None]:
    """Record ``argv`` as this run's command line while the block runs."""
    token = _COMMAND_LINE.set(tuple(str(a) for a in argv))
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def command_line() -> list[str]:
    """The command line the caller recorded (``recorded``); empty when none."""
    return list(_COMMAND_LINE.get())


def holder_line() -> bytes:
    """What a lock file says about its holder: ``PID command line`` (at most 200 characters of
    the command line), for humans only."""
    return f"{os.getpid()} {' '.join(_COMMAND_LINE.get())[:200]}\n".encode()
