"""Apply a plan to a tree as one transaction.

The order (each journal group fsynced before the actions it describes; see ``journal.py`` for the
records and ``docs/transactions.md`` for the reasoning):

    lock → refuse if apt/dpkg busy or a transaction is pending → preflight (paths, tree unchanged
    since the plan, writable, free space) → survey (open every folder written, O_NOFOLLOW from the
    root, record its device/inode: ``folders.Folders``) → begin → back up replaced/deleted files
    into backups/<sha256> → mkdir (intent first) → stage temporaries ``.<name>.<random>.rocmrevive-new``
    (names recorded, then created O_EXCL; copy + sha256 check + owner/mode + fsync, in parallel) →
    intents → dpkg-divert (a graft of a package-owned file: ``divert.follow``) → rename each into
    place → fsync folders → done (with the identity of each file written) → commit

Every create, rename, link and unlink is relative to the surveyed folders' descriptors: a folder
swapped for a link after the survey is never followed.

Any error undoes what was done, from the journal (``undo.Undo``), and reports one line; a kill
leaves a journal that ``recover_pending`` completes or undoes.

    res = apply_plan(root, plan)       # TxResult(txid, changed, actions, journal_path)
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import os
import platform
import signal
import threading
from pathlib import Path

from rocmrevive import __version__
from rocmrevive.errors import RevError
from rocmrevive.invocation import command_line
from rocmrevive.txn import divert
from rocmrevive.txn.folders import Folders
from rocmrevive.txn.fsutil import fill_temp
from rocmrevive.txn.journal import JOURNAL_VERSION, Journal, RecordType, TxRecord, TxState, temp_name
from rocmrevive.txn.lock import check_package_managers
from rocmrevive.txn.observe import WORKERS
from rocmrevive.txn.plan import Op, Plan
from rocmrevive.txn.preflight import Prepared, Step, check_space, check_writable, nearest_existing, prepare
from rocmrevive.txn.result import (
    Action,
    Progress,
    TxOutcome,
    TxResult,
    as_rev_error,
    expected_errors,
    few,
    stat_identity,
)
from rocmrevive.txn.state import DEFAULT_STATE_DIR, StateDir, now, refuse_pending
from rocmrevive.txn.testseam import checkpoint
from rocmrevive.txn.undo import Undo

_TEMP_ROUNDS = 5  # draws of fresh temporary names before giving up (a name is taken only on purpose)


def apply_plan(root, plan: Plan, *, state_dir: str = DEFAULT_STATE_DIR, dry_run: bool = False,
               progress: Progress | None = None) -> TxResult:
    """Apply ``plan`` to its tree as one journaled transaction.

    Idempotent: when every file is already as planned nothing is written, not even a journal
    (``changed=False``, ``txid=None``). ``dry_run`` runs every preflight check (paths, tree
    unchanged since the plan, writable, free space, locks) and writes nothing.

        res = apply_plan(Root("/"), plan); res.txid, res.changed, res.journal_path
    """
    st = StateDir(root, state_dir)
    progress = progress or (lambda n: None)
    if not dry_run:
        # every check first, without the lock: a refused or no-op apply writes nothing, not even
        # the lock file; the checks run again under the lock before anything is written
        pre = apply_plan(root, plan, state_dir=state_dir, dry_run=True)
        if not pre.changed:
            return pre
    lock = contextlib.nullcontext() if dry_run else st.lock()
    with lock, expected_errors(root, "; nothing was changed"):
        if dry_run:
            st.probe_lock()
        check_package_managers(root)
        refuse_pending(st, remember=not dry_run)
        prep = prepare(root, plan)
        todo = prep.todo
        actions = tuple(s.action() for s in prep.steps)
        if not todo:
            return TxResult(None, False, actions, None, prep.tree, TxOutcome.UNCHANGED)
        dirs = {d for d in {s.real.parent for s in todo} if d.exists()}
        dirs |= {nearest_existing(d) for d, *_ in prep.mkdirs}
        dirs.add(nearest_existing(st.real))
        check_writable(root, dirs, {(s.after["uid"], s.after["gid"]) for s in todo if s.op != Op.DELETE}
                        | {(u, g) for _, _, u, g in prep.mkdirs})
        check_space(root, st, prep)
        actions = tuple(Action(root.machine_path(d), Op.MKDIR) for d, *_ in prep.mkdirs) + actions
        if dry_run:
            return TxResult(None, True, actions, None, prep.tree, TxOutcome.DRY_RUN)
        with Folders(root) as folders:
            survey(folders, prep)
            return _Apply(root, st, plan, prep, progress, folders).run(actions)


def survey(folders: Folders, prep: Prepared) -> None:
    """Open every folder the transaction writes in (each file's folder, each new folder's nearest
    existing parent) from the root, ``O_NOFOLLOW`` per component, recording its device/inode: a
    folder swapped for a link since the preflight is refused here, before anything is written."""
    made = {d for d, *_ in prep.mkdirs}
    for d in sorted({s.real.parent for s in prep.todo} | {d.parent for d in made}):
        if d not in made:
            try:
                folders.fd(d)
            except (FileNotFoundError, NotADirectoryError):
                raise RevError("DRIFT", f"the folder {folders.root.machine_path(d)} went away since the "
                                        "preflight; nothing was changed, plan again") from None


class _Apply:
    def __init__(self, root, st: StateDir, plan: Plan, prep: Prepared, progress: Progress, folders: Folders):
        self.root, self.st, self.plan, self.prep, self.progress = root, st, plan, prep, progress
        self.folders = folders
        self.mp = root.machine_path
        self.warnings: list[str] = []
        self.idents: dict[str, list[int]] = {}  # path -> [dev, ino, size, mtime_ns] of the file put there

    def run(self, actions: tuple[Action, ...]) -> TxResult:
        st, prep = self.st, self.prep
        st.ensure()
        txid = st.next_txid()
        jpath = st.tx_dir / f"{txid}.jsonl"
        with st.open("tx", create=True) as tx_dir:
            journal = Journal.create(tx_dir, jpath.name, self._begin_record(txid))
        try:
            self._run(journal, txid)
        except BaseException as exc:
            err = self._fail(exc, journal, txid)
            if err is exc:
                raise
            raise err from exc
        finally:
            journal.close()
        st.remember_final(TxRecord.from_records(txid, jpath, journal.records, torn=False))
        return TxResult(txid, True, actions, self.mp(jpath), prep.tree, TxOutcome.COMMITTED, self.warnings,
                        self._written())

    def _written(self) -> dict[str, tuple[int, ...]]:
        """The stat identity of each file written, still under the lock: a rename keeps the inode,
        size and mtime the temporary had after its fsync; the lstat (through the folder's
        descriptor) adds the ctime the rename set. ``TxResult.still_written`` lets a verify after
        take these as the bytes staged and hashed."""
        out = {}
        for s in self.prep.todo:
            with contextlib.suppress(OSError):
                st = self.folders.lstat(s.real)
                ident = stat_identity(st) if st is not None else ()
                if s.synced and ident[:4] == s.synced:
                    out[s.path] = ident
        return out

    def _begin_record(self, txid: str) -> dict:
        prep = self.prep
        return {"type": RecordType.BEGIN, "v": JOURNAL_VERSION, "txid": txid, "time": now(),
                "tool": _tool_version(), "argv": command_line()[:50], "host": _host_facts(self.root),
                "root": str(self.root.base), "tree": prep.tree, "tree_given": prep.tree_given,
                "meta": self.plan.meta,
                "files": [{"path": s.path, "op": s.op, "sha256": s.after.get("sha256"), "size": s.after.get("size"),
                           "source": s.source} for s in prep.todo],
                "mkdirs": [self.mp(d) for d, *_ in prep.mkdirs],
                "dirs": {self.mp(d): list(i) for d, i in self.folders.ids.items()}}

    def _run(self, journal: Journal, txid: str) -> None:
        prep, st, mp, folders = self.prep, self.st, self.mp, self.folders
        todo = prep.todo
        checkpoint("begin")  # the begin record came with the journal (Journal.create)

        backed = False
        for s in todo:
            if s.op != Op.CREATE:
                s.backup = st.backup(folders.open_file(s.real), s.before["sha256"], s.path)
                backed = True
                checkpoint("backup")
        if backed:
            with st.open("backups", create=True) as bd:
                bd.fsync()

        if prep.mkdirs:
            journal.write(*[{"type": RecordType.INTENT, "op": Op.MKDIR, "path": mp(d), "mode": m, "uid": u, "gid": g}
                            for d, m, u, g in prep.mkdirs])
            made = []
            for d, m, u, g in prep.mkdirs:
                made.append({"type": RecordType.DONE, "op": Op.MKDIR, "path": mp(d),
                             "id": list(folders.mkdir(d, m, u, g))})
                folders.fsync(d.parent)
                checkpoint("mkdir")
            journal.write(*made)

        staged = [s for s in todo if s.op != Op.DELETE]
        if staged:
            self._stage_all(journal, staged)

        journal.write(*[{"type": RecordType.INTENT, "op": s.op, "path": s.path, "before": s.before, "after": s.after,
                         "backup": s.backup, "temp": mp(s.temp) if s.temp else None, "source": s.source}
                        for s in todo])
        checkpoint("intent")
        # a package-owned file is diverted before the graft takes its place (divert.follow)
        self.warnings = divert.follow(self.root, st.machine, self.plan.meta, txid, TxState.COMMITTED, strict=True)
        for s in todo:
            if s.op == Op.DELETE:
                folders.unlink(s.real, missing_ok=False)
            elif s.op == Op.CREATE:
                _place_new(folders, s.temp_file, s.real, s.path)
            else:
                folders.rename(s.temp_file, s.real)
            checkpoint("rename")
        for d in sorted({s.real.parent for s in todo}):
            folders.fsync(d)
            checkpoint("dirsync")
        journal.write(*[self._done(s) for s in todo])
        checkpoint("done")
        journal.write({"type": RecordType.COMMIT, "time": now(), "files": len(todo)})
        checkpoint("commit")

    def _done(self, s: Step) -> dict:
        """The done record of a step: for a file written, the identity of the inode now at its
        path (``status`` compares it with what is there later: an escape or a swap shows)."""
        rec = {"type": RecordType.DONE, "op": s.op, "path": s.path, "sha256": s.after.get("sha256")}
        if s.op != Op.DELETE:
            st = self.folders.lstat(s.real)
            if st is not None:
                rec["ident"] = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
        return rec

    def _stage_all(self, journal: Journal, staged: list[Step]) -> None:
        """Create every temporary (random names, recorded before they are created, ``O_EXCL``),
        then fill them in parallel."""
        fds = self._create_temps(journal, staged)

        def one(s: Step) -> None:
            a = s.after
            fill_temp(s.staged_file, fds.pop(s.path), mode=a["mode"], uid=a["uid"], gid=a["gid"],
                      expect_sha256=a["sha256"], synced=lambda st: setattr(s, "synced", stat_identity(st)[:4]))

        workers = max(1, min(WORKERS, len(staged)))
        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(one, s) for s in staged]
                try:
                    for s, f in zip(staged, futures):
                        f.result()
                        checkpoint("stage")
                        self.progress(s.after["size"])
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise  # leaving the with-block waits for running copies before any undo
        finally:
            for fd in fds.values():  # temporaries a cancelled copy never filled
                os.close(fd)

    def _create_temps(self, journal: Journal, staged: list[Step]) -> dict[str, int]:
        """path -> descriptor of its new temporary. A name found taken (someone planted it, having
        read the journal) is recorded as ``foreign`` and another one drawn: a planted file or folder
        never fails the install nor gets removed by an undo."""
        fds: dict[str, int] = {}
        todo: list[Step] = staged
        foreign: list[str] = []
        try:
            for _ in range(_TEMP_ROUNDS):
                temps = {s.path: s.real.parent / temp_name(s.real.name) for s in todo}
                for s in todo:
                    s.temp = temps[s.path]
                rec = {"type": RecordType.STAGE, "temps": [self.mp(temps[s.path]) for s in todo]}
                journal.write({**rec, "foreign": foreign} if foreign else rec)
                taken = []
                for s in todo:
                    try:
                        fds[s.path] = self.folders.open_temp(temps[s.path])
                    except FileExistsError:
                        taken.append(s)
                if not taken:
                    return fds
                todo, foreign = taken, [self.mp(temps[s.path]) for s in taken]
        except BaseException:
            for fd in fds.values():
                os.close(fd)
            raise
        for fd in fds.values():
            os.close(fd)
        raise RevError("DRIFT", f"the temporary names rocmrevive drew for {few([s.path for s in todo])} were taken "
                                f"{_TEMP_ROUNDS} times in a row: another process is creating files in that folder; "
                                "stop it and retry")

    def _fail(self, exc: BaseException, journal: Journal, txid: str) -> BaseException:
        """Undo what was done and return the error to raise."""
        err = as_rev_error(exc, self.root)
        tx = TxRecord.from_records(txid, journal.path, journal.records)
        why = err.message if err else ("interrupted by the user" if isinstance(exc, KeyboardInterrupt) else repr(exc))
        try:
            with _no_second_interrupt():  # a second Ctrl-C must not cut the undo short
                Undo(self.root, self.st, tx, journal, reason=f"apply failed: {why}", best_effort_journal=True,
                     folders=self.folders).run()
        except BaseException as exc2:  # noqa: BLE001 - whatever stopped the undo, the tree may be mixed: only recover may continue
            what = f"{type(exc2).__name__}: {exc2}" if str(exc2) else type(exc2).__name__
            return RevError("INTERRUPTED", f"{why}; undoing transaction {txid} failed too ({what}); "
                                           "fix that and run `rocmrevive recover`", details={"pending": [txid]})
        if err is None:
            setattr(exc, "rocmrevive_undone", txid)  # the CLI says which transaction the interrupt undid
            return exc
        return RevError(err.code, f"{err.message}; transaction {txid} was undone, the tree is unchanged",
                        details=err.details)


@contextlib.contextmanager
def _no_second_interrupt():
    """Ignore SIGINT while undoing (main thread only; elsewhere signals never arrive anyway)."""

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)



def _place_new(folders: Folders, temp: Path, dest: Path, shown: str) -> None:
    """Rename ``temp`` to ``dest`` unless something appeared at ``dest`` since the preflight
    (a plain rename would silently clobber it): link() refuses an existing name, atomically.
    Both names are taken relative to the folder's descriptor."""
    fd = folders.writable(dest.parent)
    try:
        os.link(temp.name, dest.name, src_dir_fd=folders.writable(temp.parent), dst_dir_fd=fd, follow_symlinks=False)
    except FileExistsError as exc:
        raise RevError("DRIFT", f"{shown} appeared while rocmrevive was installing it; retry") from exc
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        folders.rename(temp, dest)  # a filesystem without hard links
        return
    folders.unlink(temp)


def _tool_version() -> str:
    return f"rocmrevive {__version__}"


def _host_facts(root) -> dict:
    facts = {"kernel": platform.release(), "python": platform.python_version()}
    with contextlib.suppress(OSError):
        for line in root.path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                facts["distro"] = line.split("=", 1)[1].strip().strip('"')
    return facts

