"""The dynamic-linking view of one ELF shared object: what it is called (SONAME), what it needs
(DT_NEEDED, RPATH/RUNPATH, symbol versions from ``.gnu.version_r``) and what it defines
(``.gnu.version_d``, exported ``.dynsym`` entries). Read with pyelftools from the section
headers; only the small dynamic-linking sections are read, never the whole file (a 1 GB
librocblas costs a few hundred KiB of reads).

    obj = read_dynamic("/usr/lib/x86_64-linux-gnu/libc.so.6")
    obj.soname, obj.needed, obj.version_names()[:3]        # 'libc.so.6', ['ld-linux-x86-64.so.2'], ...

Facts from the System V gABI ("Dynamic Section", "Symbol Table") and the LSB "Symbol Versioning"
chapter: a ``.gnu.version`` entry is an index into the version definitions (1 = global, the
unversioned base) or the version requirements (``vna_other``); bit 15 marks a hidden
(non-default, ``name@V``) definition.
"""
from __future__ import annotations

import os
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rocmrevive.codeobj.elf import dynamic_tags

if TYPE_CHECKING:  # pyelftools is imported by read_dynamic, not by every command that asks a SONAME
    from elftools.elf.elffile import ELFFile  # noqa: PLC0415 — as above

# ELF constants (gABI)
SHN_UNDEF = 0
SHN_ABS = 0xFFF1
STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 1, 2, 10
# symbol types the dynamic loader binds to (glibc dl-lookup ALLOWED_STT)
_ALLOWED_STT = {0, 1, 2, 5, 6, 10}  # NOTYPE OBJECT FUNC COMMON TLS GNU_IFUNC
STT_TLS = 6
STV_INTERNAL, STV_HIDDEN = 1, 2
VER_FLG_BASE, VER_FLG_WEAK = 0x1, 0x2
VERSYM_HIDDEN = 0x8000
DF_BIND_NOW, DF_1_NOW, DF_1_NODEFLIB = 0x8, 0x1, 0x800


class DynamicError(Exception):
    """The file is not a dynamic ELF object the loader could use; the message says why."""


@dataclass(frozen=True)
class VersionNeed:
    """One required version: ``name`` (``GLIBC_2.38``) from the object called ``file``."""
    file: str
    name: str
    weak: bool
    index: int


@dataclass(frozen=True)
class UndefinedSymbol:
    name: str
    version: str | None  # the required version name, None when the reference is unversioned
    file: str | None     # the object the version is required from (verneed vn_file)
    weak: bool
    # named by a dynamic relocation: only then does the loader look it up. GCC 13+ adds an
    # undefined _ZSt21ios_base_library_initv with no relocation, just to require GLIBCXX_3.4.32.
    relocated: bool = True


@dataclass
class DynamicObject:
    path: Path                     # the real path read
    elf_class: int                 # 32 or 64
    machine: str                   # e_machine as pyelftools names it ('EM_X86_64')
    osabi: str
    soname: str | None = None
    needed: list[str] = field(default_factory=list)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    bind_now: bool = False
    nodeflib: bool = False
    verdefs: dict[int, str] = field(default_factory=dict)   # index -> version name (not the base)
    base_version: str | None = None
    verneeds: list[VersionNeed] = field(default_factory=list)
    undefined: list[UndefinedSymbol] = field(default_factory=list)
    has_versym: bool = False
    # where .dynsym/.dynstr/.gnu.version lie, to scan definitions only when asked
    _sym: tuple | None = None

    @property
    def abi(self) -> tuple[int, str]:
        """What the loader compares before it accepts a file: class and machine."""
        return self.elf_class, self.machine

    def version_names(self) -> list[str]:
        return [v for _, v in sorted(self.verdefs.items())]

    def definitions(self, wanted: set[str]) -> dict[str, list[tuple[str | None, bool, int]]]:
        """Exported definitions of the names in ``wanted``:
        ``name -> [(version name or None, hidden, versym index), ...]``."""
        out: dict[str, list[tuple[str | None, bool, int]]] = {}
        if self._sym is None or not wanted:
            return out
        (symoff, symsize, symfmt, entsize, stroff, strsize, veroff, versize,
         little) = self._sym
        with open(self.path, "rb") as f:
            f.seek(symoff)
            syms = f.read(symsize)
            f.seek(stroff)
            strtab = f.read(strsize)
            versym = None
            if veroff is not None:
                f.seek(veroff)
                versym = _versym_array(f.read(versize), little)
        for i, st_name, st_info, st_other, st_shndx, st_value in _symbols(syms, symfmt, entsize, self.elf_class):
            if st_shndx == SHN_UNDEF:
                continue
            bind, typ = st_info >> 4, st_info & 0xF
            if bind not in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE) or typ not in _ALLOWED_STT:
                continue
            if st_other & 3 in (STV_INTERNAL, STV_HIDDEN):
                continue
            if st_value == 0 and st_shndx != SHN_ABS and typ != STT_TLS:
                continue  # glibc check_match: a definition without a value is not one
            name = _name_at(strtab, st_name)
            if name not in wanted:
                continue
            if versym is not None and i < len(versym):
                raw = versym[i]
                ndx = raw & 0x7FFF
                out.setdefault(name, []).append((self.verdefs.get(ndx), bool(raw & VERSYM_HIDDEN), ndx))
            else:
                out.setdefault(name, []).append((None, False, 1))
        return out


def _symbols(syms: bytes, symfmt: str, entsize: int, elf_class: int):
    """``(index, st_name, st_info, st_other, st_shndx, st_value)`` of each symbol-table entry after
    the null entry 0."""
    entries = struct.iter_unpack(symfmt, syms[:len(syms) // entsize * entsize])
    next(entries, None)
    for i, fields in enumerate(entries, 1):
        yield (i, *_sym_fields(fields, elf_class))


def _name_at(strtab: bytes, off: int) -> str:
    end = strtab.find(b"\0", off)
    return strtab[off:end if end >= 0 else None].decode("utf-8", "replace")


def _versym_array(data: bytes, little: bool) -> array:
    """A ``.gnu.version`` section as an array of 16-bit version indexes."""
    vs = array("H", data)
    if not little:
        vs.byteswap()
    return vs


def _sym_fields(fields: tuple, elf_class: int) -> tuple[int, int, int, int, int]:
    if elf_class == 64:  # st_name st_info st_other st_shndx st_value st_size
        return fields[0], fields[1], fields[2], fields[3], fields[4]
    # ELF32: st_name st_value st_size st_info st_other st_shndx
    return fields[0], fields[3], fields[4], fields[5], fields[1]


def soname_of(path: str | Path) -> str | None:
    """The DT_SONAME of a shared object, or None (no SONAME, not a shared object, unreadable).

        soname_of("/opt/rocm/lib/librocblas.so")   # "librocblas.so.4"

    A 64-bit little-endian file (every x86-64 and AArch64 library) is read by
    ``codeobj.elf.dynamic_tags`` (the section table and .dynamic); any other by ``read_dynamic``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.pread(fd, 6, 0)[4:6] == b"\x02\x01":   # ELFCLASS64, ELFDATA2LSB
            tags = dynamic_tags(fd, os.fstat(fd).st_size)
            return tags.soname if tags is not None else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    try:
        return read_dynamic(path).soname
    except (DynamicError, OSError):
        return None


def read_dynamic(path: str | Path) -> DynamicObject:
    """Read the dynamic-linking facts of ``path``. Raises DynamicError for a file the loader
    would not take (not ELF, not a shared object/executable, no dynamic section)."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise DynamicError(f"cannot read {path}: {exc.strerror or exc}") from None
    from elftools.common.exceptions import ELFError  # noqa: PLC0415 — pyelftools, loaded only for a full dynamic read (a SONAME needs none)
    from elftools.elf.elffile import ELFFile  # noqa: PLC0415 — as above

    with f:
        head = f.read(4)
        if head != b"\x7fELF":
            raise DynamicError(f"{path} is not an ELF file")
        f.seek(0)
        try:
            elf = ELFFile(f)
            return _read(elf, path)
        except (ELFError, struct.error, ValueError, OSError) as exc:
            raise DynamicError(f"{path}: unreadable ELF ({exc})") from None


def _read(elf: ELFFile, path: Path) -> DynamicObject:
    if elf["e_type"] not in ("ET_DYN", "ET_EXEC"):
        raise DynamicError(f"{path} is {elf['e_type']}, not a shared object")
    obj = DynamicObject(path=path, elf_class=elf.elfclass, machine=elf["e_machine"],
                        osabi=elf["e_ident"]["EI_OSABI"])
    secs = _DynSections.find(elf)
    if secs.dynamic is None:
        if elf.num_sections() == 0:
            raise DynamicError(f"{path} has no section headers (stripped to segments only); "
                               f"cannot read its dynamic section")
        raise DynamicError(f"{path} has no dynamic section (a static object)")
    _read_tags(obj, secs.dynamic)
    if secs.verdef is not None:
        _read_verdefs(obj, secs.verdef)
    need_by_index = _read_verneeds(obj, secs.verneed) if secs.verneed is not None else {}
    if secs.dynsym is not None:
        used = _relocated_symbols(elf, [r for r in secs.relocs if r["sh_link"] == secs.dynsym_index])
        _read_undefined(elf, obj, secs.dynsym, secs.versym, need_by_index, used)
    return obj


@dataclass
class _DynSections:
    """The dynamic-linking sections of one ELF file, found from its section headers."""
    dynamic: object = None
    dynsym: object = None
    dynsym_index: int | None = None
    versym: object = None
    verdef: object = None
    verneed: object = None
    relocs: list = field(default_factory=list)

    _BY_TYPE = {"SHT_DYNAMIC": "dynamic", "SHT_GNU_versym": "versym", "SHT_GNU_verdef": "verdef",
                "SHT_GNU_verneed": "verneed"}

    @classmethod
    def find(cls, elf: ELFFile) -> "_DynSections":
        found = cls()
        for i, sec in enumerate(elf.iter_sections()):
            t = sec["sh_type"]
            if t in ("SHT_RELA", "SHT_REL"):
                found.relocs.append(sec)
            elif t == "SHT_DYNSYM":
                found.dynsym, found.dynsym_index = sec, i
            elif t in cls._BY_TYPE:
                setattr(found, cls._BY_TYPE[t], sec)
        return found


def _read_tags(obj: DynamicObject, dynamic) -> None:
    """SONAME, DT_NEEDED, the search paths and the binding flags from the dynamic section."""
    for tag in dynamic.iter_tags():
        d = tag.entry.d_tag
        if d == "DT_NEEDED":
            obj.needed.append(tag.needed)
        elif d == "DT_SONAME":
            obj.soname = tag.soname
        elif d == "DT_RPATH":
            obj.rpath.extend(tag.rpath.split(":"))
        elif d == "DT_RUNPATH":
            obj.runpath.extend(tag.runpath.split(":"))
        elif d == "DT_FLAGS":
            obj.bind_now |= bool(tag.entry.d_val & DF_BIND_NOW)
        elif d == "DT_FLAGS_1":
            obj.bind_now |= bool(tag.entry.d_val & DF_1_NOW)
            obj.nodeflib = bool(tag.entry.d_val & DF_1_NODEFLIB)
        elif d == "DT_BIND_NOW":
            obj.bind_now = True
    if obj.runpath:
        obj.rpath = []  # glibc: with DT_RUNPATH present, DT_RPATH is ignored


def _read_verdefs(obj: DynamicObject, verdef) -> None:
    """The versions the object defines (``.gnu.version_d``); the base one is its own name."""
    for vd, auxes in verdef.iter_versions():
        names = [a.name for a in auxes]
        if not names:
            continue
        if vd["vd_flags"] & VER_FLG_BASE:
            obj.base_version = names[0]
        else:
            obj.verdefs[vd["vd_ndx"]] = names[0]


def _read_verneeds(obj: DynamicObject, verneed) -> dict[int, VersionNeed]:
    """The versions the object requires (``.gnu.version_r``), by their ``vna_other`` index."""
    need_by_index: dict[int, VersionNeed] = {}
    for vn, auxes in verneed.iter_versions():
        for a in auxes:
            need = VersionNeed(vn.name, a.name, bool(a["vna_flags"] & VER_FLG_WEAK), a["vna_other"])
            obj.verneeds.append(need)
            need_by_index[a["vna_other"]] = need
    return need_by_index


def _relocated_symbols(elf, sections) -> set[int]:
    """Indexes of the .dynsym entries that dynamic relocations name (r_info's symbol field)."""
    e = "<" if elf.little_endian else ">"
    if elf.elfclass == 64:
        fmt, shift = e + "QQ", 32  # r_offset, r_info (an Elf64_Rela's addend is not needed)
    else:
        fmt, shift = e + "II", 8
    used: set[int] = set()
    for sec in sections:
        ent = sec["sh_entsize"] or (24 if elf.elfclass == 64 else 8)
        data = sec.data()
        step = struct.calcsize(fmt)
        for off in range(0, len(data) - step + 1, ent):
            used.add(struct.unpack_from(fmt, data, off)[1] >> shift)
    return used


def _read_undefined(elf, obj: DynamicObject, dynsym, versym, need_by_index, used: set[int]) -> None:
    little = elf.little_endian
    e = "<" if little else ">"
    symfmt = e + ("IBBHQQ" if elf.elfclass == 64 else "IIIBBH")
    entsize = struct.calcsize(symfmt)
    strsec = elf.get_section(dynsym["sh_link"])
    veroff = versize = None
    if versym is not None:
        obj.has_versym = True
        veroff, versize = versym["sh_offset"], versym["sh_size"]
    obj._sym = (dynsym["sh_offset"], dynsym["sh_size"], symfmt, entsize,
                strsec["sh_offset"], strsec["sh_size"], veroff, versize, little)
    syms = dynsym.data()
    strtab = strsec.data()
    vs = _versym_array(versym.data(), little) if versym is not None else None
    for i, st_name, st_info, _other, st_shndx, _value in _symbols(syms, symfmt, entsize, elf.elfclass):
        if st_shndx != SHN_UNDEF or st_name == 0:
            continue
        bind = st_info >> 4
        if bind not in (STB_GLOBAL, STB_WEAK):
            continue
        name = _name_at(strtab, st_name)
        need = None
        if vs is not None and i < len(vs):
            ndx = vs[i] & 0x7FFF
            if ndx >= 2:
                need = need_by_index.get(ndx)
        obj.undefined.append(UndefinedSymbol(name, need.name if need else None,
                                             need.file if need else None, bind == STB_WEAK,
                                             i in used))
