"""The state folder of transactions: where the lock, the journals and the backups are, which
transactions are open, and their ids.

    st = StateDir(root, "/var/lib/rocmrevive")   # <state>/lock, <state>/tx/<txid>.jsonl, <state>/backups/<sha256>
    with st.lock(): ...                          # one writer at a time
    find_pending(root)                           # ["0003-20250102T101112Z"] after a kill
"""
from __future__ import annotations

import errno
import os
import pwd
import re
import stat
import time
from pathlib import Path
from typing import Literal, overload

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, check_under
from rocmrevive.hashing import hash_fd
from rocmrevive.txn.journal import TxRecord
from rocmrevive.txn.lock import TxLock, is_held

DEFAULT_STATE_DIR = "/var/lib/rocmrevive"


def resolve_inside(root, machine_path: str, *, what: str = "path") -> Path:
    """Root.resolve, refusing a symbolic link that leads outside the root (VERIFY_FAILED)."""
    try:
        return root.resolve(machine_path, strict=True, what=what)
    except ValueError as exc:
        raise RevError("VERIFY_FAILED", str(exc)) from None


class StateDir:
    """``<state>/lock``, ``<state>/tx/<txid>.jsonl``, ``<state>/backups/<sha256>`` under the root.

    The folder is opened through ``rocmrevive.fs``: from ``/`` down without following a link
    another user planted, refused when another user could write it (unless
    ``ROCMREVIVE_TRUST_SHARED=1``); the lock, journals and backups are opened relative to it,
    ``O_NOFOLLOW``, never a FIFO or device."""

    def __init__(self, root, state_dir: str = DEFAULT_STATE_DIR):
        self.root = root
        self.machine = "/" + str(state_dir).strip("/")
        if not root.is_host:   # walked from the image's root, owners checked, before a link is followed
            check_under(root.base, self.machine, what="state folder")
        self.real = resolve_inside(root, self.machine, what="state folder")
        self.lock_path = self.real / "lock"
        self.tx_dir = self.real / "tx"
        self.backup_dir = self.real / "backups"

    def mp(self, real) -> str:
        return self.root.machine_path(real)

    def lock(self) -> TxLock:
        return TxLock(self.lock_path, display=self.mp(self.lock_path))

    @overload
    def open(self, sub: str | None = None, *, create: Literal[True]) -> Dir: ...
    @overload
    def open(self, sub: str | None = None, *, create: bool = False) -> Dir | None: ...

    def open(self, sub: str | None = None, *, create: bool = False) -> Dir | None:
        """The state folder (or its ``tx``/``backups`` folder) opened safely; None when it does not
        exist and ``create`` is false."""
        try:
            d = Dir.open(self.real, create=create, what="state folder")
        except RevError as exc:
            if not create and exc.code == "USAGE":  # missing, or a file where the folder would be: no state
                return None
            raise
        if sub is None:
            return d
        with d:
            try:
                return d.sub(sub, create=create, mode=0o755)
            except FileNotFoundError:
                return None

    def probe_lock(self) -> None:
        who = is_held(self.lock_path)
        if who is not None:
            raise RevError("LOCKED", f"another rocmrevive{who} holds {self.mp(self.lock_path)}; nothing was "
                                     "changed; wait for it to finish and retry")

    def ensure(self) -> None:
        with self.open(create=True) as d:
            for sub in ("tx", "backups"):
                d.sub(sub, create=True).close()
            d.fsync()

    def load_all(self) -> list[TxRecord]:
        d = self.open("tx")
        if d is None:
            return []
        with d:
            names = [n for n in d.listdir() if n.endswith(".jsonl") and not n.startswith(".")]
        paths = [self.tx_dir / n for n in names]
        for p in paths:
            self.refuse_unreadable(p)
        return [TxRecord.load(p) for p in sorted(paths, key=lambda p: (txid_seq(p.stem), p.name))]

    def refuse_unreadable(self, journal: Path) -> None:
        """RevError("PERMISSION") when this user may not read ``journal``: root's journals are 0600,
        and a user's ``status`` must say that, not call a sound journal damaged (which it would be
        told to move aside, losing the rollback). A link or FIFO is left to the journal reader."""
        if os.geteuid() == 0 or os.access(journal, os.R_OK, effective_ids=True, follow_symlinks=False):
            return
        try:
            user = pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            user = f"uid {os.geteuid()}"
        raise RevError("PERMISSION", f"cannot read the journal {self.mp(journal)} as user {user}: "
                                     "run with sudo for the transaction state",
                       details={"journal": self.mp(journal)})

    def next_txid(self) -> str:
        seqs = [txid_seq(n.split(".")[0]) for n in os.listdir(self.tx_dir)] if self.tx_dir.is_dir() else []
        return f"{max(seqs, default=0) + 1:04d}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"

    def backup(self, src_fd: int, sha: str, shown: str) -> str:
        """Copy the file open at ``src_fd`` (closed here; opened through its tree folder's
        descriptor) into backups/<sha> (content addressed, fsynced) unless a good copy is there
        already. Written through the backups folder's descriptor: an O_EXCL temporary renamed into
        place. ``shown``: the file's machine path, for the message when its bytes changed."""
        with self.open("backups", create=True) as bd:
            if self._good_backup(bd, sha):
                os.close(src_fd)
                return f"backups/{sha}"
            bd.rmtree(sha)  # damaged (or not a file): make it again
            bd.copy_in_closing(sha, src_fd, mode=0o600, expect_sha256=sha, changed=RevError(
                "DRIFT", f"{shown} changed while rocmrevive was backing it up; retry"))
        return f"backups/{sha}"

    def has_backup(self, sha: str) -> bool:
        """Whether backups/<sha> is a regular file with those bytes (read through the folder's descriptor)."""
        bd = self.open("backups")
        if bd is None:
            return False
        with bd:
            return self._good_backup(bd, sha)

    def open_backup(self, sha: str) -> int:
        """A read descriptor on backups/<sha> (never a link or FIFO)."""
        bd = self.open("backups")
        if bd is None:
            raise FileNotFoundError(errno.ENOENT, "no backups folder", str(self.backup_dir))
        with bd:
            return bd.open_read(sha)

    @staticmethod
    def _good_backup(bd: Dir, sha: str) -> bool:
        have = bd.lstat(sha)
        if have is None or not stat.S_ISREG(have.st_mode):
            return False
        fd = bd.open_read(sha)
        try:
            return hash_fd(fd)[0] == sha
        finally:
            os.close(fd)


def txid_seq(txid: str) -> int:
    """The sequence number a txid starts with (``0003-2025...`` → 3; 0 when none)."""
    m = re.match(r"(\d+)", txid)
    return int(m.group(1)) if m else 0


def now() -> str:
    """The time a journal record carries (UTC, seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def refuse_pending(st: StateDir) -> None:
    """RevError("INTERRUPTED") naming the newest interrupted transaction, when there is one."""
    pending = [tx for tx in st.load_all() if tx.pending]
    if pending:
        tx = pending[-1]
        refuse_damaged(st, tx)
        where = f" on {tx.tree}" if tx.tree else ""
        raise RevError("INTERRUPTED", f"transaction {tx.txid}{where} was interrupted; run `rocmrevive recover` "
                                      "to finish or undo it first", details={"pending": [t.txid for t in pending]})


def refuse_damaged(st: StateDir, tx: TxRecord) -> None:
    """RevError("INTERRUPTED") for a damaged journal: nothing is undone from it (a partial undo
    would leave a mixed tree that looks clean); say what is known and what to do."""
    if not tx.damaged:
        return
    raise RevError("INTERRUPTED", f"the journal {st.mp(tx.path)} of transaction {tx.txid} is damaged: "
                                  f"{tx.describe_damage()}; rocmrevive will not undo or complete it: check the "
                                  f"files by hand (backups in {st.mp(st.backup_dir)}), then move the journal "
                                  f"out of {st.mp(st.tx_dir)}",
                   details={"journal": st.mp(tx.path), "problems": tx.problems[:20]})


def find_pending(root, *, state_dir: str = DEFAULT_STATE_DIR) -> list[str]:
    """Interrupted transactions (oldest first) that ``recover`` must finish or undo. Journals a
    live rocmrevive is writing right now (it holds the lock) are not interrupted: []."""
    st = StateDir(root, state_dir)
    pending = [tx.txid for tx in st.load_all() if tx.pending]
    if pending and is_held(st.lock_path) is not None:
        return []
    return pending


def require_no_pending(root, *, state_dir: str = DEFAULT_STATE_DIR) -> None:
    """RevError("INTERRUPTED") naming the transaction when one is pending; for every command but
    ``recover`` and ``status``."""
    if find_pending(root, state_dir=state_dir):
        refuse_pending(StateDir(root, state_dir))

