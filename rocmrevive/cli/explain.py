"""``rocmrevive explain``: recognise known ROCm failure messages and say what fixes them."""
from __future__ import annotations

import os
import sys

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome
from rocmrevive.errors import RevError

MAX_INPUT = 64 << 20  # a log larger than this is read only up to here
MAX_SHOWN = 500  # characters of an unrecognised failure line shown back
USAGE = ("nothing to explain: the text is empty; usage: rocmrevive explain 'MESSAGE' | --file LOG | "
         "PROGRAM 2>&1 | rocmrevive explain")


@policy(writes=False, on_pending=OnPending.IGNORE)
@click.command()
@click.argument("text", nargs=-1)
@click.option("--file", "files", multiple=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="Read the text from this file ('-' for standard input). Repeatable.")
@click.pass_obj
def explain(ui, text, files):
    """Say what a ROCm error message means: library, GPU target, cause, and the fix.

    TEXT is the message (quote it), or use --file LOG, or pipe a program's output in:
    `python train.py 2>&1 | rocmrevive explain`. Messages are matched by their structure, so
    other paths, versions and GPU targets are recognised too. Several lines are answered root
    cause first. Exit 0 when something was recognised, 3 when nothing was (or only warnings and
    harmless lines, beside a failure line it does not know: that line is named), 2 when the text is empty.
    """
    from rocmrevive.diagnose.explain import answer

    def work() -> Outcome:
        body = read_input(text, files)
        if not body.strip():
            raise RevError("USAGE", USAGE)
        got = answer(body)
        found, missed = got.found, got.unexplained
        data = {"recognised": len(found), "lines_read": len(body.splitlines()),
                "diagnoses": [d.to_json() for d in found],
                "unexplained": {"line": missed[0], "text": missed[1][:MAX_SHOWN]} if missed else None}
        if not found:
            return Outcome(data=data, render=None, code="NOTHING_SUPPORTED",
                           message="no known ROCm failure recognised in the text "
                                   "(if it is one, please report it with the full message)")
        if missed:   # only warnings, harmless or context lines recognised beside a failure that is not
            return Outcome(data=data, render=lambda con: _render(con, found, missed), code="NOTHING_SUPPORTED",
                           message=f"the failure in line {missed[0]} is not a known ROCm failure; the lines recognised "
                                   "above are warnings or harmless and do not explain it (if it is a ROCm failure, "
                                   "please report it with the full message)")
        return Outcome(data=data, render=lambda con: _render(con, found))

    ui.run("explain", work)


def read_input(text, files) -> str:
    parts = []
    if text:
        parts.append(" ".join(text) if _one_message(text) else "\n".join(text))
    for f in files:
        if f == "-":
            parts.append(sys.stdin.read(MAX_INPUT))
            continue
        parts.append(_read_log(f))
    if not parts:
        if sys.stdin is None or sys.stdin.isatty():
            raise RevError("USAGE", "give the message as an argument, with --file LOG, or on standard input")
        parts.append(sys.stdin.read(MAX_INPUT))
    return "\n".join(parts)


def _read_log(path: str) -> str:
    """A log named with --file, read as a file another user may control (explain runs as root too): never through
    a link at its name, never a FIFO or a device (opened ``O_NONBLOCK`` and ``fstat``-checked, so nothing waits on a
    writer), the first MAX_INPUT bytes. Each refusal is one USAGE line saying what to do instead."""
    import errno

    from rocmrevive.fs import open_regular

    try:
        fd = open_regular(path, what=f"--file {path}")
    except RevError as exc:   # a FIFO, socket, device or folder
        raise RevError("USAGE", f"{exc.message.removesuffix('; remove it')}: give a log file, or pipe the program's "
                                "output in (PROGRAM 2>&1 | rocmrevive explain)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RevError("USAGE", f"--file {path} is a symbolic link: give the file it points to") from None
        raise RevError("USAGE", f"--file {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as fh:
        try:
            return fh.read(MAX_INPUT)
        except OSError as exc:
            raise RevError("USAGE", f"--file {path}: {exc.strerror or exc}") from None


def _one_message(words) -> bool:
    """Unquoted words typed on a command line (``rocmrevive explain ROCm error: invalid device
    function``) form one message; several quoted lines are several lines."""
    return all(" " not in w for w in words)


def _render(con, found, missed: tuple[int, str] | None = None) -> None:
    from rich.markup import escape

    from rocmrevive.diagnose.diagnosis import Severity

    colour = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.CONTEXT: "cyan",
              Severity.HARMLESS: "green"}
    if missed:
        con.print(f"[red]not recognised[/] line {missed[0]}: the failure")
        con.print(f"  {missed[1][:MAX_SHOWN]}", markup=False, style="dim")
    for d in found:
        lines = ", ".join(map(str, d.lines[:5])) + (" …" if len(d.lines) > 5 else "")
        head = f"[{colour.get(d.severity, 'white')}]{d.severity}[/] line {lines}: [bold]{escape(d.library)}[/]"
        if d.arch:
            head += f" · {escape(d.arch)}"
        con.print(head)
        con.print(f"  {d.text}", markup=False, style="dim")
        con.print(f"  cause: {d.cause}", markup=False)
        for c in d.details.get("causes", ()):  # several causes in the sources: each with the check that tells it
            con.print(f"   - {c['cause']}", markup=False)
            con.print(f"     check: {c['check']}", markup=False)
        root = d.details.get("explained_by")
        if root:
            con.print(f"  follows from line {root['line']} ({root['rule']}): fixing that fixes this", markup=False)
        if d.fixable_by_rocmrevive:
            con.print(f"  fix:   {d.fix}", markup=False)
            if d.why_not:
                con.print(f"  note:  {d.why_not}", markup=False)
        else:
            con.print(f"  do:    {d.fix}", markup=False)
            if d.why_not:
                con.print(f"  why not rocmrevive: {d.why_not}", markup=False)
