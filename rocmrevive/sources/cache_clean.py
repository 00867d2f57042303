"""``rocmrevive cache clean``: what the artifact cache holds that no manifest needs any more,
removed through descriptors opened from the cache folder (``rocmrevive.fs.Dir``), never by path.

Kept: an artifact a manifest pins (``sha256``) or a recorded resolution names, and the extraction
of a kept artifact for a known manifest. Removed: every other artifact and extraction, downloads
in progress no run holds (``partial/*.part`` and their ``*.lock``), staging folders of runs that
are gone. A cache other users can write is refused (its owner cleans it).

With ``everything`` (``cache clean --all``, apt-get clean's counterpart): every artifact, extraction
and recorded resolution goes too, pinned or not: all of it is re-fetchable, and the next install
downloads again. What a run holds right now (its download or extraction lock) stays.

A cache folder that does not exist is an empty cache: nothing to clean (``Cleaned.exists`` False).

    freed = clean_cache(Path("/var/cache/rocmrevive"), manifests, dry_run=True)
    freed.bytes, [e.name for e in freed.entries]
"""
from __future__ import annotations

import fcntl
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir

MAX_RECORD = 1 << 20


@dataclass(frozen=True)
class Entry:
    name: str      # relative to the cache, e.g. "sha256/0561…", "extracted/0561…-rocblas-4.4-gfx906"
    bytes: int
    why: str       # unpinned | unused | partial | stale


@dataclass(frozen=True)
class Cleaned:
    cache: str
    entries: tuple[Entry, ...]
    kept: int
    dry_run: bool
    exists: bool = True
    everything: bool = False

    @property
    def bytes(self) -> int:
        return sum(e.bytes for e in self.entries)

    def to_json(self) -> dict:
        return {"cache": self.cache, "exists": self.exists, "all": self.everything, "dry_run": self.dry_run,
                "bytes_freed": self.bytes, "kept": self.kept,
                "removed": [{"name": e.name, "bytes": e.bytes, "why": e.why} for e in self.entries]}


def clean_cache(cache_dir: Path, manifests, *, dry_run: bool = False, everything: bool = False) -> Cleaned:
    """Remove (or with ``dry_run`` only list) what no manifest needs, or with ``everything`` all
    that is re-fetchable; a missing cache is empty."""
    if not os.path.lexists(cache_dir):
        return Cleaned(str(cache_dir), (), 0, dry_run, exists=False, everything=everything)
    try:
        top = Dir.open(cache_dir, allow_shared=False, what="cache")
    except FileNotFoundError:
        return Cleaned(str(cache_dir), (), 0, dry_run, exists=False, everything=everything)
    with top:
        pinned = {s.sha256 for m in manifests for s in m.sources if s.sha256} | _resolved(top)
        ids = {m.id for m in manifests}
        out: list[Entry] = []
        kept = 0
        judges: tuple[tuple[str, Callable[[str], str | None] | None], ...] = (
            ("sha256", lambda n: None if n in pinned else "unpinned"),
            ("extracted", lambda n: _extraction(n, pinned, ids)),
            ("partial", None), ("staging", lambda n: "stale"))
        if everything:  # all that is re-fetchable, but what a run holds right now
            judges = (("sha256", lambda n: None if _held(top, f"{n}.lock") else "re-fetchable"),
                      ("extracted", lambda n: None if _held(top, f"extract-{n}.lock") else "re-fetchable"),
                      ("resolved", lambda n: "re-fetchable"), *judges[2:])
        for sub, judge in judges:
            try:
                d = top.sub(sub)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with d:
                for name in sorted(d.listdir()):
                    why = _partial(d, name) if judge is None else judge(name)
                    if why is None or (sub == "staging" and _alive(name)):
                        kept += 1
                        continue
                    out.append(Entry(f"{sub}/{name}", _size(d, name), why))
                    if not dry_run:
                        d.rmtree(name)
    return Cleaned(str(cache_dir), tuple(out), kept, dry_run, everything=everything)


def _held(top: Dir, lock: str) -> bool:
    """Whether a run holds ``partial/<lock>`` right now (downloading or extracting that entry)."""
    try:
        d = top.sub("partial")
    except (FileNotFoundError, NotADirectoryError):
        return False
    with d:
        return _partial(d, lock) is None


def _resolved(top: Dir) -> set[str]:
    """The artifacts recorded resolutions of unpinned (signed-index) sources name."""
    try:
        d = top.sub("resolved")
    except (FileNotFoundError, NotADirectoryError):
        return set()
    out = set()
    with d:
        for name in d.listdir():
            if not name.endswith(".json"):
                continue
            try:
                rec = json.loads(d.read_bytes(name, max_size=MAX_RECORD))
            except (OSError, ValueError, RevError):
                continue
            if isinstance(rec, dict) and isinstance(rec.get("sha256"), str):
                out.add(rec["sha256"])
    return out


def _extraction(name: str, pinned: set[str], ids: set[str]) -> str | None:
    sha, _, mid = name.partition("-")
    if mid in ids and any(p.startswith(sha) for p in pinned) and len(sha) == 32:
        return None
    return "unused"


def _partial(d: Dir, name: str) -> str | None:
    """A download in progress no run holds: its lock can be taken at once (or there is none)."""
    lock = name[:-len(".part")] + ".lock" if name.endswith(".part") else name
    st = d.lstat(lock)
    if st is None or not stat.S_ISREG(st.st_mode):
        return "partial"
    fd = d.open_rw(lock)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return None  # a run is downloading or extracting right now
    finally:
        os.close(fd)
    return "partial"


def _alive(name: str) -> bool:
    """Whether the run that made a staging folder (``stage-<pid>-…``) still runs."""
    parts = name.split("-")
    pid = next((int(p) for p in parts[1:] if p.isdigit()), None)
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _size(d: Dir, name: str) -> int:
    """Bytes under ``name`` (lstat only: a link counts as itself)."""
    st = d.lstat(name)
    if st is None:
        return 0
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size
    total = 0
    for top, dirs, files in os.walk(d.path / name, followlinks=False):
        for f in files + [x for x in dirs if os.path.islink(os.path.join(top, x))]:
            try:
                total += os.lstat(os.path.join(top, f)).st_size
            except OSError:
                pass
    return total
