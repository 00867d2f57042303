"""Looking for pending transactions does not re-read a machine's whole history (issue 40): a
journal read whole and found final is listed in ``<state>/final-journals`` with its identity and
not read again while that holds; every way of changing it (an edit in place, a cut, a copy in
its place, a forged or planted list) makes it read again, so a damaged or interrupted journal
still refuses the next transaction."""
from __future__ import annotations

import json
import os
import time

import pytest
from test_txn_support import Machine

from rocmrevive.errors import RevError
from rocmrevive.txn import journal as journal_mod
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.state import FINAL_INDEX, StateDir, find_pending, refuse_pending
from rocmrevive.txn.undo import rollback


@pytest.fixture
def m(tmp_path) -> Machine:
    return Machine.build(tmp_path)


def _cycles(m: Machine, n: int) -> None:
    plan = m.plan(replace=False, delete=False, subdir=False, n_create=3)
    for _ in range(n):
        apply_plan(m.root, plan)
        rollback(m.root)


@pytest.fixture
def reads(monkeypatch):
    """How many journals were read whole (TxRecord.load), counted around the real reader."""
    seen: list[str] = []
    real = journal_mod.TxRecord.load.__func__

    def counting(cls, path):
        seen.append(os.path.basename(str(path)))
        return real(cls, path)
    monkeypatch.setattr(journal_mod.TxRecord, "load", classmethod(counting))
    return seen


def _index(m: Machine) -> dict:
    return json.loads(m.state(FINAL_INDEX).read_bytes())["final"]


def test_final_journals_are_read_once_then_only_looked_at(m, reads):
    _cycles(m, 4)
    assert len(m.journals()) == 4
    st = StateDir(m.root)
    refuse_pending(st, remember=True)           # as an apply under its lock: writes the list
    assert sorted(_index(m)) == [j.name for j in m.journals()]
    assert oct(m.state(FINAL_INDEX).stat().st_mode & 0o777) == "0o600", "as private as the journals"
    reads.clear()
    assert find_pending(m.root) == []
    refuse_pending(st, remember=True)
    assert reads == [], f"final journals were read again: {reads}"
    # more cycles: the apply and the rollback list the journal they finished, from the records
    # they wrote, so the next look reads nothing (a rollback itself still reads every journal)
    _cycles(m, 2)
    assert sorted(_index(m)) == [j.name for j in m.journals()]
    reads.clear()
    assert find_pending(m.root) == []
    assert reads == [], reads


def test_a_journal_left_interrupted_is_not_listed(m):
    """An apply killed after its intents: its journal is read by every look and refuses."""
    from test_txn_support import run_child
    _cycles(m, 2)
    plan = m.plan(replace=False, delete=False, subdir=False, n_create=3)
    r = run_child(m, "apply", plan, kill_at="rename:1")
    assert r.returncode != 0
    killed = m.journals()[-1]
    assert killed.name not in _index(m)
    with pytest.raises(RevError) as ei:
        apply_plan(m.root, plan)
    assert ei.value.code == "INTERRUPTED" and killed.stem in ei.value.message
    assert killed.name not in _index(m), "a pending journal was listed as final"


def test_the_list_is_written_only_by_a_caller_holding_the_lock(m):
    _cycles(m, 2)
    os.unlink(m.state(FINAL_INDEX))
    assert find_pending(m.root) == [] and not m.state(FINAL_INDEX).exists(), "a read-only look wrote the list"
    StateDir(m.root).load_pending(remember=True)
    assert m.state(FINAL_INDEX).exists()


def _damage_refuses(m: Machine, damage) -> None:
    _cycles(m, 3)
    refuse_pending(StateDir(m.root), remember=True)
    j = m.journals()[1]
    assert j.name in _index(m)
    time.sleep(0.02)  # past the file system's timestamp tick, as any later edit is
    damage(j)
    with pytest.raises(RevError) as ei:
        apply_plan(m.root, m.plan(replace=False, delete=False, subdir=False, n_create=3))
    assert ei.value.code == "INTERRUPTED", ei.value.message
    assert j.stem in ei.value.message
    assert find_pending(m.root) == [j.stem]


def test_an_indexed_journal_damaged_in_place_still_refuses(m):
    def flip(j):  # same size, one byte of the begin record made unreadable
        data = bytearray(j.read_bytes())
        data[0] = ord("#")
        with open(j, "r+b") as f:
            f.write(data)
    _damage_refuses(m, flip)


def test_an_indexed_journal_cut_back_to_interrupted_still_refuses(m):
    def cut(j):  # the rollback's records removed: interrupted in its undo, or committed-and-undoing
        lines = j.read_bytes().splitlines(keepends=True)
        keep = [x for x in lines if b'"type":"rolled_back"' not in x]
        assert len(keep) < len(lines)
        j.write_bytes(b"".join(keep))
    _damage_refuses(m, cut)


def test_an_indexed_journal_replaced_by_a_copy_still_refuses(m):
    def swap(j):  # another file, with the same length, put in its place
        data = bytearray(j.read_bytes())
        data[0] = ord("#")
        tmp = j.with_name(".swap")
        tmp.write_bytes(bytes(data))
        os.utime(tmp, ns=(j.stat().st_atime_ns, j.stat().st_mtime_ns))
        os.rename(tmp, j)
    _damage_refuses(m, swap)


def test_a_forged_or_planted_list_is_not_believed(m, reads):
    _cycles(m, 2)
    # the damage is made first, then a list claiming the journal final with made-up identities
    j = m.journals()[0]
    data = j.read_bytes()
    j.write_bytes(b"#" + data[1:])
    st = j.stat()
    forged = {j.name: [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns - 1]}
    m.state(FINAL_INDEX).write_text(json.dumps({"v": 1, "final": forged}))
    assert find_pending(m.root) == [j.stem], "an identity that does not match lets the journal be read"
    for junk in (b"", b"{", b"[]", json.dumps({"v": 2, "final": {}}).encode(),
                 json.dumps({"v": 1, "final": {j.name: ["a", 1, 2, 3, 4]}}).encode()):
        m.state(FINAL_INDEX).write_bytes(junk)
        assert find_pending(m.root) == [j.stem]
    os.unlink(m.state(FINAL_INDEX))
    os.mkfifo(m.state(FINAL_INDEX))             # would hang a plain open
    assert find_pending(m.root) == [j.stem]
    os.unlink(m.state(FINAL_INDEX))
    os.symlink(m.state("elsewhere"), m.state(FINAL_INDEX))
    m.state("elsewhere").write_text(json.dumps({"v": 1, "final": forged}))
    assert find_pending(m.root) == [j.stem]


def test_removed_journals_leave_the_list(m):
    _cycles(m, 3)
    refuse_pending(StateDir(m.root), remember=True)
    gone = m.journals()[0]
    os.unlink(gone)
    refuse_pending(StateDir(m.root), remember=True)
    assert sorted(_index(m)) == [j.name for j in m.journals()] and gone.name not in _index(m)


# a rollback and the diversion check read what they need, once ------------------------------
def test_a_rollback_reads_only_the_journal_it_undoes(m, reads):
    _cycles(m, 6)
    res = apply_plan(m.root, m.plan(replace=False, delete=False, subdir=False, n_create=3))
    reads.clear()
    out = rollback(m.root)
    assert out.txid == res.txid and out.changed
    assert reads == [f"{res.txid}.jsonl"], f"a rollback read {len(reads)} journals: {reads}"
    reads.clear()
    again = rollback(m.root, res.txid)          # already rolled back: answered from its journal alone
    assert "already rolled back" in again.warnings[0] and reads == [f"{res.txid}.jsonl"]


def test_a_named_rollback_reads_the_committed_journals_after_it(m, reads):
    _cycles(m, 3)
    first = apply_plan(m.root, m.plan(replace=False, delete=False, subdir=False, n_create=2))
    _cycles(m, 2)                               # rolled back: not read
    later = apply_plan(m.root, m.plan(replace=True, delete=False, subdir=False, n_create=0))
    reads.clear()
    assert rollback(m.root, first.txid).changed
    assert sorted(reads) == sorted([f"{first.txid}.jsonl", f"{later.txid}.jsonl"]), reads


def test_without_the_list_a_rollback_reads_each_journal_once_and_lists_them(m, reads):
    _cycles(m, 4)
    res = apply_plan(m.root, m.plan(replace=False, delete=False, subdir=False, n_create=3))
    os.unlink(m.state(FINAL_INDEX))
    reads.clear()
    assert rollback(m.root).txid == res.txid
    assert sorted(reads) == sorted(j.name for j in m.journals()), "each journal read exactly once"
    assert sorted(_index(m)) == [j.name for j in m.journals()]
    assert {v["state"] for v in _index(m).values()} == {"rolled_back"}


def test_the_divert_check_reads_no_final_journal(m, reads):
    from rocmrevive.txn import divert
    if divert.divert_command(m.root) is None:
        pytest.skip("dpkg-divert is not installed")
    plan = m.plan(replace=False, delete=False, subdir=False, n_create=2)
    graft = plan.changes[0].dest
    plan.meta["divert"] = {"wanted": True, "path": graft}
    res = apply_plan(m.root, plan)
    assert divert.is_diverted(m.root, graft) and _index(m)[f"{res.txid}.jsonl"]["divert"] == graft
    _cycles(m, 5)
    reads.clear()
    assert divert.reconcile(m.root, "/var/lib/rocmrevive") == []  # what install runs each time
    assert reads == [], reads
    # the list's record is believed only while the journal is unchanged: dpkg's diversion removed
    # by hand is put back from the index's record, and a journal rolled back removes it again
    divert.remove_diversion(m.root, graft)
    assert [x.split(" (")[0] for x in divert.reconcile(m.root, "/var/lib/rocmrevive")] == [f"diverted {graft}"]
    reads.clear()
    out = rollback(m.root, res.txid)
    assert reads == [f"{res.txid}.jsonl"], "the undo's own journal is not read back by the divert check"
    assert out.warnings == [f"dpkg-divert: removed the diversion of {graft} (transaction {res.txid} was rolled back)"]
    assert not divert.is_diverted(m.root, graft)
