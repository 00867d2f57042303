"""What apt users type works: ``install --dry-run`` / ``-s`` (= ``--check``), ``--assume-yes``
(= ``--yes``), a mistyped command gets "did you mean", and a successful install ends with a
closing line that says how to check and undo it, as the user must type it."""
from __future__ import annotations

import json

from tests.test_install import demo, rr, tree_hash  # noqa: F401  (demo is a fixture)


def test_apt_aliases_and_a_closing_line(demo):
    root, _deb, args = demo
    before = tree_hash(root / "opt")
    args = [a for a in args if a != "--yes"]
    for alias in ("--dry-run", "-s"):
        doc = json.loads(rr(root, "--json", "install", alias, *args, check_rc=20).stdout)
        assert doc["error"]["code"] == "CHANGES_PENDING" and doc["changed"] is False
    assert tree_hash(root / "opt") == before
    r = rr(root, "install", "--assume-yes", *args, check_rc=0)
    last = r.stdout.rstrip().splitlines()[-1]
    assert last.startswith("done: 1 transaction applied") and f"rocmrevive --root {root} verify" in last
    assert f"sudo rocmrevive --root {root} rollback" in last
    r = rr(root, "install", "--assume-yes", *args, check_rc=0)   # nothing to do: no closing line
    assert "done:" not in r.stdout


def test_a_mistyped_command_gets_did_you_mean(tmp_path):
    r = rr(tmp_path, "instal")
    assert r.returncode == 2 and "No such command 'instal': did you mean 'install'?" in r.stderr
    r = rr(tmp_path, "--json", "rolback")
    assert r.returncode == 2 and "did you mean 'rollback'?" in json.loads(r.stdout)["error"]["message"]
    r = rr(tmp_path, "frobnicate")
    assert r.returncode == 2 and "did you mean" not in r.stderr
