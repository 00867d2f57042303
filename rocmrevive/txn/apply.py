"""Apply a plan to a tree as one transaction.

The order (each journal group fsynced before the actions it describes; see ``journal.py`` for the
records and ``docs/transactions.md`` for the reasoning):

    lock → refuse if apt/dpkg busy or a transaction is pending → preflight (paths, tree unchanged
    since the plan, writable, free space) → begin → back up replaced/deleted files into
    backups/<sha256> → mkdir (intent first) → stage temporaries ``.<name>.rocmrevive-new`` next to
    their targets (copy + sha256 check + owner/mode + fsync, in parallel) → intents → dpkg-divert
    (a graft of a package-owned file: ``divert.follow``) → rename each into place → fsync folders
    → done → commit

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
import sys
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.txn import divert
from rocmrevive.txn.fsutil import fsync_dir, stage_copy
from rocmrevive.txn.journal import JOURNAL_VERSION, Journal, RecordType, TxRecord, TxState
from rocmrevive.txn.lock import check_package_managers
from rocmrevive.txn.observe import WORKERS, temp_for
from rocmrevive.txn.plan import Op, Plan
from rocmrevive.txn.preflight import Prepared, Step, check_space, check_writable, nearest_existing, prepare
from rocmrevive.txn.result import Progress, TxOutcome, TxResult, as_rev_error, expected_errors, stat_identity
from rocmrevive.txn.state import DEFAULT_STATE_DIR, StateDir, now, refuse_pending
from rocmrevive.txn.testseam import checkpoint
from rocmrevive.txn.undo import Undo


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
        refuse_pending(st)
        prep = prepare(root, plan)
        todo = prep.todo
        actions = [s.action() for s in prep.steps]
        if not todo:
            return TxResult(None, False, actions, None, prep.tree, TxOutcome.UNCHANGED)
        dirs = {s.real.parent for s in todo if s.real.parent.exists()}
        dirs |= {nearest_existing(d) for d, *_ in prep.mkdirs}
        dirs.add(nearest_existing(st.real))
        check_writable(root, dirs, {(s.after["uid"], s.after["gid"]) for s in todo if s.op != Op.DELETE}
                        | {(u, g) for _, _, u, g in prep.mkdirs})
        check_space(root, st, prep)
        actions = [{"path": root.machine_path(d), "op": Op.MKDIR, "before": None, "after": None}
                   for d, *_ in prep.mkdirs] + actions
        if dry_run:
            return TxResult(None, True, actions, None, prep.tree, TxOutcome.DRY_RUN)
        return _Apply(root, st, plan, prep, progress).run(actions)


class _Apply:
    def __init__(self, root, st: StateDir, plan: Plan, prep: Prepared, progress: Progress):
        self.root, self.st, self.plan, self.prep, self.progress = root, st, plan, prep, progress
        self.mp = root.machine_path
        self.warnings: list[str] = []

    def run(self, actions: list[dict]) -> TxResult:
        st, prep = self.st, self.prep
        st.ensure()
        txid = st.next_txid()
        jpath = st.tx_dir / f"{txid}.jsonl"
        for s in prep.todo:
            if s.op != Op.DELETE:
                s.temp = temp_for(s.real)
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
        return TxResult(txid, True, actions, self.mp(jpath), prep.tree, TxOutcome.COMMITTED, self.warnings,
                        self._written())

    def _written(self) -> dict[str, tuple[int, ...]]:
        """The stat identity of each file written, still under the lock: a rename keeps the inode,
        size and mtime the temporary had after its fsync; the lstat adds the ctime the rename set.
        ``TxResult.still_written`` lets a verify after take these as the bytes staged and hashed."""
        out = {}
        for s in self.prep.todo:
            with contextlib.suppress(OSError):
                ident = stat_identity(os.lstat(s.real))
                if s.synced and ident[:4] == s.synced:
                    out[s.path] = ident
        return out

    def _begin_record(self, txid: str) -> dict:
        prep = self.prep
        return {"type": RecordType.BEGIN, "v": JOURNAL_VERSION, "txid": txid, "time": now(),
                "tool": _tool_version(), "argv": sys.argv[:50], "host": _host_facts(self.root),
                "root": str(self.root.base), "tree": prep.tree, "tree_given": prep.tree_given,
                "meta": self.plan.meta,
                "files": [{"path": s.path, "op": s.op, "sha256": s.after.get("sha256"), "size": s.after.get("size"),
                           "source": s.source} for s in prep.todo],
                "mkdirs": [self.mp(d) for d, *_ in prep.mkdirs]}

    def _run(self, journal: Journal, txid: str) -> None:
        prep, st, mp = self.prep, self.st, self.mp
        todo = prep.todo
        checkpoint("begin")  # the begin record came with the journal (Journal.create)

        backed = False
        for s in todo:
            if s.op != Op.CREATE:
                s.backup = st.backup(s.real, s.before["sha256"])
                backed = True
                checkpoint("backup")
        if backed:
            with st.open("backups", create=True) as bd:
                bd.fsync()

        if prep.mkdirs:
            journal.write(*[{"type": RecordType.INTENT, "op": Op.MKDIR, "path": mp(d), "mode": m, "uid": u, "gid": g}
                            for d, m, u, g in prep.mkdirs])
            for d, m, u, g in prep.mkdirs:
                os.mkdir(d, 0o700)
                if (u, g) != (os.geteuid(), os.getegid()):
                    os.chown(d, u, g)
                os.chmod(d, m)
                fsync_dir(d.parent)
                checkpoint("mkdir")
            journal.write(*[{"type": RecordType.DONE, "op": Op.MKDIR, "path": mp(d)} for d, *_ in prep.mkdirs])

        staged = [s for s in todo if s.op != Op.DELETE]
        if staged:
            journal.write({"type": RecordType.STAGE, "temps": [mp(s.temp) for s in staged]})
            self._stage_all(staged)

        journal.write(*[{"type": RecordType.INTENT, "op": s.op, "path": s.path, "before": s.before, "after": s.after,
                         "backup": s.backup, "temp": mp(s.temp) if s.temp else None, "source": s.source}
                        for s in todo])
        checkpoint("intent")
        # a package-owned file is diverted before the graft takes its place (divert.follow)
        self.warnings = divert.follow(self.root, st.machine, self.plan.meta, txid, TxState.COMMITTED, strict=True)
        for s in todo:
            if s.op == Op.DELETE:
                os.unlink(s.real)
            elif s.op == Op.CREATE:
                _place_new(s.temp, s.real, mp(s.real))
            else:
                os.replace(s.temp, s.real)
            checkpoint("rename")
        for d in sorted({s.real.parent for s in todo}):
            fsync_dir(d)
            checkpoint("dirsync")
        journal.write(*[{"type": RecordType.DONE, "op": s.op, "path": s.path, "sha256": s.after.get("sha256")}
                        for s in todo])
        checkpoint("done")
        journal.write({"type": RecordType.COMMIT, "time": now(), "files": len(todo)})
        checkpoint("commit")

    def _stage_all(self, staged: list[Step]) -> None:
        def one(s: Step) -> None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(s.temp)  # a leftover of ours (the name is reserved)
            a = s.after
            stage_copy(s.staged, s.temp, mode=a["mode"], uid=a["uid"], gid=a["gid"], expect_sha256=a["sha256"],
                       synced=lambda st: setattr(s, "synced", stat_identity(st)[:4]))

        workers = max(1, min(WORKERS, len(staged)))
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

    def _fail(self, exc: BaseException, journal: Journal, txid: str) -> BaseException:
        """Undo what was done and return the error to raise."""
        err = as_rev_error(exc, self.root)
        tx = TxRecord.from_records(txid, journal.path, journal.records)
        why = err.message if err else ("interrupted by the user" if isinstance(exc, KeyboardInterrupt) else repr(exc))
        try:
            with _no_second_interrupt():  # a second Ctrl-C must not cut the undo short
                Undo(self.root, self.st, tx, journal, reason=f"apply failed: {why}", best_effort_journal=True).run()
        except BaseException as exc2:  # the tree may be mixed: only recover may continue
            what = f"{type(exc2).__name__}: {exc2}" if str(exc2) else type(exc2).__name__
            return RevError("INTERRUPTED", f"{why}; undoing transaction {txid} failed too ({what}); "
                                           "fix that and run `rocmrevive recover`", details={"pending": [txid]})
        if err is None:
            exc.rocmrevive_undone = txid  # the CLI says which transaction the interrupt undid
            return exc
        return RevError(err.code, f"{err.message}; transaction {txid} was undone, the tree is unchanged",
                        details=err.details)


@contextlib.contextmanager
def _no_second_interrupt():
    """Ignore SIGINT while undoing (main thread only; elsewhere signals never arrive anyway)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)



def _place_new(temp: Path, dest: Path, shown: str) -> None:
    """Rename ``temp`` to ``dest`` unless something appeared at ``dest`` since the preflight
    (a plain rename would silently clobber it): link() refuses an existing name, atomically."""
    try:
        os.link(temp, dest)
    except FileExistsError as exc:
        raise RevError("DRIFT", f"{shown} appeared while rocmrevive was installing it; retry") from exc
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        os.replace(temp, dest)  # a filesystem without hard links
        return
    os.unlink(temp)



def _tool_version() -> str:
    from rocmrevive import __version__

    return f"rocmrevive {__version__}"


def _host_facts(root) -> dict:
    facts = {"kernel": platform.release(), "python": platform.python_version()}
    with contextlib.suppress(OSError):
        for line in root.path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                facts["distro"] = line.split("=", 1)[1].strip().strip('"')
    return facts

