"""HTTP(S) and file:// downloads: resume with Range, retries with backoff on transient errors only,
timeouts, size and sha256 checked as the bytes arrive.

Transient (retried, with exponential backoff and jitter; ``Retry-After`` honoured): connection
errors, timeouts, a connection cut mid-body, HTTP 408/425/429/500/502/503/504. Everything else
(404, 403, ...) fails at once. A retry after a cut resumes with ``Range: bytes=N-`` from the
partial file; a server that ignores Range (200) starts over. Give-up after ``retries``
consecutive attempts that brought no new bytes.

    dl = Downloader(timeout=(10, 60))
    sha = dl.download("https://mirror/pool/x.deb", Path("cache/partial/x.part"),
                      size=280155896, sha256="0561...", progress=lambda done, total: ...)
"""
from __future__ import annotations

import hashlib
import os
import queue
import random
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Callable

from rocmrevive.errors import RevError
from rocmrevive.hashing import sha256_file

TRANSIENT_STATUS = {408, 425, 429, 500, 502, 503, 504}
CHUNK = 1 << 20
USER_AGENT = "rocmrevive (+https://github.com/rocmrevive)"

Progress = Callable[[int, "int | None"], None]


class _Transient(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def _session():
    import requests

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


def _hash_file(path: Path, h) -> int:
    return sha256_file(path, h=h)[1]



class Downloader:
    """One place that talks to servers. ``sleep`` is injectable so tests do not wait for real."""

    def __init__(self, *, timeout: tuple[float, float] = (15.0, 60.0), retries: int = 4, backoff: float = 1.0,
                 backoff_max: float = 30.0, session=None, sleep: Callable[[float], None] = time.sleep):
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self._session = session
        self.sleep = sleep
        self.log: list[str] = []  # one line per failed attempt, for reports

    @property
    def session(self):
        if self._session is None:
            self._session = _session()
        return self._session

    def _wait(self, attempt: int, retry_after: float | None) -> None:
        if retry_after is not None:
            delay = min(retry_after, self.backoff_max)
        else:
            delay = min(self.backoff_max, self.backoff * (2 ** attempt)) * (0.5 + random.random() / 2)
        if delay > 0:
            self.sleep(delay)

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
        import requests

        failures = 0
        last = ""
        while True:
            try:
                with self.session.get(url, stream=True, timeout=self.timeout) as r:
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
                last = _describe(exc)
                self.log.append(f"{url}: {last}")
                if failures >= self.retries:
                    raise RevError("NETWORK", f"{url}: {last} after {failures + 1} attempts; retry later or "
                                              f"use another mirror") from None
                self._wait(failures, getattr(exc, "retry_after", None))
                failures += 1

    # artifacts --------------------------------------------------------------------------
    def download(self, url: str, part: Path, *, size: int, sha256: str, progress: Progress | None = None,
                 deadline: float | None = None) -> str:
        """Fill ``part`` with the file at ``url`` (resuming what is there) and check it. Returns the
        sha256. On a checksum or size error the partial file is deleted and VERIFY_FAILED raised;
        on network trouble it is kept so a later call resumes."""
        if url.startswith("file://"):
            return _copy_file_url(url, part, size=size, sha256=sha256, progress=progress)
        part.parent.mkdir(parents=True, exist_ok=True)
        failures = 0
        restarted = False
        while True:
            have = part.stat().st_size if part.exists() else 0
            if have > size:
                part.unlink()
                have = 0
            h = hashlib.sha256()
            if have:
                if _hash_file(part, h) != have:  # pragma: no cover - file changed under us
                    part.unlink()
                    continue
            start = have
            try:
                if have < size:
                    have, h = self._fetch_into(url, part, have, size, h, progress, deadline)
            except _TRANSIENT_ERRORS() as exc:
                now = part.stat().st_size if part.exists() else 0
                reason = _describe(exc)
                self.log.append(f"{url}: {reason} at byte {now}")
                if now > start:
                    failures = 0  # progress was made: keep going
                if failures >= self.retries:
                    raise RevError("NETWORK", f"{url}: {reason} after {failures + 1} attempts without progress "
                                              f"({now} of {size} bytes kept for resuming); retry later or use "
                                              f"another mirror") from None
                if deadline is not None and time.monotonic() > deadline:
                    raise RevError("NETWORK", f"{url}: {reason}; gave up at the deadline ({now} of {size} bytes "
                                              f"kept for resuming)") from None
                self._wait(failures, getattr(exc, "retry_after", None))
                failures += 1
                continue
            digest = h.hexdigest()
            if have != size:  # pragma: no cover - guarded in _fetch_into
                part.unlink(missing_ok=True)
                raise RevError("VERIFY_FAILED", f"{url}: got {have} bytes, pinned size is {size}")
            if digest != sha256:
                part.unlink(missing_ok=True)
                if start and not restarted:  # a resumed file may have glued two versions: try once afresh
                    restarted = True
                    self.log.append(f"{url}: sha256 mismatch after resuming at byte {start}; starting over")
                    continue
                raise RevError("VERIFY_FAILED", f"{url}: sha256 {digest} is not the pinned {sha256}; "
                                                f"the file was deleted (wrong mirror, or the package changed)")
            return digest

    def _fetch_into(self, url: str, part: Path, have: int, size: int, h, progress, deadline) -> int:
        headers = {"Range": f"bytes={have}-"} if have else {}
        with self.session.get(url, headers=headers, stream=True, timeout=self.timeout) as r:
            if r.status_code == 416 and have:
                part.unlink(missing_ok=True)  # our partial file is not a prefix of theirs
                raise _Transient("HTTP 416 for a resume; starting over", 0)
            if r.status_code in TRANSIENT_STATUS:
                raise _Transient(f"HTTP {r.status_code}", _retry_after(r))
            _raise_for_status(r, url)
            mode = "ab"
            total = None
            if have and r.status_code == 206:
                cr = r.headers.get("Content-Range", "")
                if not cr.startswith(f"bytes {have}-"):
                    part.unlink(missing_ok=True)
                    raise _Transient(f"unexpected Content-Range {cr!r}; starting over", 0)
                tail = cr.rsplit("/", 1)[-1]
                total = int(tail) if tail.isdigit() else None
            elif have:  # the server ignored Range: start over
                mode, have, h = "wb", 0, hashlib.sha256()
            clen = r.headers.get("Content-Length")
            if total is None and clen is not None and clen.isdigit():
                total = have + int(clen)
            if total is not None and total != size:
                part.unlink(missing_ok=True)
                raise RevError("VERIFY_FAILED", f"{url}: the server's file is {total} bytes, the pinned size is "
                                                f"{size}; refused (wrong mirror, or the package changed)")
            with open(part, mode, opener=_nofollow) as out:
                sink = _Sink(out, h)
                try:
                    while True:
                        # raw reads: a cut connection still hands over what arrived (iter_content
                        # would drop the last partial chunk); Accept-Encoding is identity
                        chunk = r.raw.read(CHUNK, decode_content=False)
                        if not chunk:
                            break
                        if have + len(chunk) > size:
                            raise _TooBig()
                        sink.put(chunk)
                        have += len(chunk)
                        if progress is not None:
                            progress(have, size)
                        if deadline is not None and time.monotonic() > deadline:
                            raise _Transient("deadline passed")
                except _TooBig:
                    sink.close()
                    out.close()
                    part.unlink(missing_ok=True)
                    raise RevError("VERIFY_FAILED", f"{url}: more bytes than the pinned size {size}; "
                                                    f"refused and deleted") from None
                finally:
                    sink.close()  # everything received is on disk before a retry resumes from it
            if have < size:
                raise _Transient(f"connection closed at byte {have} of {size}")
            return have, h


class _TooBig(Exception):
    pass


class _Sink:
    """Writes and hashes received chunks on a worker thread (file writes and hashlib release the
    GIL), so receiving the next chunk overlaps them."""

    def __init__(self, out, h):
        self.out, self.h = out, h
        self.q: queue.Queue = queue.Queue(maxsize=8)
        self.err: BaseException | None = None
        self.closed = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while True:
            chunk = self.q.get()
            if chunk is None:
                return
            if self.err is None:
                try:
                    self.out.write(chunk)
                    self.h.update(chunk)
                except BaseException as exc:  # reported to the receiving thread
                    self.err = exc

    def put(self, chunk: bytes) -> None:
        if self.err is not None:
            raise self.err
        self.q.put(chunk)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.q.put(None)
        self.t.join()
        if self.err is not None:
            raise self.err


def _TRANSIENT_ERRORS() -> tuple:
    import requests
    import urllib3

    return (_Transient, requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError,
            urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)


def _describe(exc: BaseException) -> str:
    import requests
    import urllib3

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


def _nofollow(path, flags):
    """Partial downloads are opened without following a link (rocmrevive.fs: never write through one)."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)


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


def _copy_file_url(url: str, part: Path, *, size: int, sha256: str, progress) -> str:
    src = _file_path(url)
    try:
        st = src.stat()
    except FileNotFoundError:
        raise RevError("NETWORK", f"{src}: not found") from None
    if st.st_size != size:
        raise RevError("VERIFY_FAILED", f"{src}: {st.st_size} bytes, the pinned size is {size}")
    part.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    done = 0
    with open(src, "rb", buffering=0) as inp, open(part, "wb", opener=_nofollow) as out:
        buf = bytearray(CHUNK)
        mv = memoryview(buf)
        while True:
            k = inp.readinto(mv)
            if not k:
                break
            h.update(mv[:k])
            out.write(mv[:k])
            done += k
            if progress is not None:
                progress(done, size)
    digest = h.hexdigest()
    if digest != sha256 or done != size:
        part.unlink(missing_ok=True)
        raise RevError("VERIFY_FAILED", f"{src}: sha256 {digest} is not the pinned {sha256}")
    return digest
