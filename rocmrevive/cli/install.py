"""``rocmrevive install``: patch gfx906 files into every rocBLAS copy that lacks them."""
from __future__ import annotations

import sys

import click

from rocmrevive.cli.ui import Outcome


@click.command()
@click.option("--tree", "trees", multiple=True, metavar="PATH",
              help="Only this ROCm install or rocBLAS library folder (repeatable). Default: every copy found.")
@click.option("--target", "targets", multiple=True, metavar="TARGET",
              help="Install for this target (e.g. gfx906:sramecc+:xnack-) instead of the detected cards.")
@click.option("--check", is_flag=True, help="Plan, fetch and verify, change nothing; exit 20 if changes would be made.")
@click.option("--diff", "show_diff", is_flag=True, help="List the file-level changes.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--from", "from_path", metavar="PATH", help="Use this local .deb, tarball or folder (air-gapped hosts, fleets).")
@click.option("--mirror", metavar="URL", help="Debian mirror to fetch from (default: the host's apt configuration).")
@click.option("--cache", metavar="DIR", help="Download cache (default /var/cache/rocmrevive under --root).")
@click.option("--manifests", "manifests_dir", metavar="DIR", help="Manifest folder (default: the shipped ones).")
@click.option("--cross-version", is_flag=True,
              help="Also allow sources built for another rocBLAS version (the community's 6.3 recipe). Not recommended.")
@click.option("--state-dir", default=None, metavar="DIR", help="Journal folder (machine path; default /var/lib/rocmrevive).")
@click.option("--python", "pythons", multiple=True, metavar="PATH", help="Also look in this Python environment.")
@click.pass_obj
def install(ui, trees, targets, check, show_diff, yes, from_path, mirror, cache, manifests_dir, cross_version,
            state_dir, pythons):
    """Install version-matched gfx906 rocBLAS files as one journaled transaction per copy.

    detect → plan → fetch → stage → verify staged → apply → verify installed. Every staged file
    is checked (ELF target, features, code object version, Tensile cross-reference against the
    tree's own index) before anything is written; `rocmrevive rollback` undoes it byte for byte.
    """
    from rocmrevive.installer import install as run_install

    interactive = sys.stdin.isatty() and not (yes or ui.as_json or check)

    def confirm(cp) -> bool:
        s = cp.summary or {}
        ui.err.print(f"{cp.library}: add {s.get('create', 0)}, replace {s.get('replace', 0)} files "
                     f"({s.get('bytes', 0):,} bytes) from {cp.artifact['filename'] if cp.artifact else '?'}",
                     markup=False)
        return click.confirm("apply?", default=True, err=True)

    def work() -> Outcome:
        ui.recover_first(state_dir, dry_run=check)
        with ui.progress("downloading", None) as advance:
            def progress(done, total=None):
                advance(done)

            rep = run_install(ui.root, trees=trees, targets=targets, cache=cache, mirror=mirror,
                              from_path=from_path, manifests_dir=manifests_dir, cross_version=cross_version,
                              check=check, state_dir=state_dir, pythons=pythons,
                              log=lambda m: ui.log(m), progress=None,
                              confirm=confirm if interactive else None)
        code, message = _exit(rep)
        return Outcome(data=rep.to_json(), changed=rep.changed and not check, code=code, message=message,
                       render=lambda con: _render(con, rep, show_diff))

    ui.run("install", work)


def _exit(rep):
    refused = [c for c in rep.copies if c.error]
    if refused:
        worst = max(refused, key=lambda c: c.error["exit"])
        return worst.error["code"], f"{worst.library}: {worst.reason}"
    if rep.check and rep.changed:
        n = sum(1 for c in rep.copies if c.status == "planned")
        return "CHANGES_PENDING", f"{n} rocBLAS cop{'y' if n == 1 else 'ies'} would change (run without --check)"
    if rep.copies and all(c.status == "unsupported" for c in rep.copies):
        return "NOTHING_SUPPORTED", "; ".join(f"{c.library}: {c.reason}" for c in rep.copies)
    return "OK", None


def _render(con, rep, show_diff: bool) -> None:
    from rich.table import Table

    con.print(f"devices: {', '.join(rep.devices)} ({rep.devices_from})" + ("   [check: nothing changed]" if rep.check else ""))
    t = Table(show_edge=False)
    for col in ("rocBLAS copy", "version", "status", "files", "source", "detail"):
        t.add_column(col)
    for c in rep.copies:
        s = c.summary or {}
        files = f"+{s.get('create', 0)} ~{s.get('replace', 0)} ({s.get('bytes', 0):,} B)" if s else "-"
        src = (c.artifact or {}).get("filename") or "-"
        t.add_row(c.library, c.rocblas_version or "?", c.status, files, src, c.reason)
    con.print(t)
    for c in rep.copies:
        for label, v in (("before", c.verify_before), ("staged", c.verify_staged), ("after", c.verify_after)):
            if not v:
                continue
            checks = "; ".join(f"{d['target']}: " + ", ".join(f"{k['name']} {k['status']}" for k in d["checks"])
                               for d in v["devices"])
            con.print(f"  verify {label:<6} {checks}", markup=False)
        if show_diff and c.diff:
            for path, after in c.diff["after"].items():
                before = c.diff["before"].get(path)
                op = "+" if before is None else ("~" if before != after else "=")
                con.print(f"  {op} {path}  {after[:12] if after else '-'}", markup=False)
