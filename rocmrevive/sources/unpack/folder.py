"""The selected files of an unpacked folder (``--from DIR``), copied into staging as safely as
archive members are.

Folders are walked by descriptor (``os.fwalk``, links not followed); each file is opened
``O_NOFOLLOW | O_NONBLOCK`` relative to its folder and checked with ``fstat`` after opening (a
FIFO, device or link swapped in is refused, never read), and the cap counts the bytes actually
read, not what ``lstat`` said.

    stage_folder(Path("unpacked"), "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/", select, writer)
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Callable

from rocmrevive.errors import RevError
from rocmrevive.fs import copy_fd
from rocmrevive.sources.unpack.limits import ArchiveError
from rocmrevive.sources.unpack.staging import StagingWriter, check_printable
from rocmrevive.units import size_text


def stage_folder(base: Path, prefix: str, select: Callable[[str], bool], writer: StagingWriter) -> None:
    """Stage every file under ``base/prefix`` whose name relative to it ``select`` takes, in
    sorted order; a selected link, device or fifo is refused."""
    top = base / prefix if prefix else base
    real_base = os.path.realpath(base)
    if not top.is_dir():
        raise ArchiveError(f"no folder {prefix or '.'} inside it")
    real_top = os.path.realpath(top)
    if real_top != real_base and not real_top.startswith(real_base + os.sep):
        raise ArchiveError(f"{prefix} leads outside the folder through a symbolic link")
    for dirpath, dirnames, filenames, dfd in os.fwalk(real_top, follow_symlinks=False):
        dirnames.sort()
        reldir = os.path.relpath(dirpath, real_top)
        reldir = "" if reldir == "." else reldir + "/"
        links = [d for d in dirnames if stat.S_ISLNK(os.stat(d, dir_fd=dfd, follow_symlinks=False).st_mode)]
        for fname in sorted(filenames + links):
            rel = reldir + fname
            if select(rel):
                check_printable(rel)
                _stage_file(dfd, fname, rel, writer)


def _stage_file(dfd: int, fname: str, rel: str, writer: StagingWriter) -> None:
    try:
        inp = os.open(fname, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ArchiveError(f"selected {rel!r} is a symbolic link, not a regular file") from None
        raise
    try:
        st = os.fstat(inp)
        if not stat.S_ISREG(st.st_mode):
            raise ArchiveError(f"selected {rel!r} is {_kind_of_mode(st.st_mode)}, not a regular file")
        os.set_blocking(inp, True)
        cap = min(st.st_size, writer.limits.max_member_bytes)

        def fill(fd: int) -> tuple[str, int]:
            try:
                return copy_fd(inp, fd, max_size=cap, what=rel)
            except RevError:
                raise ArchiveError(f"selected {rel!r} grew past the {size_text(st.st_size)} it had when opened "
                                   f"(changed while it was read?)") from None
        writer.stage(rel, st.st_size, st.st_mode, fill)
    finally:
        os.close(inp)


def _kind_of_mode(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a fifo"
    return "not a regular file"
