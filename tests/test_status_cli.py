"""``rocmrevive status``: per tree what rocmrevive added and when, intact / drifted / missing
(e.g. after an apt upgrade replaced the tree), and the exit codes monitoring relies on."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner
from test_txn_support import LIB, TREE, Machine, cli, run_child

from rocmrevive.cli.main import cli as rocmrevive
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.fsutil import sha256_file
from rocmrevive.txn.lock import TxLock
from rocmrevive.txn.plan import FileChange, Plan


def run(m: Machine, *args: str, as_json: bool = True):
    r = CliRunner().invoke(rocmrevive, ["--root", str(m.base)] + (["--json"] if as_json else []) + list(args))
    if r.exception and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, (json.loads(r.stdout) if as_json else r.stdout), r.stderr


@pytest.fixture
def m(tmp_path) -> Machine:
    return Machine.build(tmp_path)


def _upgrade_replaces_tree(m: Machine, where) -> None:
    """What `apt upgrade` of AMD's packages does to an unversioned-path tree: the package's own
    files come back, files it does not own are gone."""
    pristine = Machine.build(where)
    shutil.rmtree(m.p(TREE))
    subprocess.run(["cp", "-a", str(pristine.p(TREE)), str(m.p(TREE))], check=True)


def test_nothing_done_yet(m):
    rc, doc, _ = run(m, "status")
    assert (rc, doc["trees"], doc["transactions"], doc["pending"], doc["changed"]) == (0, [], [], [], False)
    rc, out, _ = run(m, "status", as_json=False)
    assert rc == 0 and "rocmrevive has changed nothing here" in out
    assert not m.state().exists(), "status wrote something"


def test_status_shows_what_was_added_when_and_that_it_is_intact(m):
    res = apply_plan(m.root, m.plan())
    rc, doc, _ = run(m, "status")
    assert rc == 0 and doc["error"] is None
    assert doc["trees"] == [{"tree": TREE, "exists": True, "state": "intact", "files_managed": 8,
                             "transactions": [res.txid]}]
    t = doc["transactions"][0]
    assert t["txid"] == res.txid and t["state"] == "committed" and t["integrity"] == "intact"
    assert t["tree_given"] == "/opt/rocm" and t["meta"]["manifest"] == "rocblas-4.4.1-gfx906"
    assert t["ops"] == {"create": 6, "replace": 1, "delete": 1} and len(t["intact"]) == 8
    assert t["committed"] and t["began"] <= t["committed"]
    assert sorted(c["path"] for c in t["changes"]) == sorted(t["intact"])
    assert {c["source"] for c in t["changes"]} == {"deb:librocblas4_6.4.4-4_amd64.deb", "test"}
    rc, out, _ = run(m, "status", as_json=False)
    assert f"{TREE}: intact" in out and res.txid in out and "rocblas-4.4.1-gfx906" in out


_RECORD = ["txid", "state", "tree", "tree_given", "began", "committed", "rolled_back", "meta", "files", "bytes",
           "ops", "mkdirs", "changes", "journal", "tree_exists", "integrity", "damage"]


def test_each_transaction_is_the_same_json_record_whatever_its_state(m):
    """The typed history (txn.history.TxSummary) becomes JSON at the edge with the keys, order
    and values it always had: a committed transaction adds its files' four lists, the others not."""
    from rocmrevive.txn.undo import rollback
    first = apply_plan(m.root, m.plan(replace=False, delete=False, subdir=True, n_create=2))
    rollback(m.root)
    second = apply_plan(m.root, m.plan())
    _rc, doc, _ = run(m, "status")
    gone, live = doc["transactions"]
    assert list(gone) == _RECORD and list(live) == _RECORD + ["intact", "drifted", "missing", "superseded"]
    assert (gone["txid"], gone["state"], gone["integrity"], gone["damage"]) == (first.txid, "rolled_back", None, None)
    assert gone["mkdirs"] == [f"{LIB}/gfx906", f"{LIB}/gfx906/extra"] and gone["files"] == 3
    assert list(gone["changes"][0]) == ["path", "op", "sha256", "size", "source"]
    assert gone["bytes"] == sum(c["size"] for c in gone["changes"]) and gone["rolled_back"] >= gone["began"]
    assert live["txid"] == second.txid and live["journal"] == f"/var/lib/rocmrevive/tx/{second.txid}.jsonl"
    assert (live["tree_exists"], live["superseded"], live["drifted"], live["missing"]) == (True, [], [], [])
    assert live["changes"][-1] == {"path": f"{LIB}/Kernels.so-000-gfx90a.hsaco", "op": "delete", "sha256": None,
                                   "size": None, "source": "test"}


def test_an_upgrade_that_replaced_the_tree_shows_as_missing(m, tmp_path):
    apply_plan(m.root, m.plan(replace=False, delete=False))  # a gfx906 install only adds files
    _upgrade_replaces_tree(m, tmp_path / "pkg")
    rc, doc, _ = run(m, "status")
    assert rc == 8 and doc["error"]["code"] == "DRIFT"
    assert "its files are gone" in doc["error"]["message"] and "install again" in doc["error"]["message"]
    t = doc["transactions"][0]
    assert t["integrity"] == "missing" and len(t["missing"]) == 6 and t["intact"] == []
    assert doc["trees"][0]["state"] == "missing"
    rc, out, err = run(m, "status", as_json=False)
    assert rc == 8 and "missing (6 missing)" in out and "install again" in err


def test_a_tree_removed_by_an_upgrade_to_a_new_version(m):
    apply_plan(m.root, m.plan(replace=False, delete=False))
    shutil.rmtree(m.p(TREE))  # ROCm 6.4.4 went to /opt/rocm-6.4.4; 6.4.3 is gone
    rc, doc, _ = run(m, "status")
    assert rc == 8 and doc["trees"][0]["exists"] is False
    rc, out, _ = run(m, "status", as_json=False)
    assert f"{TREE} (folder gone): missing" in out


def test_changed_and_partly_missing_files(m):
    plan = m.plan(replace=False, delete=False)
    apply_plan(m.root, plan)
    m.p(plan.changes[0].dest).unlink()
    rc, doc, _ = run(m, "status")
    assert rc == 8 and doc["transactions"][0]["integrity"] == "partial"
    assert "1 of its files are gone" in doc["error"]["message"]
    m.p(plan.changes[1].dest).write_bytes(b"rebuilt by someone")
    rc, doc, _ = run(m, "status")
    t = doc["transactions"][0]
    assert rc == 8 and t["integrity"] == "drifted"
    rc, out, _ = run(m, "-v", "status", as_json=False)
    assert f"create  drifted    {t['drifted'][0]}" in out
    assert t["drifted"] == [plan.changes[1].dest.replace("/opt/rocm/", "/opt/rocm-6.4.3/")]
    assert "1 of its files were changed by something else" in doc["error"]["message"]


def test_a_later_transaction_supersedes_an_earlier_ones_files(m):
    a = m.staged("a.co", 100)
    b = m.staged("b.co", 200)
    x = "/opt/rocm/lib/rocblas/library/x_gfx906.co"
    apply_plan(m.root, Plan("/opt/rocm", [FileChange(x, a, sha256_file(a)[0], 100, "create")]))
    apply_plan(m.root, Plan("/opt/rocm", [FileChange(x, b, sha256_file(b)[0], 200, "replace")]))
    rc, doc, _ = run(m, "status")
    assert rc == 0
    first, second = doc["transactions"]
    assert first["integrity"] == "superseded" and first["superseded"] == [f"{LIB}/x_gfx906.co"]
    assert second["integrity"] == "intact" and doc["trees"][0]["transactions"] == [first["txid"], second["txid"]]


def test_interrupted_and_in_progress(m):
    assert run_child(m, "apply", m.plan(), kill_at="stage:2").returncode == -9
    rc, doc, _ = run(m, "status")
    assert rc == 9 and doc["transactions"][0]["state"] == "interrupted" and doc["trees"][0]["state"] == "interrupted"
    with TxLock(m.state("lock")):  # a live rocmrevive holding the lock is still working on it
        rc, doc, _ = run(m, "status")
    assert rc == 0 and doc["transactions"][0]["state"] == "in_progress"


def test_tree_filter_and_rolled_back_history(m):
    apply_plan(m.root, m.plan())
    rc, doc, _ = run(m, "rollback")
    assert rc == 0
    rc, doc, _ = run(m, "status", "--tree", "/opt/rocm")
    assert rc == 0 and doc["transactions"][0]["state"] == "rolled_back" and doc["trees"][0]["state"] == "clean"
    rc, doc, _ = run(m, "status", "--tree", "/opt/rocm-7.0.0")     # no such tree: a usage error
    assert rc == 2 and doc["error"]["code"] == "USAGE" and "/opt/rocm-7.0.0 does not exist" in doc["error"]["message"]
    m.p("/opt/rocm-7.0.0").mkdir()
    rc, doc, _ = run(m, "status", "--tree", "/opt/rocm-7.0.0")
    assert rc == 0 and doc["transactions"] == []


def test_status_in_a_real_process(m):
    apply_plan(m.root, m.plan())
    rc, doc, err = cli(m, "status")
    assert rc == 0 and doc["command"] == "status" and doc["trees"][0]["state"] == "intact", err


def test_status_shows_when_the_stack_was_last_proven(tmp_path):
    """`smoke` writes its record; `status` shows it (issue 8: when the stack last worked)."""
    import json as _json
    import subprocess as _sp
    import sys as _sys

    from rocmrevive.rootfs import Root
    from rocmrevive.smoke.record import write_last

    root = tmp_path / "m"
    root.mkdir()
    write_last(Root(root), {"status": "passed", "finished_at": "2026-12-02T10:00:00Z", "parts": {}})
    r = _sp.run([_sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "--json", "status"],
                capture_output=True, text=True)
    doc = _json.loads(r.stdout)
    assert doc["smoke"]["status"] == "passed" and doc["smoke"]["last_passed_at"]
    r = _sp.run([_sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "status"],
                capture_output=True, text=True)
    assert "last smoke test: passed" in r.stdout


def test_a_transaction_whose_files_an_upgrade_replaced_is_superseded_after_the_reinstall_is_rolled_back(m, tmp_path):
    """install, an apt upgrade removes its files, install again, roll that back: the first
    transaction's files were replaced before the second began (it found none): superseded, exit 0."""
    plan = m.plan(replace=False, delete=False)
    first = apply_plan(m.root, plan)
    _upgrade_replaces_tree(m, tmp_path / "pkg")
    before = m.hash()
    assert run(m, "status")[0] == 8
    second = apply_plan(m.root, m.plan(replace=False, delete=False))
    assert run(m, "rollback")[0] == 0
    assert m.hash() == before
    rc, doc, _ = run(m, "status")
    assert rc == 0 and doc["error"] is None
    t1, t2 = doc["transactions"]
    assert (t1["txid"], t1["integrity"], len(t1["superseded"])) == (first.txid, "superseded", 6)
    assert (t2["txid"], t2["state"]) == (second.txid, "rolled_back")
    assert doc["trees"][0]["state"] == "superseded"
    rc, out, _ = run(m, "status", as_json=False)
    assert rc == 0 and f"{TREE}: superseded" in out


def test_a_rolled_back_replace_gives_the_file_back_to_the_earlier_transaction(m):
    """A later transaction that replaced the first one's bytes and was rolled back restored them:
    the first transaction owns the file again, and its drift still counts."""
    a, b = m.staged("a.co", 100), m.staged("b.co", 200)
    x = "/opt/rocm/lib/rocblas/library/x_gfx906.co"
    apply_plan(m.root, Plan("/opt/rocm", [FileChange(x, a, sha256_file(a)[0], 100, "create")]))
    apply_plan(m.root, Plan("/opt/rocm", [FileChange(x, b, sha256_file(b)[0], 200, "replace",
                                                     before_sha256=sha256_file(a)[0])]))
    assert run(m, "rollback")[0] == 0
    rc, doc, _ = run(m, "status")
    assert rc == 0 and doc["transactions"][0]["integrity"] == "intact"
    # the undo wrote the bytes back as a new file (its inode the kernel's choice: the old one may or
    # may not come back), and recorded that file's identity: status judges the owner by it
    st = os.lstat(m.p(x))
    undone = [json.loads(line) for line in m.p(doc["transactions"][1]["journal"]).read_text().splitlines()]
    (end,) = [r for r in undone if r["type"] == "rolled_back"]
    assert end["restored_ident"][end["restored"][0]] == [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns], end
    m.p(x).write_bytes(b"rebuilt by someone")
    rc, doc, _ = run(m, "status")
    assert rc == 8 and doc["transactions"][0]["integrity"] == "drifted"


def test_status_reads_the_smoke_record_without_loading_the_smoke_runners(tmp_path):
    """`status` reads smoke's record only: the runners (PyTorch's, llama.cpp's), the speed judgement and the
    health readers stay unloaded (they were loaded with the package before run_smoke moved to smoke/run.py)."""
    import subprocess as _sp
    import sys as _sys

    from rocmrevive.rootfs import Root
    from rocmrevive.smoke.record import write_last

    root = tmp_path / "m"
    root.mkdir()
    write_last(Root(root), {"status": "passed", "finished_at": "2026-12-02T10:00:00Z", "parts": {}})
    code = ("import sys\nfrom rocmrevive.cli.main import cli\n"
            f"try:\n    cli.main(['--root', {str(root)!r}, '--json', 'status'], standalone_mode=False)\n"
            "finally:\n    print(sorted(m for m in sys.modules if m.startswith('rocmrevive.smoke')), file=sys.stderr)\n")
    r = _sp.run([_sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and '"last_passed_at"' in r.stdout, r.stderr
    loaded = r.stderr.strip().splitlines()[-1]
    assert "rocmrevive.smoke.record" in loaded, loaded
    for heavy in ("rocmrevive.smoke.run", "rocmrevive.smoke.torch_runner", "rocmrevive.smoke.llama",
                  "rocmrevive.smoke.expect"):
        assert f"'{heavy}'" not in loaded, loaded
