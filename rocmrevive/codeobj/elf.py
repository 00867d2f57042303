"""Raw AMDGPU ELF code objects.

Two depths: ``parse_header`` reads the 64-byte ELF header with one ``struct`` call (enough
for the processor and features: AMDGPUUsage "Header" and e_flags tables); ``read_amdgpu_elf``
goes deeper, walking the section table with ``struct`` too, and merges every
NT_AMDGPU_METADATA note and the ``*.kd`` kernel descriptors.

    hdr = parse_header(open("x.hsaco", "rb").read(64)); str(hdr.target())   # 'gfx906:xnack-'
"""
from __future__ import annotations

import functools
import operator
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import msgpack

from rocmrevive.codeobj.targetid import ANY, OFF, ON, TargetId

ELF_MAGIC = b"\x7fELF"
EM_AMDGPU = 224
ELFOSABI_NONE, ELFOSABI_AMDGPU_HSA, ELFOSABI_AMDGPU_PAL, ELFOSABI_AMDGPU_MESA3D = 0, 64, 65, 66
ET_REL, ET_EXEC, ET_DYN = 1, 2, 3

# EF_AMDGPU_MACH values (llvm/BinaryFormat/ELF.h; AMDGPUUsage "AMDGPU EF_AMDGPU_MACH Values").
MACH_NAMES: dict[int, str] = {
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702",
    0x025: "gfx703", 0x026: "gfx704", 0x028: "gfx801", 0x029: "gfx802", 0x02a: "gfx803",
    0x02b: "gfx810", 0x02c: "gfx900", 0x02d: "gfx902", 0x02e: "gfx904", 0x02f: "gfx906",
    0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c", 0x033: "gfx1010", 0x034: "gfx1011",
    0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032", 0x039: "gfx1033",
    0x03a: "gfx602", 0x03b: "gfx705", 0x03c: "gfx805", 0x03d: "gfx1035", 0x03e: "gfx1034",
    0x03f: "gfx90a", 0x040: "gfx940", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150",
    0x044: "gfx1103", 0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200",
    0x049: "gfx1250", 0x04a: "gfx1151", 0x04b: "gfx941", 0x04c: "gfx942", 0x04e: "gfx1201",
    0x04f: "gfx950", 0x051: "gfx9-generic", 0x052: "gfx10-1-generic", 0x053: "gfx10-3-generic",
    0x054: "gfx11-generic", 0x055: "gfx1152", 0x058: "gfx1153", 0x059: "gfx12-generic",
    0x05a: "gfx1251", 0x05f: "gfx9-4-generic",
}
EF_AMDGPU_MACH = 0x0FF
EF_XNACK_V3, EF_SRAMECC_V3 = 0x100, 0x200
EF_XNACK_V4, EF_SRAMECC_V4 = 0x300, 0xC00
_V4_XNACK = {0x000: None, 0x100: ANY, 0x200: OFF, 0x300: ON}
_V4_SRAMECC = {0x000: None, 0x400: ANY, 0x800: OFF, 0xC00: ON}
EF_AMDGPU_GENERIC_VERSION_SHIFT = 24

NT_AMD_HSA_ISA_VERSION = 3
NT_AMDGPU_METADATA = 32

_HDR = struct.Struct("<16sHHIQQQIHHHHHH")  # ELF64 header, 64 bytes


@dataclass(frozen=True)
class ElfHeader:
    ei_class: int
    ei_data: int
    osabi: int
    abiversion: int
    e_type: int
    e_machine: int
    e_flags: int
    e_shoff: int
    e_shentsize: int
    e_shnum: int
    e_shstrndx: int
    e_phoff: int = 0
    e_phentsize: int = 0
    e_phnum: int = 0

    @property
    def is_amdgpu(self) -> bool:
        return self.e_machine == EM_AMDGPU

    @property
    def co_version(self) -> int | None:
        """Code object version: EI_ABIVERSION + 2 for the HSA OS ABI (AMDGPUUsage "Header")."""
        if self.osabi == ELFOSABI_AMDGPU_HSA:
            return self.abiversion + 2
        return None

    @property
    def mach(self) -> int:
        return self.e_flags & EF_AMDGPU_MACH

    @property
    def processor(self) -> str | None:
        return MACH_NAMES.get(self.mach)

    @property
    def generic_version(self) -> int:
        return self.e_flags >> EF_AMDGPU_GENERIC_VERSION_SHIFT if (self.co_version or 0) >= 6 else 0

    def target(self) -> TargetId | None:
        """The target id the e_flags describe, or None for an unknown mach value."""
        return elf_target(self.osabi, self.abiversion, self.e_flags)


@functools.lru_cache(maxsize=1024)   # a fat binary repeats a few headers' flags hundreds of times
def elf_target(osabi: int, abiversion: int, e_flags: int) -> TargetId | None:
    """``ElfHeader.target`` from the fields it reads (TargetId is frozen: one instance is shared)."""
    proc = MACH_NAMES.get(e_flags & EF_AMDGPU_MACH)
    if proc is None:
        return None
    base = TargetId.parse(proc)  # which features the processor supports at all
    cov = abiversion + 2 if osabi == ELFOSABI_AMDGPU_HSA else None
    if cov is not None and cov >= 4:
        xnack = _V4_XNACK[e_flags & EF_XNACK_V4]
        sramecc = _V4_SRAMECC[e_flags & EF_SRAMECC_V4]
    elif cov == 3:
        # V3 has one bit per feature: set means enabled (LLVM also sets it when the
        # feature was not specified, so V3 cannot express "any").
        xnack = ON if e_flags & EF_XNACK_V3 else OFF
        sramecc = ON if e_flags & EF_SRAMECC_V3 else OFF
    else:
        # V2 (and PAL/Mesa objects): the processor comes from the ISA note, features are
        # not in e_flags (LLVM writes the V3 bits anyway, so they must not be read).
        xnack = sramecc = ANY
    return TargetId(proc,
                    sramecc if base.sramecc is not None else None,
                    xnack if base.xnack is not None else None)


def parse_header(data: bytes) -> ElfHeader | None:
    """Parse an ELF64 little-endian header from the first 64 bytes; None if it is not one."""
    if len(data) < 64 or data[:4] != ELF_MAGIC:
        return None
    ident, e_type, e_machine, _ver, _entry, phoff, shoff, flags, _ehsize, phentsize, phnum, \
        shentsize, shnum, shstrndx = _HDR.unpack_from(data, 0)
    return ElfHeader(ident[4], ident[5], ident[7], ident[8], e_type, e_machine, flags,
                     shoff, shentsize, shnum, shstrndx, phoff, phentsize, phnum)


# e_machine values of the hosts a GPU library is built for (ELF.h), to say what a file is.
MACHINE_NAMES = {3: "i386", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 22: "s390x", 40: "ARM",
                 43: "SPARC V9", 62: "x86-64", 183: "AArch64", 224: "AMDGPU", 243: "RISC-V",
                 258: "LoongArch"}


def machine_words(e_machine: int) -> str:
    """``62`` -> ``an x86-64 ELF``; an unknown value keeps its number."""
    name = MACHINE_NAMES.get(e_machine)
    if name is None:
        return f"an ELF for machine {e_machine}"
    return f"{'an' if name[0] in 'AEIOUx' else 'a'} {name} ELF"


_SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
SHT_NOBITS = 8
SPANS_MAX = 256   # section tables of up to this many entries are read in one struct call


@functools.lru_cache(maxsize=SPANS_MAX)
def section_spans(count: int) -> struct.Struct:
    """sh_type, sh_offset, sh_size of ``count`` Elf64_Shdr entries back to back."""
    return struct.Struct("<" + "4xI16xQQ24x" * count)


def truncation_problem(hdr: ElfHeader, size: int, section_headers=None) -> str | None:
    """Why an ELF of ``size`` bytes whose header parsed is cut short (its program or section
    headers, or a section's bytes, lie past the end); None when everything is there.
    ``section_headers`` are the bytes at ``e_shoff`` (the table), when the caller has them.
    Reads the section headers only: cheap enough for a whole-folder scan."""
    tables = (("program headers", hdr.e_phoff, hdr.e_phnum * hdr.e_phentsize),
              ("section headers", hdr.e_shoff, hdr.e_shnum * hdr.e_shentsize))
    for what, off, length in tables:
        if off and length and off + length > size:
            return f"truncated: its {what} end at byte {off + length:,}, the file has {size:,}"
    if section_headers is None or not hdr.e_shoff or hdr.e_shentsize != _SHDR.size:
        return None
    count = min(hdr.e_shnum, len(section_headers) // _SHDR.size)
    if 0 < count <= SPANS_MAX:
        # every section's (type, offset, size) in one struct call: a fat binary has hundreds
        # of code objects; when no section reaches past the end, none can be cut
        spans = section_spans(count).unpack_from(section_headers)
        if max(map(operator.add, spans[1::3], spans[2::3])) <= size:
            return None
    for i in range(count):
        _name, sh_type, _fl, _addr, off, length, *_ = _SHDR.unpack_from(section_headers, i * _SHDR.size)
        if sh_type != SHT_NOBITS and length and off + length > size:
            return f"truncated: section {i} ends at byte {off + length:,}, the file has {size:,}"
    return None


def header_problem(hdr: ElfHeader | None, data: bytes) -> str | None:
    """Why an ELF header cannot be an AMDGPU HSA code object (None when it can)."""
    if hdr is None:
        if data[:4] == ELF_MAGIC:
            return "truncated ELF header"
        return "not an ELF file"
    if hdr.ei_class != 2 or hdr.ei_data != 1:
        return f"ELF class {hdr.ei_class}/data {hdr.ei_data}: not a 64-bit little-endian object"
    if not hdr.is_amdgpu:
        return f"{machine_words(hdr.e_machine)}, not an AMDGPU code object"
    if hdr.processor is None:
        return f"unknown AMDGPU processor (EF_AMDGPU_MACH 0x{hdr.mach:03x})"
    return None


# ----------------------------------------------------------------------------------------
# Deep reading: notes and symbols

@dataclass
class AmdgpuElf:
    header: ElfHeader
    target: TargetId
    note_targets: list[str] = field(default_factory=list)
    kernel_names: set[str] = field(default_factory=set)
    kd_symbols: set[str] = field(default_factory=set)
    notes: int = 0
    problems: list[str] = field(default_factory=list)  # the loader refuses it, or it cannot be read
    remarks: list[str] = field(default_factory=list)   # odd, but the loader takes it

    @property
    def co_version(self) -> int | None:
        return self.header.co_version

    @property
    def e_flags(self) -> int:
        return self.header.e_flags


def read_amdgpu_elf(data: bytes | bytearray) -> AmdgpuElf:
    """Read an AMDGPU ELF fully: target from e_flags, every metadata note, kernel descriptors.

    Raises ValueError when the bytes are not an AMDGPU ELF. Disagreements between e_flags and
    a note's ``amdhsa.target`` and notes that cannot be decoded are listed in ``problems``;
    hostile bytes never raise anything else.
    """
    view = memoryview(data)
    return read_amdgpu_elf_at(lambda n, off: bytes(view[off:off + n]), len(data))


def read_amdgpu_elf_file(fd: int, size: int) -> AmdgpuElf:
    """``read_amdgpu_elf`` of the open file ``fd`` of ``size`` bytes, reading only the header,
    the section table and the note and symbol sections (a Tensile code object is mostly code,
    which this never reads)."""
    return read_amdgpu_elf_at(lambda n, off: os.pread(fd, n, off), size)


def read_amdgpu_elf_at(read: Callable[[int, int], bytes], size: int) -> AmdgpuElf:
    """The deep read over ``read(length, offset)`` of an ELF of ``size`` bytes. The section
    table is walked with ``struct`` (Elf64_Shdr), every offset checked against ``size``."""
    head = read(64, 0)
    hdr = parse_header(head)
    why = header_problem(hdr, head)
    if why:
        raise ValueError(why)
    assert hdr is not None
    target = hdr.target()
    assert target is not None
    obj = AmdgpuElf(header=hdr, target=target)
    obj.problems.extend(loader_problems(hdr))
    if hdr.e_shoff + hdr.e_shnum * hdr.e_shentsize > size:
        obj.problems.append("section headers lie past the end of the file (truncated)")
        return obj
    try:
        table = sections(hdr, read, size)
        for sh_type, off, length, link in table:
            if sh_type == SHT_NOTE:
                _read_notes(obj, section_bytes(read, size, off, length, "note section"))
            elif sh_type == SHT_DYNSYM:
                if link >= len(table):
                    raise ValueError(f"a symbol table links to section {link} of {len(table)}")
                _s_type, s_off, s_len, _l = table[link]
                _read_kd_symbols(obj, section_bytes(read, size, off, length, "symbol table"),
                                 section_bytes(read, size, s_off, s_len, "symbol table"))
    except (ValueError, OSError, struct.error) as exc:
        obj.problems.append(f"cannot read sections: {exc}")
        return obj
    _cross_check(obj)
    return obj


# EI_ABIVERSION of the HSA OS ABI: 0-4 are code object v2-v6 (AMDGPUUsage "Header").
KNOWN_ABI_VERSIONS = range(0, 5)


def loader_problems(hdr: ElfHeader) -> list[str]:
    """Why ROCr's loader refuses a code object whose header parsed (amd_hsa_code.cpp GetIsa and
    the executable's checks): the OS ABI must be ELFOSABI_AMDGPU_HSA, its ABI version one the
    loader knows. The ISA comes from e_flags, never from the metadata note."""
    if hdr.osabi != ELFOSABI_AMDGPU_HSA:
        return [f"EI_OSABI is {hdr.osabi}, not ELFOSABI_AMDGPU_HSA ({ELFOSABI_AMDGPU_HSA}): "
                "ROCr's loader refuses it"]
    if hdr.abiversion not in KNOWN_ABI_VERSIONS:
        return [f"EI_ABIVERSION {hdr.abiversion} (code object v{hdr.abiversion + 2}) is not a "
                "code object version any ROCm loads"]
    return []


_SHDR_TABLE_MAX = 0xFF00  # e_shnum's largest ordinary value (SHN_LORESERVE); LLVM writes a few dozen
SHT_NOTE, SHT_DYNSYM = 7, 11


def section_table(hdr: ElfHeader, read: Callable[[int, int], bytes], size: int) -> bytes:
    """The raw section header table of an ELF of ``size`` bytes, through ``read(length,
    offset)`` (``os.pread``'s order); b"" when it has none. ValueError when the table cannot be
    read: another entry size, more sections than an ELF numbers ordinarily, past the end."""
    if not hdr.e_shoff:
        return b""
    if hdr.e_shentsize != _SHDR.size:
        raise ValueError(f"section headers of {hdr.e_shentsize} bytes, not {_SHDR.size}")
    count = hdr.e_shnum
    if count == 0:  # extended numbering: the count is section 0's sh_size
        count = _SHDR.unpack(section_bytes(read, size, hdr.e_shoff, _SHDR.size, "the section table"))[5]
    if count > _SHDR_TABLE_MAX:
        raise ValueError(f"a section table of {count:,} entries")
    return section_bytes(read, size, hdr.e_shoff, count * _SHDR.size, "the section table")


def sections(hdr: ElfHeader, read: Callable[[int, int], bytes], size: int) -> list[tuple[int, int, int, int]]:
    """(sh_type, sh_offset, sh_size, sh_link) of every section, read through ``read(length,
    offset)``; ValueError as ``section_table``."""
    return [(t, off, length, link) for _n, t, _f, _a, off, length, link, _i, _al, _es
            in _SHDR.iter_unpack(section_table(hdr, read, size))]


def section_bytes(read: Callable[[int, int], bytes], size: int, off: int, length: int,
                  what: str) -> bytes:
    """``length`` bytes at ``off`` of an ELF of ``size`` bytes; ValueError when they lie past its
    end (or the file shrank under the reader)."""
    if off + length > size:
        raise ValueError(f"{what} lies past the end of the file")
    data = read(length, off)
    if len(data) != length:  # the file shrank under the reader
        raise ValueError(f"{what} lies past the end of the file")
    return data


SHT_DYNAMIC, DT_NULL, DT_NEEDED, DT_SONAME = 6, 0, 1, 14
ET_EXEC, ET_DYN = 2, 3
DYNAMIC_MAX = 1 << 20   # a .dynamic larger than this is not read (a few hundred bytes in practice)
_NAME_MAX = 4096        # the most of a library name read from .dynstr


@dataclass(frozen=True)
class DynamicTags:
    """What a host shared object is called and what it needs (DT_SONAME, DT_NEEDED)."""

    soname: str | None
    needed: tuple[str, ...]


def dynamic_tags(fd: int, size: int) -> DynamicTags | None:
    """DT_SONAME and DT_NEEDED of the 64-bit little-endian ELF shared object or executable open at
    ``fd``: its section table, ``.dynamic`` and, of the string table that section links, only
    the names it points at, by ``pread`` (never the whole file: a C++ library's string table is
    megabytes). None when it is not such a file or has no dynamic section (or one over
    ``DYNAMIC_MAX``); ValueError when its tables lie past its end."""
    hdr = parse_header(os.pread(fd, 64, 0))
    if hdr is None or hdr.ei_class != 2 or hdr.ei_data != 1 or hdr.e_type not in (ET_EXEC, ET_DYN):
        return None
    read = functools.partial(os.pread, fd)
    table = sections(hdr, read, size)
    dyn = next((sh for sh in table if sh[0] == SHT_DYNAMIC), None)
    if dyn is None or dyn[3] >= len(table) or dyn[2] > DYNAMIC_MAX:
        return None
    entries = section_bytes(read, size, dyn[1], dyn[2], ".dynamic")
    _t, str_off, str_size, _l = table[dyn[3]]
    if str_off + str_size > size:
        raise ValueError(".dynstr lies past the end of the file")

    def text(at: int) -> str:
        chunk = read(min(_NAME_MAX, str_size - at), str_off + at)
        end = chunk.find(b"\0")
        return chunk[:end if end >= 0 else len(chunk)].decode("utf-8", "replace")
    soname, needed = None, []
    for tag, value in struct.iter_unpack("<qQ", entries[:len(entries) - len(entries) % 16]):
        if tag == DT_NULL:
            break
        if tag == DT_NEEDED and value < str_size:
            needed.append(text(value))
        elif tag == DT_SONAME and value < str_size:
            soname = text(value)
    return DynamicTags(soname, tuple(needed))


_SYM = struct.Struct("<IBBHQQ")  # Elf64_Sym: name, info, other, shndx, value, size
STT_OBJECT = 1


def _read_kd_symbols(obj: AmdgpuElf, table: bytes, strs: bytes) -> None:
    # Tensile .co files have thousands of symbols: fixed-size records read with struct.
    for name, info, _other, shndx, _value, _size in _SYM.iter_unpack(table[:len(table) - len(table) % 24]):
        if info & 0xF != STT_OBJECT or shndx == 0 or name >= len(strs):
            continue
        end = strs.find(b"\0", name)
        sym = strs[name:end if end >= 0 else len(strs)]
        if sym.endswith(b".kd"):
            obj.kd_symbols.add(sym[:-3].decode("utf-8", "replace"))


def _read_notes(obj: AmdgpuElf, data: bytes) -> None:
    # Walk the notes by hand: AMDGPU's msgpack descriptors are decoded with msgpack, and one
    # Tensile .co holds one note per kernel (FORMATS §2), so this must stay cheap.

    off, end = 0, len(data)
    while off + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        name_off = off + 12
        desc_off = name_off + ((namesz + 3) & ~3)
        nxt = desc_off + ((descsz + 3) & ~3)
        if nxt > end:
            obj.problems.append("note runs past the end of its section")
            return
        name = data[name_off:name_off + namesz].rstrip(b"\0")
        if name == b"AMDGPU" and ntype == NT_AMDGPU_METADATA:
            obj.notes += 1
            try:
                meta = msgpack.unpackb(data[desc_off:desc_off + descsz], raw=False,
                                       strict_map_key=False)
            except Exception as exc:  # noqa: BLE001 - msgpack raises ValueError, TypeError and its own types on bad input
                obj.problems.append(f"metadata note {obj.notes} is not valid msgpack: {exc}")
            else:
                if isinstance(meta, dict):
                    tgt = meta.get("amdhsa.target")
                    if isinstance(tgt, str):
                        obj.note_targets.append(tgt)
                    for k in meta.get("amdhsa.kernels") or []:
                        if isinstance(k, dict) and isinstance(k.get(".name"), str):
                            obj.kernel_names.add(k[".name"])
        off = nxt


def _cross_check(obj: AmdgpuElf) -> None:
    want = str(obj.target)
    seen = set()
    for t in obj.note_targets:
        if t in seen:
            continue
        seen.add(t)
        try:
            note_tid = TargetId.parse(t)
        except ValueError:
            obj.problems.append(f"metadata note names an unparsable target {t!r}")
            continue
        if note_tid.processor != obj.target.processor:
            obj.problems.append(f"e_flags say {want} but a metadata note says {note_tid}")
        elif str(note_tid) != want:
            # ROCr takes the ISA from e_flags: a note less specific than them is no damage
            obj.remarks.append(f"e_flags say {want}, a metadata note says {note_tid} (the loader reads e_flags)")
