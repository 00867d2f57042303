"""rocmrevive.gfx906.gfx906_patch: the CLI's JSON mapped to Ansible's contract (changed, failed, msg,
rc, diff), with the real CLI on a machine in a folder."""
from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

from ansible_collections.rocmrevive.gfx906.plugins.modules import gfx906_patch as patch

LIB = "opt/rocm-6.4.3/lib/rocblas/library"


def tree_hash(top: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(top)):
        dirnames.sort()
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            h.update(os.path.relpath(p, top).encode() + b"\0")
            if not os.path.islink(p):
                with open(p, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def args_for(hosts, cli, name="mi50", **extra):
    a = dict(root=str(hosts / name), rocmrevive_bin=cli, manifests=str(hosts / "manifests"),
             source=str(hosts / "librocblas4_6.4.4-4_amd64.deb"), cache=str(hosts / ("cache-" + name)))
    a.update(extra)
    return a


def test_check_mode_predicts_changes_and_writes_nothing(hosts, cli, run_module):
    before = tree_hash(hosts / "mi50/opt")
    code, res = run_module(patch, args_for(hosts, cli), check=True, diff=True)
    assert code == 0 and res["changed"] is True and res["failed"] is False
    assert res["rc"] == 20 and "--check" in res["cmd"]
    assert res["msg"].startswith("would install 9 files into /" + LIB)
    assert len(res["files"]) == 9 and all(v["before"] is None and len(v["after"]) == 64 for v in res["files"].values())
    (d,) = res["diff"]
    assert d["before_header"] == "/%s (before)" % LIB
    assert d["before"].count("absent") == 9 and d["after"].count("sha256:") == 9
    assert tree_hash(hosts / "mi50/opt") == before
    assert not (hosts / "mi50/var/lib/rocmrevive/tx").exists()


def test_check_mode_with_expect_compares_files_and_writes_nothing_on_the_node(hosts, cli, run_module, tmp_path):
    """The fleet's check: the control node's verified file list (fetch --extract) against the node's
    files; the same prediction as install --check, without the package or any write on the node."""
    ex = tmp_path / "extract"
    subprocess.run([cli, "--json", "fetch", "--manifests", str(hosts / "manifests"), "--from",
                    str(hosts / "librocblas4_6.4.4-4_amd64.deb"), "--cache", str(tmp_path / "control-cache"),
                    "--extract", str(ex)], check=True, capture_output=True)
    (sums,) = ex.rglob("SHA256SUMS")
    expect = [{"rocblas_version": "4.4.1", "sums": sums.read_text()}]
    before = tree_hash(hosts / "mi50")
    node = dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, expect=expect)
    code, res = run_module(patch, node, check=True, diff=True)
    assert code == 0 and res["changed"] is True and res["cmd"][-1] == "detect", res
    assert res["msg"] == "would install 9 files into /" + LIB
    assert tree_hash(hosts / "mi50") == before   # the whole machine folder: nothing written
    code, planned = run_module(patch, args_for(hosts, cli), check=True)
    assert res["files"] == planned["files"]   # file for file what install --check predicts
    code, res = run_module(patch, args_for(hosts, cli))   # the real run
    assert code == 0 and res["changed"] is True
    code, res = run_module(patch, node, check=True)
    assert code == 0 and res["changed"] is False and res["msg"] == "/%s: already complete" % LIB
    wrong = [{"rocblas_version": "5.1.0", "sums": sums.read_text()}]
    code, res = run_module(patch, dict(node, expect=wrong), check=True)
    assert res["changed"] is False   # served copies are left alone whatever the list says


def test_present_then_idempotent_then_absent(hosts, cli, run_module):
    before = tree_hash(hosts / "mi50/opt")
    code, res = run_module(patch, args_for(hosts, cli))
    assert code == 0 and res["changed"] is True and res["rc"] == 0
    (copy,) = res["copies"]
    assert copy["status"] == "installed" and copy["txid"]
    assert copy["verify"] == {"before": False, "staged": True, "after": True}  # verdicts only
    assert copy["artifact"]["sha256"] == hashlib.sha256((hosts / "librocblas4_6.4.4-4_amd64.deb").read_bytes()).hexdigest()
    assert "diff" not in res  # only in diff mode
    installed = sorted(p.name for p in (hosts / "mi50" / LIB).iterdir() if "gfx906" in p.name)
    assert sorted(Path(p).name for p in res["files"]) == installed and len(installed) == 9

    code, res = run_module(patch, args_for(hosts, cli))
    assert code == 0 and res["changed"] is False and res["copies"][0]["status"] == "satisfied"
    assert res["msg"] == "/%s: already complete" % LIB

    code, res = run_module(patch, args_for(hosts, cli, state="verified"))
    assert code == 0 and res["changed"] is False and res["verify"]["ok"] is True

    # absent in check mode: predicted, nothing written
    after_install = tree_hash(hosts / "mi50/opt")
    code, res = run_module(patch, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, state="absent"),
                           check=True, diff=True)
    assert code == 0 and res["changed"] is True and "--dry-run" in res["cmd"]
    assert res["msg"].startswith("would roll back transaction ")
    assert res["diff"][0]["after"].count("absent") == 9
    assert tree_hash(hosts / "mi50/opt") == after_install

    code, res = run_module(patch, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, state="absent"))
    assert code == 0 and res["changed"] is True and len(res["transactions"]) == 1
    assert tree_hash(hosts / "mi50/opt") == before

    code, res = run_module(patch, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, state="absent"))
    assert code == 0 and res["changed"] is False and res["msg"].startswith("nothing to roll back")


def test_absent_only_touches_the_named_tree(hosts, cli, run_module):
    code, res = run_module(patch, args_for(hosts, cli))
    assert res["changed"] is True
    code, res = run_module(patch, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, state="absent",
                                       tree=["/opt/rocm-7.0.0"]))
    assert code == 0 and res["changed"] is False
    assert any("gfx906" in p.name for p in (hosts / "mi50" / LIB).iterdir())


def test_verified_fails_with_the_cli_message(hosts, cli, run_module):
    code, res = run_module(patch, args_for(hosts, cli, state="verified"))
    assert code == 1 and res["failed"] is True and res["changed"] is False
    assert res["rc"] == 6 and res["error"]["code"] == "VERIFY_FAILED"
    assert res["msg"] == res["error"]["message"] and "check(s) failed" in res["msg"]


def test_drift_stops_absent_unless_forced(hosts, cli, run_module):
    run_module(patch, args_for(hosts, cli))
    victim = hosts / "mi50" / LIB / "TensileLibrary_lazy_gfx906.dat"
    victim.write_bytes(b"changed by someone else")
    code, res = run_module(patch, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, state="absent"))
    assert code == 1 and res["rc"] == 8 and res["error"]["code"] == "DRIFT"
    assert "TensileLibrary_lazy_gfx906.dat" in res["msg"]
    assert victim.read_bytes() == b"changed by someone else"
    code, res = run_module(patch, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, state="absent", force=True))
    assert code == 0 and res["changed"] is True and not victim.exists()


def test_present_after_a_hand_edit_names_the_drift_then_converges(hosts, cli, run_module):
    """`present` on a copy whose installed files were edited is not "already complete" (while
    `verified` fails): it fails naming the files, and after the rollback it gives the pinned bytes."""
    code, res = run_module(patch, args_for(hosts, cli))
    txid = res["copies"][0]["txid"]
    victim = hosts / "mi50" / LIB / "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx906.dat"
    pinned = victim.read_bytes()
    victim.write_bytes(pinned + b"\n# tuned by hand\n")
    for check in (True, False):
        code, res = run_module(patch, args_for(hosts, cli), check=check)
        assert code == 1 and res["failed"] is True and res["changed"] is False
        assert res["rc"] == 8 and res["error"]["code"] == "DRIFT"
        assert victim.name in res["msg"] and txid in res["msg"] and "rollback --force" in res["msg"]
        assert "already complete" not in res["msg"]
    code, res = run_module(patch, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, state="absent", force=True))
    assert code == 0 and res["changed"] is True
    code, res = run_module(patch, args_for(hosts, cli))
    assert code == 0 and res["changed"] is True and res["copies"][0]["status"] == "installed"
    assert victim.read_bytes() == pinned
    code, res = run_module(patch, args_for(hosts, cli, state="verified"))
    assert code == 0 and res["verify"]["ok"] is True


def test_host_without_gfx906_is_ok_unless_asked_to_fail(hosts, cli, run_module):
    code, res = run_module(patch, args_for(hosts, cli, name="nogpu"))
    assert code == 0 and res["failed"] is False and res["changed"] is False and res["supported"] is False
    assert res["rc"] == 3 and res["msg"].startswith("nothing to do: no gfx906 GPU found")
    code, res = run_module(patch, args_for(hosts, cli, name="nogpu", fail_on_unsupported=True))
    assert code == 1 and res["failed"] is True and res["error"]["code"] == "NOTHING_SUPPORTED"
    # an image built for a card that is not there: --target
    code, res = run_module(patch, args_for(hosts, cli, name="nogpu", target=["gfx906:sramecc+:xnack-"]), check=True)
    assert code == 0 and res["changed"] is True and res["supported"] is True


def test_a_copy_left_without_gfx906_fails_the_task(hosts, cli, run_module, tmp_path):
    """No manifest source for the tree's rocBLAS: the CLI exits 3 naming the copy and the recipe;
    the host has the card, so this is a failure, not "nothing to do"."""
    other = tmp_path / "manifests"
    other.mkdir()
    for m in (hosts / "manifests").glob("*.toml"):
        text = m.read_text().replace(">=4.4.0,<4.5", ">=9.0.0,<9.1").replace('"4.4.1"', '"9.0.1"')
        (other / m.name).write_text(text.replace("/4.4.1/", "/9.0.1/"))
    before = tree_hash(hosts / "mi50/opt")
    for check in (True, False):
        code, res = run_module(patch, args_for(hosts, cli, manifests=str(other), source=None), check=check)
        assert code == 1 and res["failed"] is True and res["rc"] == 3, res
        assert res["error"]["code"] == "NOTHING_SUPPORTED" and "rocmrevive recipe --tree /" + LIB in res["msg"]
        assert res["copies"][0]["status"] == "unsupported" and res.get("supported") is True
    assert tree_hash(hosts / "mi50/opt") == before


def test_bad_source_fails_and_changes_nothing(hosts, cli, run_module, tmp_path):
    bad = tmp_path / "librocblas4_6.4.4-4_amd64.deb"
    data = bytearray((hosts / "librocblas4_6.4.4-4_amd64.deb").read_bytes())
    data[-1] ^= 1
    bad.write_bytes(bytes(data))
    before = tree_hash(hosts / "mi50/opt")
    code, res = run_module(patch, args_for(hosts, cli, source=str(bad)))
    assert code == 1 and res["rc"] == 6 and res["error"]["code"] == "VERIFY_FAILED"
    assert "sha256" in res["msg"] and res["retryable"] is False
    assert tree_hash(hosts / "mi50/opt") == before


def test_missing_cli_and_broken_cli(tmp_path, run_module, monkeypatch):
    from ansible_collections.rocmrevive.gfx906.plugins.module_utils import rocmrevive as rr

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(rr, "EXTRA_BIN_DIRS", [str(tmp_path / "opt")])  # this host's own installs stay out
    code, res = run_module(patch, dict(root=str(tmp_path)))
    assert code == 1 and "rocmrevive is not installed on this host" in res["msg"]
    # a CLI that dies before printing JSON: its stderr reaches the message
    broken = tmp_path / "rocmrevive"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named click' >&2\nexit 1\n")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    code, res = run_module(patch, dict(root=str(tmp_path)))
    assert code == 1 and res["rc"] == 1
    assert res["msg"] == "rocmrevive printed no JSON document (exit 1): ModuleNotFoundError: No module named click"
    # a CLI speaking a newer schema is refused rather than misread
    broken.write_text("#!/bin/sh\necho '{\"schema_version\": 99, \"changed\": false}'\n")
    code, res = run_module(patch, dict(root=str(tmp_path)))
    assert code == 1 and "JSON schema 99" in res["msg"]


def test_file_diffs_renders_paths_inside_the_tree():
    d = patch.file_diffs([("/t/lib", {"before": {"/t/lib/a": None, "/t/lib/b": "11"},
                                      "after": {"/t/lib/a": "22", "/t/lib/b": None}}, "install")])
    assert d == [{"before_header": "/t/lib (before)", "after_header": "/t/lib (after install)",
                  "before": "a  absent\nb  sha256:11\n", "after": "a  sha256:22\nb  absent\n"}]
    assert patch.file_diffs([("/t", {"before": {}, "after": {}}, "install")]) == []
