"""``rocmrevive rollback`` and ``recover`` from the outside: JSON documents, exit codes, and the
tree hash proving the rollback is byte-identical; drift, --force, stacked transactions, lost
backups, a read-only tree, a tree an upgrade replaced."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner
from test_txn_support import LIB, TREE, Machine, cli, read_journal

from rocmrevive.cli.main import cli as rocmrevive
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.fsutil import sha256_file
from rocmrevive.txn.plan import FileChange, Plan


def run(m: Machine, *args: str, as_json: bool = True):
    """(exit code, JSON document or text, stderr) of an in-process CLI run."""
    r = CliRunner().invoke(rocmrevive, ["--root", str(m.base)] + (["--json"] if as_json else []) + list(args))
    if r.exception and not isinstance(r.exception, SystemExit):
        raise r.exception
    out = json.loads(r.stdout) if as_json else r.stdout
    return r.exit_code, out, r.stderr


@pytest.fixture
def m(tmp_path) -> Machine:
    return Machine.build(tmp_path)


def test_rollback_restores_the_tree_byte_for_byte_and_says_what_it_did(m):
    h0 = m.hash()
    kernels = m.p(f"{LIB}/Kernels.so-000-gfx90a.hsaco")
    mtimes = {p: os.stat(p).st_mtime_ns for p in (kernels, m.p(f"{LIB}/TensileManifest.txt"))}
    res = apply_plan(m.root, m.plan())
    h1 = m.hash()

    rc, doc, _ = run(m, "rollback", "--dry-run")
    assert (rc, doc["changed"], doc["dry_run"], doc["state"]) == (0, False, True, "dry-run")
    assert m.hash() == h1

    rc, doc, _ = run(m, "rollback")
    assert rc == 0 and doc["error"] is None
    assert doc["changed"] is True and doc["txid"] == res.txid and doc["state"] == "rolled_back"
    assert doc["command"] == "rollback" and doc["schema_version"] == 1
    ops = {a["path"].rsplit("/", 1)[1]: a["op"] for a in doc["actions"]}
    assert ops["TensileManifest.txt"] == ops["Kernels.so-000-gfx90a.hsaco"] == "restore"
    assert ops["gfx906"] == ops["extra"] == "rmdir"
    assert list(ops.values()).count("remove") == 6
    assert doc["diff"]["after"][f"{LIB}/Kernels.so-000-gfx90a.hsaco"] == sha256_file(kernels)[0]
    assert doc["diff"]["after"][f"{LIB}/gfx906/extra/sub.hsaco"] is None
    assert m.root.path(doc["journal"]).is_file()
    assert m.hash() == h0, "rollback is not byte-identical"
    assert {p: os.stat(p).st_mtime_ns for p in mtimes} == mtimes, "restored files got their mtimes back"
    assert read_journal(m.journals()[0])[-1]["type"] == "rolled_back"

    rc, doc, _ = run(m, "rollback")
    assert (rc, doc["changed"], doc["txid"]) == (0, False, None)
    rc, text, _ = run(m, "rollback", as_json=False)
    assert rc == 0 and "nothing to roll back" in text
    rc, text, _ = run(m, "rollback", res.txid, as_json=False)
    assert rc == 0 and "already rolled back" in text


def test_human_output_names_the_transaction_and_counts(m):
    res = apply_plan(m.root, m.plan())
    rc, out, _ = run(m, "rollback", as_json=False)
    assert rc == 0
    assert f"rolled back transaction {res.txid} on {TREE}: 2 restored, 6 removed, 2 folders removed" in out


def test_drift_stops_the_rollback_and_force_keeps_the_changed_bytes(m):
    h0 = m.hash()
    plan = m.plan()
    apply_plan(m.root, plan)
    created = m.p(plan.changes[1].dest)
    created.write_bytes(b"a user's edit")
    replaced = m.p(f"{LIB}/TensileManifest.txt")
    replaced.write_bytes(b"another edit")
    h_drifted = m.hash()

    rc, doc, _ = run(m, "rollback")
    assert rc == 8 and doc["error"]["code"] == "DRIFT" and doc["changed"] is False
    msg = doc["error"]["message"]
    assert "2 files changed since transaction" in msg and created.name in msg and "TensileManifest.txt" in msg
    assert "--force" in msg and len(doc["error"]["details"]["drift"]) == 2
    assert m.hash() == h_drifted, "a refused rollback changed the tree"

    rc, doc, _ = run(m, "rollback", "--force")
    assert rc == 0 and doc["changed"], doc
    assert m.hash() == h0
    for edit in (b"a user's edit", b"another edit"):
        import hashlib
        kept = m.state("backups", hashlib.sha256(edit).hexdigest())
        assert kept.read_bytes() == edit, "forced rollback lost the user's bytes"
    assert any("its bytes are kept" in w for w in doc["warnings"])


def test_a_file_removed_since_is_not_drift(m):
    h0 = m.hash()
    plan = m.plan()
    apply_plan(m.root, plan)
    m.p(plan.changes[0].dest).unlink()
    rc, doc, _ = run(m, "rollback")
    assert rc == 0
    assert {a["op"] for a in doc["actions"] if a["path"].endswith(plan.changes[0].dest.rsplit("/", 1)[1])} == {"keep"}
    assert m.hash() == h0


def test_stacked_transactions_roll_back_last_first(m):
    h0 = m.hash()
    a1 = m.staged("a1.co", 1000)
    x = "/opt/rocm/lib/rocblas/library/x_gfx906.co"
    t1 = apply_plan(m.root, Plan("/opt/rocm", [FileChange(x, a1, sha256_file(a1)[0], 1000, "create")])).txid
    h1 = m.hash()
    a2 = m.staged("a2.co", 2000)
    z = m.staged("z.co", 10)
    t2 = apply_plan(m.root, Plan("/opt/rocm", [
        FileChange(x, a2, sha256_file(a2)[0], 2000, "replace", before_sha256=sha256_file(a1)[0]),
        FileChange("/opt/rocm/lib/rocblas/library/z.co", z, sha256_file(z)[0], 10, "create")])).txid

    rc, doc, _ = run(m, "rollback", t1)
    assert rc == 8 and f"by transaction {t2}; roll that back first" in doc["error"]["message"]
    rc, doc, _ = run(m, "rollback", "nosuchtx")
    assert rc == 2 and doc["error"]["code"] == "USAGE" and "rocmrevive status" in doc["error"]["message"]
    rc, doc, _ = run(m, "rollback")
    assert rc == 0 and doc["txid"] == t2
    assert m.hash() == h1
    rc, doc, _ = run(m, "rollback", "1")  # by number
    assert rc == 0 and doc["txid"] == t1
    assert m.hash() == h0


def test_a_lost_backup_stops_the_rollback_before_anything_changes(m):
    apply_plan(m.root, m.plan())
    h1 = m.hash()
    for b in m.state("backups").iterdir():
        b.write_bytes(b"damaged")
    rc, doc, _ = run(m, "rollback")
    assert rc == 6 and doc["error"]["code"] == "VERIFY_FAILED"
    assert "backup of" in doc["error"]["message"] and "nothing was changed" in doc["error"]["message"]
    assert m.hash() == h1


def test_read_only_tree_refuses_the_rollback_cleanly(m):
    apply_plan(m.root, m.plan())
    h1 = m.hash()
    lib = m.p(LIB)
    r = subprocess.run(["mount", "--bind", "-o", "ro", str(lib), str(lib)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here: {r.stderr.strip()}")
    try:
        rc, doc, _ = run(m, "rollback")
        assert rc == 4 and doc["error"]["code"] == "PERMISSION"
        assert "read-only file system" in doc["error"]["message"]
        assert m.hash() == h1
    finally:
        subprocess.run(["umount", str(lib)], check=True)
    rc, doc, _ = run(m, "rollback")
    assert rc == 0


def test_after_an_upgrade_replaced_the_tree_rollback_has_nothing_to_undo(m, tmp_path):
    plan = m.plan()
    apply_plan(m.root, plan)
    pristine = Machine.build(tmp_path / "pristine")  # what the package installs again
    shutil.rmtree(m.p(TREE))
    subprocess.run(["cp", "-a", str(pristine.p(TREE)), str(m.p(TREE))], check=True)
    h = m.hash()
    rc, doc, _ = run(m, "rollback")
    assert rc == 0 and doc["changed"] is False
    assert {a["op"] for a in doc["actions"]} == {"keep"}
    assert m.hash() == h


def test_recover_with_nothing_pending(m):
    rc, doc, _ = run(m, "recover")
    assert (rc, doc["changed"], doc["recovered"]) == (0, False, [])
    rc, out, _ = run(m, "recover", as_json=False)
    assert "nothing to recover" in out


def test_rollback_cli_in_a_real_process_with_state_dir_option(m):
    apply_plan(m.root, m.plan(), state_dir="/srv/rr-state")
    rc, doc, err = cli(m, "rollback", "--state-dir", "/srv/rr-state")
    assert rc == 0 and doc["changed"] and doc["journal"].startswith("/srv/rr-state/tx/"), err
    rc, doc, err = cli(m, "rollback")  # the default state folder knows nothing of it
    assert rc == 0 and doc["changed"] is False
