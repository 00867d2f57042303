"""HTTP(S) and file:// downloads: resume with Range, retries with backoff on transient errors only,
timeouts, size and sha256 checked as the bytes arrive.

Timeouts, per attempt: ``timeout=(connect, stall)``: the connection must open within ``connect``
seconds (CONNECT_TIMEOUT), and an attempt ends when no byte arrived for ``stall`` seconds
(STALL_TIMEOUT), whether waiting for the answer or mid-body; ``total`` (or a call's ``deadline``)
bounds a whole download apart from that. A dead mirror (one that drops connection attempts, or
accepts and never answers) ends after ``retries + 1`` short attempts: about 10 s with the
defaults, each failed attempt told through ``notice`` ("no answer from HOST after 3 s, trying
again (2/3)"). Slow links raise ``--timeout`` / ``--retries`` (``rocmrevive fetch``).

Transient (retried, with exponential backoff and jitter; ``Retry-After`` honoured): connection
errors, timeouts, a connection cut mid-body, HTTP 408/425/429/500/502/503/504. Everything else
(404, 403, ...) fails at once. A retry after a cut resumes with ``Range: bytes=N-`` from the
partial file; a server that ignores Range (200) starts over. Give-up after ``retries``
consecutive attempts that brought no new bytes. A host that refuses the connection or whose name
does not resolve is not retried, and one that gave no answer to every attempt is not tried again:
either is remembered as unreachable for the rest of the run (one ``Downloader``), so six
manifests on one dead mirror fail after one attempt (or one round of attempts), not thirty.

SIGTERM while a download runs ends it as an exception (``Terminated``, a KeyboardInterrupt):
what arrived stays in the ``.part`` for the next run to resume, an empty one is removed, and the
cache's per-artifact lock file is removed by its holder on the way out.

    dl = Downloader(timeout=(3, 3), notice=print_on_stderr)
    sha = dl.download("https://mirror/pool/x.deb", Path("cache/partial/x.part"),
                      size=280155896, sha256="0561...", progress=lambda done, total: ...)
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import queue
import random
import signal
import stat
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Callable

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, open_regular, write_all
from rocmrevive.hashing import hash_fd
from rocmrevive.txn.result import mb

TRANSIENT_STATUS = {408, 425, 429, 500, 502, 503, 504}
CONNECT_TIMEOUT = 3.0  # seconds to open a connection: a mirror that drops attempts is known in 3 s
STALL_TIMEOUT = 3.0  # seconds without a byte (the answer, or mid-body) end an attempt; --timeout raises it
RETRIES = 2  # attempts after the first one that brought nothing: a dead mirror is given up in ~10 s
TIMEOUT_PAUSE = 0.2  # the wait before retrying a timeout (the timeout itself was the wait)
CHUNK = 1 << 20
UNREACHABLE = ("connection refused", "host name not found")  # nothing listens there: retrying cannot help
USER_AGENT = "rocmrevive (+https://github.com/rocmrevive)"

Progress = Callable[[int, "int | None"], None]


class _Transient(Exception):
    """A failed attempt worth another. ``kind``: "connect" (no connection within the connect
    timeout), "answer" (connected, no answer within the stall timeout), "stall" (the body stopped
    for the stall timeout) or "" (anything else)."""

    def __init__(self, message: str, retry_after: float | None = None, kind: str = ""):
        super().__init__(message)
        self.retry_after = retry_after
        self.kind = kind


class Terminated(KeyboardInterrupt):
    """SIGTERM during a download (``terminate_raises``): unwinds like Ctrl-C, so the partial file
    is kept for resuming and the cache's lock file removed."""


@contextlib.contextmanager
def terminate_raises():
    """Within: SIGTERM raises ``Terminated`` in the main thread instead of killing the process
    at once (outside the main thread, or nested: as it was)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated()

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _session():
    import requests  # noqa: PLC0415 — requests takes a quarter of a second to import; only a download needs it

    s = requests.Session()
    s.headers["User-Agent"] = USER_AGENT
    # identity: Range offsets must count the bytes of the file itself
    s.headers["Accept-Encoding"] = "identity"
    return s


def _retry_after(resp) -> float | None:
    v = resp.headers.get("Retry-After")
    if v and v.strip().isdigit():
        return float(v.strip())
    return None


def _hash_from_start(fd: int, h) -> int:
    """Hash what ``fd`` holds from its start (a partial file being resumed); returns its size."""
    os.lseek(fd, 0, os.SEEK_SET)
    return hash_fd(fd, h)[1]


class Downloader:
    """One place that talks to servers. ``sleep`` is injectable so tests do not wait for real."""

    def __init__(self, *, timeout: tuple[float, float] = (CONNECT_TIMEOUT, STALL_TIMEOUT), retries: int = RETRIES,
                 backoff: float = 1.0, backoff_max: float = 30.0, total: float | None = None, session=None,
                 sleep: Callable[[float], None] = time.sleep, notice: Callable[[str], None] | None = None):
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.total = total  # seconds for one whole download (None: no bound but the stall timeout's)
        self._session = session
        self.sleep = sleep
        self.notice = notice  # told a line per failed attempt that is tried again (the CLI prints it)
        self.log: list[str] = []  # one line per failed attempt, for reports
        self.unreachable: dict[str, str] = {}  # scheme://host:port -> why, for the rest of this run

    @property
    def session(self):
        if self._session is None:
            self._session = _session()
        return self._session

    def _delay(self, attempt: int, exc: BaseException) -> float:
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        if _timeout_kind(exc):  # the timeout was the wait: a short pause, no growing backoff
            return TIMEOUT_PAUSE
        return min(self.backoff_max, self.backoff * (2 ** attempt)) * (0.5 + random.random() / 2)

    def _open(self, url: str, headers: dict | None = None):
        """The response to a GET (headers read, body streaming); a timeout says which one."""
        import requests  # noqa: PLC0415 — requests takes a quarter of a second to import; only a download needs it

        try:
            return self.session.get(url, headers=headers or {}, stream=True, timeout=self.timeout)
        except requests.ConnectTimeout:
            raise _Transient("no answer", kind="connect") from None
        except requests.ReadTimeout:
            raise _Transient("no answer", kind="answer") from None

    def _failed(self, url: str, exc: BaseException, failures: int, *, at: str = "", progress: bool = False,
                kept: str = "", deadline: float | None = None) -> None:
        """One failed attempt at ``url``: logged; raised as RevError("NETWORK") when it may not be
        tried again (unreachable host, ``retries`` attempts without progress, the deadline), else
        told through ``notice`` and waited for. ``failures``: attempts without progress before this
        one; ``kept``: what a give-up line says is kept for resuming."""
        reason = _reason(exc, self.timeout)
        kind = _timeout_kind(exc)
        self.log.append(f"{url}: {reason}{at}")
        self._give_up_unreachable(url, reason)
        host = _netloc(url)
        if not progress and failures >= self.retries:
            if kind in ("connect", "answer"):
                self.unreachable[_host(url)] = f"no answer to {failures + 1} attempts"
                raise RevError("NETWORK", f"{url}: no answer from {host} to {failures + 1} attempts of "
                                          f"{_seconds(exc, self.timeout)} s{kept}; the mirror may be down: try "
                                          f"another (--mirror) or --from a copy (a slow link: raise "
                                          f"`rocmrevive fetch --timeout`)") from None
            raise RevError("NETWORK", f"{url}: {reason} after {failures + 1} attempts without progress{kept}; "
                                      f"retry later or use another mirror") from None
        if deadline is not None and time.monotonic() > deadline:
            raise RevError("NETWORK", f"{url}: {reason}; gave up at the deadline{kept}") from None
        nxt = "" if progress else f" ({failures + 2}/{self.retries + 1})"
        delay = self._delay(0 if progress else failures, exc)
        if self.notice is not None:
            if kind in ("connect", "answer"):
                line = f"no answer from {host} after {_seconds(exc, self.timeout)} s, trying again{nxt}"
            elif kind == "stall":
                line = f"{host} sent nothing for {_seconds(exc, self.timeout)} s{at}, resuming{nxt}"
            else:
                line = f"{host}: {reason}{at}, trying again in {delay:.1f} s{nxt}"
            self.notice(line)
        if delay > 0:
            self.sleep(delay)

    def _refuse_unreachable(self, url: str) -> None:
        """RevError("NETWORK") at once for a host found unreachable earlier in this run."""
        why = self.unreachable.get(_host(url))
        if why is not None:
            raise RevError("NETWORK", f"{url}: not tried: {_host(url)} gave {why} earlier in this run; check the "
                                      f"network and the mirror (--mirror), or --from a copy")

    def _give_up_unreachable(self, url: str, reason: str) -> None:
        """Remember a host that refused or does not resolve, and fail this request at once."""
        if reason not in UNREACHABLE:
            return
        self.unreachable[_host(url)] = reason
        raise RevError("NETWORK", f"{url}: {reason} (not retried: nothing answers there); check the network "
                                  f"and the mirror (--mirror), or --from a copy")

    # small files (indexes, keys) -------------------------------------------------------
    def get_bytes(self, url: str, *, max_size: int, size: int | None = None, sha256: str | None = None) -> bytes:
        """A whole small file in memory, optionally pinned by size and sha256."""
        if url.startswith("file://"):
            data = _file_url_bytes(url, max_size)
        else:
            data = self._get_small(url, max_size)
        if size is not None and len(data) != size:
            raise RevError("VERIFY_FAILED", f"{url}: {len(data)} bytes, the signed index says {size}")
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise RevError("VERIFY_FAILED", f"{url}: sha256 differs from the signed index")
        return data

    def _get_small(self, url: str, max_size: int) -> bytes:
        import requests  # noqa: PLC0415 — requests takes a quarter of a second to import; only a download needs it

        failures = 0
        self._refuse_unreachable(url)
        while True:
            try:
                with self._open(url) as r:
                    if r.status_code in TRANSIENT_STATUS:
                        raise _Transient(f"HTTP {r.status_code}", _retry_after(r))
                    _raise_for_status(r, url)
                    buf = bytearray()
                    for chunk in r.iter_content(CHUNK):
                        buf += chunk
                        if len(buf) > max_size:
                            raise RevError("VERIFY_FAILED", f"{url}: larger than {max_size} bytes; refused")
                    return bytes(buf)
            except (_Transient, requests.ConnectionError, requests.Timeout,
                    requests.exceptions.ChunkedEncodingError) as exc:
                self._failed(url, exc, failures)
                failures += 1

    # artifacts --------------------------------------------------------------------------
    def download(self, url: str, part: Path, *, size: int, sha256: str, progress: Progress | None = None,
                 deadline: float | None = None) -> str:
        """Fill ``part`` with the file at ``url`` (resuming what is there) and check it. Returns the
        sha256. On a checksum or size error the partial file is deleted and VERIFY_FAILED raised;
        on network trouble it is kept so a later call resumes. ``part`` is written only through a
        descriptor of its folder (rocmrevive.fs: no link followed, never a FIFO)."""
        part = Path(part)
        if not url.startswith("file://"):
            self._refuse_unreachable(url)
        if deadline is None and self.total is not None:
            deadline = time.monotonic() + self.total
        with terminate_raises(), Dir.open(part.parent, create=True, what="download folder") as d:
            _refuse_short_of_space(d, part, url, size)
            try:
                if url.startswith("file://"):
                    return _copy_file_url(url, d, part.name, size=size, sha256=sha256, progress=progress)
                return self._download(url, d, part.name, size=size, sha256=sha256, progress=progress,
                                      deadline=deadline)
            except _DiskFull:
                d.unlink(part.name, missing_ok=True)  # a full disk kept full helps nobody: start over next time
                free = _free_bytes(d)
                raise RevError("PERMISSION", f"the disk of {part.parent} filled up while downloading "
                                             f"{_basename(url)} ({mb(size)}, {mb(free)} free now); the partial "
                                             f"file was removed; free some space or pass --cache DIR on a "
                                             f"larger disk") from None
            except BaseException:
                _drop_if_empty(d, part.name)  # nothing to resume from: leave no empty file behind
                raise

    def _download(self, url: str, d: Dir, name: str, *, size: int, sha256: str, progress, deadline) -> str:
        failures = 0
        restarted = False
        while True:
            fd = d.open_rw(name)
            try:
                have = os.fstat(fd).st_size
                if have > size:
                    os.ftruncate(fd, 0)
                    have = 0
                h = hashlib.sha256()
                if have and _hash_from_start(fd, h) != have:  # pragma: no cover - file changed under us
                    os.ftruncate(fd, 0)
                    continue
                start = have
                try:
                    if have < size:
                        have, h = self._fetch_into(url, d, name, fd, have, size, h, progress, deadline)
                except _TRANSIENT_ERRORS() as exc:
                    now = os.fstat(fd).st_size
                    progressed = now > start
                    if progressed:
                        failures = 0  # progress was made: keep going
                    self._failed(url, exc, failures, at=f" at byte {now}", progress=progressed,
                                 kept=f" ({now} of {size} bytes kept for resuming)" if now else "",
                                 deadline=deadline)
                    failures = 0 if progressed else failures + 1
                    continue
            finally:
                os.close(fd)
            digest = h.hexdigest()
            if have != size:  # pragma: no cover - guarded in _fetch_into
                d.unlink(name, missing_ok=True)
                raise RevError("VERIFY_FAILED", f"{url}: got {have} bytes, pinned size is {size}")
            if digest != sha256:
                d.unlink(name, missing_ok=True)
                if start and not restarted:  # a resumed file may have glued two versions: try once afresh
                    restarted = True
                    self.log.append(f"{url}: sha256 mismatch after resuming at byte {start}; starting over")
                    continue
                raise RevError("VERIFY_FAILED", f"{url}: sha256 {digest} is not the pinned {sha256}; "
                                                f"the file was deleted (wrong mirror, or the package changed)")
            return digest

    def _fetch_into(self, url: str, d: Dir, name: str, fd: int, have: int, size: int, h, progress,
                    deadline) -> tuple[int, "hashlib._Hash"]:
        headers = {"Range": f"bytes={have}-"} if have else {}
        with self._open(url, headers) as r:
            if r.status_code == 416 and have:
                os.ftruncate(fd, 0)  # our partial file is not a prefix of theirs
                raise _Transient("HTTP 416 for a resume; starting over", 0)
            if r.status_code in TRANSIENT_STATUS:
                raise _Transient(f"HTTP {r.status_code}", _retry_after(r))
            _raise_for_status(r, url)
            total = None
            if have and r.status_code == 206:
                cr = r.headers.get("Content-Range", "")
                if not cr.startswith(f"bytes {have}-"):
                    os.ftruncate(fd, 0)
                    raise _Transient(f"unexpected Content-Range {cr!r}; starting over", 0)
                tail = cr.rsplit("/", 1)[-1]
                total = int(tail) if tail.isdigit() else None
            elif have:  # the server ignored Range: start over
                os.ftruncate(fd, 0)
                have, h = 0, hashlib.sha256()
            clen = r.headers.get("Content-Length")
            if total is None and clen is not None and clen.isdigit():
                total = have + int(clen)
            if total is not None and total != size:
                d.unlink(name, missing_ok=True)
                raise RevError("VERIFY_FAILED", f"{url}: the server's file is {total} bytes, the pinned size is "
                                                f"{size}; refused (wrong mirror, or the package changed)")
            os.lseek(fd, have, os.SEEK_SET)
            sink = _Sink(fd, h)
            try:
                have = _receive(r, sink, have, size, progress, deadline)
            except _TooBig:
                sink.close()
                d.unlink(name, missing_ok=True)
                raise RevError("VERIFY_FAILED", f"{url}: more bytes than the pinned size {size}; "
                                                f"refused and deleted") from None
            finally:
                sink.close()  # everything received is on disk before a retry resumes from it
            if have < size:
                raise _Transient(f"connection closed at byte {have} of {size}")
            return have, h


def _netloc(url: str) -> str:
    """``host:port`` of a URL, as a progress line names the mirror."""
    return urllib.parse.urlsplit(url).netloc or url


def _timeout_kind(exc: BaseException) -> str:
    """"connect", "answer" or "stall" for a timed-out attempt, else ""."""
    if isinstance(exc, _Transient):
        return exc.kind
    if isinstance(exc, TimeoutError):
        return "stall"
    return ""


def _seconds(exc: BaseException, timeout: tuple[float, float]) -> str:
    """The timeout that ended an attempt, as a line says it ("3")."""
    return f"{timeout[0] if _timeout_kind(exc) == 'connect' else timeout[1]:g}"


def _reason(exc: BaseException, timeout: tuple[float, float]) -> str:
    """What ended an attempt, in words (a timeout with its seconds)."""
    kind = _timeout_kind(exc)
    if kind == "connect":
        return f"timed out: no connection within {timeout[0]:g} s"
    if kind == "answer":
        return f"timed out: no answer within {timeout[1]:g} s"
    if kind == "stall":
        return f"timed out: no byte for {timeout[1]:g} s"
    return _describe(exc)


def _host(url: str) -> str:
    """``scheme://host:port`` of a URL: what a refused connection says is unreachable."""
    u = urllib.parse.urlsplit(url)
    return f"{u.scheme}://{u.netloc}"


class _DiskFull(Exception):
    """ENOSPC while writing a download (``Downloader.download`` says where and how much)."""


def _basename(url: str) -> str:
    return urllib.parse.unquote(urllib.parse.urlsplit(url).path).rsplit("/", 1)[-1] or url


def _free_bytes(d: Dir) -> int:
    v = os.fstatvfs(d.fd)
    return v.f_bavail * v.f_frsize


def _refuse_short_of_space(d: Dir, part: Path, url: str, size: int) -> None:
    """RevError("PERMISSION") before a byte is fetched when the pinned size does not fit: one
    line with the folder, what is needed and what is free."""
    st = d.lstat(part.name)
    have = st.st_size if st is not None and stat.S_ISREG(st.st_mode) and st.st_size <= size else 0
    need, free = size - have, _free_bytes(d)
    if need > free:
        raise RevError("PERMISSION", f"not enough space in {part.parent} for {_basename(url)}: it needs "
                                     f"{mb(need, free)}, {mb(free, need)} free; free some space or pass --cache DIR "
                                     f"on a larger disk; nothing was downloaded",
                       details={"folder": str(part.parent), "needed": need, "free": free})


def _drop_if_empty(d: Dir, name: str) -> None:
    st = d.lstat(name)
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == 0:
        d.unlink(name, missing_ok=True)


class _TooBig(Exception):
    pass


def _reader(r):
    """The fastest ``readinto`` on the body: http.client's response under urllib3 (reads straight
    from the socket into our buffer; Accept-Encoding is identity, so these are the file's bytes).
    A cut connection hands over what arrived, then reads 0."""
    fp = getattr(r.raw, "_fp", None)
    if fp is not None and hasattr(fp, "readinto"):
        return fp.readinto

    def readinto(view):  # pragma: no cover - another urllib3 layout
        chunk = r.raw.read(len(view), decode_content=False)
        view[:len(chunk)] = chunk
        return len(chunk)
    return readinto


def _receive(r, sink: "_Sink", have: int, size: int, progress, deadline) -> int:
    """Receive the body into the sink's buffers, each filled to BUFFER bytes (or the end) before
    it is handed to the sink's thread: few Python steps per megabyte, and the socket is read
    while the previous buffer is hashed and written."""
    readinto = _reader(r)
    while True:
        buf = sink.free()
        view = memoryview(buf)
        n = 0
        eof = late = stalled = False
        while n < len(view):
            try:
                k = readinto(view[n:])
            except TimeoutError:  # no byte for the stall timeout: keep what came, then retry
                stalled = True
                break
            except Terminated:  # SIGTERM: what arrived is kept for the next run to resume from
                if n and have + n <= size:
                    sink.write(buf, n)
                raise
            if not k:
                eof = True
                break
            n += k
            if deadline is not None and time.monotonic() > deadline:
                late = True
                break
        if n:
            if have + n > size:
                raise _TooBig()
            sink.write(buf, n)
            have += n
            if progress is not None:
                progress(have, size)
        else:
            sink.give_back(buf)
        if stalled:
            raise _Transient("stalled", kind="stall")
        if late:
            raise _Transient("deadline passed")
        if eof:
            return have


BUFFER = 4 << 20
BUFFERS = 3


class _Sink:
    """Writes received buffers to the descriptor (``write``, on the caller's thread) and hashes
    them on a worker thread (hashlib releases the GIL): sha256 is the slowest step of a verified
    download, so it runs beside receiving and writing the next buffers instead of after them. A
    few fixed buffers are reused: no allocation per chunk, at most BUFFERS * BUFFER bytes in
    flight."""

    def __init__(self, fd: int, h):
        self.fd, self.h = fd, h
        self.q: queue.Queue = queue.Queue()
        self.pool: queue.Queue = queue.Queue()
        for _ in range(BUFFERS):
            self.pool.put(bytearray(BUFFER))
        self.err: BaseException | None = None
        self.closed = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            buf, n = item
            if self.err is None:
                try:
                    self.h.update(memoryview(buf)[:n])
                except BaseException as exc:  # noqa: BLE001 - handed to the receiving thread, which raises it
                    self.err = exc
            self.pool.put(buf)

    def free(self) -> bytearray:
        buf = self.pool.get()
        if self.err is not None:
            raise self.err
        return buf

    def give_back(self, buf: bytearray) -> None:
        self.pool.put(buf)

    def write(self, buf: bytearray, n: int) -> None:
        """Write the first ``n`` bytes of ``buf``, then hand it to the hashing thread."""
        if self.err is not None:
            raise self.err
        try:
            write_all(self.fd, memoryview(buf)[:n])
        except OSError as exc:
            self.pool.put(buf)
            raise _write_error(exc) from None
        self.q.put((buf, n))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.q.put(None)
        self.t.join()
        if self.err is not None:
            raise _write_error(self.err)


def _write_error(exc: BaseException) -> BaseException:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return _DiskFull()
    if isinstance(exc, OSError):
        return RevError("PERMISSION", f"cannot write the download: {exc.strerror or exc}")
    return exc


def _TRANSIENT_ERRORS() -> tuple:
    import http.client  # noqa: PLC0415 — requests takes a quarter of a second to import; only a download needs it

    import requests  # noqa: PLC0415 — requests takes a quarter of a second to import; only a download needs it
    import urllib3  # noqa: PLC0415 — requests takes a quarter of a second to import; only a download needs it

    return (_Transient, requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError,
            urllib3.exceptions.HTTPError, http.client.IncompleteRead, ConnectionError, TimeoutError)


def _describe(exc: BaseException) -> str:
    import requests  # noqa: PLC0415 — requests takes a quarter of a second to import; only a download needs it
    import urllib3  # noqa: PLC0415 — requests takes a quarter of a second to import; only a download needs it

    if isinstance(exc, _Transient):
        return str(exc)
    if isinstance(exc, (requests.Timeout, TimeoutError, urllib3.exceptions.TimeoutError)) \
            or "timed out" in str(exc).lower():
        return "timed out"
    if isinstance(exc, (requests.exceptions.ChunkedEncodingError, urllib3.exceptions.ProtocolError,
                        ConnectionResetError)):
        return "connection cut mid-transfer"
    if isinstance(exc, requests.ConnectionError):
        text = str(exc)
        if "Name or service not known" in text or "NameResolutionError" in text or "resolve" in text:
            return "host name not found"
        if "Connection refused" in text:
            return "connection refused"
        return "connection failed"
    return type(exc).__name__


def _raise_for_status(r, url: str) -> None:
    if r.status_code in (200, 206):
        return
    if r.status_code in (404, 410):
        raise RevError("NETWORK", f"{url}: not found (HTTP {r.status_code}); the mirror may not carry this "
                                  f"version any more: try another mirror or --from a copy")
    raise RevError("NETWORK", f"{url}: HTTP {r.status_code} {r.reason or ''}".rstrip())


def _file_path(url: str) -> Path:
    return Path(urllib.parse.unquote(urllib.parse.urlparse(url).path))


def _file_url_bytes(url: str, max_size: int) -> bytes:
    p = _file_path(url)
    try:
        if p.stat().st_size > max_size:
            raise RevError("VERIFY_FAILED", f"{p}: larger than {max_size} bytes; refused")
        return p.read_bytes()
    except FileNotFoundError:
        raise RevError("NETWORK", f"{p}: not found") from None
    except OSError as exc:
        raise RevError("NETWORK", f"{p}: {exc.strerror}") from None


def _copy_file_url(url: str, d: Dir, name: str, *, size: int, sha256: str, progress) -> str:
    src = _file_path(url)
    try:
        inp = open_regular(src)
    except FileNotFoundError:
        raise RevError("NETWORK", f"{src}: not found") from None
    except OSError as exc:
        raise RevError("NETWORK", f"{src}: {exc.strerror}") from None
    try:
        st = os.fstat(inp)
        if st.st_size != size:
            raise RevError("VERIFY_FAILED", f"{src}: {st.st_size} bytes, the pinned size is {size}")
        fd = d.open_rw(name)
        try:
            os.ftruncate(fd, 0)
            h = hashlib.sha256()
            sink = _Sink(fd, h)
            try:
                done = 0
                while True:
                    buf = sink.free()
                    k = os.readv(inp, [buf])
                    if not k or done + k > size:
                        sink.give_back(buf)
                        break
                    sink.write(buf, k)
                    done += k
                    if progress is not None:
                        progress(done, size)
            finally:
                sink.close()
        finally:
            os.close(fd)
    finally:
        os.close(inp)
    digest = h.hexdigest()
    if digest != sha256 or done != size:
        d.unlink(name, missing_ok=True)
        raise RevError("VERIFY_FAILED", f"{src}: sha256 {digest} is not the pinned {sha256}")
    return digest
