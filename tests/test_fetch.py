"""fetch_source and `rocmrevive fetch` against a real HTTP server on 127.0.0.1 serving a real apt
repository (dpkg-deb packages of real gfx906 code objects, InRelease signed by real gpg)."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.sources.cache import Cache, default_cache_dir
from rocmrevive.sources.export import export_artifacts
from rocmrevive.sources.fetch import fetch_source
from rocmrevive.sources.http import Downloader
from rocmrevive.sources.manifest_load import load_manifests
from tests.fixtures.aptrepo import RepoServer, make_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("aptworld") / "srv")


@pytest.fixture()
def server(world):
    with RepoServer(world.base) as srv:
        yield srv


def _manifest(tmp_path: Path, world, url: str, **kw):
    d = tmp_path / "manifests"
    d.mkdir(exist_ok=True)
    (d / "test.toml").write_text(world.manifest_text(url, **kw))
    return load_manifests(d)[0], d


def _dl(**kw) -> Downloader:
    sleeps: list[float] = []
    kw.setdefault("timeout", (2.0, 2.0))
    kw.setdefault("retries", 3)
    dl = Downloader(sleep=sleeps.append, **kw)
    dl.sleeps = sleeps
    return dl


def _cache_files(cache: Path) -> list[str]:
    d = cache / "sha256"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def _deb_path(world) -> str:
    return "/debian/" + world.debian.package("librocblas4").filename


# --------------------------------------------------------------------------------------------
# plain downloads from a Debian-style mirror


def test_good_download_lands_in_cache_by_sha256(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("debian-librocblas4")
    seen = []
    r = fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=_dl(),
                     progress=lambda done, total: seen.append((done, total)))
    data = Path(r).read_bytes()
    assert hashlib.sha256(data).hexdigest() == src.sha256 == r.sha256
    assert Path(r) == tmp_path / "cache" / "sha256" / src.sha256
    assert r.origin == "download" and r.verified
    assert seen and seen[-1] == (src.size, src.size)
    assert oct(Path(r).stat().st_mode & 0o777) == "0o444"
    # a second call is served from the cache: no request at all
    n = len(server.requests)
    r2 = fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=_dl())
    assert r2.origin == "cache" and len(server.requests) == n


def test_cut_halfway_then_resumed_with_range(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("debian-librocblas4")
    half = src.size // 2
    server.fault(_deb_path(world), "drop", after=half)
    dl = _dl()
    r = fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=dl)
    assert r.sha256 == src.sha256
    gets = server.gets(_deb_path(world))
    assert [g[3] for g in gets] == [200, 206]
    assert gets[0][2] is None and gets[1][2].startswith("bytes=")
    resumed_at = int(gets[1][2][6:-1])
    assert resumed_at == half  # every byte that arrived was kept
    assert "connection" in dl.log[0] and f"at byte {resumed_at}" in dl.log[0]
    assert not (tmp_path / "cache" / "partial" / f"{src.sha256}.part").exists()


def test_resume_across_runs_from_partial_file(tmp_path, world, server):
    """A run killed mid-download leaves a partial file; the next run continues it."""
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("debian-librocblas4")
    server.fault(_deb_path(world), "drop", after=1_000_000)
    server.fault(_deb_path(world), "status", code=503, times=10)
    with pytest.raises(RevError) as ei:
        fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=_dl(retries=2))
    assert ei.value.code == "NETWORK"
    part = tmp_path / "cache" / "partial" / f"{src.sha256}.part"
    kept = part.stat().st_size
    assert kept == 1_000_000 and f"{kept} of" in ei.value.message
    assert _cache_files(tmp_path / "cache") == []
    server.faults.clear()
    r = fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=_dl())
    assert r.sha256 == src.sha256
    assert server.gets(_deb_path(world))[-1][2] == f"bytes={kept}-"


def test_500_then_success_backs_off(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("debian-librocblas4")
    server.fault(_deb_path(world), "status", code=500, times=2)
    dl = _dl(backoff=0.5)
    r = fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=dl)
    assert r.sha256 == src.sha256
    assert [g[3] for g in server.gets(_deb_path(world))] == [500, 500, 200]
    assert len(dl.sleeps) == 2 and dl.sleeps[1] > dl.sleeps[0] * 0.9  # exponential, with jitter
    assert all(0 < s <= 30 for s in dl.sleeps)


def test_retry_after_is_honoured(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    server.fault(_deb_path(world), "status", code=503, retry_after=7)
    dl = _dl()
    fetch_source(m.source("debian-librocblas4"), tmp_path / "cache", mirror=server.url + "/debian", downloader=dl)
    assert dl.sleeps == [7.0]


def test_404_fails_at_once_with_what_the_mirror_has(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url, debian={"version": "6.4.4-5",
                                                           "filename": "pool/main/l/librocblas4/gone.deb"})
    dl = _dl()
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("debian-librocblas4"), tmp_path / "cache", mirror=server.url + "/debian",
                     downloader=dl)
    assert ei.value.code == "NETWORK"
    assert "6.4.4-5 is not in" in ei.value.message and "it has 6.4.4-4" in ei.value.message
    assert dl.sleeps == []  # not transient: no retries
    assert len(server.gets("/debian/pool/main/l/librocblas4/gone.deb")) == 1


def test_wrong_checksum_never_reaches_the_cache(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("debian-librocblas4")
    evil = bytearray(world.deb_path.read_bytes())
    evil[len(evil) // 2] ^= 0xFF
    server.fault(_deb_path(world), "body", data=bytes(evil))
    with pytest.raises(RevError) as ei:
        fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=_dl())
    assert ei.value.code == "VERIFY_FAILED" and "sha256" in ei.value.message and "\n" not in ei.value.message
    assert _cache_files(tmp_path / "cache") == []
    assert not list((tmp_path / "cache" / "partial").glob("*.part"))


def test_wrong_checksum_after_resume_restarts_once(tmp_path, world, server):
    """A partial file from another version of the package: the glued result fails, one clean retry wins."""
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("debian-librocblas4")
    part = Cache(tmp_path / "cache").partial_path(src.sha256)
    part.write_bytes(b"\0" * 4096)  # not a prefix of the real file
    dl = _dl()
    r = fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=dl)
    assert r.sha256 == src.sha256
    assert [g[2] for g in server.gets(_deb_path(world))] == ["bytes=4096-", None]
    assert any("starting over" in line for line in dl.log)


@pytest.mark.parametrize("delta", [+1, -1])
def test_wrong_size_is_refused(tmp_path, world, server, delta):
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("debian-librocblas4")
    data = world.deb_path.read_bytes()
    server.fault(_deb_path(world), "body", data=data + b"x" if delta > 0 else data[:-1], times=10)
    with pytest.raises(RevError) as ei:
        fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=_dl(retries=1))
    assert ei.value.code == "VERIFY_FAILED" and f"{src.size + delta} bytes, the pinned size" in ei.value.message
    assert len(server.gets(_deb_path(world))) == 1  # not retried: the mirror has another file
    assert _cache_files(tmp_path / "cache") == []


def test_slow_server_against_the_timeout(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("debian-librocblas4")
    server.fault(_deb_path(world), "stall", seconds=1.5, times=5)
    dl = _dl(timeout=(0.5, 0.5), retries=1)
    t0 = time.monotonic()
    with pytest.raises(RevError) as ei:
        fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=dl)
    assert ei.value.code == "NETWORK" and "timed out" in ei.value.message
    assert time.monotonic() - t0 < 5
    assert _cache_files(tmp_path / "cache") == []
    # slow but steady (every gap well under the timeout) is fine
    server.faults.clear()
    server.fault(_deb_path(world), "slow", chunk=512 * 1024, delay=0.05)
    r = fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=_dl(timeout=(0.5, 0.5)))
    assert r.sha256 == src.sha256


def test_server_ignoring_range_starts_over(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("debian-librocblas4")
    server.fault(_deb_path(world), "drop", after=500_000)
    server.fault(_deb_path(world), "ignore-range")
    r = fetch_source(src, tmp_path / "cache", mirror=server.url + "/debian", downloader=_dl())
    assert r.sha256 == src.sha256
    assert [g[3] for g in server.gets(_deb_path(world))] == [200, 200]


def test_connection_refused_is_network_error(tmp_path, world):
    m, _ = _manifest(tmp_path, world, "http://127.0.0.1:9")
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("debian-librocblas4"), tmp_path / "cache", mirror="http://127.0.0.1:9/debian",
                     downloader=_dl(retries=1))
    assert ei.value.code == "NETWORK" and "refused" in ei.value.message


# --------------------------------------------------------------------------------------------
# mirrors from the machine's apt configuration; the index when no filename is pinned


def test_mirror_from_apt_config_under_root(tmp_path, world, server):
    root = tmp_path / "machine"
    (root / "etc/apt/sources.list.d").mkdir(parents=True)
    (root / "etc/apt/sources.list.d/debian.sources").write_text(
        f"Types: deb\nURIs: http://127.0.0.1:9/unreachable\nSuites: bookworm-security\nComponents: main\n\n"
        f"Types: deb\nURIs: {server.url}/debian\nSuites: bookworm bookworm-updates\nComponents: main\n"
        f"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    (root / "etc/apt/sources.list.d/rocm.list").write_text(
        "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/rocm/apt/6.4.1 jammy main\n")
    m, _ = _manifest(tmp_path, world, server.url)
    r = fetch_source(m.source("debian-librocblas4"), tmp_path / "cache", root=Root(root), downloader=_dl())
    assert r.url == f"{server.url}/debian/{world.debian.package('librocblas4').filename}"


def test_no_mirror_configured_is_a_usage_error(tmp_path, world):
    root = tmp_path / "machine"
    (root / "etc/apt").mkdir(parents=True)
    m, _ = _manifest(tmp_path, world, "http://127.0.0.1:9")
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("debian-librocblas4"), tmp_path / "cache", root=Root(root), downloader=_dl())
    assert ei.value.code == "USAGE" and "--mirror" in ei.value.message


def test_resolved_through_packages_index_when_no_filename(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url, debian={"filename": None})
    r = fetch_source(m.source("debian-librocblas4"), tmp_path / "cache", mirror=server.url + "/debian",
                     downloader=_dl())
    assert r.filename == world.debian.package("librocblas4").filename
    assert r.provenance["index"] == "dists/sid/main/binary-amd64/Packages.xz"
    assert server.gets("/debian/dists/sid/main/binary-amd64/Packages.xz")


def test_index_disagreeing_with_the_pin_is_refused(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url, debian={"filename": None, "sha256": "ab" * 32})
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("debian-librocblas4"), tmp_path / "cache", mirror=server.url + "/debian",
                     downloader=_dl())
    assert ei.value.code == "VERIFY_FAILED" and "the manifest pins" in ei.value.message
    assert _cache_files(tmp_path / "cache") == []


# --------------------------------------------------------------------------------------------
# the signed chain (AMD-style repository): InRelease -> Packages -> .deb


def test_signed_chain_pins_an_unpinned_source(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    src = m.source("amd-rocblas-4.3.0")
    assert not src.pinned
    r = fetch_source(src, tmp_path / "cache", downloader=_dl(), root=Root(tmp_path / "emptyroot"))
    pkg = world.amd.package("rocblas")
    assert (r.sha256, r.size, r.filename) == (pkg.sha256, pkg.size, pkg.filename)
    assert r.provenance["signed_by"] == world.keys["pinned"].fingerprint
    assert r.provenance["pinned_by"] == "signed index"
    # the key was fetched from key_url (trusted only through the fingerprint) and kept
    assert (tmp_path / "cache/keys" / f"{world.keys['pinned'].fingerprint}.gpg").is_file()
    # offline afterwards: the cached resolution and artifact are enough
    n = len(server.requests)
    r2 = fetch_source(src, tmp_path / "cache", downloader=_dl(), root=Root(tmp_path / "emptyroot"))
    assert r2.origin == "cache" and r2.sha256 == pkg.sha256 and len(server.requests) == n


def test_bad_signature_is_refused(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url, amd={"suite": "jammy-badsig"})
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("amd-rocblas-4.3.0"), tmp_path / "cache", downloader=_dl(),
                     keyrings=[world.keys["pinned"].public_gpg], root=Root(tmp_path / "emptyroot"))
    assert ei.value.code == "VERIFY_FAILED" and "BAD signature" in ei.value.message
    assert not server.gets("/amd/dists/jammy-badsig/main/binary-amd64/Packages.xz")
    assert _cache_files(tmp_path / "cache") == []


def test_key_other_than_pinned_is_refused(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url,
                     amd={"suite": "jammy-other", "key_url": f"{server.url}/amd/other.gpg.key"})
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("amd-rocblas-4.3.0"), tmp_path / "cache", downloader=_dl(),
                     keyrings=[world.keys["other"].public_gpg], root=Root(tmp_path / "emptyroot"))
    assert ei.value.code == "VERIFY_FAILED"
    assert world.keys["other"].fingerprint in ei.value.message
    assert f"not by the pinned key {world.keys['pinned'].fingerprint}" in ei.value.message
    assert _cache_files(tmp_path / "cache") == []
    assert not (tmp_path / "cache/keys" / f"{world.keys['pinned'].fingerprint}.gpg").exists()


def test_index_file_tampered_after_signing_is_refused(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    real = (world.base / "amd/dists/jammy/main/binary-amd64/Packages.xz").read_bytes()
    server.fault("/amd/dists/jammy/main/binary-amd64/Packages.xz", "body", data=real[:-8] + b"\0" * 8)
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("amd-rocblas-4.3.0"), tmp_path / "cache", downloader=_dl(),
                     root=Root(tmp_path / "emptyroot"))
    assert ei.value.code == "VERIFY_FAILED" and "signed index" in ei.value.message


# --------------------------------------------------------------------------------------------
# local copies and exports


def test_local_deb_is_verified_and_copied(tmp_path, world):
    m, _ = _manifest(tmp_path, world, "http://127.0.0.1:9")
    r = fetch_source(m.source("debian-librocblas4"), tmp_path / "cache", local=world.deb_path)
    assert r.origin == "local" and Path(r).read_bytes() == world.deb_path.read_bytes()
    bad = tmp_path / "bad.deb"
    bad.write_bytes(world.deb_path.read_bytes()[:-1] + b"\0")
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("debian-librocblas4"), tmp_path / "cache2", local=bad)
    assert ei.value.code == "VERIFY_FAILED" and "sha256" in ei.value.message
    assert _cache_files(tmp_path / "cache2") == []


def test_local_unpinned_without_resolution_is_refused(tmp_path, world):
    m, _ = _manifest(tmp_path, world, "http://127.0.0.1:9")
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("amd-rocblas-4.3.0"), tmp_path / "cache", local=world.amd_deb_path)
    assert ei.value.code == "VERIFY_FAILED" and "cannot be checked" in ei.value.message


def test_export_then_fetch_offline_from_it(tmp_path, world, server):
    m, _ = _manifest(tmp_path, world, server.url)
    online = tmp_path / "online-cache"
    results = [fetch_source(m.source("debian-librocblas4"), online, mirror=server.url + "/debian",
                            downloader=_dl()),
               fetch_source(m.source("amd-rocblas-4.3.0"), online, downloader=_dl(),
                            root=Root(tmp_path / "emptyroot"))]
    export = tmp_path / "export"
    files = export_artifacts(results, export)
    sums = (export / "SHA256SUMS").read_text().splitlines()
    assert len(sums) == len(files) >= 5  # 2 debs, InRelease, Packages.xz, key
    for line in sums:
        digest, rel = line.split("  ", 1)
        assert hashlib.sha256((export / rel).read_bytes()).hexdigest() == digest
    # another host, no network (the server is not used), empty cache
    n = len(server.requests)
    offline = tmp_path / "offline-cache"
    a = fetch_source(m.source("debian-librocblas4"), offline, local=export)
    b = fetch_source(m.source("amd-rocblas-4.3.0"), offline, local=export, root=Root(tmp_path / "emptyroot"))
    assert (a.sha256, b.sha256) == (results[0].sha256, results[1].sha256)
    assert b.provenance["signed_by"] == world.keys["pinned"].fingerprint  # the chain was checked again
    assert len(server.requests) == n
    # a tampered export is caught
    deb = export / "sources/amd-rocblas-4.3.0" / world.amd.package("rocblas").filename
    data = bytearray(deb.read_bytes())
    data[100] ^= 1
    deb.write_bytes(bytes(data))
    with pytest.raises(RevError) as ei:
        fetch_source(m.source("amd-rocblas-4.3.0"), tmp_path / "third-cache", local=export,
                     root=Root(tmp_path / "emptyroot"))
    assert ei.value.code == "VERIFY_FAILED"


def test_default_cache_dir():
    root = Root("/srv/machine")
    assert default_cache_dir(root, euid=0) == Path("/srv/machine/var/cache/rocmrevive")
    assert default_cache_dir(root, euid=1000, env={"XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"}) == \
        Path("/x/cache/rocmrevive")
    assert default_cache_dir(root, euid=1000, env={"HOME": "/home/u"}) == Path("/home/u/.cache/rocmrevive")


# --------------------------------------------------------------------------------------------
# the command


def _run(args, root="/"):
    res = CliRunner().invoke(cli, ["--json", "--root", str(root), *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def test_cli_fetch_from_server_extracts_the_gfx906_files(tmp_path, world, server):
    _, mdir = _manifest(tmp_path, world, server.url)
    code, doc = _run(["fetch", "--manifests", str(mdir), "--mirror", server.url + "/debian",
                      "--cache", str(tmp_path / "cache"), "--extract", str(tmp_path / "x"),
                      "--to", str(tmp_path / "export")])
    assert code == 0, doc
    assert doc["command"] == "fetch" and doc["schema_version"] == 1 and doc["changed"] is True
    assert doc["error"] is None
    (m,) = doc["manifests"]
    statuses = {s["source"]: s["status"] for s in m["sources"]}
    assert statuses == {"debian-librocblas4": "downloaded", "amd-rocblas-4.3.0": "not-tried"}
    ext = m["extracted"]
    assert ext["files"] == len(world.gfx906)
    out = Path(ext["dir"])
    assert {p.name for p in out.iterdir()} == world.gfx906 | {"SHA256SUMS"}
    for name in world.gfx906:
        assert (out / name).read_bytes() == world.files[name]
    assert (tmp_path / "export/SHA256SUMS").is_file()
    # again: nothing to download, same result, nothing changed in the cache
    code, doc2 = _run(["fetch", "--manifests", str(mdir), "--mirror", server.url + "/debian",
                       "--cache", str(tmp_path / "cache")])
    assert code == 0 and doc2["changed"] is False
    assert doc2["manifests"][0]["sources"][0]["status"] == "cached"


def test_cli_fetch_from_local_deb(tmp_path, world):
    _, mdir = _manifest(tmp_path, world, "http://127.0.0.1:9")
    code, doc = _run(["fetch", "--manifests", str(mdir), "--from", str(world.deb_path),
                      "--cache", str(tmp_path / "cache"), "--extract", str(tmp_path / "x")])
    assert code == 0, doc
    src = doc["manifests"][0]["sources"][0]
    assert src["status"] == "local" and src["sha256"] == world.debian.package("librocblas4").sha256
    assert doc["manifests"][0]["extracted"]["files"] == len(world.gfx906)


def test_cli_fetch_network_failure_exit_code(tmp_path, world, server):
    _, mdir = _manifest(tmp_path, world, server.url)
    server.fault(_deb_path(world), "status", code=404)
    code, doc = _run(["fetch", "--manifests", str(mdir), "--mirror", server.url + "/debian",
                      "--cache", str(tmp_path / "cache")])
    assert code == 5
    assert doc["error"]["code"] == "NETWORK" and "no source could be fetched" in doc["error"]["message"]
    assert doc["manifests"][0]["sources"][0]["status"] == "failed"


def test_cli_cross_version_source_only_when_named(tmp_path, world, server):
    _, mdir = _manifest(tmp_path, world, server.url)
    code, doc = _run(["fetch", "--manifests", str(mdir), "--source", "amd-rocblas-4.3.0",
                      "--cache", str(tmp_path / "cache")], root=tmp_path)
    assert code == 0, doc
    src = next(s for s in doc["manifests"][0]["sources"] if s["source"] == "amd-rocblas-4.3.0")
    assert src["status"] == "downloaded" and src["cross_version"] is True
    assert src["provenance"]["signed_by"] == world.keys["pinned"].fingerprint


def test_cli_bad_manifest_is_usage_error(tmp_path, world):
    d = tmp_path / "m"
    d.mkdir()
    (d / "x.toml").write_text(world.manifest_text("http://127.0.0.1:9", debian={"sha256": "nothex"}))
    code, doc = _run(["fetch", "--manifests", str(d), "--cache", str(tmp_path / "cache")])
    assert code == 2 and doc["error"]["code"] == "USAGE"
    assert "x.toml:" in doc["error"]["message"] and "sha256" in doc["error"]["message"]
    assert not (tmp_path / "cache").exists()


def test_local_unpacked_tree_is_used_in_place_unverified(tmp_path, world):
    from rocmrevive.sources.unpack import extract_selected
    from tests.fixtures.aptrepo import PREFIX_DEBIAN

    tree = tmp_path / "unpacked"
    lib = tree / PREFIX_DEBIAN
    lib.mkdir(parents=True)
    for n, b in world.files.items():
        (lib / n).write_bytes(b)
    m, mdir = _manifest(tmp_path, world, "http://127.0.0.1:9")
    r = fetch_source(m.source("debian-librocblas4"), tmp_path / "cache", local=tree)
    assert r.origin == "local-tree" and r.verified is False and r.sha256 is None
    staged = extract_selected(r, m.select, tmp_path / "stage", member_prefix=r.source.member_prefix)
    assert {f.name for f in staged} == world.gfx906
    code, doc = _run(["fetch", "--manifests", str(mdir), "--from", str(tree), "--cache", str(tmp_path / "c2")])
    assert code == 0 and doc["manifests"][0]["sources"][0]["status"] == "local-tree"
    assert any("no package checksum" in w for w in doc["warnings"])
