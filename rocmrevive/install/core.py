"""The staged-install walk, once: stage → plan → confirm → apply (one transaction) → verify
after → undo on failure. Every installer (rocBLAS Tensile files, a host-library graft, an RCCL
side by side, a Python-package patch, the apt hook) is an ``Installable`` walked by
``install_component``.

    with staging_area(cache_dir / "staging") as area:
        applied = install_component(root, item, area, state_dir=state_dir, check=False)
    applied.status            # Status.INSTALLED, applied.result.txid
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Protocol

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.strenum import StrEnum
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.plan import Op, Plan, plan_from_staged
from rocmrevive.txn.result import TxResult
from rocmrevive.txn.undo import rollback


class Status(StrEnum):
    """What an install did (or, with --check, would do) for one thing; the renderers and the JSON
    use the values."""

    SATISFIED = "satisfied"        # nothing needed: it already serves every device
    PLANNED = "planned"            # --check: this would change
    INSTALLED = "installed"        # changed, checked after
    UNCHANGED = "unchanged"        # the same bytes were already in place
    UNSUPPORTED = "unsupported"    # no source for it
    REFUSED = "refused"            # a source exists but does not serve or load here, or it failed
    DECLINED = "declined"          # answered no at the prompt
    ABSENT = "absent"              # not in this tree
    PENDING = "pending"            # not decided yet


class Decline(Exception):
    """Raised by ``Installable.stage``: this is not to be installed, and that is a finding, not an
    error (a graft whose source would not load here: ``Status.REFUSED`` with the reason)."""

    def __init__(self, status: Status, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass(frozen=True)
class StagedFiles:
    """What a component would write: machine path → staged file (verified content), all inside
    ``tree``, with the provenance the journal keeps. ``sha256``: machine path → (sha256, size)
    as the step that wrote the staged file recorded it (the plan takes it instead of hashing
    again; the apply checks every byte it copies against it)."""

    tree: str
    files: dict[str, Path]
    source: str
    meta: dict[str, Any] = field(default_factory=dict)
    sha256: dict[str, tuple[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """A check after the install: ``ok``, its details (JSON) and, when not ok, why (one line)."""

    ok: bool
    detail: Optional[dict] = None
    why: str = ""


class Installable(Protocol):
    """One thing to install. ``stage`` writes what it would install into ``area`` (raising
    RevError when it must not be installed); ``verify`` checks the tree after the transaction;
    ``after_commit``/``after_undo`` keep the component's own state outside the tree in step (dpkg's
    diversions need none: every transaction keeps them in step itself, txn.divert.follow)."""

    label: str

    def stage(self, area: Path) -> StagedFiles: ...

    def verify(self, result: TxResult) -> Verdict: ...

    def after_commit(self, result: TxResult) -> None: ...

    def after_undo(self) -> None: ...


DECLINED = "declined at the prompt; nothing was changed"   # the reason of a step answered no


class Hooks:
    """The do-nothing parts of an ``Installable``, for components that need none of them."""

    def verify(self, result: TxResult) -> Verdict:
        return Verdict(True)

    def after_commit(self, result: TxResult) -> None:
        return None

    def after_undo(self) -> None:
        return None


@dataclass(frozen=True)
class Applied:
    """The outcome of one Installable's walk."""

    status: Status
    plan: Optional[Plan] = None
    result: Optional[TxResult] = None
    verify_after: Optional[Verdict] = None
    reason: str = ""                 # why, when a component declined

    @property
    def pending(self) -> bool:
        return self.status == Status.PLANNED


ConfirmLabel = Callable[[str, Plan], bool]   # the walk asks by label; run.Confirm by outcome


@contextlib.contextmanager
def staging_area(parent: Optional[Path] = None) -> Iterator[Path]:
    """A fresh staging folder below ``parent`` (the system's temporary folder when None),
    removed afterwards: the one way an install makes one.

        with staging_area(cache_dir / "staging") as area: ...
    """
    area = Path(tempfile.mkdtemp(prefix=f"stage-{os.getpid()}-", dir=parent))  # the pid: a sweep knows dead ones
    try:
        yield area
    finally:
        shutil.rmtree(area, ignore_errors=True)


def install_component(root: Root, component: Installable, area: Path, *, state_dir: str, check: bool = False,
                      confirm: Optional[ConfirmLabel] = None) -> Applied:
    """Walk ``component``: stage into ``area``, plan, ask ``confirm(label, plan)`` (not with
    ``check``), apply as one transaction (a dry run with ``check``), then verify. A failed check
    after the install rolls the transaction back and raises VERIFY_FAILED."""
    try:
        staged = component.stage(area)
    except Decline as why:
        return Applied(why.status, reason=why.reason)
    plan = plan_from_staged(root, staged.tree, staged.files, source=staged.source, meta=staged.meta,
                            known=staged.sha256)
    if not check and confirm is not None and not confirm(component.label, plan):
        return Applied(Status.DECLINED, plan, reason=DECLINED)
    res = apply_plan(root, plan, state_dir=state_dir, dry_run=check)
    if check:
        pending = any(a.op != Op.UNCHANGED for a in res.actions)
        return Applied(Status.PLANNED if pending else Status.UNCHANGED, plan, res)
    try:
        component.after_commit(res)
        verdict = component.verify(res)
        if not verdict.ok:
            raise RevError("VERIFY_FAILED", f"{component.label} failed verification after the install and was "
                                            f"rolled back: {verdict.why}", details={"verify_after": verdict.detail})
    except RevError:
        if res.txid and res.changed:
            rollback(root, res.txid, state_dir=state_dir, force=True)
            component.after_undo()
        raise
    return Applied(Status.INSTALLED if res.changed else Status.UNCHANGED, plan, res, verdict)


def feed(progress, stage: str, unit: str):
    """``progress(stage, done, total, unit)`` narrowed to one stage as ``(done, total)``, or None.

    The core never draws: it reports real counts through this callback, and the CLI renders
    them. Stages of one copy, in order: "downloading" (bytes, total = the pinned size),
    "extracting" (members, total = the selected members), "verifying" (checks, total = the
    checks of every device)."""
    if progress is None:
        return None
    return lambda done, total=None: progress(stage, done, total, unit)
