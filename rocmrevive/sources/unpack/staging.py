"""Which members are selected, and the staging folder they are written to.

A member is selected when its name, less ``./`` and the member prefix, passes the manifest's
``select``; a selected name must be printable UTF-8 (it becomes a file rocmrevive creates and
prints). ``StagingWriter`` creates files only inside one folder, through directory descriptors,
never following a link (``O_EXCL | O_NOFOLLOW``: a duplicate member is an error), counts what
each member declares against the limits, and on any error removes everything it made.

    writer = StagingWriter(Path("stage"), Limits())
    writer.stage("Kernels.so-000-gfx906.hsaco", size, 0o644, lambda fd: copy_fd(src, fd))
    writer.close(); writer.files[0].sha256         # or writer.abort(): nothing is left
"""
from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rocmrevive.errors import RevError
from rocmrevive.fs import printable_name
from rocmrevive.sources.unpack.limits import ArchiveError, Limits
from rocmrevive.units import size_text


@dataclass(frozen=True)
class StagedFile:
    """One member written to staging. ``name`` is relative to the member prefix."""

    name: str
    path: Path
    size: int
    sha256: str
    mode: int


# --------------------------------------------------------------------------------------------
# selection


def norm_prefix(prefix: str) -> str:
    """A member prefix as member names are compared with it: ``"./usr/lib/"`` -> ``"usr/lib/"``."""
    p = prefix.strip()
    while p.startswith("./"):
        p = p[2:]
    p = p.lstrip("/")
    if p and not p.endswith("/"):
        p += "/"
    if any(part in ("..",) for part in p.split("/")):
        raise RevError("USAGE", f"member prefix {prefix!r} contains '..'")
    return p


def relative(name: str, prefix: str) -> str | None:
    """``name`` relative to the normalised ``prefix``, or None when it is not under it."""
    while name.startswith("./"):
        name = name[2:]
    if not name.startswith(prefix):
        return None
    rel = name[len(prefix):].rstrip("/")
    return rel or None


def check_printable(name: str) -> None:
    """A selected member becomes a file rocmrevive creates and prints: its name must be valid
    UTF-8 without control characters (newline, ESC...)."""
    if not printable_name(name):
        raise ArchiveError(f"member {ascii(name)} has control characters or non-UTF-8 bytes in its name; "
                           f"rocmrevive installs only printable UTF-8 path names")


# --------------------------------------------------------------------------------------------
# staging


class StagingWriter:
    """Creates files only inside one folder, through a directory fd, never following links."""

    def __init__(self, staging: Path, limits: Limits, progress: Callable[[int], None] | None = None):
        self.staging = staging
        self.limits = limits
        self.progress = progress
        self.files: list[StagedFile] = []
        self.selected_bytes = 0
        self._created_root = False
        self._made: list[tuple[int, str, bool]] = []  # (parent fd, name, is_dir) in creation order
        self._dirfds: dict[str, int] = {}
        if staging.exists():
            if not staging.is_dir() or staging.is_symlink():
                raise RevError("USAGE", f"staging {staging} is not a folder")
            if any(staging.iterdir()):
                raise RevError("USAGE", f"staging {staging} is not empty; give an empty or new folder")
        else:
            staging.mkdir(parents=True)
            self._created_root = True
        self._root_fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self._dirfds[""] = self._root_fd

    def stage(self, rel: str, declared: int, mode: int, fill: Callable[[int], tuple[str, int]]) -> None:
        """Write the selected member ``rel``: what it ``declared`` counted against the limits, the
        file created, ``fill(fd)`` copies its data and returns (sha256, bytes written)."""
        self._account(rel, declared)
        fd = self._create(rel)
        try:
            digest, size = fill(fd)
            mode = (mode & 0o755) | 0o400
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        self.files.append(StagedFile(rel, self.staging / rel, size, digest, mode))
        if self.progress is not None:
            self.progress(len(self.files))

    def _dir_fd(self, rel_dir: str) -> int:
        if rel_dir in self._dirfds:
            return self._dirfds[rel_dir]
        parent, _, leaf = rel_dir.rpartition("/")
        pfd = self._dir_fd(parent)
        try:
            os.mkdir(leaf, 0o755, dir_fd=pfd)
            self._made.append((pfd, leaf, True))
        except FileExistsError:
            pass
        try:
            fd = os.open(leaf, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=pfd)
        except (NotADirectoryError, OSError) as exc:
            if isinstance(exc, NotADirectoryError) or exc.errno == errno.ELOOP:
                raise ArchiveError(f"{rel_dir!r} is both a file and a folder among the selected members") from None
            raise
        self._dirfds[rel_dir] = fd
        return fd

    def _create(self, rel: str) -> int:
        if any(part in ("", ".") for part in rel.split("/")):
            raise ArchiveError(f"member {rel!r} has empty or '.' parts in its name")
        parent, _, leaf = rel.rpartition("/")
        pfd = self._dir_fd(parent)
        try:
            fd = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=pfd)
        except FileExistsError:
            raise ArchiveError(f"member {rel!r} appears twice") from None
        self._made.append((pfd, leaf, False))
        return fd

    def _account(self, rel: str, size: int) -> None:
        if size > self.limits.max_member_bytes:
            raise ArchiveError(f"member {rel!r} declares {size_text(size)}, more than the "
                               f"{size_text(self.limits.max_member_bytes)} allowed for one file (archive bomb?)")
        self.selected_bytes += size
        if self.selected_bytes > self.limits.max_selected_bytes:
            raise ArchiveError(f"selected members add up to more than {size_text(self.limits.max_selected_bytes)} "
                               f"(at {rel!r}; archive bomb?)")

    def _close_fds(self) -> None:
        for fd in set(self._dirfds.values()):
            try:
                os.close(fd)
            except OSError:
                pass
        self._dirfds.clear()

    def close(self) -> None:
        self._close_fds()

    def abort(self) -> None:
        """Remove everything this writer made, newest first."""
        for pfd, name, is_dir in reversed(self._made):
            try:
                if is_dir:
                    os.rmdir(name, dir_fd=pfd)
                else:
                    os.unlink(name, dir_fd=pfd)
            except OSError:
                pass
        self._made.clear()
        self._close_fds()
        self.files = []
        if self._created_root:
            shutil.rmtree(self.staging, ignore_errors=True)
