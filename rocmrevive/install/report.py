"""What ``rocmrevive install`` decided and did, per rocBLAS copy and per host library: typed
records (``Status`` from ``core``) that the CLI renders and prints as JSON.

    report.copies[0].status is Status.INSTALLED; report.to_json()["copies"][0]["status"] == "installed"
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from rocmrevive.install.core import Status


@dataclass
class CopyPlan:
    """What install decided for one rocBLAS copy."""

    library: str                       # machine path of the Tensile library folder
    layout: str
    rocblas_version: Optional[str]
    rocm_version: Optional[str]
    status: Status = Status.PENDING
    reason: str = ""
    manifest: Optional[str] = None
    source: Optional[dict] = None
    artifact: Optional[dict] = None
    summary: Optional[dict] = None
    changes: list[dict] = field(default_factory=list)
    diff: Optional[dict] = None
    verify_before: Optional[dict] = None
    verify_staged: Optional[dict] = None
    verify_after: Optional[dict] = None
    txid: Optional[str] = None
    journal: Optional[str] = None
    changed: bool = False
    error: Optional[dict] = None          # {"code", "exit", "message"} when this copy was refused
    verification: str = "pinned"          # "pinned" (a manifest's hashes) | "verified by content, unpinned"
    trust: Optional[dict] = None          # who may write it (trees.trust.TreeTrust.to_json())
    as_user: Optional[str] = None         # installed by a child run as the tree's owner (install.as_owner)

    @property
    def label(self) -> str:
        return self.library

    @property
    def what(self) -> str:
        """What a confirmation prompt names."""
        return self.library

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class LibraryPlan:
    """What install decided for one host library (a manifest's ``library`` component) in one tree.

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
    source: Optional[dict] = None
    artifact: Optional[dict] = None
    abi_ok: Optional[bool] = None
    lines: list[str] = field(default_factory=list)     # why the ABI check refuses (empty: it loads)
    abi: Optional[dict] = None         # the whole verdict (hostlib AbiVerdict.to_json())
    warnings: list[str] = field(default_factory=list)
    owner: Optional[dict] = None       # dpkg ownership of ``path`` (txn.divert.Ownership)
    divert: Optional[dict] = None      # {"wanted", "path", "divert_to", "package", "orig_sha256", "registered", "why_not"}
    summary: Optional[dict] = None
    changes: list[dict] = field(default_factory=list)
    diff: Optional[dict] = None
    verify_after: Optional[dict] = None
    txid: Optional[str] = None
    journal: Optional[str] = None
    changed: bool = False
    error: Optional[dict] = None

    @property
    def label(self) -> str:
        return f"{self.tree}/{self.soname}"

    @property
    def what(self) -> str:
        """What a confirmation prompt names."""
        return f"{self.path} ({self.name} graft)"

    def to_json(self) -> dict:
        return dict(self.__dict__)


Record = Union[CopyPlan, LibraryPlan]


def record_applied(rec: Record, applied, *, check: bool) -> None:
    """Copy an ``Applied`` (core) into a record: the plan's summary and diff, the transaction."""
    rec.status = applied.status
    if applied.plan is None:
        rec.reason = applied.reason
        return
    rec.summary, rec.diff = applied.plan.summary(), applied.plan.diff()
    if applied.result is not None:
        rec.changes = applied.result.actions
        if not check:
            rec.txid, rec.journal = applied.result.txid, applied.result.journal_path
            rec.changed = applied.result.changed


@dataclass
class InstallReport:
    devices: list[str]
    devices_from: str
    copies: list[CopyPlan]
    check: bool
    warnings: list[str] = field(default_factory=list)
    libraries: list[LibraryPlan] = field(default_factory=list)
    libraries_enabled: bool = True
    left_alone: list[dict] = field(default_factory=list)   # trees found that this run may not write (trees.trust)

    @property
    def records(self) -> list[Record]:
        return [*self.copies, *self.libraries]

    @property
    def left_without(self) -> list[CopyPlan]:
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
                "left_alone": self.left_alone,
                "diff": {"before": {k: v for c in plans for k, v in (c.diff or {}).get("before", {}).items()},
                         "after": {k: v for c in plans for k, v in (c.diff or {}).get("after", {}).items()}}}
