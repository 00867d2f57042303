"""The transaction journal: append-only JSON lines in ``<state>/tx/<txid>.jsonl``.

Records are written in groups; every group is fsynced before any action it describes starts, so
the file always says at least as much as the tree shows (docs/transactions.md, "Journal contents"). Record types:

    begin        tree, files planned (path, op, after sha256), created folders, meta/provenance, host
    intent       op mkdir|create|replace|delete, path, before {exists, sha256, size, mode, uid, gid,
                 mtime_ns}, after {sha256, size, mode, uid, gid}, backup "backups/<sha256>", temp
    stage        temporary names about to be created next to their targets
    done         path, observed sha256
    commit       the transaction is in place
    undo_begin   a rollback (or the undo of a failed/interrupted apply) starts: reason, force
    rolled_back  the tree is back to its state before the transaction

A journal whose last state-changing record is neither ``commit`` nor ``rolled_back`` is
*interrupted*: ``recover`` completes or undoes it. A record cut short by a kill is ignored (its
action never started: actions wait for the fsync).

    j = Journal.create(path); j.write({"type": "begin", ...}); j.close()
    tx = TxRecord.load(path); tx.state  # "committed"
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from rocmrevive.txn.fsutil import fsync_dir

JOURNAL_VERSION = 1


class Journal:
    """An open journal, appending groups of records with one fsync per group."""

    def __init__(self, path: Path, fd: int):
        self.path = Path(path)
        self._fd = fd
        self._torn = False  # a failed write (disk full) may have left half a line
        self.records: list[dict] = []  # everything attempted, for an in-process undo

    @classmethod
    def create(cls, path: Path) -> "Journal":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
        fsync_dir(Path(path).parent)  # the journal's name must survive a crash too
        return cls(path, fd)

    @classmethod
    def reopen(cls, path: Path) -> "Journal":
        """Append to an existing journal; terminates a record a kill cut short so that the next
        record starts on its own line."""
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        j = cls(path, fd)
        j.records = read_records(path)[0]
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.write(fd, b"\n")
            os.fsync(fd)
        return j

    def write(self, *records: dict) -> None:
        self.records.extend(records)
        data = b"".join(json.dumps(r, sort_keys=True, separators=(",", ":")).encode() + b"\n"
                        for r in records)
        if self._torn:
            data = b"\n" + data
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
    records, bad = [], 0
    with open(path, "rb") as f:
        for line in f.read().split(b"\n"):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(rec, dict) and "type" in rec:
                records.append(rec)
            else:
                bad += 1
    return records, bad


@dataclass
class TxRecord:
    """A journal read back: its state and what it touched."""

    txid: str
    path: Path
    records: list[dict]
    unreadable: int = 0
    begin: dict | None = None
    state: str = "broken"  # committed | rolled_back | interrupted | broken (no readable begin)
    phase: str = "apply"   # apply | undo: what an interrupted transaction was doing
    file_intents: list[dict] = field(default_factory=list)
    mkdir_intents: list[dict] = field(default_factory=list)
    temps: list[str] = field(default_factory=list)
    done: dict[str, str | None] = field(default_factory=dict)
    undo: dict | None = None
    commit: dict | None = None
    rolled_back: dict | None = None

    @classmethod
    def load(cls, path: Path) -> "TxRecord":
        path = Path(path)
        records, bad = read_records(path)
        return cls.from_records(path.stem, path, records, bad)

    @classmethod
    def from_records(cls, txid: str, path: Path, records: list[dict], unreadable: int = 0) -> "TxRecord":
        tx = cls(txid=txid, path=Path(path), records=records, unreadable=unreadable)
        for r in records:
            t = r["type"]
            if t == "begin":
                tx.begin = r
                tx.state = "interrupted"
            elif t == "intent":
                (tx.mkdir_intents if r.get("op") == "mkdir" else tx.file_intents).append(r)
            elif t == "stage":
                tx.temps.extend(r.get("temps", []))
            elif t == "done":
                tx.done[r["path"]] = r.get("sha256")
            elif t == "commit":
                tx.commit = r
                tx.state = "committed"
            elif t == "undo_begin":
                tx.undo = r
                tx.state, tx.phase = "interrupted", "undo"
            elif t == "rolled_back":
                tx.rolled_back = r
                tx.state = "rolled_back"
        return tx

    @property
    def pending(self) -> bool:
        return self.state in ("interrupted", "broken")

    @property
    def tree(self) -> str | None:
        return self.begin.get("tree") if self.begin else None

    @property
    def planned(self) -> list[dict]:
        return list(self.begin.get("files", [])) if self.begin else []
