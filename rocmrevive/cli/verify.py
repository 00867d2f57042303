"""``rocmrevive verify``: prove every rocBLAS copy serves every GPU (or ``--target``).

Per copy and device: integrity against the journal, code object targets and versions, the
Tensile cross-reference (file and kernel), and the host library's own device code. Exit 0 only
when every check passes (skips do not fail); 6 otherwise.
"""
from __future__ import annotations

import os
from pathlib import Path

import click

from rocmrevive.cli.ui import Outcome, targets_option
from rocmrevive.errors import RevError

SHOW = 3  # offenders shown per failing check (``--json`` lists all)


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
    load (and nothing is left unreferenced); librocblas.so embeds the GPU's processor.
    Exit 0: all pass; 6: something fails (the first offenders are shown; --json lists all).
    """
    from rocmrevive.diagnose import locate
    from rocmrevive.diagnose.verify import FAIL, verify_copy

    def work() -> Outcome:
        devices, device_note = resolve_devices(ui.root, targets)
        copies = resolve_copies(ui.root, trees)
        show = ui.root.machine_path
        results = []
        ollama: dict[int, dict | None] = {}
        with ui.progress("verifying", len(copies) * len(devices), unit="checks") as advance:
            for _tree, lib, version in copies:
                host = locate.rocblas_host_library(lib)
                integrity = integrity_check(ui.root, show(lib), [show(host)] if host else [], state_dir=ui.state_dir)
                results.append(verify_copy(lib, devices, host_library=host, rocm_version=version,
                                           integrity=integrity, show=show))
                _kpack_checks(results[-1], lib, version, show)
                ollama[id(results[-1])] = _ollama_check(show(lib), lib, devices)
                advance(len(devices))
        failed = [(r, d, c) for r in results for d in r.devices for c in d.checks if c.status == FAIL]
        failed += [(r, None, r.integrity) for r in results if r.integrity.status == FAIL]
        ok = not failed
        data = {"ok": ok, "targets": [str(d) for d in devices], "target_source": device_note,
                "copies": [{**r.to_json(), **({"ollama": ollama[id(r)]} if ollama.get(id(r)) else {})}
                           for r in results]}
        code, message = "OK", None
        if not ok:
            code = "VERIFY_FAILED"
            first = failed[0]
            where = first[0].library + (f" for {first[1].target}" if first[1] is not None else "")
            message = (f"{len(failed)} check(s) failed, first: {first[2].name} in {where}; "
                       "--json lists every offending file and kernel")
        return Outcome(data=data, render=lambda con: _render(con, results, ollama),
                       code=code, message=message)

    ui.run("verify", work)


# ------------------------------------------------------------------------------------------
# inputs: devices, copies, versions, journal

def _ollama_check(machine_lib: str, lib: Path, devices) -> dict | None:
    """For a library folder inside an Ollama install (``…/ollama/<runner>/rocblas/library``):
    the targets Ollama's own glob finds and, per device, whether Ollama keeps it."""
    from rocmrevive.trees.rocblas import ollama_supported

    parts = machine_lib.rstrip("/").split("/")
    if len(parts) < 4 or parts[-2:] != ["rocblas", "library"] or "ollama" not in parts[:-3]:
        return None
    supported = ollama_supported(str(lib))
    return {"runner": "/".join(parts[:-2]), "glob": "rocblas/library/TensileLibrary_lazy_gfx*.dat",
            "supported": supported,
            "devices": {str(d): (getattr(d, "processor", None) or str(d).split(":")[0]) in supported
                        for d in devices}}


def resolve_devices(root, targets) -> tuple[list, str]:
    from rocmrevive.hardware.devices import resolve_devices as _resolve

    return _resolve(root, targets)


def _real(root, p: str) -> Path:
    """A path the user typed: relative to the working folder on the real machine, or a
    machine path under --root."""
    return Path(os.path.abspath(p)) if root.is_host else root.path(p)


def _resolved(root, real: Path) -> str:
    try:
        return str(root.resolve(root.machine_path(real)))
    except (ValueError, OSError):
        return str(real)


def _kpack_checks(result, lib: Path, rocm_version, show) -> None:
    """TheRock trees: a ``kpack`` check per device, whether the tree's ``.kpack`` archives carry
    code for its processor (their TOC / code objects, ``codeobj.kpack``); on failure, AMD's own
    device package of the same release is the fix."""
    from types import SimpleNamespace

    from rocmrevive.codeobj.kpack import file_report
    from rocmrevive.diagnose.audit import kpack_files
    from rocmrevive.diagnose.verify import FAIL, PASS, Check
    from rocmrevive.trees.recipe import therock_gfx906_command

    if lib.name != "library" or lib.parent.name != "rocblas":
        return
    archives = kpack_files(lib.parent.parent.parent)
    if not archives:
        return
    reports = [file_report(a) for a in archives]
    for dev in result.devices:
        have = [r for r in reports if any(e.target.covers_processor(dev.target.processor) for e in r.entries)]
        if have:
            names = ", ".join(show(Path(r.path)) for r in have)
            dev.checks.append(Check("kpack", PASS, f"{len(have)} .kpack archive(s) carry {dev.target.processor}: {names}"))
            continue
        copy = SimpleNamespace(layout="amd", rocm_version=rocm_version)
        cmd, _notes = therock_gfx906_command(copy, [dev.target.processor])
        arches = sorted({p for r in reports for p in r.processors})
        dev.checks.append(Check(
            "kpack", FAIL, f"TheRock tree: its {len(reports)} .kpack archive(s) carry {', '.join(arches) or 'nothing'}, "
                           f"not {dev.target.processor}; AMD's own build: {cmd}",
            [{"kind": "kpack-missing-target", "file": show(Path(r.path)), "kernels": [],
              "problem": f"no {dev.target.processor} code"} for r in reports]))


def detected_copies(root) -> list:
    """Every rocBLAS copy ``trees`` finds (AMD installs, distribution folders, Python wheels,
    bundles), with the ROCm version it knows for each."""
    from rocmrevive.trees.installs import find_installs
    from rocmrevive.trees.pythonenv import find_envs
    from rocmrevive.trees.rocblas import find_copies

    installs, _link = find_installs(root)
    envs, _problems = find_envs(root)
    return find_copies(root, installs=installs, envs=envs)


def resolve_copies(root, trees) -> list[tuple[Path, Path, str | None]]:
    """(tree, rocBLAS library folder, ROCm version) for every copy in ``trees`` (real paths),
    or for every copy on the machine when none is given."""
    from rocmrevive.diagnose import locate

    known = {}
    for c in detected_copies(root):
        known[_resolved(root, root.path(c.path))] = c
    out: list[tuple[Path, Path, str | None]] = []
    if trees:
        for t in trees:
            real = _real(root, t)
            if not real.exists():
                raise RevError("USAGE", f"--tree {t}: no such folder under {root.base}")
            libs = locate.rocblas_library_dirs(real)
            if not libs:
                raise RevError("NOTHING_SUPPORTED",
                               f"no rocBLAS Tensile library in {t} (looked for TensileLibrary* files in it, "
                               "lib/rocblas/library and rocblas/*/library)")
            for lib in libs:
                c = known.get(_resolved(root, lib))
                out.append((real, lib, c.rocm_version if c else None))
        return out
    for key, c in known.items():
        lib = root.path(c.path)
        if lib.is_dir():
            out.append((lib, lib, c.rocm_version))
    if not out:
        raise RevError("NOTHING_SUPPORTED",
                       f"no rocBLAS found under {root.base} (/opt/rocm*, /usr/lib*, Python "
                       "environments); pass --tree PATH")
    return out


def system_library_dirs(root) -> list[Path]:
    """Folders holding ROCm libraries: every /opt/rocm* install's lib folders, and a system
    library folder when a HIP runtime lives there."""
    from rocmrevive.diagnose import locate
    from rocmrevive.trees.installs import find_installs

    installs, _link = find_installs(root)
    out: list[Path] = []
    for inst in installs:
        out += locate.lib_dirs(root.path(inst.path))
    for p in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64"):
        d = root.path(p)
        if d.is_dir() and any(d.glob("libamdhip64.so*")):
            out.append(d)
    return out


def integrity_check(root, machine_lib: str, machine_files: list[str] = (), state_dir: str | None = None):
    """Files rocmrevive installed in this copy (its library folder, and ``machine_files`` such
    as its librocblas.so) still have their journal hashes."""
    from rocmrevive.diagnose.verify import FAIL, PASS, SKIP, Check

    try:
        from rocmrevive.txn.transaction import list_transactions
    except ImportError:
        return Check("integrity", SKIP, "not checked: this build has no transaction journal")
    try:
        txs = list_transactions(root, **({"state_dir": state_dir} if state_dir else {}))
    except RevError as exc:
        return Check("integrity", FAIL, f"cannot read the journal: {exc.message}",
                     [{"kind": "journal-unreadable", "file": "", "kernels": [], "problem": exc.message}])
    prefix = machine_lib.rstrip("/") + "/"

    def here(paths):
        return [p for p in paths or [] if p.startswith(prefix) or p in machine_files]

    offenders, intact, txids = [], 0, []
    for tx in txs:
        if tx.get("state") in ("interrupted", "damaged", "in_progress"):
            if tx.get("tree") and (tx["tree"].startswith(prefix) or prefix.startswith(tx["tree"].rstrip("/") + "/")):
                offenders.append({"kind": "transaction-interrupted", "file": tx.get("journal") or "",
                                  "kernels": [], "problem": f"transaction {tx['txid']} was interrupted: "
                                                            "run `rocmrevive recover`"})
            continue
        if tx.get("state") != "committed":
            continue
        mine = here(tx.get("intact")) + here(tx.get("drifted")) + here(tx.get("missing"))
        if not mine:
            continue
        txids.append(tx["txid"])
        intact += len(here(tx.get("intact")))
        for p in here(tx.get("drifted")):
            offenders.append({"kind": "file-changed", "file": p, "kernels": [],
                              "problem": f"changed since transaction {tx['txid']} installed it"})
        for p in here(tx.get("missing")):
            offenders.append({"kind": "file-missing", "file": p, "kernels": [],
                              "problem": f"installed by transaction {tx['txid']}, now missing "
                                         "(an upgrade or reinstall replaced the tree?)"})
    if offenders:
        return Check("integrity", FAIL, f"{len(offenders)} file(s) differ from the journal", offenders)
    if not txids:
        return Check("integrity", SKIP, "rocmrevive has installed nothing in this copy")
    return Check("integrity", PASS, f"{intact} file(s) from transaction(s) {', '.join(txids)} intact")


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

    from rocmrevive.diagnose.verify import FAIL, PASS

    mark = {"pass": "[green]pass[/]", "fail": "[red]FAIL[/]", "skip": "[yellow]skip[/]"}
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
            if check.status != FAIL:
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
            for c in d.checks:
                if c.status == PASS and c.notes:
                    for n in c.notes[:SHOW]:
                        con.print(f"  note ({c.name}, {d.target}): {n}", markup=False)
    verdict = all(r.ok for r in results)
    con.print("[green]verify: everything the GPUs need is there[/]" if verdict
              else "[red]verify: something the GPUs need is missing or broken[/]")
