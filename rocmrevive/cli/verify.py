"""``rocmrevive verify``: prove every rocBLAS copy serves every GPU (or ``--target``).

Per copy and device: integrity against the journal, code object targets and versions, the
Tensile cross-reference (file and kernel), and the host library's own device code. Exit 0 only
when every check passes (skips do not fail); 6 otherwise.
"""
from __future__ import annotations

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome, targets_option

SHOW = 3  # offenders shown per failing check (``--json`` lists all)


@policy(writes=False, on_pending=OnPending.REPORT, reads_machine_state=True)
@click.command()
@click.option("--tree", "trees", multiple=True, metavar="PATH",
              help="A ROCm install, a library folder (/usr/lib/x86_64-linux-gnu, torch/lib) or a "
                   "rocBLAS library folder. Repeatable. Default: every rocBLAS copy found.")
@click.option("--target", "targets", multiple=True, metavar="TARGET", callback=targets_option,
              help="Check for this GPU target (gfx906, gfx906:sramecc+:xnack-) instead of the "
                   "detected GPUs. Repeatable.")
@click.pass_obj
def verify(ui, trees, targets):
    """Check that rocBLAS serves the GPUs: integrity, targets, Tensile index, host library.

    For each rocBLAS copy and each GPU: files rocmrevive installed still have their journal
    hashes; every code object the Tensile index reaches loads on the GPU and its code object
    version suits the tree's ROCm; every kernel a .dat names is in the code object rocBLAS will
    load (and nothing is left unreferenced); librocblas.so embeds the GPU's processor. Each GPU's
    verdict: serves, generic-only (only Tensile's generic fallback kernels: slow) or does-not-serve.
    Exit 0: all pass; 6: something fails (the first offenders are shown; --json lists all).
    """
    from rocmrevive.diagnose.verify import verify_machine

    def work() -> Outcome:
        with ui.progress("verifying", None, unit="checks") as advance:
            rep = verify_machine(ui.root, trees=trees, targets=targets, progress=advance, state_dir=ui.state_dir)
        code, message, failed = "OK", None, rep.failed
        if failed:
            code = "VERIFY_FAILED"
            first = failed[0]
            where = first[0].library + (f" for {first[1].target}" if first[1] is not None else "")
            message = (f"{len(failed)} check(s) failed, first: {first[2].name} in {where}; "
                       "--json lists every offending file and kernel")
        return Outcome(data=rep.to_json(), render=lambda con: _render(con, rep.results, {id(r): o for r, o in zip(rep.results, rep.ollama)}),
                       code=code, message=message)

    ui.run("verify", work)


# ------------------------------------------------------------------------------------------
# rendering

def _short(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def offender_lines(check, limit: int = SHOW) -> list[str]:
    out = []
    for o in check.offenders[:limit]:
        line = f"{o['file']}: {o['problem']}"
        ks = o.get("kernels") or []
        if ks:
            line += f"\n        kernel {ks[0]}" + (f" (+{len(ks) - 1} more)" if len(ks) > 1 else "")
        out.append(line)
    if len(check.offenders) > limit:
        out.append(f"… {len(check.offenders) - limit} more (--json lists all)")
    return out


def _render(con, results, ollama: dict | None = None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from rocmrevive.diagnose.verify import VERDICT_WORDS, CheckStatus

    mark = {CheckStatus.PASS: "[green]pass[/]", CheckStatus.FAIL: "[red]FAIL[/]", CheckStatus.SKIP: "[yellow]skip[/]"}
    for r in results:
        con.print(f"[bold]rocBLAS copy[/] {escape(r.library)}")
        con.print(f"  host library: {r.host_library or 'not found'};  runtime: {r.runtime_basis}",
                  markup=False)
        t = Table(show_edge=False, box=None, pad_edge=False)
        for col in ("target", "check", "result", "what was found"):
            t.add_column(col)
        t.add_row("(copy)", "integrity", mark[r.integrity.status], escape(_short(r.integrity.summary, 100)))
        for d in r.devices:
            for c in d.checks:
                t.add_row(str(d.target), c.name, mark[c.status], escape(_short(c.summary, 100)))
        con.print(t)
        for check, target in [(r.integrity, None)] + [(c, d.target) for d in r.devices for c in d.checks]:
            if check.status != CheckStatus.FAIL:
                continue
            con.print(f"  [red]{check.name}[/] {('for ' + str(target)) if target else ''}:")
            for line in offender_lines(check):
                con.print("    " + line, markup=False)
        ol = (ollama or {}).get(id(r))
        if ol:
            for target, kept in ol["devices"].items():
                con.print(f"  Ollama ({ol['runner']}): {target} "
                          + ("kept: its glob finds TensileLibrary_lazy_" + target.split(":")[0] + ".dat" if kept else
                             "DROPPED: no TensileLibrary_lazy_" + target.split(":")[0] + ".dat (Ollama logs "
                             "'no rocblas support for gfx target' / 'amdgpu is not supported')"), markup=False)
        for d in r.devices:
            con.print(f"  {d.target}: {VERDICT_WORDS[d.verdict]}", markup=False)
        for d in r.devices:
            for c in d.checks:
                if c.status == CheckStatus.PASS and c.notes:
                    for n in c.notes[:SHOW]:
                        con.print(f"  note ({c.name}, {d.target}): {n}", markup=False)
    con.print(_verdict_line(results))


def _verdict_line(results) -> str:
    """The last line: the verdict, and when it fails its cause (the failed checks, where, what
    they found)."""
    from rich.markup import escape

    from rocmrevive.diagnose.verify import CheckStatus

    if all(r.ok for r in results):
        return "[green]verify: everything the GPUs need is there[/]"
    failed = [(r.library, c) for r in results for c in [r.integrity] + [c for d in r.devices for c in d.checks]
              if c.status == CheckStatus.FAIL]
    served = all(d.ok for r in results for d in r.devices)
    head = "every GPU is served, but" if served else "something the GPUs need is missing or broken:"
    seen: list[str] = []
    for lib, c in failed:
        part = f"{c.name} failed in {lib} ({_short(c.summary, 100)})"
        if part not in seen:
            seen.append(part)
    return f"[red]verify: {escape(head + ' ' + '; '.join(seen))}[/]"
