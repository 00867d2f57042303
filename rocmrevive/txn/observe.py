"""Observing files of a tree: what a path is now (type, owner, mode, sha256), many paths hashed
in parallel, and whether that is the state a journal wants.

    cur = observe(real)                         # {"exists": True, "type": "f", "sha256": ..., "mode": ...}
    matches(cur, {"exists": True, "sha256": sha})
"""
from __future__ import annotations

import concurrent.futures
import errno
import os
import stat
from pathlib import Path

from rocmrevive.hashing import hash_fd
from rocmrevive.txn.folders import Folders
from rocmrevive.txn.fsutil import sha256_file
from rocmrevive.txn.journal import TEMP_SUFFIX

WORKERS = 8  # threads hashing or staging files at once


def observe(real: Path, folders: Folders | None = None) -> dict:
    """The state of one path: {exists: False} or {exists, type, sha256 (files), size, mode, uid,
    gid, mtime_ns, ino}. Never follows a final symlink. With ``folders`` (a transaction's
    surveyed folders) the path is looked at and read through its folder's descriptor."""
    if folders is not None:
        return _observe_at(real, folders)
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        return {"exists": False}
    except NotADirectoryError:
        return {"exists": False}
    out = _described(st)
    if out["type"] == "f":
        out["sha256"] = sha256_file(real)[0]
    return out


def _observe_at(real: Path, folders: Folders) -> dict:
    try:
        st = folders.lstat(real)
        if st is None or not stat.S_ISREG(st.st_mode):
            return _described(st) if st is not None else {"exists": False}
        fd = folders.open_file(real)
    except (FileNotFoundError, NotADirectoryError):
        return {"exists": False}
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EINVAL):
            raise
        return {"exists": True, "type": "o"}  # a link or a FIFO took its place between the two looks
    try:
        st = os.fstat(fd)
        out = _described(st)
        out["sha256"] = hash_fd(fd)[0]
    finally:
        os.close(fd)
    return out


def _described(st: os.stat_result) -> dict:
    kind = "f" if stat.S_ISREG(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else \
        "d" if stat.S_ISDIR(st.st_mode) else "o"
    return {"exists": True, "type": kind, "size": st.st_size, "mode": stat.S_IMODE(st.st_mode),
            "uid": st.st_uid, "gid": st.st_gid, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


def observe_all(reals: list[Path], folders: Folders | None = None) -> list[dict]:
    """``observe`` of many paths, hashing in parallel (hashlib and file reads release the GIL).
    The folders are opened first, one thread, so the workers only read."""
    if folders is not None:
        for d in sorted({r.parent for r in reals}):
            folders.exists(d)
    if len(reals) < 4:
        return [observe(r, folders) for r in reals]
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(WORKERS, len(reals))) as pool:
        return list(pool.map(lambda r: observe(r, folders), reals))


def matches(cur: dict, want: dict) -> bool:
    """Whether an observed path is in the state ``want`` ({exists: False} or a file's sha256)."""
    if not want.get("exists"):
        return not cur.get("exists")
    return bool(cur.get("exists")) and cur.get("type") == "f" and cur.get("sha256") == want.get("sha256")


def describe(cur: dict) -> str:
    """An observed path in a few words for a message (``missing``, ``sha256 0a1b2c…``)."""
    if not cur.get("exists"):
        return "missing"
    if cur.get("type") != "f":
        return {"l": "now a symbolic link", "d": "now a folder"}.get(str(cur.get("type")), "not a regular file")
    return f"sha256 {cur['sha256'][:12]}…"


def legacy_temp(real: Path) -> Path:
    """The fixed temporary name journals before random temporaries used (``.<name>.rocmrevive-new``):
    an undo of such a journal removes it (a file only, through its folder's descriptor)."""
    return real.parent / f".{real.name}{TEMP_SUFFIX}"

