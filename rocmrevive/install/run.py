"""What one ``rocmrevive install`` is asked (``InstallOptions``, built once by the CLI) and what
every step of it shares (``InstallRun``: the request resolved once — devices scanned, manifests
loaded, cache and state folders — with the user's callbacks).

    opts = InstallOptions(trees=("/opt/rocm-6.4.3",), check=True)
    report = install(Root("/"), opts, log=print)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable, Optional, TypeVar

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.install import unpinned
from rocmrevive.install.core import Applied, install_component, staging_area
from rocmrevive.install.extract import staging_parent
from rocmrevive.install.report import CopyOutcome, LibraryOutcome, Record, applied
from rocmrevive.rootfs import Root
from rocmrevive.txn.plan import Plan

Log = Callable[[str], None]
Outcome = TypeVar("Outcome", CopyOutcome, LibraryOutcome)
Confirm = Callable[[Record, Plan], bool]


@dataclass(frozen=True)
class InstallOptions:
    """What the user asked of ``install``: the CLI's options, once. ``rerun``: the options a tree's
    owner repeats in the command printed for them."""

    trees: tuple[str, ...] = ()
    targets: tuple = ()
    pythons: tuple[str, ...] = ()
    manifests_dir: Optional[str] = None
    cache: Optional[str] = None
    mirror: Optional[str] = None
    from_path: Optional[str] = None
    cross_version: bool = False
    check: bool = False
    snapshot: Optional[str] = None
    state_dir: Optional[str] = None
    libraries: bool = True
    rerun: tuple[str, ...] = ()


@dataclass(frozen=True)
class InstallRun:
    """What every step of one install shares: the machine, the devices (scanned once), the
    manifests, the cache and state folders, the options the steps read, and the user's
    callbacks. A run as a tree's owner (``as_owner.py``) is a copy with the owner's folders."""

    root: Root
    devices: tuple[TargetId, ...]
    others: tuple[TargetId, ...]           # detected GPUs that are not gfx906 (a graft keeps serving them)
    manifests: tuple
    cache_dir: Path
    state_dir: str
    check: bool = False
    mirror: Optional[str] = None
    from_path: Optional[str] = None
    cross_version: bool = False
    snapshot: Optional[str] = None         # Debian's snapshot archive (None: Debian's; "none": never)
    log: Log = lambda s: None
    progress: Optional[Callable] = None    # progress(stage, done, total, unit): see ``core.feed``
    confirm: Optional[Confirm] = None      # confirm(outcome so far, plan) -> bool, before a tree is changed

    @property
    def staging(self) -> Path:
        return staging_parent(self.cache_dir)

    @cached_property
    def from_is_build(self) -> bool:
        """Whether ``--from`` is a rocBLAS build (``unpinned.offered_as_build``), decided at most once
        per run (a copy of the run decides again); packages and exports keep their meaning:
        artifacts matched to the manifests by sha256."""
        assert self.from_path is not None
        given = Path(self.from_path)
        if given.is_file():  # a .deb is listed once, in a staging area (nothing is written there)
            with staging_area(self.staging) as area:
                return unpinned.offered_as_build(given, area)
        return unpinned.offered_as_build(given, None)

    def walk(self, out: Outcome, item) -> tuple[Outcome, Applied]:
        """Walk ``item`` (an ``Installable`` whose ``found_in(out)`` adds what it decided to an outcome)
        for the step whose outcome so far is ``out``: staged in a fresh area, the user asked with
        ``out`` as it stands then, one transaction (a dry run with ``check``). Returns ``out`` with
        what the item found and what the walk did, and the walk (``core.Applied``)."""
        def confirm(_label: str, plan: Plan) -> bool:
            assert self.confirm is not None
            return self.confirm(item.found_in(out), plan)

        with staging_area(self.staging) as area:
            walk = install_component(self.root, item, area, state_dir=self.state_dir, check=self.check,
                                     confirm=None if self.confirm is None else confirm)
        return applied(item.found_in(out), walk, check=self.check), walk
