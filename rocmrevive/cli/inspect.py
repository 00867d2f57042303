"""``rocmrevive inspect PATH...``: the GPU code objects inside files and folders."""
from __future__ import annotations

from collections import Counter

import click

from rocmrevive.cli.ui import Outcome


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--deep", is_flag=True,
              help="Also decompress every compressed bundle (MD5 check), read every metadata "
                   "note (kernel counts, amdhsa.target cross-check) and the kernel descriptors.")
@click.option("--problems-only", is_flag=True, help="Show only files with problems.")
@click.pass_obj
def inspect(ui, paths, deep, problems_only):
    """List every device code object in PATHS with its full target id.

    Files are classified by their magic, never their extension: raw AMDGPU ELF, clang
    offload bundles, compressed bundles (CCOB v1-v3, zlib/zstd), host libraries with a
    .hip_fatbin section, Tensile .dat indexes, TheRock's .kpack kernel archives (header and
    TOC; exact targets from the code objects when the archive is not compressed). PATHS are read as given (not under --root).
    Exit 0: all read; 6: some file is damaged; 3: no code object found.
    """
    from rocmrevive.codeobj.inspect import iter_files, inspect_file

    def work() -> Outcome:
        files = list(iter_files(paths))
        reports = []
        with ui.progress("inspecting", len(files), unit="files") as advance:
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
            message = (f"{summary['files_with_problems']} of {summary['files']} files have problems "
                       f"(see the table, or --json)")
        elif not summary["code_objects"]:
            code = "NOTHING_SUPPORTED"
            message = f"no GPU code object in {', '.join(paths)}"
        shown = [r for r in reports if r.problems] if problems_only else reports
        return Outcome(
            data={"deep": deep, "summary": summary, "files": [r.to_json() for r in shown]},
            render=lambda con: _render(con, shown, summary),
            code=code, message=message)

    ui.run("inspect", work)


def _is_kpack(path) -> bool:
    from rocmrevive.codeobj.kpack import is_kpack

    try:
        with open(path, "rb") as f:
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


def _render(con, reports, summary) -> None:
    from rich.table import Table

    detailed = len(reports) <= 12
    if detailed:
        for r in reports:
            t = Table(title=f"{r.path}  [{r.kind}, {r.size:,} bytes]", title_justify="left",
                      show_edge=False)
            for col in ("target", "co", "e_flags", "offset", "size", "kernels", "entry / container"):
                t.add_column(col)
            for e in r.entries:
                t.add_row(str(e.target), str(e.co_version or "-"),
                          f"0x{e.e_flags:x}" if e.e_flags is not None else "-",
                          f"0x{e.offset:x}", f"{e.size:,}",
                          "-" if e.kernels is None else str(e.kernels),
                          e.entry_id or e.container)
            if r.entries:
                con.print(t)
            else:
                con.print(f"{r.path}  [{r.kind}]" + (f": {r.note}" if r.note else ""))
            for p in r.problems:
                con.print(f"  problem: {p}", markup=False)
    else:
        t = Table(show_edge=False)
        for col in ("file", "kind", "targets", "problems"):
            t.add_column(col)
        for r in reports:
            if r.kind in ("tensile-dat",) and not r.problems:
                continue
            t.add_row(r.path, r.kind, " ".join(r.targets) or "-", "; ".join(r.problems) or "")
        con.print(t)
    tg = ", ".join(f"{k} ({v})" for k, v in summary["targets"].items()) or "none"
    con.print(f"{summary['files']} files, {summary['code_objects']} code objects; "
              f"targets: {tg}; problems: {summary['problems']} in {summary['files_with_problems']} files",
              markup=False)
