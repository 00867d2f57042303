"""Options several commands share, declared once. Only click is imported here: ``--help`` stays
cheap.

    @state_dir_option
    def status(ui, state_dir): ...
"""
from __future__ import annotations

import click

# the journal folder; txn.state.DEFAULT_STATE_DIR is the same (tests/test_cli_options.py)
STATE_DIR = "/var/lib/rocmrevive"
STATE_DIR_HELP = ("Where journals, backups and the lock live (a machine path, under --root). As a user other "
                  "than root, the commands that write use $XDG_STATE_HOME/rocmrevive, else "
                  "~/.local/state/rocmrevive; detect, doctor, verify, audit, status and the --dry-run of "
                  "rollback and recover read the machine's.")


state_dir_option = click.option("--state-dir", default=STATE_DIR, show_default=True, metavar="DIR",
                                help=STATE_DIR_HELP)


def hook_state_dir_option(help: str):
    """``--state-dir`` of the apt hook's commands: unset means the hook's own setting."""
    return click.option("--state-dir", default=None, metavar="DIR", help=help)


# where an install's downloads and extractions are, and which manifests: status and rollback read
# them to recognise installed files no journal records (diagnose.orphans)
cache_option = click.option("--cache", metavar="DIR", type=click.Path(file_okay=False),
                            help="Download cache (default /var/cache/rocmrevive under --root).")
manifests_option = click.option("--manifests", "manifests_dir", metavar="DIR", type=click.Path(file_okay=False),
                                help="Manifest folder (default: the shipped ones).")


def orphan_sources(root, cache, manifests_dir):
    """(cache folder, manifests) for diagnose.orphans, as install itself resolves them."""
    from pathlib import Path

    from rocmrevive.sources.cache import default_cache_dir
    from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests

    return (Path(cache) if cache else default_cache_dir(root),
            load_manifests(manifests_dir or default_manifest_dir()))
