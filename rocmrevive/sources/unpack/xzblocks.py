"""A multi-block xz stream read by block: blocks that hold nothing the reader wants are never decoded.

dpkg (1.21 and later) compresses a package's data.tar.xz on several threads, which cuts the
stream into independent blocks (Debian's librocblas4: 164 blocks of 24 MiB, 3.9 GiB of tar).
The stream's index, at its end, gives each block's compressed and uncompressed size, so an
uncompressed offset maps to one block that can be decoded on its own. The tar reader skips
every member it does not select; a block lying wholly inside skipped data is never decoded,
and the blocks it does need are decoded ahead on worker threads (``lzma`` lets go of the GIL).
On librocblas4 that decodes 123 of 164 blocks (two at a time on two CPUs, up to
``MAX_WORKERS``).

Format facts (the .xz file format, version 1.1.0): a 12-byte stream header (magic, two flag
bytes, their CRC32), blocks on 4-byte boundaries, the index (indicator 0x00, the record count,
per block its unpadded and uncompressed size as multibyte integers, padding, CRC32), a 12-byte
footer (CRC32, backward size, flags, "YZ"). Anything else (one block, several streams, stream
padding, sizes that do not tile the byte range exactly, a block over ``MAX_BLOCK``) makes
``read_index`` return None and the caller reads the stream front to back as before.

What is checked: every block the reader consumes decodes to exactly the size the index gives
and passes its own check (CRC64 in dpkg's streams). A block never decoded is not checked:
what vouches for it is the artifact's pin (its sha256, checked as it enters the cache); an
unpinned ``--from`` package gets the checks of what it stages, as before.

    index = read_index(fd, offset, length)
    stream = XzBlockStream(fd, index) if index else None   # None: read it front to back
"""
from __future__ import annotations

import lzma
import os
import struct
import zlib
from bisect import bisect_right
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from rocmrevive.sources.unpack.limits import ArchiveError
from rocmrevive.sources.unpack.stream import Stream

HEADER_MAGIC, FOOTER_MAGIC = b"\xfd7zXZ\x00", b"YZ"
MAX_BLOCK = 64 << 20  # a block's decoded size, held in memory at once (dpkg writes 24 MiB ones)
MAX_WORKERS = 4
MAX_BLOCKS = 1 << 20


@dataclass(frozen=True)
class XzBlock:
    c_off: int      # where the block starts in the file
    c_size: int     # its unpadded size: header, compressed data and check (not the padding)

    @property
    def padded(self) -> int:
        """Its bytes in the file: the padding to 4 bytes lies before the check (xz 3.3)."""
        return (self.c_size + 3) & ~3
    u_start: int    # where its data starts in the decompressed stream
    u_size: int


@dataclass(frozen=True)
class XzIndex:
    stream_header: bytes
    blocks: list[XzBlock]

    @property
    def total(self) -> int:
        last = self.blocks[-1]
        return last.u_start + last.u_size

    def block_at(self, pos: int) -> int:
        """The number of the block holding decompressed byte ``pos``."""
        return bisect_right(self.blocks, pos, key=lambda b: b.u_start) - 1


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    """A multibyte integer at ``buf[i]``: (value, next index). ValueError when malformed."""
    value = 0
    for k in range(9):
        if i + k >= len(buf):
            raise ValueError("index ends inside a number")
        byte = buf[i + k]
        value |= (byte & 0x7F) << (7 * k)
        if not byte & 0x80:
            if k and byte == 0:
                raise ValueError("a number with a trailing zero byte")
            return value, i + k + 1
    raise ValueError("a number longer than 9 bytes")


def read_index(fd: int, offset: int, length: int) -> XzIndex | None:
    """The block table of the one xz stream in bytes [offset, offset+length) of ``fd``, or None
    when the stream is not one this reader takes (see the module's docstring)."""
    if length < 24 + 12:
        return None
    head = os.pread(fd, 12, offset)
    foot = os.pread(fd, 12, offset + length - 12)
    if len(head) < 12 or len(foot) < 12 or not head.startswith(HEADER_MAGIC) or foot[10:] != FOOTER_MAGIC:
        return None
    if zlib.crc32(head[6:8]) != struct.unpack("<I", head[8:12])[0] or head[6:8] != foot[8:10]:
        return None
    if zlib.crc32(foot[4:10]) != struct.unpack("<I", foot[:4])[0]:
        return None
    index_size = (struct.unpack("<I", foot[4:8])[0] + 1) * 4
    if index_size > length - 24:
        return None
    raw = os.pread(fd, index_size, offset + length - 12 - index_size)
    try:
        blocks = _parse_index(raw, offset + 12)
    except ValueError:
        return None
    tiled = sum(b.padded for b in blocks)
    if len(blocks) < 2 or 12 + tiled + index_size + 12 != length:
        return None
    return XzIndex(head, blocks)


def _parse_index(raw: bytes, first_block: int) -> list[XzBlock]:
    if len(raw) < 8 or raw[0] != 0 or zlib.crc32(raw[:-4]) != struct.unpack("<I", raw[-4:])[0]:
        raise ValueError("not an index")
    count, i = _varint(raw, 1)
    if count > MAX_BLOCKS:
        raise ValueError("too many blocks")
    blocks: list[XzBlock] = []
    c_off, u_start = first_block, 0
    for _ in range(count):
        unpadded, i = _varint(raw, i)
        u_size, i = _varint(raw, i)
        # LZMA2 stores what does not compress with 3 bytes per 64 KiB: a block much bigger
        # than its data is not one dpkg or xz wrote
        if unpadded < 5 or u_size == 0 or u_size > MAX_BLOCK or unpadded > u_size + (u_size >> 10) + 1024:
            raise ValueError("a block this reader does not take")
        blocks.append(XzBlock(c_off, unpadded, u_start, u_size))
        c_off += (unpadded + 3) & ~3
        u_start += u_size
    if raw[i:-4].strip(b"\0") or len(raw[i:-4]) > 3:
        raise ValueError("index padding")
    return blocks


def _one_block_stream(index: XzIndex, n: int, block: bytes) -> bytes:
    """Block ``n`` (its padded bytes) as a stream of its own: the stream header, the block, an index of one record
    and a footer, so that liblzma checks the block's sizes against the index as well."""
    blk = index.blocks[n]
    body = b"\0" + _enc(1) + _enc(blk.c_size) + _enc(blk.u_size)
    body += b"\0" * (-len(body) % 4)
    idx = body + struct.pack("<I", zlib.crc32(body))
    flags = index.stream_header[6:8]
    tail = struct.pack("<I", len(idx) // 4 - 1) + flags
    return (index.stream_header + block + idx
            + struct.pack("<I", zlib.crc32(tail)) + tail + FOOTER_MAGIC)


def _enc(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_block(fd: int, index: XzIndex, n: int) -> bytes:
    """Block ``n`` decoded on its own: exactly its size in the index, its check passed."""
    blk = index.blocks[n]
    raw = os.pread(fd, blk.padded, blk.c_off)
    dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    try:
        out = dec.decompress(_one_block_stream(index, n, raw), max_length=blk.u_size + 1)
    except lzma.LZMAError as exc:
        raise ArchiveError(f"block {n + 1} of {len(index.blocks)} is corrupt ({exc})") from None
    if len(raw) != blk.padded or len(out) != blk.u_size or not dec.eof:
        raise ArchiveError(f"block {n + 1} of {len(index.blocks)} does not decode to the "
                           f"{blk.u_size:,} bytes its index gives")
    return out


class XzBlockStream(Stream):
    """The decompressed stream of an indexed xz, read by block with ``workers`` threads
    decoding the next blocks the reader has not skipped past."""

    def __init__(self, fd: int, index: XzIndex, workers: int | None = None):
        self.fd, self.index = fd, index
        self.workers = workers or max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="xz-block")
        self.pending: dict[int, Future[bytes]] = {}
        self.pos = 0
        self.current: tuple[int, memoryview] | None = None  # (block number, its bytes)

    def _schedule(self, first: int) -> None:
        """Decode blocks ``first`` .. ``first + workers`` ahead; drop what lies before ``first``."""
        for n in [n for n in self.pending if n < first]:
            self.pending.pop(n).cancel()
        for n in range(first, min(first + self.workers + 1, len(self.index.blocks))):
            if n not in self.pending and (self.current is None or self.current[0] != n):
                self.pending[n] = self.pool.submit(decode_block, self.fd, self.index, n)

    def _block(self, n: int) -> memoryview:
        if self.current is None or self.current[0] != n:
            if n not in self.pending:
                self._schedule(n)
            self.current = (n, memoryview(self.pending.pop(n).result()))
            self._schedule(n + 1)
        return self.current[1]

    def readinto(self, mv: memoryview) -> int:
        if self.pos >= self.index.total or not len(mv):
            return 0
        n = self.index.block_at(self.pos)
        data = self._block(n)
        at = self.pos - self.index.blocks[n].u_start
        k = min(len(mv), len(data) - at)
        mv[:k] = data[at:at + k]
        self.pos += k
        return k

    def skip(self, n: int) -> int:
        k = min(n, self.index.total - self.pos)
        self.pos += k
        if k and self.pos < self.index.total:
            first = self.index.block_at(self.pos)
            if self.current is not None and self.current[0] != first:
                self.current = None
            self._schedule(first)
        return k

    def finish(self) -> str | None:
        self.abort()
        return None

    def abort(self) -> None:
        for fut in self.pending.values():
            fut.cancel()
        self.pending.clear()
        self.current = None
        self.pool.shutdown(wait=True, cancel_futures=True)
