"""Every command declares its policy where it is defined (rocmrevive/cli/policy.py): what it
writes and what it does about a transaction a killed run left open. No table of names decides it."""
from __future__ import annotations

import click
import pytest

from rocmrevive.cli.main import cli
from rocmrevive.cli.policy import OnPending, PolicyMissing, command_at, policy, policy_of
from rocmrevive.cli.ui import runnable
from rocmrevive.rootfs import Root


def _walk(group: click.Group, path: str = ""):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, f"{path}{name} is listed but cannot be loaded"
        yield f"{path}{name}", cmd
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, f"{path}{name} ")


def test_every_command_of_the_tree_declares_a_policy():
    seen = dict(_walk(cli))
    # the subcommands are walked too, not only the top level
    for sub in ("rccl install", "patch apply", "hook install", "hook run", "cache clean", "manifests check"):
        assert sub in seen, f"{sub} not walked: {sorted(seen)}"
    missing = []
    for name, cmd in seen.items():
        try:
            policy_of(cmd)
        except PolicyMissing:
            missing.append(name)
    assert not missing, f"commands without @policy: {missing}"


def test_a_command_without_a_policy_fails_loudly():
    @click.command("undeclared")
    def undeclared():
        pass

    with pytest.raises(PolicyMissing, match="'undeclared' declares no policy"):
        policy_of(undeclared)

    @policy(writes=True, on_pending=OnPending.REFUSE)
    @click.command("declared")
    def declared():
        pass

    assert policy_of(declared).writes and policy_of(declared).on_pending is OnPending.REFUSE
    with pytest.raises(TypeError):
        policy(writes=False, on_pending=OnPending.IGNORE)(lambda: None)  # type: ignore[type-var]


def test_a_typed_line_finds_its_command_through_groups():
    assert command_at(["rccl", "install", "--to", "/x"]).name == "install"
    assert policy_of(command_at(["rccl", "install"])).writes
    assert not policy_of(command_at(["rccl", "audit", "--json"])).writes
    assert not policy_of(command_at(["rccl"])).writes          # the group alone
    assert command_at(["nosuch", "install"]) is None
    assert policy_of(command_at(["history"])) == policy_of(command_at(["status"]))  # an alias is the command
    # the hook's own runs read config.toml when they start; hook's options never take its values
    assert not policy_of(command_at(["hook", "install"])).config_options
    assert policy_of(command_at(["install"])).config_options


@pytest.mark.parametrize("fix, typed", [
    ("rocmrevive install --tree /opt/rocm", "sudo rocmrevive install --tree /opt/rocm"),
    ("rocmrevive rccl install --from ./b", "sudo rocmrevive rccl install --from ./b"),
    ("rocmrevive cache clean", "sudo rocmrevive cache clean"),
    ("rocmrevive rollback", "sudo rocmrevive rollback"),
    ("rocmrevive rccl audit", "rocmrevive rccl audit"),
    ("rocmrevive hook status", "rocmrevive hook status"),
    ("rocmrevive smoke", "rocmrevive smoke"),
    ("rocmrevive verify --tree X", "rocmrevive verify --tree X"),
    ("sudo rocmrevive recover", "sudo rocmrevive recover"),
])
def test_fix_lines_get_sudo_from_the_commands_policy(fix, typed):
    assert runnable(fix, Root("/")) == typed


def test_config_options_follow_the_policy_not_the_name(tmp_path, monkeypatch):
    """config.toml's mirror fills a command's unset --mirror only where the policy says so: `hook
    install` declares config_options=False (the runs the hook starts read the file themselves), so
    its --reapply configuration keeps no mirror; with the declaration flipped it would take it."""
    import dataclasses
    import json
    import os

    from click.testing import CliRunner

    root = tmp_path / "machine"
    (root / "etc/rocmrevive").mkdir(parents=True)
    (root / "etc/apt/apt.conf.d").mkdir(parents=True)  # an apt-based machine: the hook has a place
    (root / "etc/rocmrevive/config.toml").write_text('mirror = "http://127.0.0.1:9/debian"\n')
    os.chmod(root / "etc/rocmrevive/config.toml", 0o644)

    def hook_config_args():
        res = CliRunner().invoke(cli, ["--json", "--root", str(root), "hook", "install", "--reapply", "--dry-run"],
                                 catch_exceptions=False)
        doc = json.loads(res.output)
        assert res.exit_code == 0, doc
        return doc["config"]["install_args"]

    assert "--mirror" not in hook_config_args()
    hook_install = command_at(["hook", "install"])
    flipped = dataclasses.replace(policy_of(hook_install), config_options=True)
    monkeypatch.setattr(hook_install, "rocmrevive_policy", flipped)
    assert hook_config_args()[-2:] == ["--mirror", "http://127.0.0.1:9/debian"]
