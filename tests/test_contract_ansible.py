"""Under `ansible-playbook --check` (real ansible-core), no module changes a byte on a node with
a pending transaction (issue 16): the facts module reports it and leaves it alone, the patch
module's `install --check` refuses, and `recover` afterwards still finds it to finish."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.test_ansible import DEB, HOSTS, LIB, Fleet, ansible_venv, installed_collection, template  # noqa: F401
from tests.test_ansible import tree_hash as _hash

pytestmark = pytest.mark.slow


def _all_but_caches(root) -> dict[str, str]:
    """Every byte, mode and owner under ``root`` except /var/cache, where the playbook copies the
    export on purpose (its copy tasks are ``check_mode: false``: a cache, not a change)."""
    out = {}
    for top in sorted(root.iterdir()):
        if top.name != "var":
            out[top.name] = _hash(top)
            continue
        for sub in sorted(top.iterdir()):
            if sub.name != "cache":
                out[f"var/{sub.name}"] = _hash(sub)
    return out


def whole(fleet: Fleet) -> dict[str, dict[str, str]]:
    return {h: _all_but_caches(fleet.root(h)) for h in HOSTS}


def test_check_mode_changes_no_byte_on_a_node_with_a_pending_transaction(template, ansible_venv,
                                                                        installed_collection, tmp_path):
    fleet = Fleet(template, tmp_path / "fleet", ansible_venv, installed_collection)
    node = fleet.root("mi50")
    env = {**os.environ, "ROCMREVIVE_TEST_KILL_AT": "rename:4", "NO_COLOR": "1"}
    r = subprocess.run([str(fleet.cli), "--root", str(node), "install", "--yes", "--manifests",
                        str(fleet.base / "manifests"), "--from", str(fleet.base / DEB), "--cache",
                        str(fleet.base / "node-cache")], capture_output=True, text=True, env=env)
    assert r.returncode == -9, r.stderr
    (journal,) = (node / "var/lib/rocmrevive/tx").glob("*.jsonl")
    txid = journal.stem
    placed = [p for p in (node / LIB.lstrip("/")).iterdir() if "gfx906" in p.name and not p.name.startswith(".")]
    assert len(placed) in range(1, 9)                      # killed mid-rename: the tree is mixed

    before = whole(fleet)
    run = fleet.play("--check", "--diff", name="check-pending")
    after = whole(fleet)
    assert after["mi50"] == before["mi50"], "a module changed the node with the pending transaction"
    assert not (node / "var/cache/rocmrevive").exists()      # install --check refused before fetching
    for h in HOSTS:                                          # and the trees and journals of every node
        assert {k: v for k, v in after[h].items() if k in ("opt", "var/lib")} == \
            {k: v for k, v in before[h].items() if k in ("opt", "var/lib")}, h
    # the patch module's install --check refused with the CLI's line (the only changes the recap
    # counts on mi50 are the playbook's own copies of the export into its cache)
    assert run.recap["mi50"]["failed"] == 1, run.out[-3000:]
    assert 'fatal: [mi50]: FAILED! => {"changed": false' in run.out, run.out[-3000:]
    assert f"transaction {txid} was interrupted; run `rocmrevive recover`" in run.out, run.out[-3000:]
    # the other nodes were planned as usual
    assert run.recap["vii"]["failed"] == 0 and run.recap["vii"]["changed"] >= 1, run.out[-3000:]

    # the facts module alone, in check mode: reports the transaction, changes nothing
    play = tmp_path / "facts.yml"
    play.write_text("- hosts: mi50\n  gather_facts: false\n  tasks:\n"
                    "    - rocmrevive.gfx906.facts:\n        root: \"{{ rocmrevive_root }}\"\n"
                    "        rocmrevive_bin: " + str(fleet.cli) + "\n"
                    "    - ansible.builtin.debug:\n        var: ansible_facts.rocmrevive.pending\n")
    from tests.test_ansible import _env

    env = _env(ansible_venv, fleet.base, fleet.cli.parent)
    env["ANSIBLE_COLLECTIONS_PATH"] = str(installed_collection)
    r = subprocess.run([str(ansible_venv / "bin/ansible-playbook"), "-i", str(fleet.base / "inventory.ini"),
                        str(play), "--check"], capture_output=True, text=True, env=env, cwd=fleet.base)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert txid in r.stdout and "changed=0" in r.stdout, r.stdout[-3000:]
    assert whole(fleet)["mi50"] == before["mi50"]

    # still there for recover to finish
    st = json.loads(subprocess.run([str(fleet.cli), "--root", str(node), "--json", "status"],
                                   capture_output=True, text=True).stdout)
    assert st["pending"] == [txid]
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(node), "--json", "recover"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["recovered"][0]["txid"] == txid
