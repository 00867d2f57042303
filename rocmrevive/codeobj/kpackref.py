"""Where a host library's device code is: its own ``.hip_fatbin``, or, for a library TheRock's
kpack split left (ROCm 7.13+), the ``.kpack`` archives its ``.rocm_kpack_ref`` marker names.

The split (rocm-kpack's kpack_transform.py, TheRock RFC0008) zero-pages ``.hip_fatbin``, rewrites
each ``__CudaFatBinaryWrapper`` magic to ``HIPK`` and adds a ``.rocm_kpack_ref`` section: MessagePack
``{kpack_search_paths: ["../.kpack/blas_lib.kpm"], kernel_name: "lib/librocblas.so.5"}``. The
archives of that component lie beside the ``.kpm`` manifest (``blas_lib_<arch>.kpack``); their TOC
is keyed by the kernel name. The ``.kpm`` itself is not read (its format is not public).

    dc = device_code(Path("/opt/rocm/core-10.1/lib/librocsolver.so.0"))
    dc.source, dc.processors, [a.name for a in dc.archives]
    report = host_report(path, inspect_file(path))   # inspect's report, with the archives' code objects
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import msgpack

from rocmrevive.codeobj.elf import parse_header, section_table
from rocmrevive.codeobj.inspect import CodeObject, FileReport, inspect_file
from rocmrevive.codeobj.kpack import file_report
from rocmrevive.errors import RevError
from rocmrevive.fs import open_regular

_MARKER = b".rocm_kpack_ref"
MARKER_MAX = 64 << 10      # a marker is a few hundred bytes; more is not read


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


@dataclass
class DeviceCode:
    host: Path
    source: str                                    # "fat-binary" | "kpack" | "none"
    entries: list[CodeObject] = field(default_factory=list)
    archives: list[Path] = field(default_factory=list)
    kernel_name: str | None = None
    problems: list[str] = field(default_factory=list)
    found_in: dict[int, Path] = field(default_factory=dict)   # id(entry) -> the archive it is in

    @property
    def processors(self) -> list[str]:
        return sorted({e.target.processor for e in self.entries})

    def covering(self, processor: str) -> list[CodeObject]:
        return [e for e in self.entries if e.target.covers_processor(processor)]


def kpack_marker(path: str | os.PathLike) -> tuple[dict | None, str | None]:
    """The ``.rocm_kpack_ref`` marker of a host library: (marker, None), (None, None) when it has
    none, (None, problem) when it cannot be read. Opened without following a link at its name,
    sections found through the section table, the marker size-capped and decoded within limits."""


    try:
        fd = open_regular(path)
    except (RevError, OSError) as exc:
        return None, exc.message if isinstance(exc, RevError) else f"cannot read: {exc.strerror or exc}"
    try:
        size = os.fstat(fd).st_size
        hdr = parse_header(os.pread(fd, 64, 0))
        if hdr is None or hdr.ei_class != 2 or hdr.ei_data != 1:
            return None, None

        def read(n: int, at: int) -> bytes:
            return os.pread(fd, n, at)
        try:
            table = section_table(hdr, read, size)
        except ValueError as exc:
            return None, f"section table: {exc}"
        shdrs = [table[i:i + 64] for i in range(0, len(table), 64)]
        if not shdrs or hdr.e_shstrndx >= len(shdrs):
            return None, None
        names_off, names_len = _span(shdrs[hdr.e_shstrndx])
        if names_off + names_len > size or names_len > (1 << 20):
            return None, "section name table lies past the end of the file"
        names = os.pread(fd, names_len, names_off)
        for sh in shdrs:
            at = int.from_bytes(sh[0:4], "little")
            if names[at:at + len(_MARKER) + 1] != _MARKER + b"\0":
                continue
            off, length = _span(sh)
            if length > MARKER_MAX or off + length > size:
                return None, f".rocm_kpack_ref of {length} bytes at {off} does not fit (at most {MARKER_MAX})"
            try:
                doc = msgpack.unpackb(os.pread(fd, length, off), raw=False, max_str_len=4096,
                                      max_array_len=64, max_map_len=64, max_bin_len=0, max_ext_len=0)
            except Exception as exc:  # noqa: BLE001 - any decoding failure is a problem line
                return None, f".rocm_kpack_ref is not MessagePack ({type(exc).__name__})"
            paths = doc.get("kpack_search_paths") if isinstance(doc, dict) else None
            name = doc.get("kernel_name") if isinstance(doc, dict) else None
            if not isinstance(name, str) or not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                return None, ".rocm_kpack_ref lacks kpack_search_paths (a list) or kernel_name (a string)"
            return {"kpack_search_paths": paths, "kernel_name": name}, None
        return None, None
    finally:
        os.close(fd)


def _span(shdr: bytes) -> tuple[int, int]:
    return int.from_bytes(shdr[24:32], "little"), int.from_bytes(shdr[32:40], "little")


_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}$")


def marker_archives(host: Path, marker: dict) -> tuple[list[Path], list[str]]:
    """The archives a marker leads to, and problems: for each search path (``../.kpack/blas_lib.kpm``,
    relative to the library's folder), the component's ``<component>_<arch>.kpack`` beside it. The
    marker is the library's content (a user's, in a venv): a path is followed only to a real
    ``.kpack`` folder (not a link) in the library's own folder or one above it."""
    out: list[Path] = []
    problems: list[str] = []
    for sp in marker["kpack_search_paths"]:
        folder = Path(os.path.normpath(os.path.join(host.parent, os.path.dirname(sp))))
        component = os.path.basename(sp)
        component = component[:-4] if component.endswith(".kpm") else component
        if (os.path.isabs(sp) or folder.name != ".kpack" or not _COMPONENT.match(component)
                or not (folder.parent == host.parent or folder.parent in host.parent.parents)):
            problems.append(f"its .rocm_kpack_ref names {sp[:200]!r}, not a .kpack folder at or above it: not followed")
            continue
        if folder.is_symlink():
            problems.append(f"{folder} is a symbolic link: not followed")
            continue
        for n in _names(folder):
            p = folder / n
            if n.startswith(component + "_") and n.endswith(".kpack") and p not in out:
                out.append(p)
    return out, problems


def device_code(host: Path, report: FileReport | None = None) -> DeviceCode:
    """Where ``host``'s device code is and which code objects it holds (``report``: its
    ``inspect_file`` when the caller has it)."""

    rep = report if report is not None else inspect_file(host)
    marker, problem = kpack_marker(host)
    if marker is None:
        dc = DeviceCode(host, "fat-binary" if rep.entries else "none", list(rep.entries), problems=list(rep.problems))
        if problem:
            dc.problems.append(problem)
        return dc
    archives, problems = marker_archives(host, marker)
    dc = DeviceCode(host, "kpack", kernel_name=marker["kernel_name"], archives=archives, problems=problems)
    dc.entries += rep.entries  # a split library keeps nothing in .hip_fatbin; anything left counts
    for a in dc.archives:
        fr = file_report(a)
        for e in fr.entries:
            if (e.entry_id or "").rsplit("@", 1)[0] == dc.kernel_name:
                dc.entries.append(e)
                dc.found_in[id(e)] = a
        dc.problems += [f"{a.name}: {p}" for p in fr.problems[:3]]
    if not dc.archives and not problems:
        dc.problems.append(f"its .rocm_kpack_ref names {', '.join(marker['kpack_search_paths'])[:300]}: no such archive")
    return dc


def host_report(host: Path, report: FileReport) -> FileReport:
    """``report`` (``inspect_file`` of a host library) with the code objects of its ``.kpack``
    archives when TheRock split it: what ``verify``'s host check reads (unchanged otherwise)."""
    dc = device_code(host, report)
    if dc.source != "kpack":
        return report
    names = ", ".join(a.name for a in dc.archives) or "no archive"
    return FileReport(report.path, "host-elf-kpack", report.size, dc.entries, dc.problems,
                      f"device code in .kpack archives ({names}) under {dc.kernel_name}")
