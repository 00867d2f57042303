"""The decompressors in front of the tar reader: one byte stream, whatever the compression.

The system's ``xz``/``zstd``/``gzip``/``bzip2`` (pigz, lbzip2 when present) run behind a pipe when
found (xz decodes multi-block streams on several threads, as dpkg does) and a thread feeds them
the compressed byte range (``splice`` where the kernel has it); otherwise Python's own ``lzma``,
``gzip``, ``bz2`` or ``zstandard`` decode it. Either way the reader gets ``readinto`` and a
``skip`` that discards without copying (``splice`` to /dev/null on a pipe; an uncompressed range
just moves its window), and corrupt or truncated data becomes an ArchiveError, or the
decompressor's own last line from ``finish``.

    stream = open_stream(f, offset, length, compression_of(head), external=True)
    n = stream.readinto(view); stream.skip(1 << 20); problem = stream.finish()
"""
from __future__ import annotations

import bz2
import errno
import fcntl
import gzip
import io
import lzma
import os
import shutil
import subprocess
import tempfile
import threading
import zlib
from typing import IO

from rocmrevive.hashing import CHUNK
from rocmrevive.sources.unpack.limits import ArchiveError
from rocmrevive.sources.unpack.stream import Stream
from rocmrevive.sources.unpack.xzblocks import XzBlockStream, read_index


def compression_of(head: bytes) -> str | None:
    """"xz", "zst", "gz" or "bz2" by the magic at the start of ``head``; None for anything else."""
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zst"
    if head.startswith(b"\x1f\x8b"):
        return "gz"
    if head.startswith(b"BZh"):
        return "bz2"
    return None


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


def _pipes(proc: subprocess.Popen) -> tuple[IO[bytes], IO[bytes]]:
    """(stdin, stdout) of a process started with both as pipes."""
    if proc.stdin is None or proc.stdout is None:
        raise ValueError("the decompressor was started without its pipes")
    return proc.stdin, proc.stdout


class _PipeStream(Stream):
    """A decompressor subprocess: a thread feeds it the compressed byte range, we read its stdout."""

    def __init__(self, f, offset: int, length: int, cmd: list[str]):
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     bufsize=0, env={**os.environ, "LC_ALL": "C"}, close_fds=True)
        self._stdin, self._stdout = _pipes(self.proc)
        self.fd = self._stdout.fileno()
        self.name = os.path.basename(cmd[0])
        try:  # a bigger pipe means fewer wake-ups between the decompressor and us

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
        dst = self._stdin.fileno()
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
                self._stdin.close()
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
        for fd_obj in (self._stdout,):
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
            self._stdout.close()
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
        import zstandard  # noqa: PLC0415 — a C extension loaded only for a zstd stream

        errs += (zstandard.ZstdError,)
    except ImportError:  # pragma: no cover
        pass
    return errs


class _PyStream(Stream):
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


def open_stream(f, offset: int, length: int, comp: str, external: bool) -> Stream:
    if comp == "xz":  # a multi-block stream is read by block, skipped blocks never decoded
        index = read_index(f.fileno(), offset, length)
        if index is not None:
            return XzBlockStream(f.fileno(), index)
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
        import zstandard  # noqa: PLC0415 — a C extension loaded only for a zstd stream

        return _PyStream(zstandard.ZstdDecompressor().stream_reader(raw, read_size=CHUNK))
    raise ArchiveError(f"unsupported compression {comp}")

