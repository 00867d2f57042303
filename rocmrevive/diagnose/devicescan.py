"""Where the user's own device code is looked for, and the walk that finds it by content.

Every file in the places is read by its header (64 bytes; a host ELF's section table and name
table too: ``codeobj.sniff``), whatever its name or folder: a package rocmrevive has never heard
of, an executable not called ``llama-*``. Only the files whose header says device code go on
to the deep read. The places: every Python environment's site-packages (whole), and the install
places of source builds and bundles (``PLACES``). The ROCm trees (``/opt/rocm*``) are
``audit``'s library matrix, not walked here.

    for found in walk(Root("/"), places(Root("/"), ["/usr/lib/python3/dist-packages"])):
        found.path, found.where, found.kind      # '/usr/local/bin/whisper-cli', '/usr/local/bin', 'host-elf'
"""
from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from rocmrevive.codeobj.bundle import BUNDLE_MAGIC, CCOB_MAGIC
from rocmrevive.codeobj.elf import ELF_MAGIC
from rocmrevive.codeobj.sniff import sniff
from rocmrevive.rootfs import Root

# machine-path globs of folders walked whole (besides the Python environments)
PLACES: tuple[str, ...] = (
    "/usr/local/bin", "/usr/local/sbin", "/usr/local/lib", "/usr/local/lib64", "/usr/local/libexec",
    "/usr/lib/ollama", "/usr/lib/*/ggml", "/opt/*",
    "/root/*/build", "/home/*/*/build", "/home/*/*/*/build", "/home/*/.local/bin",
)
MAX_DEPTH = 24
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_MAGICS = (ELF_MAGIC, BUNDLE_MAGIC, CCOB_MAGIC)   # what a device-code container can start with
MAX_FILES = 2_000_000   # a walk stops there (a home folder turned into a file bomb), and says so


@dataclass(frozen=True)
class Place:
    path: str     # machine path of the folder
    where: str    # what a report calls it: the site-packages, or "" for the file's own folder
    site: bool    # a Python environment's site-packages (pip's RECORD names the owners)


@dataclass(frozen=True)
class Found:
    path: str     # machine path of a file whose header says device code
    where: str
    site: str | None
    kind: str     # codeobj.sniff's kind


@dataclass
class Walked:
    """What a walk counted (filled while ``walk`` yields)."""

    files: int = 0
    candidates: int = 0
    truncated: bool = False


def places(root: Root, site_packages: list[str]) -> list[Place]:
    """The Python environments first (their files are theirs), then ``PLACES`` as the machine has
    them, without the ROCm trees."""
    out = [Place(s, s, True) for s in site_packages]
    base = "" if root.is_host else glob.escape(str(root.base))
    for pattern in PLACES:
        for real in sorted(glob.glob(base + pattern)):
            mpath = root.machine_path(real)
            if mpath.startswith("/opt/rocm") or os.path.islink(real) or not os.path.isdir(real):
                continue
            out.append(Place(mpath, "", False))
    return out


def walk(root: Root, where: list[Place], counts: Walked | None = None) -> Iterator[Found]:
    """Every regular file of ``where`` whose header says device code, each real file and folder
    once; links are not followed (an absolute one could leave the root)."""
    counts = counts if counts is not None else Walked()
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: set[tuple[int, int]] = set()
    # the loop runs once per file of every environment: names it calls are bound here once
    open_, pread, close, stat_, scandir = os.open, os.pread, os.close, os.stat, os.scandir
    files = counts.files
    try:
        for place in where:
            stack: list[tuple[Path | str, int]] = [(root.path(place.path), 0)]
            while stack:
                folder, depth = stack.pop()
                try:
                    st = stat_(folder, follow_symlinks=False)
                    if (st.st_dev, st.st_ino) in seen_dirs:
                        continue
                    seen_dirs.add((st.st_dev, st.st_ino))
                    with scandir(folder) as it:
                        entries = list(it)   # the report is sorted at the end; no order needed here
                except OSError:
                    continue
                for e in entries:
                    if files >= MAX_FILES:
                        counts.truncated = True
                        return
                    try:
                        if e.is_dir(follow_symlinks=False):
                            if depth < MAX_DEPTH:
                                stack.append((e.path, depth + 1))
                            continue
                        if not e.is_file(follow_symlinks=False):
                            continue
                    except OSError:
                        continue
                    files += 1
                    # the header read, here rather than in a call per file (most of a site-packages
                    # ends at it): opened without following a link and non-blocking (a FIFO swapped
                    # in after the listing reads nothing)
                    try:
                        fd = open_(e.path, _OPEN)
                    except OSError:
                        continue
                    try:
                        head = pread(fd, 64, 0)
                        found = _look(root, fd, head, e, place, seen_files) if head.startswith(_MAGICS) else None
                    except OSError:
                        found = None
                    finally:
                        close(fd)
                    if found is not None:
                        counts.candidates += 1
                        counts.files = files   # as far as the walk has come, while the caller reads it
                        yield found
    finally:
        counts.files = files


def _look(root: Root, fd: int, head: bytes, entry: os.DirEntry, place: Place,
          seen: set[tuple[int, int]]) -> Found | None:
    """A file whose first bytes can start a container: an ``fstat`` (regular, each real file
    once) and ``sniff``. OSError from the reads goes to the caller."""
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    if not stat.S_ISREG(st.st_mode) or key in seen:
        return None
    seen.add(key)
    kind = sniff(fd, st.st_size, head)
    if kind is None:
        return None
    mpath = root.machine_path(entry.path)
    where = place.where or os.path.dirname(mpath)
    return Found(mpath, where, place.path if place.site else None, kind)


__all__ = ["places", "walk", "Place", "Found", "Walked", "PLACES"]
