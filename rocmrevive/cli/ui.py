"""How results reach the user: one JSON document on stdout with ``--json``, otherwise rich
text (plain when stdout is not a terminal or NO_COLOR is set). Progress and logs go to stderr.

Every command calls ``ui.run(name, work)``; ``work`` returns an ``Outcome``. Errors raised as
``RevError`` become the documented exit code and the JSON ``error`` field, here and nowhere else.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import click

from rocmrevive.errors import RevError, exit_code
from rocmrevive.rootfs import Root

SCHEMA_VERSION = 1

# Commands that first finish or undo a transaction a killed run left behind (ISSUE: "the next
# command of any kind finds it first"). Not: status and recover (they report/handle it), the
# commands that never touch a machine, and those with a dry-run mode, which call
# ``recover_first(dry_run=...)`` themselves (install), and rollback, which stops with
# INTERRUPTED instead (undoing the interrupted one and then "the last one" would undo too much).
# `hook run` is excluded: it runs inside apt's hook while apt holds the dpkg lock.
RECOVER_FIRST = {"detect", "doctor", "verify", "audit", "smoke", "fetch", "rccl", "patch", "hook install",
                 "hook remove"}


@dataclass
class Outcome:
    """What a command produced: JSON data, whether it changed anything, its status code and a
    function that renders it for humans on a rich Console."""

    data: dict[str, Any]
    render: Callable[[Any], None] | None = None
    changed: bool = False
    code: str = "OK"
    message: str | None = None  # for a non-OK code: the one human line
    warnings: list[str] = field(default_factory=list)


class UI:
    def __init__(self, *, as_json=False, root="/", quiet=0, verbose=0, no_progress=False):
        self.as_json = as_json
        self.root = Root(root)
        self.quiet = quiet
        self.verbose = verbose
        self.no_progress = no_progress
        self._console = None
        self._err_console = None

    # consoles -------------------------------------------------------------------------
    @property
    def console(self):
        if self._console is None:
            from rich.console import Console

            tty = sys.stdout.isatty()
            self._console = Console(
                highlight=False,
                no_color=bool(os.environ.get("NO_COLOR")) or not tty,
                width=None if tty else 160,
                soft_wrap=not tty,
            )
        return self._console

    @property
    def err(self):
        if self._err_console is None:
            from rich.console import Console

            # soft_wrap: a message is one line, whatever the terminal's width
            self._err_console = Console(stderr=True, highlight=False, soft_wrap=True,
                                        no_color=bool(os.environ.get("NO_COLOR")))
        return self._err_console

    def log(self, message: str, level: int = 0) -> None:
        """A line on stderr, shown unless quieter than ``level`` (0 normal, 1 verbose)."""
        if level > self.verbose or (self.quiet and level >= 0):
            return
        self.err.print(message, markup=False)

    @property
    def show_progress(self) -> bool:
        return (not (self.as_json or self.quiet or self.no_progress or self.verbose)
                and self.err.is_interactive)

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None, unit: str = "bytes"):
        """Yield ``advance(n)``; draws a bar on an interactive stderr only."""
        if not self.show_progress:
            yield lambda n=1: None
            return
        from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress,
                                   TextColumn, TimeRemainingColumn, TransferSpeedColumn)

        cols = [TextColumn("{task.description}"), BarColumn()]
        cols += ([DownloadColumn(), TransferSpeedColumn()] if unit == "bytes" else [MofNCompleteColumn()])
        cols.append(TimeRemainingColumn())
        with Progress(*cols, console=self.err, transient=True) as prog:
            task = prog.add_task(description, total=total)
            yield lambda n=1: prog.advance(task, n)

    # interrupted transactions ---------------------------------------------------------
    def recover_first(self, state_dir: str | None = None, *, dry_run: bool = False) -> None:
        """Before anything else: finish or undo a transaction a killed run left behind. A dry
        run must not write, so there it stops with INTERRUPTED instead."""
        from rocmrevive.errors import RevError
        from rocmrevive.txn.transaction import DEFAULT_STATE_DIR, find_pending, recover_pending

        sd = state_dir or DEFAULT_STATE_DIR
        pending = find_pending(self.root, state_dir=sd)
        if not pending:
            return
        if dry_run:
            raise RevError("INTERRUPTED", f"transaction {', '.join(pending)} was interrupted; "
                                          f"run `rocmrevive recover` (a dry run changes nothing)")
        for res in recover_pending(self.root, state_dir=sd):
            self.log(f"recovered interrupted transaction {res.txid}: {res.state}")

    # running a command ---------------------------------------------------------------
    def run(self, command: str, work: Callable[[], Outcome]) -> None:
        try:
            if command in RECOVER_FIRST or command.split()[0] in RECOVER_FIRST:
                ctx = click.get_current_context(silent=True)
                params = ctx.params if ctx is not None else {}
                self.recover_first(dry_run=bool(params.get("check") or params.get("dry_run")))
            out = work()
        except RevError as exc:
            self._emit_error(command, exc.code, exc.message, exc.details)
        except KeyboardInterrupt:
            self._emit_error(command, "INTERRUPTED", "interrupted by the user; run `rocmrevive recover` if a transaction was open")
        except click.exceptions.Exit:
            raise
        except Exception as exc:  # a bug: one line, and the traceback with -v
            if self.verbose:
                traceback.print_exc()
            self._emit_error(command, "INTERNAL",
                             f"internal error: {type(exc).__name__}: {exc} (run with -v for the traceback and report it)")
        else:
            self._emit(command, out)

    def document(self, command: str, out: Outcome) -> dict:
        doc = {"schema_version": SCHEMA_VERSION, "command": command, "root": str(self.root.base),
               "changed": out.changed}
        doc.update(out.data)
        doc["warnings"] = list(out.warnings)
        doc["error"] = (None if out.code == "OK" else
                        {"code": out.code, "exit": exit_code(out.code), "message": out.message or out.code})
        return doc

    def _emit(self, command: str, out: Outcome) -> None:
        if self.as_json:
            click.echo(json.dumps(self.document(command, out), indent=2, sort_keys=False, default=str))
        else:
            if out.render is not None and self.quiet < 2:
                out.render(self.console)
            for w in out.warnings:
                self.log(f"warning: {w}")
            if out.code != "OK" and out.message:
                sys.stdout.flush()
                self.err.print(f"rocmrevive {command}: {out.message}", markup=False)
        sys.exit(exit_code(out.code))

    def _emit_error(self, command: str, code: str, message: str, details: dict | None = None) -> None:
        if self.as_json:
            doc = {"schema_version": SCHEMA_VERSION, "command": command, "root": str(self.root.base),
                   "changed": False, "warnings": [],
                   "error": {"code": code, "exit": exit_code(code), "message": message}}
            if details:
                doc["error"]["details"] = details
            click.echo(json.dumps(doc, indent=2, default=str))
        else:
            sys.stdout.flush()
            self.err.print(f"rocmrevive {command}: error: {message}", markup=False)
        sys.exit(exit_code(code))
