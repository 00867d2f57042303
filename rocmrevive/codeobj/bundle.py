"""Clang offload bundles and compressed bundles (CCOB), read by structure.

Uncompressed bundle ([OB.cpp]): ``__CLANG_OFFLOAD_BUNDLE__``, u64 N, then N entries of
(u64 offset, u64 size, u64 triple size, triple), offsets from the bundle start.
CCOB ([OB.cpp] RawCompressedBundleHeader, FORMATS §3.2): "CCOB", u16 version, u16 method
(0 zlib, 1 zstd), then v1 u32 uncompressed size; v2 u32 total size + u32 uncompressed size;
v3 u64 total size + u64 uncompressed size; then u64 hash = low 8 bytes of MD5(uncompressed).

    for e in parse_bundle(data): print(e.entry_id, e.offset, e.size)

Nothing here trusts a size field: every count and length is checked against the bytes there
are (and against fixed caps) before anything is allocated.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import IO, NamedTuple, cast

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
METHOD_ZLIB, METHOD_ZSTD = 0, 1
METHOD_NAMES = {METHOD_ZLIB: "zlib", METHOD_ZSTD: "zstd"}

# Caps against hostile headers: a real bundle has a few dozen entries and ids of < 100 bytes.
MAX_ENTRIES = 4096
MAX_TRIPLE = 4096
# Sizes measured on Debian's packages (docs/formats.md 3.3 "Size caps"): the largest device code
# object is 187 MiB (librccl 7.2.4, its gfx942 entry) and the largest uncompressed bundle
# 1.12 GiB (librccl 7.2.4, one RDC bundle of 38 targets). The caps leave 2.7x and 1.8x room; a
# CCOB or bundle entry past them is refused from its header, before anything is decompressed,
# and streaming keeps a bomb under the caps to one code object in memory (< 1 GiB peak RSS).
MAX_CODE_OBJECT = 512 << 20
MAX_UNCOMPRESSED = 2 << 30
# Uncompressed bytes produced per step: memory stays bounded by one step (plus the one code
# object a caller asks to keep), whatever a header claims.
STEP = 1 << 20


class BundleError(ValueError):
    """A bundle or CCOB that cannot be read; the message is one human line."""


class BundleTruncated(BundleError):
    """The bytes given end inside the bundle's entry table (a longer head may hold it)."""


class BundleEntry(NamedTuple):
    """One entry of a bundle's table (a named tuple: a fat binary has hundreds, made cheaply)."""

    entry_id: str  # e.g. "hipv4-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-"
    offset: int    # from the start of the (uncompressed) bundle
    size: int

    @property
    def kind(self) -> str:
        return self.entry_id.split("-", 1)[0]

    @property
    def is_host(self) -> bool:
        return self.entry_id == "host" or self.entry_id.startswith("host-")   # kind == "host", without the split


_COUNT, _ENTRY = struct.Struct("<Q"), struct.Struct("<QQQ")   # the entry count; offset, size, id length
_new_tuple = tuple.__new__   # builds a BundleEntry without the generated __new__'s Python frame


def parse_bundle(data: bytes | bytearray | memoryview, *, limit: int | None = None) -> list[BundleEntry]:
    """The entry table of an uncompressed bundle starting at ``data[0]``.

    ``limit`` is the bundle's real length when ``data`` holds only its head (then entry
    payloads past ``len(data)`` are allowed, but not past ``limit``).
    """
    size = len(data) if limit is None else limit
    if bytes(data[:24]) != BUNDLE_MAGIC:
        raise BundleError("no __CLANG_OFFLOAD_BUNDLE__ magic")
    if len(data) < 32:
        raise BundleTruncated("bundle header truncated")
    (count,) = _COUNT.unpack_from(data, 24)
    if count == 0 or count > MAX_ENTRIES:
        raise BundleError(f"bundle claims {count} entries")
    pos = 32
    out = []
    have = len(data)
    for i in range(count):
        if pos + 24 > have:
            raise BundleTruncated(f"bundle entry table truncated at entry {i}")
        off, esize, tlen = _ENTRY.unpack_from(data, pos)
        pos += 24
        if tlen == 0 or tlen > MAX_TRIPLE:
            raise BundleError(f"bundle entry {i} has a bad id length {tlen}")
        if pos + tlen > have:
            raise BundleTruncated(f"bundle entry table truncated at entry {i}")
        triple = str(data[pos:pos + tlen], "ascii", "replace")
        pos += tlen
        if off == 0 or off + esize > size:
            raise BundleError(f"bundle entry {triple} points past the end "
                              f"(offset {off} + size {esize} > {size})")
        if esize > MAX_CODE_OBJECT:
            raise BundleError(f"bundle entry {triple} claims {esize:,} bytes, more than the "
                              f"{MAX_CODE_OBJECT >> 20} MiB a code object may have")
        out.append(_new_tuple(BundleEntry, (triple, off, esize)))   # BundleEntry(triple, off, esize), in C
    return out


def bundle_extent(entries: list[BundleEntry]) -> int:
    """Where the bundle ends: the furthest entry payload."""
    return max([off + size for _id, off, size in entries], default=0)


@dataclass(frozen=True)
class CcobHeader:
    version: int
    method: int
    header_size: int
    total_size: int | None     # v2/v3: the whole CCOB including its header
    uncompressed_size: int
    hash: int

    @property
    def method_name(self) -> str:
        return METHOD_NAMES.get(self.method, f"method {self.method}")


def parse_ccob_header(data: bytes | memoryview) -> CcobHeader:
    if bytes(data[:4]) != CCOB_MAGIC:
        raise BundleError("no CCOB magic")
    if len(data) < 8:
        raise BundleError("CCOB header truncated")
    version, method = struct.unpack_from("<HH", data, 4)
    if version == 1:
        if len(data) < 20:
            raise BundleError("CCOB v1 header truncated")
        (usize, h) = struct.unpack_from("<IQ", data, 8)
        hdr = CcobHeader(1, method, 20, None, usize, h)
    elif version == 2:
        if len(data) < 24:
            raise BundleError("CCOB v2 header truncated")
        total, usize, h = struct.unpack_from("<IIQ", data, 8)
        hdr = CcobHeader(2, method, 24, total, usize, h)
    elif version == 3:
        if len(data) < 32:
            raise BundleError("CCOB v3 header truncated")
        total, usize, h = struct.unpack_from("<QQQ", data, 8)
        hdr = CcobHeader(3, method, 32, total, usize, h)
    else:
        raise BundleError(f"unknown CCOB version {version}")
    if method not in METHOD_NAMES:
        raise BundleError(f"unknown CCOB compression method {method}")
    if hdr.total_size is not None and hdr.total_size < hdr.header_size:
        raise BundleError(f"CCOB total size {hdr.total_size} is smaller than its header")
    if hdr.uncompressed_size > MAX_UNCOMPRESSED:
        raise BundleError(f"CCOB claims {hdr.uncompressed_size:,} uncompressed bytes, more than the "
                          f"{MAX_UNCOMPRESSED >> 30} GiB a real bundle may have (a compression bomb?)")
    return hdr


def ccob_hash(uncompressed: bytes) -> int:
    """MD5(uncompressed).low(): the first 8 digest bytes as a little-endian u64 ([OB.cpp])."""
    import hashlib  # noqa: PLC0415 — OpenSSL's start-up is a visible part of a folder scan

    return _md5_low(hashlib.md5(uncompressed))


def _md5_low(md5) -> int:
    return struct.unpack_from("<Q", md5.digest(), 0)[0]


class _ViewReader:
    """A read-only file over a memoryview (an mmap'ed library) that copies only what is read."""

    def __init__(self, view: memoryview):
        self.view, self.pos = view, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.view) if n is None or n < 0 else min(len(self.view), self.pos + n)
        out = bytes(self.view[self.pos:end])
        self.pos = end
        return out


def zstd_frame_size(view) -> int:
    """The length of the zstd frame at ``view[0]``, walked from its block headers without
    decompressing anything (RFC 8878 §3.1.1). Needed for CCOB v1, which has no size field."""
    n = len(view)
    if n < 6 or bytes(view[:4]) != b"\x28\xb5\x2f\xfd":
        raise BundleError("CCOB zstd payload does not start with a zstd frame")
    fhd = view[4]
    single_segment = fhd >> 5 & 1
    fcs_len = (0, 2, 4, 8)[fhd >> 6] or (1 if single_segment else 0)
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 3] + fcs_len
    while True:
        if pos + 3 > n:
            raise BundleError("CCOB zstd frame is truncated")
        bh = view[pos] | view[pos + 1] << 8 | view[pos + 2] << 16
        last, btype, bsize = bh & 1, bh >> 1 & 3, bh >> 3
        if btype == 3:
            raise BundleError("CCOB zstd frame has a reserved block type")
        pos += 3 + (1 if btype == 1 else bsize)  # an RLE block stores one byte
        if pos > n:
            raise BundleError("CCOB zstd frame is truncated")
        if last:
            return pos + (4 if fhd >> 2 & 1 else 0)


class CcobStream:
    """The uncompressed bundle of a CCOB, piece by piece (at most ``STEP`` bytes each), with the
    size and the MD5 checked as it goes, so that memory stays bounded whatever a header claims.

        stream = CcobStream(view, hdr)       # view starts at the CCOB magic
        for piece in stream: ...             # BundleError on a bad size, hash or payload
        stream.extent                        # the CCOB's compressed length

    ``extent`` is TotalFileSize for v2/v3 and known at once; for v1 it is measured (zstd: from
    the frame's block headers; zlib: where the stream ends, so only after the last piece).
    """

    def __init__(self, view, hdr: CcobHeader, *, check_hash: bool = True, step: int = STEP):
        self.view, self.hdr, self.check_hash = memoryview(view), hdr, check_hash
        self.step = step   # bytes produced (and, for zlib, fed) per piece
        self.produced = 0
        self.extent: int | None = hdr.total_size
        if self.extent is None and hdr.method == METHOD_ZSTD:
            self.extent = hdr.header_size + zstd_frame_size(self.view[hdr.header_size:])
        if self.extent is not None and self.extent > len(self.view):
            raise BundleError(f"CCOB says it is {self.extent:,} bytes but only "
                              f"{len(self.view):,} are there")

    def __iter__(self):
        hdr = self.hdr
        import hashlib  # noqa: PLC0415 — OpenSSL's start-up is a visible part of a folder scan

        md5 = hashlib.md5() if self.check_hash else None
        end = self.extent if self.extent is not None else len(self.view)
        payload = self.view[hdr.header_size:end]
        try:
            pieces = (self._zlib(payload) if hdr.method == METHOD_ZLIB else self._zstd(payload))
            for piece in pieces:
                self.produced += len(piece)
                if self.produced > hdr.uncompressed_size:
                    raise BundleError(f"CCOB decompresses to more than its stated "
                                      f"{hdr.uncompressed_size:,} bytes")
                if md5 is not None:
                    md5.update(piece)
                yield piece
        except BundleError:
            raise
        except Exception as exc:  # noqa: BLE001 - zlib.error, zstandard.ZstdError, ValueError: hostile bytes are a BundleError
            raise BundleError(f"CCOB payload does not decompress ({hdr.method_name}): {exc}") from None
        if self.produced != hdr.uncompressed_size:
            raise BundleError(f"CCOB decompresses to {self.produced:,} bytes, header says "
                              f"{hdr.uncompressed_size:,}")
        if md5 is not None and _md5_low(md5) != hdr.hash:
            raise BundleError("CCOB hash does not match its contents (MD5 check failed)")

    def _zlib(self, payload):
        dec = zlib.decompressobj()
        fed = 0
        for i in range(0, len(payload), self.step):
            pending = bytes(payload[i:i + self.step])
            fed += len(pending)
            while pending and not dec.eof:
                piece = dec.decompress(pending, self.step)
                pending = dec.unconsumed_tail
                if piece:
                    yield piece
            if dec.eof:
                break
        if not dec.eof:
            raise BundleError("CCOB zlib stream is truncated")
        if self.extent is None:  # v1: the stream's end is the CCOB's end
            self.extent = self.hdr.header_size + fed - len(dec.unused_data)

    def _zstd(self, payload):
        import zstandard  # noqa: PLC0415 — a C extension loaded only for a compressed bundle

        reader = zstandard.ZstdDecompressor().stream_reader(cast("IO[bytes]", _ViewReader(payload)),
                                                            read_across_frames=True)
        while True:
            piece = reader.read(self.step)
            if not piece:
                return
            yield piece


def ccob_head(view, hdr: CcobHeader, size: int) -> bytes:
    """The first ``size`` uncompressed bytes of a CCOB (enough for the entry table and ELF
    headers); no size or hash check, as the rest is not read."""
    out = bytearray()
    want = min(size, hdr.uncompressed_size)
    stream = CcobStream(view, hdr, check_hash=False, step=max(want, 1))   # not a whole STEP for a head
    it = iter(stream)
    try:
        for piece in it:
            out += piece
            if len(out) >= want:
                break
    finally:
        it.close()
    return bytes(out[:want])


class _Cursor:
    """Sequential reads over an iterator of byte pieces."""

    def __init__(self, pieces):
        self.pieces, self.buf, self.pos = iter(pieces), b"", 0

    def _fill(self) -> bool:
        if not self.buf:
            self.buf = next(self.pieces, b"")
        return bool(self.buf)

    def read(self, n: int) -> bytearray:
        out = bytearray(n)  # allocated once: a code object is never held twice
        got = 0
        while got < n and self._fill():
            k = min(n - got, len(self.buf))
            out[got:got + k] = self.buf[:k]
            self.buf, got = self.buf[k:], got + k
        del out[got:]
        self.pos += got
        return out

    def skip(self, n: int) -> None:
        while n > 0 and self._fill():
            k = min(n, len(self.buf))
            self.buf, n, self.pos = self.buf[k:], n - k, self.pos + k

    def unread(self, data: bytes | bytearray) -> None:
        self.buf, self.pos = bytes(data) + self.buf, self.pos - len(data)

    def drain(self) -> None:
        self.buf = b""
        for _ in self.pieces:
            pass


def iter_ccob_entries(stream: CcobStream, *, keep: int | None = None):
    """Decompress a CCOB once and yield ``(entry, bytes)`` for each device entry of its bundle,
    in file order: the whole code object, or its first ``keep`` bytes. Size and MD5 are checked
    at the end (a BundleError then comes after the entries); memory holds one code object.

        stream = CcobStream(view, hdr)
        for entry, elf in iter_ccob_entries(stream): ...
        stream.extent                               # known now, for v1 too
    """
    hdr = stream.hdr
    cur = _Cursor(stream)
    head = bytearray()
    while True:  # the entry table: in the first piece for every real bundle
        piece = cur.read(STEP)
        head += piece
        try:
            entries = parse_bundle(head, limit=hdr.uncompressed_size)
            break
        except BundleTruncated:
            if not piece or len(head) >= 16 * STEP:
                raise
    cur.unread(head)
    del head
    for e in sorted((e for e in entries if not e.is_host and e.size), key=lambda e: e.offset):
        if e.offset < cur.pos:
            raise BundleError(f"bundle entry {e.entry_id} overlaps the entry before it")
        cur.skip(e.offset - cur.pos)
        want = e.size if keep is None else min(keep, e.size)
        data = cur.read(want)
        if len(data) == want:
            yield e, data
        del data  # never two code objects in memory (callers drop theirs too)
    cur.drain()  # the rest: size and MD5 checks
