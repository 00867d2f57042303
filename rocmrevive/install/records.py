"""The typed parts of an install's outcomes (``report.CopyOutcome``, ``report.LibraryOutcome``):
frozen records made from what the steps found (a manifest's source, the fetched artifact, the
plan's counts and hashes, a verify report, a refusal), whose ``to_json()`` is the one place their
JSON is made (the CLI's --json, the owner-run child's document) and whose ``from_json()`` reads
such a document back field by field with each field's type: a value of another type is dropped
(the child that wrote it runs as the tree's owner, who may forge it).

    s = SourceRecord.of(manifest.source("debian-librocblas4"))
    SourceRecord.from_json(s.to_json()) == s
"""
from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Optional, TypeVar, Union

from rocmrevive.diagnose.verify import Check, CheckStatus, CopyResult, DeviceResult
from rocmrevive.diagnose.verify import Verdict as DeviceVerdict
from rocmrevive.errors import RevError
from rocmrevive.install.unpinned import UnpinnedBuild
from rocmrevive.sources.artifact import FetchResult, Origin
from rocmrevive.sources.manifest import Source, spec_text
from rocmrevive.strenum import StrEnum
from rocmrevive.tensile.xref import XrefReport
from rocmrevive.txn.plan import Op, Plan

T = TypeVar("T", bound="JsonRecord")


def key(name: str, **kw: Any) -> Any:
    """A field whose JSON key is ``name`` (a Python keyword: ``from``)."""
    return field(metadata={"key": name}, **kw)


def omitted(**kw: Any) -> Any:
    """A field left out of the JSON while it is None (as its producer leaves the key out)."""
    return field(default=None, metadata={"omit_none": True}, **kw)


class JsonRecord:
    """A frozen record whose JSON is its fields, in order, each by its type."""

    def to_json(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if v is None and f.metadata.get("omit_none"):
                continue
            out[f.metadata.get("key", f.name)] = as_json(v)
        return out

    @classmethod
    def from_json(cls: type[T], doc: object) -> Optional[T]:
        """The record ``doc`` holds, read field by field with its type; None when ``doc`` is not an
        object or a field without a default is missing or of another type."""
        if not isinstance(doc, dict):
            return None
        types_ = hints(cls)
        kw = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            name = f.metadata.get("key", f.name)
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ok, v = read(types_[f.name], doc[name]) if name in doc else (False, None)
            if ok:
                kw[f.name] = v
            elif required:
                return None
        return cls(**kw)


_HINTS: dict[type, dict[str, Any]] = {}


def hints(cls: type) -> dict[str, Any]:
    """The fields' types of the record class ``cls``, resolved once."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def as_json(v: Any) -> Any:
    """A field's value as JSON: a record (this module's, or another's typed value such as
    ``txn.result.Action``) by its ``to_json``, a tuple as a list."""
    if isinstance(v, JsonRecord) or callable(getattr(v, "to_json", None)):
        return v.to_json()
    if isinstance(v, tuple):
        return [as_json(x) for x in v]
    return v


def read(tp: Any, v: object) -> tuple[bool, Any]:
    """(whether ``v``, a JSON value, is of the type ``tp``, it as that type). A tuple keeps the
    items that are of its item type."""
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        for arm in typing.get_args(tp):
            ok, got = read(arm, v)
            if ok:
                return True, got
        return False, None
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(v, list):
            return False, None
        if len(args) == 2 and args[1] is Ellipsis:
            items = [read(args[0], x) for x in v]
            return True, tuple(got for ok, got in items if ok)
        if len(v) != len(args):
            return False, None
        items = [read(a, x) for a, x in zip(args, v)]
        return (True, tuple(got for _ok, got in items)) if all(ok for ok, _got in items) else (False, None)
    if isinstance(tp, type) and issubclass(tp, JsonRecord):
        got = tp.from_json(v)
        return got is not None, got
    if isinstance(tp, type) and issubclass(tp, StrEnum):
        try:
            return True, tp(v)
        except ValueError:
            return False, None
    return _scalar(tp, v)


def _scalar(tp: Any, v: object) -> tuple[bool, Any]:
    if tp is type(None):
        return v is None, None
    if tp is bool:
        return isinstance(v, bool), v
    if tp is int:
        return isinstance(v, int) and not isinstance(v, bool), v
    if tp is float:
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        return number, float(v) if number else None  # type: ignore[arg-type]
    if tp is str:
        return isinstance(v, str), v
    raise TypeError(f"no JSON reader for {tp!r}")


# ------------------------------------------------------------------------------------------
# where the files came from

@dataclass(frozen=True)
class SourceRecord(JsonRecord):
    """A manifest's source (``sources.manifest.Source``) as an outcome reports it: the same keys
    as ``Source.to_json``, its versions and ranges as text."""

    name: str
    kind: str
    package: str
    version: str
    suite: str
    component: str
    arch: str
    repo: Optional[str]
    filename: Optional[str]
    size: Optional[int]
    sha256: Optional[str]
    signed_by: Optional[str]
    key_url: Optional[str]
    member_prefix: str
    rocblas_version: Optional[str]
    compatible: Optional[str]
    rocm_version: Optional[str]
    rocm_versions: Optional[str]
    cross_version: bool
    files: Optional[int]
    note: str
    pinned: bool
    sha1: Optional[str]
    seen: Optional[str]

    @classmethod
    def of(cls, s: Source) -> SourceRecord:
        def text(v: object) -> Optional[str]:
            return None if v is None else str(v)

        return cls(s.name, s.kind, s.package, s.version, s.suite, s.component, s.arch, s.repo, s.filename, s.size,
                   s.sha256, s.signed_by, s.key_url, s.member_prefix, text(s.rocblas_version),
                   None if s.compatible is None else spec_text(s.compatible), text(s.rocm_version),
                   None if s.rocm_versions is None else spec_text(s.rocm_versions), s.cross_version,
                   s.expected_files, s.note, s.pinned, s.sha1, s.seen)


@dataclass(frozen=True)
class UnpinnedSource(JsonRecord):
    """``--from`` a build no manifest pins, accepted by content (``install.unpinned``)."""

    given: str = key("from")
    verification: str = ""
    kind: str = "unpinned"

    def to_json(self) -> dict:
        return {"kind": self.kind, "from": self.given, "verification": self.verification}

    @classmethod
    def from_json(cls, doc: object) -> Optional[UnpinnedSource]:
        got = super().from_json(doc)
        return got if got is not None and got.kind == "unpinned" else None


@dataclass(frozen=True)
class Provenance(JsonRecord):
    """How an artifact was found and pinned (``FetchResult.provenance``: ``url``, ``pinned_by``,
    ``from``, ``index``, ``warning`` ...): its lines as (key, text) pairs, in the order found."""

    lines: tuple[tuple[str, Optional[str]], ...] = ()

    def get(self, name: str) -> Optional[str]:
        return next((v for k, v in self.lines if k == name), None)

    def to_json(self) -> dict:
        return dict(self.lines)

    @classmethod
    def from_json(cls, doc: object) -> Optional[Provenance]:
        if not isinstance(doc, dict):
            return None
        return cls(tuple((k, v) for k, v in doc.items() if isinstance(k, str) and (v is None or isinstance(v, str))))


@dataclass(frozen=True)
class ArtifactRecord(JsonRecord):
    """A fetched, verified artifact (``sources.artifact.FetchResult``) as an outcome reports it."""

    path: str
    origin: Origin
    sha256: Optional[str]
    size: Optional[int]
    filename: str
    url: Optional[str]
    verified: bool
    provenance: Provenance = Provenance()

    @classmethod
    def of(cls, f: FetchResult) -> ArtifactRecord:
        prov = Provenance(tuple((k, None if v is None else str(v)) for k, v in f.provenance.items()))
        return cls(str(f.path), f.origin, f.sha256, f.size, f.filename, f.url, f.verified, prov)

    @property
    def shown(self) -> str:
        """What the user would look for: the --from file or folder they gave, else the package's
        file name (not its pool path)."""
        given = self.provenance.get("from")
        if self.origin in (Origin.LOCAL, Origin.LOCAL_TREE) and given:
            return given
        return (self.filename or "?").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Evidence(JsonRecord):
    """A version a file of an unpinned build states (``unpinned.UnpinnedBuild.evidence``)."""

    file: str
    version: str


@dataclass(frozen=True)
class UnpinnedArtifact(JsonRecord):
    """The staged build of an unpinned ``--from`` (``unpinned.UnpinnedBuild``)."""

    given: str = key("from")
    kind: str = ""
    library: str = ""
    files: int = 0
    version_evidence: tuple[Evidence, ...] = ()

    @classmethod
    def of(cls, b: UnpinnedBuild) -> UnpinnedArtifact:
        return cls(b.source, b.kind, b.library_member, len(b.by_name),
                   tuple(Evidence(str(e["file"]), str(e["version"])) for e in b.evidence))

    @property
    def shown(self) -> str:
        return self.given


# ------------------------------------------------------------------------------------------
# what the plan changes

@dataclass(frozen=True)
class PlanSummary(JsonRecord):
    """Counts of what a plan changes (``txn.plan.Plan.summary``)."""

    tree: str
    files: int
    create: int
    replace: int
    delete: int
    unchanged: int
    bytes: int
    sources: tuple[str, ...] = ()

    @classmethod
    def of(cls, plan: Plan) -> PlanSummary:
        s = plan.summary()
        return cls(s["tree"], s["files"], s[Op.CREATE], s[Op.REPLACE], s[Op.DELETE], s[Op.UNCHANGED], s["bytes"],
                   tuple(s["sources"]))

    @property
    def written(self) -> int:
        """Files added or replaced."""
        return self.create + self.replace


@dataclass(frozen=True)
class FileHashes:
    """One file of a plan: its sha256 before (None: absent) and after (None: deleted)."""

    path: str
    before: Optional[str]
    after: Optional[str]


@dataclass(frozen=True)
class Diff(JsonRecord):
    """The plan's files as the planner saw them (``txn.plan.Plan.diff``); JSON
    ``{"before": {path: sha}, "after": {path: sha}}``."""

    files: tuple[FileHashes, ...] = ()

    @classmethod
    def of(cls, plan: Plan) -> Diff:
        return cls(tuple(FileHashes(c.dest, c.before_sha256, c.sha256) for c in plan.changes))

    def to_json(self) -> dict:
        return {"before": {f.path: f.before for f in self.files}, "after": {f.path: f.after for f in self.files}}

    @classmethod
    def from_json(cls, doc: object) -> Optional[Diff]:
        if not isinstance(doc, dict):
            return None
        before, after = doc.get("before"), doc.get("after")
        if not isinstance(before, dict) or not isinstance(after, dict):
            return None

        def sha(v: object) -> Optional[str]:
            return v if isinstance(v, str) else None

        paths = [p for p in (*after, *(p for p in before if p not in after)) if isinstance(p, str)]
        return cls(tuple(FileHashes(p, sha(before.get(p)), sha(after.get(p))) for p in paths))


# ------------------------------------------------------------------------------------------
# a refusal

@dataclass(frozen=True)
class Opaque(JsonRecord):
    """A JSON value an outcome carries without reading it (an error's ``details``: each error code
    its own shape), kept as its JSON text."""

    text: str = "null"

    @classmethod
    def of(cls, value: object) -> Opaque:
        return cls(json.dumps(value, default=str))

    def to_json(self) -> Any:
        return json.loads(self.text)

    @classmethod
    def from_json(cls, doc: object) -> Optional[Opaque]:
        try:
            return cls.of(doc)
        except (TypeError, ValueError, RecursionError):
            return None


@dataclass(frozen=True)
class ErrorRecord(JsonRecord):
    """Why a step refused (``RevError.to_json``): the code, its exit status, the line."""

    code: str
    exit: int
    message: str
    details: Optional[Opaque] = omitted()

    @classmethod
    def of(cls, exc: RevError) -> ErrorRecord:
        return cls(exc.code, exc.exit, exc.message, Opaque.of(exc.details) if exc.details else None)


# ------------------------------------------------------------------------------------------
# a verify report (``diagnose.verify.CopyResult``) as an outcome keeps it

@dataclass(frozen=True)
class Offender(JsonRecord):
    """A file a check found wrong."""

    kind: str
    file: str
    kernels: tuple[str, ...] = ()
    problem: str = ""

    @classmethod
    def of(cls, o: dict) -> Offender:
        return cls(str(o.get("kind") or ""), str(o.get("file") or ""), tuple(str(k) for k in o.get("kernels") or ()),
                   str(o.get("problem") or ""))


@dataclass(frozen=True)
class CheckRecord(JsonRecord):
    name: str
    status: CheckStatus
    summary: str
    offenders: tuple[Offender, ...] = ()
    notes: tuple[str, ...] = ()

    @classmethod
    def of(cls, c: Check) -> CheckRecord:
        return cls(c.name, c.status, c.summary, tuple(Offender.of(o) for o in c.offenders), tuple(c.notes))


@dataclass(frozen=True)
class XrefRecord(JsonRecord):
    """The Tensile cross-reference's counts (``tensile.xref.XrefReport``, without its findings)."""

    library: str
    device: str
    lazy_index: str
    placeholders: int
    solutions: int
    asm_solutions: int
    source_solutions: int
    kernels_found: int
    code_objects_referenced: int
    code_objects_on_disk: int
    lazy: bool
    generic_only: bool
    ok: bool
    seconds: float

    @classmethod
    def of(cls, x: XrefReport) -> XrefRecord:
        return cls(str(x.library), str(x.device), x.lazy_index, x.placeholders, x.solutions, x.asm_solutions,
                   x.source_solutions, x.kernels_found, x.referenced, len(x.on_disk), x.lazy, x.generic_only, x.ok,
                   round(x.seconds, 3))


@dataclass(frozen=True)
class DeviceRecord(JsonRecord):
    target: str
    ok: bool
    verdict: DeviceVerdict
    checks: tuple[CheckRecord, ...] = ()
    tensile: Optional[XrefRecord] = omitted()

    @classmethod
    def of(cls, d: DeviceResult) -> DeviceRecord:
        return cls(str(d.target), d.ok, d.verdict, tuple(CheckRecord.of(c) for c in d.checks),
                   None if d.xref is None else XrefRecord.of(d.xref))


@dataclass(frozen=True)
class VerifyRecord(JsonRecord):
    """One copy's verify report (``diagnose.verify.CopyResult``): before, on the staged files, after."""

    library: str
    host_library: Optional[str]
    rocm_version: Optional[str]
    runtime_max_code_object_version: Optional[int]
    runtime_basis: str
    ok: bool
    integrity: CheckRecord
    devices: tuple[DeviceRecord, ...] = ()

    @classmethod
    def of(cls, r: CopyResult) -> VerifyRecord:
        return cls(r.library, r.host_library, r.rocm_version, r.runtime_co_max, r.runtime_basis, r.ok,
                   CheckRecord.of(r.integrity), tuple(DeviceRecord.of(d) for d in r.devices))


# ------------------------------------------------------------------------------------------
# a graft's

@dataclass(frozen=True)
class AbiCheck(JsonRecord):
    """The ABI check of the grafted file after the install (``hostlib.check_library``)."""

    ok: bool
    lines: tuple[str, ...]
    summary: str


@dataclass(frozen=True)
class Diversion(JsonRecord):
    """Whether dpkg's copy of the grafted file is diverted (``txn.divert``), and why not."""

    wanted: bool
    path: str
    divert_to: Optional[str]
    package: Optional[str]
    orig_sha256: Optional[str]
    registered: bool
    why_not: str
