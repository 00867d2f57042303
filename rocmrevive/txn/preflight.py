"""Preflight: map a plan onto its tree and check, writing nothing, that it can be applied: paths
inside the tree, the tree unchanged since the plan, staged files as planned, the folders
writable, the space free.

    prep = prepare(root, plan)          # Prepared: steps (one per file), folders to create
    check_writable(root, dirs, owners); check_space(root, st, prep)
"""
from __future__ import annotations

import os
import posixpath
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.txn.journal import TEMP_SUFFIX
from rocmrevive.txn.observe import describe, matches, observe_all
from rocmrevive.txn.plan import FileChange, Op, Plan
from rocmrevive.txn.result import Action, few, mb
from rocmrevive.txn.state import StateDir, resolve_inside


@dataclass
class Step:
    """One planned file mapped onto the tree: where it is, what it is now and will be."""

    path: str  # resolved machine path
    real: Path
    op: Op
    source: str
    staged: Path | None
    before: dict
    after: dict
    in_place: bool = False
    backup: str | None = None
    temp: Path | None = None
    synced: tuple[int, ...] = ()  # (dev, ino, size, mtime_ns) of the temporary after its fsync

    @property
    def staged_file(self) -> Path:
        """The staged bytes of a create or replace (a delete has none)."""
        if self.staged is None:
            raise RevError("INTERNAL", f"{self.path}: the plan has no staged file for its {self.op} "
                                       f"(preflight checks every create and replace first)")
        return self.staged

    @property
    def temp_file(self) -> Path:
        """The temporary the apply drew for a create or replace (before any rename)."""
        if self.temp is None:
            raise RevError("INTERNAL", f"{self.path}: no temporary was drawn for its {self.op} "
                                       f"(the apply draws one for every create and replace before any rename)")
        return self.temp

    def action(self) -> Action:
        return Action(self.path, Op.UNCHANGED if self.in_place else self.op, self.before.get("sha256"),
                      self.after.get("sha256"), self.after.get("size"), self.source)


@dataclass
class Prepared:
    """A plan mapped onto its tree: the steps and the folders to create."""

    tree_given: str
    tree_real: Path
    tree: str  # resolved machine path
    steps: list[Step]
    mkdirs: list[tuple[Path, int, int, int]]  # (real, mode, uid, gid), parents first

    @property
    def todo(self) -> list[Step]:
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


def prepare(root, plan: Plan) -> Prepared:
    """Map the plan onto the tree and check it still holds: raises DRIFT when the tree changed
    since the plan, VERIFY_FAILED for unsafe paths or bad staged files. Writes nothing."""
    tree_real = resolve_inside(root, plan.tree, what="tree")
    if not tree_real.is_dir():
        raise RevError("DRIFT", f"the tree {plan.tree} is gone (no folder at {root.machine_path(tree_real)}); "
                                "plan again")
    tree = root.machine_path(tree_real)
    given = posixpath.normpath(plan.tree)
    mkdirs: dict[Path, tuple[int, int, int]] = {}
    folders: dict[str, Path] = {}  # each folder of the plan resolved and checked once
    located = [(ch, *_locate(root, plan, ch, tree, tree_real, mkdirs, folders)) for ch in plan.changes]
    steps: list[Step] = []
    templates: dict = {}
    drift: list[str] = []
    for (ch, parent, real), cur in zip(located, observe_all([r for _, _, r in located])):
        step, changed = _step(root, ch, parent, real, cur, mkdirs, templates)
        if changed:
            drift.append(changed)
        if not step.in_place and ch.op != Op.DELETE:
            _check_staged(ch, step.path)
        steps.append(step)
    if drift:
        raise RevError("DRIFT", f"the tree changed since the plan: {few(drift)}; nothing was changed, plan again",
                       details={"drift": drift})
    return Prepared(given, tree_real, tree, steps, [(d, *m) for d, m in mkdirs.items()])


def _locate(root, plan: Plan, ch: FileChange, tree: str, tree_real: Path,
            mkdirs: dict[Path, tuple[int, int, int]], folders: dict[str, Path]) -> tuple[Path, Path]:
    """(real folder, real path) of one change inside the tree; adds the folders it needs to
    ``mkdirs`` (real → mode, uid, gid of its parent), parents first. ``folders``: the folders
    already resolved and checked by this preflight (parent_rel → real folder)."""
    rel = posixpath.relpath(posixpath.normpath(ch.dest), posixpath.normpath(plan.tree))
    parent_rel, name = posixpath.split(rel)
    if name in ("", ".", "..") or rel.startswith(".."):
        raise RevError("VERIFY_FAILED", f"{ch.dest} is not a file inside the tree {plan.tree}")
    if parent_rel in folders:
        return folders[parent_rel], folders[parent_rel] / name
    parent = resolve_inside(root, posixpath.join(tree, parent_rel), what="path") if parent_rel else tree_real
    if not _under(parent, tree_real):
        raise RevError("VERIFY_FAILED", f"the folder of {ch.dest} leads outside the tree {plan.tree} "
                                        "(symbolic link); refusing")
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
            mkdirs[d] = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) if st else mkdirs[d.parent]
    folders[parent_rel] = parent
    return parent, parent / name


def _step(root, ch: FileChange, parent: Path, real: Path, cur: dict, mkdirs: dict,
          templates: dict) -> tuple[Step, str | None]:
    """The step for one change given what its path is now (``cur``), and how the tree drifted
    from the plan there (None: it did not)."""
    path = root.machine_path(real)
    if cur["exists"] and cur["type"] != "f":
        kind = {"l": "a symbolic link", "d": "a folder"}.get(cur["type"], "not a regular file")
        raise RevError("VERIFY_FAILED", f"{path} is {kind}; rocmrevive replaces only regular files")
    before = {k: cur[k] for k in ("exists", "sha256", "size", "mode", "uid", "gid", "mtime_ns") if k in cur}
    if ch.op == Op.DELETE:
        after: dict = {"exists": False}
    else:
        if cur["exists"]:
            mode, uid, gid = cur["mode"], cur["uid"], cur["gid"]
        elif parent in mkdirs:
            m, uid, gid = mkdirs[parent]
            mode = m & 0o666
        else:
            mode, uid, gid = _template(parent, templates)
        after = {"exists": True, "sha256": ch.sha256, "size": ch.size, "mode": mode, "uid": uid, "gid": gid}
    step = Step(path, real, ch.op, ch.source, ch.staged, before, after)
    if matches(cur, after):
        step.in_place = True
    elif ch.op == Op.CREATE and cur["exists"]:
        return step, f"{path} exists ({describe(cur)}), the plan expected no file"
    elif ch.op in (Op.REPLACE, Op.DELETE) and not cur["exists"]:
        return step, f"{path} is missing, the plan expected a file to {ch.op}"
    elif ch.op in (Op.REPLACE, Op.DELETE) and ch.before_sha256 and cur.get("sha256") != ch.before_sha256:
        return step, f"{path} has {describe(cur)}, the plan expected sha256 {ch.before_sha256[:12]}…"
    return step, None


def _check_staged(ch: FileChange, path: str) -> None:
    """VERIFY_FAILED unless the staged file of a change is a regular file of the planned size."""
    if ch.staged is None:
        raise RevError("VERIFY_FAILED", f"{path}: the plan has no staged file for its {ch.op}")
    try:
        sst = os.stat(ch.staged)
    except OSError as exc:
        raise RevError("VERIFY_FAILED", f"staged file {ch.staged} for {path} is unreadable "
                                        f"({exc.strerror}); fetch again") from exc
    if not stat.S_ISREG(sst.st_mode) or sst.st_size != ch.size:
        raise RevError("VERIFY_FAILED", f"staged file {ch.staged} for {path} has {sst.st_size} bytes, "
                                        f"the plan says {ch.size}; fetch again")


def _under(p: Path, base: Path) -> bool:
    return p == base or base in p.parents


def nearest_existing(p: Path) -> Path:
    """``p`` or its nearest parent that exists."""
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_writable(root, dirs: set[Path], owners: set[tuple[int, int]]) -> None:
    """PERMISSION unless this process may write in ``dirs`` and give files the ``owners`` (uid, gid)."""
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


def check_space(root, st: StateDir, prep: Prepared) -> None:
    """PERMISSION unless each filesystem has the bytes and inodes the temporaries, backups,
    folders and journal need."""
    need: dict[int, list] = {}  # st_dev -> [bytes, inodes, folder]

    def add(folder: Path, nbytes: int, inodes: int) -> None:
        folder = nearest_existing(folder)
        dev = os.stat(folder).st_dev
        e = need.setdefault(dev, [0, 0, folder])
        e[0] += nbytes
        e[1] += inodes

    todo = prep.todo
    for s in todo:
        if s.op != Op.DELETE:
            add(s.real.parent, s.after["size"] + 4096, 1)  # the temporary lives beside the old file
        if s.op != Op.CREATE and not (st.backup_dir / s.before["sha256"]).exists():
            add(st.backup_dir, s.before["size"] + 4096, 1)
    for d, *_ in prep.mkdirs:
        add(d, 4096, 1)
    add(st.tx_dir, 65536 + 2048 * len(todo), 3)
    for dev, (nbytes, inodes, folder) in need.items():
        v = os.statvfs(folder)
        free = v.f_bavail * v.f_frsize
        if nbytes > free:
            raise RevError("PERMISSION", f"not enough free space on the filesystem of {root.machine_path(folder)}: "
                                         f"need {mb(nbytes, free)}, {mb(free, nbytes)} free; nothing was changed; free some "
                                         "space and retry")
        if v.f_files and inodes > v.f_favail:
            raise RevError("PERMISSION", f"no free inodes on the filesystem of {root.machine_path(folder)} "
                                         f"(need {inodes}, {v.f_favail} free); nothing was changed")

