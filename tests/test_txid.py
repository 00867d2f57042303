"""Transaction ids never repeat on a machine (issue 45): the machine's state folder and a user's each
start at 0001, and two transactions in one second must still get two ids; ids of the older
``NNNN-YYYYMMDDTHHMMSSZ`` form in existing journals stay usable."""
from __future__ import annotations

import re

import pytest
from test_txn_support import Machine, cli, copy_machine

from rocmrevive.txn import testseam
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.history import list_transactions
from rocmrevive.txn.state import StateDir

TXID = re.compile(r"^(\d{4})-(\d{8}T\d{6}Z)-([0-9a-f]{8})$")
FROZEN = "1796601600"  # 2026-12-07T00:00:00Z


@pytest.fixture
def m(tmp_path) -> Machine:
    return Machine.build(tmp_path)


def test_two_state_folders_in_one_frozen_second_give_two_ids(m, monkeypatch):
    monkeypatch.setenv(testseam.CLOCK_ENV, FROZEN)
    machine = StateDir(m.root, "/var/lib/rocmrevive")
    user = StateDir(m.root, "/home/u/.local/state/rocmrevive")
    ids = [machine.next_txid(), user.next_txid()]
    (a, b) = (TXID.match(i) for i in ids)
    assert a and b, ids
    assert a.group(1, 2) == b.group(1, 2) == ("0001", "20261207T000000Z"), "same sequence, same second"
    assert ids[0] != ids[1]
    # many in one second and one folder state: never a repeat
    assert len({machine.next_txid() for _ in range(2000)}) == 2000


def test_real_transactions_in_two_folders_in_one_second_are_told_apart(m, tmp_path, monkeypatch):
    monkeypatch.setenv(testseam.CLOCK_ENV, FROZEN)
    m2 = copy_machine(m, tmp_path / "second")
    plan = m.plan()
    r1 = apply_plan(m.root, plan, state_dir="/var/lib/rocmrevive")
    r2 = apply_plan(m2.root, m2.plan(), state_dir="/home/u/.local/state/rocmrevive")
    assert r1.changed and r2.changed
    assert r1.txid[:21] == r2.txid[:21] and r1.txid != r2.txid
    # the id is the journal's name and what status lists
    assert [t.txid for t in list_transactions(m.root)] == [r1.txid]


def test_an_old_form_id_in_an_existing_journal_is_still_accepted(m):
    res = apply_plan(m.root, m.plan())
    assert TXID.match(res.txid), res.txid
    tx = m.state("tx")
    old = "0001-20250102T101112Z"
    (tx / f"{res.txid}.jsonl").rename(tx / f"{old}.jsonl")  # a journal written by an earlier release
    rc, doc, err = cli(m, "status")
    assert rc == 0, err
    assert old in str(doc)
    rc, doc, err = cli(m, "rollback", "--dry-run", old)
    assert rc == 0, err
    h = m.hash()
    rc, doc, err = cli(m, "rollback", "0001-2025")  # a prefix of the old form
    assert rc == 0, (doc, err)
    assert m.hash() != h and doc["txid"] == old and doc["state"] == "rolled_back", doc
    # the next transaction counts on from the old id's sequence number and takes the new form
    res2 = apply_plan(m.root, m.plan())
    m2 = TXID.match(res2.txid)
    assert m2 and m2.group(1) == "0002", res2.txid
