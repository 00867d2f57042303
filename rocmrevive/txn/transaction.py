"""Apply a plan to a tree as one transaction; roll it back; recover one a crash interrupted.

The order of an apply (each journal group fsynced before the actions it describes; see
``journal.py`` for the records and ``docs/transactions.md`` for the reasoning):

    lock → refuse if apt/dpkg busy or a transaction is pending → preflight (paths, tree unchanged
    since the plan, writable, free space) → begin → back up replaced/deleted files into
    backups/<sha256> → mkdir (intent first) → stage temporaries ``.<name>.rocmrevive-new`` next to
    their targets (copy + sha256 check + owner/mode + fsync, in parallel) → intents → rename each
    into place → fsync folders → done → commit

Any error undoes what was done, from the journal, and reports one line; a kill leaves a journal
that ``find_pending`` reports and ``recover_pending`` completes (every file already in its new
state: roll forward) or undoes. Every undo compares hashes first, so each step is idempotent.

    res = apply_plan(root, plan)                   # TxResult(txid, changed, actions, journal_path)
    rollback(root)                                 # the last committed transaction, byte for byte
    recover_pending(root); find_pending(root); list_transactions(root)
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import os
import platform
import posixpath
import re
import stat
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rocmrevive.errors import RevError
from rocmrevive.txn.fsutil import HashMismatch, fsync_dir, sha256_file, stage_copy
from rocmrevive.fs import Dir
from rocmrevive.txn.journal import JOURNAL_VERSION, TEMP_SUFFIX, Journal, TxRecord
from rocmrevive.txn.lock import TxLock, check_package_managers, is_held
from rocmrevive.txn.plan import Plan
from rocmrevive.txn.testseam import checkpoint

DEFAULT_STATE_DIR = "/var/lib/rocmrevive"
STAGE_WORKERS = 8
Progress = Callable[[int], None]


# results -------------------------------------------------------------------------------------
@dataclass
class TxResult:
    """What a transaction command did. ``actions``: one dict per file/folder with ``path``,
    ``op`` (create, replace, delete, mkdir, unchanged; restore, remove, rmdir, keep), ``before``
    and ``after`` sha256 (None: no file). ``state``: committed, unchanged, dry-run, rolled_back,
    rolled_forward, nothing."""

    txid: str | None
    changed: bool
    actions: list[dict]
    journal_path: str | None  # machine path
    tree: str | None = None
    state: str = ""
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


# where things are ----------------------------------------------------------------------------
def resolve_inside(root, machine_path: str, *, what: str = "path") -> Path:
    """Root.resolve, refusing a symbolic link that leads outside the root (VERIFY_FAILED)."""
    try:
        return root.resolve(machine_path, strict=True, what=what)
    except ValueError as exc:
        raise RevError("VERIFY_FAILED", str(exc)) from None


def _under(p: Path, base: Path) -> bool:
    return p == base or base in p.parents


class StateDir:
    """``<state>/lock``, ``<state>/tx/<txid>.jsonl``, ``<state>/backups/<sha256>`` under the root.

    The folder is opened through ``rocmrevive.fs``: from ``/`` down without following a link
    another user planted, refused when another user could write it (unless
    ``ROCMREVIVE_TRUST_SHARED=1``); the lock, journals and backups are opened relative to it,
    ``O_NOFOLLOW``, never a FIFO or device."""

    def __init__(self, root, state_dir: str = DEFAULT_STATE_DIR):
        self.root = root
        self.machine = "/" + str(state_dir).strip("/")
        self.real = resolve_inside(root, self.machine, what="state folder")
        self.lock_path = self.real / "lock"
        self.tx_dir = self.real / "tx"
        self.backup_dir = self.real / "backups"

    def mp(self, real) -> str:
        return self.root.machine_path(real)

    def lock(self) -> TxLock:
        return TxLock(self.lock_path, display=self.mp(self.lock_path))

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
        return [TxRecord.load(p) for p in sorted(paths, key=lambda p: (_seq(p.stem), p.name))]

    def next_txid(self) -> str:
        seqs = [_seq(n.split(".")[0]) for n in os.listdir(self.tx_dir)] if self.tx_dir.is_dir() else []
        return f"{max(seqs, default=0) + 1:04d}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"


def _seq(txid: str) -> int:
    m = re.match(r"(\d+)", txid)
    return int(m.group(1)) if m else 0


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# observing files -----------------------------------------------------------------------------
def _observe(real: Path) -> dict:
    """The state of one path: {exists: False} or {exists, type, sha256 (files), size, mode, uid,
    gid, mtime_ns}. Never follows a final symlink."""
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        return {"exists": False}
    except NotADirectoryError:
        return {"exists": False}
    kind = "f" if stat.S_ISREG(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else \
        "d" if stat.S_ISDIR(st.st_mode) else "o"
    out = {"exists": True, "type": kind, "size": st.st_size, "mode": stat.S_IMODE(st.st_mode),
           "uid": st.st_uid, "gid": st.st_gid, "mtime_ns": st.st_mtime_ns}
    if kind == "f":
        out["sha256"] = sha256_file(real)[0]
    return out


def _observe_all(reals: list[Path]) -> list[dict]:
    """``_observe`` of many paths, hashing in parallel (hashlib and file reads release the GIL)."""
    if len(reals) < 4:
        return [_observe(r) for r in reals]
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(STAGE_WORKERS, len(reals))) as pool:
        return list(pool.map(_observe, reals))


def _matches(cur: dict, want: dict) -> bool:
    if not want.get("exists"):
        return not cur.get("exists")
    return bool(cur.get("exists")) and cur.get("type") == "f" and cur.get("sha256") == want.get("sha256")


def _describe(cur: dict) -> str:
    if not cur.get("exists"):
        return "missing"
    if cur.get("type") != "f":
        return {"l": "now a symbolic link", "d": "now a folder"}.get(cur.get("type"), "not a regular file")
    return f"sha256 {cur['sha256'][:12]}…"


def _temp_for(real: Path) -> Path:
    return real.parent / f".{real.name}{TEMP_SUFFIX}"


# preflight -----------------------------------------------------------------------------------
@dataclass
class _Step:
    path: str  # resolved machine path
    real: Path
    op: str
    source: str
    staged: Path | None
    before: dict
    after: dict
    in_place: bool = False
    backup: str | None = None
    temp: Path | None = None

    def action(self) -> dict:
        return {"path": self.path, "op": "unchanged" if self.in_place else self.op,
                "before": self.before.get("sha256"), "after": self.after.get("sha256"),
                "size": self.after.get("size"), "source": self.source}


@dataclass
class _Prepared:
    tree_given: str
    tree_real: Path
    tree: str  # resolved machine path
    steps: list[_Step]
    mkdirs: list[tuple[Path, int, int, int]]  # (real, mode, uid, gid), parents first

    @property
    def todo(self) -> list[_Step]:
        return [s for s in self.steps if not s.in_place]


def _template(d: Path, cache: dict) -> tuple[int, int, int]:
    """(mode, uid, gid) for a new file in folder ``d``: what most of its regular files have, else
    the folder's owner with its mode minus the execute bits."""
    if d in cache:
        return cache[d]
    counts: Counter = Counter()
    try:
        with os.scandir(d) as it:
            for e in it:
                if e.name.startswith(".") or e.name.endswith(TEMP_SUFFIX):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    counts[(stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)] += 1
    except FileNotFoundError:
        pass
    if counts:
        best = max(counts.values())
        cache[d] = min(k for k, v in counts.items() if v == best)
    else:
        st = os.stat(d)
        cache[d] = (stat.S_IMODE(st.st_mode) & 0o666, st.st_uid, st.st_gid)
    return cache[d]


def _prepare(root, plan: Plan) -> _Prepared:
    """Map the plan onto the tree and check it still holds: raises DRIFT when the tree changed
    since the plan, VERIFY_FAILED for unsafe paths or bad staged files. Writes nothing."""
    tree_real = resolve_inside(root, plan.tree, what="tree")
    if not tree_real.is_dir():
        raise RevError("DRIFT", f"the tree {plan.tree} is gone (no folder at {root.machine_path(tree_real)}); "
                                "plan again")
    tree = root.machine_path(tree_real)
    given = posixpath.normpath(plan.tree)
    steps: list[_Step] = []
    mkdirs: dict[Path, tuple[int, int, int]] = {}
    templates: dict = {}
    drift: list[str] = []
    located: list[tuple] = []
    for ch in plan.changes:
        rel = posixpath.relpath(posixpath.normpath(ch.dest), given)
        parent_rel, name = posixpath.split(rel)
        if name in ("", ".", "..") or rel.startswith(".."):
            raise RevError("VERIFY_FAILED", f"{ch.dest} is not a file inside the tree {plan.tree}")
        parent = resolve_inside(root, posixpath.join(tree, parent_rel), what="path") if parent_rel else tree_real
        if not _under(parent, tree_real):
            raise RevError("VERIFY_FAILED", f"the folder of {ch.dest} leads outside the tree {plan.tree} "
                                            "(symbolic link); refusing")
        # folders to create, parents first
        missing, p = [], parent
        while not p.exists():
            if os.path.lexists(p):
                raise RevError("VERIFY_FAILED", f"{root.machine_path(p)} is a dangling symbolic link; refusing")
            missing.append(p)
            p = p.parent
        if not p.is_dir():
            raise RevError("DRIFT", f"{root.machine_path(p)} is not a folder; plan again")
        for d in reversed(missing):
            if d not in mkdirs:
                st = os.stat(d.parent) if d.parent.exists() else None
                mode, uid, gid = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) if st else mkdirs[d.parent]
                mkdirs[d] = (mode, uid, gid)
        located.append((ch, parent, parent / name))
    for (ch, parent, real), cur in zip(located, _observe_all([r for _, _, r in located])):
        path = root.machine_path(real)
        if cur["exists"] and cur["type"] != "f":
            kind = {"l": "a symbolic link", "d": "a folder"}.get(cur["type"], "not a regular file")
            raise RevError("VERIFY_FAILED", f"{path} is {kind}; rocmrevive replaces only regular files")
        before = {k: cur[k] for k in ("exists", "sha256", "size", "mode", "uid", "gid", "mtime_ns") if k in cur}
        if ch.op == "delete":
            after = {"exists": False}
        else:
            if cur["exists"]:
                mode, uid, gid = cur["mode"], cur["uid"], cur["gid"]
            elif parent in mkdirs:
                m, uid, gid = mkdirs[parent]
                mode = m & 0o666
            else:
                mode, uid, gid = _template(parent, templates)
            after = {"exists": True, "sha256": ch.sha256, "size": ch.size, "mode": mode, "uid": uid, "gid": gid}
        step = _Step(path, real, ch.op, ch.source, ch.staged, before, after)
        if _matches(cur, after):
            step.in_place = True
        elif ch.op == "create" and cur["exists"]:
            drift.append(f"{path} exists ({_describe(cur)}), the plan expected no file")
        elif ch.op in ("replace", "delete") and not cur["exists"]:
            drift.append(f"{path} is missing, the plan expected a file to {ch.op}")
        elif ch.op in ("replace", "delete") and ch.before_sha256 and cur.get("sha256") != ch.before_sha256:
            drift.append(f"{path} has {_describe(cur)}, the plan expected sha256 {ch.before_sha256[:12]}…")
        if not step.in_place and ch.op != "delete":
            try:
                sst = os.stat(ch.staged)
            except OSError as exc:
                raise RevError("VERIFY_FAILED", f"staged file {ch.staged} for {path} is unreadable "
                                                f"({exc.strerror}); fetch again") from exc
            if not stat.S_ISREG(sst.st_mode) or sst.st_size != ch.size:
                raise RevError("VERIFY_FAILED", f"staged file {ch.staged} for {path} has {sst.st_size} bytes, "
                                                f"the plan says {ch.size}; fetch again")
        steps.append(step)
    if drift:
        raise RevError("DRIFT", f"the tree changed since the plan: {_few(drift)}; nothing was changed, plan again",
                       details={"drift": drift})
    return _Prepared(given, tree_real, tree, steps, [(d, *m) for d, m in mkdirs.items()])


def _few(items: list[str], n: int = 3) -> str:
    return "; ".join(items[:n]) + (f" (and {len(items) - n} more)" if len(items) > n else "")


def _nearest_existing(p: Path) -> Path:
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _check_writable(root, dirs: set[Path], owners: set[tuple[int, int]]) -> None:
    eff = os.access in os.supports_effective_ids  # the effective uid decides, as for the writes
    for d in sorted(dirs):
        if os.access(d, os.W_OK | os.X_OK, effective_ids=eff):
            continue
        ro = bool(os.statvfs(d).f_flag & os.ST_RDONLY)
        if ro:
            why, hint = "read-only file system", "remount it read-write and retry"
        elif os.geteuid() == 0:
            why, hint = "not writable even by root", "check its immutable attribute (lsattr -d) and retry"
        else:
            why, hint = "permission denied", "run as root (sudo)"
        raise RevError("PERMISSION", f"cannot write to {root.machine_path(d)}: {why}; nothing was changed; {hint}")
    euid = os.geteuid()
    if euid != 0:
        other = sorted(o for o in owners if o[0] != euid)
        if other:
            raise RevError("PERMISSION", f"files must belong to uid {other[0][0]} and rocmrevive runs as uid {euid}; "
                                         "nothing was changed; run as root (sudo)")


def _check_space(root, st: StateDir, prep: _Prepared) -> None:
    need: dict[int, list] = {}  # st_dev -> [bytes, inodes, folder]

    def add(folder: Path, nbytes: int, inodes: int) -> None:
        folder = _nearest_existing(folder)
        dev = os.stat(folder).st_dev
        e = need.setdefault(dev, [0, 0, folder])
        e[0] += nbytes
        e[1] += inodes

    todo = prep.todo
    for s in todo:
        if s.op != "delete":
            add(s.real.parent, s.after["size"] + 4096, 1)  # the temporary lives beside the old file
        if s.op != "create" and not (st.backup_dir / s.before["sha256"]).exists():
            add(st.backup_dir, s.before["size"] + 4096, 1)
    for d, *_ in prep.mkdirs:
        add(d, 4096, 1)
    add(st.tx_dir, 65536 + 2048 * len(todo), 3)
    for dev, (nbytes, inodes, folder) in need.items():
        v = os.statvfs(folder)
        free = v.f_bavail * v.f_frsize
        if nbytes > free:
            raise RevError("PERMISSION", f"not enough free space on the filesystem of {root.machine_path(folder)}: "
                                         f"need {_mb(nbytes, free)}, {_mb(free, nbytes)} free; nothing was changed; free some "
                                         "space and retry")
        if v.f_files and inodes > v.f_favail:
            raise RevError("PERMISSION", f"no free inodes on the filesystem of {root.machine_path(folder)} "
                                         f"(need {inodes}, {v.f_favail} free); nothing was changed")


def _mb(n: int, other: int | None = None) -> str:
    """``n`` in MB with as many decimals as it takes to tell it from ``other`` (else bytes)."""
    for digits in (1, 2, 3):
        if other is None or f"{n / 1e6:.{digits}f}" != f"{other / 1e6:.{digits}f}":
            return f"{n / 1e6:.{digits}f} MB"
    return f"{n:,} bytes"


def _refuse_pending(st: StateDir) -> None:
    pending = [tx for tx in st.load_all() if tx.pending]
    if pending:
        tx = pending[-1]
        _refuse_damaged(st, tx)
        where = f" on {tx.tree}" if tx.tree else ""
        raise RevError("INTERRUPTED", f"transaction {tx.txid}{where} was interrupted; run `rocmrevive recover` "
                                      "to finish or undo it first", details={"pending": [t.txid for t in pending]})


def _refuse_damaged(st: StateDir, tx: TxRecord) -> None:
    """RevError("INTERRUPTED") for a damaged journal: nothing is undone from it (a partial undo
    would leave a mixed tree that looks clean); say what is known and what to do."""
    if not tx.damaged:
        return
    raise RevError("INTERRUPTED", f"the journal {st.mp(tx.path)} of transaction {tx.txid} is damaged: "
                                  f"{tx.describe_damage()}; rocmrevive will not undo or complete it: check the "
                                  f"files by hand (backups in {st.mp(st.backup_dir)}), then move the journal "
                                  f"out of {st.mp(st.tx_dir)}",
                   details={"journal": st.mp(tx.path), "problems": tx.problems[:20]})


# apply ---------------------------------------------------------------------------------------
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
    with lock, _expected_errors(root, "; nothing was changed"):
        if dry_run:
            st.probe_lock()
        check_package_managers(root)
        _refuse_pending(st)
        prep = _prepare(root, plan)
        todo = prep.todo
        actions = [s.action() for s in prep.steps]
        if not todo:
            return TxResult(None, False, actions, None, prep.tree, "unchanged")
        dirs = {s.real.parent for s in todo if s.real.parent.exists()}
        dirs |= {_nearest_existing(d) for d, *_ in prep.mkdirs}
        dirs.add(_nearest_existing(st.real))
        _check_writable(root, dirs, {(s.after["uid"], s.after["gid"]) for s in todo if s.op != "delete"}
                        | {(u, g) for _, _, u, g in prep.mkdirs})
        _check_space(root, st, prep)
        actions = [{"path": root.machine_path(d), "op": "mkdir", "before": None, "after": None}
                   for d, *_ in prep.mkdirs] + actions
        if dry_run:
            return TxResult(None, True, actions, None, prep.tree, "dry-run")
        return _Apply(root, st, plan, prep, progress).run(actions)


class _Apply:
    def __init__(self, root, st: StateDir, plan: Plan, prep: _Prepared, progress: Progress):
        self.root, self.st, self.plan, self.prep, self.progress = root, st, plan, prep, progress
        self.mp = root.machine_path

    def run(self, actions: list[dict]) -> TxResult:
        st, prep = self.st, self.prep
        st.ensure()
        txid = st.next_txid()
        jpath = st.tx_dir / f"{txid}.jsonl"
        for s in prep.todo:
            if s.op != "delete":
                s.temp = _temp_for(s.real)
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
        return TxResult(txid, True, actions, self.mp(jpath), prep.tree, "committed")

    def _begin_record(self, txid: str) -> dict:
        prep = self.prep
        return {"type": "begin", "v": JOURNAL_VERSION, "txid": txid, "time": _now(),
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
            if s.op != "create":
                s.backup = _backup(st, s.real, s.before["sha256"])
                backed = True
                checkpoint("backup")
        if backed:
            with st.open("backups", create=True) as bd:
                bd.fsync()

        if prep.mkdirs:
            journal.write(*[{"type": "intent", "op": "mkdir", "path": mp(d), "mode": m, "uid": u, "gid": g}
                            for d, m, u, g in prep.mkdirs])
            for d, m, u, g in prep.mkdirs:
                os.mkdir(d, 0o700)
                if (u, g) != (os.geteuid(), os.getegid()):
                    os.chown(d, u, g)
                os.chmod(d, m)
                fsync_dir(d.parent)
                checkpoint("mkdir")
            journal.write(*[{"type": "done", "op": "mkdir", "path": mp(d)} for d, *_ in prep.mkdirs])

        staged = [s for s in todo if s.op != "delete"]
        if staged:
            journal.write({"type": "stage", "temps": [mp(s.temp) for s in staged]})
            self._stage_all(staged)

        journal.write(*[{"type": "intent", "op": s.op, "path": s.path, "before": s.before, "after": s.after,
                         "backup": s.backup, "temp": mp(s.temp) if s.temp else None, "source": s.source}
                        for s in todo])
        checkpoint("intent")
        for s in todo:
            if s.op == "delete":
                os.unlink(s.real)
            elif s.op == "create":
                _place_new(s.temp, s.real, mp(s.real))
            else:
                os.replace(s.temp, s.real)
            checkpoint("rename")
        for d in sorted({s.real.parent for s in todo}):
            fsync_dir(d)
            checkpoint("dirsync")
        journal.write(*[{"type": "done", "op": s.op, "path": s.path, "sha256": s.after.get("sha256")}
                        for s in todo])
        checkpoint("done")
        journal.write({"type": "commit", "time": _now(), "files": len(todo)})
        checkpoint("commit")

    def _stage_all(self, staged: list[_Step]) -> None:
        def one(s: _Step) -> None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(s.temp)  # a leftover of ours (the name is reserved)
            a = s.after
            stage_copy(s.staged, s.temp, mode=a["mode"], uid=a["uid"], gid=a["gid"], expect_sha256=a["sha256"])

        workers = max(1, min(STAGE_WORKERS, len(staged)))
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
        err = _as_rev_error(exc, self.root)
        tx = TxRecord.from_records(txid, journal.path, journal.records)
        why = err.message if err else ("interrupted by the user" if isinstance(exc, KeyboardInterrupt) else repr(exc))
        try:
            with _no_second_interrupt():  # a second Ctrl-C must not cut the undo short
                _Undo(self.root, self.st, tx, journal, reason=f"apply failed: {why}", best_effort_journal=True).run()
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


def _as_rev_error(exc: BaseException, root=None) -> RevError | None:
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
def _expected_errors(root, suffix: str = ""):
    """Turn an OSError of a read-only phase into its one-line RevError."""
    try:
        yield
    except OSError as exc:
        err = _as_rev_error(exc, root)
        raise RevError(err.code, err.message + suffix) from exc


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


def _backup(st: StateDir, real: Path, sha: str) -> str:
    """Copy ``real`` into backups/<sha> (content addressed, fsynced) unless it is there already.
    Written through the backups folder's descriptor: an O_EXCL temporary renamed into place."""
    from rocmrevive.fs import open_regular
    from rocmrevive.hashing import hash_fd

    with st.open("backups", create=True) as bd:
        have = bd.lstat(sha)
        if have is not None:
            if stat.S_ISREG(have.st_mode):
                fd = bd.open_read(sha)
                try:
                    if hash_fd(fd)[0] == sha:
                        return f"backups/{sha}"
                finally:
                    os.close(fd)
            bd.rmtree(sha)  # damaged (or not a file): make it again
        bd.copy_in_closing(sha, open_regular(real), mode=0o600, expect_sha256=sha, changed=RevError(
            "DRIFT", f"{st.mp(real)} changed while rocmrevive was backing it up; retry"))
    return f"backups/{sha}"


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


# undo (rollback, failed apply, recovery) -----------------------------------------------------
class _Undo:
    """Bring the files of one transaction back to their ``before`` state, from its journal.

    First every file is observed: already as before → nothing; as after → restore/remove; anything
    else is drift (refused unless forced; a forced file's current bytes are backed up first, so
    nothing is lost). Then temporaries are removed and created folders removed (if empty)."""

    def __init__(self, root, st: StateDir, tx: TxRecord, journal: Journal | None, *, reason: str,
                 force: bool = False, best_effort_journal: bool = False, later: dict | None = None,
                 progress: Progress | None = None):
        self.root, self.st, self.tx, self.journal = root, st, tx, journal
        self.reason, self.force, self.best_effort = reason, force, best_effort_journal
        self.later = later or {}
        self.progress = progress or (lambda n: None)
        self.warnings: list[str] = []
        self.items: list[dict] = []

    def _write(self, *records: dict) -> None:
        if self.journal is None:
            return
        try:
            self.journal.write(*records)
        except OSError:
            if not self.best_effort:
                raise

    def _real(self, mpath: str) -> Path:
        real = self.root.path(mpath)
        parent = resolve_inside(self.root, posixpath.dirname(mpath), what="path")
        if parent != real.parent:
            raise RevError("DRIFT", f"the folder of {mpath} now leads elsewhere (symbolic link); refusing to touch "
                                    "it: inspect it by hand")
        return real

    def survey(self) -> list[dict]:
        forced_before = (self.tx.undo or {}).get("forced") or {}
        items, drift = [], []
        intents = list(reversed(self.tx.file_intents))
        reals = [self._real(it["path"]) for it in intents]
        for it, real, cur in zip(intents, reals, _observe_all(reals)):
            path = it["path"]
            before, after = it["before"], it["after"]
            item = {"path": path, "real": real, "intent": it, "cur": cur, "forced": False}
            if _matches(cur, before):
                item["op"] = "keep"
            elif _matches(cur, after):
                item["op"] = "restore" if before.get("exists") else "remove"
            elif self.force or (path in forced_before and forced_before[path] == cur.get("sha256")):
                if cur.get("exists") and cur.get("type") not in ("f",):
                    raise RevError("DRIFT", f"{path} is {_describe(cur)}; rocmrevive will not remove it even "
                                            "with --force: inspect it by hand")
                item["op"] = "restore" if before.get("exists") else ("remove" if cur.get("exists") else "keep")
                item["forced"] = item["op"] != "keep"
            else:
                by = f" (by transaction {self.later[path]}; roll that back first)" if path in self.later else ""
                want = _describe({"type": "f", **after}) if after.get("exists") else "no file"
                drift.append(f"{path} ({_describe(cur)}, expected {want}){by}")
            items.append(item)
        self._check_unrecorded()
        if drift:
            raise RevError("DRIFT", f"{len(drift)} {'file' if len(drift) == 1 else 'files'} changed since "
                                    f"transaction {self.tx.txid}: {_few(drift)}; "
                                    "nothing was changed; `--force` restores them anyway (their current bytes are "
                                    "kept in the backups folder)", details={"drift": drift})
        for item in items:
            b = item["intent"]["before"]
            if item["op"] == "restore":
                src = self.st.backup_dir / b["sha256"]
                if not src.is_file() or sha256_file(src)[0] != b["sha256"]:
                    raise RevError("VERIFY_FAILED", f"the backup of {item['path']} ({self.st.mp(src)}) is missing or "
                                                    "damaged; cannot restore it; nothing was changed")
        dirs = {i["real"].parent for i in items if i["op"] != "keep"}
        dirs |= {t.parent for t in self._temps() if os.path.lexists(t)}
        dirs |= {self.root.path(it["path"]).parent for it in self.tx.mkdir_intents
                 if self.root.path(it["path"]).is_dir()}
        if dirs:
            dirs.add(self.st.tx_dir)
            _check_writable(self.root, dirs, {(i["intent"]["before"]["uid"], i["intent"]["before"]["gid"])
                                              for i in items if i["op"] == "restore"})
        self.items = items
        return items

    def _check_unrecorded(self) -> None:
        """A planned file without an intent was never renamed (intents are fsynced first); if one
        is in its new state anyway the journal lost records: stop rather than undo half."""
        intents = {it["path"] for it in self.tx.file_intents}
        missing = [f for f in self.tx.planned if f["path"] not in intents and f["op"] != "delete"]
        if not missing:
            return
        curs = _observe_all([self._real(f["path"]) for f in missing])
        new = [f["path"] for f, cur in zip(missing, curs) if cur.get("exists") and cur.get("sha256") == f.get("sha256")]
        if new:
            raise RevError("INTERRUPTED", f"the journal {self.st.mp(self.tx.path)} of transaction {self.tx.txid} has "
                                          f"no intent for {len(new)} planned file(s) already in their new state "
                                          f"({_few(new)}): records were lost; rocmrevive will not undo part of it: "
                                          f"check the files by hand (backups in {self.st.mp(self.st.backup_dir)}), "
                                          f"then move the journal out of {self.st.mp(self.st.tx_dir)}",
                           details={"journal": self.st.mp(self.tx.path), "unrecorded": new})

    def _temps(self) -> set[Path]:
        temps = {self.root.path(t) for t in self.tx.temps}
        return temps | {_temp_for(self.root.path(it["path"])) for it in self.tx.file_intents}

    def actions(self) -> list[dict]:
        out = []
        for i in self.items:
            b = i["intent"]["before"]
            out.append({"path": i["path"], "op": i["op"], "before": i["cur"].get("sha256"),
                        "after": b.get("sha256") if i["op"] != "keep" else i["cur"].get("sha256"),
                        "size": b.get("size"), "forced": i["forced"]})
        for it in reversed(self.tx.mkdir_intents):
            if self.root.path(it["path"]).is_dir():
                out.append({"path": it["path"], "op": "rmdir", "before": None, "after": None})
        return out

    def run(self) -> list[dict]:
        if not self.items:
            self.survey()
        forced = {i["path"]: i["cur"].get("sha256") for i in self.items if i["forced"]}
        self._write({"type": "undo_begin", "time": _now(), "reason": self.reason, "force": self.force,
                     "forced": forced, "files": [i["path"] for i in self.items if i["op"] != "keep"]})
        checkpoint("undo_begin")
        touched: set[Path] = set()
        for i in self.items:
            if i["op"] == "keep":
                continue
            real, b, cur = i["real"], i["intent"]["before"], i["cur"]
            if i["forced"] and cur.get("exists"):
                _backup(self.st, real, cur["sha256"])
                self.warnings.append(f"{i['path']} had changed; its bytes are kept as "
                                     f"{self.st.mp(self.st.backup_dir / cur['sha256'])}")
            if i["op"] == "restore":
                tmp = _temp_for(real)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                stage_copy(self.st.backup_dir / b["sha256"], tmp, mode=b["mode"], uid=b["uid"], gid=b["gid"],
                           expect_sha256=b["sha256"], mtime_ns=b.get("mtime_ns"))
                os.replace(tmp, real)
                self.progress(b.get("size") or 0)
            elif i["op"] == "remove":
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(real)
            touched.add(real.parent)
            checkpoint("undo")
        for t in sorted(self._temps()):
            if os.path.lexists(t):
                os.unlink(t)
                touched.add(t.parent)
                checkpoint("undo_temps")
        for d in sorted(touched):
            if d.is_dir():
                fsync_dir(d)
        removed_dirs = []
        for it in reversed(self.tx.mkdir_intents):
            d = self.root.path(it["path"])
            if not d.is_dir() or d.is_symlink():
                continue
            try:
                d.rmdir()
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    self.warnings.append(f"left the folder {it['path']} in place: it holds files rocmrevive did not put there")
                    continue
                raise
            fsync_dir(d.parent)
            removed_dirs.append(it["path"])
            checkpoint("rmdir")
        self._write({"type": "rolled_back", "time": _now(), "reason": self.reason,
                     "restored": [i["path"] for i in self.items if i["op"] == "restore"],
                     "removed": [i["path"] for i in self.items if i["op"] == "remove"],
                     "rmdirs": removed_dirs})
        checkpoint("rolled_back")
        return self.actions_done(removed_dirs)

    def actions_done(self, removed_dirs: list[str]) -> list[dict]:
        acts = [a for a in self.actions() if a["op"] != "rmdir"]
        return acts + [{"path": d, "op": "rmdir", "before": None, "after": None} for d in removed_dirs]


# rollback ------------------------------------------------------------------------------------
def _select(txs: list[TxRecord], txid: str | None, st: StateDir) -> TxRecord | None:
    if txid is None:
        committed = [t for t in txs if t.state == "committed"]
        return committed[-1] if committed else None
    exact = [t for t in txs if t.txid == txid]
    if not exact and txid.isdigit():
        exact = [t for t in txs if _seq(t.txid) == int(txid)]
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
    """
    st = StateDir(root, state_dir)
    if not dry_run:
        pre = _select(st.load_all(), txid, st)
        if pre is None or pre.state == "rolled_back":  # nothing to do: answer without taking the lock
            return rollback(root, txid, force=force, state_dir=state_dir, dry_run=True, progress=progress)
    with (contextlib.nullcontext() if dry_run else st.lock()):
        if dry_run:
            st.probe_lock()
        check_package_managers(root)
        _refuse_pending(st)
        txs = st.load_all()
        damaged = [t for t in txs if t.damaged]
        if damaged:
            _refuse_damaged(st, damaged[-1])
        tx = _select(txs, txid, st)
        if tx is None:
            return TxResult(None, False, [], None, None, "nothing", ["no committed transaction to roll back"])
        jpath = st.mp(tx.path)
        if tx.state == "rolled_back":
            when = (tx.rolled_back or {}).get("time", "")
            return TxResult(tx.txid, False, [], jpath, tx.tree, "rolled_back",
                            [f"transaction {tx.txid} was already rolled back {when}".rstrip()])
        later = {}
        for t in txs:
            if t.state == "committed" and _seq(t.txid) > _seq(tx.txid):
                for f in t.planned:
                    later[f["path"]] = t.txid
        undo = _Undo(root, st, tx, None, reason="rollback", force=force, later=later, progress=progress)
        with _expected_errors(root, "; nothing was changed"):
            undo.survey()
        if dry_run:
            acts = undo.actions()
            return TxResult(tx.txid, any(a["op"] != "keep" for a in acts), acts, jpath, tx.tree, "dry-run")
        undo.journal = Journal.reopen(tx.path)
        try:
            acts = undo.run()
        except RevError:
            raise
        except (OSError, HashMismatch) as exc:
            err = _as_rev_error(exc, root)
            raise RevError("INTERRUPTED", f"rollback of {tx.txid} stopped: {err.message}; fix that and run "
                                          "`rocmrevive recover` to finish it") from exc
        finally:
            undo.journal.close()
        return TxResult(tx.txid, any(a["op"] != "keep" for a in acts), acts, jpath, tx.tree, "rolled_back",
                        undo.warnings)


# recovery ------------------------------------------------------------------------------------
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
        _refuse_pending(StateDir(root, state_dir))


def recover_pending(root, *, state_dir: str = DEFAULT_STATE_DIR, force: bool = False,
                    dry_run: bool = False) -> list[TxResult]:
    """Finish every interrupted transaction, newest first: roll forward when every planned file is
    already in its new state, else undo it (a rollback that was cut short is completed)."""
    st = StateDir(root, state_dir)
    results = []
    if not dry_run and not any(t.pending for t in st.load_all()):
        dry_run = True  # nothing to recover: check the locks without taking (or creating) ours
    with (contextlib.nullcontext() if dry_run else st.lock()), _expected_errors(root):
        if dry_run:
            st.probe_lock()
        check_package_managers(root)
        for tx in reversed([t for t in st.load_all() if t.pending]):
            results.append(_recover_one(root, st, tx, force=force, dry_run=dry_run))
    return results


def _recover_one(root, st: StateDir, tx: TxRecord, *, force: bool, dry_run: bool) -> TxResult:
    jpath = st.mp(tx.path)
    _refuse_damaged(st, tx)  # a journal is created with its begin, so none is legitimately empty
    if tx.phase == "apply" and _all_in_place(root, tx):
        intents = {it["path"] for it in tx.file_intents}
        lost = [f["path"] for f in tx.planned if f["path"] not in intents]
        if lost:  # intents are fsynced before any rename: every file in place without one means lost records
            raise RevError("INTERRUPTED", f"the journal {jpath} of transaction {tx.txid} has no intent for "
                                          f"{len(lost)} of its {len(tx.planned)} planned file(s), which are all in "
                                          f"their new state ({_few(lost)}): records were lost, and completing it "
                                          f"would make a later rollback undo only part of it; check the files by "
                                          f"hand, then move the journal out of {st.mp(st.tx_dir)}",
                           details={"journal": jpath, "unrecorded": lost})
        acts = [{"path": f["path"], "op": f["op"], "before": None, "after": f.get("sha256")} for f in tx.planned]
        if dry_run:
            return TxResult(tx.txid, False, acts, jpath, tx.tree, "dry-run")
        with Journal.reopen(tx.path) as j:
            temps = {root.path(t) for t in tx.temps}
            for t in sorted(temps):
                if os.path.lexists(t):
                    os.unlink(t)
            for d in sorted({root.path(f["path"]).parent for f in tx.planned}):
                fsync_dir(d)
            j.write(*[{"type": "done", "op": f["op"], "path": f["path"], "sha256": f.get("sha256")}
                      for f in tx.planned if f["path"] not in tx.done])
            j.write({"type": "commit", "time": _now(), "files": len(tx.planned), "recovered": True})
            checkpoint("forward")
        return TxResult(tx.txid, False, acts, jpath, tx.tree, "rolled_forward")
    undo = _Undo(root, st, tx, None, reason="recover", force=force or bool((tx.undo or {}).get("force")))
    undo.survey()
    if dry_run:
        acts = undo.actions()
        return TxResult(tx.txid, any(a["op"] != "keep" for a in acts), acts, jpath, tx.tree, "dry-run")
    with Journal.reopen(tx.path) as j:
        undo.journal = j
        acts = undo.run()
    return TxResult(tx.txid, any(a["op"] != "keep" for a in acts), acts, jpath, tx.tree, "rolled_back",
                    undo.warnings)


def _all_in_place(root, tx: TxRecord) -> bool:
    curs = _observe_all([root.path(f["path"]) for f in tx.planned])
    for f, cur in zip(tx.planned, curs):
        want = {"exists": False} if f["op"] == "delete" else {"exists": True, "sha256": f.get("sha256")}
        if not _matches(cur, want):
            return False
    return True


# history / status ----------------------------------------------------------------------------
def list_transactions(root, *, state_dir: str = DEFAULT_STATE_DIR, verify: bool = True) -> list[dict]:
    """Every transaction, oldest first: txid, state (committed, rolled_back, interrupted, damaged,
    in_progress: another rocmrevive holds the lock), tree, times, meta, file counts and, for a
    committed one (``verify``), which of its files are intact, drifted or missing now.

    ``integrity``: intact | drifted (some file has other bytes) | missing (every file gone, e.g.
    an apt upgrade replaced the tree) | partial (some files gone) | None (not committed)."""
    with _expected_errors(root):
        return _list_transactions(root, StateDir(root, state_dir), verify)


def _list_transactions(root, st: StateDir, verify: bool) -> list[dict]:
    txs = st.load_all()
    busy = any(tx.pending for tx in txs) and is_held(st.lock_path) is not None
    owner: dict[str, str] = {}
    for tx in txs:
        if tx.state == "committed":
            for f in tx.planned:
                owner[f["path"]] = tx.txid
    out = []
    for tx in txs:
        b = tx.begin or {}
        files = tx.planned
        state = "in_progress" if busy and tx.pending else tx.state
        rec = {"txid": tx.txid, "state": state, "tree": tx.tree, "tree_given": b.get("tree_given"),
               "began": b.get("time"), "committed": (tx.commit or {}).get("time"),
               "rolled_back": (tx.rolled_back or {}).get("time"), "meta": b.get("meta") or {},
               "files": len(files), "bytes": sum(f.get("size") or 0 for f in files if f["op"] != "delete"),
               "ops": dict(Counter(f["op"] for f in files)), "mkdirs": b.get("mkdirs", []),
               "changes": [{k: f.get(k) for k in ("path", "op", "sha256", "size", "source")} for f in files],
               "journal": st.mp(tx.path), "tree_exists": bool(tx.tree) and root.path(tx.tree).is_dir(),
               "integrity": None, "damage": tx.describe_damage() if tx.damaged else None}
        if tx.state == "committed" and verify:
            intact, drifted, missing = [], [], []
            superseded = [f["path"] for f in files if owner.get(f["path"]) != tx.txid]
            mine = [f for f in files if owner.get(f["path"]) == tx.txid]
            for f, cur in zip(mine, _observe_all([root.path(f["path"]) for f in mine])):
                want = {"exists": False} if f["op"] == "delete" else {"exists": True, "sha256": f.get("sha256")}
                if _matches(cur, want):
                    intact.append(f["path"])
                elif want["exists"] and not cur.get("exists"):
                    missing.append(f["path"])
                else:
                    drifted.append(f["path"])
            rec.update(intact=intact, drifted=drifted, missing=missing, superseded=superseded)
            rec["integrity"] = ("drifted" if drifted else "missing" if missing and not intact
                                else "partial" if missing else "intact")
        out.append(rec)
    return out
