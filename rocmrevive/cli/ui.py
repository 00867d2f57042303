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
from pathlib import Path
from typing import Any, Callable

import click

from rocmrevive.cli.shown import shown
from rocmrevive.errors import RevError, exit_code
from rocmrevive.rootfs import Root

SCHEMA_VERSION = 1


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


def write_output(path: str, text: str, mode: int = 0o644) -> str:
    """Write ``text`` to the file ``-o`` named (a path on this machine, not under --root).
    The folders are the ones the user typed (followed as ``cp`` would, created when missing);
    the file is replaced through ``fs.Dir.write_atomic`` relative to its folder: a random
    ``O_EXCL`` temporary and a rename, so a link planted in a folder another user can write
    (a home, /tmp) is never written through. RevError("PERMISSION") when that fails."""
    from rocmrevive.fs import Dir

    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise RevError("PERMISSION", f"cannot write {path}: {exc.strerror or exc}") from None
    with Dir(fd, p.parent, what="output folder") as folder:
        folder.write_atomic(p.name, text.encode(), mode=mode)
    return str(p)


def text_or_file(data: dict[str, Any], text: str, output: str | None, wrote: Callable[[str], list[str]],
                 mode: int = 0o644) -> Outcome:
    """A command that makes a text (a script, an environment file): written to ``output`` when
    -o names one (``data["written"]`` then says where and ``wrote(path)`` gives the lines to say
    so), else printed as it is.

        return text_or_file(r.to_json(), r.script, output, lambda p: [f"wrote {p}"], 0o755)
    """
    written = write_output(output, text, mode) if output else None
    data["written"] = written

    def render(con):
        if written:
            for line in wrote(written):
                con.print(line, markup=False)
        else:   # a script or environment file: exact when piped, escaped on a terminal
            con.file.write(shown(text, lines=True) if con.is_terminal else text)
    return Outcome(data=data, render=render)


class _Console:
    """Factory for rich's Console whose tables never cut a cell (cli/console.py): a table wider
    than the terminal is printed as a list instead of being squeezed with ellipses."""

    @staticmethod
    def make(**kw):
        from rocmrevive.cli.console import WholeCellConsole

        return WholeCellConsole(**kw)


def new_progress(console, unit: str, *, name_unit: bool = False):
    """A transient rich progress bar on ``console``: bytes with their speed, or counts (``name_unit``:
    followed by the unit's name). rich.progress is imported here, when a bar is first drawn."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    cols = [TextColumn("{task.description}"), BarColumn()]
    if unit == "bytes":
        cols += [DownloadColumn(), TransferSpeedColumn()]
    else:
        cols += [MofNCompleteColumn(), *([TextColumn(unit)] if name_unit else [])]
    return Progress(*cols, TimeRemainingColumn(), console=console, transient=True)


class _Bars:
    """Progress bars fed with real counts (bytes, members, checks): ``update(desc, done, total)``
    starts or advances the bar for ``desc``; ``close()`` removes it (before any prompt)."""

    def __init__(self, ui: "UI"):
        self.ui = ui
        self._prog: Any = None
        self._tasks: dict[str, tuple[int, str]] = {}

    def update(self, desc: str, done: int, total: int | None = None, unit: str = "bytes") -> None:
        if not self.ui.show_progress:
            return
        if desc not in self._tasks:
            # one stage at a time, each with the columns of its unit: the last one is closed first
            self.close()
            self._prog = new_progress(self.ui.err, unit, name_unit=True)
            self._prog.start()
            self._tasks[desc] = (self._prog.add_task(desc, total=total), unit)
        task, _ = self._tasks[desc]
        self._prog.update(task, completed=done, total=total)
        if total is not None and done >= total:
            self._prog.refresh()  # the final count is drawn, however fast the stage was

    def close(self) -> None:
        if self._prog is not None:
            self._prog.stop()
            self._prog = None
            self._tasks = {}


class UI:
    def __init__(self, *, as_json=False, root="/", quiet=0, verbose=0, no_progress=False):
        self.as_json = as_json
        self.root = Root(root)
        self.quiet = quiet
        self.verbose = verbose
        self.no_progress = no_progress
        self._console = None
        self._err_console = None
        self.bars = _Bars(self)
        self.config = None  # rocmrevive.config.Config, read before each command runs (cli/main.py)

    @property
    def state_dir(self) -> str | None:
        """The state folder /etc/rocmrevive/config.toml names (None: the default)."""
        return self.config.state_dir if self.config is not None else None

    # consoles -------------------------------------------------------------------------
    @property
    def console(self):
        if self._console is None:
            tty = sys.stdout.isatty()
            # piped output is never width-limited: a report file keeps every name whole
            self._console = _Console.make(
                highlight=False,
                no_color=bool(os.environ.get("NO_COLOR")) or not tty,
                # NO_COLOR: no escape codes at all (rich's no_color alone keeps bold and underline)
                color_system=None if os.environ.get("NO_COLOR") else "auto",
                width=None if tty else 100_000,
                soft_wrap=not tty,
            )
        return self._console

    @property
    def err(self):
        if self._err_console is None:
            # soft_wrap: a message is one line, whatever the terminal's width; the same console
            # class as stdout's, so everything printed passes the one renderer (``shown``)
            self._err_console = _Console.make(stderr=True, highlight=False, soft_wrap=True,
                                              no_color=bool(os.environ.get("NO_COLOR")),
                                              color_system=None if os.environ.get("NO_COLOR") else "auto")
        return self._err_console

    def log(self, message: str, level: int = 0) -> None:
        """A line on stderr, shown unless quieter than ``level`` (0 normal, 1 verbose)."""
        if level > self.verbose or (self.quiet and level >= 0):
            return
        self.err.print(shown(message), markup=False)

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
        with new_progress(self.err, unit) as prog:
            task = prog.add_task(description, total=total)
            yield lambda n=1: prog.advance(task, n)

    def confirm(self, question: str, default: bool = True) -> bool:
        """Ask on the terminal (stderr), after closing any progress bar."""
        self.bars.close()
        return click.confirm(question, default=default, err=True)

    # interrupted transactions ---------------------------------------------------------
    def recover_first(self, state_dir: str | None = None, *, dry_run: bool = False) -> None:
        """For a command whose policy is OnPending.RECOVER (install): finish or undo a transaction
        a killed run left behind. A dry run must not write, so there it stops with INTERRUPTED
        instead."""
        from rocmrevive.cli.policy import OnPending, running
        from rocmrevive.errors import RevError

        if running().on_pending is not OnPending.RECOVER:
            raise RuntimeError("recover_first is for a command whose @policy declares on_pending=OnPending.RECOVER")
        from rocmrevive.txn.state import DEFAULT_STATE_DIR, find_pending
        from rocmrevive.txn.undo import recover_pending

        sd = state_dir or self.state_dir or DEFAULT_STATE_DIR
        pending = find_pending(self.root, state_dir=sd)
        if not pending:
            return
        if dry_run:
            raise RevError("INTERRUPTED", f"transaction {', '.join(pending)} was interrupted; "
                                          f"run `rocmrevive recover` (a dry run changes nothing)")
        from rocmrevive.trees.trust import refuse_untrusted_undo

        refuse_untrusted_undo(self.root, recover_pending(self.root, state_dir=sd, force=True, dry_run=True))
        for res in recover_pending(self.root, state_dir=sd):
            self.log(f"recovered interrupted transaction {res.txid}: {res.state}")

    def _state_dir(self) -> str:
        from rocmrevive.txn.state import DEFAULT_STATE_DIR

        ctx = click.get_current_context(silent=True)
        sd = (ctx.params.get("state_dir") if ctx is not None else None) or DEFAULT_STATE_DIR
        return sd

    def pending(self) -> tuple[RevError | None, str | None]:
        """(the INTERRUPTED error naming the pending transaction or None, a warning when the
        journals could not be read). Reads only; never takes the lock."""
        from rocmrevive.txn.state import require_no_pending

        try:
            require_no_pending(self.root, state_dir=self._state_dir())
        except RevError as exc:
            if exc.code == "INTERRUPTED":
                if "pending" not in exc.details:  # a damaged journal: still name what is open
                    from rocmrevive.txn.state import find_pending

                    try:
                        exc.details["pending"] = find_pending(self.root, state_dir=self._state_dir())
                    except (RevError, OSError):
                        pass
                return exc, None
            return None, f"cannot read rocmrevive's journals to look for an interrupted transaction ({exc.message})"
        except OSError as exc:  # e.g. a non-root user cannot read the journal folder
            return None, (f"cannot read rocmrevive's journals to look for an interrupted transaction "
                          f"({exc.strerror}: {exc.filename})")
        return None, None

    # running a command ---------------------------------------------------------------
    def run(self, command: str, work: Callable[[], Outcome]) -> None:
        """Run ``work`` for ``command`` and exit with its outcome. A transaction a killed run left
        open is handled as the running command's policy declares (cli/policy.py, OnPending)."""
        from rocmrevive.cli.policy import OnPending, running

        on_pending = running().on_pending
        pending, unreadable = None, None
        try:
            if on_pending is OnPending.REFUSE:
                pending, unreadable = self.pending()
                if pending is not None:
                    raise RevError("INTERRUPTED", pending.message.replace(" first", "") +
                                   f"; `{command}` changed nothing", details=pending.details)
            elif on_pending is OnPending.REPORT:
                pending, unreadable = self.pending()
            out = work()
        except RevError as exc:
            self.bars.close()
            if pending is not None and exc.code != "INTERRUPTED":
                self._emit_error(command, "INTERRUPTED", f"{pending.message}; also: {exc.message}",
                                 {**exc.details, **pending.details})
            self._emit_error(command, exc.code, exc.message, exc.details)
        except (KeyboardInterrupt, click.exceptions.Abort) as exc:
            self.bars.close()
            self._interrupted(command, exc)
        except click.exceptions.Exit:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug: exit 1 (INTERNAL) with one line, the traceback with -v
            self.bars.close()
            if self.verbose:
                traceback.print_exc()
            self._emit_error(command, "INTERNAL",
                             f"internal error: {type(exc).__name__}: {exc} (run with -v for the traceback and report it)")
        else:
            self.bars.close()
            out.warnings[:0] = getattr(self.config, "unknown", [])  # config.toml's unknown keys
            if unreadable:
                out.warnings.append(unreadable)
            if pending is not None:
                out.data.setdefault("pending", pending.details.get("pending", []))
                if out.code != "INTERRUPTED":
                    if out.code != "OK" and out.message:
                        out.warnings.append(out.message)
                    out.code = "INTERRUPTED"
                    out.message = f"{pending.message.replace(' it first', ' it')} (`{command}` changed nothing)"
            self._emit(command, out)

    def _interrupted(self, command: str, exc: BaseException) -> None:
        """Ctrl-C: exit 9 naming a transaction it left open, else 130 saying what happened."""
        from rocmrevive.txn.state import find_pending

        try:
            open_tx = find_pending(self.root, state_dir=self._state_dir())
        except (RevError, OSError):
            open_tx = []
        if open_tx:
            self._emit_error(command, "INTERRUPTED", f"interrupted by the user; transaction {', '.join(open_tx)} "
                                                     "is still open: run `rocmrevive recover` to finish or undo it")
        undone = getattr(exc, "rocmrevive_undone", None)
        what = (f"transaction {undone} was undone, the tree is unchanged" if undone else
                "no transaction was open; nothing is left to recover")
        # a Ctrl-C at a prompt leaves the cursor on the prompt's line: the message starts a new one
        who = "stopped by SIGTERM" if type(exc).__name__ == "Terminated" else "interrupted by the user"
        self._emit_error(command, "CANCELLED", f"{who}; {what}", label=None,
                         newline=self.err.is_terminal)

    def document(self, command: str, out: Outcome) -> dict:
        doc = {"schema_version": SCHEMA_VERSION, "command": command, "root": str(self.root.base),
               "changed": out.changed}
        doc.update(out.data)
        doc["warnings"] = list(out.warnings)
        doc["error"] = (None if out.code == "OK" else
                        {"code": out.code, "exit": exit_code(out.code), "message": out.message or out.code})
        return doc

    def _emit(self, command: str, out: Outcome) -> None:
        with pipe_closed_quietly():
            if self.as_json:
                click.echo(json.dumps(self.document(command, out), indent=2, sort_keys=False, default=str))
            else:
                if out.render is not None and self.quiet < 2:
                    out.render(self.console)
                for w in out.warnings:
                    self.log(f"warning: {self.as_typed(w)}")
                if out.code != "OK" and out.message:
                    sys.stdout.flush()
                    self.err.print(f"rocmrevive {command}: {shown(self.as_typed(out.message))}", markup=False)
            sys.stdout.flush()
        sys.exit(exit_code(out.code))

    def as_typed(self, message: str) -> str:
        """A message's `rocmrevive ...` hints as this user must type them here (``runnable``:
        sudo for a command that writes, --root when this run looked at a folder)."""
        import re

        return re.sub(r"`((?:sudo )?rocmrevive [^`]*)`", lambda m: f"`{runnable(m.group(1), self.root)}`", message)

    def _emit_error(self, command: str, code: str, message: str, details: dict | None = None, *,
                    label: str | None = "error", newline: bool = False) -> None:
        with pipe_closed_quietly():
            if self.as_json:
                click.echo(json.dumps(error_document(command, str(self.root.base), code, message, details),
                                      indent=2, default=str))
            else:
                sys.stdout.flush()
                head = f"{chr(10) if newline else ''}rocmrevive {command}: {label + ': ' if label else ''}"
                self.err.print(head + shown(self.as_typed(message)), markup=False)
            sys.stdout.flush()
        sys.exit(exit_code(code))


def runnable(fix: str, root: Root) -> str:
    """A ``rocmrevive ...`` fix line as the user must type it: with ``sudo`` for a command that
    writes (its @policy, as the README writes them) and with ``--root DIR`` when this run looked
    at a folder."""
    import re
    import shlex

    from rocmrevive.cli.policy import writes

    def one(m: re.Match) -> str:
        sudo, rest = m.group(1) or "", m.group(2)
        if not sudo and writes(rest.split()):
            sudo = "sudo "
        where = "" if root.is_host or "--root" in rest else f"--root {shlex.quote(str(root.base))} "
        return f"{sudo}rocmrevive {where}{rest}"

    return re.sub(r"(sudo )?\brocmrevive ((?:[a-z]+)(?: [^;,`()]*)?)", one, fix)


def error_document(command: str | None, root: str, code: str, message: str, details: dict | None = None) -> dict:
    """The one JSON document of a failed run (also for click's usage errors)."""
    error: dict[str, Any] = {"code": code, "exit": exit_code(code), "message": message}
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "command": command, "root": root, "changed": False,
                           "warnings": [], "error": error}
    if details:
        error["details"] = details
    return doc


@contextlib.contextmanager
def pipe_closed_quietly():
    """stdout closed by the reader (``| head``): stop writing, say nothing, exit 141 as a
    program killed by SIGPIPE would (documented in rocmrevive/errors.py)."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(exit_code("PIPE_CLOSED"))


# validation of option values (click callbacks: a bad value is a usage error, exit 2) -------
def known_processors() -> list[str]:
    """Every processor name LLVM's AMDGPU backend knows (ELF machine values and generics)."""
    from rocmrevive.codeobj.elf import MACH_NAMES
    from rocmrevive.codeobj.targetid import GENERIC_MEMBERS

    return sorted(set(MACH_NAMES.values()) | set(GENERIC_MEMBERS))


def check_target(text: str) -> str:
    """``text`` if it names a real processor (features allowed), else ValueError naming the
    nearest known one."""
    import difflib

    from rocmrevive.codeobj.targetid import TargetId

    try:
        tid = TargetId.parse(text)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a GPU target id ({exc}); e.g. gfx906 or gfx906:sramecc+:xnack-") from None
    known = known_processors()
    if tid.processor not in known:
        near = difflib.get_close_matches(tid.processor, known, n=1, cutoff=0.0)
        hint = f"; did you mean {near[0]}?" if near else ""
        raise ValueError(f"{tid.processor} is not a known AMD GPU processor{hint} "
                         "(MI50/MI60/Radeon VII are gfx906)")
    return text


def targets_option(ctx, param, values):
    """click callback for ``--target`` (repeatable)."""
    for v in values or ():
        try:
            check_target(v)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return values


def _url_option(problem_of: str, what: str):
    """A click callback that refuses a value ``rocmrevive.config.<problem_of>`` finds a problem with
    (config is imported late: start-up cost in cli/)."""
    def callback(ctx, param, value):
        if value is None:
            return value
        from rocmrevive import config

        problem = getattr(config, problem_of)(value)
        if problem:
            raise click.BadParameter(f"{value!r} {problem}", ctx=ctx, param=param)
        return value
    callback.__doc__ = f"click callback for {what}"
    return callback


# --mirror: an http(s):// or file:// URL with a host (or a path); --snapshot: 'none', or such a URL
mirror_option = _url_option("mirror_problem", "--mirror")
snapshot_option = _url_option("snapshot_problem", "--snapshot")


def text_file_option(looks_like: Callable[[str], bool], what: str):
    """A click callback for an option that names a saved tool output: the file must be text and
    look like ``what`` (``looks_like(text)``), else exit 2 instead of silently using nothing."""
    def callback(ctx, param, value):
        if value is None:
            return value
        with open(value, "rb") as f:
            head = f.read(1 << 20)
        if b"\0" in head:
            raise click.BadParameter(f"{value} is a binary file, not {what}", ctx=ctx, param=param)
        if not looks_like(head.decode("utf-8", "replace")):
            raise click.BadParameter(f"{value} does not look like {what}", ctx=ctx, param=param)
        return value
    return callback
