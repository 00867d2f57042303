"""The one way rocmrevive hashes a file (sha256, streamed, 1 MiB at a time).

    sha, size = sha256_file("/opt/rocm/lib/rocblas/library/Kernels.so-000-gfx906.hsaco")
"""
from __future__ import annotations

import hashlib
import os
from typing import Callable

from rocmrevive.errors import RevError

CHUNK = 1 << 20


# a ``readinto(view) -> count`` function, 0 at the end: data that has no descriptor of its own
Reader = Callable[[memoryview], int]


def hash_fd(fd: int | Reader, h=None, *, sink=None, max_size: int | None = None, what="file") -> tuple[str, int]:
    """Feed everything readable from ``fd`` into ``h`` (a new sha256 by default), handing each
    chunk to ``sink`` too when given (a copy); stops with RevError("VERIFY_FAILED") as soon as
    more than ``max_size`` bytes were actually read. Returns (hex digest, bytes read).
    ``fd`` is a descriptor or a Reader (a tar member behind a decompressor). (The one hash-and-copy
    loop.)"""
    h = h if h is not None else hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    readinto = fd if callable(fd) else (lambda mv: os.readv(fd, [mv]))
    size = 0
    while True:
        n = readinto(view)
        if not n:
            break
        size += n
        if max_size is not None and size > max_size:
            raise RevError("VERIFY_FAILED", f"{what}: more than the {max_size:,} bytes allowed")
        chunk = view[:n]
        h.update(chunk)
        if sink is not None:
            sink(chunk)
    return h.hexdigest(), size


def sha256_file(path: str | os.PathLike, *, follow_symlinks: bool = True, h=None) -> tuple[str, int]:
    """(sha256 hex, size) of a file; with ``follow_symlinks=False`` a final symlink is refused
    (OSError) rather than followed."""
    flags = os.O_RDONLY | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        return hash_fd(fd, h)
    finally:
        os.close(fd)
