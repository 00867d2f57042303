"""``rocmrevive install``, the main path: detect → choose rocBLAS copies → plan → fetch → stage →
verify staged → apply → verify installed → report (docs/architecture.md, "The main path").

    report = install(Root("/"), InstallOptions(check=True))   # what would change, nothing written
    report = install(Root("/"), InstallOptions())             # do it, one transaction per rocBLAS copy

Each rocBLAS copy (``tensile.install_copy``) and each host-library graft (``graft.graft_library``)
is one step walked by ``core.install_component``: one transaction each, and each returns its frozen
outcome; the report is built once from them. The hardware is scanned once, the ``--tree``
arguments are converted once, and every step stages in the same kind of area
(``core.staging_area`` under the cache's ``staging`` folder).
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.errors import RevError
from rocmrevive.hardware.devices import partition_devices
from rocmrevive.install.as_owner import install_as_owner
from rocmrevive.install.core import Status, feed  # noqa: F401 - feed: the progress protocol
from rocmrevive.install.graft import graft_library, library_components
from rocmrevive.install.report import CopyOutcome, InstallReport, LeftAlone, LibraryOutcome
from rocmrevive.install.run import Confirm, InstallOptions, InstallRun, Log
from rocmrevive.install.tensile import TARGET, install_copy
from rocmrevive.rootfs import Root
from rocmrevive.sources.cache import default_cache_dir, read_only_caches
from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests
from rocmrevive.trees import select
from rocmrevive.trees.select import Copy, LibraryFolder
from rocmrevive.trees.trust import TreeTrust, Trust, not_writable
from rocmrevive.txn.divert import reconcile
from rocmrevive.txn.state import DEFAULT_STATE_DIR


def _devices(root: Root, targets) -> tuple[list[TargetId], str, list[TargetId]]:
    """(gfx906 targets, where from, the other detected GPUs): ``--target`` values, else one scan."""
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


def keep_writable(base: Sequence[str], left_alone: list[LeftAlone], chosen: list, rerun=(), *,
                  owner_runs: bool = False) -> list:
    """The ``(item, Chosen)`` pairs this run writes. A tree of one user the user named, root
    running: kept with ``owner_runs`` (written by a child run as its owner, ``as_owner.py``), else
    left alone. Another one it may not write: when named, RevError("PERMISSION", one line, the
    command to run as the tree's owner) before anything is written; when found on its own, left
    alone: added to ``left_alone`` (the report's, with its warning line). ``base``: the options
    before the command in the line printed for a tree's owner (``--root``)."""
    keep = []
    for item, c in chosen:
        why = not_writable(c.trust, c.path, [*base, "install", *c.args, *rerun])
        users = c.named and c.trust.verdict is Trust.OWNER and os.geteuid() == 0
        if why is None or (users and owner_runs):
            keep.append((item, c))
            continue
        if c.named and not users:
            raise why.error()
        left_alone.append(LeftAlone(c.path, c.trust, why.warning(), why.command))
    return keep


def install(root: Root, opts: InstallOptions, *, log: Log = lambda s: None, progress: Optional[Callable] = None,
            confirm: Optional[Confirm] = None) -> InstallReport:
    """Install the gfx906 files every rocBLAS copy lacks (or the ``opts.trees`` named); with
    ``opts.libraries``, also graft each host library that lacks gfx906 where a manifest's source
    provably loads (``graft.py``).

    A copy that cannot be served (no manifest for its version, staged files that fail the
    checks) is reported with its own error and the others go on; machine-wide trouble (lock,
    network, permission, an interrupted transaction) stops everything. ``confirm(outcome, plan)``
    is asked before each copy or library is changed (False skips it); ``progress`` is ``core.feed``'s.

    Who may write each tree is decided once, as it is selected (``trees.trust``): a user's rocBLAS
    copy the user named (``--tree``, ``--python``) is installed by a child run as its owner
    (``as_owner.py``); another tree this run may not write is refused when named and left alone
    with a warning when found; when every rocBLAS copy found was left alone, RevError
    ("PERMISSION"). ``opts.rerun``: the options to repeat in the command printed for a tree's owner."""
    devices, devices_from, others = _devices(root, opts.targets)
    run = InstallRun(root, tuple(devices), tuple(others),
                     tuple(load_manifests(opts.manifests_dir or default_manifest_dir())),
                     Path(opts.cache) if opts.cache else default_cache_dir(root), opts.state_dir or DEFAULT_STATE_DIR,
                     check=opts.check, mirror=opts.mirror, from_path=opts.from_path,
                     cross_version=opts.cross_version, snapshot=opts.snapshot, log=log, progress=progress, confirm=confirm)
    libraries = opts.libraries
    sel = select.for_install(root, opts.trees, pythons=opts.pythons, libraries=libraries)   # once
    named = bool(sel.trees)
    lib_trees = [(f, Chosen(f.path, f.trust, named, ("--tree", f.path))) for f in sel.folders]
    copies = [(c, _chosen(c, named=named)) for c in sel.copies]
    found = bool(copies)
    left_alone: list[LeftAlone] = []
    base = () if root.is_host else ("--root", str(root.base))
    copies = keep_writable(base, left_alone, copies, opts.rerun, owner_runs=True)
    lib_trees = keep_writable(base, left_alone, lib_trees, opts.rerun)
    if not copies and (found or not lib_trees):  # every rocBLAS copy left alone: the request is not met
        raise RevError("PERMISSION", f"no tree this run may write: {left_alone[0].message}",
                       details={"left_alone": [a.to_json() for a in left_alone]})
    # check mode changes nothing, the cache included: what it downloads or unpacks stays private
    with read_only_caches() if opts.check else contextlib.nullcontext():
        copy_outcomes = tuple(_install_one_copy(run, copy, chosen) for copy, chosen in copies)
        lib_outcomes = tuple(_graft_libraries(run, [t for t, _ in lib_trees])) if lib_trees else ()
    warnings = [a.message for a in left_alone]
    warnings += [f"{lp.label} lacks {', '.join(lp.missing)}; no graft: {lp.reason}" for lp in lib_outcomes
                 if lp.status is Status.REFUSED and lp.abi_ok is False]
    return InstallReport([str(d) for d in devices], devices_from, copy_outcomes, opts.check, tuple(warnings),
                         lib_outcomes, libraries_enabled=libraries, left_alone=tuple(left_alone))


def _install_one_copy(run: InstallRun, copy: Copy, chosen: Chosen) -> CopyOutcome:
    """One rocBLAS copy, written by this run or, a user's tree the user named, by a child that is
    its owner (``as_owner.py``)."""
    trust = chosen.trust
    if chosen.trust.writable_by(os.geteuid()):
        return install_copy(run, copy, trust=trust)
    return install_as_owner(run, chosen.trust, lambda mine: install_copy(mine, copy, trust=trust),
                            CopyOutcome(copy.path, copy.layout, copy.rocblas_version, copy.rocm_version, trust=trust))


def _chosen(copy: Copy, *, named: bool) -> Chosen:
    """A copy's decision; it is named when given with --tree, or when it lies in a --python
    environment. Its owner's command names the environment too (the version of a wheel's rocBLAS)."""
    env = copy.env
    args = ["--python", env.prefix or env.site_packages] if env is not None else []
    return Chosen(copy.path, copy.trust, named or bool(env and env.named), (*args, "--tree", copy.path))


def _graft_libraries(run: InstallRun, lib_trees: list[LibraryFolder]) -> list[LibraryOutcome]:
    """Every library component of a manifest for each tree's ROCm version, grafted or not."""
    if not run.check:
        # every transaction keeps dpkg's diversions in step (txn.divert.follow); this mends what was
        # changed outside rocmrevive (a diversion removed by hand): `status` sends the user here
        for line in reconcile(run.root, run.state_dir):
            run.log(line)
    return [graft_library(run, folder, manifest, comp)
            for folder in lib_trees
            for manifest, comp in library_components(run.manifests, folder.rocm_version)]
