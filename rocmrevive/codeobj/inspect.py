"""Which GPU code objects does a file really carry? One function classifies a file by its
magic (never its extension) and lists every device code object inside.

    report = inspect_file("librocblas.so.4.4")
    sorted({str(e.target) for e in report.entries})   # ['gfx1010', ..., 'gfx906', ...]

Two depths: the default reads headers only (ELF e_flags, bundle entry tables, the head of a
compressed bundle); ``deep=True`` also decompresses every CCOB and checks its MD5, reads every
metadata note (kernel counts, ``amdhsa.target`` cross-check) and the kernel descriptors.
"""
from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field

from typing import Iterator

from rocmrevive.codeobj import bundle as B
from rocmrevive.codeobj.elf import ELF_MAGIC, header_problem, parse_header, read_amdgpu_elf
from rocmrevive.codeobj.targetid import Coverage, TargetId

TENSILE_DAT_MAGIC = b"\x82\xa9solutions"
CCOB_HEAD = 64 * 1024  # decompressed head of a CCOB: enough for the entry table (FORMATS §4)
FATBIN_ALIGN = 4096    # HIPCodeObjectAlign ([HIPU])

KINDS = ("amdgpu-elf", "offload-bundle", "ccob", "host-elf", "host-elf-no-device-code",
         "tensile-dat", "not-code-object", "empty", "unreadable")


@dataclass
class CodeObject:
    target: TargetId
    offset: int                  # file offset; inside a CCOB: offset in the uncompressed bundle
    size: int
    entry_id: str | None = None  # the bundle entry id, None for a raw ELF
    co_version: int | None = None
    e_flags: int | None = None
    kernels: int | None = None   # known with deep=True
    container: str = "elf"       # "elf", "bundle@0x..", "ccob-v3-zstd@0x.."

    def to_json(self) -> dict:
        return {"target": str(self.target), "processor": self.target.processor,
                "offset": self.offset, "size": self.size, "entry_id": self.entry_id,
                "co_version": self.co_version,
                "e_flags": None if self.e_flags is None else f"0x{self.e_flags:x}",
                "kernels": self.kernels, "container": self.container}


@dataclass
class FileReport:
    path: str
    kind: str
    size: int = 0
    entries: list[CodeObject] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    note: str | None = None

    @property
    def targets(self) -> list[str]:
        return sorted({str(e.target) for e in self.entries})

    @property
    def processors(self) -> list[str]:
        return sorted({e.target.processor for e in self.entries})

    def coverage(self, devices) -> list[Coverage[CodeObject]]:
        """Does this file's code load on these devices? One ``Coverage`` per device
        (``TargetId.coverage`` over the entries)."""
        return TargetId.coverage(self.entries, devices)

    def to_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "size": self.size,
                "targets": self.targets, "entries": [e.to_json() for e in self.entries],
                "problems": self.problems, "note": self.note}


# ----------------------------------------------------------------------------------------

def classify(head: bytes) -> str:
    """The kind of a file from its first bytes (at least 64 for ELF files)."""
    if not head:
        return "empty"
    if head[:4] == ELF_MAGIC:
        hdr = parse_header(head[:64])
        if hdr is not None and hdr.is_amdgpu:
            return "amdgpu-elf"
        return "host-elf"  # refined by looking for .hip_fatbin
    if head[:24] == B.BUNDLE_MAGIC:
        return "offload-bundle"
    if head[:4] == B.CCOB_MAGIC:
        return "ccob"
    if head[:11] == TENSILE_DAT_MAGIC:
        return "tensile-dat"
    return "not-code-object"


def inspect_file(path: str | os.PathLike, *, deep: bool = False) -> FileReport:
    """Classify ``path`` and list its device code objects; never raises for bad content."""
    p = str(path)
    try:
        with open(p, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return FileReport(p, "empty", 0, problems=["empty file"])
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                return _inspect_bytes(p, mm, deep)
            finally:
                try:
                    mm.close()
                except BufferError:  # a view is still referenced; the collector closes it
                    pass
    except OSError as exc:
        return FileReport(p, "unreadable", problems=[f"cannot read: {exc.strerror or exc}"])


def _inspect_bytes(path: str, data, deep: bool) -> FileReport:
    size = len(data)
    kind = classify(bytes(data[:64]))
    rep = FileReport(path, kind, size)
    try:
        if kind == "amdgpu-elf":
            rep.entries.append(_elf_entry(rep, data, 0, size, None, "elf", deep))
        elif kind == "host-elf":
            _inspect_host_elf(rep, data, deep)
        elif kind == "offload-bundle":
            _walk_bundle(rep, data, 0, deep, "bundle@0x0")
        elif kind == "ccob":
            hdr = B.parse_ccob_header(data)
            _walk_ccob(rep, data, 0, hdr, deep)
        elif kind == "not-code-object" and data[:4] == ELF_MAGIC:
            rep.problems.append(header_problem(None, bytes(data[:64])) or "bad ELF")
    except B.BundleError as exc:
        rep.problems.append(str(exc))
    except Exception as exc:  # hostile bytes must never become a traceback
        rep.problems.append(f"cannot read {kind} structure: {type(exc).__name__}: {exc}")
    return rep


def _elf_entry(rep: FileReport, data, offset: int, size: int, entry_id: str | None,
               container: str, deep: bool) -> CodeObject | None:
    head = bytes(data[offset:offset + 64])
    hdr = parse_header(head)
    why = header_problem(hdr, head)
    if why:
        where = f" (entry {entry_id})" if entry_id else ""
        rep.problems.append(f"{why}{where}")
        if entry_id:
            return _entry_from_id(entry_id, offset, size, container)
        return None
    target = hdr.target()
    co = CodeObject(target, offset, size, entry_id, hdr.co_version, hdr.e_flags, None, container)
    if entry_id:
        _check_entry_id(rep, entry_id, target, hdr.co_version)
    if deep:
        obj = read_amdgpu_elf(bytes(data[offset:offset + size]))
        co.kernels = len(obj.kernel_names)
        where = f"{entry_id}: " if entry_id else ""
        rep.problems.extend(where + p for p in obj.problems)
        missing = obj.kernel_names - obj.kd_symbols
        if missing and hdr.e_type == 3:  # only linked (ET_DYN) objects export descriptors
            rep.problems.append(f"{where}{len(missing)} kernels in the metadata have no .kd symbol "
                                f"(first: {sorted(missing)[0]})")
    return co


def _entry_from_id(entry_id: str, offset: int, size: int, container: str) -> CodeObject | None:
    try:
        t = TargetId.parse(entry_id)
    except ValueError:
        return None
    return CodeObject(t, offset, size, entry_id, None, None, None, container)


def _check_entry_id(rep: FileReport, entry_id: str, target: TargetId, co_version) -> None:
    """The bundle entry id and the ELF inside must name the same target. Features are compared
    from code object v4 on (v2/v3 e_flags cannot say "any")."""
    try:
        named = TargetId.parse(entry_id)
    except ValueError:
        rep.problems.append(f"bundle entry id {entry_id!r} names no GPU target")
        return
    same = named.processor == target.processor
    if same and (co_version or 0) >= 4:
        same = (named.sramecc, named.xnack) == (target.sramecc, target.xnack)
    if not same:
        rep.problems.append(f"bundle entry {entry_id} holds code for {target}")


def _walk_bundle(rep: FileReport, data, base: int, deep: bool, container: str,
                 limit: int | None = None) -> int:
    """List the device entries of the plain bundle at ``data[base:]``; returns its extent."""
    view = memoryview(data)[base:] if base else memoryview(data)
    entries = B.parse_bundle(view, limit=limit)
    for e in entries:
        if e.is_host or e.size == 0:
            continue
        if e.offset + 64 <= len(view):
            co = _elf_entry(rep, data, base + e.offset, e.size, e.entry_id, container, deep)
        else:  # only the head of a compressed bundle is here: the id names the target
            co = _entry_from_id(e.entry_id, e.offset, e.size, container)
            if co is None:
                rep.problems.append(f"bundle entry id {e.entry_id!r} names no GPU target")
        if co is not None:
            rep.entries.append(co)
    return B.bundle_extent(entries)


def _ccob_label(base: int, hdr: B.CcobHeader) -> str:
    return f"ccob-v{hdr.version}-{hdr.method_name}@0x{base:x}"


def _ccob_payload(view, hdr: B.CcobHeader) -> tuple[bytes, int]:
    """The whole uncompressed bundle of a CCOB (size and MD5 checked) and its compressed extent:
    TotalFileSize for v2/v3, the end of the compressed stream for v1."""
    if hdr.total_size is None:
        return _decompress_v1(view, hdr)
    return B.decompress_ccob(view, hdr, check_hash=True), hdr.total_size


def _walk_ccob(rep: FileReport, data, base: int, hdr: B.CcobHeader, deep: bool) -> int:
    """List the entries of the CCOB at ``data[base:]``; returns its compressed extent. Headers
    only (the decompressed head) unless ``deep`` or v1, which has no size to skip by."""
    view = memoryview(data)[base:]
    if deep or hdr.total_size is None:
        payload, extent = _ccob_payload(view, hdr)
        _walk_bundle(rep, payload, 0, deep, _ccob_label(base, hdr))
        return extent
    if hdr.total_size > len(view):
        raise B.BundleError(f"CCOB at 0x{base:x} says it is {hdr.total_size} bytes, "
                            f"only {len(view)} are there")
    head = B.decompress_ccob(view, hdr, head=CCOB_HEAD)
    _walk_bundle(rep, head, 0, False, _ccob_label(base, hdr), limit=hdr.uncompressed_size)
    return hdr.total_size


def _decompress_v1(view, hdr: B.CcobHeader) -> tuple[bytes, int]:
    """CCOB v1 has no total size: decompress until the stream ends; return (bytes, extent)."""
    import zlib

    payload = bytes(view[hdr.header_size:])
    if hdr.method == B.METHOD_ZLIB:
        dec = zlib.decompressobj()
        try:
            out = dec.decompress(payload, hdr.uncompressed_size + 1)
        except zlib.error as exc:
            raise B.BundleError(f"CCOB v1 payload does not decompress (zlib): {exc}") from None
        if not dec.eof:
            raise B.BundleError("CCOB v1 zlib stream does not end where its size says")
        unused = len(dec.unused_data) + len(dec.unconsumed_tail)
    else:
        import zstandard

        dec = zstandard.ZstdDecompressor().decompressobj()
        out = b""
        pos = 0
        step = 1 << 20
        while pos < len(payload) and not dec.eof:
            try:
                out += dec.decompress(payload[pos:pos + step])
            except zstandard.ZstdError as exc:
                raise B.BundleError(f"CCOB v1 payload does not decompress (zstd): {exc}") from None
            pos += step
            if len(out) > hdr.uncompressed_size:
                raise B.BundleError("CCOB v1 decompresses to more than its stated size")
        if not dec.eof:
            raise B.BundleError("CCOB v1 zstd stream is truncated")
        unused = len(dec.unused_data) + (len(payload) - min(pos, len(payload)))
    if len(out) != hdr.uncompressed_size:
        raise B.BundleError(f"CCOB decompresses to {len(out)} bytes, header says {hdr.uncompressed_size}")
    if B.ccob_hash(out) != hdr.hash:
        raise B.BundleError("CCOB hash does not match its contents (MD5 check failed)")
    return out, len(view) - unused


def _find_section(data, name: bytes):
    """(offset, size) of a section by name, from the section headers; None if absent."""
    import struct

    hdr = parse_header(bytes(data[:64]))
    if hdr is None or hdr.ei_class != 2 or hdr.ei_data != 1:
        return None
    if hdr.e_shnum == 0 or hdr.e_shentsize != 64 or hdr.e_shoff + hdr.e_shnum * 64 > len(data):
        raise B.BundleError("ELF section headers are missing or lie past the end (truncated?)")
    if hdr.e_shstrndx >= hdr.e_shnum:
        raise B.BundleError("ELF section name table index is out of range")
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", data, hdr.e_shoff + i * 64) for i in range(hdr.e_shnum)]
    stro, strs = shdrs[hdr.e_shstrndx][4], shdrs[hdr.e_shstrndx][5]
    if stro + strs > len(data):
        raise B.BundleError("ELF section name table lies past the end")
    for sh in shdrs:
        nm = sh[0]
        if nm < strs and bytes(data[stro + nm: stro + nm + len(name) + 1]) == name + b"\0":
            if sh[1] == 8:  # SHT_NOBITS: nothing in the file
                return None
            if sh[4] + sh[5] > len(data):
                raise B.BundleError(f"{name.decode()} lies past the end of the file")
            return sh[4], sh[5]
    return None


def _walk_fatbin(data, off: int, size: int, *, on_bundle, on_ccob) -> int | None:
    """Walk the bundles of a ``.hip_fatbin`` section by structure ([HIPU]: each starts at a
    4096-aligned offset; zero padding between them). ``on_bundle(file_pos, bytes_left)`` and
    ``on_ccob(file_pos, header)`` return each container's extent. Returns the file offset of
    bytes that are neither, or None when the whole section was walked."""
    pos = 0
    while pos < size:
        head = bytes(data[off + pos:off + min(pos + 32, size)])  # never past the section
        if head[:24] == B.BUNDLE_MAGIC:
            extent = on_bundle(off + pos, size - pos)
        elif head[:4] == B.CCOB_MAGIC:
            extent = on_ccob(off + pos, B.parse_ccob_header(head))
        elif not any(head):
            extent = 1  # padding between bundles
        else:
            return off + pos
        pos += max(extent, 1)
        pos = (pos + FATBIN_ALIGN - 1) // FATBIN_ALIGN * FATBIN_ALIGN
    return None


def _inspect_host_elf(rep: FileReport, data, deep: bool) -> None:
    hdr = parse_header(bytes(data[:64]))
    if hdr is None:
        rep.kind = "not-code-object"
        rep.problems.append("truncated ELF header")
        return
    sec = _find_section(data, b".hip_fatbin")
    if sec is None:
        rep.kind = "host-elf-no-device-code"
        rep.note = f"ELF for machine {hdr.e_machine} with no .hip_fatbin section"
        return
    off, size = sec
    stray = _walk_fatbin(
        data, off, size,
        on_bundle=lambda pos, left: _walk_bundle(rep, data, pos, deep, f"bundle@0x{pos:x}", limit=left),
        on_ccob=lambda pos, hdr: _walk_ccob(rep, data, pos, hdr, deep))
    if stray is not None:
        rep.problems.append(f"unrecognised bytes in .hip_fatbin at 0x{stray:x}")
    if not rep.entries and not rep.problems:
        rep.kind = "host-elf-no-device-code"
        rep.note = ".hip_fatbin holds no device code"


# ----------------------------------------------------------------------------------------

def iter_files(paths) -> Iterator[str]:
    """Every regular file under ``paths`` (folders recursively, in sorted order), each real file
    once. Symbolic links inside folders are skipped (they name files listed anyway); a path
    given explicitly is followed."""
    seen: set[tuple[int, int]] = set()

    def once(st) -> bool:
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return False
        seen.add(key)
        return True

    for p in map(str, paths):
        if os.path.isdir(p):
            stack = [p]
            while stack:
                d = stack.pop()
                try:
                    with os.scandir(d) as it:
                        ents = sorted(it, key=lambda e: e.name)
                except OSError:
                    yield d  # reported as unreadable
                    continue
                subdirs = []
                for e in ents:
                    if e.is_symlink():
                        continue
                    if e.is_dir():
                        subdirs.append(e.path)
                    elif e.is_file() and once(e.stat()):
                        yield e.path
                stack.extend(reversed(subdirs))
        else:
            try:
                st = os.stat(p)
            except OSError:
                yield p
                continue
            if once(st):
                yield p


def inspect_paths(paths, *, deep: bool = False, progress=None) -> list[FileReport]:
    out = []
    for f in iter_files(paths):
        out.append(inspect_file(f, deep=deep))
        if progress:
            progress(1)
    return out


def iter_elf_payloads(path: str | os.PathLike) -> Iterator[tuple[CodeObject, bytes]]:
    """Each device code object in ``path`` with its ELF bytes (compressed bundles decompressed).

    Raises ``BundleError`` when a container cannot be read.
    """
    with open(path, "rb") as f:
        data = f.read()
    kind = classify(data[:64])
    if kind == "amdgpu-elf":
        rep = FileReport(str(path), kind, len(data))
        co = _elf_entry(rep, data, 0, len(data), None, "elf", False)
        if co is not None:
            yield co, data
        return
    rep = FileReport(str(path), kind, len(data))
    blobs: list[tuple[bytes, int, str]] = []  # (container bytes, base, label)

    def add_bundle(pos: int, left: int) -> int:
        blobs.append((data, pos, f"bundle@0x{pos:x}"))
        return B.bundle_extent(B.parse_bundle(memoryview(data)[pos:], limit=left))

    def add_ccob(pos: int, hdr: B.CcobHeader) -> int:
        payload, extent = _ccob_payload(memoryview(data)[pos:], hdr)
        blobs.append((payload, 0, _ccob_label(pos, hdr)))
        return extent

    if kind == "offload-bundle":
        add_bundle(0, len(data))
    elif kind == "ccob":
        add_ccob(0, B.parse_ccob_header(data))
    elif kind == "host-elf":
        sec = _find_section(data, b".hip_fatbin")
        if sec is not None:
            _walk_fatbin(data, *sec, on_bundle=add_bundle, on_ccob=add_ccob)
    for blob, base, label in blobs:
        for e in B.parse_bundle(memoryview(blob)[base:]):
            if e.is_host or e.size == 0:
                continue
            co = _elf_entry(rep, blob, base + e.offset, e.size, e.entry_id, label, False)
            if co is not None:
                yield co, bytes(blob[base + e.offset: base + e.offset + e.size])
