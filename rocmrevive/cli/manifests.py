"""``rocmrevive manifests [list|check|show]``: the source manifests and their validation."""
from __future__ import annotations

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome

_DIR_HELP = "Folder of manifests (default: the ones shipped with rocmrevive, or $ROCMREVIVE_MANIFESTS)."


def _dir(d):
    from rocmrevive.sources.manifest_load import default_manifest_dir

    return d or str(default_manifest_dir())


@policy(writes=False, on_pending=OnPending.IGNORE)
@click.group(invoke_without_command=True)
@click.option("--dir", "mdir", metavar="DIR", type=click.Path(), help=_DIR_HELP)
@click.pass_context
def manifests(ctx, mdir):
    """List and check the source manifests (which gfx906 files, from where, pinned how).

    Without a subcommand: the same as `list`.
    """
    ctx.meta["rocmrevive.manifest_dir"] = mdir
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_cmd)


@policy(writes=False, on_pending=OnPending.IGNORE)
@manifests.command("list")
@click.pass_context
def list_cmd(ctx):
    """One line per manifest and source."""
    ui = ctx.obj
    from rocmrevive.sources.manifest_load import load_manifests

    mdir = _dir(ctx.meta.get("rocmrevive.manifest_dir"))

    def work() -> Outcome:
        ms = load_manifests(mdir)
        return Outcome(data={"dir": mdir, "manifests": [m.to_json() for m in ms]},
                       render=lambda con: _render_list(con, ms))

    ui.run("manifests list", work)


@policy(writes=False, on_pending=OnPending.IGNORE)
@manifests.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@click.pass_context
def check(ctx, paths):
    """Validate manifests (schema, unique names, patterns, pins); every error with file and line.

    PATHS are manifest files or folders (default: the manifest folder). Exit 2 on any error.
    """
    ui = ctx.obj
    from rocmrevive.sources.manifest_load import check_manifests

    targets = list(paths) or [_dir(ctx.meta.get("rocmrevive.manifest_dir"))]

    def work() -> Outcome:
        ms, errors = check_manifests(*targets)
        data = {"paths": targets, "valid": not errors, "errors": errors,
                "manifests": [{"id": m.id, "path": str(m.path), "sources": len(m.sources)} for m in ms]}

        def render(con):
            for e in errors:
                con.print(e, markup=False)
            if not errors:
                for m in ms:
                    con.print(f"ok  {m.path}  ({m.id}: {len(m.sources)} sources)", markup=False)

        if errors:
            return Outcome(data=data, render=render, code="USAGE",
                           message=f"{len(errors)} error{'s' if len(errors) != 1 else ''} in manifests")
        return Outcome(data=data, render=render)

    ui.run("manifests check", work)


@policy(writes=False, on_pending=OnPending.IGNORE)
@manifests.command("show")
@click.argument("manifest_id")
@click.pass_context
def show(ctx, manifest_id):
    """Everything one manifest says."""
    ui = ctx.obj
    from rocmrevive.errors import RevError
    from rocmrevive.sources.manifest_load import load_manifests

    mdir = _dir(ctx.meta.get("rocmrevive.manifest_dir"))

    def work() -> Outcome:
        ms = {m.id: m for m in load_manifests(mdir)}
        if manifest_id not in ms:
            raise RevError("USAGE", f"no manifest {manifest_id!r} in {mdir}; there are: {', '.join(sorted(ms))}")
        m = ms[manifest_id]
        return Outcome(data={"manifest": m.to_json()}, render=lambda con: _render_show(con, m))

    ui.run("manifests show", work)


def _render_list(con, ms) -> None:
    from rich.table import Table

    from rocmrevive.sources.manifest import spec_text

    t = Table(show_edge=False, title_justify="left")
    for col in ("manifest", "target", "rocBLAS", "ROCm", "source", "files from", "pinned by", "match"):
        t.add_column(col)
    for m in ms:
        for i, s in enumerate(m.sources):
            pin = "sha256" if s.pinned else f"signed index ({s.signed_by[-16:]})"
            t.add_row(m.id if i == 0 else "", m.target if i == 0 else "",
                      spec_text(m.rocblas_versions) if i == 0 and m.rocblas_versions else ("-" if i == 0 else ""),
                      spec_text(m.rocm_versions) if i == 0 else "", s.name,
                      f"{s.package} {s.version} ({_built(s)})", pin, _match(s))
    con.print(t)


def _built(s) -> str:
    return f"rocBLAS {s.rocblas_version}" if s.rocblas_version is not None else f"ROCm {s.rocm_version}"


def _match(s) -> str:
    from rocmrevive.sources.manifest import spec_text

    if s.cross_version:
        return "cross-version"
    if s.compatible is not None and s.rocblas_version is not None:
        return f"rocBLAS {spec_text(s.compatible)}"
    return f"ROCm {spec_text(s.rocm_versions)}" if s.rocm_versions is not None else "any ROCm"


def _render_show(con, m) -> None:
    from rocmrevive.sources.manifest import spec_text

    con.print(f"{m.id}: {m.summary}", markup=False)
    rocblas = spec_text(m.rocblas_versions) if m.rocblas_versions else "-"
    con.print(f"  target {m.target}; rocBLAS {rocblas}; ROCm {spec_text(m.rocm_versions)}; "
              f"file {m.path}",
              markup=False)
    for c in m.components:
        con.print(f"  {c.kind}: {', '.join(c.files)}", markup=False)
    for k, v in m.layouts.items():
        con.print(f"  layout {k}: {v}", markup=False)
    for s in m.sources:
        con.print(f"  source {s.name} [{s.kind}]: {s.describe()}", markup=False)
        if s.pinned:
            con.print(f"    {s.size:,} bytes, sha256 {s.sha256}", markup=False)
        if s.sha1 or s.seen:
            con.print(f"    snapshot archive: sha1 {s.sha1 or '-'}; {s.suite} listed it at {s.seen or '-'}", markup=False)
        if s.signed_by:
            con.print(f"    signed index, key {s.signed_by}", markup=False)
        con.print(f"    members {s.member_prefix}; built from {_built(s)}; matches {_match(s)}"
                  f"{'; CROSS-VERSION' if s.cross_version else ''}", markup=False)
        if s.note:
            con.print(f"    {s.note}", markup=False)
