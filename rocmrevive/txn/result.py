"""What a transaction command returns (``TxResult``) and how it words a failure: the one-line
RevError for an OSError or a staged file with other bytes, and the figures in those lines.

    res = apply_plan(root, plan); res.to_json()   # {txid, changed, state, tree, actions, diff, journal, warnings}
"""
from __future__ import annotations

import contextlib
import errno
import os
from dataclasses import dataclass, field
from typing import Callable

from rocmrevive.errors import RevError
from rocmrevive.strenum import StrEnum
from rocmrevive.txn.fsutil import HashMismatch

Progress = Callable[[int], None]


class TxOutcome(StrEnum):
    """What a transaction command did (``TxResult.state``)."""

    COMMITTED = "committed"
    UNCHANGED = "unchanged"            # every file already as planned: no transaction
    DRY_RUN = "dry-run"
    ROLLED_BACK = "rolled_back"
    ROLLED_FORWARD = "rolled_forward"  # recovery completed an interrupted transaction
    NOTHING = "nothing"                # nothing to roll back


@dataclass
class TxResult:
    """What a transaction command did. ``actions``: one dict per file/folder with ``path``,
    ``op`` (create, replace, delete, mkdir, unchanged; restore, remove, rmdir, keep), ``before``
    and ``after`` sha256 (None: no file)."""

    txid: str | None
    changed: bool
    actions: list[dict]
    journal_path: str | None  # machine path
    tree: str | None = None
    state: TxOutcome | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def diff(self) -> dict:
        files = [a for a in self.actions if a["op"] not in ("unchanged", "keep", "mkdir", "rmdir")]
        return {"before": {a["path"]: a.get("before") for a in files},
                "after": {a["path"]: a.get("after") for a in files}}

    def to_json(self) -> dict:
        return {"txid": self.txid, "changed": self.changed, "state": self.state, "tree": self.tree,
                "actions": self.actions, "diff": self.diff, "journal": self.journal_path,
                "warnings": self.warnings}


def few(items: list[str], n: int = 3) -> str:
    """The first ``n`` items of a list for a one-line message: ``a; b; c (and 4 more)``."""
    return "; ".join(items[:n]) + (f" (and {len(items) - n} more)" if len(items) > n else "")


def mb(n: int, other: int | None = None) -> str:
    """``n`` in MB with as many decimals as it takes to tell it from ``other`` (else bytes)."""
    for digits in (1, 2, 3):
        if other is None or f"{n / 1e6:.{digits}f}" != f"{other / 1e6:.{digits}f}":
            return f"{n / 1e6:.{digits}f} MB"
    return f"{n:,} bytes"


def as_rev_error(exc: BaseException, root=None) -> RevError | None:
    """The RevError for an expected failure (None for a bug): OSErrors name the machine path."""
    if isinstance(exc, RevError):
        return exc
    if isinstance(exc, HashMismatch):
        return RevError("VERIFY_FAILED", f"staged file {exc.path} does not have the planned content "
                                         f"(sha256 {exc.found[:12]}…, expected {exc.expected[:12]}…)")
    if isinstance(exc, OSError):
        where = exc.filename or ""
        if where and root is not None:
            where = root.machine_path(where)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return RevError("PERMISSION", f"no space left on the device while writing {where}; free some space")
        if exc.errno in (errno.EACCES, errno.EPERM) and os.geteuid() != 0:
            return RevError("PERMISSION", f"{exc.strerror.lower()}: {where}; run as root (sudo)")
        return RevError("PERMISSION", f"{(exc.strerror or str(exc)).lower()}: {where}")
    return None


@contextlib.contextmanager
def expected_errors(root, suffix: str = ""):
    """Turn an OSError of a read-only phase into its one-line RevError."""
    try:
        yield
    except OSError as exc:
        err = as_rev_error(exc, root)
        raise RevError(err.code, err.message + suffix) from exc

