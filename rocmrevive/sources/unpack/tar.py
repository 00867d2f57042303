"""The tar stream inside a package or a tarball (POSIX ustar, GNU long names and base-256 numbers,
pax headers), read once, header by header: ``TarReader.members()`` yields each member and skips
the data the caller did not read, without copying it; ``copy_to`` writes the data of the member
just yielded to a descriptor, hashing on the way (``rocmrevive.fs.copy_fd``, the one
copy-and-hash loop).

Path safety is checked here, for every member, selected or not: a name that is absolute, climbs
out with ``..`` or holds a NUL byte is refused. Only a regular file may be copied out:
``TarMember.check_regular`` refuses a link (naming its target), a device, a fifo or a folder.
Corrupt headers, truncated streams and bombs (too many members, huge long names, a stream
expanding past ``Limits.max_stream_bytes``) are ArchiveErrors.

    reader = TarReader(open_stream(f, 0, size, "xz", external=True), "tarball", Limits())
    for m in reader.members():
        if m.name.endswith(".hsaco"):
            m.check_regular()
            sha256 = reader.copy_to(m, fd)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from rocmrevive.fs import copy_fd
from rocmrevive.hashing import CHUNK
from rocmrevive.sources.unpack.limits import ArchiveError, Limits
from rocmrevive.sources.unpack.stream import Stream
from rocmrevive.units import size_text

BLOCK = 512
_ZERO = bytes(BLOCK)
_META = (b"L", b"K", b"x", b"g")  # GNU long name / long link, pax, global pax: metadata for the next header
_NO_DATA = (b"1", b"2", b"3", b"4", b"5", b"6")  # links, devices, folders, fifos: no data whatever the size
_REGULAR = (b"0", b"\x00", b"7")
_TYPE_NAMES = {b"1": "a hard link", b"2": "a symbolic link", b"3": "a character device",
               b"4": "a block device", b"5": "a folder", b"6": "a fifo", b"S": "a sparse file",
               b"M": "a multi-volume continuation", b"V": "a volume label", b"D": "a GNU dump folder"}

def is_tar_header(head: bytes) -> bool:
    """Does ``head`` (the first 512 bytes of a file) hold a ustar header, an uncompressed tarball?"""
    return len(head) >= BLOCK and head[257:262] == b"ustar"


def check_name(name: str) -> None:
    """Refuse names that could land outside any extraction folder, wherever they are."""
    if "\x00" in name:
        raise ArchiveError(f"member {name!r} has a NUL byte in its name")
    if name.startswith("/"):
        raise ArchiveError(f"member {name!r} has an absolute path")
    if ".." in name.split("/"):
        raise ArchiveError(f"member {name!r} climbs out with '..'")


@dataclass(frozen=True)
class TarMember:
    """One header: ``name`` as stored (pax path, GNU long name or ustar prefix + name, with its
    ``./``), the typeflag, the data size, the link target and the mode bits."""

    name: str
    type: bytes
    size: int
    linkname: str
    mode: int

    @property
    def data_size(self) -> int:
        """Bytes of data that follow the header (links, devices and folders carry none)."""
        return 0 if self.type in _NO_DATA else self.size

    def check_regular(self) -> None:
        """Refuse anything but a regular file (a member about to be copied out)."""
        if self.type not in _REGULAR:
            what = _TYPE_NAMES.get(self.type, f"of tar type {self.type!r}")
            target = f" -> {self.linkname}" if self.type in (b"1", b"2") else ""
            raise ArchiveError(f"selected member {self.name!r} is {what}{target}, not a regular file")


@dataclass
class _Pending:
    """What metadata records said about the next header."""

    long_name: str | None = None
    long_link: str | None = None
    pax: dict[str, str] = field(default_factory=dict)


class TarReader:
    """Members of the tar stream ``stream`` (``label`` names it in errors), within ``limits``."""

    def __init__(self, stream: Stream, label: str, limits: Limits):
        self.s = stream
        self.label = label
        self.limits = limits
        self.pos = 0  # bytes consumed from the tar stream
        self._left = 0  # data of the member just yielded not read yet
        self.mv = memoryview(bytearray(CHUNK))

    def members(self) -> Iterator[TarMember]:
        """Each member in archive order; stops at the end-of-archive block (the caller drains the
        rest and checks the decompressor)."""
        pending = _Pending()
        count = 0
        while True:
            at = self.pos
            block = self._read_exact(BLOCK)
            if block == _ZERO:
                return
            if not _checksum_ok(block):
                raise ArchiveError(f"corrupt tar header at byte {at} of {self.label}")
            typ, size = block[156:157], _num(block[124:136], "size", at)
            count += 1
            if count > self.limits.max_members:
                raise ArchiveError(f"more than {self.limits.max_members} members (archive bomb?)")
            if typ in _META:
                self._read_meta(typ, size, at, pending)
                continue
            member = _member(block, typ, size, at, pending)
            pending = _Pending()
            check_name(member.name)
            self._left = member.data_size
            yield member
            left, self._left = self._left, 0
            self._skip(left + _pad(member.data_size))

    def copy_to(self, member: TarMember, fd: int) -> str:
        """Write the data of ``member``, the one just yielded, to ``fd``; its sha256."""
        digest, _ = copy_fd(self._read_member, fd)
        if self._left:
            raise ArchiveError(f"{self.label} is truncated (stream ends at byte {self.pos}, "
                               f"inside a selected member)")
        return digest

    def _read_member(self, mv: memoryview) -> int:
        """``readinto`` bounded to the current member's data: 0 at its end."""
        k = self.s.readinto(mv[:self._left]) if self._left else 0
        self._left -= k
        self.pos += k
        return k

    def _read_meta(self, typ: bytes, size: int, at: int, pending: _Pending) -> None:
        if size > self.limits.max_meta_bytes:
            raise ArchiveError(f"a {'long name' if typ in b'LK' else 'pax'} record at byte {at} declares "
                               f"{size_text(size)} (archive bomb?)")
        data = self._read_exact(size)
        self._skip(_pad(size))
        if typ == b"L":
            pending.long_name = _cstr(data).decode("utf-8", "surrogateescape")
        elif typ == b"K":
            pending.long_link = _cstr(data).decode("utf-8", "surrogateescape")
        elif typ == b"x":
            pending.pax = _parse_pax(data, at)
        # global pax headers ('g') carry nothing we use

    def _read_exact(self, n: int) -> bytes:
        got = 0
        while got < n:
            k = self.s.readinto(self.mv[got:n])
            if k == 0:
                raise ArchiveError(f"{self.label} is truncated (stream ends at byte {self.pos + got})")
            got += k
        self.pos += n
        return bytes(self.mv[:n])

    def _skip(self, n: int) -> None:
        left = n
        while left:
            k = self.s.skip(left)
            if k == 0:
                raise ArchiveError(f"{self.label} is truncated (stream ends at byte {self.pos + n - left}, "
                                   f"a member declares more)")
            left -= k
        self.pos += n
        if self.pos > self.limits.max_stream_bytes:
            raise ArchiveError(f"{self.label} expands beyond {size_text(self.limits.max_stream_bytes)} (archive bomb?)")


def _member(block: bytes, typ: bytes, size: int, at: int, pending: _Pending) -> TarMember:
    """The member a header describes, with what the metadata records before it said."""
    name_b = _cstr(block[0:100])
    if block[257:263] == b"ustar\x00":  # POSIX ustar: the prefix field extends the name
        pre = _cstr(block[345:500])
        if pre:
            name_b = pre + b"/" + name_b
    name = name_b.decode("utf-8", "surrogateescape")
    if pending.long_name is not None:
        name = pending.long_name
    pax = pending.pax
    if "path" in pax:
        name = pax["path"]
    if "size" in pax:
        try:
            size = int(pax["size"])
        except ValueError:
            raise ArchiveError(f"bad pax size for {name!r}") from None
        if size < 0:
            raise ArchiveError(f"negative pax size for {name!r}")
    linkname = (pending.long_link if pending.long_link is not None
                else _cstr(block[157:257]).decode("utf-8", "surrogateescape"))
    if "linkpath" in pax:
        linkname = pax["linkpath"]
    return TarMember(name, typ, size, linkname, _num(block[100:108], "mode", at))


def _pad(n: int) -> int:
    return (BLOCK - n % BLOCK) % BLOCK


def _num(field: bytes, what: str, pos: int) -> int:
    if field and field[0] & 0x80:  # GNU base-256
        if field[0] == 0xFF:
            raise ArchiveError(f"tar header at byte {pos} has a negative {what}")
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    s = field.split(b"\x00", 1)[0].strip(b" ")
    if not s:
        return 0
    try:
        return int(s, 8)
    except ValueError:
        raise ArchiveError(f"tar header at byte {pos} has a bad {what} {s!r}") from None


def _cstr(field: bytes) -> bytes:
    return field.split(b"\x00", 1)[0]


def _checksum_ok(block: bytes) -> bool:
    stored = block[148:156]
    try:
        want = int(stored.split(b"\x00", 1)[0].strip(b" ") or b"-1", 8)
    except ValueError:
        return False
    unsigned = sum(block) - sum(stored) + 8 * 32
    if unsigned == want:
        return True
    signed = sum(b - 256 if b > 127 else b for b in block) - sum(b - 256 if b > 127 else b for b in stored) + 256
    return signed == want


def _parse_pax(data: bytes, pos: int) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(data):
        if data[i:i + 1] == b"\x00":
            break
        sp = data.find(b" ", i)
        if sp < 0:
            raise ArchiveError(f"bad pax header at byte {pos}")
        try:
            length = int(data[i:sp])
        except ValueError:
            raise ArchiveError(f"bad pax header at byte {pos}") from None
        rec = data[sp + 1:i + length]
        if length <= 0 or not rec.endswith(b"\n") or b"=" not in rec:
            raise ArchiveError(f"bad pax header at byte {pos}")
        k, _, v = rec[:-1].partition(b"=")
        out[k.decode("utf-8", "replace")] = v.decode("utf-8", "surrogateescape")
        i += length
    return out
