"""Unpack only the members a manifest selects from a ``.deb``, a tarball or a folder, safely.

What an artifact is made of, one module each:

    deb.py         the ar container of a .deb (deb(5)): which byte range is data.tar, compressed how
    decompress.py  that range as one byte stream: the system xz/zstd/gzip/bzip2 behind a pipe, or Python's
    xzblocks.py    a multi-block xz (dpkg's threaded one) read by block: blocks inside skipped data never decoded
    tar.py         the tar reader: members one by one, names checked (absolute, '..', NUL refused)
    staging.py     member selection (prefix, select) and the staging folder files are written to
    folder.py      an unpacked folder given with --from, walked by descriptor
    limits.py      Limits (bomb bounds) and ArchiveError

The data tarball is read once, header by header, and every member that is not selected is
skipped without being copied (``splice`` to /dev/null on a pipe; in a multi-block xz, the blocks
lying wholly inside it are not even decoded). Only selected members are written, into a staging
folder.

Refused, with one line naming the archive and the member: absolute names and ``..`` anywhere in
the archive; links, devices, fifos and directories among selected members; duplicates; a member
declaring more bytes than the limits allow (tar bombs); truncated or corrupt streams; a bad ``ar``
header. On any error every file written is removed again (and the staging folder, when this
call created it).

    files = extract_selected(Path("librocblas4_6.4.4-4_amd64.deb"), manifest.select, Path("stage"),
                             member_prefix="./usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/")
    files[0].name, files[0].sha256          # "Kernels.so-000-gfx906.hsaco", "9f2c..."
"""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO, Callable

from rocmrevive.errors import RevError
from rocmrevive.fs import disk_full
from rocmrevive.sources.unpack.deb import AR_MAGIC, data_tar
from rocmrevive.sources.unpack.decompress import compression_of, open_stream
from rocmrevive.sources.unpack.folder import stage_folder
from rocmrevive.sources.unpack.limits import ArchiveError, Limits
from rocmrevive.sources.unpack.staging import StagedFile, StagingWriter, check_printable, norm_prefix, relative
from rocmrevive.sources.unpack.tar import BLOCK, TarReader, is_tar_header

__all__ = ["Limits", "StagedFile", "archive_kind", "extract_selected", "norm_prefix"]


def extract_selected(artifact: Path | os.PathLike, select: Callable[[str], bool], staging: Path | os.PathLike,
                     *, member_prefix: str = "", limits: Limits = Limits(),
                     external: bool = True, progress: Callable[[int], None] | None = None) -> list[StagedFile]:
    """Write the members under ``member_prefix`` for which ``select(relative name)`` is true into
    ``staging`` (created if missing; must be empty), and return them in archive order.

    ``artifact`` is a ``.deb``, a tarball (plain, xz, zstd, gzip, bzip2: found by magic, not by
    name) or a folder holding an unpacked tree. ``external=False`` forces Python's decompressors.
    ``progress(n)`` is called with the number of members written so far, after each one.
    Raises RevError("VERIFY_FAILED", ...) for an unsafe or damaged archive, ("USAGE", ...) for a
    missing artifact or a non-empty staging folder.
    """
    artifact = Path(artifact)
    staging = Path(staging)
    prefix = norm_prefix(member_prefix)
    if not artifact.exists():
        raise RevError("USAGE", f"{artifact}: no such file or folder")
    writer = StagingWriter(staging, limits, progress)
    try:
        if artifact.is_dir():
            stage_folder(artifact, prefix, select, writer)
        else:
            with open(artifact, "rb") as f:
                _stage_archive(f, prefix, select, writer, external)
    except ArchiveError as exc:
        writer.abort()
        raise RevError("VERIFY_FAILED", f"{artifact}: {exc}; nothing was kept in {staging}") from None
    except OSError as exc:  # disk full, read-only staging, I/O error
        writer.abort()
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise disk_full(staging, f"extracting {artifact}") from None
        raise RevError("PERMISSION", f"extracting {artifact} into {staging}: {exc.strerror or exc}; "
                                     f"nothing was kept") from None
    except BaseException:
        writer.abort()
        raise
    writer.close()
    return writer.files


def archive_kind(path: Path | os.PathLike) -> str:
    """"deb", "tar", "tar.xz", "tar.zst", "tar.gz", "tar.bz2", "dir" or "unknown", by content."""
    p = Path(path)
    if p.is_dir():
        return "dir"
    with open(p, "rb") as f:
        head = f.read(BLOCK)
    if head.startswith(AR_MAGIC):
        return "deb"
    comp = compression_of(head)
    if comp:
        return "tar." + comp
    if is_tar_header(head):
        return "tar"
    return "unknown"


def _stage_archive(f: BinaryIO, prefix: str, select: Callable[[str], bool], writer: StagingWriter,
                   external: bool) -> None:
    """A .deb's data tarball, or a tarball: decompressed as one stream, its selected members staged."""
    size = os.fstat(f.fileno()).st_size
    head = f.read(BLOCK)
    if head.startswith(AR_MAGIC):
        member, comp = data_tar(f, size)
        off, length, label = member.offset, member.size, member.name
    else:
        comp = compression_of(head) or ("none" if is_tar_header(head) else "")
        if not comp:
            raise ArchiveError("neither a Debian package nor a tarball")
        off, length, label = 0, size, "tarball"
    stream = open_stream(f, off, length, comp, external)
    try:
        _stage_members(TarReader(stream, label, writer.limits), prefix, select, writer)
    except ArchiveError as exc:
        detail = stream.failure()
        stream.abort()
        if detail:
            raise ArchiveError(f"{exc} ({detail})") from None
        raise
    except BaseException:
        stream.abort()
        raise
    detail = stream.finish()
    if detail:
        raise ArchiveError(f"{label} is corrupt ({detail})")


def _stage_members(reader: TarReader, prefix: str, select: Callable[[str], bool], writer: StagingWriter) -> None:
    for m in reader.members():
        rel = relative(m.name, prefix)
        if rel is None or not select(rel):
            continue
        check_printable(m.name)
        m.check_regular()
        writer.stage(rel, m.size, m.mode, lambda fd: (reader.copy_to(m, fd), m.size))
