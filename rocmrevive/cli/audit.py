"""``rocmrevive audit``: every ROCm library in a tree × the GPU targets, read from the fat
binaries by structure, with what each missing cell breaks and what to do."""
from __future__ import annotations

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome, targets_option
from rocmrevive.errors import RevError


@policy(writes=False, on_pending=OnPending.REPORT, reads_machine_state=True)
@click.command()
@click.option("--tree", "trees", multiple=True, metavar="PATH",
              help="A ROCm install (/opt/rocm-6.4.3), a library folder (/usr/lib/x86_64-linux-gnu, "
                   "site-packages/torch/lib) or single library files. Repeatable. Default: every "
                   "/opt/rocm* install.")
@click.option("--target", "targets", multiple=True, metavar="TARGET", callback=targets_option,
              help="Audit for this GPU target instead of the detected GPUs. Repeatable.")
@click.option("--all", "show_all", is_flag=True,
              help="Also list libraries that embed the targets (default: only GPU libraries; "
                   "--json always lists everything).")
@click.option("--manifests", "manifests_dir", metavar="DIR", help="Manifest folder (default: the shipped ones).")
@click.option("--cache", metavar="DIR", help="Download cache holding sources an earlier install extracted "
                                            "(default /var/cache/rocmrevive under --root).")
@click.option("--python", "pythons", multiple=True, metavar="PATH",
              help="Also look for GPU programs in this interpreter, venv or site-packages (repeatable).")
@click.option("--no-programs", is_flag=True,
              help="Skip the user's own GPU programs (Python packages, llama.cpp builds); only the ROCm libraries.")
@click.pass_obj
def audit(ui, trees, targets, show_all, manifests_dir, cache, pythons, no_programs):
    """Which libraries carry GPU code for which targets, and what a missing one breaks.

    Reads the .hip_fatbin of every shared library (headers only: a whole ROCm lib/ in about a
    second) and marks each library × target: embedded, missing, other-mode (code only for an
    xnack/sramecc mode the GPU is not in) or not a GPU library. For each missing cell: what
    fails, in plain words, and what to do (a rocmrevive source when one exists, otherwise the
    workaround). For a host library a manifest can graft, whether that source passes the static
    ABI check on this machine (checked when an earlier `install` or `install --check` left it in
    the cache; audit itself fetches nothing).

    Then the user's own GPU programs (without --tree, or with --python): HIP libraries and
    executables in the Python environments (llama.cpp wheels such as cyllama-rocm and
    llama-cpp-python, onnxruntime-rocm, JAX's ROCm plugins, CuPy, torch's libtorch_hip) and the
    usual places of source builds (/usr/local, /opt/*, llama.cpp build/bin folders). Tensile
    files cannot help a program whose own kernels lack a card: each one that cannot run on a
    detected GPU is named with the build that fixes it (`programs`, `programs_cannot_run` in
    --json). Exit 0 when it could read the tree (missing cells are findings, not errors; see
    `missing` in --json); 3 when it found no library and no program.
    """
    from rocmrevive.diagnose.audit import audit_files, audit_inputs
    from rocmrevive.hardware.devices import resolve_devices

    def work() -> Outcome:
        devices, device_note = resolve_devices(ui.root, targets)
        files, tensile, kpacks, shown_trees = audit_inputs(ui.root, trees)
        programs = None
        if not no_programs and (pythons or not trees):
            from rocmrevive.diagnose.programs import find_programs
            from rocmrevive.trees.device_wheels import find_device_wheels
            from rocmrevive.trees.pythonenv import find_envs

            envs, _problems = find_envs(ui.root, pythons)   # once: the program scan and the device wheels
            programs = find_programs(ui.root, devices, pythons=pythons, envs=envs)
            wheels = find_device_wheels(ui.root, envs)
        else:
            wheels = []
        if not files and not tensile and not kpacks and not (programs and programs.programs) and not wheels:
            raise RevError("NOTHING_SUPPORTED",
                           "no shared library found" + (f" in {', '.join(trees)}" if trees else
                                                        f" in {ui.root.base} (/opt/rocm*, system folders with a HIP "
                                                        "runtime); pass --tree PATH"))
        manifests = _manifests(manifests_dir)
        remedy_for = source_remedies(manifests)
        graft_for = graft_remedies(ui.root, manifests, cache)
        with ui.progress("reading fat binaries", len(files), unit="files") as advance:
            rep = audit_files(files, devices, tensile_dirs=list(dict.fromkeys(tensile)),
                              kpacks=list(dict.fromkeys(kpacks)),
                              remedy_for=remedy_for, graft_for=graft_for, show=ui.root.machine_path,
                              progress=advance)
        data = {"trees": shown_trees, "target_source": device_note, **rep.to_json()}
        if programs is not None:
            pj = programs.to_json()
            data.update(programs=pj["programs"], programs_cannot_run=pj["cannot_run"],
                        program_files_read=pj["files_read"], device_wheels=[w.to_json() for w in wheels])

        miopen = _miopen(ui.root, trees)
        data["miopen"] = [t.to_json() for t in miopen]

        def render(con) -> None:
            _render(con, rep, show_all)
            if programs is not None:
                render_programs(con, programs)
            for w in wheels:
                con.print(w.line(), markup=False, highlight=False)
            for t in miopen:
                con.print(miopen_line(t), markup=False, highlight=False)

        return Outcome(data=data, render=render)

    ui.run("audit", work)


def _miopen(root, trees) -> list:
    """MIOpen's gfx906 databases per tree: each --tree (its prefix), else every ROCm install and /usr."""
    from rocmrevive.trees.installs import find_installs
    from rocmrevive.trees.miopen import miopen_trees, read_tree
    from rocmrevive.trees.select import given_trees

    if trees:
        out = [read_tree(root, t.path) for t in given_trees(root, trees, files=True)]
        return [t for t in out if t.has_library]
    return miopen_trees(root, find_installs(root)[0])


def miopen_line(t) -> str:
    """One line for a tree's MIOpen: its gfx906 databases, or what their absence costs."""
    if t.verdict == "complete":
        return f"MIOpen {t.library}: gfx906 databases {', '.join(t.kdb + t.find_db + t.perf_db)}"
    return f"MIOpen {t.library}: {t.costs}"


def _manifests(manifests_dir=None) -> list:
    """The manifests (shipped, or ``--manifests``); none when they cannot be read (a remedy
    column is not worth failing the audit over, unless the user named the folder)."""
    from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests

    try:
        return load_manifests(manifests_dir or default_manifest_dir())
    except RevError:
        if manifests_dir:
            raise
        return []


def source_remedies(manifests=None):
    """``remedy_for(library key, processor)`` from rocmrevive's source manifests: for a processor
    a manifest provides Tensile files for, the install command. Host libraries are answered by
    ``graft_remedies``."""
    if manifests is None:
        manifests = _manifests()
    if not manifests:
        return None
    by_target: dict[str, list[str]] = {}
    for m in manifests:
        if any(c.kind == "tensile" for c in m.components):
            by_target.setdefault(m.target, []).append(m.id)

    def remedy_for(key: str, processor: str) -> str | None:
        if key == "rocblas-tensile" and processor in by_target:
            return (f"sudo rocmrevive install (rocmrevive has sources for {processor}: "
                    f"{', '.join(by_target[processor])}), then rocmrevive verify")
        return None

    return remedy_for


def graft_remedies(root, manifests, cache=None):
    """``graft_for(real path, target)``: the manifest graft for a host library that lacks the
    target, and whether its source passes the ABI check here (``install.graft.graft_remedy``)."""
    from pathlib import Path

    from rocmrevive.diagnose.audit import GraftAbi
    from rocmrevive.sources.cache import default_cache_dir

    if not any(m.components_of("library") for m in manifests):
        return None
    cache_dir = Path(cache) if cache else default_cache_dir(root)

    def graft_for(path, target):
        # the install machinery (extraction, transactions, downloads: a third of audit's
        # start-up) is imported only when a host library lacks a target a manifest grafts
        from rocmrevive.install.graft import graft_remedy

        try:
            return graft_remedy(root, root.machine_path(path), target, manifests, cache_dir)
        except RevError as exc:  # a damaged cache or an odd tree: say so in the cell
            return {"manifest": None, "abi": GraftAbi.UNKNOWN, "lines": [exc.message], "source": None}

    return graft_for


def _render(con, rep, show_all) -> None:
    from rich.markup import escape
    from rich.table import Table

    from rocmrevive.diagnose.audit import CellStatus, GraftAbi

    word = {CellStatus.EMBEDDED: "[green]embedded[/]", CellStatus.MISSING: "[red]MISSING[/]",
            CellStatus.OTHER_MODE: "[red]other mode[/]", CellStatus.NOT_GPU: "[dim]no GPU code[/]",
            CellStatus.UNREADABLE: "[yellow]unreadable[/]"}
    targets = [str(t) for t in rep.targets]
    t = Table(show_edge=False, box=None, pad_edge=False)
    t.add_column("library")
    t.add_column("path")
    for tg in targets:
        t.add_column(tg)
    rows = rep.rows if show_all else [r for r in rep.rows
                                      if r.is_gpu_library or any(c.status != CellStatus.NOT_GPU for c in r.cells.values())]
    for r in rows:
        t.add_row(escape(r.name), escape(r.path),
                  *[word.get(r.cells[tg].status, r.cells[tg].status) for tg in targets])
    con.print(t)
    missing = rep.missing()
    if not missing:
        con.print(f"[green]every GPU library here carries code for {', '.join(targets)}[/]")
    else:
        con.print(f"\n[bold]{len(missing)} missing[/] (library × target):")
        for row, cell in missing:
            con.print(f"[red]{escape(row.name)}[/] ({escape(row.path)}) lacks {escape(cell.target)}: "
                      f"{escape(cell.detail)}")
            con.print(f"  breaks: {cell.breaks}", markup=False)
            con.print(f"  do:     {cell.remedy}", markup=False)
            if cell.graft and cell.graft.get("abi") == GraftAbi.REFUSED:
                for line in cell.graft.get("lines", [])[1:]:
                    con.print(f"          also: {line}", markup=False)
    unreadable = [r for r in rep.rows if any(c.status == CellStatus.UNREADABLE for c in r.cells.values())]
    for r in unreadable:
        con.print(f"[yellow]unreadable[/] {escape(r.path)}: {escape('; '.join(r.problems))}")
    con.print(f"{len(rep.rows)} libraries read ({rep.skipped} other libraries without GPU code not "
              f"shown) in {rep.seconds:.2f} s", markup=False)


def render_programs(con, rep) -> None:
    """The user's own GPU programs: which cannot run on which card, and the build that fixes it."""
    from rich.markup import escape

    if not rep.programs:
        con.print(f"no GPU programs of your own found ({rep.files_read} candidate files read in the Python "
                  f"environments and install places)", markup=False)
        return
    bad = rep.cannot_run()
    con.print(f"\n[bold]your GPU programs[/] ({len(rep.programs)} with GPU code):")
    for p in rep.programs:
        ok = "[green]runs on all cards[/]" if p.runs_everywhere else "[red]cannot run on every card[/]"
        con.print(f"  {escape(p.name)}  {escape(p.path)}: {escape(', '.join(p.processors) or '?')} "
                  f"({p.code_objects} code objects) {ok}")
    done = set()
    for p, cell in bad:
        con.print(f"[red]{escape(p.name)}[/] ({escape(p.path)}) cannot run on {escape(cell.target)}: "
                  f"{escape(cell.detail)}")
        con.print(f"  breaks: {cell.breaks}", markup=False)
        if p.path not in done:
            con.print(f"  do:     {cell.remedy}", markup=False)
            done.add(p.path)
