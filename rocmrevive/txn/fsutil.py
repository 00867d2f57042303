"""File primitives of a transaction: hash a file, copy while hashing into a durable temporary,
fsync a folder (both from rocmrevive.fs), and the one tree hash every test and check compares.

    sha, size = sha256_file(path)
    sha, size = fill_temp(src, dfd, mode=0o644, uid=0, gid=0, expect_sha256=sha)  # dfd: an O_EXCL temporary
    (renamed into place through its folder's descriptor: txn.folders, docs/transactions.md)
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


def fill_temp(src: str | os.PathLike | int, dfd: int, *, mode: int, uid: int | None = None,
              gid: int | None = None, expect_sha256: str | None = None, mtime_ns: int | None = None,
              synced: Callable[[os.stat_result], None] | None = None) -> tuple[str, int]:
    """Copy ``src`` (a path, or a descriptor this function closes) into the fresh temporary open
    at ``dfd`` (created ``O_EXCL`` by the caller, see ``txn.folders``), hashing the bytes on the
    way, then set owner, mode and (optionally) mtime and fsync it; the caller renames it into
    place, or removes it on failure. Closes ``dfd``. Raises ``HashMismatch`` when
    ``expect_sha256`` differs. ``synced`` gets the fstat of the written file after the fsync
    (``TxResult.written``).

        sha, size = fill_temp(staged, folders.open_temp(tmp), mode=0o644, uid=0, gid=0, expect_sha256=sha)
    """
    try:
        sfd = src if isinstance(src, int) else os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    except BaseException:
        os.close(dfd)
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
    finally:
        os.close(dfd)
        os.close(sfd)
    return sha, size


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
