"""The history of transactions: every journal, oldest first, with its state and, for a committed
one, whether its files are still as it left them (``status``, ``audit``, the Ansible modules).

    for tx in list_transactions(root): tx.txid, tx.state, tx.integrity, tx.drifted
    status --json: [tx.to_json() for tx in list_transactions(root)]
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rocmrevive.strenum import StrEnum
from rocmrevive.txn.journal import TxState
from rocmrevive.txn.lock import is_held
from rocmrevive.txn.observe import matches, observe_all
from rocmrevive.txn.plan import Op
from rocmrevive.txn.result import expected_errors
from rocmrevive.txn.state import DEFAULT_STATE_DIR, StateDir


class Integrity(StrEnum):
    """A committed transaction's files now (``list_transactions``' ``integrity``)."""

    INTACT = "intact"
    DRIFTED = "drifted"    # some file has other bytes
    MISSING = "missing"    # every file gone (an apt upgrade replaced the tree?)
    PARTIAL = "partial"    # some files gone
    SUPERSEDED = "superseded"  # every file since written by a later transaction, or by something
                               # else a later (rolled back) transaction found in its place


def is_written(cur: dict, ident: list[int] | None) -> bool:
    """Whether the file observed at a path (``observe``) is the very file the transaction wrote
    there: same inode, size and mtime as its done record's identity. Equal bytes at another inode
    are not (an escape or a folder swap would otherwise read "intact"). The device number is not
    compared: an overlay or network file system may number its device anew at each mount. A
    journal from before identities were recorded (no ``ident``) is judged by the bytes alone."""
    if ident is None:
        return True
    return [cur.get("ino"), cur.get("size"), cur.get("mtime_ns")] == list(ident[1:4])


@dataclass(frozen=True)
class TxChange:
    """One file a transaction planned, as its journal's ``begin`` says."""

    path: str
    op: str
    sha256: str | None
    size: int | None
    source: str | None

    def to_json(self) -> dict:
        return {"path": self.path, "op": self.op, "sha256": self.sha256, "size": self.size, "source": self.source}


@dataclass(frozen=True)
class FilesNow:
    """A committed transaction's files as they are now (``list_transactions(verify=True)``)."""

    intact: tuple[str, ...] = ()
    drifted: tuple[str, ...] = ()      # other bytes, or another file, at the path
    missing: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()   # since written by a later transaction (or put back by one)


@dataclass(frozen=True)
class TxSummary:
    """One transaction of the history: what its journal says and, for a committed one that was
    checked, its files now. ``to_json`` is the record ``status --json`` prints."""

    txid: str
    state: TxState          # committed, rolled_back, interrupted, damaged, in_progress (another holds the lock)
    tree: str | None
    tree_given: str | None
    began: str | None
    committed: str | None
    rolled_back: str | None
    meta: Mapping[str, Any]
    files: int
    bytes: int
    ops: Mapping[str, int]
    mkdirs: tuple[Any, ...]
    changes: tuple[TxChange, ...]
    journal: str            # its machine path
    tree_exists: bool
    integrity: Integrity | None = None   # None: not committed, or not checked
    damage: str | None = None            # a damaged journal: what is wrong with it
    now: FilesNow | None = None          # a committed one, checked

    @property
    def intact(self) -> tuple[str, ...]:
        return self.now.intact if self.now else ()

    @property
    def drifted(self) -> tuple[str, ...]:
        return self.now.drifted if self.now else ()

    @property
    def missing(self) -> tuple[str, ...]:
        return self.now.missing if self.now else ()

    @property
    def superseded(self) -> tuple[str, ...]:
        return self.now.superseded if self.now else ()

    @property
    def managed(self) -> tuple[str, ...]:
        """The files whose bytes are this transaction's to judge now (intact, drifted or missing)."""
        return self.intact + self.drifted + self.missing

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "txid": self.txid, "state": self.state, "tree": self.tree, "tree_given": self.tree_given,
            "began": self.began, "committed": self.committed, "rolled_back": self.rolled_back,
            "meta": dict(self.meta), "files": self.files, "bytes": self.bytes, "ops": dict(self.ops),
            "mkdirs": list(self.mkdirs), "changes": [c.to_json() for c in self.changes], "journal": self.journal,
            "tree_exists": self.tree_exists, "integrity": self.integrity, "damage": self.damage}
        if self.now is not None:
            out.update(intact=list(self.intact), drifted=list(self.drifted), missing=list(self.missing),
                       superseded=list(self.superseded))
        return out


def list_transactions(root, *, state_dir: str = DEFAULT_STATE_DIR, verify: bool = True) -> tuple[TxSummary, ...]:
    """Every transaction, oldest first: txid, state (committed, rolled_back, interrupted, damaged,
    in_progress: another rocmrevive holds the lock), tree, times, meta, file counts and, for a
    committed one (``verify``), which of its files are intact, drifted or missing now.

    ``integrity``: intact | drifted (some file has other bytes) | missing (every file gone, e.g.
    an apt upgrade replaced the tree) | partial (some files gone) | None (not committed)."""
    with expected_errors(root):
        return _list_transactions(root, StateDir(root, state_dir), verify)


def _list_transactions(root, st: StateDir, verify: bool) -> tuple[TxSummary, ...]:
    txs = st.load_all()
    busy = any(tx.pending for tx in txs) and is_held(st.lock_path) is not None
    owner, put_back = _owners(txs)
    out = []
    for tx in txs:
        b = tx.begin or {}
        files = tx.planned
        state = TxState.IN_PROGRESS if busy and tx.pending else tx.state
        integrity, now = None, None
        if tx.state is TxState.COMMITTED and verify:
            intact, drifted, missing = [], [], []
            superseded = [f["path"] for f in files if owner.get(f["path"]) != tx.txid]
            mine = [f for f in files if owner.get(f["path"]) == tx.txid]
            for f, cur in zip(mine, observe_all([root.path(f["path"]) for f in mine])):
                want = {"exists": False} if f["op"] == Op.DELETE else {"exists": True, "sha256": f.get("sha256")}
                ident = put_back.get(f["path"]) or tx.written.get(f["path"])
                if matches(cur, want) and is_written(cur, ident):
                    intact.append(f["path"])
                elif want["exists"] and not cur.get("exists"):
                    missing.append(f["path"])
                else:
                    drifted.append(f["path"])
            now = FilesNow(tuple(intact), tuple(drifted), tuple(missing), tuple(superseded))
            integrity = (Integrity.DRIFTED if drifted else Integrity.MISSING if missing and not intact
                         else Integrity.PARTIAL if missing else Integrity.INTACT if mine or not files
                         else Integrity.SUPERSEDED)
        out.append(TxSummary(
            txid=tx.txid, state=state, tree=tx.tree, tree_given=b.get("tree_given"), began=b.get("time"),
            committed=(tx.commit or {}).get("time"), rolled_back=(tx.rolled_back or {}).get("time"),
            meta=b.get("meta") or {}, files=len(files),
            bytes=sum(f.get("size") or 0 for f in files if f["op"] != Op.DELETE),
            ops=dict(Counter(f["op"] for f in files)), mkdirs=tuple(b.get("mkdirs", [])),
            changes=tuple(TxChange(f["path"], f["op"], f.get("sha256"), f.get("size"), f.get("source"))
                          for f in files),
            journal=st.mp(tx.path), tree_exists=bool(tx.tree) and root.path(tx.tree).is_dir(),
            integrity=integrity, damage=tx.describe_damage() if tx.damaged else None, now=now))
    return tuple(out)


def _owners(txs) -> tuple[dict[str, str | None], dict[str, list[int]]]:
    """path -> the committed transaction whose bytes the path should hold now (None: no one's),
    and path -> the identity of the file a later rolled-back transaction put back there.
    A later committed transaction takes a path over. A later one rolled back put the path back as
    it found it: when that was not the owner's bytes (an apt upgrade had removed or replaced the
    file in between), the owner's record of it is superseded too; when it was, the owner's bytes
    now live in the file the undo wrote (a new inode), and that is the file to judge."""
    owner: dict[str, str | None] = {}
    sha: dict[str, str | None] = {}
    put_back: dict[str, list[int]] = {}
    for tx in txs:
        if tx.state is TxState.COMMITTED:
            for f in tx.planned:
                owner[f["path"]], sha[f["path"]] = tx.txid, (None if f["op"] == Op.DELETE else f.get("sha256"))
                put_back.pop(f["path"], None)
        elif tx.state is TxState.ROLLED_BACK:
            for it in tx.file_intents:
                p, before = it["path"], it.get("before") or {}
                if owner.get(p) and (before.get("sha256") if before.get("exists") else None) != sha.get(p):
                    owner[p] = None
                elif owner.get(p) and p in tx.restored:
                    put_back[p] = tx.restored[p]
    return owner, put_back
