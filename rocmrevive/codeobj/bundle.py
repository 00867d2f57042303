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

import hashlib
import struct
import zlib
from dataclasses import dataclass

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
METHOD_ZLIB, METHOD_ZSTD = 0, 1
METHOD_NAMES = {METHOD_ZLIB: "zlib", METHOD_ZSTD: "zstd"}

# Caps against hostile headers: a real bundle has a few dozen entries and ids of < 100 bytes;
# the largest real CCOB seen (rccl 7.2.4) decompresses to 1.2 GB.
MAX_ENTRIES = 4096
MAX_TRIPLE = 4096
MAX_UNCOMPRESSED = 16 << 30


class BundleError(ValueError):
    """A bundle or CCOB that cannot be read; the message is one human line."""


@dataclass(frozen=True)
class BundleEntry:
    entry_id: str  # e.g. "hipv4-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-"
    offset: int    # from the start of the (uncompressed) bundle
    size: int

    @property
    def kind(self) -> str:
        return self.entry_id.split("-", 1)[0]

    @property
    def is_host(self) -> bool:
        return self.kind == "host"


def parse_bundle(data: bytes | memoryview, *, limit: int | None = None) -> list[BundleEntry]:
    """The entry table of an uncompressed bundle starting at ``data[0]``.

    ``limit`` is the bundle's real length when ``data`` holds only its head (then entry
    payloads past ``len(data)`` are allowed, but not past ``limit``).
    """
    size = len(data) if limit is None else limit
    if bytes(data[:24]) != BUNDLE_MAGIC:
        raise BundleError("no __CLANG_OFFLOAD_BUNDLE__ magic")
    if len(data) < 32:
        raise BundleError("bundle header truncated")
    (count,) = struct.unpack_from("<Q", data, 24)
    if count == 0 or count > MAX_ENTRIES:
        raise BundleError(f"bundle claims {count} entries")
    pos = 32
    out = []
    for i in range(count):
        if pos + 24 > len(data):
            raise BundleError(f"bundle entry table truncated at entry {i}")
        off, esize, tlen = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        if tlen == 0 or tlen > MAX_TRIPLE or pos + tlen > len(data):
            raise BundleError(f"bundle entry {i} has a bad id length {tlen}")
        triple = bytes(data[pos:pos + tlen]).decode("ascii", "replace")
        pos += tlen
        if off == 0 or off + esize > size:
            raise BundleError(f"bundle entry {triple} points past the end "
                              f"(offset {off} + size {esize} > {size})")
        out.append(BundleEntry(triple, off, esize))
    return out


def bundle_extent(entries: list[BundleEntry]) -> int:
    """Where the bundle ends: the furthest entry payload."""
    return max((e.offset + e.size for e in entries), default=0)


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
        raise BundleError(f"CCOB claims {hdr.uncompressed_size} uncompressed bytes")
    return hdr


def ccob_hash(uncompressed: bytes) -> int:
    """MD5(uncompressed).low(): the first 8 digest bytes as a little-endian u64 ([OB.cpp])."""
    return struct.unpack_from("<Q", hashlib.md5(uncompressed).digest(), 0)[0]


class _ViewReader:
    """A read-only file over a memoryview (an mmap'ed library) that copies only what is read."""

    def __init__(self, view: memoryview):
        self.view, self.pos = view, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.view) if n is None or n < 0 else min(len(self.view), self.pos + n)
        out = bytes(self.view[self.pos:end])
        self.pos = end
        return out


def _iter_decompressed(payload: memoryview, method: int, step: int = 1 << 20):
    """Yield the decompressed bytes in pieces of at most ``step`` bytes, so that a bomb never
    gets to allocate more than one piece beyond what the caller asked for."""
    if method == METHOD_ZLIB:
        dec = zlib.decompressobj()
        for i in range(0, len(payload), step):
            pending = bytes(payload[i:i + step])
            while pending:
                piece = dec.decompress(pending, step)
                pending = dec.unconsumed_tail
                if piece:
                    yield piece
        tail = dec.flush()
        if tail:
            yield tail
        return
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(_ViewReader(payload), read_across_frames=True)
    while True:
        piece = reader.read(step)
        if not piece:
            return
        yield piece


def decompress_ccob(data: bytes | memoryview, hdr: CcobHeader, *, head: int | None = None,
                    check_hash: bool = True) -> bytes:
    """Decompress a CCOB's payload (bounded by its TotalFileSize where it has one).

    ``head``: stop after this many uncompressed bytes (enough for the entry table and the
    ELF headers); no hash check then. Otherwise the size and hash are checked.
    """
    end = hdr.total_size if hdr.total_size is not None else len(data)
    if end > len(data):
        raise BundleError(f"CCOB says it is {end} bytes but only {len(data)} are there")
    payload = memoryview(data)[hdr.header_size:end]
    want = hdr.uncompressed_size if head is None else min(head, hdr.uncompressed_size)
    out = bytearray()
    try:
        for piece in _iter_decompressed(payload, hdr.method):
            out += piece
            if len(out) >= want and head is not None:
                return bytes(out[:want])
            if len(out) > want:
                raise BundleError(f"CCOB decompresses to more than its stated {want} bytes")
    except BundleError:
        raise
    except Exception as exc:  # zlib.error, zstd.ZstdError
        raise BundleError(f"CCOB payload does not decompress ({hdr.method_name}): {exc}") from None
    if head is not None:
        return bytes(out)
    if len(out) != hdr.uncompressed_size:
        raise BundleError(f"CCOB decompresses to {len(out)} bytes, header says {hdr.uncompressed_size}")
    result = bytes(out)
    if check_hash and ccob_hash(result) != hdr.hash:
        raise BundleError("CCOB hash does not match its contents (MD5 check failed)")
    return result
