"""Undo a transaction from its journal: a rollback (a committed one, byte for byte), the undo of
a failed apply, and the recovery of one a kill interrupted (finished when every file is already
new, else undone). Every undo compares hashes first, so each step may be repeated.

    rollback(root)              # the last committed transaction (or rollback(root, "0003"))
    recover_pending(root)       # [TxResult(state=TxOutcome.ROLLED_FORWARD | ROLLED_BACK), ...]
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.txn import divert
from rocmrevive.txn.folders import Folders
from rocmrevive.txn.fsutil import HashMismatch, fill_temp
from rocmrevive.txn.journal import Journal, RecordType, TxRecord, TxState, clean_path, temp_name
from rocmrevive.txn.lock import check_package_managers
from rocmrevive.txn.observe import describe, legacy_temp, matches, observe_all
from rocmrevive.txn.plan import Op
from rocmrevive.txn.preflight import check_writable
from rocmrevive.txn.result import Action, Progress, TxOutcome, TxResult, as_rev_error, expected_errors, few
from rocmrevive.txn.state import (
    DEFAULT_STATE_DIR,
    JournalEntry,
    StateDir,
    now,
    refuse_damaged,
    refuse_pending,
    txid_seq,
)
from rocmrevive.txn.testseam import checkpoint


class Undo:
    """Bring the files of one transaction back to their ``before`` state, from its journal.

    First every file is observed: already as before → nothing; as after → restore/remove; anything
    else is drift (refused unless forced; a forced file's current bytes are backed up first, so
    nothing is lost). Then temporaries are removed and created folders removed (if empty)."""

    def __init__(self, root, st: StateDir, tx: TxRecord, journal: Journal | None, *, reason: str,
                 force: bool = False, best_effort_journal: bool = False, later: dict | None = None,
                 progress: Progress | None = None, folders: Folders | None = None):
        self.root, self.st, self.tx, self.journal = root, st, tx, journal
        # the apply's own folders when it undoes itself; else opened afresh from the root, each
        # checked against the identity the journal recorded
        self.folders = folders if folders is not None else Folders(root, tx.dir_ids)
        self.reason, self.force, self.best_effort = reason, force, best_effort_journal
        self.later = later or {}
        self.progress = progress or (lambda n: None)
        self.warnings: list[str] = []
        self.items: list[dict] = []
        # path -> [dev, ino, size, mtime_ns] of each file put back: a new inode, which the
        # transaction that owns those bytes again is judged by from now on (history._owners)
        self.restored: dict[str, list[int]] = {}

    def _write(self, *records: dict) -> None:
        if self.journal is None:
            return
        try:
            self.journal.write(*records)
        except OSError:
            if not self.best_effort:
                raise

    def close(self) -> None:
        self.folders.close()

    def _real(self, mpath: str) -> Path:
        """The real path of a journal's path (data: checked clean and inside its tree when the
        journal was read). Its folder is opened from the root, never through a link, and must be
        the one the transaction recorded (``Folders``)."""
        if not clean_path(mpath) or mpath == "/":
            raise RevError("VERIFY_FAILED", f"the journal names {ascii(mpath)[:120]}, not a clean path; refusing")
        real = self.root.path(mpath)
        self.folders.exists(real.parent)
        return real

    def survey(self) -> list[dict]:
        forced_before = (self.tx.undo or {}).get("forced") or {}
        items, drift = [], []
        intents = list(reversed(self.tx.file_intents))
        reals = [self._real(it["path"]) for it in intents]
        for it, real, cur in zip(intents, reals, observe_all(reals, self.folders)):
            path = it["path"]
            before, after = it["before"], it["after"]
            item = {"path": path, "real": real, "intent": it, "cur": cur, "forced": False}
            if matches(cur, before):
                item["op"] = Op.KEEP
            elif matches(cur, after):
                item["op"] = Op.RESTORE if before.get("exists") else Op.REMOVE
            elif self.force or (path in forced_before and forced_before[path] == cur.get("sha256")):
                if cur.get("exists") and cur.get("type") not in ("f",):
                    raise RevError("DRIFT", f"{path} is {describe(cur)}; rocmrevive will not remove it even "
                                            "with --force: inspect it by hand")
                item["op"] = Op.RESTORE if before.get("exists") else (Op.REMOVE if cur.get("exists") else Op.KEEP)
                item["forced"] = item["op"] != Op.KEEP
            else:
                by = f" (by transaction {self.later[path]}; roll that back first)" if path in self.later else ""
                want = describe({"type": "f", **after}) if after.get("exists") else "no file"
                drift.append(f"{path} ({describe(cur)}, expected {want}){by}")
            items.append(item)
        self._check_unrecorded()
        if drift:
            raise RevError("DRIFT", f"{len(drift)} {'file' if len(drift) == 1 else 'files'} changed since "
                                    f"transaction {self.tx.txid}: {few(drift)}; "
                                    "nothing was changed; `--force` restores them anyway (their current bytes are "
                                    "kept in the backups folder)", details={"drift": drift})
        for item in items:
            b = item["intent"]["before"]
            if item["op"] == Op.RESTORE and not self.st.has_backup(b["sha256"]):
                src = self.st.backup_dir / b["sha256"]
                raise RevError("VERIFY_FAILED", f"the backup of {item['path']} ({self.st.mp(src)}) is missing or "
                                                "damaged; cannot restore it; nothing was changed")
        for item in items:  # a write in a folder that is not the one recorded: refused before any
            if item["op"] != Op.KEEP:
                self.folders.writable(item["real"].parent)
        dirs = {i["real"].parent for i in items if i["op"] != Op.KEEP}
        dirs |= {t.parent for t in self._temps() if self._lstat(t) is not None}
        dirs |= {d.parent for d in self._made_dirs()}
        if dirs:
            dirs.add(self.st.tx_dir)
            check_writable(self.root, dirs, {(i["intent"]["before"]["uid"], i["intent"]["before"]["gid"])
                                              for i in items if i["op"] == Op.RESTORE})
        self.items = items
        return items

    def _check_unrecorded(self) -> None:
        """A planned file without an intent was never renamed (intents are fsynced first); if one
        is in its new state anyway the journal lost records: stop rather than undo half."""
        intents = {it["path"] for it in self.tx.file_intents}
        missing = [f for f in self.tx.planned if f["path"] not in intents and f["op"] != Op.DELETE]
        if not missing:
            return
        curs = observe_all([self._real(f["path"]) for f in missing], self.folders)
        new = [f["path"] for f, cur in zip(missing, curs) if cur.get("exists") and cur.get("sha256") == f.get("sha256")]
        if new:
            raise RevError("INTERRUPTED", f"the journal {self.st.mp(self.tx.path)} of transaction {self.tx.txid} has "
                                          f"no intent for {len(new)} planned file(s) already in their new state "
                                          f"({few(new)}): records were lost; rocmrevive will not undo part of it: "
                                          f"check the files by hand (backups in {self.st.mp(self.st.backup_dir)}), "
                                          f"then move the journal out of {self.st.mp(self.st.tx_dir)}",
                           details={"journal": self.st.mp(self.tx.path), "unrecorded": new})

    def _temps(self) -> set[Path]:
        """The temporaries the journal says were created (a name found taken is not ours), and the
        fixed name older journals used."""
        temps = {self.root.path(t) for t in self.tx.temps if t not in self.tx.foreign and clean_path(t)}
        if "dirs" in (self.tx.begin or {}):  # a journal of random temporaries names every one it made
            return temps
        return temps | {legacy_temp(self.root.path(it["path"])) for it in self.tx.file_intents}

    def _lstat(self, real: Path) -> os.stat_result | None:
        """``lstat`` through the folder's descriptor; None when it or its folder is missing."""
        if not self.folders.exists(real.parent):
            return None
        return self.folders.lstat(real)

    def _made_dirs(self) -> list[Path]:
        """The folders the transaction made that are folders now, newest first."""
        out = []
        for it in reversed(self.tx.mkdir_intents):
            d = self.root.path(it["path"])
            st = self._lstat(d)
            if st is not None and stat.S_ISDIR(st.st_mode):
                out.append(d)
        return out

    def actions(self) -> tuple[Action, ...]:
        out = []
        for i in self.items:
            b = i["intent"]["before"]
            out.append(Action(i["path"], i["op"], i["cur"].get("sha256"),
                              b.get("sha256") if i["op"] != Op.KEEP else i["cur"].get("sha256"),
                              b.get("size"), forced=bool(i["forced"])))
        out += [Action(self.root.machine_path(d), Op.RMDIR) for d in self._made_dirs()]
        return tuple(out)

    def run(self) -> tuple[Action, ...]:
        if not self.items:
            self.survey()
        forced = {i["path"]: i["cur"].get("sha256") for i in self.items if i["forced"]}
        self._write({"type": RecordType.UNDO_BEGIN, "time": now(), "reason": self.reason, "force": self.force,
                     "forced": forced, "files": [i["path"] for i in self.items if i["op"] != Op.KEEP]})
        checkpoint("undo_begin")
        for d in sorted(self._restore()):
            if self.folders.exists(d):
                self.folders.fsync(d)
        removed_dirs = self._remove_folders()
        # the files are as before: dpkg's diversion of a grafted file goes too (divert.follow)
        self.warnings += divert.follow(self.root, self.st.machine, (self.tx.begin or {}).get("meta"),
                                       self.tx.txid, TxState.ROLLED_BACK, strict=False)
        self._write({"type": RecordType.ROLLED_BACK, "time": now(), "reason": self.reason,
                     "restored": [i["path"] for i in self.items if i["op"] == Op.RESTORE],
                     "restored_ident": self.restored,
                     "removed": [i["path"] for i in self.items if i["op"] == Op.REMOVE],
                     "rmdirs": removed_dirs})
        checkpoint("rolled_back")
        return self.actions_done(removed_dirs)

    def _restore(self) -> set[Path]:
        """Restore or remove each file (a forced one's bytes backed up first), then remove the
        temporaries; returns the folders touched. Everything through the folders' descriptors."""
        touched: set[Path] = set()
        restores = [i for i in self.items if i["op"] == Op.RESTORE]
        temps = {i["path"]: i["real"].parent / temp_name(i["real"].name) for i in restores}
        if temps:  # recorded before they are created, so a recover removes them after a kill
            self._write({"type": RecordType.STAGE, "temps": [self.root.machine_path(t) for t in temps.values()]})
        for i in self.items:
            if i["op"] == Op.KEEP:
                continue
            real, b, cur = i["real"], i["intent"]["before"], i["cur"]
            if i["forced"] and cur.get("exists"):
                self.st.backup(self.folders.open_file(real), cur["sha256"], i["path"])
                self.warnings.append(f"{i['path']} had changed; its bytes are kept as "
                                     f"{self.st.mp(self.st.backup_dir / cur['sha256'])}")
            if i["op"] == Op.RESTORE:
                tmp = temps[i["path"]]
                synced: list[list[int]] = []
                try:
                    fill_temp(self.st.open_backup(b["sha256"]), self.folders.open_temp(tmp), mode=b["mode"],
                              uid=b["uid"], gid=b["gid"], expect_sha256=b["sha256"], mtime_ns=b.get("mtime_ns"),
                              synced=lambda st: synced.append(_ident(st)))
                    self.folders.rename(tmp, real)
                except BaseException:
                    with contextlib.suppress(OSError):
                        self.folders.unlink(tmp)
                    raise
                # the file the undo wrote, as the apply records its own (apply._written): only when
                # what is at the path now is still the temporary it filled and synced
                with contextlib.suppress(OSError):
                    st = self.folders.lstat(real)
                    if st is not None and synced and _ident(st) == synced[0]:
                        self.restored[i["path"]] = synced[0]
                self.progress(b.get("size") or 0)
            elif i["op"] == Op.REMOVE:
                self.folders.unlink(real)
            touched.add(real.parent)
            checkpoint("undo")
        for t in sorted(self._temps()):
            if self._remove_temp(t):
                touched.add(t.parent)
                checkpoint("undo_temps")
        return touched

    def _remove_temp(self, t: Path) -> bool:
        """Remove one temporary the journal names, through its folder's descriptor: a file or a
        link (ours, or left where ours would be), never a folder or anything else someone planted
        at the name (left with a warning: finding 5 of issue 26)."""
        st = self._lstat(t)
        if st is None:
            return False
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) or t.parent in self.folders.replaced:
            self.warnings.append(f"left {self.root.machine_path(t)} in place: not a temporary file rocmrevive "
                                 "made (a folder or other file there, or its folder was replaced); remove it by hand")
            return False
        self.folders.unlink(t)
        return True

    def _remove_folders(self) -> list[str]:
        """Remove the folders the transaction made, newest first, when empty and still the folder it
        made (its recorded identity); returns them."""
        removed_dirs = []
        for d in self._made_dirs():
            mp = self.root.machine_path(d)
            want = self.tx.dir_ids.get(mp)
            st = self.folders.lstat(d)
            if d.parent in self.folders.replaced or (want is not None and st is not None and st.st_ino != want[1]):
                self.warnings.append(f"left the folder {mp} in place: it is not the folder rocmrevive made")
                continue
            try:
                self.folders.rmdir(d)
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    self.warnings.append(f"left the folder {mp} in place: it holds files rocmrevive did not put there")
                    continue
                raise
            self.folders.fsync(d.parent)
            removed_dirs.append(mp)
            checkpoint("rmdir")
        return removed_dirs

    def actions_done(self, removed_dirs: list[str]) -> tuple[Action, ...]:
        acts = tuple(a for a in self.actions() if a.op != Op.RMDIR)
        return acts + tuple(Action(d, Op.RMDIR) for d in removed_dirs)


# rollback ------------------------------------------------------------------------------------
def _select(txs: list[JournalEntry], txid: str | None, st: StateDir) -> JournalEntry | None:
    if txid is None:
        committed = [t for t in txs if t.state is TxState.COMMITTED]
        return committed[-1] if committed else None
    exact = [t for t in txs if t.txid == txid]
    if not exact and txid.isdigit():
        exact = [t for t in txs if txid_seq(t.txid) == int(txid)]
    if not exact:
        exact = [t for t in txs if t.txid.startswith(txid)]
    if len(exact) != 1:
        what = "matches several transactions" if exact else "is not a transaction"
        raise RevError("USAGE", f"{txid} {what} in {st.mp(st.tx_dir)}; `rocmrevive status` lists them")
    return exact[0]


def rollback(root, txid: str | None = None, *, force: bool = False, state_dir: str = DEFAULT_STATE_DIR,
             dry_run: bool = False, progress: Progress | None = None) -> TxResult:
    """Undo a committed transaction (default: the last one) byte for byte. Every file's hash is
    checked first: a file changed since (drift) stops it with RevError("DRIFT") naming the files,
    unless ``force``.

        rollback(root)            # the last install
        rollback(root, "0003")    # a named one

    Journals read: the one undone and, for a named one, the committed ones after it (a file a
    later transaction replaced again is named in the drift message); the others are known from
    ``final-journals`` (``StateDir.scan``), so the cost does not grow with the history. A journal
    is read once per call."""
    st = StateDir(root, state_dir)
    if not dry_run:
        pre = _select(st.scan(), txid, st)
        if pre is None or pre.state is TxState.ROLLED_BACK:  # nothing to do: answer without taking the lock
            dry_run = True
    with (contextlib.nullcontext() if dry_run else st.lock()):
        if dry_run:
            st.probe_lock()
        check_package_managers(root)
        entries = st.scan(remember=not dry_run)
        refuse_pending(st, pending=[e.record for e in entries if e.record is not None and e.record.pending])
        sel = _select(entries, txid, st)
        if sel is None:
            return TxResult(None, False, (), None, None, TxOutcome.NOTHING, ["no committed transaction to roll back"])
        tx = st.load_entry(sel)
        jpath = st.mp(tx.path)
        if tx.state is TxState.ROLLED_BACK:
            when = (tx.rolled_back or {}).get("time", "")
            return TxResult(tx.txid, False, (), jpath, tx.tree, TxOutcome.ROLLED_BACK,
                            [f"transaction {tx.txid} was already rolled back {when}".rstrip()])
        later = {}
        for e in entries:
            if e.state is TxState.COMMITTED and txid_seq(e.txid) > txid_seq(tx.txid):
                for f in st.load_entry(e).planned:
                    later[f["path"]] = e.txid
        with expected_errors(root, "; nothing was changed"):
            undo = Undo(root, st, tx, None, reason="rollback", force=force, later=later, progress=progress)
        try:
            return _rollback_run(root, undo, dry_run)
        finally:
            undo.close()


def _rollback_run(root, undo: Undo, dry_run: bool) -> TxResult:
    tx, jpath = undo.tx, undo.st.mp(undo.tx.path)
    with expected_errors(root, "; nothing was changed"):
        undo.survey()
    if dry_run:
        acts = undo.actions()
        return TxResult(tx.txid, any(a.op != Op.KEEP for a in acts), acts, jpath, tx.tree, TxOutcome.DRY_RUN)
    undo.journal = Journal.reopen(tx.path)
    try:
        acts = undo.run()
    except RevError:
        raise
    except (OSError, HashMismatch) as exc:
        err = as_rev_error(exc, root)
        raise RevError("INTERRUPTED", f"rollback of {tx.txid} stopped: {err.message}; fix that and run "
                                      "`rocmrevive recover` to finish it") from exc
    finally:
        undo.journal.close()
    if not tx.damaged:  # as read under the lock; the records now end with the rolled_back written here
        undo.st.remember_final(TxRecord.from_records(tx.txid, tx.path, undo.journal.records, torn=False))
    return TxResult(tx.txid, any(a.op != Op.KEEP for a in acts), acts, jpath, tx.tree, TxOutcome.ROLLED_BACK,
                        undo.warnings)


# recovery ------------------------------------------------------------------------------------
def recover_pending(root, *, state_dir: str = DEFAULT_STATE_DIR, force: bool = False,
                    dry_run: bool = False) -> list[TxResult]:
    """Finish every interrupted transaction, newest first: roll forward when every planned file is
    already in its new state, else undo it (a rollback that was cut short is completed)."""
    st = StateDir(root, state_dir)
    results = []
    if not dry_run and not st.load_pending():
        dry_run = True  # nothing to recover: check the locks without taking (or creating) ours
    with (contextlib.nullcontext() if dry_run else st.lock()), expected_errors(root):
        if dry_run:
            st.probe_lock()
        check_package_managers(root)
        for tx in reversed(st.load_pending(remember=not dry_run)):
            results.append(_recover_one(root, st, tx, force=force, dry_run=dry_run))
    return results


def _recover_one(root, st: StateDir, tx: TxRecord, *, force: bool, dry_run: bool) -> TxResult:
    refuse_damaged(st, tx)  # a journal is created with its begin, so none is legitimately empty
    undo = Undo(root, st, tx, None, reason="recover", force=force or bool((tx.undo or {}).get("force")))
    try:
        return _recover_with(undo, dry_run)
    finally:
        undo.close()


def _recover_with(undo: Undo, dry_run: bool) -> TxResult:
    root, st, tx = undo.root, undo.st, undo.tx
    jpath = st.mp(tx.path)
    if tx.phase == "apply" and _all_in_place(undo):
        intents = {it["path"] for it in tx.file_intents}
        lost = [f["path"] for f in tx.planned if f["path"] not in intents]
        if lost:  # intents are fsynced before any rename: every file in place without one means lost records
            raise RevError("INTERRUPTED", f"the journal {jpath} of transaction {tx.txid} has no intent for "
                                          f"{len(lost)} of its {len(tx.planned)} planned file(s), which are all in "
                                          f"their new state ({few(lost)}): records were lost, and completing it "
                                          f"would make a later rollback undo only part of it; check the files by "
                                          f"hand, then move the journal out of {st.mp(st.tx_dir)}",
                           details={"journal": jpath, "unrecorded": lost})
        acts = tuple(Action(f["path"], f["op"], None, f.get("sha256"), f.get("size"), f.get("source"))
                     for f in tx.planned)
        if dry_run:
            return TxResult(tx.txid, False, acts, jpath, tx.tree, TxOutcome.DRY_RUN)
        with Journal.reopen(tx.path) as j:
            for t in sorted(undo._temps()):
                undo._remove_temp(t)
            for d in sorted({root.path(f["path"]).parent for f in tx.planned}):
                undo.folders.fsync(d)
            j.write(*[_forward_done(undo, f) for f in tx.planned if f["path"] not in tx.done])
            warnings = divert.follow(root, st.machine, (tx.begin or {}).get("meta"), tx.txid, TxState.COMMITTED,
                                     strict=False)
            j.write({"type": RecordType.COMMIT, "time": now(), "files": len(tx.planned), "recovered": True})
            checkpoint("forward")
        return TxResult(tx.txid, False, acts, jpath, tx.tree, TxOutcome.ROLLED_FORWARD, warnings)
    undo.survey()
    if dry_run:
        acts = undo.actions()
        return TxResult(tx.txid, any(a.op != Op.KEEP for a in acts), acts, jpath, tx.tree, TxOutcome.DRY_RUN)
    with Journal.reopen(tx.path) as j:
        undo.journal = j
        acts = undo.run()
    return TxResult(tx.txid, any(a.op != Op.KEEP for a in acts), acts, jpath, tx.tree, TxOutcome.ROLLED_BACK,
                    undo.warnings)


def _forward_done(undo: Undo, f: dict) -> dict:
    """The done record a roll-forward writes for a planned file (with the identity of the file in
    place, as an apply's own done records have)."""
    rec = {"type": RecordType.DONE, "op": f["op"], "path": f["path"], "sha256": f.get("sha256")}
    if f["op"] != Op.DELETE:
        st = undo.folders.lstat(undo.root.path(f["path"]))
        if st is not None:
            rec["ident"] = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    return rec


def _all_in_place(undo: Undo) -> bool:
    tx = undo.tx
    curs = observe_all([undo._real(f["path"]) for f in tx.planned], undo.folders)
    for f, cur in zip(tx.planned, curs):
        want = {"exists": False} if f["op"] == Op.DELETE else {"exists": True, "sha256": f.get("sha256")}
        if not matches(cur, want):
            return False
    return True


def _ident(st: os.stat_result) -> list[int]:
    """[dev, ino, size, mtime_ns]: a file's identity as journals record it."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
