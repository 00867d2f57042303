"""``rocmrevive install``: patch gfx906 files into every rocBLAS copy that lacks them, and graft
host libraries that lack gfx906 where a source provably loads (docs/grafts.md)."""
from __future__ import annotations

import os
import sys

import click

from rocmrevive.cli.options import state_dir_option
from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome, mirror_option, snapshot_option, targets_option


@policy(writes=True, on_pending=OnPending.RECOVER)
@click.command()
@click.option("--tree", "trees", multiple=True, metavar="PATH",
              help="Only this ROCm install or rocBLAS library folder (repeatable). Default: every copy found.")
@click.option("--target", "targets", multiple=True, metavar="TARGET", callback=targets_option,
              help="Install for this target (e.g. gfx906:sramecc+:xnack-) instead of the detected cards.")
@click.option("--check", "--dry-run", "-s", "check", is_flag=True,
              help="Plan, fetch and verify, change nothing; exit 20 if changes would be made (-s and --dry-run as "
                   "apt-get's).")
@click.option("--diff", "show_diff", is_flag=True, help="List the file-level changes.")
@click.option("-y", "--yes", "--assume-yes", "yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--from", "from_path", metavar="PATH",
              help="Use this local .deb, tarball or folder (air-gapped hosts, fleets). For a rocBLAS no manifest "
                   "source matches (a `rocmrevive recipe` build), it is accepted only when it proves itself by "
                   "content, and journaled as 'verified by content, unpinned'.")
@click.option("--mirror", metavar="URL", callback=mirror_option, help="Debian mirror to fetch from (default: the host's apt configuration).")
@click.option("--snapshot", metavar="URL", callback=snapshot_option,
              help="Debian's snapshot archive, tried for a pinned package no mirror serves any more (default: "
                   "Debian's own; 'none': never).")
@click.option("--cache", metavar="DIR", help="Download cache (default /var/cache/rocmrevive under --root).")
@click.option("--manifests", "manifests_dir", metavar="DIR", help="Manifest folder (default: the shipped ones).")
@click.option("--cross-version", is_flag=True,
              help="Also allow sources built for another rocBLAS version (the community's 6.3 recipe). Not recommended.")
@state_dir_option
@click.option("--python", "pythons", multiple=True, metavar="PATH", help="Also look in this Python environment.")
@click.option("--libraries/--no-libraries", "libraries", default=True, show_default=True,
              help="Also replace host libraries (rocSPARSE, rocSOLVER, rocFFT, rocRAND) that lack gfx906 code, "
                   "where a manifest's source passes the static ABI check on this machine.")
@click.option("--smoke", "smoke", is_flag=True,
              help="Run the PyTorch smoke right before the first change is applied and again after the "
                   "install, and say how the times compare (`after the install: 1.31x the time of the pass "
                   "before it`); both runs are recorded as `rocmrevive smoke` records them. Not with --check.")
@click.option("--smoke-python", "smoke_python", metavar="PATH",
              help="The interpreter --smoke runs (implies --smoke). Default: as `rocmrevive smoke` picks it.")
@click.option("--smoke-cpu-test-mode", "smoke_cpu_test", is_flag=True, hidden=True,
              help="--smoke on the CPU (tests the comparison, not a GPU).")
@click.pass_obj
def install(ui, trees, targets, check, show_diff, yes, from_path, mirror, snapshot, cache, manifests_dir,
            cross_version, state_dir, pythons, libraries, smoke, smoke_python, smoke_cpu_test):
    """Install version-matched gfx906 rocBLAS files as one journaled transaction per copy, and
    graft host libraries that lack gfx906 (one transaction per library).

    detect → plan → fetch → stage → verify staged → apply → verify installed. Every staged file
    is checked (ELF target, features, code object version, Tensile cross-reference against the
    tree's own index) before anything is written; `rocmrevive rollback` undoes it byte for byte.
    A host library is replaced only when the tree's copy has no code for a detected gfx906 GPU
    and the source's library passes the static ABI check against this machine's own libraries
    (needed libraries, symbol versions, symbols, device code); --check shows, per library,
    graft or not and why.

    With --smoke (or --smoke-python), the PyTorch smoke runs right before the first change and
    after the install; the install says how the second run's times compare with the first's.
    Wrong results after the install make the exit 10 (SMOKE_FAILED; `rocmrevive rollback` undoes
    the install); a slowdown is reported, not an error. --check never runs it.
    """
    from rocmrevive.install.pipeline import install as run_install
    from rocmrevive.install.run import InstallOptions
    from rocmrevive.txn.plan import Op

    interactive = sys.stdin.isatty() and not (yes or check)
    unasked: list[str] = []   # what had a change pending with no terminal to ask on (and no --yes)
    opts = InstallOptions(trees=tuple(trees), targets=tuple(targets), pythons=tuple(pythons),
                          manifests_dir=manifests_dir, cache=cache, mirror=mirror, from_path=from_path,
                          cross_version=cross_version, check=check, state_dir=state_dir, libraries=libraries,
                          snapshot=snapshot,
                          rerun=tuple(_rerun(targets, from_path, mirror, manifests_dir, cross_version, libraries,
                                             yes, check, snapshot)))

    def confirm(rec, plan) -> bool:
        s = plan.summary()
        if not any(s.get(op, 0) for op in (Op.CREATE, Op.REPLACE, Op.DELETE)):
            return True   # nothing would change: nothing to ask
        if not interactive:   # like apt-get without -y and without a terminal: silence is not a yes
            unasked.append(rec.what)
            return False
        ui.bars.close()
        ui.err.print(f"{rec.what}: add {s.get(Op.CREATE, 0)}, replace {s.get(Op.REPLACE, 0)} "
                     f"{_plural(s.get(Op.CREATE, 0) + s.get(Op.REPLACE, 0), 'file')} "
                     f"({_mb(s.get('bytes', 0))}) from {rec.artifact.shown if rec.artifact else '?'}", markup=False)
        return ui.confirm("apply?", default=True)

    around = _around(ui, smoke or bool(smoke_python) or smoke_cpu_test, smoke_python, smoke_cpu_test, check)
    gate = _gate(ui, around, yes, confirm)

    def progress(stage, done, total=None, unit="bytes"):
        # the core's stages (install.core.feed): downloading bytes, extracting members, verifying checks
        ui.bars.update(stage, done, total, unit=unit)

    def work() -> Outcome:
        # a transaction a killed run left open is a pending change too: without a yes, only say so
        ui.recover_first(state_dir, dry_run=check or not (yes or sys.stdin.isatty()))
        # the plan first; the question only where a change is pending (none: exit 0, terminal or not)
        if around is not None:
            around.decide()   # which interpreter, and may it run: said before anything is fetched
        rep = run_install(ui.root, opts, log=lambda m: ui.log(m), progress=progress,
                          confirm=gate if around is not None else None if (yes or check) else confirm)
        ui.bars.close()
        code, message = _exit(rep)
        data = _typed_reasons(rep.to_json(), ui.as_typed)
        code, message, smoke_line = _smoke_after(ui, around, rep, data, code, message)
        if unasked and code in ("OK", "NOTHING_SUPPORTED"):
            code, message = "USAGE", (f"{'; '.join(unasked)}: a change is pending and there is no terminal to ask "
                                      f"on; pass --yes to apply it (or --check to only plan); nothing was changed")
        warnings = list(rep.warnings)
        if rep.left_without and code != "NOTHING_SUPPORTED":
            warnings.append(left_without_line(rep.left_without))   # --check with other changes: 20, and this
        def render(con) -> None:
            _render(con, rep, show_diff, ui.as_typed)
            if smoke_line:
                con.print(smoke_line, markup=False, soft_wrap=True)
            _closing(con, rep, ui.root)
        return Outcome(data=data, changed=rep.changed and not check, code=code,
                       message=message, render=render, warnings=warnings)

    ui.run("install", work)


def _around(ui, wanted: bool, python, cpu_test_mode: bool, check: bool):
    """The smoke before and after the install (``smoke/around.py``), or None (not asked, or --check)."""
    if not wanted or check:
        return None
    from rocmrevive.smoke.around import Around

    return Around(ui.root, python=python, cpu_test_mode=cpu_test_mode, log=lambda m: ui.log(m))


def _gate(ui, around, yes: bool, confirm):
    """``confirm`` for the pipeline with --smoke: the user's yes (or --yes), then, right before the
    first change, the smoke on the old stack."""
    from rocmrevive.txn.plan import Op

    parent = os.getpid()

    def gate(rec, plan) -> bool:
        ok = True if yes else confirm(rec, plan)
        s = plan.summary()
        pending = any(s.get(op, 0) for op in (Op.CREATE, Op.REPLACE, Op.DELETE))
        # in a child run as a tree's owner (install/as_owner.py) there is no smoke: it is the parent's
        if ok and pending and around is not None and os.getpid() == parent:
            ui.bars.close()
            around.before()
        return ok
    return gate


def _smoke_after(ui, around, rep, data: dict, code, message):
    """After an install that changed something, the second smoke; the JSON's ``smoke``, the exit
    (wrong results after the install: SMOKE_FAILED) and the line to print."""
    if around is None:
        return code, message, None
    if rep.changed:
        around.after()
    data["smoke"] = around.to_json()
    after = around.runs.get("after")
    if after is not None and after["code"] == "SMOKE_FAILED" and code == "OK":
        code, message = "SMOKE_FAILED", (f"installed, but the smoke after the install failed: {after['message']}; "
                                         + ui.as_typed("`rocmrevive rollback` undoes the install"))
    return code, message, data["smoke"]["line"]


def _rerun(targets, from_path, mirror, manifests_dir, cross_version, libraries, yes, check,
           snapshot=None) -> list[str]:
    """The options a tree's owner repeats in the command printed for them (not --cache or
    --state-dir: theirs are their own)."""
    out = [a for t in targets for a in ("--target", str(t))]
    for flag, value in (("--from", from_path), ("--mirror", mirror), ("--snapshot", snapshot),
                        ("--manifests", manifests_dir)):
        out += [flag, value] if value else []
    out += ["--cross-version"] * bool(cross_version) + ["--no-libraries"] * (not libraries)
    return out + ["--check"] * bool(check) + ["--yes"] * bool(yes and not check)


def _plural(n: int, word: str) -> str:
    return word if n == 1 else (word[:-1] + "ies" if word.endswith("y") else word + "s")


def _mb(n: int) -> str:
    from rocmrevive.hardware.p2p import size_text

    return size_text(n)


def _exit(rep):
    """A copy or library that failed (checksum, network, verification) decides the code; then a
    copy left without gfx906 (no source, a layout rocmrevive does not patch) makes it 3, even when
    other copies or grafts were served, so that `install --yes && echo fixed` does not say "fixed"
    (with --check and other changes pending it stays 20, the copy a warning); a graft the ABI
    check refuses is a finding (a warning), not a failure."""
    from rocmrevive.install.core import Status

    refused = [c for c in (*rep.copies, *rep.libraries) if c.error]
    if refused:
        worst = max(refused, key=lambda c: c.error.exit if c.error else 0)
        return worst.error.code if worst.error else "INTERNAL", f"{worst.label}: {worst.reason}"
    if rep.check and rep.changed:
        n = sum(1 for c in rep.copies if c.status is Status.PLANNED)
        k = sum(1 for lp in rep.libraries if lp.status is Status.PLANNED)
        what = [f"{n} rocBLAS cop{'y' if n == 1 else 'ies'}"] if n else []
        what += [f"{k} host librar{'y' if k == 1 else 'ies'}"] if k else []
        return "CHANGES_PENDING", f"{' and '.join(what)} would change (run without --check)"
    useful = [lp for lp in rep.libraries
              if lp.status in (Status.PLANNED, Status.INSTALLED, Status.UNCHANGED, Status.SATISFIED)]
    if all(c.status is Status.UNSUPPORTED for c in rep.copies) and not useful and (rep.copies or rep.libraries):
        no = [f"{c.library}: {c.reason}" for c in rep.copies]
        no += [f"{lp.label}: {lp.reason}" for lp in rep.libraries if lp.status in (Status.REFUSED, Status.UNSUPPORTED)]
        return "NOTHING_SUPPORTED", "; ".join(no) or "no host library of a manifest is in these trees"
    if rep.left_without:
        return "NOTHING_SUPPORTED", left_without_line(rep.left_without)
    return "OK", None


def left_without_line(left) -> str:
    """One line naming the copies that still lack gfx906 and why."""
    copies = f"{len(left)} rocBLAS cop{'y' if len(left) == 1 else 'ies'}"
    return f"{copies} still without gfx906 files: " + "; ".join(f"{c.library}: {c.reason}" for c in left)


def _typed_reasons(data: dict, typed) -> dict:
    """A copy's or library's reason with its `rocmrevive ...` commands as the user must type them
    (``UI.as_typed``: sudo, and this run's ``--root``)."""
    for key in ("copies", "libraries"):
        for c in data.get(key) or ():
            if isinstance(c, dict) and isinstance(c.get("reason"), str):
                c["reason"] = typed(c["reason"])
    return data


def _render(con, rep, show_diff: bool, typed=lambda s: s) -> None:
    from rich.table import Table

    con.print(f"devices: {', '.join(rep.devices)} ({rep.devices_from})" + ("   [check: nothing changed]" if rep.check else ""),
              markup=False)
    t = Table(show_edge=False)
    for col in ("rocBLAS copy", "version", "status", "files", "source", "detail"):
        t.add_column(col)
    for c in rep.copies:
        s = c.summary
        files = f"+{s.create} ~{s.replace} ({_mb(s.bytes)})" if s else "-"
        src = (getattr(c.artifact, "filename", None) or "-").rsplit("/", 1)[-1]
        t.add_row(c.library, c.rocblas_version or "?", c.status, files, src, typed(c.reason) if c.reason else c.reason)
    con.print(t)
    for c in rep.copies:
        _render_verify(con, c)
        if show_diff and c.diff:
            _render_diff(con, c.diff, c.library)
    _render_libraries(con, rep, show_diff)


def _closing(con, rep, root) -> None:
    """The last line of an install that wrote something: what now, as the user must type it."""
    from rocmrevive.cli.ui import runnable
    from rocmrevive.install.core import Status

    done = [c for c in (*rep.copies, *rep.libraries) if c.status is Status.INSTALLED]
    if rep.check or not done:
        return
    # soft_wrap: one line the terminal folds, never a hard break inside a command to copy
    con.print(f"done: {len(done)} {_plural(len(done), 'transaction')} applied; check with "
              + runnable("`rocmrevive verify`, undo with `rocmrevive rollback`", root), markup=False, soft_wrap=True)


def _render_verify(con, c) -> None:
    """A copy's verify lines under its own name (with two copies, or a table that became a list
    at 80 columns, a bare "verify after" could be either's). The before state says what the copy
    is missing, not "fail": that is why it is being installed.

        verify /opt/rocm-6.4.3/lib/rocblas/library:
          before  gfx906:sramecc+:xnack-: needs gfx906 files (targets skip, tensile missing, host pass)
    """
    lines = []
    for label, v in (("before", c.verify_before), ("staged", c.verify_staged), ("after", c.verify_after)):
        for d in v.devices if v else ():
            lines.append(f"    {label:<6}  {d.target}: {_checks_text(label, d.checks)}")
    if lines:
        con.print(f"  verify {c.library}:", markup=False, soft_wrap=True)
        for line in lines:
            con.print(line, markup=False, soft_wrap=True)


def _checks_text(label: str, checks) -> str:
    from rocmrevive.diagnose.verify import CheckStatus

    if label != "before":
        return ", ".join(f"{k.name} {k.status}" for k in checks)
    missing = [k for k in checks if k.status is CheckStatus.FAIL]
    text = ", ".join(f"{k.name} {'missing' if k in missing else k.status}" for k in checks)
    return f"needs gfx906 files ({text})" if missing else f"already served ({text})"


def _render_diff(con, diff, under: str | None = None) -> None:
    """One line per file: ``+`` added, ``~`` replaced, ``=`` the same, then its name (inside
    ``under``, said once above, when given) and its new sha256's start. Never folded by rich: a
    path wider than the terminal is folded by the terminal, with no newline in it."""
    prefix = under.rstrip("/") + "/" if under else None
    if prefix:
        con.print(f"  diff {under}:", markup=False, soft_wrap=True)
    for f in diff.files:
        path, before, after = f.path, f.before, f.after
        op = "+" if before is None else ("~" if before != after else "=")
        name = path[len(prefix):] if prefix and path.startswith(prefix) else path
        con.print(f"    {op} {name}  {after[:12] if after else '-'}", markup=False, soft_wrap=True)


def _render_libraries(con, rep, show_diff: bool) -> None:
    """Per tree and library: graft or not, and why (the ABI verdict's own lines)."""
    if not rep.libraries_enabled:
        con.print("host libraries: not considered (--no-libraries)")
        return
    by_tree: dict[str, list] = {}
    for lp in rep.libraries:
        by_tree.setdefault(lp.tree, []).append(lp)
    from rocmrevive.install.core import Status

    word = {Status.PLANNED: "GRAFT (planned)", Status.INSTALLED: "GRAFTED", Status.REFUSED: "no graft: REFUSED",
            Status.SATISFIED: "no graft needed", Status.ABSENT: "not in this tree",
            Status.UNSUPPORTED: "no graft: no source", Status.UNCHANGED: "graft in place",
            Status.DECLINED: "declined at the prompt"}
    for tree, plans in by_tree.items():
        con.print(f"host libraries in {tree} (ROCm {plans[0].rocm_version or '?'}):", markup=False)
        width = max(len(f"{lp.name} {lp.soname}") for lp in plans)
        for lp in plans:
            head = f"{lp.name} {lp.soname}".ljust(width)
            lacks = f"lacks {', '.join(lp.missing)} (has {', '.join(lp.has) or 'no device code'}); " if lp.missing else ""
            con.print(f"  {head}  {word.get(lp.status, lp.status)}: {lacks}{lp.reason}", markup=False)
            if lp.abi is not None:
                src = f"{lp.source.package} {lp.source.version}" if lp.source else "? "
                if lp.abi_ok:
                    con.print(f"      ABI check of {src}: loads here ({_verdict_tail(lp.abi)})", markup=False)
                else:
                    con.print(f"      ABI check of {src}: refused", markup=False)
                    for line in lp.lines:
                        con.print(f"        - {line}", markup=False)
            for w in lp.warnings:
                con.print(f"      note: {w}", markup=False)
            if lp.divert and lp.divert.wanted:
                state = ("recorded" if lp.divert.registered else
                         "to be recorded" if rep.check else "NOT recorded")
                con.print(f"      dpkg: {lp.divert.package} owns it; its copies go to {lp.divert.divert_to} "
                          f"(diversion {state})", markup=False)
            if lp.error:
                con.print(f"      error: {lp.error.message}", markup=False)
            if show_diff and lp.diff:
                _render_diff(con, lp.diff)


def _verdict_tail(verdict) -> str:
    abi = verdict.details   # hostlib.abi.AbiVerdict's
    cov = (abi.get("coverage") or {}).get("targets") or []
    by = "; ".join(f"{c['target']} via {', '.join(c['by'])}" for c in cov)
    return (f"{len(abi.get('needed', []))} libraries, {abi.get('symbols_resolved', 0)} symbols resolved"
            + (f"; {by}" if by else ""))
