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
import shlex
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


def shell_command(args: Sequence[str | os.PathLike], root: str | os.PathLike | None = None, *,
                  sudo: bool = False, user: str | None = None) -> str:
    """The one builder of every rocmrevive command the tool prints (fix lines, ``done:`` lines,
    warnings, JSON ``fix`` fields): each word ``shlex.quote``d, so a folder named
    ``v; touch PWNED; #`` stays one word when the line is pasted into a shell; ``--root DIR``
    kept (``root``: the image's folder, None or ``/`` for this machine); ``sudo`` (or ``sudo -u
    USER`` with ``user``) in front. One line, never wrapped: the renderer prints it whole.

        shell_command(["install", "--tree", "/home/a/v; x"])       # "rocmrevive install --tree '/home/a/v; x'"
        shell_command(["recover"], "/srv/img", user="alice")       # "sudo -u alice rocmrevive --root /srv/img recover"
    """
    words = ["rocmrevive"]
    if root is not None and os.fspath(root) not in ("/", ""):
        words += ["--root", os.fspath(root)]
    words += [os.fspath(a) for a in args]
    head = ["sudo", "-u", user] if user else (["sudo"] if sudo else [])
    return " ".join(shlex.quote(w) for w in head + words)
