"""Dead and half-dead mirrors on 127.0.0.1, built without root-only network tricks, for the
download tests and bench/bench_deadmirror.py:

    with dropping_port() as port: ...   # connection attempts are dropped (a full accept queue)
    with silent_port() as (port, n): ...    # accepts every connection, never answers; n() counts them
    with ranged_mirror(data, name, hang_after=N) as (url, gets, sent): ...
        # a Debian-style mirror serving ``data`` at .../pool/main/r/rocblas/NAME with Range; with
        # ``hang_after`` the first answer stops after N bytes and stays open, silent; ``gets``:
        # the Range header of each GET (None without); ``sent``: an Event set once the N bytes went out
"""
from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time


@contextlib.contextmanager
def dropping_port():
    """A listening socket whose accept queue is full (listen(0), filled by connections nobody
    accepts): Linux drops further SYNs, so a client's connect() waits for its timeout, as with a
    mirror behind a firewall that drops packets."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    fillers = []
    for _ in range(3):
        c = socket.socket()
        c.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            c.connect(("127.0.0.1", port))
        fillers.append(c)
    time.sleep(0.2)
    probe = socket.socket()
    probe.settimeout(0.5)
    try:
        probe.connect(("127.0.0.1", port))
        raise AssertionError("the full accept queue still took a connection")
    except TimeoutError:
        pass
    finally:
        probe.close()
    try:
        yield port
    finally:
        for c in fillers:
            c.close()
        srv.close()


@contextlib.contextmanager
def silent_port():
    """A server that accepts every connection and never sends a byte."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except (TimeoutError, OSError):
                continue
            held.append(c)

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1], lambda: len(held)
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        srv.close()


@contextlib.contextmanager
def ranged_mirror(data: bytes, name: str, *, hang_after: int | None = None):
    gets: list[str | None] = []
    release = threading.Event()
    sent = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 - the stdlib's name
            if not self.path.endswith(f"/pool/main/r/rocblas/{name}"):
                self.send_error(404)
                return
            rng = self.headers.get("Range")
            gets.append(rng)
            start = int(rng[6:].split("-")[0]) if rng else 0
            body = data[start:]
            self.send_response(206 if rng else 200)
            if rng:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if hang_after is not None and len(gets) == 1:
                self.wfile.write(body[:hang_after])
                self.wfile.flush()
                sent.set()
                release.wait(60)   # silent, connection open, until the test ends
                return
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/debian", gets, sent
    finally:
        release.set()
        server.shutdown()
        server.server_close()
