"""A new user's day (issue 29), driven from the outside: read-only commands run as a user after a
root install, the recipe's script, a download into a full cache, no network, `--from` of another
file, and the two-copy install report.

The machine is the demo's (demo/machines/dual-mi50, copied), with demo/minirocblas.py's real
rocBLAS 4.4 tree lacking gfx906 and a real .deb carrying it."""
from __future__ import annotations

import contextlib
import errno
import http.server
import json
import pwd
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.security_support import AS_NOBODY, folder_for_nobody
from tests.test_contract_readonly import (
    _site_for_nobody,
    demo_machine,
    doc_of,
    env,
    rr,
    source,  # noqa: F401  (the module fixture)
    src_args,
)
from tests.test_install import tree_hash

LIB = "opt/rocm-6.4.3/lib/rocblas/library"

READ_ONLY = [("status",), ("verify",), ("detect",), ("doctor",), ("audit",)]


def rr_as_nobody(root: Path, site: Path, *args) -> subprocess.CompletedProcess:
    """`rocmrevive --root ROOT ARGS` as nobody, importing rocmrevive from ``site``."""
    return subprocess.run(AS_NOBODY + [sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), *args],
                          capture_output=True, text=True, env=env(PYTHONPATH=str(site)), cwd="/")


# ---- 1: read-only commands as a user after a root install ----------------------------------

def test_read_only_commands_as_a_user_after_a_root_install_say_the_journal_is_unreadable(source):  # noqa: F811
    with folder_for_nobody("rocmrevive-newuser-") as where:
        site = _site_for_nobody(where / "site")
        root = demo_machine(where / "m")
        r = rr(root, "--json", "install", "--yes", *src_args(source, where / "cache"))
        assert r.returncode == 0, r.stdout[-800:] + r.stderr[-800:]
        (journal,) = (root / "var/lib/rocmrevive/tx").glob("*.jsonl")
        assert journal.stat().st_mode & 0o777 == 0o600   # root's own, as an install leaves it
        before = tree_hash(root)
        user = pwd.getpwnam("nobody").pw_name
        for args in READ_ONLY:
            p = rr_as_nobody(root, site, "--json", *args)
            doc = doc_of(p)
            text = json.dumps(doc)
            assert "move the journal" not in text and "damaged" not in text, (args, text[-1500:])
            assert p.returncode != 9 and doc.get("pending", []) == [], (args, p.returncode, text[-1500:])
            assert f"cannot read the journal /{journal.relative_to(root)}" in text, (args, text[-1500:])
            assert f"as user {user}" in text and "sudo" in text, (args, text[-1500:])
            if args == ("status",):   # the transaction state is what status reports: it cannot
                assert p.returncode == 4 and doc["error"]["code"] == "PERMISSION", text[-1500:]
            else:                     # the rest report the machine, with the journal's line as a warning
                assert p.returncode in (0, 11), (args, p.returncode, text[-1500:])
            h = rr_as_nobody(root, site, *args)   # the same words in human output, no traceback
            assert "Traceback" not in h.stderr and "move the journal" not in h.stderr, (args, h.stderr)
            assert f"as user {user}" in h.stderr, (args, h.stderr[-1500:])
        assert tree_hash(root) == before


# ---- 2: the recipe's script finishes; a tree a manifest serves needs no build --------------

def test_recipe_on_a_tree_a_shipped_manifest_serves_says_no_build_is_needed(tmp_path):
    root = demo_machine(tmp_path / "m")
    before = tree_hash(root)
    r = rr(root, "--json", "recipe")
    doc = doc_of(r)
    assert r.returncode == 3 and doc["error"]["code"] == "NOTHING_SUPPORTED", r.stdout[-800:]
    msg = doc["error"]["message"]
    assert msg.startswith("no build is needed") and f"sudo rocmrevive install --tree /{LIB}" in msg, msg
    assert "--build" in msg and "script" not in doc
    h = rr(root, "recipe")   # human: the one line, no script on stdout to pipe into bash
    assert h.returncode == 3 and h.stdout == "" and "no build is needed" in h.stderr, (h.stdout[:300], h.stderr)
    doc = doc_of(rr(root, "--json", "recipe", "--build"))
    assert doc["kind"] == "source-build" and doc["script"].startswith("#!/usr/bin/env bash")
    assert tree_hash(root) == before


# ---- 6: no network: a refused mirror is tried once per run ----------------------------------

def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, read, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connects_to(port: int, argv: list[str], strace_log: Path, **kw) -> tuple[subprocess.CompletedProcess, int]:
    """Run ``argv`` under strace and count its connect() calls to 127.0.0.1:``port``."""
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(strace_log), *argv],
                       capture_output=True, text=True, env=env(), **kw)
    return p, strace_log.read_text().count(f"sin_port=htons({port})")


def leftovers(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.suffix in (".part", ".lock"))


def test_fetch_with_a_refused_mirror_tries_it_once_for_all_six_manifests(tmp_path):
    port, cache = closed_port(), tmp_path / "cache"
    p, n = connects_to(port, [sys.executable, "-m", "rocmrevive.cli.main", "--json", "fetch", "--mirror",
                              f"http://127.0.0.1:{port}/debian", "--snapshot", "none", "--cache", str(cache)],
                       tmp_path / "strace")
    doc = doc_of(p)
    assert p.returncode == 5 and doc["error"]["code"] == "NETWORK", p.stdout[-1500:]
    assert n == 1, f"{n} connection attempts to the refused mirror"
    failed = [s["error"]["message"] for m in doc["manifests"] for s in m["sources"] if s["status"] == "failed"]
    assert len(failed) == 6, failed
    assert "connection refused (not retried" in failed[0], failed[0]
    assert all(f"not tried: http://127.0.0.1:{port} gave connection refused earlier in this run" in f
               for f in failed[1:]), failed
    assert leftovers(cache) == []


def test_install_with_a_refused_mirror_tries_it_once_and_leaves_nothing(tmp_path):
    root, port, cache = demo_machine(tmp_path / "m"), closed_port(), tmp_path / "cache"
    before = tree_hash(root)
    p, n = connects_to(port, [sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "--json", "install",
                              "--yes", "--mirror", f"http://127.0.0.1:{port}/debian", "--snapshot", "none", "--cache", str(cache)],
                       tmp_path / "strace")
    doc = doc_of(p)
    assert p.returncode == 5 and doc["error"]["code"] == "NETWORK", p.stdout[-1500:]
    assert "connection refused" in doc["error"]["message"]
    assert n == 1, f"{n} connection attempts to the refused mirror"
    assert leftovers(cache) == [] and tree_hash(root) == before


# ---- 5: a download into a full cache ---------------------------------------------------------

@contextlib.contextmanager
def small_disk(where: Path, size: int):
    """A tmpfs of ``size`` bytes mounted at ``where`` (this test runs as root), unmounted after."""
    where.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@contextlib.contextmanager
def mirror_serving(deb: Path, *, halfway=None):
    """A Debian mirror on 127.0.0.1 serving ``deb`` at its pool path; ``halfway()`` runs after half
    of the body was sent (to fill the disk under a download in progress)."""
    data = deb.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            if not self.path.endswith(f"/pool/main/r/rocblas/{deb.name}"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            if halfway is not None:
                time.sleep(0.5)   # the client has written what arrived; the disk fills next
                halfway()
            self.wfile.write(data[len(data) // 2:])

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/debian"
    finally:
        server.shutdown()
        server.server_close()


def fill(disk: Path) -> None:
    with open(disk / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_a_download_that_does_not_fit_is_refused_before_it_starts_with_folder_and_sizes(source, tmp_path):  # noqa: F811
    deb, mf = source
    with small_disk(tmp_path / "disk", 8 << 10) as disk, mirror_serving(deb) as url:
        assert deb.stat().st_size > 8 << 10
        r = rr(Path("/"), "--json", "fetch", "--manifests", str(mf), "--mirror", url, "--cache", str(disk / "c"))
        doc = doc_of(r)
        assert r.returncode == 4 and doc["error"]["code"] == "PERMISSION", r.stdout[-1500:]
        msg = doc["error"]["message"]
        assert f"not enough space in {disk}/c/partial for {deb.name}: it needs " in msg and " free" in msg, msg
        assert "--cache" in msg, msg
        assert leftovers(disk / "c") == []


def test_a_disk_that_fills_during_the_download_says_where_and_leaves_no_part(source, tmp_path):  # noqa: F811
    deb, mf = source
    with small_disk(tmp_path / "disk", deb.stat().st_size + (64 << 10)) as disk, \
            mirror_serving(deb, halfway=lambda: fill(disk)) as url:
        r = rr(Path("/"), "--json", "fetch", "--manifests", str(mf), "--mirror", url, "--cache", str(disk / "c"))
        doc = doc_of(r)
        assert r.returncode == 4 and doc["error"]["code"] == "PERMISSION", r.stdout[-1500:]
        msg = doc["error"]["message"]
        assert f"the disk of {disk}/c/partial filled up while downloading {deb.name}" in msg, msg
        assert "partial file was removed" in msg and "--cache" in msg, msg
        assert leftovers(disk / "c") == []


# ---- 7: --from a file that is not the pinned package ----------------------------------------

def test_from_a_file_no_manifest_pins_is_refused_even_with_the_pinned_package_cached(source, tmp_path):  # noqa: F811
    root = demo_machine(tmp_path / "m")
    deb, mf = source
    cache = tmp_path / "cache"
    assert rr(root, "--json", "fetch", "--manifests", str(mf), "--from", str(deb), "--cache", str(cache)).returncode == 0
    wrong = tmp_path / "librocblas4_6.4.4-5_amd64.deb"            # another build: not what the manifest pins
    wrong.write_bytes(deb.read_bytes() + b"\0" * 512)
    before = tree_hash(root)
    for args in (["install", "--yes"], ["install", "--check"]):
        r = rr(root, "--json", *args, "--manifests", str(mf), "--from", str(wrong), "--cache", str(cache),
               "--no-libraries")
        doc = doc_of(r)
        assert r.returncode == 6 and doc["changed"] is False, (args, r.returncode, r.stdout[-1500:])
        msg = doc["error"]["message"]
        assert f"--from {wrong} is not librocblas4 6.4.4-4" in msg and "nor any other package the manifests pin" in msg
        assert "nothing was changed" in msg, msg
        assert tree_hash(root) == before
    r = rr(root, "--json", "fetch", "--manifests", str(mf), "--from", str(wrong), "--cache", str(cache))
    assert r.returncode == 6 and "nor any other package the manifests pin" in r.stdout, r.stdout[-1500:]
    h = rr(root, "install", "--yes", "--manifests", str(mf), "--from", str(wrong), "--cache", str(cache), "--no-libraries")
    assert h.returncode == 6 and "nor any other package the manifests pin" in h.stderr and tree_hash(root) == before
