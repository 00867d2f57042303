"""The one way rocmrevive hashes a file (sha256, streamed, 1 MiB at a time).

    sha, size = sha256_file("/opt/rocm/lib/rocblas/library/Kernels.so-000-gfx906.hsaco")
"""
from __future__ import annotations

import hashlib
import os

CHUNK = 1 << 20


def hash_fd(fd: int, h=None) -> tuple[str, int]:
    """Feed everything readable from ``fd`` into ``h`` (a new sha256 by default);
    return (hex digest, bytes read)."""
    h = h if h is not None else hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    size = 0
    while True:
        n = os.readv(fd, [buf])
        if not n:
            break
        h.update(view[:n])
        size += n
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
