"""Which libraries carry device code for which GPU targets: a matrix read from every library's
``.hip_fatbin`` by structure (headers only, through ``codeobj.inspect``), with what each missing
cell breaks and what to do about it.

    report = audit_files(library_files([Path("/opt/rocm/lib")]), [TargetId.parse("gfx906")])
    [(r.name, r.cells["gfx906"].status) for r in report.rows]

Cell statuses: ``embedded`` (code that loads on the target), ``other-mode`` (code for the
processor, but only for an xnack/sramecc mode the device is not in), ``missing``,
``not-a-gpu-library`` (no device code at all) and ``unreadable``.

The remedy column: for a missing cell of a host library, ``graft_for(path, target)`` (the
caller's, from rocmrevive's manifests) says whether a manifest source exists and whether it
passes the static ABI check on this machine (``graft`` in the cell's JSON; docs/grafts.md).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from rocmrevive.codeobj.inspect import inspect_file
from rocmrevive.codeobj.kpack import file_report
from rocmrevive.codeobj.kpackref import host_report
from rocmrevive.codeobj.targetid import LoadVerdict, TargetId
from rocmrevive.diagnose.libraries import (
    GENERIC_BREAKS,
    GENERIC_WORKAROUND,
    ROCBLAS_TENSILE,
    KnownLibrary,
    library_for_file,
)
from rocmrevive.strenum import StrEnum
from rocmrevive.tensile.dat import arch_of_lazy_index, lazy_index_name
from rocmrevive.tensile.folders import tensile_folder
from rocmrevive.trees.installs import find_installs
from rocmrevive.trees.layout import kpack_files, lib_dirs, library_files, rocblas_library_dirs, system_library_dirs
from rocmrevive.trees.select import given_trees

# (library key, processor) -> what rocmrevive can do about a missing cell, or None
RemedyFor = Callable[[str, str], "str | None"]
# (real path of a host library, target) -> a manifest graft for it, or None:
# {"manifest", "soname", "source", "abi": a GraftAbi, "lines", "summary"}
GraftFor = Callable[[Path, TargetId], "dict | None"]


class GraftAbi(StrEnum):
    """Whether a manifest's source for a missing cell would load here (a graft's ``abi``)."""

    LOADS = "loads"               # it passes the ABI check on this machine
    REFUSED = "refused"           # it does not load here (``lines`` say why)
    NOT_FETCHED = "not-fetched"   # not in the cache yet: not checked
    NO_SOURCE = "no-source"       # the manifest has no source for this ROCm version
    UNKNOWN = "unknown"           # the check itself failed (a damaged cache): ``lines``



class CellStatus(StrEnum):
    """One library × target cell of the audit (its JSON ``status``)."""

    EMBEDDED = "embedded"           # code that loads on the target
    OTHER_MODE = "other-mode"       # code for the processor, only in a mode the target does not run
    MISSING = "missing"             # no code for the processor
    NOT_GPU = "not-a-gpu-library"   # no device code in the file
    UNREADABLE = "unreadable"


@dataclass
class Cell:
    target: str
    status: CellStatus
    detail: str = ""
    breaks: str = ""   # for missing / other-mode: what fails, in plain words
    remedy: str = ""   # and what to do
    graft: dict | None = None  # a manifest source for it, and whether it passes the ABI check here

    def to_json(self) -> dict:
        out: dict[str, Any] = {"target": self.target, "status": self.status, "detail": self.detail}
        if self.breaks or self.remedy:
            out["breaks"], out["remedy"] = self.breaks, self.remedy
        if self.graft is not None:
            out["graft"] = self.graft
        return out


@dataclass
class LibraryRow:
    path: str                   # as the caller wants it shown (a machine path)
    library: str | None         # known library key, None for one rocmrevive does not know
    name: str                   # "rocBLAS", or the file name of an unknown library
    kind: str                   # inspect_file's kind
    processors: list[str] = field(default_factory=list)  # everything it embeds
    cells: dict[str, Cell] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def is_gpu_library(self) -> bool:
        return bool(self.processors) or self.kind in ("host-elf", "host-elf-kpack", "tensile-library")

    def to_json(self) -> dict:
        return {"path": self.path, "library": self.library, "name": self.name, "kind": self.kind,
                "processors": self.processors, "problems": self.problems,
                "cells": {t: c.to_json() for t, c in self.cells.items()}}


@dataclass
class AuditReport:
    targets: list[TargetId]
    rows: list[LibraryRow] = field(default_factory=list)
    skipped: int = 0  # libraries without device code that rocmrevive does not know (not shown)
    seconds: float = 0.0

    def missing(self) -> list[tuple[LibraryRow, Cell]]:
        return [(r, c) for r in self.rows for c in r.cells.values() if c.status in (CellStatus.MISSING, CellStatus.OTHER_MODE)]

    def to_json(self) -> dict:
        return {"targets": [str(t) for t in self.targets],
                "libraries": [r.to_json() for r in self.rows],
                "missing": [{"path": r.path, "name": r.name, **c.to_json()} for r, c in self.missing()],
                "skipped_non_gpu_libraries": self.skipped, "seconds": round(self.seconds, 3)}


# ------------------------------------------------------------------------------------------

KPACK = KnownLibrary(
    "therock-kpack", "TheRock kernel archive", r"^.*\.kpack$", True,
    "the libraries whose device code this archive holds (its TOC's binaries) fail on the card with "
    "'no kernel image' / hipErrorInvalidDeviceFunction",
    "TheRock's device package for the card, of the tree's release; for gfx906 AMD publishes none in a stable "
    "release: `rocmrevive recipe --tree <the tree>` "
    "lists the choices (a whole gfx906 stack, AMD's nightly build as a tree of its own, a local build); "
    "rocmrevive does not copy device code into .kpack trees")


def audit_files(files: Iterable[Path], targets: list[TargetId], *,
                tensile_dirs: Iterable[Path] = (), kpacks: Iterable[Path] = (),
                remedy_for: RemedyFor | None = None,
                graft_for: GraftFor | None = None,
                show: Callable[[Path], str] = str,
                progress: Callable[[int], None] | None = None) -> AuditReport:
    """The matrix for ``files`` (and the rocBLAS Tensile folders ``tensile_dirs``) × ``targets``.

    ``remedy_for(library key, processor)`` says what rocmrevive can do about a missing cell
    (from its source manifests); it comes before the library's generic workaround.
    ``graft_for(path, target)`` says whether a manifest grafts a build with the target into that
    library and whether it passes the ABI check here (the remedy column). ``show``
    turns a real path into what the report shows (the machine path under ``--root``)."""
    t0 = time.perf_counter()
    rep = AuditReport(targets=list(targets))

    for path in files:
        fr = host_report(path, inspect_file(path))
        if progress:
            progress(1)
        known = library_for_file(path.name)
        row = LibraryRow(path=show(path), library=known.key if known else None,
                         name=known.name if known else path.name, kind=fr.kind,
                         processors=fr.processors, problems=list(fr.problems))
        if fr.kind in ("host-elf-no-device-code", "not-code-object", "empty") and known is None:
            rep.skipped += 1
            continue
        for t in targets:
            cell = row.cells[str(t)] = _cell(fr, t, known, remedy_for)
            if graft_for is not None and cell.status in (CellStatus.MISSING, CellStatus.OTHER_MODE):
                cell.graft = graft_for(path, t)
                if cell.graft is not None:
                    cell.remedy = graft_remedy_text(cell.graft, cell.remedy)
        rep.rows.append(row)
    for d in tensile_dirs:
        rep.rows.append(tensile_row(d, targets, remedy_for=remedy_for, show=show))
    for k in kpacks:
        rep.rows.append(kpack_row(k, targets, show=show))
    rep.rows.sort(key=lambda r: (not r.is_gpu_library, r.name.lower(), r.path))
    rep.seconds = time.perf_counter() - t0
    return rep


def kpack_row(path: Path, targets: list[TargetId], *, show: Callable[[Path], str] = str) -> LibraryRow:
    """A TheRock ``.kpack`` archive as one row: the targets its code objects (or its TOC) name."""
    fr = file_report(path)
    row = LibraryRow(path=show(path), library=KPACK.key, name=f"{KPACK.name} {path.name}", kind="kpack",
                     processors=fr.processors, problems=list(fr.problems))
    for t in targets:
        row.cells[str(t)] = _cell(fr, t, KPACK, None)
    return row


def _remedy(known: KnownLibrary | None, processor: str, remedy_for: RemedyFor | None) -> str:
    ours = remedy_for(known.key, processor) if (known and remedy_for) else None
    return ours or (known.workaround_for(processor) if known and known.workaround else GENERIC_WORKAROUND)


def graft_remedy_text(graft: dict, workaround: str) -> str:
    """The remedy column for a cell a manifest source could fill: the install command when the
    source passes the ABI check here, why not when it does not (then the workaround)."""
    src = graft.get("source") or graft["manifest"]
    abi = graft["abi"]
    if abi == GraftAbi.LOADS:
        return (f"sudo rocmrevive install (grafts {src}, manifest {graft['manifest']}: it passes the ABI "
                f"check on this machine), then rocmrevive audit")
    if abi == GraftAbi.REFUSED:
        lines = graft.get("lines") or ["?"]
        more = f" (+{len(lines) - 1} more)" if len(lines) > 1 else ""
        return (f"rocmrevive's source {src} ({graft['manifest']}) does not load here: {lines[0]}{more}; "
                f"meanwhile: {workaround}")
    if abi == GraftAbi.NOT_FETCHED:
        return (f"rocmrevive has a source: {src} ({graft['manifest']}); `sudo rocmrevive install --check` "
                f"fetches it and checks it against this machine (ABI not checked yet); or: {workaround}")
    return f"{'; '.join(graft.get('lines') or [])}; {workaround}"


def tensile_row(library: Path, targets: list[TargetId], *, remedy_for: RemedyFor | None = None,
                show: Callable[[Path], str] = str) -> LibraryRow:
    """rocBLAS's Tensile folder as one row: a target is there when its lazy index is (the full
    cross-reference is ``rocmrevive verify``'s job)."""
    try:
        names = set(os.listdir(library))
    except OSError as exc:
        names = set()
        problem = [f"cannot list: {exc.strerror or exc}"]
    else:
        problem = []
    names |= {lazy_index_name(d) for d in names if d.startswith("gfx")   # TheRock's per-arch folders
              and (tensile_folder(library, d) / lazy_index_name(d)).is_file()}
    arches = sorted({a for a in map(arch_of_lazy_index, names) if a})
    row = LibraryRow(path=show(library), library=ROCBLAS_TENSILE.key, name=ROCBLAS_TENSILE.name,
                     kind="tensile-library", processors=arches, problems=problem)
    for t in targets:
        lazy = lazy_index_name(t.processor)
        if problem:
            row.cells[str(t)] = Cell(str(t), CellStatus.UNREADABLE, problem[0])
        elif lazy in names:
            row.cells[str(t)] = Cell(str(t), CellStatus.EMBEDDED, f"{lazy} (rocmrevive verify checks every kernel)")
        else:
            row.cells[str(t)] = Cell(str(t), CellStatus.MISSING, f"no {lazy} (has {', '.join(arches) or 'none'})",
                                     ROCBLAS_TENSILE.breaks,
                                     _remedy(ROCBLAS_TENSILE, t.processor, remedy_for))
    return row


def _cell(fr, target: TargetId, known: KnownLibrary | None, remedy_for: RemedyFor | None) -> Cell:
    t = str(target)
    if fr.kind == "unreadable" or (fr.problems and not fr.entries):
        return Cell(t, CellStatus.UNREADABLE, "; ".join(fr.problems) or "cannot read the file")
    if not fr.entries:
        return Cell(t, CellStatus.NOT_GPU, "no device code in this file")
    covering = [e for e in fr.entries if e.target.covers_processor(target.processor)]
    breaks = (known.breaks if known and known.breaks else GENERIC_BREAKS)
    remedy = _remedy(known, target.processor, remedy_for)
    if not covering:
        have = ", ".join(sorted({e.target.processor for e in fr.entries}))
        return Cell(t, CellStatus.MISSING, f"no code for {target.processor} (embeds {have})", breaks, remedy)
    loadable, conditional = [], []
    for e in covering:
        verdict = e.target.load_verdict(target)
        if verdict is LoadVerdict.LOADS:
            loadable.append(e)
        elif verdict is LoadVerdict.IF_MODE:
            conditional.append(e)
    versions = sorted({e.co_version for e in covering if e.co_version is not None})
    cov = f" (code object v{'/'.join(map(str, versions))})" if versions else ""
    if loadable:
        names = sorted({str(e.target) for e in loadable})
        return Cell(t, CellStatus.EMBEDDED, ", ".join(names) + cov)
    names = sorted({str(e.target) for e in covering})
    if conditional:
        return Cell(t, CellStatus.EMBEDDED, f"{', '.join(names)} only: loads if the device runs in that mode" + cov)
    return Cell(t, CellStatus.OTHER_MODE, f"only {', '.join(names)}, which does not load on {t}", breaks, remedy)


def audit_inputs(root, trees: tuple[str, ...] | list[str]) -> tuple[list, list, list, list[str]]:
    """What an audit reads: the shared libraries, rocBLAS library folders and .kpack archives of
    each ``--tree`` (a file, or a folder), or without one of every system library folder and ROCm
    install; and the trees as the machine names them (``files, tensile_dirs, kpacks, shown``)."""
    files: list = []
    tensile: list = []
    kpacks: list = []
    shown: list[str] = []
    if trees:
        for t in given_trees(root, trees, files=True):
            if t.real.is_dir():
                found = rocblas_library_dirs(t.real)
                dirs = lib_dirs(t.real)
                files += library_files([d for d in dirs if d not in found])
                files += library_files([d for d in dirs if d in found], by_content=False)
                tensile += found
                kpacks += kpack_files(t.real)
            else:
                files.append(t.real)
            shown.append(t.path)
        return files, tensile, kpacks, shown
    dirs = system_library_dirs(root)
    files += library_files(dirs)
    for inst in find_installs(root)[0]:
        kpacks += kpack_files(root.path(inst.path))
    for d in dirs:
        tensile += rocblas_library_dirs(d)
    shown += [root.machine_path(d) for d in dirs]
    return files, tensile, kpacks, shown
