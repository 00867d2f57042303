"""The one staged-install walk (rocmrevive/install/core.py): stage, plan, confirm, apply as one
transaction, verify with one policy (a failed check rolls back), on a real folder machine."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rocmrevive.cli.options import STATE_DIR
from rocmrevive.errors import RevError
from rocmrevive.install.core import Decline, Hooks, StagedFiles, Status, Verdict, install_component, staging_area
from rocmrevive.rootfs import Root
from rocmrevive.trees.trust import TreeTrust, Trust
from rocmrevive.txn.history import list_transactions
from rocmrevive.txn.plan import Op
from rocmrevive.txn.result import Action
from rocmrevive.txn.state import DEFAULT_STATE_DIR

TREE = "/opt/rocm-6.4.3/lib"


class OneFile(Hooks):
    """Writes TREE/libdemo.so.1 with ``data``; ``ok`` decides the check after."""

    label = f"{TREE}/libdemo.so.1"

    def __init__(self, data: bytes, ok: bool = True, decline: bool = False):
        self.data, self.ok, self.decline = data, ok, decline
        self.events: list[str] = []

    def stage(self, area: Path) -> StagedFiles:
        if self.decline:
            raise Decline(Status.REFUSED, "would not load here")
        p = area / "libdemo.so.1"
        p.write_bytes(self.data)
        return StagedFiles(TREE, {self.label: p}, source="test", meta={"kind": "test"})

    def verify(self, result) -> Verdict:
        self.events.append("verify")
        return Verdict(self.ok, {"ok": self.ok}, why="the bytes are wrong")

    def after_commit(self, result) -> None:
        self.events.append("commit")

    def after_undo(self) -> None:
        self.events.append("undo")


@pytest.fixture
def root(tmp_path) -> Root:
    (tmp_path / "m" / TREE.lstrip("/")).mkdir(parents=True)
    return Root(tmp_path / "m")


def walk(root: Root, comp, **kw):
    (root.base / "staging").mkdir(exist_ok=True)
    with staging_area(root.base / "staging") as area:
        return install_component(root, comp, area, state_dir=DEFAULT_STATE_DIR, **kw)


def test_check_plans_and_writes_nothing(root):
    applied = walk(root, OneFile(b"x"), check=True)
    assert applied.status is Status.PLANNED and applied.plan.summary()["create"] == 1
    assert not root.path(f"{TREE}/libdemo.so.1").exists()
    assert not list(root.base.joinpath("staging").iterdir()), "the staging area is removed"


def test_apply_verifies_and_a_second_run_is_unchanged(root):
    comp = OneFile(b"graft")
    applied = walk(root, comp)
    assert applied.status is Status.INSTALLED and applied.result.txid
    assert root.path(f"{TREE}/libdemo.so.1").read_bytes() == b"graft"
    assert comp.events == ["commit", "verify"]
    assert walk(root, OneFile(b"graft")).status is Status.UNCHANGED


def test_a_failed_check_after_rolls_back_and_undoes_outside_state(root):
    comp = OneFile(b"bad", ok=False)
    with pytest.raises(RevError) as ei:
        walk(root, comp)
    assert ei.value.code == "VERIFY_FAILED" and "was rolled back: the bytes are wrong" in ei.value.message
    assert not root.path(f"{TREE}/libdemo.so.1").exists()
    assert comp.events == ["commit", "verify", "undo"]
    assert [t.state for t in list_transactions(root)] == ["rolled_back"]


class TensileCheckAfter(OneFile):
    """OneFile checked after by TensileFiles.verify (the library install's check after the apply);
    ``forge`` first puts other bytes of the same size and mtime in the file's place (a new inode)."""

    def __init__(self, data: bytes, root: Root, forge: bool):
        super().__init__(data)
        self.root, self.forge = root, forge

    def verify(self, result) -> Verdict:
        from types import SimpleNamespace

        from rocmrevive.diagnose.verify import Check, CheckStatus, CopyResult
        from rocmrevive.install.tensile import TensileFiles

        real = self.root.path(self.label)
        if self.forge:
            old = real.stat()
            forged = real.with_name("forged")
            forged.write_bytes(bytes(b ^ 0xFF for b in real.read_bytes()))
            os.utime(forged, ns=(old.st_atime_ns, old.st_mtime_ns))
            os.replace(forged, real)
        files = SimpleNamespace(run=SimpleNamespace(root=self.root), files={self.label: real},
                                staged=CopyResult(TREE, None, None, None, "", Check("integrity", CheckStatus.PASS, "")),
                                after=None,
                                real_lib=real.parent, listings=[frozenset(os.listdir(real.parent))])
        return TensileFiles.verify(files, result)


def test_the_check_after_trusts_the_written_inode_and_catches_a_file_put_in_its_place(root, monkeypatch):
    """The check after takes the file the apply wrote, hashed and renamed (same inode, size, mtime,
    ctime) as the staged bytes without reading it again; same size, other bytes and the old mtime
    in a new inode is caught by hashing, and rolled back."""
    # imported before the patch: a module first imported under it would bind no_hash by its
    # `from ... import sha256_file` for good, and later tests would inherit it
    import rocmrevive.diagnose.orphans  # noqa: F401
    import rocmrevive.hashing
    import rocmrevive.install.extract  # noqa: F401
    import rocmrevive.install.graft  # noqa: F401
    import rocmrevive.sources.local  # noqa: F401

    def no_hash(*a, **kw):
        raise AssertionError("the file the apply wrote was hashed again")

    with monkeypatch.context() as mp:
        mp.setattr(rocmrevive.hashing, "sha256_file", no_hash)
        assert walk(root, TensileCheckAfter(b"graft", root, forge=False)).status is Status.INSTALLED
    leaked = sorted(name for name, mod in list(sys.modules.items())
                    if name.startswith("rocmrevive") and getattr(mod, "sha256_file", None) is no_hash)
    assert not leaked, f"modules first imported under the patch keep no_hash: {leaked}"
    with pytest.raises(RevError) as ei:
        walk(root, TensileCheckAfter(b"other", root, forge=True))
    assert ei.value.code == "VERIFY_FAILED" and "1 files differ from what was staged" in ei.value.message
    assert root.path(f"{TREE}/libdemo.so.1").read_bytes() == b"graft", "rolled back to the first install"


def test_not_confirmed_and_declined(root):
    asked = []
    applied = walk(root, OneFile(b"x"), confirm=lambda label, plan: asked.append(label) or False)
    assert applied.status is Status.DECLINED and asked == [f"{TREE}/libdemo.so.1"]
    declined = walk(root, OneFile(b"x", decline=True))
    assert (declined.status, declined.reason, declined.plan) == (Status.REFUSED, "would not load here", None)
    assert not root.path(f"{TREE}/libdemo.so.1").exists() and list_transactions(root) == ()


def test_status_values_are_the_json_strings():
    assert f"{Status.INSTALLED}" == "installed" and Status("planned") is Status.PLANNED


def test_the_cli_default_state_dir_is_the_transactions():
    assert STATE_DIR == DEFAULT_STATE_DIR


def test_the_host_library_is_inspected_once_while_it_is_the_same_file(tmp_path, monkeypatch):
    """verify before and on the staged files share one inspection of librocblas.so; a file put in
    its place (a new inode) is inspected again."""
    import rocmrevive.codeobj.inspect
    from rocmrevive.install.tensile import _host_report

    seen = []
    real = rocmrevive.codeobj.inspect.inspect_file
    monkeypatch.setattr(rocmrevive.codeobj.inspect, "inspect_file", lambda p: seen.append(p) or real(p))
    lib = tmp_path / "librocblas.so.4"
    lib.write_bytes(b"\x7fELF" + bytes(60))
    first = _host_report(lib)
    assert _host_report(lib) is first and len(seen) == 1
    other = tmp_path / "other"
    other.write_bytes(b"\x7fELF" + bytes(60))
    os.replace(other, lib)
    assert _host_report(lib) is not first and len(seen) == 2
    assert _host_report(None) is None


def test_the_outcomes_the_report_and_the_run_are_frozen():
    """A step returns its outcome and the pipeline builds the report once: no record of the
    install path can be filled in from elsewhere after it is made."""
    import dataclasses

    from rocmrevive.install import core, report, run

    records = [obj for mod in (core, report, run) for obj in vars(mod).values()
               if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__]
    assert {r.__name__ for r in records} >= {"CopyOutcome", "LibraryOutcome", "InstallReport", "LeftAlone",
                                             "InstallOptions", "InstallRun", "Applied", "StagedFiles", "Verdict"}
    assert [r.__name__ for r in records if not r.__dataclass_params__.frozen] == []  # type: ignore[attr-defined]
    out = report.CopyOutcome("/opt/rocm-6.4.3/lib/rocblas/library", "rocm-tree", "4.4.1", "6.4.3")
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.status = Status.INSTALLED  # type: ignore[misc]


def test_a_steps_own_failure_is_its_refused_outcome_and_a_machines_stops_the_install():
    from rocmrevive.install.report import FATAL, CopyOutcome, refused

    out = CopyOutcome("/opt/rocm-6.4.3/lib/rocblas/library", "rocm-tree", "4.4.1", "6.4.3", manifest="m")
    got = refused(out, RevError("VERIFY_FAILED", "staged files do not serve it"))
    assert (got.status, got.reason, got.error and got.error.code, got.manifest) == (
        Status.REFUSED, "staged files do not serve it", "VERIFY_FAILED", "m")
    for code in FATAL:
        with pytest.raises(RevError) as ei:
            refused(out, RevError(code, "the machine"))
        assert ei.value.code == code


def test_the_owners_child_outcome_keeps_the_parents_copy_and_reads_the_status_back():
    from rocmrevive.install.report import CopyOutcome

    parent = CopyOutcome("/home/alice/venv/rocblas/library", "python-torch", "4.4.1", "6.4.3",
                         trust=TreeTrust("/home/alice/venv", Trust.OWNER, 1000, "alice", None, "alice's"))
    child = {**parent.to_json(), "library": "/elsewhere", "layout": "other", "status": "installed",
             "txid": "0001-x", "changed": True, "unknown": 1}
    got = parent.from_child(child)
    assert (got.library, got.layout, got.status, got.txid, got.changed) == (
        parent.library, parent.layout, Status.INSTALLED, "0001-x", True)
    assert got.status is Status.INSTALLED and "unknown" not in got.to_json()
    assert got.trust is parent.trust and got.to_json()["trust"]["verdict"] == "owner"   # the parent's decision
    # each field read with its type: the child runs as the tree's owner, a wrong type is dropped
    odd = parent.from_child({"status": "refused", "txid": 5, "changed": "yes", "verify_after": ["x"],
                             "reason": {"a": 1}, "changes": [1, {"op": "create"}, {"path": "/opt/x", "op": "bogus"},
                                                             {"path": "/opt/x", "op": "create", "after": "ab", "size": "9"}]})
    assert (odd.txid, odd.changed, odd.verify_after, odd.reason) == (None, False, None, "")
    assert odd.changes == (Action("/opt/x", Op.CREATE, None, "ab"),)   # frozen actions, each field typed
    assert odd.to_json()["changes"] == [{"path": "/opt/x", "op": "create", "before": None, "after": "ab",
                                         "size": None, "source": None}]
