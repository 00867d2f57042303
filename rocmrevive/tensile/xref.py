"""Cross-reference a rocBLAS Tensile library folder for one device, the way rocBLAS looks
kernels up (docs/formats.md §5.3–5.4):

lazy index ``TensileLibrary_lazy_<proc>.dat`` → every placeholder ``<p>.dat`` → for each
solution the code object its file name rule gives (``<p>.co``, ``<p>.hsaco`` or
``<p>_<proc>.hsaco``) → the kernel as a ``.kd`` symbol **and** a metadata entry in a code object
that can load on the device. Then the reverse: code objects for the processor that nothing
references. ``Kernels.so-000-<proc>.hsaco`` (the helper kernels) must be there too.

    report = cross_reference(Path("/opt/rocm/lib/rocblas/library"), TargetId.parse("gfx906:sramecc+:xnack-"))
    report.ok, [f.to_json() for f in report.errors]
"""
from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from rocmrevive.codeobj.bundle import MAX_CODE_OBJECT
from rocmrevive.codeobj.elf import ELF_MAGIC, read_amdgpu_elf, read_amdgpu_elf_file
from rocmrevive.codeobj.inspect import iter_elf_payloads, open_regular
from rocmrevive.codeobj.targetid import ANY, OFF, ON, TargetId
from rocmrevive.tensile.dat import (
    HELPER_PREFIX,
    Solution,
    TensileFormatError,
    code_object_name,
    is_fallback_placeholder,
    lazy_index_name,
)
from rocmrevive.tensile.logic import MAX_MASTER, TensileDat, predicate_processors, read_dat, select_rows, walk_tree

# Finding kinds. Each says what is wrong in rocBLAS's own terms; ``detail`` says it in words.
LAZY_INDEX_MISSING = "lazy-index-missing"
LAZY_INDEX_UNREADABLE = "lazy-index-unreadable"
LAZY_INDEX_OTHER_PROCESSOR = "lazy-index-other-processor"
LAZY_INDEX_EMPTY = "lazy-index-empty"
PLACEHOLDER_MISSING = "placeholder-missing"
PLACEHOLDER_UNREADABLE = "placeholder-unreadable"
PLACEHOLDER_INVALID = "placeholder-invalid"  # parses, but Tensile's deserialisers refuse it
LIBRARY_INVALID = "library-invalid"  # the same for a non-lazy TensileLibrary.dat
CODE_OBJECT_MISSING = "code-object-missing"
CODE_OBJECT_UNREADABLE = "code-object-unreadable"
CODE_OBJECT_DAMAGED = "code-object-damaged"
WRONG_TARGET = "wrong-target"
INCOMPATIBLE_FEATURES = "incompatible-features"
KERNEL_MISSING = "kernel-missing"
KERNEL_INCOMPLETE = "kernel-incomplete"
HELPER_MISSING = "helper-kernels-missing"
UNREFERENCED_CODE_OBJECT = "unreferenced-code-object"
UNREFERENCED_PLACEHOLDER = "unreferenced-placeholder"

# Kinds about a code object's target rather than the index's consistency.
TARGET_KINDS = frozenset({WRONG_TARGET, INCOMPATIBLE_FEATURES, LAZY_INDEX_OTHER_PROCESSOR})

ERROR, WARNING = "error", "warning"


@dataclass
class Finding:
    kind: str
    file: str  # a file name inside the library folder
    detail: str
    kernels: list[str] = field(default_factory=list)  # the kernels (solutions) it breaks
    severity: str = ERROR

    def to_json(self) -> dict:
        return {"kind": self.kind, "severity": self.severity, "file": self.file,
                "detail": self.detail, "kernels": list(self.kernels)}


@dataclass(frozen=True)
class ElfEntry:
    """One device ELF of a code object file: its target and what it defines."""

    target: TargetId
    co_version: int | None
    e_flags: int
    kernel_names: frozenset[str]
    kd_symbols: frozenset[str]
    problems: tuple[str, ...] = ()

    @property
    def unreadable(self) -> bool:
        # read_amdgpu_elf returns the header's facts but no sections when it cannot go deeper
        return bool(self.problems) and not self.kernel_names and not self.kd_symbols


@dataclass
class CodeObjectFile:
    """A code object file as read from disk (a raw ELF, or a bundle/CCOB of several)."""

    file: str
    container: str  # "elf" or "bundle" (offload bundle or CCOB, read through the codeobj core)
    entries: list[ElfEntry] = field(default_factory=list)
    problem: str | None = None  # why nothing could be read
    solutions: int = 0  # how many solutions need it
    helper: bool = False


@dataclass
class XrefReport:
    library: Path
    device: TargetId
    lazy_index: str
    placeholders: int = 0
    solutions: int = 0
    asm_solutions: int = 0
    source_solutions: int = 0
    kernels_found: int = 0  # solutions whose kernel is there, loadable
    code_objects: dict[str, CodeObjectFile] = field(default_factory=dict)
    on_disk: list[str] = field(default_factory=list)  # code objects for the processor on disk
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    staged: dict[str, Path] = field(default_factory=dict, repr=False)  # name → a file in its place
    names: frozenset[str] = field(default_factory=frozenset, repr=False)  # the folder's names as read
    lazy: bool = True  # False: a library built without lazy loading (one TensileLibrary.dat)
    generic_only: bool = False  # the device reaches only Tensile's generic fallback solutions

    def path(self, name: str) -> Path:
        """Where the file ``name`` of the folder is read from: a staged file in its place, or the folder's own."""
        return self.staged.get(name) or self.library / name

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def referenced(self) -> int:
        return sum(1 for c in self.code_objects.values() if c.solutions and not c.helper)

    def to_json(self) -> dict:
        return {"library": str(self.library), "device": str(self.device),
                "lazy_index": self.lazy_index, "placeholders": self.placeholders,
                "solutions": self.solutions, "asm_solutions": self.asm_solutions,
                "source_solutions": self.source_solutions, "kernels_found": self.kernels_found,
                "code_objects_referenced": self.referenced, "code_objects_on_disk": len(self.on_disk),
                "lazy": self.lazy, "generic_only": self.generic_only,
                "ok": self.ok, "seconds": round(self.seconds, 3),
                "findings": [f.to_json() for f in self.findings]}


# ------------------------------------------------------------------------------------------

def cross_reference(library: Path, device: TargetId, staged: Mapping[str, Path] | None = None) -> XrefReport:
    """Check that every kernel the lazy index (or, in a library built without lazy loading, the
    one ``TensileLibrary.dat``) can lead rocBLAS to is there and loads on ``device``; see the
    module docstring. Never raises for damaged files: they are findings. ``staged`` (file name →
    path) are files that take the place of the folder's own: the folder as it will read after an
    install, checked before a byte of it is written."""
    t0 = time.perf_counter()
    rep = XrefReport(library=library, device=device, lazy_index=lazy_index_name(device.processor),
                     staged=dict(staged or {}))
    try:
        names = set(os.listdir(library)) | set(rep.staged)
        rep.names = frozenset(names)
    except OSError as exc:
        rep.findings.append(Finding(LAZY_INDEX_MISSING, rep.lazy_index,
                                    f"cannot list the library folder: {exc.strerror or exc}"))
        return rep
    rep.on_disk = sorted(n for n in names if _is_arch_code_object(n, device))
    reader = _CodeObjectReader(rep.path)
    rep.code_objects = reader.cache
    dat_seen: set[str] | None = None
    master = master_library_name(names, device.processor)
    if master is not None and master != rep.lazy_index:
        rep.lazy, rep.lazy_index = False, master
        _follow_master(rep, names, reader)
        dat_seen = set()
    else:
        placeholders = _read_lazy_index(rep, names)
        if placeholders is not None:
            dat_seen = _follow_index(rep, placeholders, names, reader)
    _check_helper(rep, names, reader)
    if dat_seen is not None:
        _reverse(rep, names, dat_seen)
    rep.seconds = time.perf_counter() - t0
    return rep


def master_library_name(names: set[str] | frozenset[str], processor: str) -> str | None:
    """The master library rocBLAS reads for ``processor``, in its order (tensile_host.cpp):
    ``TensileLibrary_lazy_<proc>.dat``, else ``TensileLibrary_<proc>.dat``, else the
    ``TensileLibrary.dat`` of a library built for all architectures at once."""
    for name in (lazy_index_name(processor), f"TensileLibrary_{processor}.dat", "TensileLibrary.dat"):
        if name in names:
            return name
    return None


def _read_master(rep: XrefReport, name: str) -> TensileDat | None:
    """A master library as Tensile deserialises it (the whole tree, every node, every solution
    index), or None with a finding saying why rocBLAS cannot use it."""
    try:
        doc = read_dat(rep.path(name), max_size=None if rep.lazy else MAX_MASTER)
    except (TensileFormatError, OSError) as exc:
        rep.findings.append(Finding(LAZY_INDEX_UNREADABLE, name, str(exc)))
        return None
    if doc.library.get("type") != "Hardware":
        problems: tuple[str, ...] = (f"its library node is {doc.library.get('type')!r}, not 'Hardware'",)
    elif not isinstance(doc.library.get("rows"), list) or not doc.library["rows"]:
        problems = ("its Hardware node has no rows",)
    else:
        problems = walk_tree(doc.library, doc.indices).problems
    if problems:
        rep.findings.append(Finding(LAZY_INDEX_UNREADABLE, name,
                                    "not a master library rocBLAS can read: " + "; ".join(problems[:3])))
        return None
    return doc


def _rows_for_device(rep: XrefReport, doc: TensileDat) -> list[dict] | None:
    """The Hardware rows the device reaches; None (after a finding) when it reaches none."""
    proc = rep.device.processor
    rows, generic = select_rows(doc.library, proc)
    if not rows:
        named = sorted({p for r in doc.library.get("rows") or [] if isinstance(r, dict)
                        for p in predicate_processors(r.get("predicate"))})
        rep.findings.append(Finding(
            LAZY_INDEX_OTHER_PROCESSOR, rep.lazy_index,
            f"the library selects processor {', '.join(named) or 'none'}, not {proc}: "
            "rocBLAS finds no solution for this GPU"))
        return None
    if not rep.lazy:  # a lazy index's rows lead to placeholders, which say it themselves
        rep.generic_only = generic
    return rows


def _read_lazy_index(rep: XrefReport, names: set[str]) -> list[str] | None:
    """The placeholders the device's lazy index leads to, or None with a finding saying why
    rocBLAS cannot use it."""
    proc, lazy_name = rep.device.processor, rep.lazy_index
    if lazy_name not in names:
        detail = (f"no lazy index for {proc}: rocBLAS finds no Tensile library for this GPU "
                  f"(it then fails with 'Cannot read …/TensileLibrary.dat … for GPU arch : {proc}')")
        if proc in names or any(n.endswith(".kpack") for n in names):
            # ROCm 7.13+ (TheRock) keeps per-arch subfolders and .kpack archives (docs/architecture.md, "Every copy of rocBLAS")
            detail += "; this folder uses the per-arch/.kpack layout, which rocmrevive does not read yet"
        rep.findings.append(Finding(LAZY_INDEX_MISSING, lazy_name, detail))
        return None
    doc = _read_master(rep, lazy_name)
    rows = _rows_for_device(rep, doc) if doc is not None else None
    if rows is None:
        return None
    placeholders = list(dict.fromkeys(p for r in rows for p in walk_tree(r["library"]).placeholders))
    if placeholders and all(is_fallback_placeholder(p) for p in placeholders):
        rep.generic_only = True
    return placeholders


def _follow_index(rep: XrefReport, placeholders: list[str], names: set[str],
                  reader: "_CodeObjectReader") -> set[str]:
    """Every solution the index leads to, checked in the code object it needs; returns the
    placeholder files reached (for the reverse check)."""
    proc, lazy_name = rep.device.processor, rep.lazy_index
    rep.placeholders = len(placeholders)
    needs, dat_seen = _solutions_by_code_object(rep, placeholders, names)
    if not placeholders:
        rep.findings.append(Finding(LAZY_INDEX_EMPTY, lazy_name,
                                    "the index names no placeholder library: rocBLAS finds no "
                                    f"Tensile kernel for {proc} (every GEMM fails)"))
    elif not needs and not any(f.kind in (PLACEHOLDER_MISSING, PLACEHOLDER_UNREADABLE, PLACEHOLDER_INVALID)
                               for f in rep.findings):
        rep.findings.append(Finding(LAZY_INDEX_EMPTY, lazy_name,
                                    f"its {len(placeholders)} placeholder(s) hold no solution, so "
                                    f"no code object is reached: rocBLAS finds no Tensile kernel for {proc}"))
    for co_name, sols in needs.items():
        _check_kernels(rep, reader, names, co_name, sols)
    return dat_seen


def _count(rep: XrefReport, s: Solution) -> None:
    rep.solutions += 1
    if s.source_kernel:
        rep.source_solutions += 1
    else:
        rep.asm_solutions += 1


def _solutions_by_code_object(rep: XrefReport, placeholders: list[str],
                              names: set[str]) -> tuple[dict[str, list[Solution]], set[str]]:
    """Lazy index -> placeholders -> the code object file each solution needs. A placeholder
    Tensile's deserialisers refuse (an unknown node, a solution index not in its list) is a
    finding: ``PlaceholderLibrary`` goes on with the failed load and every problem of its type fails."""
    proc = rep.device.processor
    needs: dict[str, list[Solution]] = {}
    dat_seen: set[str] = set()
    for ph in placeholders:
        dat = ph + ".dat"
        dat_seen.add(dat)
        if dat not in names:
            rep.findings.append(Finding(
                PLACEHOLDER_MISSING, dat,
                f"named by {rep.lazy_index} but not in the folder: every problem of this type fails"))
            continue
        try:
            doc = read_dat(rep.path(dat))
        except (TensileFormatError, OSError) as exc:
            rep.findings.append(Finding(PLACEHOLDER_UNREADABLE, dat, str(exc)))
            continue
        problems = walk_tree(doc.library, doc.indices).problems
        if problems:
            rep.findings.append(Finding(PLACEHOLDER_INVALID, dat, "Tensile cannot load it: " + "; ".join(problems[:3])))
            continue
        for s in doc.solutions:
            _count(rep, s)
            needs.setdefault(code_object_name(ph, s.source_kernel, proc), []).append(s)
    return needs, dat_seen


def _follow_master(rep: XrefReport, names: set[str], reader: "_CodeObjectReader") -> None:
    """A library built without lazy loading: one master library holds every solution, and
    rocBLAS loads every code object whose name matches ``*<proc>*co`` (not those of the other
    xnack mode, not ``Experimental`` ones) before the first GEMM; a kernel is found in any of them."""
    doc = _read_master(rep, rep.lazy_index)
    rows = _rows_for_device(rep, doc) if doc is not None else None
    if doc is None or rows is None:
        return
    by_index = {s.index: s for s in doc.solutions}
    reached = sorted({i for r in rows for i in walk_tree(r["library"]).indices})
    sols = [by_index[i] for i in reached if i in by_index]
    for s in sols:
        _count(rep, s)
    loaded = [n for n in sorted(names) if _loaded_eagerly(n, rep.device)]
    if not sols:
        rep.findings.append(Finding(LAZY_INDEX_EMPTY, rep.lazy_index,
                                    f"no solution for {rep.device.processor}: every GEMM fails"))
        return
    if not loaded:
        rep.findings.append(Finding(
            CODE_OBJECT_MISSING, f"TensileLibrary_{rep.device.processor}.co",
            f"no code object matching *{rep.device.processor}*co: the {len(sols)} solutions have no kernels"))
        return
    _check_pooled_kernels(rep, reader, loaded, sols)


def _check_kernels(rep: XrefReport, reader: "_CodeObjectReader", names: set[str], co_name: str,
                   sols: list[Solution]) -> None:
    """Code object -> kernels: each as a ``.kd`` descriptor and a metadata entry of an ELF that
    loads on the device."""
    uses = Counter(s.name for s in sols)  # a kernel may serve several solutions
    kernels = list(uses)
    found_name = _find_variant(co_name, names, rep.device)
    if found_name is None:
        rep.findings.append(Finding(
            CODE_OBJECT_MISSING, co_name,
            f"needed by {len(kernels)} kernel(s) but not in the folder "
            "(rocBLAS: 'kernel not found in any loaded module')", kernels))
        return
    co = reader.read(found_name)
    co.solutions += len(sols)
    usable = _usable_entries(rep, co, kernels)
    if usable is None:
        return
    names_defined = frozenset().union(*(e.kernel_names for e in usable))
    kds_defined = frozenset().union(*(e.kd_symbols for e in usable))
    missing, incomplete = [], []
    for k in kernels:
        in_meta, in_kd = k in names_defined, k in kds_defined
        if in_meta and in_kd:
            rep.kernels_found += uses[k]
        elif in_meta or in_kd:
            incomplete.append(k + (" (no .kd descriptor)" if in_meta else " (no metadata entry)"))
        else:
            missing.append(k)
    if missing:
        rep.findings.append(Finding(
            KERNEL_MISSING, found_name,
            f"{len(missing)} of {len(kernels)} kernel(s) the .dat names are not in this code object",
            missing))
    if incomplete:
        rep.findings.append(Finding(
            KERNEL_INCOMPLETE, found_name,
            f"{len(incomplete)} kernel(s) have only half of what the loader needs", incomplete))


def _loaded_eagerly(name: str, device: TargetId) -> bool:
    """rocBLAS's glob ``*<proc>*co`` without lazy loading, less the other xnack mode's files and
    ``Experimental`` ones (tensile_host.cpp)."""
    if device.processor not in name or not name.endswith("co") or "Experimental" in name:
        return False
    other = {ON: "xnack-", OFF: "xnack+"}.get(device.xnack or "")
    return other is None or other not in name


def _check_pooled_kernels(rep: XrefReport, reader: "_CodeObjectReader", loaded: list[str],
                          sols: list[Solution]) -> None:
    """Each solution's kernel in any of the eagerly loaded code objects (a ``.kd`` descriptor and
    a metadata entry); a missing one is charged to the file its kind of kernel lives in."""
    meta: set[str] = set()
    kds: set[str] = set()
    for name in loaded:
        co = reader.read(name)
        for e in _usable_entries(rep, co, []) or []:
            meta |= e.kernel_names
            kds |= e.kd_symbols
    proc = rep.device.processor
    asm_file = next((n for n in loaded if n.startswith("TensileLibrary")), f"TensileLibrary_{proc}.co")
    src_file = next((n for n in loaded if n.startswith(HELPER_PREFIX)), f"{HELPER_PREFIX}{proc}.hsaco")
    missing: dict[str, list[str]] = {}
    for s in sols:
        home = src_file if s.source_kernel else asm_file
        if home in reader.cache:
            reader.cache[home].solutions += 1
        if s.name in meta and s.name in kds:
            rep.kernels_found += 1
        else:
            missing.setdefault(home, []).append(s.name)
    for home, kernels in missing.items():
        kernels = list(dict.fromkeys(kernels))
        if home not in loaded:
            rep.findings.append(Finding(CODE_OBJECT_MISSING, home, f"needed by {len(kernels)} kernel(s) but "
                                        "not in the folder (rocBLAS: 'kernel not found in any loaded module')", kernels))
            continue
        rep.findings.append(Finding(
            KERNEL_MISSING, home, f"{len(kernels)} kernel(s) {rep.lazy_index} names for {rep.device.processor} "
            f"are in no loaded code object ({', '.join(loaded)})", kernels))

def _reverse(rep: XrefReport, names: set[str], dat_seen: set[str]) -> None:
    """What is on disk for the processor that nothing references (warnings: never loaded)."""
    for name in rep.on_disk:
        if name not in rep.code_objects:
            rep.findings.append(Finding(
                UNREFERENCED_CODE_OBJECT, name,
                f"no solution reachable from {rep.lazy_index} loads it (left over, or its .dat is missing)",
                severity=WARNING))
    suffix = f"_{rep.device.processor}.dat"
    for name in sorted(names):
        if (name.startswith("TensileLibrary_") and name.endswith(suffix) and name != rep.lazy_index
                and name not in dat_seen):
            rep.findings.append(Finding(UNREFERENCED_PLACEHOLDER, name,
                                        f"not named by {rep.lazy_index}: never loaded", severity=WARNING))


def _usable_entries(rep: XrefReport, co: CodeObjectFile, kernels: list[str]) -> list[ElfEntry] | None:
    """The device ELFs of ``co`` that load on the device; None (after adding a finding) when
    none does or the file cannot be read."""
    if co.problem is not None:
        rep.findings.append(Finding(CODE_OBJECT_UNREADABLE, co.file, co.problem, kernels))
        return None
    for e in co.entries:
        if e.problems and not e.unreadable:
            rep.findings.append(Finding(CODE_OBJECT_DAMAGED, co.file, "; ".join(e.problems)))
    readable = [e for e in co.entries if not e.unreadable]
    if not readable:
        why = "; ".join(p for e in co.entries for p in e.problems) or "no device code object inside"
        rep.findings.append(Finding(CODE_OBJECT_UNREADABLE, co.file, why, kernels))
        return None
    usable = [e for e in readable if e.target.can_load_on(rep.device)]
    if usable:
        return usable
    targets = ", ".join(sorted({str(e.target) for e in readable}))
    if any(e.target.covers_processor(rep.device.processor) for e in readable):
        rep.findings.append(Finding(
            INCOMPATIBLE_FEATURES, co.file,
            f"built for {targets}, which does not load on {_device_words(rep.device)}", kernels))
    else:
        rep.findings.append(Finding(
            WRONG_TARGET, co.file,
            f"built for {targets}, not {rep.device.processor}: the loader refuses it", kernels))
    return None


def _check_helper(rep: XrefReport, names: set[str], reader: "_CodeObjectReader") -> None:
    proc = rep.device.processor
    wanted = f"{HELPER_PREFIX}{proc}.hsaco"
    found = _find_variant(wanted, names, rep.device)
    if found is None:
        rep.findings.append(Finding(
            HELPER_MISSING, wanted,
            "the helper kernels (beta-only, split-K reduction, conversions) are missing: "
            "GEMMs that need them fail"))
        return
    co = reader.read(found)
    co.helper = True
    _usable_entries(rep, co, [])


def _device_words(device: TargetId) -> str:
    feats = [f"{n} {v}" for n, v in (("sramecc", device.sramecc), ("xnack", device.xnack))
             if v in (ON, OFF)]
    unknown = [n for n, v in (("sramecc", device.sramecc), ("xnack", device.xnack)) if v == ANY]
    out = f"a {device.processor} device"
    if feats:
        out += " with " + " and ".join(feats)
    if unknown:
        out += f" ({' and '.join(unknown)} mode unknown: pass the full target, e.g. {device.processor}:sramecc+:xnack-)"
    return out


def _feature_suffixes(device: TargetId) -> list[str]:
    """File-name spellings of the device's modes: rocBLAS names per-mode code objects with a
    dash (``…_gfx90a-xnack+.hsaco``, docs/formats.md §5.1)."""
    parts = []
    if device.sramecc in (ON, OFF):
        parts.append("sramecc" + ("+" if device.sramecc == ON else "-"))
    if device.xnack in (ON, OFF):
        parts.append("xnack" + ("+" if device.xnack == ON else "-"))
    out = []
    if len(parts) == 2:
        out.append("-" + "-".join(parts))
    out.extend("-" + p for p in parts)
    return out


def _find_variant(name: str, names: set[str], device: TargetId) -> str | None:
    if name in names:
        return name
    if name.endswith(".hsaco"):
        stem = name[:-len(".hsaco")]
        for suffix in _feature_suffixes(device):
            if stem + suffix + ".hsaco" in names:
                return stem + suffix + ".hsaco"
    return None


def _is_arch_code_object(name: str, device: TargetId) -> bool:
    """A Tensile code object file for the device's processor (in the device's mode, if the
    file name carries one)."""
    proc = device.processor
    if not name.startswith("TensileLibrary_"):
        return False
    if name.endswith(f"_{proc}.co") or name.endswith(f"_{proc}.hsaco"):
        return True
    if name.endswith(".hsaco") and f"_{proc}-" in name:
        return any(name.endswith(f"_{proc}{s}.hsaco") for s in _feature_suffixes(device))
    return False


class _CodeObjectReader:
    """Reads each code object file once (through the code-object core); ``path(name)`` says where."""

    def __init__(self, path: Callable[[str], Path]):
        self.path = path
        self.cache: dict[str, CodeObjectFile] = {}

    def read(self, name: str) -> CodeObjectFile:
        if name in self.cache:
            return self.cache[name]
        co = read_code_object_file(self.path(name))
        self.cache[name] = co
        return co


def read_code_object_file(path: Path) -> CodeObjectFile:
    """Every device ELF in ``path`` with its target, kernels and descriptors. A raw ELF is
    read directly; bundles and CCOB go through ``codeobj.inspect.iter_elf_payloads``."""

    name = path.name
    try:
        with open_regular(path) as fh:  # never a FIFO or a device
            if fh.read(4) == ELF_MAGIC:
                co = CodeObjectFile(name, "elf")
                size = os.fstat(fh.fileno()).st_size
                if size > MAX_CODE_OBJECT:
                    co.problem = f"more than the {MAX_CODE_OBJECT >> 20} MiB a code object may have"
                    return co
                try:  # only the header, section table, notes and symbols are read
                    co.entries.append(_entry(read_amdgpu_elf_file(fh.fileno(), size)))
                except ValueError as exc:
                    co.problem = str(exc)
                return co
    except OSError as exc:
        return CodeObjectFile(name, "unknown", problem=f"cannot read: {exc.strerror or exc}")
    co = CodeObjectFile(name, "bundle")
    bad: list[str] = []
    try:
        for _obj, payload in iter_elf_payloads(path):
            try:
                co.entries.append(_entry(read_amdgpu_elf(payload)))
            except ValueError as exc:
                bad.append(str(exc))
            del payload  # streamed: hold one code object at a time
    except Exception as exc:  # noqa: BLE001 - BundleError, OSError, ...: hostile bytes never become a traceback
        co.problem = f"cannot unpack: {exc}"
        return co
    if not co.entries:
        co.problem = "; ".join(bad) or "not a code object (no device ELF inside)"
    return co


def _entry(elf) -> ElfEntry:
    return ElfEntry(target=elf.target, co_version=elf.co_version, e_flags=elf.e_flags,
                    kernel_names=frozenset(elf.kernel_names), kd_symbols=frozenset(elf.kd_symbols),
                    problems=tuple(elf.problems))
