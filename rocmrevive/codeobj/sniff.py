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

from rocmrevive.codeobj.bundle import BUNDLE_MAGIC, CCOB_MAGIC
from rocmrevive.codeobj.elf import ELF_MAGIC, parse_header, section_table

DEVICE_KINDS = ("amdgpu-elf", "offload-bundle", "ccob")
FATBIN_NAME = b"\0.hip_fatbin\0"
SHSTRTAB_MAX = 1 << 20   # a section-name table larger than this is not an ordinary ELF's
SHN_XINDEX = 0xFFFF


def classify(head: bytes) -> str:
    """The kind of a file from its first bytes (at least 64 for ELF files)."""
    if not head:
        return "empty"
    if head[:4] == ELF_MAGIC:
        hdr = parse_header(head[:64])
        if hdr is not None and hdr.is_amdgpu:
            return "amdgpu-elf"
        return "host-elf"  # refined by looking for .hip_fatbin
    if head[:24] == BUNDLE_MAGIC:
        return "offload-bundle"
    if head[:4] == CCOB_MAGIC:
        return "ccob"
    if _is_tensile_head(head):
        return "tensile-dat"
    return "not-code-object"


def _is_tensile_head(head: bytes) -> bool:
    """A msgpack map whose first key is ``solutions`` or ``library``: a Tensile library (the
    lazy master index included) whichever order its writer put the two keys in."""
    if not head:
        return False
    first = head[0]
    pos = 1 if 0x80 <= first <= 0x8F else 3 if first == 0xDE else 5 if first == 0xDF else 0
    if not pos or len(head) <= pos:
        return False
    for key in (b"solutions", b"library"):
        if head[pos:pos + 1 + len(key)] == bytes([0xA0 | len(key)]) + key:
            return True
    return False


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


__all__ = ["sniff", "classify", "DEVICE_KINDS"]
