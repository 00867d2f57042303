"""``rocmrevive rccl``: RCCL on multi-GPU boxes — which librccl copies serve which cards
(``audit``), a multi-target RCCL side by side (``install``), the build recipe when no prebuilt one
fits (``recipe``), and the peer-to-peer environment file (``env``)."""
from __future__ import annotations

import click

from rocmrevive.cli.options import state_dir_option
from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome, mirror_option, targets_option, text_or_file
from rocmrevive.errors import RevError

TARGET_HELP = "Work for this GPU target instead of the detected GPUs (repeatable)."


@policy(writes=False, on_pending=OnPending.IGNORE)
@click.group()
def rccl():
    """RCCL targets, mixed-generation pairs, peer-to-peer and the vLLM loader."""


# ---- audit --------------------------------------------------------------------------------

@policy(writes=False, on_pending=OnPending.REPORT)
@rccl.command("audit")
@click.option("--target", "targets", multiple=True, metavar="TARGET", callback=targets_option, help=TARGET_HELP)
@click.option("--python", "pythons", multiple=True, metavar="PATH",
              help="A Python interpreter, venv or site-packages whose PyTorch may bundle RCCL (repeatable).")
@click.option("--env-file", "env_files", multiple=True, metavar="FILE",
              help="An environment file programs run with (shell, Docker --env-file or systemd): its "
                   "VLLM_NCCL_SO_PATH and LD_LIBRARY_PATH are followed (repeatable; a machine path).")
@click.option("--vllm-nccl-so-path", metavar="PATH", help="vLLM's configured RCCL (as VLLM_NCCL_SO_PATH).")
@click.option("--ld-library-path", metavar="DIRS", help="Colon-separated folders, as LD_LIBRARY_PATH.")
@click.option("--lib", "libs", multiple=True, metavar="FILE", help="Audit this library file (repeatable).")
@click.option("--no-search", is_flag=True, help="Only the copies named (--lib, --python, settings), "
                                                "not the ROCm trees and system folders.")
@click.pass_obj
def audit(ui, targets, pythons, env_files, vllm_nccl_so_path, ld_library_path, libs, no_search):
    """Every librccl.so programs may load, the targets it embeds, and the cards it serves.

    Looks in the ROCm trees, the system folders, PyTorch wheels (torch/lib), rocmrevive's own
    side-by-side installs, and what VLLM_NCCL_SO_PATH / LD_LIBRARY_PATH name. Targets are read
    from each library's .hip_fatbin. Exit 0 when some copy serves every GPU (with --lib: when
    every named copy does), 6 when none does, 3 when no RCCL is found.
    """
    from rocmrevive.rccl.audit import audit as run_audit

    def work() -> Outcome:
        rep = run_audit(ui.root, targets=targets, pythons=pythons, env_files=env_files,
                        vllm_nccl_so_path=vllm_nccl_so_path, ld_library_path=ld_library_path, libs=libs,
                        search=not no_search)
        code, message = "OK", None
        if not rep.copies:
            code, message = "NOTHING_SUPPORTED", (f"no librccl found under {ui.root.base}; pass --python, "
                                                  f"--env-file or --lib")
        elif not rep.gpus:
            code, message = "NOTHING_SUPPORTED", "no AMD GPU with a known target; pass --target"
        elif libs:
            named = [c for c in rep.copies if any(ch.kind == "given" for ch in c.channels)]
            bad = [c for c in named if not c.serves_all]
            if bad:
                code = "VERIFY_FAILED"
                message = "; ".join(f"{c.path} has no code for " + ", ".join(
                    f"GPU{i} {rep.gpus[i].target}" for i in c.missing) for c in bad)
        elif not rep.serving_all:
            code = "VERIFY_FAILED"
            message = (f"no RCCL on this machine serves every GPU ({', '.join(rep.processors)}); "
                       f"`rocmrevive rccl install` puts one side by side, `rocmrevive rccl recipe` writes the build")
        return Outcome(data=rep.to_json(), code=code, message=message, warnings=rep.problems,
                       render=lambda con: _render_audit(con, rep))

    ui.run("rccl audit", work)


def _render_audit(con, rep) -> None:
    from rich.table import Table

    con.print("GPUs: " + ", ".join(f"GPU{g.index} {g.target} {g.name}" for g in rep.gpus)
              + f"  ({rep.devices_from})")
    t = Table(show_edge=False)
    t.add_column("librccl")
    t.add_column("version")
    t.add_column("reached through")
    t.add_column("targets")
    for g in rep.gpus:
        t.add_column(f"GPU{g.index} {g.processor}")
    for c in rep.copies:
        via = "; ".join(f"{ch.kind}" + (f" ({ch.via})" if ch.kind in ("vllm", "ld-library-path") else "")
                        for ch in c.channels)
        cells = ["yes" if cov.served else "NO" for cov in c.coverage]
        t.add_row(c.path, c.version or "?", via, " ".join(c.targets) or "-", *cells)
    con.print(t)
    for k, v in rep.settings.items():
        con.print(f"{k}={v['value']}  (from {v['from']})", markup=False)
    best = rep.serving_all
    if best:
        con.print(f"serves every GPU: {', '.join(c.path for c in best)}", markup=False)
    for c in rep.copies:
        if c.needed_hip:
            con.print(f"  {c.path} binds {c.needed_hip}", markup=False)


# ---- install ------------------------------------------------------------------------------

@policy(writes=True, on_pending=OnPending.REFUSE)
@rccl.command("install")
@click.option("--target", "targets", multiple=True, metavar="TARGET", callback=targets_option, help=TARGET_HELP)
@click.option("--source", metavar="NAME", help="Use this RCCL source (see --json 'source'); default: the "
                                               "first known one that carries every processor.")
@click.option("--from", "from_path", metavar="PATH", help="A local .deb or unpacked package folder (air-gapped).")
@click.option("--mirror", metavar="URL", callback=mirror_option, help="Debian mirror (default: the host's apt configuration).")
@click.option("--cache", metavar="DIR", help="Download cache (default /var/cache/rocmrevive under --root).")
@click.option("--tree", metavar="PATH", help="The ROCm install whose programs will use it (its lib/ is searched "
                                             "for RCCL's needs; a different HIP runtime there refuses).")
@click.option("--prefix", metavar="DIR", help="Install folder (default /opt/rocmrevive/rccl/<version>).")
@click.option("--also-name", "also_names", multiple=True, metavar="NAME",
              help="Also install the library under this file name (e.g. librccl.so, for programs that "
                   "link that name).")
@click.option("--python", "pythons", multiple=True, metavar="PATH",
              help="Python environments whose PyTorch HIP runtime must match (repeatable).")
@click.option("--skip-abi", is_flag=True, help="Install even when the ABI check says it would not load here.")
@click.option("--check", is_flag=True, help="Fetch, verify and plan; change nothing (exit 20 if it would).")
@state_dir_option
@click.pass_obj
def install(ui, targets, source, from_path, mirror, cache, tree, prefix, also_names, pythons, skip_abi, check,
            state_dir):
    """Install an RCCL that serves every GPU, side by side, as one transaction.

    Picks a known prebuilt RCCL that carries the union of the detected processors, verifies
    its device code and that it would load here (SONAME, needed libraries, GLIBC/GLIBCXX
    versions, the HIP runtime of the user's programs), and writes it to
    /opt/rocmrevive/rccl/<version>/lib/librccl.so.1 — never over AMD's copy. `rocmrevive
    rollback TXID` removes it byte for byte.
    """
    from rocmrevive.rccl.install import install_rccl
    from rocmrevive.txn.result import TxOutcome

    def work() -> Outcome:
        rep = install_rccl(ui.root, targets=targets, source=source, from_path=from_path, cache=cache,
                           mirror=mirror, tree=tree, prefix=prefix, also_names=also_names, skip_abi=skip_abi,
                           check=check, pythons=pythons, state_dir=state_dir, log=lambda m: ui.log(m))
        code, message = "OK", None
        if check and rep.state == TxOutcome.DRY_RUN:
            code, message = "CHANGES_PENDING", f"{rep.library} would be installed (run without --check)"
        return Outcome(data=rep.to_json(), changed=rep.changed, code=code, message=message,
                       warnings=rep.warnings, render=lambda con: _render_install(con, rep))

    ui.run("rccl install", work)


def _render_install(con, rep) -> None:
    con.print(f"devices: {', '.join(d['target'] for d in rep.devices)} -> {';'.join(rep.processors)}")
    con.print(f"source: {rep.source['package']} {rep.source['version']} "
              f"(targets {' '.join(rep.staged_targets)})", markup=False)
    abi = rep.abi or {}
    con.print(f"ABI: {'loads here' if abi.get('ok') else 'REFUSED, skipped' if rep.abi_skipped else '?'}", markup=False)
    tx = rep.transaction or {}
    con.print(f"{rep.state}: {rep.library}" + (f"  (transaction {tx.get('txid')}; "
                                                 f"`rocmrevive rollback {tx.get('txid')}` undoes it)"
                                                 if tx.get("txid") else ""), markup=False)
    for e in rep.env:
        con.print(f"  export {e['key']}={e['value']}    # {e['why']}", markup=False)


# ---- recipe -------------------------------------------------------------------------------

@policy(writes=False, on_pending=OnPending.REPORT)
@rccl.command("recipe")
@click.option("--target", "targets", multiple=True, metavar="TARGET", callback=targets_option, help=TARGET_HELP)
@click.option("--rocm-path", metavar="DIR", help="The ROCm install to build against (default: /opt/rocm's).")
@click.option("--rocm-version", metavar="X.Y.Z", help="The ROCm release (RCCL tag rocm-X.Y.Z).")
@click.option("--prefix", metavar="DIR", help="Output folder (default /opt/rocmrevive/rccl/<rocm>-<targets>).")
@click.option("-o", "--output", metavar="FILE", help="Write the script to FILE (executable) instead of stdout.")
@click.pass_obj
def recipe(ui, targets, rocm_path, rocm_version, prefix, output):
    """The exact RCCL build for this machine's targets, as a script to run.

    The targets are the union of all detected processors (never only gfx906), the output
    folder sits side by side, and the script ends with `rocmrevive rccl audit --lib ...`, the
    check that proves the library serves every GPU.
    """
    from rocmrevive.rccl.recipe import build_recipe

    def work() -> Outcome:
        r = build_recipe(ui.root, targets=targets, rocm_path=rocm_path, rocm_version=rocm_version, prefix=prefix)
        return text_or_file(r.to_json(), r.script, output, lambda written: [
            f"wrote {written}: RCCL for {';'.join(r.targets)} into {r.prefix}", f"then check: {r.check}"], 0o755)

    ui.run("rccl recipe", work)


# ---- env ----------------------------------------------------------------------------------

@policy(writes=False, on_pending=OnPending.REPORT)
@rccl.command("env")
@click.option("--gpus", metavar="LIST", help="Only these GPU indexes, e.g. 0,1 (default: all).")
@click.option("--lib", metavar="FILE", help="The RCCL programs should load (default: a rocmrevive side-by-side "
                                            "install that serves every GPU, if there is one).")
@click.option("--format", "fmt", type=click.Choice(["sh", "env"]), default="sh", show_default=True,
              help="sh: `export K=V` for `source`; env: K=V for Docker --env-file / systemd EnvironmentFile.")
@click.option("-o", "--output", metavar="FILE", help="Write the file to FILE instead of stdout.")
@click.pass_obj
def env(ui, gpus, lib, fmt, output):
    """Peer-to-peer readiness per pair and the RCCL/NCCL environment file that suits it.

    Per pair of GPUs: the PCIe relation, whether P2P DMA can work and what blocks it (BAR size,
    kernel build options, amdgpu.pcie_p2p, the host bridge, ACS, the KFD's own answer). The file
    sets NCCL_P2P_DISABLE (or NCCL_P2P_LEVEL) when P2P cannot work, HSA_FORCE_FINE_GRAIN_PCIE=1,
    and the RCCL library path; the kernel command line (iommu=pt) is given as a comment.
    """
    from rocmrevive.hardware import scan
    from rocmrevive.rccl.p2p import readiness

    def work() -> Outcome:
        chosen = None
        if gpus:
            try:
                chosen = {int(x) for x in gpus.split(",") if x.strip()}
            except ValueError:
                raise RevError("USAGE", f"--gpus {gpus}: a comma-separated list of GPU indexes") from None
        hw = scan(ui.root)
        if not hw.gpus:
            raise RevError("NOTHING_SUPPORTED", f"no AMD GPU under {ui.root.base}")
        unknown = sorted((chosen or set()) - {g.index for g in hw.gpus})
        if unknown:
            raise RevError("USAGE", f"--gpus: no GPU{unknown[0]} (the machine has {len(hw.gpus)})")
        lib_path, lib_note = _rccl_for(ui.root, lib, chosen)
        rep = readiness(ui.root, hw, gpus=chosen, rccl_lib=lib_path)
        if lib_note:
            rep.notes.append(lib_note)
        text = rep.env_text(fmt)
        data = rep.to_json()
        data["env_file"], data["format"] = text, fmt
        return text_or_file(data, text, output, lambda written: [f"wrote {written} ({rep.verdict})"])

    ui.run("rccl env", work)


def _rccl_for(root, lib: str | None, chosen) -> tuple[str | None, str | None]:
    """The library the env file should point programs at, and a note when none fits."""
    from rocmrevive.rccl.audit import audit as run_audit

    if lib:
        rep = run_audit(root, libs=[lib], search=False)
        copy = next((c for c in rep.copies if c.path == root.machine_path(root.resolve(lib))), None)
        if copy is None:
            raise RevError("USAGE", f"--lib {lib}: no such file under {root.base}")
        miss = [i for i in copy.missing if chosen is None or i in chosen]
        if miss:
            raise RevError("VERIFY_FAILED", f"--lib {lib} has no code for "
                                            + ", ".join(f"GPU{i} {rep.gpus[i].target}" for i in miss))
        return lib, None
    rep = run_audit(root)
    ours = [c for c in rep.copies if any(ch.kind == "rocmrevive" for ch in c.channels)
            and all(i not in c.missing for i in (chosen if chosen is not None else range(len(rep.gpus))))]
    if ours:
        best = sorted(ours, key=lambda c: c.path)[-1]
        name = next((n for n in best.names if n.endswith("/librccl.so.1")), best.path)
        return name, None
    if rep.copies and not rep.serving_all:
        return None, ("no RCCL here serves every GPU: `rocmrevive rccl install` or `rocmrevive rccl recipe`, "
                      "then run this again")
    return None, None
