"""Unpack only the members a manifest selects from a ``.deb``, a tarball or a folder, safely.

A ``.deb`` is an ``ar`` archive (deb(5)): ``debian-binary``, ``control.tar.*``, ``data.tar.{xz,zst,gz,bz2}``.
The data tarball is streamed once: decompressed by the system ``xz``/``zstd``/``gzip``/``bzip2``
when present (xz decodes multi-block streams on several threads, as dpkg does) and otherwise by
Python, read header by header, and every member that is not selected is skipped without being
copied (``splice`` to /dev/null on a pipe). Only selected members are written, into a staging folder.

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

import bz2
import errno
import gzip
import hashlib
import io
import lzma
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rocmrevive.errors import RevError
from rocmrevive.fs import copy_fd, printable_name

GiB = 1 << 30
CHUNK = 1 << 20
BLOCK = 512


@dataclass(frozen=True)
class StagedFile:
    """One member written to staging. ``name`` is relative to the member prefix."""

    name: str
    path: Path
    size: int
    sha256: str
    mode: int


@dataclass(frozen=True)
class Limits:
    """Bounds that turn archive bombs into errors instead of full disks or endless loops."""

    max_member_bytes: int = 4 * GiB       # one selected member (rocBLAS' largest gfx906 file: 17 MB)
    max_selected_bytes: int = 32 * GiB    # all selected members together
    max_stream_bytes: int = 256 * GiB     # the whole decompressed tar stream, skipped parts included
    max_members: int = 2_000_000
    max_meta_bytes: int = 1 << 20         # one GNU long name / pax header


class ArchiveError(Exception):
    """What is wrong with an archive, in a few words; becomes a RevError naming the archive."""


# --------------------------------------------------------------------------------------------
# public entry point


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
    writer = _StagingWriter(staging, limits, progress)
    try:
        if artifact.is_dir():
            _extract_tree(artifact, prefix, select, writer)
        else:
            with open(artifact, "rb") as f:
                _extract_file(f, artifact, prefix, select, writer, limits, external)
    except ArchiveError as exc:
        writer.abort()
        raise RevError("VERIFY_FAILED", f"{artifact}: {exc}; nothing was kept in {staging}") from None
    except OSError as exc:  # disk full, read-only staging, I/O error
        writer.abort()
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
    if head.startswith(b"!<arch>\n"):
        return "deb"
    comp = _compression_of(head)
    if comp:
        return "tar." + comp
    if len(head) == BLOCK and head[257:262] == b"ustar":
        return "tar"
    return "unknown"


# --------------------------------------------------------------------------------------------
# names


def norm_prefix(prefix: str) -> str:
    p = prefix.strip()
    while p.startswith("./"):
        p = p[2:]
    p = p.lstrip("/")
    if p and not p.endswith("/"):
        p += "/"
    if any(part in ("..",) for part in p.split("/")):
        raise RevError("USAGE", f"member prefix {prefix!r} contains '..'")
    return p


def _norm_name(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name


def _check_name(name: str) -> None:
    """Refuse names that could land outside any extraction folder, wherever they are."""
    if "\x00" in name:
        raise ArchiveError(f"member {name!r} has a NUL byte in its name")
    if name.startswith("/"):
        raise ArchiveError(f"member {name!r} has an absolute path")
    if ".." in name.split("/"):
        raise ArchiveError(f"member {name!r} climbs out with '..'")


def _check_printable(name: str) -> None:
    """A selected member becomes a file rocmrevive creates and prints: its name must be valid
    UTF-8 without control characters (newline, ESC...)."""
    if not printable_name(name):
        raise ArchiveError(f"member {ascii(name)} has control characters or non-UTF-8 bytes in its name; "
                           f"rocmrevive installs only printable UTF-8 path names")


def _relative(name: str, prefix: str) -> str | None:
    n = _norm_name(name)
    if not n.startswith(prefix):
        return None
    rel = n[len(prefix):].rstrip("/")
    return rel or None


# --------------------------------------------------------------------------------------------
# staging


class _StagingWriter:
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

    def create(self, rel: str) -> int:
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

    def account(self, rel: str, size: int) -> None:
        if size > self.limits.max_member_bytes:
            raise ArchiveError(f"member {rel!r} declares {_human(size)}, more than the "
                               f"{_human(self.limits.max_member_bytes)} allowed for one file (archive bomb?)")
        self.selected_bytes += size
        if self.selected_bytes > self.limits.max_selected_bytes:
            raise ArchiveError(f"selected members add up to more than {_human(self.limits.max_selected_bytes)} "
                               f"(at {rel!r}; archive bomb?)")

    def finish(self, rel: str, fd: int, size: int, digest: str, mode: int) -> None:
        mode = (mode & 0o755) | 0o400
        os.fchmod(fd, mode)
        os.close(fd)
        self.files.append(StagedFile(rel, self.staging / rel, size, digest, mode))
        if self.progress is not None:
            self.progress(len(self.files))

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


# --------------------------------------------------------------------------------------------
# folders


def _extract_tree(base: Path, prefix: str, select: Callable[[str], bool], writer: _StagingWriter) -> None:
    """Copy the selected files of an unpacked folder. Folders are walked by descriptor
    (``os.fwalk``, links not followed); each file is opened ``O_NOFOLLOW | O_NONBLOCK`` relative
    to its folder and checked with ``fstat`` after opening (a FIFO, device or link swapped in is
    refused, never read), and the cap counts the bytes actually read, not what ``lstat`` said."""
    top = base / prefix if prefix else base
    real_base = os.path.realpath(base)
    if not top.is_dir():
        raise ArchiveError(f"no folder {prefix or '.'} inside it")
    real_top = os.path.realpath(top)
    if real_top != real_base and not real_top.startswith(real_base + os.sep):
        raise ArchiveError(f"{prefix} leads outside the folder through a symbolic link")
    cap = writer.limits.max_member_bytes
    for dirpath, dirnames, filenames, dfd in os.fwalk(real_top, follow_symlinks=False):
        dirnames.sort()
        reldir = os.path.relpath(dirpath, real_top)
        reldir = "" if reldir == "." else reldir + "/"
        links = [d for d in dirnames if stat.S_ISLNK(os.stat(d, dir_fd=dfd, follow_symlinks=False).st_mode)]
        for fname in sorted(filenames + links):
            rel = reldir + fname
            if not select(rel):
                continue
            _check_printable(rel)
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
                writer.account(rel, st.st_size)
                fd = writer.create(rel)
                try:
                    digest, n = copy_fd(inp, fd, max_size=max(st.st_size, 0) if st.st_size <= cap else cap,
                                        what=rel)
                except RevError:
                    os.close(fd)
                    raise ArchiveError(f"selected {rel!r} grew past the {_human(st.st_size)} it had when opened "
                                       f"(changed while it was read?)") from None
                except BaseException:
                    os.close(fd)
                    raise
                writer.finish(rel, fd, n, digest, st.st_mode)
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


# --------------------------------------------------------------------------------------------
# ar (deb(5)) and compression


def _read_ar(f, size: int) -> list[tuple[str, int, int]]:
    """(name, data offset, data size) of every member, checking each 60-byte header."""
    f.seek(0)
    if f.read(8) != b"!<arch>\n":
        raise ArchiveError("not an ar archive (bad magic), so not a Debian package")
    pos, out = 8, []
    while pos < size:
        f.seek(pos)
        hdr = f.read(60)
        if len(hdr) == 1 and hdr == b"\n":  # trailing padding
            break
        if len(hdr) < 60:
            raise ArchiveError(f"ar header at offset {pos} is truncated")
        if hdr[58:60] != b"`\n":
            raise ArchiveError(f"bad ar header at offset {pos} (no end marker)")
        name = hdr[0:16].rstrip(b" ").decode("ascii", "replace")
        if name.endswith("/") and name != "/":
            name = name[:-1]
        field = hdr[48:58].strip()
        if not field.isdigit():
            raise ArchiveError(f"bad ar header at offset {pos} (size {field!r})")
        msize = int(field)
        data = pos + 60
        if data + msize > size:
            raise ArchiveError(f"ar member {name} is truncated: it declares {msize} bytes, "
                               f"{max(0, size - data)} are there")
        out.append((name, data, msize))
        pos = data + msize + (msize & 1)
    return out


_EXT = {".xz": "xz", ".zst": "zst", ".gz": "gz", ".bz2": "bz2", "": "none", ".lzma": "lzma"}


def _compression_of(head: bytes) -> str | None:
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zst"
    if head.startswith(b"\x1f\x8b"):
        return "gz"
    if head.startswith(b"BZh"):
        return "bz2"
    return None


def _extract_file(f, artifact: Path, prefix: str, select, writer: _StagingWriter, limits: Limits,
                  external: bool) -> None:
    size = os.fstat(f.fileno()).st_size
    head = f.read(BLOCK)
    if head.startswith(b"!<arch>\n"):
        members = _read_ar(f, size)
        if not members or members[0][0] != "debian-binary":
            raise ArchiveError("first ar member is not debian-binary, so not a Debian package")
        f.seek(members[0][1])
        if not f.read(min(members[0][2], 16)).startswith(b"2."):
            raise ArchiveError("debian-binary is not format 2.x")
        data = [m for m in members if m[0].startswith("data.tar")]
        if len(data) != 1:
            raise ArchiveError(f"{len(data)} data.tar members (expected one)")
        name, off, length = data[0]
        ext = name[len("data.tar"):]
        if ext not in _EXT or ext == ".lzma":
            raise ArchiveError(f"{name}: unsupported compression")
        comp = _EXT[ext]
        f.seek(off)
        magic = f.read(6)
        actual = _compression_of(magic) or "none"
        if actual != comp:
            raise ArchiveError(f"{name} does not hold {comp} data")
        label = name
    else:
        comp = _compression_of(head)
        if comp is None:
            if len(head) == BLOCK and head[257:262] == b"ustar":
                comp = "none"
            else:
                raise ArchiveError("neither a Debian package nor a tarball")
        off, length, label = 0, size, "tarball"
    stream = _open_stream(f, off, length, comp, external)
    try:
        _read_tar(stream, label, prefix, select, writer, limits)
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


# --------------------------------------------------------------------------------------------
# byte streams: an external decompressor behind a pipe, or a Python file object


class _Stream:
    def readinto(self, mv: memoryview) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def skip(self, n: int) -> int:
        """Discard up to n bytes; return how many were discarded (0 at end of stream)."""
        raise NotImplementedError  # pragma: no cover

    def failure(self) -> str | None:
        return None

    def finish(self) -> str | None:
        """Drain and close; return what went wrong in the decompressor, or None."""
        return None

    def abort(self) -> None:
        pass


def _external_command(comp: str) -> list[str] | None:
    cands = {
        "xz": [["xz", "-dc", "-T0"]],
        "zst": [["zstd", "-dcq"]],
        "gz": [["pigz", "-dc"], ["gzip", "-dc"]],
        "bz2": [["lbzip2", "-dc"], ["bzip2", "-dc"]],
    }.get(comp, [])
    for cmd in cands:
        exe = shutil.which(cmd[0])
        if exe:
            return [exe] + cmd[1:]
    return None


class _PipeStream(_Stream):
    """A decompressor subprocess: a thread feeds it the compressed byte range, we read its stdout."""

    def __init__(self, f, offset: int, length: int, cmd: list[str]):
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     bufsize=0, env={**os.environ, "LC_ALL": "C"}, close_fds=True)
        self.fd = self.proc.stdout.fileno()
        self.name = os.path.basename(cmd[0])
        try:  # a bigger pipe means fewer wake-ups between the decompressor and us
            import fcntl

            fcntl.fcntl(self.fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), CHUNK)
        except OSError:
            pass
        self._null = os.open(os.devnull, os.O_WRONLY)
        self._splice = hasattr(os, "splice")
        self._scratch = memoryview(bytearray(CHUNK))
        self._feed_error: BaseException | None = None
        self.eof = False
        self._feeder = threading.Thread(target=self._feed, args=(f.fileno(), offset, length), daemon=True)
        self._feeder.start()

    def _feed(self, src: int, offset: int, length: int) -> None:
        dst = self.proc.stdin.fileno()
        try:
            end = offset + length
            pos = offset
            use_splice = hasattr(os, "splice")
            while pos < end:
                n = 0
                if use_splice:
                    try:
                        n = os.splice(src, dst, min(CHUNK, end - pos), offset_src=pos)
                    except OSError as exc:
                        if exc.errno in (errno.EINVAL, errno.ENOSYS):
                            use_splice = False
                            continue
                        raise
                else:
                    data = os.pread(src, min(CHUNK, end - pos), pos)
                    n = len(data)
                    view = memoryview(data)
                    while view:
                        w = os.write(dst, view)
                        view = view[w:]
                if n == 0:
                    break
                pos += n
        except (BrokenPipeError, ValueError, OSError) as exc:
            if not isinstance(exc, BrokenPipeError):
                self._feed_error = exc
        finally:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def readinto(self, mv: memoryview) -> int:
        k = os.readv(self.fd, [mv])
        if k == 0:
            self.eof = True
        return k

    def skip(self, n: int) -> int:
        k = -1
        if self._splice:
            try:
                k = os.splice(self.fd, self._null, n)
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOSYS):
                    raise
                self._splice = False
        if k < 0:
            k = os.readv(self.fd, [self._scratch[:min(n, CHUNK)]])
        if k == 0:
            self.eof = True
        return k

    def _stderr(self) -> str:
        try:
            self._err.seek(0)
            text = self._err.read(4000).decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return lines[-1] if lines else ""

    def failure(self) -> str | None:
        if not self.eof:  # we stopped reading for our own reasons; the decompressor is still busy
            return None
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None
        if rc != 0:
            return f"{self.name} exit {rc}: {self._stderr()}".rstrip(": ")
        return None

    def finish(self) -> str | None:
        while self.skip(CHUNK):
            pass
        rc = self.proc.wait()
        self._feeder.join()
        self._close()
        if self._feed_error is not None:
            return f"reading the archive failed: {self._feed_error}"
        if rc != 0:
            return f"{self.name} exit {rc}: {self._stderr()}".rstrip(": ")
        return None

    def _close(self) -> None:
        for fd_obj in (self.proc.stdout,):
            try:
                fd_obj.close()
            except OSError:
                pass
        try:
            os.close(self._null)
        except OSError:
            pass
        self._err.close()

    def abort(self) -> None:
        try:
            self.proc.stdout.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._feeder.join(timeout=5)
        try:
            os.close(self._null)
        except OSError:
            pass
        self._err.close()


class _Range(io.RawIOBase):
    """Bytes [offset, offset+length) of a file, as a file object of its own."""

    def __init__(self, f, offset: int, length: int):
        self.fd = f.fileno()
        self.pos = offset
        self.end = offset + length

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readinto(self, b) -> int:
        n = min(len(b), self.end - self.pos)
        if n <= 0:
            return 0
        got = os.preadv(self.fd, [memoryview(b)[:n]], self.pos)
        self.pos += got
        return got


def _decoder_errors() -> tuple:
    errs: tuple = (lzma.LZMAError, OSError, EOFError, ValueError, zlib.error)
    try:
        import zstandard

        errs += (zstandard.ZstdError,)
    except ImportError:  # pragma: no cover
        pass
    return errs


class _PyStream(_Stream):
    """Python's own decompressors (or a plain range) behind the same interface."""

    def __init__(self, fileobj, seekable_range: _Range | None = None):
        self.fileobj = fileobj
        self.rng = seekable_range
        self._scratch = memoryview(bytearray(CHUNK))

    def readinto(self, mv: memoryview) -> int:
        try:
            return self.fileobj.readinto(mv)
        except _decoder_errors() as exc:
            raise ArchiveError(f"the compressed stream is corrupt ({exc})") from None

    def skip(self, n: int) -> int:
        if self.rng is not None:  # uncompressed: move the window, read nothing
            k = min(n, self.rng.end - self.rng.pos)
            self.rng.pos += k
            return k
        return self.readinto(self._scratch[:min(n, CHUNK)])

    def finish(self) -> str | None:
        try:
            while self.skip(CHUNK):
                pass
        except ArchiveError as exc:
            return str(exc)
        return None


def _open_stream(f, offset: int, length: int, comp: str, external: bool) -> _Stream:
    if comp != "none" and external:
        cmd = _external_command(comp)
        if cmd:
            return _PipeStream(f, offset, length, cmd)
    rng = _Range(f, offset, length)
    if comp == "none":
        return _PyStream(rng, rng)
    raw = io.BufferedReader(rng, CHUNK)
    if comp == "xz":
        return _PyStream(lzma.LZMAFile(raw))
    if comp == "gz":
        return _PyStream(gzip.GzipFile(fileobj=raw))
    if comp == "bz2":
        return _PyStream(bz2.BZ2File(raw))
    if comp == "zst":
        import zstandard

        return _PyStream(zstandard.ZstdDecompressor().stream_reader(raw, read_size=CHUNK))
    raise ArchiveError(f"unsupported compression {comp}")


# --------------------------------------------------------------------------------------------
# tar (POSIX ustar, GNU long names, pax headers), read in one pass


_REGULAR = (b"0", b"\x00", b"7")
_TYPE_NAMES = {b"1": "a hard link", b"2": "a symbolic link", b"3": "a character device",
               b"4": "a block device", b"5": "a folder", b"6": "a fifo", b"S": "a sparse file",
               b"M": "a multi-volume continuation", b"V": "a volume label", b"D": "a GNU dump folder"}


def _num(field: bytes, what: str, pos: int) -> int:
    if field and field[0] & 0x80:  # GNU base-256
        if field[0] == 0xFF:
            raise ArchiveError(f"tar header at byte {pos} has a negative {what}")
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    s = field.split(b"\x00", 1)[0].strip(b" ")
    if not s:
        return 0
    try:
        return int(s, 8)
    except ValueError:
        raise ArchiveError(f"tar header at byte {pos} has a bad {what} {s!r}") from None


def _cstr(field: bytes) -> bytes:
    return field.split(b"\x00", 1)[0]


def _checksum_ok(block: bytes) -> bool:
    stored = block[148:156]
    try:
        want = int(stored.split(b"\x00", 1)[0].strip(b" ") or b"-1", 8)
    except ValueError:
        return False
    unsigned = sum(block) - sum(stored) + 8 * 32
    if unsigned == want:
        return True
    signed = sum(b - 256 if b > 127 else b for b in block) - sum(b - 256 if b > 127 else b for b in stored) + 256
    return signed == want


def _parse_pax(data: bytes, pos: int) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(data):
        if data[i:i + 1] == b"\x00":
            break
        sp = data.find(b" ", i)
        if sp < 0:
            raise ArchiveError(f"bad pax header at byte {pos}")
        try:
            length = int(data[i:sp])
        except ValueError:
            raise ArchiveError(f"bad pax header at byte {pos}") from None
        rec = data[sp + 1:i + length]
        if length <= 0 or not rec.endswith(b"\n") or b"=" not in rec:
            raise ArchiveError(f"bad pax header at byte {pos}")
        k, _, v = rec[:-1].partition(b"=")
        out[k.decode("utf-8", "replace")] = v.decode("utf-8", "surrogateescape")
        i += length
    return out


class _TarReader:
    def __init__(self, stream: _Stream, label: str, limits: Limits):
        self.s = stream
        self.label = label
        self.limits = limits
        self.pos = 0  # bytes consumed from the tar stream
        self.buf = bytearray(CHUNK)
        self.mv = memoryview(self.buf)

    def read_exact(self, n: int) -> bytes:
        got = 0
        while got < n:
            k = self.s.readinto(self.mv[got:n])
            if k == 0:
                raise ArchiveError(f"{self.label} is truncated (stream ends at byte {self.pos + got})")
            got += k
        self.pos += n
        return bytes(self.mv[:n])

    def skip(self, n: int) -> None:
        left = n
        while left:
            k = self.s.skip(left)
            if k == 0:
                raise ArchiveError(f"{self.label} is truncated (stream ends at byte {self.pos + n - left}, "
                                   f"a member declares more)")
            left -= k
        self.pos += n
        if self.pos > self.limits.max_stream_bytes:
            raise ArchiveError(f"{self.label} expands beyond {_human(self.limits.max_stream_bytes)} (archive bomb?)")

    def copy(self, n: int, fd: int) -> str:
        h = hashlib.sha256()
        left = n
        mv = self.mv
        while left:
            k = self.s.readinto(mv[:min(left, CHUNK)])
            if k == 0:
                raise ArchiveError(f"{self.label} is truncated (stream ends at byte {self.pos + n - left}, "
                                   f"inside a selected member)")
            chunk = mv[:k]
            h.update(chunk)
            _write_all(fd, chunk)
            left -= k
        self.pos += n
        return h.hexdigest()


def _write_all(fd: int, mv: memoryview) -> None:
    while mv:
        w = os.write(fd, mv)
        mv = mv[w:]


def _pad(n: int) -> int:
    return (BLOCK - n % BLOCK) % BLOCK


def _read_tar(stream: _Stream, label: str, prefix: str, select, writer: _StagingWriter, limits: Limits) -> None:
    r = _TarReader(stream, label, limits)
    long_name: str | None = None
    long_link: str | None = None
    pax: dict[str, str] = {}
    members = 0
    while True:
        at = r.pos
        block = r.read_exact(BLOCK)
        if block == bytes(BLOCK):
            return  # end of archive (the rest is drained by the caller, which checks the decompressor)
        if not _checksum_ok(block):
            raise ArchiveError(f"corrupt tar header at byte {at} of {label}")
        typ = block[156:157]
        size = _num(block[124:136], "size", at)
        members += 1
        if members > limits.max_members:
            raise ArchiveError(f"more than {limits.max_members} members (archive bomb?)")

        if typ in (b"L", b"K", b"x", b"g"):  # metadata for the next header
            if size > limits.max_meta_bytes:
                raise ArchiveError(f"a {'long name' if typ in b'LK' else 'pax'} record at byte {at} declares "
                                   f"{_human(size)} (archive bomb?)")
            data = r.read_exact(size)
            r.skip(_pad(size))
            if typ == b"L":
                long_name = _cstr(data).decode("utf-8", "surrogateescape")
            elif typ == b"K":
                long_link = _cstr(data).decode("utf-8", "surrogateescape")
            elif typ == b"x":
                pax = _parse_pax(data, at)
            continue  # global pax headers ('g') carry nothing we use

        name_b = _cstr(block[0:100])
        if block[257:263] == b"ustar\x00":  # POSIX ustar: the prefix field extends the name
            pre = _cstr(block[345:500])
            if pre:
                name_b = pre + b"/" + name_b
        name = name_b.decode("utf-8", "surrogateescape")
        if long_name is not None:
            name = long_name
        if "path" in pax:
            name = pax["path"]
        if "size" in pax:
            try:
                size = int(pax["size"])
            except ValueError:
                raise ArchiveError(f"bad pax size for {name!r}") from None
            if size < 0:
                raise ArchiveError(f"negative pax size for {name!r}")
        linkname = long_link if long_link is not None else _cstr(block[157:257]).decode("utf-8", "surrogateescape")
        if "linkpath" in pax:
            linkname = pax["linkpath"]
        long_name = long_link = None
        pax = {}
        mode = _num(block[100:108], "mode", at)

        _check_name(name)
        rel = _relative(name, prefix)
        # links, devices and folders carry no data; sparse/other members do (their size field)
        data_size = size if typ not in (b"1", b"2", b"3", b"4", b"5", b"6") else 0
        if rel is not None and select(rel):
            _check_printable(name)
            if typ not in _REGULAR:
                what = _TYPE_NAMES.get(typ, f"of tar type {typ!r}")
                target = f" -> {linkname}" if typ in (b"1", b"2") else ""
                raise ArchiveError(f"selected member {name!r} is {what}{target}, not a regular file")
            writer.account(rel, size)
            fd = writer.create(rel)
            try:
                digest = r.copy(size, fd)
            except BaseException:
                os.close(fd)
                raise
            writer.finish(rel, fd, size, digest, mode)
            r.skip(_pad(size))
        else:
            r.skip(data_size + _pad(data_size))


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover
