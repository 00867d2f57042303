"""The one builder of every command the tool prints: ``shell_command(args, root)`` (quoted with
``shlex.quote``, ``--root`` kept, one line). It lives in ``rocmrevive.invocation``, the lowest
floor, because the core's findings carry their fix commands too; the CLI takes it from here.

    shell_command(["install", "--tree", path], ui.root.base)
"""
from __future__ import annotations

from rocmrevive.invocation import shell_command

__all__ = ["shell_command"]
