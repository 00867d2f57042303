"""What the shell completes beyond commands and options (click's protocol, _ROCMREVIVE_COMPLETE):
file and folder names for the options that name them, the GPU targets for ``--target``, and the
transaction ids of the state folder for ``rollback``. Wired onto every command by name in one
place (``complete_values``) so a new command's ``--tree`` completes without a line of its own.

    _ROCMREVIVE_COMPLETE=bash_complete COMP_WORDS="rocmrevive rollback " COMP_CWORD=2 rocmrevive
"""
from __future__ import annotations

import os

import click
from click.shell_completion import CompletionItem

# option -> what it names: "file" (a file or folder) or "dir"
PATH_OPTIONS = {"--from": "file", "--file": "file", "--lib": "file", "--env-file": "file", "--python": "file",
                "--bin": "file", "--log": "file", "-o": "file", "--output": "file", "--rocminfo": "file",
                "--vulkaninfo": "file", "--llama-bin": "file", "--keyring": "file",
                "--tree": "dir", "--cache": "dir", "--manifests": "dir", "--dir": "dir", "--state-dir": "dir",
                "--to": "dir", "--extract": "dir", "--patches": "dir", "--prefix": "dir", "--rocm-path": "dir",
                "--root": "dir"}


# processors no generic target covers (AMDGPUUsage): the Instinct cards beside gfx906 in a fleet
DATACENTER = {"gfx908", "gfx90a"}


def _path(kind: str):
    def complete(ctx, param, incomplete):
        return [CompletionItem(incomplete, type=kind)]  # the shell lists the names (compgen -f / -d)
    return complete


def _targets(ctx, param, incomplete: str) -> list[CompletionItem]:
    """gfx906 and its feature variants first (what this tool is for), then every processor known."""
    from rocmrevive.codeobj.targetid import GENERIC_MEMBERS

    first = ["gfx906", "gfx906:sramecc+:xnack-", "gfx906:sramecc-:xnack-", "gfx906:xnack-", "gfx906:xnack+"]
    known = {p for members in GENERIC_MEMBERS.values() for p in members} | set(GENERIC_MEMBERS) | DATACENTER
    rest = sorted(known - set(first))
    return [CompletionItem(t) for t in first + rest if t.startswith(incomplete)]


def _txids(ctx, param, incomplete: str) -> list[CompletionItem]:
    """The transaction ids in the state folder (under --root) that rollback can still undo, newest
    first: a journal whose last record says it was rolled back is left out. Nothing when the folder
    cannot be read (a user without root, no folder): completion never fails or prints."""
    from rocmrevive.cli.options import STATE_DIR

    root = _given(ctx, "root") or os.environ.get("ROCMREVIVE_ROOT") or "/"
    state = _given(ctx, "state_dir") or STATE_DIR
    folder = os.path.join(root, state.lstrip("/"), "tx")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    ids = sorted((n[:-len(".jsonl")] for n in names if n.endswith(".jsonl") and not n.startswith(".")), reverse=True)
    return [CompletionItem(t) for t in ids if t.startswith(incomplete)
            and _last_type(os.path.join(folder, t + ".jsonl")) != "rolled_back"]


def _last_type(path: str) -> str | None:
    """The ``type`` of a journal's last record, from its last 4 KiB (no link followed, never a
    FIFO); None when it cannot be read."""
    import json

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (st.st_mode & 0o170000 == 0o100000):
            return None
        tail = os.pread(fd, 4096, max(0, st.st_size - 4096))
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = [ln for ln in tail.splitlines() if ln.strip()]
    try:
        rec = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return rec.get("type") if isinstance(rec, dict) else None


def _given(ctx: click.Context | None, name: str) -> str | None:
    """A value parsed so far, on this command or a parent (the group's --root)."""
    while ctx is not None:
        value = ctx.params.get(name)
        if isinstance(value, str) and value:
            return value
        ctx = ctx.parent
    return None


def complete_values(cmd: click.Command, path: str) -> None:
    """Give ``cmd``'s parameters (and its subcommands') the completions above, where none is set."""
    for param in cmd.params:
        if param._custom_shell_complete is not None:
            continue
        opts = getattr(param, "opts", ())
        kind = next((PATH_OPTIONS[o] for o in opts if o in PATH_OPTIONS), None)
        if kind and not getattr(param, "is_flag", False):
            param._custom_shell_complete = _path(kind)
        elif "--target" in opts:
            param._custom_shell_complete = _targets
        elif path == "rollback" and param.name == "txid":
            param._custom_shell_complete = _txids
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            complete_values(sub, f"{path} {name}")
