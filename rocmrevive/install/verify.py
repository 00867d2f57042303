"""``rocmrevive verify`` without the rendering: every rocBLAS copy (or those of ``--tree``), each
checked for every device, with the integrity of what rocmrevive installed in it.

    rep = verify_machine(Root("/"), trees=(), targets=())
    rep.ok, rep.failed[0]        # (CopyResult, DeviceResult | None, Check)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from rocmrevive.errors import RevError


@dataclass
class VerifyReport:
    devices: list
    device_note: str
    results: list = field(default_factory=list)      # diagnose.verify.CopyResult per copy
    ollama: list = field(default_factory=list)       # per copy: Ollama's own check (None: not Ollama's)
    libraries: list = field(default_factory=list)    # per copy: TheRock tree's library verdicts (None: not one)

    @property
    def failed(self) -> list:
        """(copy result, device result or None, failed check), integrity failures last."""
        from rocmrevive.diagnose.verify import CheckStatus

        out = [(r, d, c) for r in self.results for d in r.devices for c in d.checks if c.status == CheckStatus.FAIL]
        return out + [(r, None, r.integrity) for r in self.results if r.integrity.status == CheckStatus.FAIL]

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_json(self) -> dict:
        return {"ok": self.ok, "targets": [str(d) for d in self.devices], "target_source": self.device_note,
                "copies": [{**r.to_json(), **({"ollama": o} if o else {}), **({"libraries": lv} if lv is not None else {})}
                           for r, o, lv in zip(self.results, self.ollama, self.libraries + [None] * len(self.results))]}


def verify_machine(root, *, trees=(), targets=(), progress: Callable[[int], None] = lambda n: None,
                   state_dir: str | None = None) -> VerifyReport:
    """Resolve the devices and copies, then check each copy for each device (``progress(n)``
    after each copy, n checks done)."""
    from rocmrevive.diagnose import locate
    from rocmrevive.diagnose.verify import verify_copy
    from rocmrevive.hardware.devices import resolve_devices

    devices, device_note = resolve_devices(root, targets)
    copies = resolve_copies(root, trees)
    show = root.machine_path
    rep = VerifyReport(devices, device_note)
    for _tree, lib, version in copies:
        host = locate.rocblas_host_library(lib)
        integrity = integrity_check(root, show(lib), [show(host)] if host else [], state_dir=state_dir)
        rep.results.append(verify_copy(lib, devices, host_library=host, rocm_version=version,
                                       integrity=integrity, show=show))
        _kpack_checks(rep.results[-1], lib, version, show)
        from rocmrevive.trees.therock import library_checks  # TheRock trees: every GPU library, by content

        rep.libraries.append(library_checks(root, rep.results[-1], lib))
        rep.ollama.append(_ollama_check(show(lib), lib, devices))
        progress(len(devices))
    return rep


def _kpack_checks(result, lib: Path, rocm_version, show) -> None:
    """TheRock trees: a ``kpack`` check per device, whether the tree's ``.kpack`` archives carry
    code for its processor (their TOC / code objects, ``codeobj.kpack``); on failure, the line
    names the real choices (``trees.gfx906_choices.summary``)."""
    from rocmrevive.codeobj.kpack import file_report
    from rocmrevive.diagnose.audit import kpack_files
    from rocmrevive.diagnose.verify import Check, CheckStatus
    from rocmrevive.trees.gfx906_choices import summary

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
            dev.checks.append(Check("kpack", CheckStatus.PASS, f"{len(have)} .kpack archive(s) carry {dev.target.processor}: {names}"))
            continue
        arches = sorted({p for r in reports for p in r.processors})
        dev.checks.append(Check(
            "kpack", CheckStatus.FAIL, f"TheRock tree: its {len(reports)} .kpack archive(s) carry {', '.join(arches) or 'nothing'}, "
                           f"not {dev.target.processor}; " + (summary(rocm_version, show(lib)) if dev.target.processor == "gfx906"
                                                else f"TheRock's device package for {dev.target.processor} of the tree's release"),
            [{"kind": "kpack-missing-target", "file": show(Path(r.path)), "kernels": [],
              "problem": f"no {dev.target.processor} code"} for r in reports]))


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


def _resolved(root, real: Path) -> str:
    try:
        return str(root.resolve(root.machine_path(real)))
    except (ValueError, OSError):
        return str(real)


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
            from rocmrevive.trees.therock import given_tree  # TheRock's /opt/rocm, an MI50 prefix

            real = given_tree(root, root.given(t))
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


def integrity_check(root, machine_lib: str, machine_files: Sequence[str] = (), state_dir: str | None = None):
    """Files rocmrevive installed in this copy (its library folder, and ``machine_files`` such
    as its librocblas.so) still have their journal hashes."""
    from rocmrevive.diagnose.verify import Check, CheckStatus

    try:
        from rocmrevive.txn.history import list_transactions
        from rocmrevive.txn.journal import PENDING, TxState
    except ImportError:
        return Check("integrity", CheckStatus.SKIP, "not checked: this build has no transaction journal")
    try:
        txs = list_transactions(root, state_dir=state_dir) if state_dir else list_transactions(root)
    except RevError as exc:
        if exc.code == "PERMISSION":  # a user's verify: the files are checked, their journal hashes need root
            return Check("integrity", CheckStatus.SKIP, f"not checked: {exc.message}")
        return Check("integrity", CheckStatus.FAIL, f"cannot read the journal: {exc.message}",
                     [{"kind": "journal-unreadable", "file": "", "kernels": [], "problem": exc.message}])
    prefix = machine_lib.rstrip("/") + "/"

    def here(paths):
        return [p for p in paths or [] if p.startswith(prefix) or p in machine_files]

    offenders: list[dict] = []
    intact, txids = 0, []
    for tx in txs:
        if tx.get("state") in (*PENDING, TxState.IN_PROGRESS):
            if tx.get("tree") and (tx["tree"].startswith(prefix) or prefix.startswith(tx["tree"].rstrip("/") + "/")):
                offenders.append({"kind": "transaction-interrupted", "file": tx.get("journal") or "",
                                  "kernels": [], "problem": f"transaction {tx['txid']} was interrupted: "
                                                            "run `rocmrevive recover`"})
            continue
        if tx.get("state") != TxState.COMMITTED:
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
        return Check("integrity", CheckStatus.FAIL, f"{len(offenders)} file(s) differ from the journal", offenders)
    if not txids:
        return Check("integrity", CheckStatus.SKIP, "rocmrevive has installed nothing in this copy")
    return Check("integrity", CheckStatus.PASS, f"{intact} file(s) from transaction(s) {', '.join(txids)} intact")
