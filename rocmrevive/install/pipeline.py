"""``rocmrevive install``, the main path: detect → choose rocBLAS copies → plan → fetch → stage →
verify staged → apply → verify installed → report (docs/architecture.md, "The main path").

    report = install(Root("/"), check=True)     # what would change, nothing written
    report = install(Root("/"))                 # do it, as one transaction per rocBLAS copy

Each rocBLAS copy (``tensile.py``) and each host-library graft (``graft.py``) is one component
walked by ``core.install_component``: one transaction each. The hardware is scanned once, the
``--tree`` arguments are converted once, and every component stages in the same kind of area
(``core.staging_area`` under the cache's ``staging`` folder).
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.errors import RevError
from rocmrevive.install.as_owner import install_as_owner
from rocmrevive.install.core import Status, feed  # noqa: F401 - feed: the progress protocol
from rocmrevive.install.graft import library_components, plan_library
from rocmrevive.install.report import CopyPlan, InstallReport, LibraryPlan, Record
from rocmrevive.install.tensile import TARGET, plan_copy
from rocmrevive.rootfs import Root
from rocmrevive.sources.cache import read_only_caches
from rocmrevive.trees.select import Copy, given_trees, library_folders, nothing_found, rocblas_copies
from rocmrevive.trees.trust import TreeTrust, Trust, not_writable

# Errors about the machine rather than one copy: they stop the whole install.
FATAL = ("NETWORK", "LOCKED", "INTERRUPTED", "PERMISSION", "USAGE", "INTERNAL")
Log = Callable[[str], None]


@dataclass
class Context:
    """What every component of one install shares: the machine, the devices (scanned once), the
    manifests, the cache and the options."""

    root: Root
    devices: list[TargetId]
    others: list[TargetId]                 # detected GPUs that are not gfx906 (a graft keeps serving them)
    manifests: list
    cache_dir: Path
    state_dir: str
    check: bool = False
    mirror: Optional[str] = None
    from_path: Optional[str] = None
    cross_version: bool = False
    log: Log = field(default=lambda s: None)
    progress: Optional[Callable] = None    # progress(stage, done, total, unit): see ``feed``
    confirm: Optional[Callable] = None     # confirm(label, plan) -> bool
    memo: dict = field(default_factory=dict)  # what is decided once per install (shared by the copies of ctx)

    @property
    def staging(self) -> Path:
        from rocmrevive.install.extract import staging_parent

        return staging_parent(self.cache_dir)


def _devices(root: Root, targets) -> tuple[list[TargetId], str, list[TargetId]]:
    """(gfx906 targets, where from, the other detected GPUs): ``--target`` values, else one scan."""
    from rocmrevive.hardware.devices import partition_devices

    devices, devices_from, others = partition_devices(root, targets, processor=TARGET)
    bad = ", ".join(str(d) for d in devices if d.processor != TARGET)
    if bad:
        raise RevError("NOTHING_SUPPORTED", f"rocmrevive installs gfx906 files; --target {bad} is not gfx906")
    return devices, devices_from, others


@dataclass(frozen=True)
class Chosen:
    """A tree install selected, with the trust decision made for it there (``trees.trust``) and
    the arguments that name it (for the command its owner would run)."""

    path: str                    # machine path of the folder written
    trust: TreeTrust
    named: bool                  # given with --tree or --python: the user asked for this one
    args: tuple[str, ...]


def keep_writable(root: Root, report: InstallReport, chosen: list, rerun=(), *, owner_runs: bool = False) -> list:
    """The ``(item, Chosen)`` pairs this run writes. A tree of one user the user named, root
    running: kept with ``owner_runs`` (written by a child run as its owner, ``as_owner.py``), else
    left alone. Another one it may not write: when named, RevError("PERMISSION", one line, the
    command to run as the tree's owner) before anything is written; when found on its own, left
    alone with a warning line (``report.left_alone``)."""
    keep = []
    base = [] if root.is_host else ["--root", str(root.base)]
    for item, c in chosen:
        why = not_writable(c.trust, c.path, [*base, "install", *c.args, *rerun])
        users = c.named and c.trust.verdict is Trust.OWNER and os.geteuid() == 0
        if why is None or (users and owner_runs):
            keep.append((item, c))
            continue
        if c.named and not users:
            raise why.error()
        report.left_alone.append({"path": c.path, "trust": c.trust.to_json(), "message": why.warning(),
                                  "command": why.command})
        report.warnings.append(why.warning())
    return keep


def install(root: Root, *, trees=(), targets=(), manifests_dir=None, cache=None, mirror: str | None = None,
            from_path: str | None = None, cross_version: bool = False, check: bool = False,
            state_dir: str | None = None, pythons=(), log: Log = lambda s: None, progress=None,
            confirm: Callable[[Record, object], bool] | None = None,
            libraries: bool = True, rerun=()) -> InstallReport:
    """Install the gfx906 files every rocBLAS copy lacks (or the ``trees`` named); with
    ``libraries``, also graft each host library that lacks gfx906 where a manifest's source
    provably loads (``graft.py``).

    A copy that cannot be served (no manifest for its version, staged files that fail the
    checks) is reported with its own error and the others go on; machine-wide trouble (lock,
    network, permission, an interrupted transaction) stops everything. ``confirm(record, plan)``
    is asked before each copy or library is changed (False skips it).

    Who may write each tree is decided once, as it is selected (``trees.trust``): a user's rocBLAS
    copy the user named (``--tree``, ``--python``) is installed by a child run as its owner
    (``as_owner.py``); another tree this run may not write is refused when named and left alone
    with a warning when found; when every rocBLAS copy found was left alone, RevError
    ("PERMISSION"). ``rerun``: the options to repeat in the command printed for a tree's owner."""
    from rocmrevive.sources.cache import default_cache_dir
    from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests
    from rocmrevive.trees.installs import find_installs
    from rocmrevive.txn.state import DEFAULT_STATE_DIR

    devices, devices_from, others = _devices(root, targets)
    ctx = Context(root, devices, others, load_manifests(manifests_dir or default_manifest_dir()),
                  Path(cache) if cache else default_cache_dir(root), state_dir or DEFAULT_STATE_DIR, check=check,
                  mirror=mirror, from_path=from_path, cross_version=cross_version, log=log, progress=progress)
    installs, _link = find_installs(root)
    with _selecting(root):
        given = given_trees(root, trees)
        lib_trees = [((f.path, f.rocm_version), Chosen(f.path, f.trust, bool(given), ("--tree", f.path)))
                     for f in (library_folders(root, given, installs) if libraries else [])]
        try:
            copies = _select_copies(root, given, pythons, installs)
        except RevError as exc:
            # a --tree without a rocBLAS folder may still hold host libraries to graft
            if exc.code != "NOTHING_SUPPORTED" or not lib_trees:
                raise
            copies = []
    report = InstallReport([str(d) for d in devices], devices_from, [], check, libraries_enabled=libraries)
    if not copies and not lib_trees:
        raise nothing_found(root)
    found = bool(copies)
    copies = keep_writable(root, report, copies, rerun, owner_runs=True)
    lib_trees = keep_writable(root, report, lib_trees, rerun)
    if not copies and (found or not lib_trees):  # every rocBLAS copy left alone: the request is not met
        raise RevError("PERMISSION", f"no tree this run may write: {report.left_alone[0]['message']}",
                       details={"left_alone": report.left_alone})
    # check mode changes nothing, the cache included: what it downloads or unpacks stays private
    with read_only_caches() if check else contextlib.nullcontext():
        for copy, chosen in copies:
            _plan_one_copy(ctx, report, copy, chosen, confirm)
        if lib_trees:
            _plan_libraries(ctx, report, [t for t, _ in lib_trees], confirm)
    return report


def _plan_one_copy(ctx: Context, report: InstallReport, copy, chosen: Chosen, confirm) -> None:
    """One rocBLAS copy, written by this run or, a user's tree the user named, by a child that is
    its owner (``as_owner.py``)."""
    cp = CopyPlan(copy.path, copy.layout, copy.rocblas_version, copy.rocm_version, trust=chosen.trust.to_json())
    report.copies.append(cp)
    if chosen.trust.writable_by(os.geteuid()):
        _guarded(cp, lambda: plan_copy(_asking(ctx, confirm, cp), copy, cp))
    else:
        install_as_owner(_asking(ctx, confirm, cp), chosen.trust,
                         lambda mine: _guarded(cp, lambda: plan_copy(mine, copy, cp)), cp)


def _asking(ctx: Context, confirm, rec: Record) -> Context:
    """``ctx`` whose confirmation names ``rec``."""
    from dataclasses import replace

    return replace(ctx, confirm=None if confirm is None else (lambda _label, plan: confirm(rec, plan)))


def _guarded(rec: Record, step: Callable[[], None]) -> None:
    """Run one record's step; its own failure becomes its ``refused`` status and error."""
    try:
        step()
    except RevError as exc:
        if exc.code in FATAL:
            raise
        rec.status, rec.reason, rec.error = Status.REFUSED, exc.message, exc.to_json()


def _select_copies(root: Root, given, pythons, installs) -> list[tuple]:
    """Every rocBLAS copy on the machine, or only those in the ``--tree`` folders (``trees.select``),
    each with its trust decision (``Chosen``)."""
    from rocmrevive.trees.pythonenv import find_envs

    envs, _problems = find_envs(root, pythons)
    return [(c.found, _chosen(root, c, envs, named=bool(given)))
            for c in rocblas_copies(root, given, installs=installs, envs=envs)]


@contextlib.contextmanager
def _selecting(root: Root):
    """Selection reads folders their owners may move meanwhile (a link gone, a folder renamed):
    such a race is one line, exit 2, nothing changed."""
    try:
        yield
    except OSError as exc:
        raise RevError("USAGE", f"{root.machine_path(exc.filename or '?')} changed while the trees were "
                                f"selected ({(exc.strerror or str(exc)).lower()}); nothing was changed; "
                                f"retry") from None


def _chosen(root: Root, copy: Copy, envs, *, named: bool) -> Chosen:
    """A copy's decision; it is named when given with --tree, or when it lies in a --python
    environment. Its owner's command names the environment too (the version of a wheel's rocBLAS)."""
    args: list[str] = []
    for env in envs:
        if root.resolve(env.site_packages) in copy.real.parents:
            named = named or env.named
            args = ["--python", env.prefix or env.site_packages]
            break
    return Chosen(copy.path, copy.trust, named, (*args, "--tree", copy.path))


def _plan_libraries(ctx: Context, report: InstallReport, lib_trees, confirm) -> None:
    from rocmrevive.diagnose.libraries import library_for_file
    from rocmrevive.txn.divert import reconcile

    if not ctx.check:
        # every transaction keeps dpkg's diversions in step (txn.divert.follow); this mends what was
        # changed outside rocmrevive (a diversion removed by hand): `status` sends the user here
        for line in reconcile(ctx.root, ctx.state_dir):
            ctx.log(line)
    for libdir, rocm_version in lib_trees:
        for manifest, comp in library_components(ctx.manifests, rocm_version):
            known = library_for_file(comp.soname)
            lp = LibraryPlan(libdir, comp.soname, known.name if known else comp.soname, rocm_version,
                             manifest=manifest.id)
            report.libraries.append(lp)
            _guarded(lp, lambda: plan_library(_asking(ctx, confirm, lp), lp, manifest, comp))
            if lp.status is Status.REFUSED and lp.abi_ok is False:
                report.warnings.append(f"{lp.label} lacks {', '.join(lp.missing)}; no graft: {lp.reason}")
