"""TheRock's ``.kpack`` archives (ROCm 7.13+ multi-arch builds): the device code that used to sit in
each library's ``.hip_fatbin``, moved into one archive per component and GPU family
(``<prefix>/.kpack/blas_lib_gfx1100.kpack``); the host library keeps a ``.rocm_kpack_ref`` marker
naming it. Read by structure, nothing decompressed.

Format (rocm-kpack's ``PackedKernelArchive``, TheRock RFC0008):

    0x00  "KPAK"        magic
    0x04  u32 LE        format version (1)
    0x08  u64 LE        TOC offset
    0x10  padding to 64, then the blob data
    TOC   MessagePack map, from the TOC offset to the end of the file:
          format_version, group_name ("blas"), gfx_arch_family ("gfx110X"), gfx_arches [...],
          compression_scheme "none" | "zstd-per-kernel",
          blobs [{offset, size}] (none: absolute offsets, one per kernel ordinal) or
          zstd_offset, zstd_size (zstd-per-kernel),
          toc {binary path relative to the install root: {arch: {type: "hsaco", ordinal, original_size}}}

With ``none`` every blob is a raw code object, so its ELF header gives the exact target id and code
object version; with ``zstd-per-kernel`` only the TOC's arch names are known (the frame index inside
the zstd blob is not read).

    rep = read_kpack("/opt/rocm-7.13.0/.kpack/blas_lib_gfx1100.kpack")
    rep.arches, rep.binaries["lib/librocblas.so.5"], [str(e.target) for e in rep.entries]
"""
from __future__ import annotations

import copy
import os
import stat
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from rocmrevive.codeobj.elf import parse_header
from rocmrevive.codeobj.inspect import CodeObject, FileReport
from rocmrevive.codeobj.msgstream import DAMAGED, MsgStream, TooLarge
from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.errors import RevError
from rocmrevive.fs import open_regular, read_error

MAGIC = b"KPAK"
HEADER = struct.Struct("<4sIQ")
VERSIONS = (1,)
MAX_TOC = 16 << 20      # a TOC larger than this is not read (it is read whole)
# What one archive may list (one GPU family's kernels of a few libraries: TheRock's are far
# below this); the TOC is walked keeping only these, so memory stays bounded whatever it holds.
MAX_ENTRIES = 1 << 16
MAX_STEPS = 1 << 20     # values looked at in one walk (about 15 per kernel): time stays bounded too
MAX_NAME = 4096         # a binary path or an arch name
SCHEMES = ("none", "zstd-per-kernel")

@dataclass
class KpackReport:
    path: str
    version: int | None = None
    group: str | None = None
    family: str | None = None
    arches: list[str] = field(default_factory=list)
    compression: str | None = None
    binaries: dict[str, list[str]] = field(default_factory=dict)   # binary path -> arches it has code for
    kernels: int = 0
    entries: list[CodeObject] = field(default_factory=list)        # exact targets (compression "none")
    problems: list[str] = field(default_factory=list)
    size: int = 0

    @property
    def processors(self) -> list[str]:
        if self.entries:
            return sorted({e.target.processor for e in self.entries})
        return sorted({TargetId.parse(a).processor for a in self.arches if _parses(a)})

    def to_json(self) -> dict:
        return {"path": self.path, "format_version": self.version, "group": self.group, "family": self.family,
                "arches": self.arches, "compression": self.compression, "kernels": self.kernels,
                "binaries": self.binaries, "targets": sorted({str(e.target) for e in self.entries}),
                "problems": self.problems}


def _parses(a: str) -> bool:
    try:
        TargetId.parse(a)
        return True
    except ValueError:
        return False


def is_kpack(head: bytes) -> bool:
    return head[:4] == MAGIC


def read_kpack(path: str | os.PathLike) -> KpackReport:
    """The archive's header and TOC; never raises for bad content (``problems`` says what is
    wrong). The archive may be a user's (a venv's ``torch/.kpack``): it is opened without
    following a link at its name, a FIFO or device is refused, and the TOC is walked, not
    decoded whole, so neither its size nor its shape can exhaust memory.

    One command asks for the same archive several times (a verify: the copy's survey, its host
    libraries' markers, the kpack checks): an archive is read once per process and its report
    kept by the file's identity (device, inode, size, mtime, ctime); a later call whose ``lstat``
    shows that same regular file gets a copy of it without opening the file again. Any change
    to the file, or another file at the name, changes the identity: it is read anew."""
    p = str(path)
    key = _identity(p)
    if key is not None:
        with _MEMO_LOCK:
            hit = _MEMO.get(key)
            if hit is not None:
                _MEMO.move_to_end(key)
        if hit is not None:
            return _copy(hit, p)
    rep, read_ident = _read_kpack(p)
    if key is not None and read_ident == key:  # the file read is the one looked at
        with _MEMO_LOCK:
            _MEMO[key] = _copy(rep, p)
            while len(_MEMO) > _MEMO_MAX:
                _MEMO.popitem(last=False)
    return rep


def clear_memo() -> None:
    """Forget every archive read (``read_kpack``'s per-process memo)."""
    with _MEMO_LOCK:
        _MEMO.clear()


_MEMO: OrderedDict[tuple[int, ...], KpackReport] = OrderedDict()
_MEMO_LOCK = threading.Lock()
_MEMO_MAX = 64  # archives kept (a TheRock tree has one per component and family: a few dozen)


def _identity(p: str) -> tuple[int, ...] | None:
    try:
        st = os.lstat(p)
    except OSError:
        return None
    return _ident(st) if stat.S_ISREG(st.st_mode) else None


def _ident(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _copy(rep: KpackReport, p: str) -> KpackReport:
    """A copy of a report a caller may change without changing the memo's."""
    return replace(rep, path=p, arches=list(rep.arches), binaries={k: list(v) for k, v in rep.binaries.items()},
                   entries=[copy.copy(e) for e in rep.entries], problems=list(rep.problems))


def _read_kpack(p: str) -> tuple[KpackReport, tuple[int, ...] | None]:
    """(the report, the identity of the file read, None when none was opened)."""
    rep = KpackReport(p)
    try:
        fd = open_regular(p)
    except (RevError, OSError) as exc:
        rep.problems.append(exc.message if isinstance(exc, RevError) else read_error(p, exc).message)
        return rep, None
    ident = None
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            ident = _ident(st)
            rep.size = st.st_size
            toc = _read_header_and_toc(rep, f)
            if toc is not None:
                _fill(rep, toc)
                if rep.compression == "none":
                    _read_blobs(rep, f, toc)
    except OSError as exc:
        rep.problems.append(f"cannot read: {exc.strerror or exc}")
        ident = None  # a read error is not kept: the next call tries again
    return rep, ident


def _read_header_and_toc(rep: KpackReport, f) -> "_Toc | None":
    size = rep.size
    head = f.read(HEADER.size)
    if len(head) < HEADER.size or not is_kpack(head):
        rep.problems.append("not a .kpack archive (no KPAK magic)")
        return None
    _magic, rep.version, toc_offset = HEADER.unpack(head)
    if rep.version not in VERSIONS:
        rep.problems.append(f"format version {rep.version} (rocmrevive reads {VERSIONS})")
        return None
    if not HEADER.size <= toc_offset < size:
        rep.problems.append(f"TOC offset {toc_offset} outside the file ({size} bytes)")
        return None
    if size - toc_offset > MAX_TOC:
        rep.problems.append(f"TOC of {size - toc_offset} bytes is larger than {MAX_TOC}")
        return None
    f.seek(toc_offset)
    raw = f.read(size - toc_offset)
    try:
        return _Toc.walk(raw)
    except DAMAGED as exc:
        rep.problems.append(f"TOC is not MessagePack: {str(exc) or type(exc).__name__}")
        return None
    except TooLarge as exc:
        rep.problems.append(f"TOC not read: {exc}")
        return None
    except _Unread as exc:
        rep.problems.append(str(exc))
        return None


class _Unread(Exception):
    """Why the TOC was not read: not a map, or more entries than one archive may list."""


@dataclass(frozen=True)
class _Toc:
    """What the report needs of the TOC, and nothing else: its text fields, its arches, the
    blobs' (offset, size) and, per binary, each arch's kernel ordinal (None if it has none)."""

    text: dict[str, str]
    arches: list[str] | None
    blobs: list[tuple[int, int] | None] | None
    table: dict[str, dict[str, int | None]] | None

    @classmethod
    def walk(cls, raw: bytes) -> "_Toc":
        """Walk the TOC map; values of other shapes than expected are skipped, never built."""
        s = MsgStream(raw, max_values=MAX_STEPS, max_items=MAX_ENTRIES, max_str=MAX_NAME)
        n = s.map_header()
        if n is None:
            raise _Unread("TOC is not a map")
        text: dict[str, str] = {}
        arches = blobs = table = None
        for _ in range(n):
            key = s.scalar()
            if key in ("group_name", "gfx_arch_family", "compression_scheme"):
                v = s.scalar()
                if isinstance(v, str):
                    text[key] = v
            elif key == "gfx_arches":
                arches = s.array(s.scalar)
            elif key == "blobs":
                blobs = s.array(lambda: _blob(s))
            elif key == "toc":
                table = _table(s)
            else:
                s.skip()
        return cls(text, arches, blobs, table)


def _int(s: MsgStream) -> int | None:
    v = s.scalar()
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _fields(s: MsgStream, wanted: tuple[str, ...]) -> dict[str, int | None] | None:
    """The integer fields ``wanted`` of the map that comes next (None when it is not a map)."""
    n = s.map_header()
    if n is None:
        return None
    d: dict[str, int | None] = {}
    for _ in range(n):
        key = s.scalar()
        if key in wanted:
            d[key] = _int(s)
        else:
            s.skip()
    return d


def _blob(s: MsgStream) -> tuple[int, int] | None:
    """``{offset, size}`` as a pair of ints, None when it is not one."""
    d = _fields(s, ("offset", "size")) or {}
    off, size = d.get("offset"), d.get("size")
    return (off, size) if off is not None and size is not None else None


def _table(s: MsgStream) -> dict[str, dict[str, int | None]] | None:
    """``{binary: {arch: {ordinal}}}``: binaries and arches are names; an arch's ordinal is None
    when its entry has none."""
    n = s.map_header()
    if n is None:
        return None
    out: dict[str, dict[str, int | None]] = {}
    for _ in range(n):
        binary = s.scalar()
        m = s.map_header()
        per: dict[str, int | None] = {}
        for _ in range(m or 0):
            arch = s.scalar()
            ordinal = (_fields(s, ("ordinal",)) or {}).get("ordinal")
            if isinstance(arch, str):
                per[arch] = ordinal
        if isinstance(binary, str) and m is not None:
            out[binary] = per
    return out


def _fill(rep: KpackReport, toc: _Toc) -> None:
    rep.group, rep.family = toc.text.get("group_name"), toc.text.get("gfx_arch_family")
    rep.compression = toc.text.get("compression_scheme")
    rep.arches = [a for a in toc.arches or () if isinstance(a, str)]
    if rep.compression not in SCHEMES:
        rep.problems.append(f"compression scheme {rep.compression!r} is not one of {', '.join(SCHEMES)}")
    if toc.table is None:
        rep.problems.append("TOC has no 'toc' map of binaries")
        return
    for binary, per_arch in toc.table.items():
        archs = sorted(per_arch)
        rep.binaries[binary] = archs
        rep.kernels += len(archs)


def _read_blobs(rep: KpackReport, f, toc: _Toc) -> None:
    if toc.blobs is None:
        rep.problems.append("compression 'none' but no blobs array")
        return
    where = {ordinal: (binary, arch) for binary, per_arch in (toc.table or {}).items()
             for arch, ordinal in per_arch.items() if ordinal is not None}
    for ordinal, b in enumerate(toc.blobs):
        if b is None:
            rep.problems.append(f"blob {ordinal}: no offset/size")
            continue
        off, n = b
        if off < HEADER.size or off + n > rep.size or n < 64:
            rep.problems.append(f"blob {ordinal}: {n} bytes at {off} do not fit the file")
            continue
        f.seek(off)
        hdr = parse_header(f.read(64))
        binary, arch = where.get(ordinal, (None, None))
        target = hdr.target() if hdr is not None and hdr.is_amdgpu else None
        if hdr is None or target is None:
            rep.problems.append(f"blob {ordinal} ({binary} {arch}) is not an AMDGPU code object")
            continue
        if arch and _parses(arch) and TargetId.parse(arch).processor != target.processor:
            rep.problems.append(f"blob {ordinal}: the TOC says {arch}, the code object is {target.processor}")
        rep.entries.append(CodeObject(target, off, n, entry_id=f"{binary}@{arch}", co_version=hdr.co_version,
                                      e_flags=hdr.e_flags, container=f"kpack@0x{off:x}"))


def file_report(path: str | os.PathLike):
    """The archive as ``codeobj.inspect``'s FileReport (kind ``kpack``): the exact code objects
    with compression ``none``, else one entry per (binary, arch) of the TOC (target from the arch
    name, container ``kpack-toc``)."""
    rep = read_kpack(path)
    size = rep.size
    entries = list(rep.entries)
    if not entries and not rep.problems:
        for binary, archs in rep.binaries.items():
            for a in archs:
                if _parses(a):
                    entries.append(CodeObject(TargetId.parse(a), 0, 0, entry_id=f"{binary}@{a}",
                                              container="kpack-toc"))
    note = (f"TheRock kernel archive: group {rep.group}, family {rep.family}, arches {', '.join(rep.arches) or '-'}, "
            f"{rep.kernels} kernels for {len(rep.binaries)} binaries, compression {rep.compression}")
    return FileReport(str(path), "kpack", size, entries, list(rep.problems), note)
