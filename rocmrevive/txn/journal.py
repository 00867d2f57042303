"""The transaction journal: append-only JSON lines in ``<state>/tx/<txid>.jsonl``.

Records are written in groups; every group is fsynced before any action it describes starts, so
the file always says at least as much as the tree shows (docs/transactions.md, "Journal contents"). Record types:

    begin        tree, files planned (path, op, after sha256), created folders, meta/provenance, host,
                 ``dirs``: machine path -> [dev, ino] of each folder surveyed (an undo refuses another)
    intent       op mkdir|create|replace|delete, path, before {exists, sha256, size, mode, uid, gid,
                 mtime_ns}, after {sha256, size, mode, uid, gid}, backup "backups/<sha256>", temp
    stage        temporary names about to be created next to their targets (random, created O_EXCL
                 after this record; ``foreign``: names of an earlier stage record found taken, not ours)
    done         path, sha256; for a file written, ``ident`` [dev, ino, size, mtime_ns] of the file
                 put there (``status`` compares what is at the path with it); for a folder made, ``id``
                 [dev, ino]
    commit       the transaction is in place
    undo_begin   a rollback (or the undo of a failed/interrupted apply) starts: reason, force
    rolled_back  the tree is back to its state before the transaction; ``restored_ident``: path ->
                 [dev, ino, size, mtime_ns] of each file put back (a new inode: the transaction
                 whose bytes it holds again is judged by it)

    torn         the line before was cut short (a kill or a full disk) and terminated on reopening

A journal whose last state-changing record is neither ``commit`` nor ``rolled_back`` is
*interrupted*: ``recover`` completes or undoes it. A record cut short by a kill is ignored (its
action never started: actions wait for the fsync).

A journal is data from disk (docs/security.md): it is opened through ``rocmrevive.fs`` (never
through a link, never a FIFO), and read back it is checked before anything is undone from it:
every path must be a clean absolute path inside the transaction's tree, temporaries and folders
must be the ones its ``begin`` planned, every record must have its fields. An unreadable line that
is not the last (nor marked ``torn``), a journal without a ``begin`` (a new journal is created
with its ``begin`` already in it, so an empty one is damage), or planned files without intents
after the intents were written make it *damaged*: ``problems`` says what, and rollback/recover
stop (exit 9) instead of undoing part of it.

    j = Journal.create(path); j.write({"type": RecordType.BEGIN, ...}); j.close()
    tx = TxRecord.load(path); tx.state  # TxState.COMMITTED
"""
from __future__ import annotations

import errno
import json
import os
import posixpath
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, check_regular, read_fd
from rocmrevive.strenum import StrEnum
from rocmrevive.txn.plan import OPS, Op

JOURNAL_VERSION = 1
TEMP_SUFFIX = ".rocmrevive-new"  # a staged file: ``.<name>.<12 hex>.rocmrevive-new`` next to its target
_TEMP_RE = re.compile(r"^\..+\.[0-9a-f]{12}" + re.escape(TEMP_SUFFIX) + "$")
MAX_JOURNAL = 256 << 20          # a journal of 2,000 files is ~2 MB
_HEX = re.compile(r"^[0-9a-f]{64}$")


class RecordType(StrEnum):
    """A journal record's ``type`` (the list at the top of this module). A journal read back holds
    plain strings, which compare equal to these."""

    BEGIN = "begin"
    INTENT = "intent"
    STAGE = "stage"
    DONE = "done"
    COMMIT = "commit"
    UNDO_BEGIN = "undo_begin"
    ROLLED_BACK = "rolled_back"
    TORN = "torn"


_TORN = json.dumps({"type": RecordType.TORN}).encode() + b"\n"  # after a line a kill cut short


class TxState(StrEnum):
    """A transaction's state, as its journal says (``TxRecord.state``, ``list_transactions``)."""

    COMMITTED = "committed"
    ROLLED_BACK = "rolled_back"
    INTERRUPTED = "interrupted"    # begun (or its undo begun), never finished: ``recover`` finishes or undoes it
    DAMAGED = "damaged"            # the journal cannot be trusted (``TxRecord.problems``)
    IN_PROGRESS = "in_progress"    # (list_transactions) pending while another rocmrevive holds the lock


PENDING = (TxState.INTERRUPTED, TxState.DAMAGED)  # what blocks the next transaction until recovered


class Journal:
    """An open journal, appending groups of records with one fsync per group."""

    def __init__(self, path: Path, fd: int):
        self.path = Path(path)
        self._fd = fd
        self._torn = False  # a failed write (disk full) may have left half a line
        self.records: list[dict] = []  # everything attempted, for an in-process undo

    @classmethod
    def create(cls, tx_dir: Dir, name: str, first: dict) -> "Journal":
        """A new journal ``name`` in ``tx_dir`` that already holds ``first`` (the ``begin``): written to
        an ``O_EXCL`` temporary, fsynced and linked into place, so no journal is ever empty."""
        data = json.dumps(first, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        fd, tmp = tx_dir.create_temp(name)
        try:
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, name, src_dir_fd=tx_dir.fd, dst_dir_fd=tx_dir.fd, follow_symlinks=False)
            except OSError as exc:  # a file system without hard links: the txid is new under the lock
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK) or tx_dir.lstat(name):
                    raise
                tx_dir.replace(tmp, name)
        finally:
            tx_dir.unlink(tmp, missing_ok=True)
        tx_dir.fsync()  # the journal's name must survive a crash too
        j = cls(tx_dir.path / name, tx_dir.open_rw(name, append=True))
        j.records = [first]
        return j

    @classmethod
    def reopen(cls, path: Path) -> "Journal":
        """Append to an existing journal (opened through its folder's descriptor, never through a
        link); terminates a record a kill cut short, marking it ``torn``, so that the next record
        starts on its own line."""
        path = Path(path)
        with Dir.open(path.parent, what="journal folder") as d:
            fd = d.open_rw(path.name, append=True)
        j = cls(path, fd)
        try:
            j.records = _parse(read_fd(fd, max_size=MAX_JOURNAL, what=path))[0]
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                os.write(fd, b"\n" + _TORN)
                os.fsync(fd)
        except BaseException:
            j.close()
            raise
        return j

    def write(self, *records: dict) -> None:
        self.records.extend(records)
        data = b"".join(json.dumps(r, sort_keys=True, separators=(",", ":")).encode() + b"\n"
                        for r in records)
        if self._torn:
            data = b"\n" + _TORN + data
        self._torn = True
        while data:
            n = os.write(self._fd, data)
            data = data[n:]
        self._torn = False
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_records(path: Path) -> tuple[list[dict], int]:
    """(records, number of unreadable lines) of a journal."""
    records, bad, _, _ = read_journal(path)
    return records, bad


def read_journal(path: Path) -> tuple[list[dict], int, list[str], bool]:
    """(records, unreadable lines, problems, torn: a line was ever cut short) of a journal, opened without following a link and
    refused when it is not a regular file (a FIFO would hang every command)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return [], 0, [f"cannot open it: {exc.strerror}"], False
    try:
        try:
            check_regular(fd, path, max_size=MAX_JOURNAL)
            os.set_blocking(fd, True)
            data = read_fd(fd, max_size=MAX_JOURNAL, what=path)
        except RevError as exc:
            return [], 0, [exc.message], False
        except OSError as exc:
            return [], 0, [f"cannot read it: {exc.strerror}"], False
    finally:
        os.close(fd)
    return _parse(data)


MAX_DEPTH = 16                   # a record nests 3 deep; json.loads of 200,000 brackets is a RecursionError
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


def _too_deep(line: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text ``line`` nests deeper than ``limit`` (strings skipped): such a
    line is unreadable, as a torn one is, before a parser could recurse on it."""
    depth = 0
    for m in _BRACKETS.finditer(_STRINGS.sub(b"", line)):   # stops at the first bracket too deep
        depth += 1 if m.group() in (b"[", b"{") else -1
        if depth > limit:
            return True
    return False


def _parse(data: bytes) -> tuple[list[dict], int, list[str], bool]:
    records, bad, problems, torn = [], 0, [], False
    lines = data.split(b"\n")
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    pending_bad: int | None = None
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = None if _too_deep(line) else json.loads(line)
        except (ValueError, RecursionError):
            rec = None
        if not (isinstance(rec, dict) and isinstance(rec.get("type"), str)):
            bad += 1
            torn = True
            if n != last and pending_bad is None:
                pending_bad = n + 1
            continue
        if pending_bad is not None:
            if rec["type"] != RecordType.TORN:
                problems.append(f"line {pending_bad} is unreadable and is not the last")
            pending_bad = None
        if rec["type"] != RecordType.TORN:
            records.append(rec)
        else:
            torn = True
    return records, bad, problems, torn


@dataclass
class TxRecord:
    """A journal read back: its state and what it touched."""

    txid: str
    path: Path
    records: list[dict]
    unreadable: int = 0
    begin: dict | None = None
    state: TxState = TxState.DAMAGED
    phase: str = "apply"   # apply | undo: what an interrupted transaction was doing
    file_intents: list[dict] = field(default_factory=list)
    mkdir_intents: list[dict] = field(default_factory=list)
    temps: list[str] = field(default_factory=list)
    foreign: set[str] = field(default_factory=set)  # temporary names found taken: not ours to remove
    done: dict[str, str | None] = field(default_factory=dict)
    written: dict[str, list[int]] = field(default_factory=dict)  # path -> [dev, ino, size, mtime_ns] put there
    restored: dict[str, list[int]] = field(default_factory=dict)  # the same, of each file its undo put back
    dir_ids: dict[str, tuple[int, int]] = field(default_factory=dict)  # folder -> (dev, ino) surveyed or made
    undo: dict | None = None
    commit: dict | None = None
    rolled_back: dict | None = None
    problems: list[str] = field(default_factory=list)
    known_state: TxState | None = None  # what the records alone say, for a damaged journal
    torn: bool = True       # a line was cut short (a kill mid-write): a partial intent group is possible

    @classmethod
    def load(cls, path: Path) -> "TxRecord":
        path = Path(path)
        records, bad, problems, torn = read_journal(path)
        return cls.from_records(path.stem, path, records, bad, problems, torn=torn)

    @classmethod
    def from_records(cls, txid: str, path: Path, records: list[dict], unreadable: int = 0,
                     problems: list[str] | None = None, *, torn: bool = True) -> "TxRecord":
        tx = cls(txid=txid, path=Path(path), records=records, unreadable=unreadable,
                 problems=list(problems or []), torn=torn)
        for n, r in enumerate(records):
            why = _record_problem(r)
            if why:
                tx.problems.append(f"record {n + 1} ({str(r.get('type'))[:20]}): {why}")
                continue
            t = r["type"]
            if t == RecordType.BEGIN:
                if tx.begin is not None:
                    tx.problems.append(f"record {n + 1}: a second begin")
                    continue
                tx.begin = r
                tx.dir_ids.update(_ids(r.get("dirs")))
                tx.state = TxState.INTERRUPTED
            elif t == RecordType.INTENT:
                (tx.mkdir_intents if r.get("op") == Op.MKDIR else tx.file_intents).append(r)
            elif t == RecordType.STAGE:
                tx.temps.extend(r["temps"])
                tx.foreign.update(x for x in r.get("foreign") or () if isinstance(x, str))
            elif t == RecordType.DONE:
                tx.done[r["path"]] = r.get("sha256")
                if _ident(r.get("ident"), 4):
                    tx.written[r["path"]] = r["ident"]
                if _ident(r.get("id"), 2):
                    tx.dir_ids[r["path"]] = tuple(r["id"])
            elif t == RecordType.COMMIT:
                tx.commit = r
                tx.state = TxState.COMMITTED
            elif t == RecordType.UNDO_BEGIN:
                tx.undo = r
                tx.state, tx.phase = TxState.INTERRUPTED, "undo"
            elif t == RecordType.ROLLED_BACK:
                tx.rolled_back = r
                tx.state = TxState.ROLLED_BACK
                tx.restored.update(_restored_idents(r.get("restored_ident")))
        if tx.begin is None:
            tx.problems.append("no readable begin record (empty or damaged): what it changed is unknown")
        else:
            tx.problems += _path_problems(tx)
        if tx.problems:
            tx.known_state, tx.state = tx.state, TxState.DAMAGED
        return tx

    @property
    def pending(self) -> bool:
        return self.state in PENDING

    @property
    def damaged(self) -> bool:
        return bool(self.problems)

    def describe_damage(self) -> str:
        """One line: what is wrong with the journal, and what it still says."""
        first = self.problems[0] if self.problems else "damaged"
        more = f" (and {len(self.problems) - 1} more problem(s))" if len(self.problems) > 1 else ""
        if self.begin is not None:
            known = (f"it says {len(self.planned)} file(s) under {self.tree} were planned, "
                     f"{len(self.file_intents)} intent(s) and {len(self.done)} done record(s) are readable, "
                     f"state {self.known_state or 'unknown'}")
        else:
            known = "nothing readable is left of it"
        return f"{first}{more}; {known}"

    @property
    def tree(self) -> str | None:
        return self.begin.get("tree") if self.begin else None

    @property
    def planned(self) -> list[dict]:
        return list(self.begin.get("files", [])) if self.begin else []


# checking what was read ------------------------------------------------------------------
_FIELDS: dict[str, dict[str, type]] = {
    RecordType.BEGIN: {"tree": str, "files": list},
    RecordType.INTENT: {"op": str, "path": str},
    RecordType.STAGE: {"temps": list},
    RecordType.DONE: {"path": str},
}


def _record_problem(r: dict) -> str | None:
    """What is wrong with one record read from a journal (its fields by type), else None."""
    for name, typ in _FIELDS.get(r["type"], {}).items():
        if not isinstance(r.get(name), typ):
            return f"field {name!r} missing or not a {typ.__name__}"
    t = r["type"]
    if t == RecordType.BEGIN:
        return _begin_problem(r)
    if t == RecordType.INTENT and r["op"] != Op.MKDIR:
        return _file_intent_problem(r)
    if t == RecordType.STAGE and not all(isinstance(x, str) for x in r["temps"]):
        return "temps is not a list of paths"
    return None


def _begin_problem(r: dict) -> str | None:
    for f in r["files"]:
        if not (isinstance(f, dict) and isinstance(f.get("path"), str) and f.get("op") in OPS):
            return "a planned file without path or op"
    if not isinstance(r.get("mkdirs", []), list) or not all(isinstance(m, str) for m in r.get("mkdirs", [])):
        return "mkdirs is not a list of paths"
    return None


def _file_intent_problem(r: dict) -> str | None:
    if r["op"] not in OPS:
        return f"unknown op {str(r['op'])[:20]!r}"
    for side in ("before", "after"):
        if not isinstance(r.get(side), dict):
            return f"field {side!r} missing"
    b = r["before"]
    if b.get("exists"):
        if not (isinstance(b.get("sha256"), str) and _HEX.match(b["sha256"])):
            return "before.sha256 is not a sha256"
        for k in ("mode", "uid", "gid"):
            if not isinstance(b.get(k), int):
                return f"before.{k} missing"
    return None


def _ident(v, n: int) -> bool:
    return isinstance(v, list) and len(v) == n and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def _restored_idents(v) -> dict[str, list[int]]:
    """A rolled_back record's ``restored_ident``, its malformed entries dropped."""
    if not isinstance(v, dict):
        return {}
    return {p: i for p, i in v.items() if isinstance(p, str) and _ident(i, 4)}


def _ids(dirs) -> dict[str, tuple[int, int]]:
    """The folder identities a begin recorded (old journals have none; malformed ones are ignored:
    the folders are then only required to be folders, not links)."""
    if not isinstance(dirs, dict):
        return {}
    return {k: tuple(v) for k, v in dirs.items() if isinstance(k, str) and _ident(v, 2)}


def temp_name(name: str) -> str:
    """A fresh random name for the temporary of ``name``: ``.<name>.<12 hex>.rocmrevive-new``
    (the name cut so the whole stays under NAME_MAX)."""
    return f".{name[:200]}.{secrets.token_hex(6)}{TEMP_SUFFIX}"


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is one ``temp_name`` makes (what a journal may name as a temporary)."""
    return bool(_TEMP_RE.match(name)) and "/" not in name


def clean_path(p) -> bool:
    """An absolute, normalised machine path: no '..', '.', empty parts or NUL."""
    return (isinstance(p, str) and p.startswith("/") and "\x00" not in p and posixpath.normpath(p) == p
            and not {"..", ""} & set(p.split("/")[1:]))  # "//x": POSIX's normpath keeps two slashes


def temp_path(path: str) -> str:
    d, name = posixpath.split(path)
    return posixpath.join(d, f".{name}{TEMP_SUFFIX}")


def _path_problems(tx: TxRecord) -> list[str]:
    """Every path a journal names must be one its ``begin`` planned, inside its tree. The tree may be
    the machine's root itself: a side-by-side install (RCCL under ``/opt/rocmrevive``) plans from the
    nearest folder that exists, which is ``/`` on a machine without ``/opt``; every path in it is
    still a clean path below it (no ``..``, never ``/`` itself). Called for a record with a begin."""
    tree = (tx.begin or {}).get("tree")
    if not isinstance(tree, str) or not (tree == "/" or clean_path(tree)):
        return [f"its tree {ascii(tree)[:80]} is not a clean absolute path"]
    below = tree.rstrip("/") + "/"

    def inside(p) -> bool:
        return clean_path(p) and p.startswith(below)

    planned = {f["path"]: f["op"] for f in tx.planned}
    mkdirs = set((tx.begin or {}).get("mkdirs", []))
    out = [f"planned file {ascii(f['path'])[:120]} is outside its tree {tree}" for f in tx.planned
           if not inside(f["path"])]
    out += [f"planned folder {ascii(d)[:120]} is outside its tree {tree}" for d in mkdirs if not inside(d)]
    out += _temp_problems(tx, planned)
    out += [f"folder intent {ascii(it['path'])[:120]} is not one its begin planned" for it in tx.mkdir_intents
            if it["path"] not in mkdirs]
    out += _intent_problems(tx, planned)
    out += [f"done record for {ascii(p)[:120]}, which its begin did not plan" for p in tx.done
            if p not in planned and p not in mkdirs]
    out += _missing_intents(tx, planned)
    return out


def _temp_problems(tx: TxRecord, planned: dict[str, str]) -> list[str]:
    """A temporary must be beside a planned file, with a name ``temp_name`` makes (or the old fixed one)."""
    legacy = {temp_path(p) for p, op in planned.items() if op != Op.DELETE}
    folders = {posixpath.dirname(p) for p in planned}
    return [f"temporary {ascii(t)[:120]} is not one its begin planned" for t in tx.temps
            if not (t in legacy or (clean_path(t) and posixpath.dirname(t) in folders
                                    and is_temp_name(posixpath.basename(t))))]


def _intent_problems(tx: TxRecord, planned: dict[str, str]) -> list[str]:
    """A file intent must be one the begin planned, naming only its own content-addressed backup."""
    out = []
    for it in tx.file_intents:
        if planned.get(it["path"]) != it["op"]:
            out.append(f"{it['op']} intent for {ascii(it['path'])[:120]} is not one its begin planned")
        backup = it.get("backup")
        if backup is not None and not (isinstance(backup, str) and backup == f"backups/{it['before'].get('sha256')}"):
            out.append(f"intent for {ascii(it['path'])[:120]} names the backup {ascii(backup)[:80]}")
    return out


def _missing_intents(tx: TxRecord, planned: dict[str, str]) -> list[str]:
    """The intents are written together: some without the others is a torn or forged journal."""
    intents = {it["path"] for it in tx.file_intents}
    missing = [p for p in planned if p not in intents]
    if intents and missing and not tx.torn:
        return [f"{len(missing)} of {len(planned)} planned file(s) have no intent record "
                f"(the intents are written together)"]
    if missing and (tx.commit is not None or any(p in planned for p in tx.done)):
        return [f"{len(missing)} planned file(s) have no intent record, yet it says they were done"]
    return []
