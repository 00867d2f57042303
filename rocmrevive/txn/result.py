"""What a transaction command returns (``TxResult``) and how it words a failure: the one-line
RevError for an OSError or a staged file with other bytes, and the figures in those lines.

    res = apply_plan(root, plan); res.to_json()   # {txid, changed, state, tree, actions, diff, journal, warnings}
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, overload

from rocmrevive.errors import RevError
from rocmrevive.strenum import StrEnum
from rocmrevive.txn.fsutil import HashMismatch
from rocmrevive.txn.plan import Op

Progress = Callable[[int], None]


class TxOutcome(StrEnum):
    """What a transaction command did (``TxResult.state``)."""

    COMMITTED = "committed"
    UNCHANGED = "unchanged"            # every file already as planned: no transaction
    DRY_RUN = "dry-run"
    ROLLED_BACK = "rolled_back"
    ROLLED_FORWARD = "rolled_forward"  # recovery completed an interrupted transaction
    NOTHING = "nothing"                # nothing to roll back


_APPLIED = (Op.CREATE, Op.REPLACE, Op.DELETE, Op.UNCHANGED)


@dataclass(frozen=True)
class Action:
    """What a transaction did (or would do) to one file or folder: ``op`` (create, replace,
    delete, mkdir, unchanged; restore, remove, rmdir, keep), the ``before`` and ``after`` sha256
    (None: no file), and for a file its size, the source an apply took it from, whether an undo
    forced it back over other bytes."""

    path: str                    # machine path
    op: Op
    before: str | None = None
    after: str | None = None
    size: int | None = None
    source: str | None = None    # an apply's file
    forced: bool = False         # an undo's file

    @classmethod
    def from_json(cls, doc) -> Action | None:
        """An action from its ``to_json()`` as another process wrote it (an owner-run child), each
        field with its type; None for anything else."""
        if not isinstance(doc, dict) or not isinstance(doc.get("path"), str) or doc.get("op") not in set(Op):
            return None

        def text(key: str) -> str | None:
            v = doc.get(key)
            return v if isinstance(v, str) else None
        size = doc.get("size")
        return cls(doc["path"], Op(doc["op"]), text("before"), text("after"),
                   size if isinstance(size, int) and not isinstance(size, bool) else None, text("source"),
                   doc.get("forced") is True)

    def to_json(self) -> dict:
        """The action as the JSON documents and journals show it (a folder: path, op, hashes)."""
        out = {"path": self.path, "op": self.op, "before": self.before, "after": self.after}
        if self.op in (Op.MKDIR, Op.RMDIR):
            return out
        if self.op in _APPLIED:
            return {**out, "size": self.size, "source": self.source}
        return {**out, "size": self.size, "forced": self.forced}


@dataclass
class TxResult:
    """What a transaction command did: one frozen ``Action`` per file and folder."""

    txid: str | None
    changed: bool
    actions: tuple[Action, ...]
    journal_path: str | None  # machine path
    tree: str | None = None
    state: TxOutcome | None = None
    warnings: list[str] = field(default_factory=list)
    # machine path -> stat identity of each file the apply wrote, taken after the renames (not in to_json)
    written: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def still_written(self, path: str, real: Path) -> bool:
        """Whether ``real`` (the tree file at machine path ``path``) is still the very file the apply
        wrote and hashed: a regular file with the same (st_dev, st_ino, st_size, st_mtime_ns,
        st_ctime_ns) as after the rename. The stat-identity reuse git's index and rsync's quick
        check use: a new inode (how dpkg, editors and cp --remove write), another size, or a write
        at a later clock tick (mtime, and ctime, which no one can set back) shows; False sends the
        caller to hash the file as before. docs/transactions.md, "Verify after"."""
        want = self.written.get(path)
        try:
            return want is not None and stat_identity(os.lstat(real)) == want
        except OSError:
            return False

    @property
    def diff(self) -> dict:
        files = [a for a in self.actions if a.op not in (Op.UNCHANGED, Op.KEEP, Op.MKDIR, Op.RMDIR)]
        return {"before": {a.path: a.before for a in files}, "after": {a.path: a.after for a in files}}

    def to_json(self) -> dict:
        return {"txid": self.txid, "changed": self.changed, "state": self.state, "tree": self.tree,
                "actions": [a.to_json() for a in self.actions], "diff": self.diff, "journal": self.journal_path,
                "warnings": self.warnings}


def stat_identity(st: os.stat_result) -> tuple[int, ...]:
    """(dev, ino, size, mtime_ns, ctime_ns) of a regular file; () for anything else."""
    if not stat.S_ISREG(st.st_mode):
        return ()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def few(items: list[str], n: int = 3) -> str:
    """The first ``n`` items of a list for a one-line message: ``a; b; c (and 4 more)``."""
    return "; ".join(items[:n]) + (f" (and {len(items) - n} more)" if len(items) > n else "")


def mb(n: int, other: int | None = None) -> str:
    """``n`` in MB with as many decimals as it takes to tell it from ``other`` (else bytes)."""
    for digits in (1, 2, 3):
        if other is None or f"{n / 1e6:.{digits}f}" != f"{other / 1e6:.{digits}f}":
            return f"{n / 1e6:.{digits}f} MB"
    return f"{n:,} bytes"


@overload
def as_rev_error(exc: RevError | HashMismatch | OSError, root=None) -> RevError: ...
@overload
def as_rev_error(exc: BaseException, root=None) -> RevError | None: ...


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
            return RevError("PERMISSION", f"{(exc.strerror or str(exc)).lower()}: {where}; run as root (sudo)")
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

