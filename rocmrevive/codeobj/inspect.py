"""Which GPU code objects does a file really carry? One function classifies a file by its
magic (never its extension) and lists every device code object inside.

    report = inspect_file("librocblas.so.4.4")
    sorted({str(e.target) for e in report.entries})   # ['gfx1010', ..., 'gfx906', ...]

Two depths: the default reads headers only (ELF e_flags and section headers, so a cut file
is flagged; bundle entry tables; the head of a compressed bundle); ``deep=True`` also
decompresses every CCOB and checks its MD5, reads every metadata note (kernel counts,
``amdhsa.target`` cross-check) and the kernel descriptors, and walks every Tensile ``.dat`` to
its end. Compressed bundles are streamed: memory holds at most one code object
(``bundle.MAX_CODE_OBJECT``) whatever a header claims. FIFOs and devices are never opened.
"""
from __future__ import annotations

import errno
import functools
import mmap
import operator
import os
import stat
import struct
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

import msgpack

from rocmrevive.codeobj import bundle as B
from rocmrevive.codeobj.elf import (
    ELF_MAGIC,
    ELFOSABI_AMDGPU_HSA,
    EM_AMDGPU,
    SHT_NOBITS,
    SPANS_MAX,
    elf_target,
    header_problem,
    machine_words,
    parse_header,
    read_amdgpu_elf,
    section_spans,
    section_table,
    truncation_problem,
)
from rocmrevive.codeobj.sniff import classify
from rocmrevive.codeobj.targetid import Coverage, TargetId

TENSILE_DAT_MAGIC = b"\x82\xa9solutions"
CCOB_HEAD = 64 * 1024  # decompressed head of a CCOB: enough for the entry table (FORMATS §4)
FATBIN_ALIGN = 4096    # HIPCodeObjectAlign ([HIPU])
_ZEROS = bytes(FATBIN_ALIGN)

KINDS = ("amdgpu-elf", "offload-bundle", "ccob", "host-elf", "host-elf-no-device-code",
         "tensile-dat", "not-code-object", "empty", "unreadable")


@dataclass(slots=True)
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

def open_regular(path: str | os.PathLike):
    """Open a file for reading, never a FIFO, socket or device: opened non-blocking (a FIFO
    cannot hang us), then ``fstat``-checked. An explicitly named link is followed. Raises
    OSError (``strerror`` says what the file is)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                    else "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file")
            raise OSError(errno.EINVAL, f"{what}, not a regular file (never opened for reading)", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _section_table(hdr, read, size: int) -> bytes | None:
    """The section header table through ``read(n, offset)``; None when it has none or it cannot
    be read (``truncation_problem`` then says what it can from the header alone)."""
    try:
        return section_table(hdr, read, size) or None
    except ValueError:
        return None


def inspect_file(path: str | os.PathLike, *, deep: bool = False,
                 focus: frozenset[str] | None = None) -> FileReport:
    """Classify ``path`` and list its device code objects; never raises for bad content.

    ``focus`` (processors, e.g. the machine's): a bundle entry whose id names another processor
    (not a generic one) is checked to its ELF header only (target, code object version, the id
    agreeing), not its section table: the runtime loads only the entry of the agent's ISA, so a
    cut in another target's entry cannot break this machine (audit's scan; ``inspect`` checks all)."""
    p = str(path)
    try:
        with open_regular(p) as f:
            fd = f.fileno()
            size = os.fstat(fd).st_size
            if size == 0:
                return FileReport(p, "empty", 0, problems=["empty file"])
            head = os.pread(fd, 64, 0)
            kind = classify(head)
            if not deep and kind in ("amdgpu-elf", "tensile-dat", "not-code-object"):
                return _inspect_head(p, fd, size, head, kind)  # most of a library folder
            mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            try:
                return _inspect_bytes(p, mm, deep, focus)
            finally:
                try:
                    mm.close()
                except BufferError:  # a view is still referenced; the collector closes it
                    pass
    except OSError as exc:
        return FileReport(p, "unreadable", problems=[f"cannot read: {exc.strerror or exc}"])


def _inspect_head(path: str, fd: int, size: int, head: bytes, kind: str) -> FileReport:
    """The header-only report of a raw code object, a .dat or a foreign file, from two
    ``pread`` calls (the ELF header and the section header table): no mapping."""
    rep = FileReport(path, kind, size)
    if kind != "amdgpu-elf":
        return rep
    co = _elf_entry(rep, head, 0, size, None, "elf", False)
    if co is not None:
        rep.entries.append(co)
        hdr = parse_header(head)
        assert hdr is not None
        cut = truncation_problem(hdr, size, _section_table(hdr, lambda n, at: os.pread(fd, n, at), size))
        if cut:
            rep.problems.append(cut)
    return rep


def _inspect_bytes(path: str, data, deep: bool, focus: frozenset[str] | None = None) -> FileReport:
    size = len(data)
    kind = classify(bytes(data[:64]))
    rep = FileReport(path, kind, size)
    try:
        if kind == "amdgpu-elf":
            co = _elf_entry(rep, data, 0, size, None, "elf", deep)
            if co is not None:
                rep.entries.append(co)
        elif kind == "host-elf":
            _inspect_host_elf(rep, data, deep, focus)
        elif kind in ("offload-bundle", "ccob"):
            # a file may hold several containers back to back (a dumped .hip_fatbin)
            _walk_containers(rep, data, 0, size, deep, "the file", focus)
        elif kind == "tensile-dat" and deep:
            # a whole-folder scan reads headers only; walking 300 MB of .dat is --deep's job
            why = msgpack_problem(data)
            if why:
                rep.problems.append(why)
    except B.BundleError as exc:
        rep.problems.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - hostile bytes must never become a traceback, only a problem line
        rep.problems.append(f"cannot read {kind} structure: {type(exc).__name__}: {exc}")
    return rep


def msgpack_problem(data) -> str | None:
    """Why ``data`` is not exactly one complete msgpack object (truncated, damaged, or with
    bytes after it); None when it is. Walked without building anything."""
    u = msgpack.Unpacker(max_buffer_size=max(len(data), 1))
    u.feed(data)
    try:
        u.skip()
    except msgpack.OutOfData:
        return f"truncated: the msgpack data ends early ({len(data):,} bytes are there)"
    except Exception as exc:  # noqa: BLE001 - msgpack raises ValueError, TypeError and its own types on bad input
        return f"damaged msgpack data: {type(exc).__name__}: {exc}"
    end = u.tell()
    if end != len(data):
        return f"{len(data) - end:,} bytes after the end of the msgpack data (at 0x{end:x})"
    return None


_SOUND_IDS: set[tuple[str, int, int | None]] = set()   # (entry id, e_flags, code object version) that agree
_EHDR = struct.Struct("<4sBBxBB7xHHIQQQIHHHHHH")   # Elf64_Ehdr, the fields the fast path reads


def _sound_entry(data, offset: int, size: int, entry_id: str | None, container: str,
                 sections: bool = True) -> CodeObject | None:
    """The code object at ``data[offset:offset + size]`` when every header-depth check passes
    (an AMDGPU HSA ELF of a known processor, its bundle id naming the same target, no table or
    section past its end), read with two ``struct`` calls; None sends it to ``_elf_entry``'s
    full path, which says what is wrong. A fat binary holds hundreds of sound code objects.
    ``sections=False``: the ELF header only (an entry outside ``inspect_file``'s focus)."""
    if offset + size > len(data) or size < 64:
        return None
    (magic, ei_class, ei_data, osabi, abiversion, _type, machine, _ver, _entry, phoff, shoff, flags,
     _ehsize, phentsize, phnum, shentsize, shnum, _shstrndx) = _EHDR.unpack_from(data, offset)
    if magic != ELF_MAGIC or ei_class != 2 or ei_data != 1 or machine != EM_AMDGPU:
        return None
    target = elf_target(osabi, abiversion, flags)
    if target is None:
        return None
    if not sections:
        pass
    elif phoff and phnum * phentsize and phoff + phnum * phentsize > size:
        return None
    elif not shoff or shentsize != 64 or not 0 < shnum <= SPANS_MAX or shoff + shnum * 64 > size:
        return None
    else:
        spans = section_spans(shnum).unpack_from(data, offset + shoff)
        if max(map(operator.add, spans[1::3], spans[2::3])) > size and any(
                kind != SHT_NOBITS and length and at + length > size   # (.bss has no bytes in the file)
                for kind, at, length in zip(spans[0::3], spans[1::3], spans[2::3])):
            return None
    co_version = abiversion + 2 if osabi == ELFOSABI_AMDGPU_HSA else None
    if entry_id and (entry_id, flags, co_version) not in _SOUND_IDS:
        if _entry_id_problem(entry_id, target, co_version):
            return None
        if len(_SOUND_IDS) > 4096:   # bounded: a scan meets a few dozen
            _SOUND_IDS.clear()
        _SOUND_IDS.add((entry_id, flags, co_version))
    return CodeObject(target, offset, size, entry_id, co_version, flags, None, container)


def _elf_entry(rep: FileReport, data, offset: int, size: int, entry_id: str | None,
               container: str, deep: bool) -> CodeObject | None:
    if not deep:
        co = _sound_entry(data, offset, size, entry_id, container)
        if co is not None:
            return co
    head = bytes(data[offset:offset + 64])
    hdr = parse_header(head)
    why = header_problem(hdr, head)
    if why:
        where = f" (entry {entry_id})" if entry_id else ""
        rep.problems.append(f"{why}{where}")
        if entry_id:
            return _entry_from_id(entry_id, offset, size, container)
        return None
    target = hdr.target() if hdr is not None else None
    assert hdr is not None and target is not None   # header_problem refused no header and an unknown processor
    co = CodeObject(target, offset, size, entry_id, hdr.co_version, hdr.e_flags, None, container)
    if entry_id:
        _check_entry_id(rep, entry_id, target, hdr.co_version)
    if offset + size <= len(data):  # a streamed entry head (64 bytes) cannot be checked
        table = _section_table(hdr, lambda n, at: bytes(data[offset + at:offset + at + n]), size)
        cut = truncation_problem(hdr, size, table)
        if cut:
            rep.problems.append(f"{entry_id}: {cut}" if entry_id else cut)
    if deep:
        whole = offset == 0 and size == len(data)  # a streamed code object: do not copy it
        obj = read_amdgpu_elf(data if whole else bytes(data[offset:offset + size]))
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
    why = _entry_id_problem(entry_id, target, co_version)
    if why:
        rep.problems.append(why)


@functools.lru_cache(maxsize=1024)   # a fat binary names the same few ids hundreds of times
def _entry_id_problem(entry_id: str, target: TargetId, co_version) -> str | None:
    try:
        named = TargetId.parse(entry_id)
    except ValueError:
        return f"bundle entry id {entry_id!r} names no GPU target"
    same = named.processor == target.processor
    if same and (co_version or 0) >= 4:
        same = (named.sramecc, named.xnack) == (target.sramecc, target.xnack)
    if not same:
        return f"bundle entry {entry_id} holds code for {target}"
    return None


@functools.lru_cache(maxsize=1024)
def _in_focus(entry_id: str, focus: frozenset[str]) -> bool:
    """Whether the runtime could load this entry on one of ``focus``'s processors: its id names
    one of them or a generic target, or names none (the full path says what is wrong)."""
    try:
        proc = TargetId.parse(entry_id).processor
    except ValueError:
        return True
    return proc in focus or proc.endswith("-generic")


def _walk_bundle(rep: FileReport, data, base: int, deep: bool, container: str,
                 limit: int | None = None, entries: list[B.BundleEntry] | None = None,
                 focus: frozenset[str] | None = None) -> None:
    """List the device entries of the plain bundle at ``data[base:]`` (its entry table, when
    ``iter_containers`` has parsed it already); ``focus`` as ``inspect_file``'s."""
    have = len(data) - base
    if entries is None:
        entries = B.parse_bundle(memoryview(data)[base:] if base else memoryview(data), limit=limit)
    for eid, eoff, esize in entries:   # (B.BundleEntry, unpacked: hundreds in a fat binary)
        if esize == 0 or eid == "host" or eid.startswith("host-"):   # BundleEntry.is_host
            continue
        if eoff + 64 <= have:
            co = None if deep else _sound_entry(data, base + eoff, esize, eid, container,
                                                focus is None or _in_focus(eid, focus))
            if co is None:
                co = _elf_entry(rep, data, base + eoff, esize, eid, container, deep)
        else:  # only the head of a compressed bundle is here: the id names the target
            co = _entry_from_id(eid, eoff, esize, container)
            if co is None:
                rep.problems.append(f"bundle entry id {eid!r} names no GPU target")
        if co is not None:
            rep.entries.append(co)


def _ccob_label(base: int, hdr: B.CcobHeader) -> str:
    return f"ccob-v{hdr.version}-{hdr.method_name}@0x{base:x}"


def _walk_ccob(rep: FileReport, data, base: int, hdr: B.CcobHeader, deep: bool) -> int:
    """List the entries of the CCOB at ``data[base:]``; returns its compressed extent.

    v2/v3 without ``deep``: the decompressed head only (the entry table and ELF headers).
    Otherwise one streamed pass (``deep``; v1, which has no size to skip by): every entry is
    read as it comes out, and the size and MD5 are checked at the end."""
    view = memoryview(data)[base:]
    label = _ccob_label(base, hdr)
    if not deep and hdr.total_size is not None:
        if hdr.total_size > len(view):
            raise B.BundleError(f"CCOB at 0x{base:x} says it is {hdr.total_size:,} bytes, "
                                f"only {len(view):,} are there")
        head = B.ccob_head(view, hdr, CCOB_HEAD)
        _walk_bundle(rep, head, 0, False, label, limit=hdr.uncompressed_size)
        return hdr.total_size
    stream = B.CcobStream(view, hdr)
    for e, elf in B.iter_ccob_entries(stream, keep=None if deep else 64):
        co = _elf_entry(rep, elf, 0, e.size, e.entry_id, label, deep)
        del elf  # before the stream reads the next code object
        if co is not None:
            co.offset = e.offset
            rep.entries.append(co)
    assert stream.extent is not None
    return stream.extent


def _find_section(data, name: bytes):
    """(offset, size) of a section by name, from the section headers; None if absent."""
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


class Container(NamedTuple):
    """One bundle or CCOB found by ``iter_containers``: where, how far it may reach, and (for
    a CCOB) its header (a named tuple: a fat binary holds hundreds)."""
    offset: int
    limit: int                   # bytes from ``offset`` to the end of the region walked
    ccob: B.CcobHeader | None    # None for a plain bundle
    extent: int                  # its length
    entries: list[B.BundleEntry] | None = None   # a plain bundle's table

    @property
    def label(self) -> str:
        return f"bundle@0x{self.offset:x}" if self.ccob is None else _ccob_label(self.offset, self.ccob)


def iter_containers(data, off: int, size: int, where: str = ".hip_fatbin") -> Iterator[Container]:
    """Every bundle and CCOB in ``data[off:off + size]`` by structure: a ``.hip_fatbin``
    section, or a file of containers back to back (a dumped section, or bundles joined with
    ``cat``). Each starts right after the one before or at the next 4096-byte boundary
    ([HIPU] HIPCodeObjectAlign); zero bytes pad between them. Raises BundleError at bytes that
    are neither (after yielding what came before)."""
    pos = 0
    while pos < size:
        head = bytes(data[off + pos:off + min(pos + 32, size)])  # never past the region
        if head[:24] == B.BUNDLE_MAGIC:
            view = memoryview(data)[off + pos:off + size]
            entries = B.parse_bundle(view)
            extent = B.bundle_extent(entries)
            yield Container(off + pos, size - pos, None, extent, entries)
        elif head[:4] == B.CCOB_MAGIC:
            hdr = B.parse_ccob_header(head)
            extent = _ccob_extent(memoryview(data)[off + pos:off + size], hdr)
            yield Container(off + pos, size - pos, hdr, extent)
        elif head.count(0) == len(head):
            extent = 1  # padding between containers
        else:
            raise B.BundleError(f"unrecognised bytes in {where} at 0x{off + pos:x}")
        pos += max(extent, 1)
        nxt = bytes(data[off + pos:off + min(pos + 4, size)])
        if nxt not in (B.BUNDLE_MAGIC[:4], B.CCOB_MAGIC):
            aligned = min((pos + FATBIN_ALIGN - 1) // FATBIN_ALIGN * FATBIN_ALIGN, size)
            gap = bytes(data[off + pos:off + aligned])
            if gap != _ZEROS[:len(gap)]:   # (a memcmp; any() steps through each byte)
                stray = pos + len(gap) - len(gap.lstrip(b"\0"))
                raise B.BundleError(f"unrecognised bytes in {where} at 0x{off + stray:x}")
            pos = aligned


def _ccob_extent(view, hdr: B.CcobHeader) -> int:
    """A CCOB's compressed length: TotalFileSize; for v1 the end of its zstd frame, or (zlib)
    where its stream ends, found by streaming it once (bounded memory)."""
    stream = B.CcobStream(view, hdr, check_hash=False)
    if stream.extent is None:
        for _ in stream:
            pass
    assert stream.extent is not None
    return stream.extent


def _walk_containers(rep: FileReport, data, off: int, size: int, deep: bool, where: str,
                     focus: frozenset[str] | None = None) -> None:
    """List the entries of every container in a region; a damaged container is a problem and
    the walk goes on with the next one (its extent is known from its header)."""
    for c in iter_containers(data, off, size, where):
        try:
            if c.ccob is None:
                _walk_bundle(rep, data, c.offset, deep, c.label, limit=c.limit, entries=c.entries, focus=focus)
            else:
                _walk_ccob(rep, data, c.offset, c.ccob, deep)
        except B.BundleError as exc:
            rep.problems.append(f"{c.label}: {exc}")


def _inspect_host_elf(rep: FileReport, data, deep: bool, focus: frozenset[str] | None = None) -> None:
    hdr = parse_header(bytes(data[:64]))
    if hdr is None:
        rep.kind = "not-code-object"
        rep.problems.append("truncated ELF header")
        return
    sec = _find_section(data, b".hip_fatbin")
    if sec is None:
        rep.kind = "host-elf-no-device-code"
        rep.note = f"{machine_words(hdr.e_machine)} with no .hip_fatbin section (no GPU code)"
        return
    off, size = sec
    _walk_containers(rep, data, off, size, deep, ".hip_fatbin", focus)
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
    """Each device code object in ``path`` with its ELF bytes, one at a time (compressed
    bundles are streamed: memory holds one code object, whatever the headers claim).

    Raises ``BundleError`` when a container cannot be read, possibly after some entries (a
    CCOB's size and MD5 are known only at its end).
    """
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield from _elf_payloads(str(path), data)
    finally:
        try:
            data.close()
        except BufferError:
            pass


def _elf_payloads(path: str, data) -> Iterator[tuple[CodeObject, bytes]]:
    kind = classify(bytes(data[:64]))
    rep = FileReport(path, kind, len(data))
    if kind == "amdgpu-elf":
        co = _elf_entry(rep, data, 0, len(data), None, "elf", False)
        if co is not None:
            yield co, bytes(data)
        return

    if kind in ("offload-bundle", "ccob"):
        containers = iter_containers(data, 0, len(data), "the file")
    elif kind == "host-elf":
        sec = _find_section(data, b".hip_fatbin")
        containers = iter_containers(data, *sec) if sec is not None else iter(())
    else:
        return
    for c in containers:
        if c.ccob is None:
            for e in B.parse_bundle(memoryview(data)[c.offset:c.offset + c.limit]):
                if e.is_host or e.size == 0:
                    continue
                at = c.offset + e.offset
                co = _elf_entry(rep, data, at, e.size, e.entry_id, c.label, False)
                if co is not None:
                    yield co, bytes(data[at:at + e.size])
            continue
        for e, elf in B.iter_ccob_entries(B.CcobStream(memoryview(data)[c.offset:], c.ccob)):
            co = _elf_entry(rep, elf, 0, e.size, e.entry_id, c.label, False)
            if co is not None:
                co.offset = e.offset
                yield co, elf
            del elf  # the caller must drop its reference too: one code object at a time
