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

import os
import struct
from dataclasses import dataclass, field

from rocmrevive.codeobj.elf import parse_header
from rocmrevive.codeobj.inspect import CodeObject
from rocmrevive.codeobj.targetid import TargetId

MAGIC = b"KPAK"
HEADER = struct.Struct("<4sIQ")
VERSIONS = (1,)
MAX_TOC = 64 << 20      # a TOC larger than this is not read
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
    """The archive's header and TOC; never raises for bad content (``problems`` says what is wrong)."""
    import msgpack

    p = str(path)
    rep = KpackReport(p)
    from rocmrevive.codeobj.inspect import open_regular  # never a FIFO or a device

    try:
        with open_regular(p) as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(HEADER.size)
            if len(head) < HEADER.size or not is_kpack(head):
                rep.problems.append("not a .kpack archive (no KPAK magic)")
                return rep
            _magic, rep.version, toc_offset = HEADER.unpack(head)
            if rep.version not in VERSIONS:
                rep.problems.append(f"format version {rep.version} (rocmrevive reads {VERSIONS})")
                return rep
            if not HEADER.size <= toc_offset < size:
                rep.problems.append(f"TOC offset {toc_offset} outside the file ({size} bytes)")
                return rep
            if size - toc_offset > MAX_TOC:
                rep.problems.append(f"TOC of {size - toc_offset} bytes is larger than {MAX_TOC}")
                return rep
            f.seek(toc_offset)
            raw = f.read(size - toc_offset)
            try:
                toc = msgpack.unpackb(raw, raw=False, strict_map_key=False)
            except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
                rep.problems.append(f"TOC is not MessagePack: {exc}")
                return rep
            if not isinstance(toc, dict):
                rep.problems.append("TOC is not a map")
                return rep
            _fill(rep, toc)
            if rep.compression == "none":
                _read_blobs(rep, f, toc, size)
    except OSError as exc:
        rep.problems.append(f"cannot read: {exc.strerror or exc}")
    return rep


def _fill(rep: KpackReport, toc: dict) -> None:
    def text(key):
        v = toc.get(key)
        return v if isinstance(v, str) else None

    rep.group, rep.family, rep.compression = text("group_name"), text("gfx_arch_family"), text("compression_scheme")
    arches = toc.get("gfx_arches")
    rep.arches = [a for a in arches if isinstance(a, str)] if isinstance(arches, list) else []
    if rep.compression not in SCHEMES:
        rep.problems.append(f"compression scheme {rep.compression!r} is not one of {', '.join(SCHEMES)}")
    table = toc.get("toc")
    if not isinstance(table, dict):
        rep.problems.append("TOC has no 'toc' map of binaries")
        return
    for binary, per_arch in table.items():
        if not isinstance(binary, str) or not isinstance(per_arch, dict):
            continue
        archs = sorted(a for a in per_arch if isinstance(a, str))
        rep.binaries[binary] = archs
        rep.kernels += len(archs)


def _read_blobs(rep: KpackReport, f, toc: dict, size: int) -> None:
    blobs = toc.get("blobs")
    if not isinstance(blobs, list):
        rep.problems.append("compression 'none' but no blobs array")
        return
    where = {}
    for binary, per_arch in (toc.get("toc") or {}).items():
        if isinstance(per_arch, dict):
            for arch, meta in per_arch.items():
                if isinstance(meta, dict) and isinstance(meta.get("ordinal"), int):
                    where[meta["ordinal"]] = (binary, arch)
    for ordinal, b in enumerate(blobs):
        if not isinstance(b, dict) or not isinstance(b.get("offset"), int) or not isinstance(b.get("size"), int):
            rep.problems.append(f"blob {ordinal}: no offset/size")
            continue
        off, n = b["offset"], b["size"]
        if off < HEADER.size or off + n > size or n < 64:
            rep.problems.append(f"blob {ordinal}: {n} bytes at {off} do not fit the file")
            continue
        f.seek(off)
        hdr = parse_header(f.read(64))
        binary, arch = where.get(ordinal, (None, None))
        target = hdr.target() if hdr is not None and hdr.is_amdgpu else None
        if target is None:
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
    from rocmrevive.codeobj.inspect import FileReport

    rep = read_kpack(path)
    size = os.path.getsize(path) if os.path.exists(path) else 0
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
