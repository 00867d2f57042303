"""scripts/pin.py, the maintainer's pin tool, offline: a local Debian-style mirror on 127.0.0.1
whose sid InRelease real gpg signed, manifests pinning its package, and a test snapshot archive.
(Against the machine's own mirror it is a network command: never part of this run.)"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmrevive.sources.manifest_load import load_manifests
from tests.fixtures.aptrepo import RepoServer, build_deb, build_repo, signing_keys
from tests.test_install import write_manifest

REPO = Path(__file__).resolve().parent.parent
SEEN = "2023-11-14T22:13:20Z"     # the Date build_repo's Release carries


def pin(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts/pin.py"), *args], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    d = tmp_path_factory.mktemp("pinmirror")
    deb = build_deb(d / "debs", "librocblas4", "6.4.4-4", {"usr/share/doc/librocblas4/a": os.urandom(4096)})
    key = signing_keys()["pinned"]
    repo = build_repo(d / "srv/debian", "sid", [deb], key=key)
    p = repo.package("librocblas4")
    return {"srv": d / "srv", "deb": d / "srv/debian" / p.filename, "pkg": p, "key": key, "d": d}


def _manifest(where: Path, mirror, **extra) -> Path:
    deb = mirror["deb"]
    return write_manifest(where, deb, filename=mirror["pkg"].filename, **extra)


def test_verify_completes_a_pin_then_finds_it_the_same(tmp_path, mirror):
    mf = _manifest(tmp_path / "mf", mirror)
    with RepoServer(mirror["srv"]) as srv:
        args = ["--mirror", srv.url + "/debian", "--keyring", str(mirror["key"].public_gpg), "--manifests", str(mf),
                "--work", str(tmp_path)]
        r = pin(*args, "verify")
        assert r.returncode == 1 and r.stdout.startswith("complete "), r.stdout + r.stderr
        assert "sha1: the manifest has none" in r.stdout and f"the index of {SEEN} lists it" in r.stdout
        assert f"sha1 from {srv.url}/debian/{mirror['pkg'].filename}" in r.stdout   # downloaded, not found locally
        r = pin(*args, "verify", "--write")
        assert r.returncode == 0 and r.stdout.startswith("completed "), r.stdout + r.stderr
        r = pin(*args, "--have", str(mirror["deb"].parent), "verify")
        assert r.returncode == 0 and r.stdout.startswith("same "), r.stdout + r.stderr
        assert f"sha1 from {mirror['deb']}" in r.stdout
    (m,) = load_manifests(mf)
    assert m.sources[0].sha1 == hashlib.sha1(mirror["deb"].read_bytes()).hexdigest()  # noqa: S324
    assert m.sources[0].seen == "20231114T221320Z"
    assert list(tmp_path.glob("pin-*")) == []           # the download for the sha1 was not kept


def test_entry_prints_the_lines_a_manifest_needs(tmp_path, mirror):
    with RepoServer(mirror["srv"]) as srv:
        r = pin("--mirror", srv.url + "/debian", "--keyring", str(mirror["key"].public_gpg), "--have",
                str(mirror["deb"].parent), "entry", "librocblas4=6.4.4-4", "--suite", "sid")
        miss = pin("--mirror", srv.url + "/debian", "--keyring", str(mirror["key"].public_gpg), "entry",
                   "librocblas4=9", "--suite", "sid")
    p = mirror["pkg"]
    assert r.returncode == 0, r.stderr
    sha1 = hashlib.sha1(mirror["deb"].read_bytes()).hexdigest()  # noqa: S324
    assert r.stdout.splitlines()[1:] == [
        'package = "librocblas4"', 'version = "6.4.4-4"', 'suite = "sid"', f'filename = "{p.filename}"',
        f"size = {p.size}", f'sha256 = "{p.sha256}"', f'sha1 = "{sha1}"', f"seen = {SEEN}"]
    assert miss.returncode == 1 and "sid has librocblas4 6.4.4-4, not 9" in miss.stderr


def test_drifted_and_differing_pins_are_named(tmp_path, mirror):
    drifted = _manifest(tmp_path / "a", mirror, version="6.4.4-3")
    differs = _manifest(tmp_path / "b", mirror, sha256="0" * 64)
    with RepoServer(mirror["srv"]) as srv:
        base = ["--mirror", srv.url + "/debian", "--keyring", str(mirror["key"].public_gpg)]
        a = pin(*base, "--manifests", str(drifted), "verify")
        b = pin(*base, "--manifests", str(differs), "verify")
    assert a.returncode == 1 and a.stdout.startswith("drifted ") and "sid has librocblas4 6.4.4-4, not 6.4.4-3" in a.stdout
    assert b.returncode == 1 and b.stdout.startswith("differs ") and f"sha256 {mirror['pkg'].sha256}" in b.stdout


def test_an_index_signed_by_another_key_is_refused(tmp_path, mirror):
    mf = _manifest(tmp_path / "mf", mirror)
    with RepoServer(mirror["srv"]) as srv:
        r = pin("--mirror", srv.url + "/debian", "--keyring", str(signing_keys()["other"].public_gpg),
                "--manifests", str(mf), "verify")
    assert r.returncode == 2 and "no good signature" in r.stderr, r.stderr


def test_check_says_where_each_pin_is_served(tmp_path, mirror):
    sha1 = hashlib.sha1(mirror["deb"].read_bytes()).hexdigest()  # noqa: S324
    mf = _manifest(tmp_path / "mf", mirror, sha1=sha1)
    snap = tmp_path / "snap"
    (snap / "file").mkdir(parents=True)
    os.link(mirror["deb"], snap / "file" / sha1)
    with RepoServer(mirror["srv"]) as srv, RepoServer(snap) as sn:
        base = ["--mirror", srv.url + "/debian", "--keyring", str(mirror["key"].public_gpg), "--snapshot", sn.url]
        ok = pin(*base, "--manifests", str(mf), "check")
        gone = pin(*base, "--manifests", str(_manifest(tmp_path / "g", mirror, version="6.4.4-3", sha1="1" * 40)),
                   "check")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "mirror: ok; snapshot by content: ok" in ok.stdout, ok.stdout
    assert gone.returncode == 1 and gone.stdout.startswith("LOST "), gone.stdout
    assert "no longer lists it (has 6.4.4-4)" in gone.stdout and "snapshot by content: HTTP 404" in gone.stdout
