"""Options several commands share, declared once. Only click is imported here: ``--help`` stays
cheap.

    @state_dir_option
    def status(ui, state_dir): ...
"""
from __future__ import annotations

import os
import pwd

import click

# the journal folder; txn.state.DEFAULT_STATE_DIR is the same (tests/test_cli_options.py)
STATE_DIR = "/var/lib/rocmrevive"
STATE_DIR_HELP = ("Where journals, backups and the lock live (a machine path, under --root). As a user other "
                  "than root: $XDG_STATE_HOME/rocmrevive, else ~/.local/state/rocmrevive.")


def user_state_dir(euid: int | None = None, env: dict | None = None) -> str | None:
    """The state folder of a run as a user other than root (None for root: /var/lib/rocmrevive):
    ``$XDG_STATE_HOME/rocmrevive``, else ``<home>/.local/state/rocmrevive`` with the account's
    home from the password database. A machine path, as ``--state-dir`` is.

        user_state_dir(1000, {})   # "/home/alice/.local/state/rocmrevive"
    """
    euid = os.geteuid() if euid is None else euid
    env = os.environ if env is None else env
    if euid == 0:
        return None
    xdg = env.get("XDG_STATE_HOME", "")
    if xdg.startswith("/"):
        return xdg.rstrip("/") + "/rocmrevive"
    try:
        home = pwd.getpwuid(euid).pw_dir
    except KeyError:
        home = env.get("HOME", "")
    return home.rstrip("/") + "/.local/state/rocmrevive" if home.startswith("/") else None

state_dir_option = click.option("--state-dir", default=STATE_DIR, show_default=True, metavar="DIR",
                                help=STATE_DIR_HELP)


def hook_state_dir_option(help: str):
    """``--state-dir`` of the apt hook's commands: unset means the hook's own setting."""
    return click.option("--state-dir", default=None, metavar="DIR", help=help)
