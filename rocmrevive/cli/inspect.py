"""``rocmrevive inspect PATH...``: the GPU code objects inside files and folders."""
from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import Counter
from typing import Any

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome

DETAILED_MAX = 12  # up to this many files: one line per code object; more: one line per file


@policy(writes=False, on_pending=OnPending.IGNORE)
@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--deep", is_flag=True,
              help="Also decompress every compressed bundle (MD5 check), read every metadata "
                   "note (kernel counts, amdhsa.target cross-check) and the kernel descriptors, "
                   "and walk every Tensile .dat to its end.")
@click.option("--problems-only", is_flag=True, help="Show only files with problems.")
@click.pass_obj
def inspect(ui, paths, deep, problems_only):
    """List every device code object in PATHS with its full target id.

    Files are classified by their magic, never their extension: raw AMDGPU ELF, clang
    offload bundles, compressed bundles (CCOB v1-v3, zlib/zstd), host libraries with a
    .hip_fatbin section, files of several bundles back to back (a dumped .hip_fatbin),
    Tensile .dat indexes, TheRock's .kpack kernel archives (header and TOC; exact targets from
    the code objects when the archive is not compressed). PATHS are read as given (not under
    --root); FIFOs and devices are never opened. Nothing is cut: ids and paths are printed
    whole, in pipes too.
    Exit 0: all read; 6: some file is damaged; 3: no code object found.
    """
    from rocmrevive.codeobj.inspect import inspect_file, iter_files

    def work() -> Outcome:
        files = list(iter_files(paths))
        reports = []
        with _late_progress(ui, len(files)) as advance:
            for f in files:
                rep = inspect_file(f, deep=deep)
                if rep.kind == "not-code-object" and _is_kpack(f):
                    from rocmrevive.codeobj.kpack import file_report

                    rep = file_report(f)
                reports.append(rep)
                advance(1)
        summary = _summary(reports)
        code, message = "OK", None
        if summary["files_with_problems"]:
            code = "VERIFY_FAILED"
            first = next(r for r in reports if r.problems)
            message = (f"{summary['files_with_problems']} of {summary['files']} files have problems, "
                       f"first {first.path}: {first.problems[0]}")
        elif not summary["code_objects"]:
            code = "NOTHING_SUPPORTED"
            message = f"no GPU code object in {', '.join(paths)}"
        shown = [r for r in reports if r.problems] if problems_only else reports
        if not ui.as_json and ui.quiet < 2:
            # Plain text straight to stdout, before ui.run's one line on stderr (as a render
            # would be): building a rich console costs more CPU than scanning the folder.
            _write(sys.stdout, render_text(shown, summary))
        return Outcome(
            data={"deep": deep, "summary": summary, "files": [r.to_json() for r in shown]},
            code=code, message=message)

    ui.run("inspect", work)


def _is_kpack(path) -> bool:
    from rocmrevive.codeobj.inspect import open_regular
    from rocmrevive.codeobj.kpack import is_kpack

    try:
        with open_regular(path) as f:
            return is_kpack(f.read(4))
    except OSError:
        return False


def _summary(reports) -> dict:
    kinds = Counter(r.kind for r in reports)
    targets = Counter(str(e.target) for r in reports for e in r.entries)
    return {
        "files": len(reports),
        "kinds": dict(sorted(kinds.items())),
        "code_objects": sum(len(r.entries) for r in reports),
        "targets": dict(sorted(targets.items())),
        "processors": sorted({e.target.processor for r in reports for e in r.entries}),
        "files_with_problems": sum(1 for r in reports if r.problems),
        "problems": sum(len(r.problems) for r in reports),
    }


def render_text(reports, summary) -> str:
    """The report as plain lines. Nothing is ever cut: the short columns (kind, targets) come
    first, padded, and the path last and whole, so a narrow terminal wraps it and a pipe keeps
    it on one line; problems follow on their own indented lines."""
    out: list[str] = []
    if len(reports) <= DETAILED_MAX:
        for r in reports:
            head = f"{r.path}  [{r.kind}, {r.size:,} bytes]"
            out.append(head + (f": {r.note}" if r.note and not r.entries else ""))
            rows = [(str(e.target), f"v{e.co_version}" if e.co_version else "-",
                     f"0x{e.e_flags:x}" if e.e_flags is not None else "-", f"0x{e.offset:x}",
                     f"{e.size:,}", "-" if e.kernels is None else f"{e.kernels} kernels",
                     e.entry_id or e.container) for e in r.entries]
            out.extend(_columns(rows, indent="  "))
            out.extend(f"  problem: {p}" for p in r.problems)
    else:
        files_rows: list[tuple[str, ...]] = []
        problems = {}
        for r in reports:
            if r.kind == "tensile-dat" and not r.problems:
                continue
            files_rows.append((r.kind, " ".join(r.targets) or "-", r.path))
            problems[len(files_rows) - 1] = r.problems
        lines = _columns([("kind", "targets", "file"), *files_rows], cap=40)
        out.append(lines[0])
        for i, line in enumerate(lines[1:]):
            out.append(line)
            out.extend(f"    problem: {p}" for p in problems.get(i, ()))
    tg = ", ".join(f"{k} ({v})" for k, v in summary["targets"].items()) or "none"
    files = summary["files"]
    out.append(f"{files} file{'s' * (files != 1)}, {summary['code_objects']} code object"
               f"{'s' * (summary['code_objects'] != 1)}; targets: {tg}; problems: {summary['problems']} "
               f"in {summary['files_with_problems']} file{'s' * (summary['files_with_problems'] != 1)}")
    from rocmrevive.cli.shown import shown

    return "\n".join(shown(line) for line in out) + "\n"   # each a line: a name's newline shows as \n


def _columns(rows, *, indent: str = "", cap: int | None = None) -> list[str]:
    """Left-aligned columns; the last one is never padded. A cell wider than ``cap`` keeps all
    its text (its row just runs past the column)."""
    if not rows:
        return []
    n = len(rows[0])
    widths = [max(len(r[i]) for r in rows) for i in range(n - 1)]
    if cap:
        widths = [min(w, cap) for w in widths]
    return [indent + "  ".join([c.ljust(w) for c, w in zip(r, widths)] + [r[-1]]) for r in rows]


@contextlib.contextmanager
def _late_progress(ui, total: int, after: float = 0.5):
    """``ui.progress``, drawn only once the scan has taken ``after`` seconds: a folder read in
    a blink needs no bar (and starting one costs more than reading it)."""
    start, done = time.monotonic(), [0]
    with contextlib.ExitStack() as stack:
        bar: list[Any] = [None]

        def advance(n: int = 1) -> None:
            done[0] += n
            if bar[0] is None and time.monotonic() - start > after:
                drawn = bar[0] = stack.enter_context(ui.progress("inspecting", total, unit="files"))
                drawn(done[0])
            elif bar[0] is not None:
                bar[0](n)

        yield advance


def _write(out, text: str) -> None:
    """Write the report in one go (rich's per-cell layout cost more than the scan), quietly
    stopping when the reader of a pipe has gone (``inspect DIR | head``)."""
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        # the reader is gone: nothing more can be said; keep later flushes from failing too
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
