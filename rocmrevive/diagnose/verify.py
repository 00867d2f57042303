"""``rocmrevive verify`` without the rendering: every rocBLAS copy (or those of ``--tree``,
selected by ``trees.select``), each checked for every device, with the integrity of what
rocmrevive installed in it.

Per copy: ``integrity`` (rocmrevive's installed files still have their journal hashes,
``integrity_check``). Per device:

* ``targets``: every code object the Tensile lookup reaches loads on the device (processor,
  xnack/sramecc), and its code object version is one the tree's runtime loads;
* ``tensile``: the lazy index → placeholders → code objects → kernels cross-reference
  (``tensile.xref``) and the reverse;
* ``host``: ``librocblas.so`` itself embeds code for the device (TRSM and friends live there).

    result = verify_copy(Path(".../rocblas/library"), [TargetId.parse("gfx906:sramecc+:xnack-")],
                         host_library=Path(".../librocblas.so.4.4"), rocm_version="6.4.3")
    result.ok, [c.to_json() for d in result.devices for c in d.checks]
    rep = verify_machine(Root("/"), trees=(), targets=())
    rep.ok, rep.failed[0]        # (CopyResult, DeviceResult | None, Check)
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from packaging.version import InvalidVersion, Version

from rocmrevive.codeobj.inspect import inspect_file
from rocmrevive.codeobj.kpack import file_report
from rocmrevive.codeobj.kpackref import host_report as with_archives
from rocmrevive.codeobj.targetid import LoadVerdict, TargetId
from rocmrevive.errors import RevError
from rocmrevive.hardware.devices import resolve_devices
from rocmrevive.strenum import StrEnum
from rocmrevive.tensile.folders import tensile_folder
from rocmrevive.tensile.xref import TARGET_KINDS, XrefReport, cross_reference
from rocmrevive.trees import therock
from rocmrevive.trees.gfx906_choices import summary
from rocmrevive.trees.installs import find_installs
from rocmrevive.trees.layout import kpack_files
from rocmrevive.trees.pythonenv import find_envs
from rocmrevive.trees.rocblas import ollama_supported
from rocmrevive.trees.select import Copy, given_trees, nothing_found, rocblas_copies
from rocmrevive.txn.history import list_transactions
from rocmrevive.txn.journal import PENDING, TxState


class CheckStatus(StrEnum):
    """One check's verdict (its JSON ``status``): a copy fails verify when any check fails."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"    # not checked (the reason is the summary)


class Verdict(StrEnum):
    """What a copy does for one GPU, in a user's words (a device's JSON ``verdict``)."""

    SERVES = "serves"
    GENERIC_ONLY = "generic-only"        # only Tensile's generic fallback kernels: GEMMs run, slowly
    DOES_NOT_SERVE = "does-not-serve"    # a check fails: rocBLAS (or the program) fails on this GPU


VERDICT_WORDS = {
    Verdict.SERVES: "serves",
    Verdict.GENERIC_ONLY: "serves only through Tensile's generic fallback kernels (GEMMs run, slowly)",
    Verdict.DOES_NOT_SERVE: "does not serve",
}


@dataclass
class Check:
    name: str
    status: CheckStatus
    summary: str
    offenders: list[dict] = field(default_factory=list)  # {"file", "kernels", "problem", "kind"}
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "summary": self.summary,
                "offenders": self.offenders, "notes": self.notes}


@dataclass
class DeviceResult:
    target: TargetId
    checks: list[Check] = field(default_factory=list)
    xref: XrefReport | None = None

    @property
    def ok(self) -> bool:
        return all(c.status != CheckStatus.FAIL for c in self.checks)

    @property
    def verdict(self) -> Verdict:
        if not self.ok:
            return Verdict.DOES_NOT_SERVE
        if self.xref is not None and self.xref.generic_only:
            return Verdict.GENERIC_ONLY
        return Verdict.SERVES

    def to_json(self) -> dict:
        out = {"target": str(self.target), "ok": self.ok, "verdict": self.verdict,
               "checks": [c.to_json() for c in self.checks]}
        if self.xref is not None:
            x = self.xref.to_json()
            x.pop("findings")
            out["tensile"] = x
        return out


@dataclass
class CopyResult:
    library: str                 # shown path of the Tensile library folder
    host_library: str | None
    rocm_version: str | None
    runtime_co_max: int | None   # highest code object version the tree's runtime loads
    runtime_basis: str           # how that was found, in words
    integrity: Check
    devices: list[DeviceResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.integrity.status != CheckStatus.FAIL and all(d.ok for d in self.devices)

    def to_json(self) -> dict:
        return {"library": self.library, "host_library": self.host_library,
                "rocm_version": self.rocm_version, "runtime_max_code_object_version": self.runtime_co_max,
                "runtime_basis": self.runtime_basis, "ok": self.ok,
                "integrity": self.integrity.to_json(),
                "devices": [d.to_json() for d in self.devices]}


# ------------------------------------------------------------------------------------------
# what the runtime loads

def max_co_version_for_rocm(version: str) -> int | None:
    """The highest code object version a ROCm release's loader accepts, conservatively:
    v6 from ROCm 6.3 (llvm PR #130963: "ROCm 6.3 will be needed"; docs/formats.md §1.4, §8.3),
    v5 from ROCm 6.0 (whose compiler already writes v5 by default), v4 before."""
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    if v >= Version("6.3"):
        return 6
    if v >= Version("6.0"):
        return 5
    return 4


NEWEST_CO_VERSION = 6


def runtime_limit(rocm_version: str | None, host_report) -> tuple[int | None, str]:
    """(highest loadable code object version or None when unknown, how it was found).

    The tree's ROCm version decides. Without one, the code objects the tree's own
    ``librocblas.so`` embeds are loaded by its runtime (they ship together), which proves a
    lower bound only: it settles the question when that bound is the newest version."""
    if rocm_version:
        limit = max_co_version_for_rocm(rocm_version)
        if limit is not None:
            return limit, f"ROCm {rocm_version}"
    if host_report is not None:
        versions = [e.co_version for e in host_report.entries if e.co_version is not None]
        if versions and max(versions) >= NEWEST_CO_VERSION:
            return max(versions), f"the tree's librocblas embeds code object v{max(versions)}"
        if versions:
            return None, (f"unknown: no ROCm version, and the tree's librocblas only proves "
                          f"code object v{max(versions)} loads")
    return None, "unknown: no ROCm version, and the host library does not say"


# ------------------------------------------------------------------------------------------

def verify_copy(library: Path, devices: list[TargetId], *, host_library: Path | None = None,
                rocm_version: str | None = None, integrity: Check | None = None,
                show: Callable[[Path], str] = str,
                progress: Callable[[int, int], None] | None = None,
                staged: Mapping[str, Path] | None = None, host_report=None) -> CopyResult:
    """Run every check for one rocBLAS copy and each device; never raises for damaged files.
    ``progress(done, total)`` after each check (total: CHECKS per device). With ``staged``
    (file name → path) the folder is checked as it will read once those files are in it.
    ``host_report``: ``inspect_file(host_library)`` when the caller has it already."""
    if host_library is not None and host_report is None:
        host_report = inspect_file(host_library)

    if host_library is not None and host_report is not None:
        host_report = with_archives(host_library, host_report)
    limit, basis = runtime_limit(rocm_version, host_report)
    res = CopyResult(library=show(library),
                     host_library=show(host_library) if host_library is not None else None,
                     rocm_version=rocm_version, runtime_co_max=limit, runtime_basis=basis,
                     integrity=integrity or Check("integrity", CheckStatus.SKIP, "not checked"))
    total = CHECKS * len(devices)
    tick = progress or (lambda done, total: None)
    tick(0, total)
    for dev in devices:
        xr = cross_reference(library if staged else tensile_folder(library, dev.processor), dev, staged)
        d = DeviceResult(dev, xref=xr)
        for check in (lambda: _targets_check(xr, limit, basis), lambda: _tensile_check(xr),
                      lambda: _host_check(host_library, host_report, dev, show)):
            d.checks.append(check())
            tick(sum(len(x.checks) for x in res.devices) + len(d.checks), total)
        res.devices.append(d)
    return res


CHECKS = 3  # per device: targets, tensile, host


def _offender(f) -> dict:
    return {"kind": f.kind, "file": f.file, "kernels": list(f.kernels), "problem": f.detail}


def _targets_check(xr: XrefReport, limit: int | None, basis: str) -> Check:
    offenders = [_offender(f) for f in xr.errors if f.kind in TARGET_KINDS]
    notes = []
    checked = 0
    for co in xr.code_objects.values():
        for e in co.entries:
            if not e.target.covers_processor(xr.device.processor):
                continue
            checked += 1
            if limit is not None and e.co_version is not None and e.co_version > limit:
                need = "ROCm 6.3" if e.co_version >= 6 else "ROCm 6.0"
                offenders.append({"kind": "code-object-version", "file": co.file, "kernels": [],
                                  "problem": f"code object v{e.co_version} needs {need} or newer; "
                                             f"this tree's runtime loads up to v{limit} ({basis})"})
    if limit is None:
        newest = max((e.co_version or 0 for co in xr.code_objects.values() for e in co.entries), default=0)
        notes.append(f"code object versions not checked (up to v{newest} here): runtime {basis}")
    if offenders:
        return Check("targets", CheckStatus.FAIL,
                     f"{len(offenders)} code object(s) will not load on {xr.device}", offenders, notes)
    if not checked:
        return Check("targets", CheckStatus.SKIP, f"no code object for {xr.device.processor} to check", notes=notes)
    return Check("targets", CheckStatus.PASS,
                 f"{checked} code object(s) load on {xr.device}"
                 + (f", all within code object v{limit}" if limit else ""), notes=notes)


def _tensile_check(xr: XrefReport) -> Check:
    errors = [f for f in xr.errors if f.kind not in TARGET_KINDS]
    notes = [f"{f.file}: {f.detail}" for f in xr.warnings]
    facts = (f"{xr.placeholders} placeholders, {xr.kernels_found}/{xr.solutions} solutions' kernels "
             f"found, {xr.referenced}/{len(xr.on_disk)} code objects referenced")
    if not xr.lazy:
        facts = f"{xr.lazy_index} (built without lazy loading): " + facts
    if errors:
        return Check("tensile", CheckStatus.FAIL, f"{len(errors)} problem(s): {facts}",
                     [_offender(f) for f in errors], notes)
    if xr.generic_only:
        notes.insert(0, f"no Tensile solution is tuned for {xr.device.processor}: only the generic "
                        "fallback kernels serve it (GEMMs run, slowly)")
    return Check("tensile", CheckStatus.PASS, facts, notes=notes)


def dangling_links(host_library: Path) -> list[tuple[Path, str]]:
    """The ``librocblas.so*`` links of the host library's major beside it whose file is gone
    (``librocblas.so.4`` → ``librocblas.so.4.4`` deleted): the dynamic loader finds the name
    and cannot open it. (path, what it points to) each."""
    major = re.match(r"^librocblas\.so\.([0-9]+)", host_library.name)
    out = []
    try:
        entries = sorted(os.scandir(host_library.parent), key=lambda e: e.name)
    except OSError:
        return []
    for e in entries:
        if not e.name.startswith("librocblas.so") or not e.is_symlink() or os.path.exists(e.path):
            continue
        other = re.match(r"^librocblas\.so\.([0-9]+)", e.name)
        if major and other and other.group(1) != major.group(1):
            continue  # another major installed side by side
        try:
            out.append((Path(e.path), os.readlink(e.path)))
        except OSError:
            continue
    return out


def _host_check(host_library: Path | None, rep, dev: TargetId, show) -> Check:
    if host_library is None or rep is None:
        return Check("host", CheckStatus.SKIP, "no librocblas.so found next to this library folder")
    name = show(host_library)
    dangling = dangling_links(host_library)
    if dangling:
        return Check("host", CheckStatus.FAIL, f"{len(dangling)} link(s) of the librocblas chain lead nowhere",
                     [{"kind": "host-link-dangling", "file": show(p), "kernels": [],
                       "problem": f"links to {target}, which is gone: programs linked against it fail to start "
                                  "('cannot open shared object file')"} for p, target in dangling])
    if rep.problems and not rep.entries:
        return Check("host", CheckStatus.FAIL, f"{name} cannot be read",
                     [{"kind": "host-unreadable", "file": name, "kernels": [],
                       "problem": "; ".join(rep.problems)}])
    covering = [e for e in rep.entries if e.target.covers_processor(dev.processor)]
    if not covering:
        have = ", ".join(rep.processors) or "nothing"
        return Check("host", CheckStatus.FAIL, f"{name} has no code for {dev.processor}",
                     [{"kind": "host-missing-target", "file": name, "kernels": [],
                       "problem": f"embeds {have}: rocBLAS functions outside Tensile (TRSM, GEMV, "
                                  "level-1/2) fail with hipErrorInvalidDeviceFunction"}])
    good = [e for e in covering if e.target.load_verdict(dev) != LoadVerdict.NO]
    targets = ", ".join(sorted({str(e.target) for e in covering}))
    if not good:
        return Check("host", CheckStatus.FAIL, f"{name} has {dev.processor} code only for another mode",
                     [{"kind": "host-incompatible-features", "file": name, "kernels": [],
                       "problem": f"embeds {targets}, which does not load on {dev}"}])
    return Check("host", CheckStatus.PASS, f"{Path(name).name} embeds {targets}")


# ------------------------------------------------------------------------------------------
# the whole machine: ``rocmrevive verify``

@dataclass(frozen=True)
class VerifyReport:
    """The whole ``verify``, built once: per copy (in the same order) its result, Ollama's own check
    and a TheRock tree's library verdicts."""

    devices: list
    device_note: str
    results: tuple[CopyResult, ...] = ()   # diagnose.verify.CopyResult per copy
    ollama: tuple = ()                     # per copy: Ollama's own check (None: not Ollama's)
    libraries: tuple = ()                  # per copy: TheRock tree's library verdicts (None: not one)

    @property
    def failed(self) -> list:
        """(copy result, device result or None, failed check), integrity failures last."""
        out = [(r, d, c) for r in self.results for d in r.devices for c in d.checks if c.status == CheckStatus.FAIL]
        return out + [(r, None, r.integrity) for r in self.results if r.integrity.status == CheckStatus.FAIL]

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_json(self) -> dict:
        return {"ok": self.ok, "targets": [str(d) for d in self.devices], "target_source": self.device_note,
                "copies": [{**r.to_json(), **({"ollama": o} if o else {}), **({"libraries": lv} if lv is not None else {})}
                           for r, o, lv in zip(self.results, self.ollama, self.libraries)]}


def verify_machine(root, *, trees=(), copies: Sequence[Copy] | None = None, targets=(),
                   progress: Callable[[int], None] = lambda n: None, state_dir: str | None = None) -> VerifyReport:
    """Resolve the devices and copies (``trees.select``: the ``--tree`` folders as typed, or the
    ``copies`` a caller already selected, as doctor's survey did), then check each copy for each
    device (``progress(n)`` after each copy, n checks done)."""
    devices, device_note = resolve_devices(root, targets)
    if copies is None:
        installs, _link = find_installs(root)
        envs, _problems = find_envs(root)
        copies = rocblas_copies(root, given_trees(root, trees), installs=installs, envs=envs)
    if not copies:
        raise nothing_found(root)
    show = root.machine_path
    results, libraries, ollama = [], [], []
    for c in copies:
        integrity = integrity_check(root, c.path, [show(c.host)] if c.host else [], state_dir=state_dir)
        result = verify_copy(c.real, devices, host_library=c.host, rocm_version=c.rocm_version,
                             integrity=integrity, show=show)
        _kpack_checks(result, c.real, c.rocm_version, show)
        results.append(result)
        libraries.append(therock_library_checks(root, result, c.real))  # every GPU library, by content
        ollama.append(_ollama_check(c.path, c.real, devices))
        progress(len(devices))
    return VerifyReport(devices, device_note, tuple(results), tuple(ollama), tuple(libraries))


def _kpack_checks(result, lib: Path, rocm_version, show) -> None:
    """TheRock trees: a ``kpack`` check per device, whether the tree's ``.kpack`` archives carry
    code for its processor (their TOC / code objects, ``codeobj.kpack``); on failure, the line
    names the real choices (``trees.gfx906_choices.summary``)."""
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
    parts = machine_lib.rstrip("/").split("/")
    if len(parts) < 4 or parts[-2:] != ["rocblas", "library"] or "ollama" not in parts[:-3]:
        return None
    supported = ollama_supported(str(lib))
    return {"runner": "/".join(parts[:-2]), "glob": "rocblas/library/TensileLibrary_lazy_gfx*.dat",
            "supported": supported,
            "devices": {str(d): (getattr(d, "processor", None) or str(d).split(":")[0]) in supported
                        for d in devices}}


def integrity_check(root, machine_lib: str, machine_files: Sequence[str] = (), state_dir: str | None = None):
    """Files rocmrevive installed in this copy (its library folder, and ``machine_files`` such
    as its librocblas.so) still have their journal hashes."""
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
        if tx.state in (*PENDING, TxState.IN_PROGRESS):
            if tx.tree and (tx.tree.startswith(prefix) or prefix.startswith(tx.tree.rstrip("/") + "/")):
                offenders.append({"kind": "transaction-interrupted", "file": tx.journal or "",
                                  "kernels": [], "problem": f"transaction {tx.txid} was interrupted: "
                                                            "run `rocmrevive recover`"})
            continue
        if tx.state != TxState.COMMITTED:
            continue
        if not here(tx.managed):
            continue
        txids.append(tx.txid)
        intact += len(here(tx.intact))
        for p in here(tx.drifted):
            offenders.append({"kind": "file-changed", "file": p, "kernels": [],
                              "problem": f"changed since transaction {tx.txid} installed it"})
        for p in here(tx.missing):
            offenders.append({"kind": "file-missing", "file": p, "kernels": [],
                              "problem": f"installed by transaction {tx.txid}, now missing "
                                         "(an upgrade or reinstall replaced the tree?)"})
    if offenders:
        return Check("integrity", CheckStatus.FAIL, f"{len(offenders)} file(s) differ from the journal", offenders)
    if not txids:
        return Check("integrity", CheckStatus.SKIP, "rocmrevive has installed nothing in this copy")
    return Check("integrity", CheckStatus.PASS, f"{intact} file(s) from transaction(s) {', '.join(txids)} intact")


def therock_library_checks(root, result, library: Path) -> list[dict] | None:
    """For a rocBLAS copy in a TheRock tree: a check per other GPU library of the tree and device
    (named by the library's key: ``rocsolver``, ``miopen``, ...) added to ``result`` (verify's
    CopyResult), and every verdict as JSON; None for a copy in no such tree. rocBLAS itself is
    judged by the copy's own checks (targets, tensile, host)."""
    prefix = therock.tree_of(root, library)
    if prefix is None:
        return None
    procs = sorted({d.target.processor for d in result.devices})
    verdicts = therock.library_verdicts(root, prefix, procs)
    for dev in result.devices:
        for v in verdicts:
            if v.processor != dev.target.processor or v.key == "rocblas" or v.status == "absent":
                continue
            if v.status == therock.SERVES:
                what = "through rocBLAS" if v.source == "rocblas" else f"in {', '.join(v.evidence)}"
                dev.checks.append(Check(v.key, CheckStatus.PASS, f"{v.name}: {v.processor} code {what}"))
            else:
                dev.checks.append(Check(v.key, CheckStatus.FAIL, f"{v.name} has no {v.processor} code",
                                        [{"kind": "library-missing-target", "file": v.file or prefix, "kernels": [],
                                          "problem": v.problem}]))
    return [v.to_json() for v in verdicts]
