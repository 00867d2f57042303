"""Journals are data from disk (docs/security.md): a crafted journal (planted by a user the
state folder was shared with), a corrupted one (a flipped byte, truncated to half or to 0, a
record missing fields), one replaced by a FIFO or made immutable. Each is run through the CLI as
root: nothing outside the tree is touched, nothing is undone from a damaged journal (exit 9 with
what is known), never exit 1 or a hang."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.journal import TxRecord
from tests.security_support import SHARED, Arena, attacker, one_line_error, run_cli
from tests.test_txn_support import LIB, TREE, Machine

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root attacked by an ordinary user: needs root")


@pytest.fixture
def arena():
    a = Arena.make(attacker())
    yield a
    a.cleanup()


@pytest.fixture
def applied(arena):
    """A machine (in the arena, so the attacker can reach a folder handed to them) with one
    committed transaction; (machine, tree hash before, tree hash after)."""
    m = Machine.build(arena.base / "mach")
    old = m.hash()
    apply_plan(m.root, m.plan())
    return m, old, m.hash()


def lines(m: Machine) -> list[str]:
    return m.journals()[0].read_text().splitlines()


def write_lines(m: Machine, ls: list[str]) -> None:
    m.journals()[0].write_text("".join(x + "\n" for x in ls))


# 5. a crafted journal -----------------------------------------------------------------------------
def test_crafted_journal_in_a_shared_state_folder(arena, applied):
    m, old, new = applied
    escape = f"{TREE}/lib/../../../../../victim/precious"  # from the machine's / to the arena's victim
    assert m.root.path(escape).resolve() == arena.precious.resolve()
    tx = m.state("tx")
    subprocess.run(["chown", "-R", f"{arena.uid}:{arena.gid}", str(tx)], check=True)  # handed to the user
    journal = m.journals()[0]

    def craft():
        recs = [json.loads(x) for x in journal.read_text().splitlines()]
        for r in recs:
            if r["type"] == "stage":
                r["temps"].append(escape)
        recs.insert(2, {"type": "intent", "op": "mkdir", "path": f"{TREE}/../../../victim/keep", "mode": 0o755,
                        "uid": 0, "gid": 0})
        journal.write_text("".join(json.dumps(r) + "\n" for r in recs))

    arena.as_attacker(craft)
    rc, doc, err = run_cli(["--root", str(m.base), "rollback"])
    one_line_error(rc, doc, err, "PERMISSION")  # a state folder the user can write: refused
    rc, doc, err = run_cli(["--root", str(m.base), "rollback"], env=SHARED)
    msg = one_line_error(rc, doc, err, "INTERRUPTED")  # opted in: the journal is checked, nothing undone
    assert "damaged" in msg and "victim" in msg
    assert arena.victim_intact() and m.hash() == new


def test_crafted_paths_are_damage_not_actions(tmp_path):
    begin = {"type": "begin", "tree": TREE, "files": [{"path": f"{LIB}/a.co", "op": "create"}], "mkdirs": []}
    for bad in ({"type": "stage", "temps": [f"{LIB}/../../x"]},
                {"type": "stage", "temps": ["/etc/shadow"]},
                {"type": "intent", "op": "mkdir", "path": "/etc"},
                {"type": "intent", "op": "create", "path": "/etc/passwd", "before": {}, "after": {}},
                {"type": "done", "path": "/etc/passwd"},
                {"type": "done"}):
        tx = TxRecord.from_records("0001", tmp_path / "0001.jsonl", [begin, bad], torn=False)
        assert tx.damaged and tx.state == "damaged" and tx.pending, bad
    ok = TxRecord.from_records("0001", tmp_path / "0001.jsonl",
                               [begin, {"type": "stage", "temps": [f"{LIB}/.a.co.rocmrevive-new"]}], torn=False)
    assert not ok.damaged and ok.state == "interrupted"
    random = f"{LIB}/.a.co.0123456789ab.rocmrevive-new"  # a random temporary beside a planned file
    ok = TxRecord.from_records("0001", tmp_path / "0001.jsonl",
                               [begin, {"type": "stage", "temps": [random], "foreign": [random]}], torn=False)
    assert not ok.damaged and ok.foreign == {random}
    for bad in (f"{TREE}/.a.co.0123456789ab.rocmrevive-new",       # not the folder of a planned file
                f"{LIB}/a.co.0123456789ab.rocmrevive-new",         # not a temporary's name
                f"{LIB}/.a.co.0123456789ab.rocmrevive-new/x",
                f"{LIB}/sub/../.a.co.0123456789ab.rocmrevive-new"):
        tx = TxRecord.from_records("0001", tmp_path / "0001.jsonl", [begin, {"type": "stage", "temps": [bad]}],
                                   torn=False)
        assert tx.damaged, bad


def test_a_tree_at_the_root_still_refuses_what_leaves_it(tmp_path):
    """A side-by-side install on a machine without /opt plans from "/" (the nearest folder that
    exists): its journal is whole, but a '..', a '.' or the root itself among its paths is damage."""
    files = [{"path": "/opt/rocmrevive/rccl/5.4.3/lib/librccl.so.1", "op": "create"}]
    mkdirs = ["/opt", "/opt/rocmrevive", "/opt/rocmrevive/rccl", "/opt/rocmrevive/rccl/5.4.3",
              "/opt/rocmrevive/rccl/5.4.3/lib"]
    begin = {"type": "begin", "tree": "/", "files": files, "mkdirs": mkdirs}
    ok = TxRecord.from_records("0001", tmp_path / "0001.jsonl", [begin], torn=False)
    assert not ok.damaged, ok.problems
    for bad in ({**begin, "files": [{"path": "/opt/../etc/passwd", "op": "create"}]},
                {**begin, "files": [{"path": "/", "op": "delete"}]},
                {**begin, "mkdirs": [*mkdirs, "/opt/./x"]},
                {**begin, "tree": "//"}, {**begin, "tree": "/opt/.."}):
        tx = TxRecord.from_records("0001", tmp_path / "0001.jsonl", [bad], torn=False)
        assert tx.damaged and tx.state == "damaged", bad


# 6. corrupted journals ---------------------------------------------------------------------------
def test_a_flipped_byte_in_an_intent_stops_rollback_and_status(applied):
    m, old, new = applied
    ls = lines(m)
    i = next(n for n, x in enumerate(ls) if '"intent"' in x and '"replace"' in x)
    ls[i] = ls[i].replace('"intent"', '"intent"\x01', 1)  # one byte: the line no longer parses
    write_lines(m, ls)
    for cmd in (["rollback"], ["status"], ["recover"]):
        rc, doc, err = run_cli(["--root", str(m.base), *cmd])
        msg = one_line_error(rc, doc, err, "INTERRUPTED")
        assert "damaged" in msg and f"line {i + 1}" in msg, msg
    assert m.hash() == new


@pytest.mark.parametrize("cut", ["half", "zero"])
def test_truncated_journal_is_noticed(applied, cut):
    m, old, new = applied
    j = m.journals()[0]
    size = j.stat().st_size
    os.truncate(j, size // 2 if cut == "half" else 0)
    rc, doc, err = run_cli(["--root", str(m.base), "status"])
    msg = one_line_error(rc, doc, err, "INTERRUPTED")
    if cut == "zero":
        assert "no readable begin" in msg
    rc, doc, err = run_cli(["--root", str(m.base), "recover"])
    if rc == 0:  # every intent survived the cut: a whole undo or roll-forward, never half of one
        assert m.hash() in (old, new)
        rc, doc, err = run_cli(["--root", str(m.base), "status"])
        assert rc == 0 and doc["pending"] == [], doc
    else:
        one_line_error(rc, doc, err, "INTERRUPTED")
        assert m.hash() == new, "a damaged journal was partly undone"


def test_a_record_missing_fields_is_exit_9_not_a_crash(applied):
    m, old, new = applied
    ls = lines(m)
    i = next(n for n, x in enumerate(ls) if '"type":"done"' in x.replace(" ", ""))
    rec = json.loads(ls[i])
    rec.pop("path")
    ls[i] = json.dumps(rec)
    write_lines(m, ls)
    for cmd in (["status"], ["rollback"], ["verify"]):
        rc, doc, err = run_cli(["--root", str(m.base), *cmd])
        assert rc != 1 and "Traceback" not in err and "internal error" not in json.dumps(doc), (cmd, rc, doc)
    assert m.hash() == new


# 12. FIFOs and immutable journals ---------------------------------------------------------------
def test_a_journal_replaced_by_a_fifo_never_hangs(applied):
    m, old, new = applied
    j = m.journals()[0]
    j.unlink()
    os.mkfifo(j)
    rc, doc, err = run_cli(["--root", str(m.base), "status"], timeout=60)
    msg = one_line_error(rc, doc, err, "INTERRUPTED")
    assert "FIFO" in msg
    rc, doc, err = run_cli(["--root", str(m.base), "rollback"], timeout=60)
    one_line_error(rc, doc, err, "INTERRUPTED")
    assert m.hash() == new


def test_an_immutable_journal_is_a_permission_error(applied):
    m, old, new = applied
    j = m.journals()[0]
    subprocess.run(["chattr", "+i", str(j)], check=True)
    try:
        rc, doc, err = run_cli(["--root", str(m.base), "rollback"])
        one_line_error(rc, doc, err, "PERMISSION")
        assert m.hash() == new
    finally:
        subprocess.run(["chattr", "-i", str(j)], check=True)
    rc, doc, err = run_cli(["--root", str(m.base), "rollback"])
    assert rc == 0 and m.hash() == old


def test_a_200000_deep_record_is_a_damaged_journal_not_a_recursion_error(applied):
    """Issue 35, finding 7: nesting no record has is refused before a parser recurses on it."""
    m, old, new = applied
    ls = lines(m)
    ls.insert(1, "[" * 200_000 + "]" * 200_000)
    write_lines(m, ls)
    for cmd in (["status"], ["rollback"], ["recover"]):
        rc, doc, err = run_cli(["--root", str(m.base), *cmd])
        msg = one_line_error(rc, doc, err, "INTERRUPTED")
        assert "damaged" in msg and "line 2" in msg and "RecursionError" not in err, msg
    assert m.hash() == new
