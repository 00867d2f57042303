"""The state folder of transactions: where the lock, the journals and the backups are, which
transactions are open, and their ids.

    st = StateDir(root, "/var/lib/rocmrevive")   # <state>/lock, <state>/tx/<txid>.jsonl, <state>/backups/<sha256>
    with st.lock(): ...                          # one writer at a time
    find_pending(root)                           # ["0003-20250102T101112Z-9c1e04a7"] after a kill

Looking for pending transactions costs the same on a machine with a long history: a journal read
whole and found final (committed or rolled back, undamaged) is written down in
``<state>/final-journals`` with its identity, its state and the dpkg diversion it wants, and is
not read again while its identity holds (``StateDir.scan``, ``StateDir.load_pending``). A
rollback and the diversion check read only the journals they need; a journal read once is not
read again by the same ``StateDir`` while its identity holds (one read per command).
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import pwd
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, check_under, write_all
from rocmrevive.hashing import hash_fd
from rocmrevive.txn import testseam
from rocmrevive.txn.journal import TxRecord, TxState
from rocmrevive.txn.lock import TxLock, is_held

DEFAULT_STATE_DIR = "/var/lib/rocmrevive"
FINAL_INDEX = "final-journals"  # <state>/final-journals: journals read whole and found final (scan)
_INDEX_VERSION = 2  # 1 held identities only; read as absent (every journal read once, then listed anew)
_MAX_INDEX = 16 << 20  # ~150 bytes a journal
_FINAL_STATES = {TxState.COMMITTED.value: TxState.COMMITTED, TxState.ROLLED_BACK.value: TxState.ROLLED_BACK}


@dataclass(frozen=True)
class Final:
    """What ``final-journals`` says of one journal: its identity when it was read whole (device,
    inode, size, mtime, ctime), its state then (committed or rolled back) and the path whose dpkg
    diversion it wants (``meta.divert``; None for most)."""

    ident: tuple[int, ...]
    state: TxState
    divert: str | None = None

    def to_json(self) -> dict:
        return {"id": list(self.ident), "state": self.state.value, "divert": self.divert}


@dataclass(frozen=True)
class JournalEntry:
    """One journal of the state folder as ``StateDir.scan`` found it: from ``final-journals``
    (state and diversion only; ``record`` None, ``StateDir.load_entry`` reads it) or read whole."""

    name: str
    state: TxState
    divert: str | None = None
    record: TxRecord | None = None

    @property
    def txid(self) -> str:
        return self.name[:-len(".jsonl")]


def wanted_diversion(tx: TxRecord) -> str | None:
    """The path whose dpkg diversion transaction ``tx`` wants (its ``meta.divert``), or None."""
    meta = (tx.begin or {}).get("meta")
    d = meta.get("divert") if isinstance(meta, dict) else None
    if isinstance(d, dict) and d.get("wanted") and isinstance(d.get("path"), str):
        return d["path"]
    return None


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
        # name -> (identity, record) of each journal this StateDir read whole: not read again
        # while the identity holds (a rollback's look before the lock and its work under it)
        self._read: dict[str, tuple[list[int], TxRecord]] = {}

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
        """Every journal read whole, oldest first (``status``: its history is the answer)."""
        d = self.open("tx")
        if d is None:
            return []
        with d:
            return [self._load(d, name) for name in _journal_names(d)]

    def _load(self, d: Dir, name: str) -> TxRecord:
        """The journal ``name`` of the open ``tx`` folder read whole, or as this StateDir read it
        before when its identity is the same now."""
        ident = _identity(d.lstat(name))
        seen = self._read.get(name)
        if ident is not None and seen is not None and seen[0] == ident:
            return seen[1]
        path = self.tx_dir / name
        self.refuse_unreadable(path)
        tx = TxRecord.load(path)
        if ident is not None and _identity(d.lstat(name)) == ident:  # unchanged while it was read
            self._read[name] = (ident, tx)
        return tx

    def load_entry(self, entry: JournalEntry) -> TxRecord:
        """The whole journal of a ``scan`` entry (read now when the scan took it from the index)."""
        if entry.record is not None:
            return entry.record
        d = self.open("tx")
        if d is None:
            raise RevError("INTERRUPTED", f"the transaction folder {self.mp(self.tx_dir)} went away")
        with d:
            return self._load(d, entry.name)

    def scan(self, *, remember: bool = False, given: dict[str, tuple[TxState, str | None]] | None = None
             ) -> list[JournalEntry]:
        """Every journal, oldest first, at a cost that does not grow with the history: a journal
        listed in ``<state>/final-journals`` with the identity it has now (device, inode, size,
        mtime and ctime, from an ``lstat`` through the folder's descriptor) was read whole before
        and found final, committed or rolled back, undamaged; its entry carries the state and
        diversion the list recorded, and it is not read. Any write to it, a rename, a copy in its
        place changes that identity (ctime cannot be set back), so it is read again; a damaged or
        interrupted journal is never listed, so it is always read (and still refuses).

        ``given``: txid -> (state, diversion) of journals this process is writing now (an apply
        or undo about to record that end): taken as said, not read.

        ``remember`` (a caller holding the lock, the only writer of journals): write the list anew
        when it changed, through the state folder's descriptor (an atomic replace, mode 0600 like
        the journals). The list is a cache: unreadable, malformed or unwritable, every journal is
        read as before; forging it needs the state folder, which can hold any journal anyway."""
        d = self.open("tx")
        if d is None:
            return []
        given = given or {}
        out: list[JournalEntry] = []
        with d:
            names = _journal_names(d)
            known = self._read_index()
            final: dict[str, Final] = {}
            for name in names:
                txid = name[:-len(".jsonl")]
                if txid in given:
                    out.append(JournalEntry(name, *given[txid]))
                    continue
                ident = _identity(d.lstat(name))
                k = known.get(name)
                if ident is not None and k is not None and list(k.ident) == ident:
                    final[name] = k
                    out.append(JournalEntry(name, k.state, k.divert))
                    continue
                tx = self._load(d, name)
                div = wanted_diversion(tx)
                out.append(JournalEntry(name, tx.state, div, tx))
                if (ident is not None and not tx.damaged and tx.state in (TxState.COMMITTED, TxState.ROLLED_BACK)
                        and self._read.get(name, (None,))[0] == ident):  # read whole, unchanged while read
                    final[name] = Final(tuple(ident), tx.state, div)
        if remember and final != known:
            self._write_index(final)
        return out

    def load_pending(self, *, remember: bool = False) -> list[TxRecord]:
        """The pending transactions (interrupted or damaged), oldest first, as ``load_all`` finds
        them, at a cost that does not grow with the history (``scan``)."""
        return [e.record for e in self.scan(remember=remember) if e.record is not None and e.record.pending]

    def remember_final(self, tx: TxRecord) -> None:
        """Add the journal this process has just written to its end under the lock (an apply's
        commit, a rollback's rolled_back) to ``final-journals``, judged from the records it wrote
        (``tx``: ``TxRecord.from_records`` of them, strictest reading) without reading it back.
        Nothing is added unless they make a final, undamaged journal; a cache: errors are ignored."""
        if tx.pending or tx.damaged or tx.state not in (TxState.COMMITTED, TxState.ROLLED_BACK):
            return
        with contextlib.suppress(RevError, OSError):
            d = self.open("tx")
            if d is None:
                return
            with d:
                ident = _identity(d.lstat(tx.path.name))
            if ident is not None:
                known = self._read_index()
                entry = Final(tuple(ident), tx.state, wanted_diversion(tx))
                if known.get(tx.path.name) != entry:
                    self._write_index({**known, tx.path.name: entry})

    def _read_index(self) -> dict[str, Final]:
        """``final-journals``: name -> what it recorded; {} when absent, unreadable or malformed
        (an entry that is not well formed is left out: that journal is read)."""
        try:
            d = self.open()
            if d is None:
                return {}
            with d:
                if d.lstat(FINAL_INDEX) is None:
                    return {}
                doc = json.loads(d.read_bytes(FINAL_INDEX, max_size=_MAX_INDEX))
        except (RevError, OSError, ValueError):
            return {}
        final = doc.get("final") if isinstance(doc, dict) and doc.get("v") == _INDEX_VERSION else None
        if not isinstance(final, dict):
            return {}
        out: dict[str, Final] = {}
        for k, v in final.items():
            if not isinstance(k, str) or not isinstance(v, dict):
                continue
            ident, state, div = v.get("id"), _FINAL_STATES.get(str(v.get("state"))), v.get("divert")
            if (isinstance(ident, list) and len(ident) == 5 and all(type(x) is int for x in ident)
                    and state is not None and (div is None or isinstance(div, str))):
                out[k] = Final(tuple(ident), state, div)
        return out

    def _write_index(self, final: dict[str, Final]) -> None:
        doc = {"v": _INDEX_VERSION, "final": {k: v.to_json() for k, v in final.items()}}
        data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
        with contextlib.suppress(RevError, OSError):  # a cache: the next one reads the journals again
            with self.open(create=True) as d:
                # replaced atomically, not fsynced: after a crash it may be empty or old, and
                # then every journal it does not match is read again
                fd, tmp = d.create_temp(FINAL_INDEX)
                try:
                    try:
                        write_all(fd, data + b"\n")
                    finally:
                        os.close(fd)
                    d.replace(tmp, FINAL_INDEX)
                finally:
                    d.unlink(tmp, missing_ok=True)

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
        """``NNNN-YYYYMMDDTHHMMSSZ-xxxxxxxx``: this folder's next sequence number, the UTC second, and
        32 random bits. Sequence and second alone repeat across state folders (the machine's and each
        user's start at 0001) within one second; the random part makes an id unique on the machine,
        and the first two parts keep ids sortable. Ids of the older ``NNNN-YYYYMMDDTHHMMSSZ`` form in
        existing journals are read and matched as before (by exact id, sequence number or prefix)."""
        seqs = [txid_seq(n.split(".")[0]) for n in os.listdir(self.tx_dir)] if self.tx_dir.is_dir() else []
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(testseam.clock()))
        return f"{max(seqs, default=0) + 1:04d}-{stamp}-{secrets.token_hex(4)}"

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


def _journal_names(d: Dir) -> list[str]:
    """The journals in the open ``tx`` folder, oldest first."""
    names = [n for n in d.listdir() if n.endswith(".jsonl") and not n.startswith(".")]
    return sorted(names, key=lambda n: (txid_seq(n[:-len(".jsonl")]), n))


def _identity(st: os.stat_result | None) -> list[int] | None:
    """(device, inode, size, mtime, ctime) of a regular file; None for anything else."""
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def txid_seq(txid: str) -> int:
    """The sequence number a txid starts with (``0003-2025...`` → 3; 0 when none)."""
    m = re.match(r"(\d+)", txid)
    return int(m.group(1)) if m else 0


def now() -> str:
    """The time a journal record carries (UTC, seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def refuse_pending(st: StateDir, *, remember: bool = False, pending: list[TxRecord] | None = None) -> None:
    """RevError("INTERRUPTED") naming the newest interrupted transaction, when there is one.
    ``remember``: the caller holds the lock (``StateDir.load_pending``). ``pending``: the
    pending journals a caller's own ``scan`` found (nothing is read again)."""
    if pending is None:
        pending = st.load_pending(remember=remember)
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
    pending = [tx.txid for tx in st.load_pending()]
    if pending and is_held(st.lock_path) is not None:
        return []
    return pending


def require_no_pending(root, *, state_dir: str = DEFAULT_STATE_DIR) -> None:
    """RevError("INTERRUPTED") naming the transaction when one is pending; for every command but
    ``recover`` and ``status``."""
    if find_pending(root, state_dir=state_dir):
        refuse_pending(StateDir(root, state_dir))

