"""File primitives of a transaction: hash a file, copy while hashing into a durable temporary,
fsync a folder (both from rocmrevive.fs), and the one tree hash every test and check compares.

    sha, size = sha256_file(path)
    sha, size = stage_copy(src, tmp, mode=0o644, uid=0, gid=0, expect_sha256=sha)
    os.replace(tmp, dest); fsync_dir(dest.parent)       # docs/transactions.md, "Atomic replacement"
    tree_hash("/opt/rocm-6.4.3")                         # paths + types + modes + owners + sha256
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Callable

from rocmrevive.fs import copy_fd, fsync_dir  # noqa: F401  (fsync_dir: re-exported)
from rocmrevive.hashing import sha256_file as _sha256_file




class HashMismatch(Exception):
    """The bytes copied do not have the sha256 the caller expected."""

    def __init__(self, path, expected: str, found: str):
        super().__init__(f"{path}: sha256 {found[:12]}… where {expected[:12]}… was expected")
        self.path, self.expected, self.found = path, expected, found


def sha256_file(path: str | os.PathLike) -> tuple[str, int]:
    """(sha256 hex, size) of a regular file; does not follow a final symlink.

        sha, size = sha256_file("/opt/rocm/lib/rocblas/library/Kernels.so-000-gfx906.hsaco")
    """
    return _sha256_file(path, follow_symlinks=False)


def stage_copy(src: str | os.PathLike, tmp: str | os.PathLike, *, mode: int, uid: int | None = None,
               gid: int | None = None, expect_sha256: str | None = None,
               mtime_ns: int | None = None, synced: Callable[[os.stat_result], None] | None = None
               ) -> tuple[str, int]:
    """Copy ``src`` to the new file ``tmp`` (which must not exist), hashing the bytes on the way,
    then set owner, mode and (optionally) mtime and fsync it. The caller renames it into place.
    On any failure ``tmp`` is removed. Raises ``HashMismatch`` when ``expect_sha256`` differs.
    ``synced`` gets the fstat of the written file after the fsync (``TxResult.written``).
    """
    sfd = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    try:
        dfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except BaseException:
        os.close(sfd)
        raise
    try:
        sha, size = copy_fd(sfd, dfd)
        if expect_sha256 is not None and sha != expect_sha256:
            raise HashMismatch(src, expect_sha256, sha)
        st = os.fstat(dfd)
        want_uid = st.st_uid if uid is None else uid
        want_gid = st.st_gid if gid is None else gid
        if (want_uid, want_gid) != (st.st_uid, st.st_gid):
            os.fchown(dfd, want_uid, want_gid)
        os.fchmod(dfd, mode)  # after chown, which clears set-id bits
        if mtime_ns is not None:
            os.utime(dfd, ns=(mtime_ns, mtime_ns))
        os.fsync(dfd)
        if synced is not None:
            synced(os.fstat(dfd))
    except BaseException:
        os.close(dfd)
        os.close(sfd)
        _unlink_quiet(tmp)
        raise
    os.close(dfd)
    os.close(sfd)
    return sha, size


def _unlink_quiet(path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def tree_listing(path: str | os.PathLike, *, owners: bool = True) -> dict[str, list]:
    """Every entry under ``path`` (itself included as ""), as rel -> [type, mode, uid, gid, content]
    where content is the sha256 of a file or the target of a symlink. Symlinks are not followed."""
    base = Path(path)
    out: dict[str, list] = {}

    def entry(p: Path, rel: str) -> None:
        st = os.lstat(p)
        own = [st.st_uid, st.st_gid] if owners else [None, None]
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ["l", None, *own, os.readlink(p)]
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = ["d", stat.S_IMODE(st.st_mode), *own, None]
            with os.scandir(p) as it:
                names = sorted(e.name for e in it)
            for name in names:
                entry(p / name, f"{rel}/{name}" if rel else name)
        elif stat.S_ISREG(st.st_mode):
            out[rel] = ["f", stat.S_IMODE(st.st_mode), *own, sha256_file(p)[0]]
        else:
            out[rel] = ["o", stat.S_IMODE(st.st_mode), *own, None]

    entry(base, "")
    return out


def tree_hash(path: str | os.PathLike, *, owners: bool = True) -> str:
    """One sha256 over every path, type, mode, owner and content under ``path``: equal hashes mean
    byte-identical trees (mtimes aside).

        assert tree_hash(tree) == before   # after a rollback
    """
    listing = tree_listing(path, owners=owners)
    return hashlib.sha256(json.dumps(listing, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
