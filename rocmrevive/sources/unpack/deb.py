"""The ``ar`` container of a Debian package (deb(5)): ``debian-binary``, ``control.tar.*`` and one
``data.tar.{xz,zst,gz,bz2}``. Only the data tarball's byte range is wanted; it is found by reading
the 60-byte member headers, never by unpacking anything.

    with open("librocblas4_6.4.4-4_amd64.deb", "rb") as f:
        member, compression = data_tar(f, os.fstat(f.fileno()).st_size)
    member.name, member.offset, compression          # "data.tar.xz", 1708, "xz"
"""
from __future__ import annotations

from typing import BinaryIO, NamedTuple

from rocmrevive.sources.unpack.decompress import compression_of
from rocmrevive.sources.unpack.limits import ArchiveError

AR_MAGIC = b"!<arch>\n"
_HEADER = 60
# data.tar's suffix -> compression (deb(5)); .lzma is legal there but refused here
_EXT = {".xz": "xz", ".zst": "zst", ".gz": "gz", ".bz2": "bz2", "": "none"}


class ArMember(NamedTuple):
    name: str
    offset: int  # of its data in the .deb
    size: int


def read_ar(f: BinaryIO, size: int) -> list[ArMember]:
    """Every member of an ``ar`` archive of ``size`` bytes, checking each 60-byte header."""
    f.seek(0)
    if f.read(len(AR_MAGIC)) != AR_MAGIC:
        raise ArchiveError("not an ar archive (bad magic), so not a Debian package")
    pos, out = len(AR_MAGIC), []
    while pos < size:
        f.seek(pos)
        hdr = f.read(_HEADER)
        if len(hdr) == 1 and hdr == b"\n":  # trailing padding
            break
        if len(hdr) < _HEADER:
            raise ArchiveError(f"ar header at offset {pos} is truncated")
        if hdr[58:60] != b"`\n":
            raise ArchiveError(f"bad ar header at offset {pos} (no end marker)")
        name = hdr[0:16].rstrip(b" ").decode("ascii", "replace")
        if name.endswith("/") and name != "/":
            name = name[:-1]
        field = hdr[48:58].strip()
        if not field.isdigit():
            raise ArchiveError(f"bad ar header at offset {pos} (size {field!r})")
        msize = int(field)
        data = pos + _HEADER
        if data + msize > size:
            raise ArchiveError(f"ar member {name} is truncated: it declares {msize} bytes, "
                               f"{max(0, size - data)} are there")
        out.append(ArMember(name, data, msize))
        pos = data + msize + (msize & 1)
    return out


def data_tar(f: BinaryIO, size: int) -> tuple[ArMember, str]:
    """The package's one ``data.tar.*`` member and its compression ("xz", "zst", "gz", "bz2" or
    "none"), checked against the magic of its first bytes; a package that is not format 2.x,
    has no or several data tarballs, or whose data does not match its name is refused."""
    members = read_ar(f, size)
    if not members or members[0].name != "debian-binary":
        raise ArchiveError("first ar member is not debian-binary, so not a Debian package")
    f.seek(members[0].offset)
    if not f.read(min(members[0].size, 16)).startswith(b"2."):
        raise ArchiveError("debian-binary is not format 2.x")
    data = [m for m in members if m.name.startswith("data.tar")]
    if len(data) != 1:
        raise ArchiveError(f"{len(data)} data.tar members (expected one)")
    member = data[0]
    comp = _EXT.get(member.name[len("data.tar"):])
    if comp is None:
        raise ArchiveError(f"{member.name}: unsupported compression")
    f.seek(member.offset)
    if (compression_of(f.read(6)) or "none") != comp:
        raise ArchiveError(f"{member.name} does not hold {comp} data")
    return member, comp
