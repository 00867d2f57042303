"""The one interface every decompressed stream keeps, in its own module so that the dispatcher
(decompress.open_stream) and the block reader (xzblocks.XzBlockStream) both import it from below
instead of from each other.

    stream = open_stream(f, offset, length, "xz", external=True); stream.readinto(buf)
"""
from __future__ import annotations


class Stream:
    """One decompressed byte stream, read front to back: ``readinto`` and ``skip`` return 0 at
    its end; ``finish`` drains it and says what went wrong, ``abort`` stops it early."""

    def readinto(self, mv: memoryview) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def skip(self, n: int) -> int:
        """Discard up to n bytes; return how many were discarded (0 at end of stream)."""
        raise NotImplementedError  # pragma: no cover

    def failure(self) -> str | None:
        return None

    def finish(self) -> str | None:
        """Drain and close; return what went wrong in the decompressor, or None."""
        return None

    def abort(self) -> None:
        pass
