"""Does a file carry GPU device code? Decided by content, never by name: the first 64 bytes
(an AMDGPU ELF, ``e_machine`` 224; an offload bundle, ``__CLANG_OFFLOAD_BUNDLE__``; a compressed
bundle, ``CCOB``) and, for a host ELF only, its section headers and section-name table (a
``.hip_fatbin`` section). The cheap first pass of a whole-folder scan: only the files it keeps
are read by ``inspect.inspect_file``.

    with open_regular(path) as f:
        kind = sniff(f.fileno(), os.fstat(f.fileno()).st_size)   # 'host-elf', or None for a .py
"""
from __future__ import annotations

import os

from rocmrevive.codeobj.elf import parse_header, section_table
from rocmrevive.codeobj.inspect import classify

DEVICE_KINDS = ("amdgpu-elf", "offload-bundle", "ccob")
FATBIN_NAME = b"\0.hip_fatbin\0"
SHSTRTAB_MAX = 1 << 20   # a section-name table larger than this is not an ordinary ELF's
SHN_XINDEX = 0xFFFF


def sniff(fd: int, size: int, head: bytes | None = None) -> str | None:
    """The kind of device-code container ``fd`` is (``inspect.KINDS``: amdgpu-elf,
    offload-bundle, ccob, host-elf with a ``.hip_fatbin``), or None for a file with none. A host
    ELF whose section table cannot be read is kept (the deep read says what is wrong)."""
    if size < 64:
        return None
    head = head if head is not None else os.pread(fd, 64, 0)
    kind = classify(head)
    if kind in DEVICE_KINDS:
        return kind
    if kind != "host-elf":
        return None
    return kind if _names_fatbin(fd, head, size) else None


def _names_fatbin(fd: int, head: bytes, size: int) -> bool:
    """Whether the section-name table holds ``.hip_fatbin``: two reads past the header (the
    section table, the name table), never the sections themselves."""
    hdr = parse_header(head)
    if hdr is None:
        return False
    def read(n: int, at: int) -> bytes:
        return os.pread(fd, n, at)
    try:
        table = section_table(hdr, read, size)
    except ValueError:
        return True
    if not table or hdr.e_shstrndx == SHN_XINDEX:
        return bool(table)
    entry = hdr.e_shstrndx * hdr.e_shentsize
    if entry + 64 > len(table):
        return True
    off = int.from_bytes(table[entry + 24:entry + 32], "little")    # sh_offset (Elf64_Shdr)
    length = int.from_bytes(table[entry + 32:entry + 40], "little")  # sh_size
    if off + length > size or length > SHSTRTAB_MAX:
        return True
    return FATBIN_NAME in b"\0" + os.pread(fd, length, off)


__all__ = ["sniff", "DEVICE_KINDS"]
