"""Observing files of a tree: what a path is now (type, owner, mode, sha256), many paths hashed
in parallel, and whether that is the state a journal wants.

    cur = observe(real)                         # {"exists": True, "type": "f", "sha256": ..., "mode": ...}
    matches(cur, {"exists": True, "sha256": sha})
"""
from __future__ import annotations

import concurrent.futures
import os
import stat
from pathlib import Path

from rocmrevive.txn.fsutil import sha256_file
from rocmrevive.txn.journal import TEMP_SUFFIX

WORKERS = 8  # threads hashing or staging files at once


def observe(real: Path) -> dict:
    """The state of one path: {exists: False} or {exists, type, sha256 (files), size, mode, uid,
    gid, mtime_ns}. Never follows a final symlink."""
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        return {"exists": False}
    except NotADirectoryError:
        return {"exists": False}
    kind = "f" if stat.S_ISREG(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else \
        "d" if stat.S_ISDIR(st.st_mode) else "o"
    out = {"exists": True, "type": kind, "size": st.st_size, "mode": stat.S_IMODE(st.st_mode),
           "uid": st.st_uid, "gid": st.st_gid, "mtime_ns": st.st_mtime_ns}
    if kind == "f":
        out["sha256"] = sha256_file(real)[0]
    return out


def observe_all(reals: list[Path]) -> list[dict]:
    """``observe`` of many paths, hashing in parallel (hashlib and file reads release the GIL)."""
    if len(reals) < 4:
        return [observe(r) for r in reals]
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(WORKERS, len(reals))) as pool:
        return list(pool.map(observe, reals))


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
        return {"l": "now a symbolic link", "d": "now a folder"}.get(cur.get("type"), "not a regular file")
    return f"sha256 {cur['sha256'][:12]}…"


def temp_for(real: Path) -> Path:
    """The temporary a new file is staged in, beside its target (``.<name>.rocmrevive-new``)."""
    return real.parent / f".{real.name}{TEMP_SUFFIX}"

