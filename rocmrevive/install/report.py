"""What ``rocmrevive install`` decided and did, per rocBLAS copy and per host library: frozen
outcomes that the steps return (``tensile.install_copy``, ``graft.graft_library``), and the
report the pipeline builds once from them, which the CLI renders and prints as JSON.

    out = install_copy(run, copy)      # a CopyOutcome: out.status is Status.INSTALLED
    report.to_json()["copies"][0]["status"] == "installed"
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Optional, TypeVar, Union

from rocmrevive.errors import RevError
from rocmrevive.hostlib.abi import AbiVerdict
from rocmrevive.install.core import DECLINED, Applied, Status
from rocmrevive.install.records import (
    AbiCheck,
    ArtifactRecord,
    Diff,
    Diversion,
    ErrorRecord,
    PlanSummary,
    SourceRecord,
    UnpinnedArtifact,
    UnpinnedSource,
    VerifyRecord,
    as_json,
    hints,
    read,
)
from rocmrevive.trees.trust import TreeTrust
from rocmrevive.txn.divert import Ownership
from rocmrevive.txn.result import Action

# Errors about the machine rather than one copy: they stop the whole install.
FATAL = ("NETWORK", "LOCKED", "INTERRUPTED", "PERMISSION", "USAGE", "INTERNAL")



@dataclass(frozen=True)
class CopyOutcome:
    """What install decided and did for one rocBLAS copy."""

    library: str                       # machine path of the Tensile library folder
    layout: str
    rocblas_version: Optional[str]
    rocm_version: Optional[str]
    status: Status = Status.PENDING
    reason: str = ""
    manifest: Optional[str] = None
    source: Union[SourceRecord, UnpinnedSource, None] = None
    artifact: Union[ArtifactRecord, UnpinnedArtifact, None] = None
    summary: Optional[PlanSummary] = None
    changes: tuple[Action, ...] = ()
    diff: Optional[Diff] = None
    verify_before: Optional[VerifyRecord] = None
    verify_staged: Optional[VerifyRecord] = None
    verify_after: Optional[VerifyRecord] = None
    txid: Optional[str] = None
    journal: Optional[str] = None
    changed: bool = False
    error: Optional[ErrorRecord] = None   # when this copy was refused
    verification: str = "pinned"          # "pinned" (a manifest's hashes) | "verified by content, unpinned"
    trust: Optional[TreeTrust] = None     # who may write it, decided where it was selected
    as_user: Optional[str] = None         # installed by a child run as the tree's owner (install.as_owner)

    @property
    def label(self) -> str:
        return self.library

    @property
    def what(self) -> str:
        """What a confirmation prompt names."""
        return self.library

    def from_child(self, doc: dict) -> CopyOutcome:
        """This copy as a child run reported it (its ``to_json()``), read field by field with its
        type (the child runs as the tree's owner: anything else is dropped); the copy's own path
        and layout stay the parent's, and so does the trust decision."""
        types = hints(CopyOutcome)

        def typed(name: str):
            ok, v = read(types[name], doc.get(name))
            return v if ok else None

        changes = doc.get("changes")
        status = typed("status")
        return replace(self, rocblas_version=typed("rocblas_version"), rocm_version=typed("rocm_version"),
                       status=self.status if status is None else status, reason=typed("reason") or "",
                       manifest=typed("manifest"), source=typed("source"), artifact=typed("artifact"),
                       summary=typed("summary"),
                       changes=tuple(a for c in changes if (a := Action.from_json(c)) is not None)
                       if isinstance(changes, list) else (),
                       diff=typed("diff"), verify_before=typed("verify_before"),
                       verify_staged=typed("verify_staged"), verify_after=typed("verify_after"),
                       txid=typed("txid"), journal=typed("journal"), changed=doc.get("changed") is True,
                       error=typed("error"), verification=typed("verification") or self.verification,
                       as_user=typed("as_user"))

    def to_json(self) -> dict:
        return _fields_json(self)


@dataclass(frozen=True)
class LibraryOutcome:
    """What install decided and did for one host library (a manifest's ``library`` component) in
    one tree.

    ``status``: absent (the tree has no such library) | satisfied (its device code serves every
    detected gfx906 GPU) | unsupported (no source for the tree's ROCm version, or that version is
    unknown) | refused (the source does not pass the ABI check here: ``lines``; or another reason)
    | planned (--check) | installed | unchanged | declined (answered no at the prompt)."""

    tree: str                          # machine path of the library folder (/opt/rocm-6.4.3/lib)
    soname: str                        # librocsparse.so.1
    name: str                          # rocSPARSE
    rocm_version: Optional[str]
    manifest: Optional[str] = None
    path: Optional[str] = None         # the file the soname link resolves to (what a graft replaces)
    status: Status = Status.PENDING
    reason: str = ""
    missing: list[str] = field(default_factory=list)   # detected targets its device code does not serve
    has: list[str] = field(default_factory=list)       # processors its device code is for
    source: Optional[SourceRecord] = None
    artifact: Optional[ArtifactRecord] = None
    abi_ok: Optional[bool] = None
    lines: list[str] = field(default_factory=list)     # why the ABI check refuses (empty: it loads)
    abi: Optional[AbiVerdict] = None   # the whole verdict of the staged file (hostlib.check_library)
    warnings: list[str] = field(default_factory=list)
    owner: Optional[Ownership] = None  # dpkg ownership of ``path`` (txn.divert.owner_of)
    divert: Optional[Diversion] = None
    summary: Optional[PlanSummary] = None
    changes: tuple[Action, ...] = ()
    diff: Optional[Diff] = None
    verify_after: Optional[AbiCheck] = None
    txid: Optional[str] = None
    journal: Optional[str] = None
    changed: bool = False
    error: Optional[ErrorRecord] = None

    @property
    def label(self) -> str:
        return f"{self.tree}/{self.soname}"

    @property
    def what(self) -> str:
        """What a confirmation prompt names."""
        return f"{self.path} ({self.name} graft)"

    def to_json(self) -> dict:
        return _fields_json(self)


def _fields_json(out: object) -> dict:
    """An outcome's JSON, made here only: its fields in order, each typed value by its ``to_json``."""
    return {f.name: as_json(getattr(out, f.name)) for f in fields(out)}  # type: ignore[arg-type]


Record = Union[CopyOutcome, LibraryOutcome]
R = TypeVar("R", CopyOutcome, LibraryOutcome)


def applied(out: R, walk: Applied, *, check: bool) -> R:
    """``out`` with what the walk (``core.Applied``) decided: its status, the plan's summary and
    diff, the transaction (not with ``check``: a dry run has none).

        out = applied(out, walk, check=run.check)
    """
    if walk.plan is None:
        return replace(out, status=walk.status, reason=walk.reason)
    out = replace(out, status=walk.status, summary=PlanSummary.of(walk.plan), diff=Diff.of(walk.plan))
    if walk.result is None:
        return out
    if check:
        return replace(out, changes=walk.result.actions)
    return replace(out, changes=walk.result.actions, txid=walk.result.txid, journal=walk.result.journal_path,
                   changed=walk.result.changed)


def ended(out: R, status: Status, *, planned: str, installed: str, unchanged: str) -> R:
    """``out`` with its last line, by what its walk did: declined at the prompt, planned (a dry
    run), installed, or nothing to do. One ending for a rocBLAS copy and a graft alike."""
    reason = {Status.DECLINED: DECLINED, Status.PLANNED: planned, Status.INSTALLED: installed}.get(status, unchanged)
    return replace(out, reason=reason)


def refused(out: R, exc: RevError) -> R:
    """``out`` as a step's own failure; a failure of the machine (``FATAL``) is raised again and
    stops the install.

        except RevError as exc: return refused(out, exc)
    """
    if exc.code in FATAL:
        raise exc
    return replace(out, status=Status.REFUSED, reason=exc.message, error=ErrorRecord.of(exc))


@dataclass(frozen=True)
class LeftAlone:
    """A tree found that this run may not write (``trees.trust``): left as it is, with the warning
    line and the command its owner would run."""

    path: str
    trust: TreeTrust
    message: str
    command: Optional[str]            # None: no one user owns it (trees.trust.NotWritable)

    def to_json(self) -> dict:
        return {"path": self.path, "trust": self.trust.to_json(), "message": self.message, "command": self.command}


@dataclass(frozen=True)
class InstallReport:
    """The whole install, built once from the steps' outcomes (``pipeline.install``)."""

    devices: list[str]
    devices_from: str
    copies: tuple[CopyOutcome, ...]
    check: bool
    warnings: tuple[str, ...] = ()
    libraries: tuple[LibraryOutcome, ...] = ()
    libraries_enabled: bool = True
    left_alone: tuple[LeftAlone, ...] = ()

    @property
    def records(self) -> list[Record]:
        return [*self.copies, *self.libraries]

    @property
    def left_without(self) -> list[CopyOutcome]:
        """The copies a gfx906 GPU needs that this install leaves without gfx906 files and without
        an error of their own: no source for their rocBLAS (a ROCm 7.1 tree: the fix is `rocmrevive
        recipe`), or a layout rocmrevive does not patch (TheRock). The request was not met."""
        return [c for c in self.copies if c.status in (Status.UNSUPPORTED, Status.REFUSED) and c.error is None]

    @property
    def changed(self) -> bool:
        """Installed something, or (with check) would."""
        if self.check:
            return any(c.status is Status.PLANNED for c in self.records)
        return any(c.changed for c in self.records)

    def to_json(self) -> dict:
        plans = self.records
        return {"devices": self.devices, "devices_from": self.devices_from, "check": self.check,
                "copies": [c.to_json() for c in self.copies],
                "libraries_enabled": self.libraries_enabled,
                "libraries": [lp.to_json() for lp in self.libraries],
                "left_alone": [a.to_json() for a in self.left_alone],
                "diff": {"before": {f.path: f.before for c in plans if c.diff for f in c.diff.files},
                         "after": {f.path: f.after for c in plans if c.diff for f in c.diff.files}}}
