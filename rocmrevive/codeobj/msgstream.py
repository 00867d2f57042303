"""MessagePack read value by value, for files another user may have written (a ``.kpack``'s TOC,
a Tensile ``.dat``): the reader asks for the values it needs and skips the rest without building
them (msgpack's C ``skip``), so the memory a file can make rocmrevive use is what the reader
keeps, not what the file's shape can expand to (an empty map is one byte on disk, ~70 in Python).

    s = MsgStream(raw, max_values=1 << 20)
    for _ in range(s.map_header() or 0):
        key = s.scalar()              # None when the key is a map or an array (skipped)
        s.skip()

Damaged input raises one of ``DAMAGED``; a value of another shape than asked for is skipped and
answered with None; more than ``max_items`` in one map or array, or more than ``max_values``
values looked at in all, raises ``TooLarge``.
"""
from __future__ import annotations

from typing import Any

import msgpack

# what msgpack raises for damaged input: FormatError, StackError, OutOfData, ExtraData, limits
# exceeded and bad UTF-8 are ValueError or UnpackException; unhashable keys are TypeError
DAMAGED = (ValueError, TypeError, msgpack.UnpackException)


class TooLarge(Exception):
    """More entries or values than the reader allows (the message says which)."""


def is_map(b: int) -> bool:
    """The first byte of a map: fixmap, map16, map32."""
    return 0x80 <= b <= 0x8F or b in (0xDE, 0xDF)


def is_array(b: int) -> bool:
    """The first byte of an array: fixarray, array16, array32."""
    return 0x90 <= b <= 0x9F or b in (0xDC, 0xDD)


class MsgStream:
    """``raw`` read one value at a time; strings, binaries and extensions longer than
    ``max_str`` are damaged input (msgpack's own limits)."""

    def __init__(self, raw: bytes, *, max_values: int, max_items: int, max_str: int = 1 << 20):
        self.raw = raw
        self.max_values, self.max_items = max_values, max_items
        self.u = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(raw), 1),
                                  max_str_len=max_str, max_bin_len=max_str, max_ext_len=max_str,
                                  max_array_len=len(raw), max_map_len=len(raw))
        self.u.feed(raw)
        self.values = 0

    def _peek(self) -> int:
        self.values += 1
        if self.values > self.max_values:
            raise TooLarge(f"more than the {self.max_values:,} values rocmrevive reads in one file")
        at = self.u.tell()
        if at >= len(self.raw):
            raise msgpack.OutOfData("the data ends inside a value")
        return self.raw[at]

    def _count(self, n: int) -> int:
        if n > self.max_items:
            raise TooLarge(f"a list of {n:,} entries, more than the {self.max_items:,} allowed")
        return n

    def skip(self) -> None:
        self._peek()
        self.u.skip()

    def scalar(self) -> Any:
        """The next value when it is neither a map nor an array (then skipped: None)."""
        b = self._peek()
        if is_map(b) or is_array(b):
            self.u.skip()
            return None
        return self.u.unpack()

    def map_header(self) -> int | None:
        """The number of pairs of the map that comes next; None (and skipped) when it is not one."""
        if not is_map(self._peek()):
            self.u.skip()
            return None
        return self._count(self.u.read_map_header())

    def array_header(self) -> int | None:
        """The number of items of the array that comes next; None (and skipped) when it is not one."""
        if not is_array(self._peek()):
            self.u.skip()
            return None
        return self._count(self.u.read_array_header())

    def array(self, item) -> list | None:
        """``[item() for each item]`` of the array that comes next; None when it is not one."""
        n = self.array_header()
        return None if n is None else [item() for _ in range(n)]

    def at_end(self) -> bool:
        return self.u.tell() >= len(self.raw)
