"""The command line a transaction's journal and a lock file record comes from the CLI
(rocmrevive/invocation.py), never from sys.argv below it: a core called by a test, an Ansible
module or the bench records what its caller gave (nothing, by default)."""
from __future__ import annotations

import json
import os
import sys

from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.invocation import command_line, holder_line, recorded


def _begin_argv(root) -> list[str]:
    (journal,) = (root / "var/lib/rocmrevive/hook/tx").glob("*.jsonl")  # hooks.HOOK_STATE_DIR
    return json.loads(journal.read_text().splitlines()[0])["argv"]


def test_the_journal_records_the_cli_command_line_and_nothing_without_it(tmp_path):
    root = tmp_path / "machine"
    (root / "etc/apt/apt.conf.d").mkdir(parents=True)
    args = ["--json", "--root", str(root), "hook", "install"]
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    # what click parsed, after the program's name; pytest's own arguments are not in it
    assert _begin_argv(root) == [*sys.argv[:1], *args]
    assert command_line() == []  # the CLI's record ends with its run

    from rocmrevive.install.hooks import hook_config, install_hook
    from rocmrevive.rootfs import Root

    other = tmp_path / "other"
    (other / "etc/apt/apt.conf.d").mkdir(parents=True)
    cfg = hook_config(reapply=False, bin_path=None, argv0="python3", state_dir=None,
                      from_path=None, mirror=None, cache=None, manifests_dir=None)
    install_hook(Root(str(other)), cfg)  # the core, called by a caller that records nothing
    assert _begin_argv(other) == []

def test_a_lock_names_its_holder_by_what_the_caller_recorded():
    assert holder_line() == f"{os.getpid()} \n".encode()
    with recorded(["rocmrevive", "install", "--yes"]):
        assert command_line() == ["rocmrevive", "install", "--yes"]
        assert holder_line() == f"{os.getpid()} rocmrevive install --yes\n".encode()
    assert command_line() == []
