"""The outcomes of an install hold typed records, not dicts: each record's JSON is the JSON its
producer makes (the same keys and values the CLI's --json and the Ansible collection read), an
owner-run child's document reads back into equal records, and a forged one is dropped field by
field."""
from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import pytest

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.diagnose.verify import Check, CheckStatus, CopyResult, DeviceResult, verify_copy
from rocmrevive.errors import RevError
from rocmrevive.install import records as R
from rocmrevive.install.core import Status
from rocmrevive.install.report import CopyOutcome, LibraryOutcome
from rocmrevive.install.unpinned import UnpinnedBuild
from rocmrevive.sources.artifact import FetchResult, Origin
from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests
from rocmrevive.tensile.xref import XrefReport
from rocmrevive.trees.trust import TreeTrust, Trust
from rocmrevive.txn.plan import FileChange, Op, Plan
from rocmrevive.txn.result import Action

LIB = "/home/alice/venv/lib/python3.12/site-packages/torch/lib/rocblas/library"
# the one dict left below an outcome: hostlib's own verdict keeps its details (needed libraries,
# symbols, coverage) as the JSON it is printed as; the graft outcome holds the verdict itself
KNOWN_DICTS = {"rocmrevive.hostlib.abi.AbiVerdict.details"}


def _dict_fields(cls: type, seen: set[type]) -> set[str]:
    """``module.Class.field`` of every field typed as a dict (or a Mapping, or Any) in ``cls``
    and in every dataclass its fields' types name, however nested (Optional, Union, tuple)."""
    if cls in seen:
        return set()
    seen.add(cls)
    found = set()
    for name, tp in typing.get_type_hints(cls).items():
        if name not in {f.name for f in dataclasses.fields(cls)}:
            continue
        for t in _types_in(tp):
            if t is typing.Any or t is dict or typing.get_origin(t) in (dict, typing.Mapping) or \
                    (isinstance(t, type) and issubclass(t, dict)):
                found.add(f"{cls.__module__}.{cls.__qualname__}.{name}")
            elif dataclasses.is_dataclass(t) and isinstance(t, type):
                found |= _dict_fields(t, seen)
    return found


def _types_in(tp) -> list:
    args = typing.get_args(tp)
    if not args or typing.get_origin(tp) in (dict, typing.Mapping):
        return [tp]
    return [tp, *(t for a in args if a is not Ellipsis for t in _types_in(a))]


def test_no_outcome_record_field_is_dict_typed():
    """Walks every field of both outcomes and of each record they name, down to the leaves."""
    found = _dict_fields(CopyOutcome, set()) | _dict_fields(LibraryOutcome, set())
    assert found == KNOWN_DICTS
    # the walk sees a dict where one is: it is not a test that cannot fail
    Bad = dataclasses.make_dataclass("Bad", [("inner", typing.Optional[tuple[R.SourceRecord, ...]]),
                                             ("meta", typing.Optional[dict])])
    assert _dict_fields(Bad, set()) == {"types.Bad.meta"}


def test_the_records_an_outcome_holds_are_frozen():
    seen: set[type] = set()
    _dict_fields(CopyOutcome, seen)
    _dict_fields(LibraryOutcome, seen)
    ours = [c for c in seen if c.__module__.startswith("rocmrevive.install.")]
    assert {c.__name__ for c in ours} >= {"CopyOutcome", "LibraryOutcome", "SourceRecord", "ArtifactRecord",
                                          "VerifyRecord", "DeviceRecord", "CheckRecord", "ErrorRecord", "Diff",
                                          "PlanSummary", "Diversion", "AbiCheck", "UnpinnedArtifact"}
    assert [c.__name__ for c in ours if not c.__dataclass_params__.frozen] == []  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------
# real values of each producer

def _source():
    return next(s for m in load_manifests(default_manifest_dir()) for s in m.sources if s.rocblas_version)


def _fetched(source) -> FetchResult:
    return FetchResult(Path("/var/cache/rocmrevive/sha256/ab12"), source, Origin.DOWNLOAD, "ab12" * 16, 4096,
                       "pool/main/r/rocblas/librocblas4_6.4.4-4_amd64.deb", "http://mirror.invalid/x.deb", True,
                       {"url": "http://mirror.invalid/x.deb", "pinned_by": "manifest", "from": None})


def _plan() -> Plan:
    return Plan(LIB, [FileChange(f"{LIB}/a.co", Path("/stage/a.co"), "aa" * 32, 10, Op.CREATE, "s"),
                      FileChange(f"{LIB}/b.dat", Path("/stage/b.dat"), "bb" * 32, 20, Op.REPLACE, "s", "cc" * 32),
                      FileChange(f"{LIB}/c.co", Path("/stage/c.co"), "dd" * 32, 5, Op.REPLACE, "s", "dd" * 32)])


def _verify_result() -> CopyResult:
    xref = XrefReport(Path(LIB), TargetId.parse("gfx906:sramecc+:xnack-"), "TensileLibrary_lazy_gfx906.dat",
                      placeholders=3, solutions=7, kernels_found=6, on_disk=["a.co"], seconds=0.1234)
    dev = DeviceResult(TargetId.parse("gfx906:sramecc+:xnack-"),
                       [Check("targets", CheckStatus.PASS, "1 code object(s) load", notes=["a note"]),
                        Check("tensile", CheckStatus.FAIL, "1 problem(s)",
                              [{"kind": "missing", "file": "a.co", "kernels": ["Cijk_x"], "problem": "gone"}])],
                       xref)
    return CopyResult(LIB, f"{LIB}/../../librocblas.so.4", "6.4.3", 5, "ROCm 6.4.3",
                      Check("integrity", CheckStatus.SKIP, "rocmrevive has installed nothing in this copy"),
                      [dev, DeviceResult(TargetId.parse("gfx906"))])


def _wire(doc):
    """As the child writes it and the parent reads it (as_owner._child, _outcome)."""
    return json.loads(json.dumps(doc, default=str))


def test_each_record_makes_the_json_its_producer_makes():
    for m in load_manifests(default_manifest_dir()):
        for s in m.sources:
            assert R.SourceRecord.of(s).to_json() == s.to_json(), s.key
    source = _source()
    assert _wire(R.ArtifactRecord.of(_fetched(source)).to_json()) == _wire(_fetched(source).to_json())
    plan = _plan()
    assert R.PlanSummary.of(plan).to_json() == plan.summary() and R.PlanSummary.of(plan).written == 2
    assert R.Diff.of(plan).to_json() == plan.diff()
    err = RevError("DRIFT", "changed", details={"drift": ["/x"], "transactions": ["0001"]})
    assert R.ErrorRecord.of(err).to_json() == err.to_json()
    assert "details" not in R.ErrorRecord.of(RevError("VERIFY_FAILED", "no")).to_json() == RevError("VERIFY_FAILED", "no").to_json()
    r = _verify_result()
    assert _wire(R.VerifyRecord.of(r).to_json()) == _wire(r.to_json())
    build = UnpinnedBuild("/home/alice/build", "dir", ".", {"a.co": Path("/s/a.co")},
                          [{"file": "rocblas-version.h", "version": "4.4.1"}])
    assert R.UnpinnedArtifact.of(build).to_json() == build.to_json()


@pytest.mark.debian
def test_a_verify_report_of_a_real_copy_is_its_record(tmp_path, rocblas441):
    from tests.test_tensile import debian_copy

    lib = debian_copy(tmp_path, rocblas441)
    (lib / "TensileLibrary_lazy_gfx906.dat").unlink()   # a finding: offenders from the cross-reference
    r = verify_copy(lib, [TargetId.parse("gfx906:sramecc+:xnack-")], host_library=None, show=str)
    assert not r.ok
    rec = R.VerifyRecord.of(r)
    assert _wire(rec.to_json()) == _wire(r.to_json()) and json.dumps(rec.to_json()) == json.dumps(r.to_json())
    assert R.VerifyRecord.from_json(_wire(rec.to_json())) == rec


def _full_outcome(source, artifact) -> CopyOutcome:
    plan = _plan()
    err = RevError("VERIFY_FAILED", "after", details={"verify_after": {"ok": False, "devices": []}})
    verify = R.VerifyRecord.of(_verify_result())
    return CopyOutcome(LIB, "python-torch", "4.4.1", "6.4.3", Status.REFUSED, "after", "rocblas-4.4-gfx906",
                       source, artifact, R.PlanSummary.of(plan), (Action(f"{LIB}/a.co", Op.CREATE, None, "aa" * 32, 10),),
                       R.Diff.of(plan), verify, verify, dataclasses.replace(verify, ok=False), "0001-x",
                       "/home/alice/.local/state/rocmrevive/journal/0001-x.json", True, R.ErrorRecord.of(err),
                       "pinned", TreeTrust("/home/alice/venv", Trust.OWNER, 1000, "alice", None, "alice's"),
                       "alice")


@pytest.mark.parametrize("kind", ["pinned", "unpinned"])
def test_an_outcome_reads_back_from_its_json_equal(kind):
    """outcome -> to_json -> the child's wire -> from_child: the same outcome, every field typed."""
    if kind == "pinned":
        source = _source()
        out = _full_outcome(R.SourceRecord.of(source), R.ArtifactRecord.of(_fetched(source)))
    else:
        build = UnpinnedBuild("/home/alice/build", "dir", ".", {"a.co": Path("/s/a.co")},
                              [{"file": "rocblas-version.h", "version": "4.4.1"}])
        out = _full_outcome(R.UnpinnedSource("/home/alice/build", "verified by content, unpinned"),
                            R.UnpinnedArtifact.of(build))
    assert all(getattr(out, f.name) not in (None, (), "") for f in dataclasses.fields(out)), "every field filled"
    parent = CopyOutcome(LIB, "python-torch", None, None, trust=out.trust)
    got = parent.from_child(_wire(out.to_json()))
    assert got == out
    assert type(got.source) is type(out.source) and type(got.artifact) is type(out.artifact)
    assert json.dumps(got.to_json(), default=str) == json.dumps(out.to_json(), default=str)


def test_a_forged_child_document_loses_the_fields_of_another_type():
    """The child runs as the tree's owner, who may write any document: a record with a field of
    another type is dropped (a tuple drops only the item), never taken as it is."""
    source = _source()
    out = _full_outcome(R.SourceRecord.of(source), R.ArtifactRecord.of(_fetched(source)))
    doc = _wire(out.to_json())
    doc["source"]["size"] = "big"
    doc["artifact"]["origin"] = "the moon"
    doc["summary"]["create"] = True                        # a bool is not a count
    doc["verify_after"]["devices"][0]["checks"][1]["offenders"][0]["kernels"] = ["Cijk_x", 7]
    doc["verify_before"]["devices"][0]["tensile"]["seconds"] = "slow"
    doc["diff"]["after"][f"{LIB}/a.co"] = {"x": 1}
    doc["error"] = {"code": "OK", "exit": "0", "message": "fine"}
    got = CopyOutcome(LIB, "python-torch", None, None).from_child(doc)
    assert (got.source, got.artifact, got.summary, got.error) == (None, None, None, None)
    assert got.verify_after == out.verify_after                       # the item 7 dropped, the kernel kept
    assert got.verify_before is not None and got.verify_before.devices[0].tensile is None
    assert got.diff is not None and got.diff.files[0] == R.FileHashes(f"{LIB}/a.co", None, None)
    assert (got.txid, got.verify_staged, got.changes) == (out.txid, out.verify_staged, out.changes)
