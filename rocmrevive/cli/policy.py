"""What a command may do, declared where the command is defined (as an Ansible module declares
``supports_check_mode``), and read by the code that acts on it: ``UI.run`` (a transaction a
killed run left open), ``UI.recover_first``, the config file's unknown keys and the state folder
a user's run reads (``cli/main.py``), and the ``sudo`` a fix line needs (``ui.runnable``).

    @policy(writes=True, on_pending=OnPending.REFUSE)
    @rccl.command("install")
    def install_cmd(...): ...

A command that declares none fails loudly the first time it runs (``policy_of``), and
tests/test_cli_policy.py walks the whole command tree for one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypeVar

import click

from rocmrevive.strenum import StrEnum

_ATTR = "rocmrevive_policy"


class OnPending(StrEnum):
    """What a command does when a killed run left a transaction open (exit 9, INTERRUPTED)."""

    IGNORE = "ignore"    # never looks at the journals (nothing of the machine's, or inside apt's hook)
    REPORT = "report"    # a read-only report: runs, names the transaction (JSON ``pending``), exits 9
    REFUSE = "refuse"    # would change something: refuses before doing anything, exits 9
    RECOVER = "recover"  # finishes or undoes it first (``UI.recover_first``; a dry run stops with exit 9)
    OWN = "own"          # its own work deals with it: rollback refuses naming it, recover is the recovery


@dataclass(frozen=True)
class Policy:
    """``writes``: the command changes the machine (a fix line naming it gets ``sudo``; an unknown
    key in config.toml stops it instead of a warning). ``on_pending``: see ``OnPending``.
    ``reads_machine_state``: run as a user, it reads the machine's state folder (root's installs)
    instead of the user's own; ``dry_run_reads_machine_state``: so does its ``--dry-run`` (rollback,
    recover: a preview of root's transactions, honest when their journal is root's alone).
    ``config_options``: an option the command line did not set takes
    /etc/rocmrevive/config.toml's value (not for ``hook``: the runs the hook starts read the file
    then)."""

    writes: bool
    on_pending: OnPending
    reads_machine_state: bool = False
    config_options: bool = True
    dry_run_reads_machine_state: bool = False


C = TypeVar("C", bound=click.Command)


def policy(*, writes: bool, on_pending: OnPending, reads_machine_state: bool = False,
           config_options: bool = True, dry_run_reads_machine_state: bool = False) -> Callable[[C], C]:
    """Declare a command's policy: put it above ``@click.command()`` (or ``@group.command()``)."""
    declared = Policy(writes=writes, on_pending=OnPending(on_pending), reads_machine_state=reads_machine_state,
                      config_options=config_options, dry_run_reads_machine_state=dry_run_reads_machine_state)

    def attach(cmd: C) -> C:
        if not isinstance(cmd, click.Command):
            raise TypeError("@policy goes above @click.command(), on the command it declares")
        setattr(cmd, _ATTR, declared)
        return cmd
    return attach


class PolicyMissing(LookupError):
    """A command was defined without ``@policy``: a programming error, never the user's."""


def policy_of(cmd: click.Command) -> Policy:
    """The policy ``cmd`` declares; PolicyMissing when it declares none."""
    declared = getattr(cmd, _ATTR, None)
    if not isinstance(declared, Policy):
        raise PolicyMissing(f"command {cmd.name!r} declares no policy: put @policy(...) "
                            "(rocmrevive/cli/policy.py) above its @click.command()")
    return declared


_ROOT: list[click.Group] = []   # the ``rocmrevive`` group, registered by cli/main.py as it is made


def register_root(group: click.Group) -> click.Group:
    """Make ``group`` the one ``command_at`` walks (cli/main.py; this module never imports it)."""
    _ROOT[:] = [group]
    return group


def command_at(words: list[str]) -> click.Command | None:
    """The command a typed ``rocmrevive`` line names (``["rccl", "install", "--to", "X"]`` ->
    ``rccl install``; a group when no subcommand follows), None when the first word is none."""
    if not _ROOT:
        raise PolicyMissing("no command group registered (cli/main.py registers it on import)")
    cli = _ROOT[0]
    ctx = click.Context(cli)
    cmd: click.Command = cli
    for word in words:
        if not isinstance(cmd, click.Group):
            break
        sub = cmd.get_command(ctx, word)
        if sub is None:
            break
        cmd = sub
    return None if cmd is cli else cmd


def writes(words: list[str]) -> bool:
    """Whether the command a typed line names changes the machine (so needs ``sudo``)."""
    cmd = command_at(words)
    return cmd is not None and policy_of(cmd).writes


def running() -> Policy:
    """The policy of the command running now (the innermost click context)."""
    return policy_of(click.get_current_context().command)
