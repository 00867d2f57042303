"""The day Debian moves on (issue 43): a pinned package its suite no longer lists is fetched from
Debian's snapshot archive, by content (``/file/<sha1>``) or by date
(``/archive/debian/<stamp>/pool/...``), checked by the same sha256 and size; every place failing
is one line naming each. Driven from the outside: real HTTP servers on 127.0.0.1 (a mirror whose
sid lists another package only, a snapshot server), `rocmrevive install` and `fetch` as a user
runs them, exit codes, JSON, tree hashes."""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.sources.manifest_load import check_manifests, load_manifests
from rocmrevive.sources.snapshot import DEFAULT_SNAPSHOT, snapshot_base, snapshot_urls
from tests.fixtures.aptrepo import RepoServer, build_deb, build_repo
from tests.test_cli_newuser import closed_port
from tests.test_contract_readonly import demo_machine, doc_of, rr
from tests.test_install import tree_hash, write_manifest

POOL = "pool/main/r/rocblas/librocblas4_6.4.4-4_amd64.deb"
SEEN = "2026-10-30T08:08:01Z"
STAMP = "20261030T080801Z"
LIB = "opt/rocm-6.4.3/lib/rocblas/library"


def sha1_of(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()  # noqa: S324 - the snapshot archive's name


def pinned_manifest(folder: Path, deb: Path) -> Path:
    """The demo manifest pinned to ``deb`` by size and sha256, with the sha1 and the date seen."""
    mf = write_manifest(folder, deb, sha1=sha1_of(deb))
    (mf / "m.toml").write_text((mf / "m.toml").read_text() + f"seen = {SEEN}\n")
    return mf


def moved_on_mirror(where: Path) -> Path:
    """A Debian mirror whose sid lists librocblas5 only (librocblas4's pool file is gone)."""
    other = build_deb(where / "debs", "librocblas5", "7.2.4-1", {"usr/share/doc/librocblas5/x": b"x"})
    build_repo(where / "srv" / "debian", "sid", [other])
    return where / "srv"


def snapshot_folder(where: Path, deb: Path, *, content: bool = True, dated: bool = True,
                    data: bytes | None = None) -> Path:
    """A snapshot archive serving ``deb`` (or ``data`` in its place) by content and by date."""
    if content:
        (where / "file").mkdir(parents=True, exist_ok=True)
        dest = where / "file" / sha1_of(deb)
        dest.write_bytes(data) if data is not None else os.link(deb, dest)
    if dated:
        dest = where / "archive/debian" / STAMP / POOL
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data) if data is not None else os.link(deb, dest)
    return where


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    import minirocblas as mr  # noqa: F401 - put on sys.path by tests.test_install

    d = tmp_path_factory.mktemp("snapworld")
    deb = Path(mr.build_source_deb(d / "librocblas4_6.4.4-4_amd64.deb")["path"])
    return {"deb": deb, "mf": pinned_manifest(d / "manifests", deb), "mirror": moved_on_mirror(d / "mirror"), "d": d}


def artifacts(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / "sha256").iterdir()) if (cache / "sha256").is_dir() else []


def partials(cache: Path) -> list[str]:
    return sorted(str(p) for p in cache.rglob("*.part"))


def install(root: Path, world, cache: Path, *extra: str, json_out: bool = True):
    args = ["--json"] if json_out else []
    return rr(root, *args, "install", "--yes", "--no-libraries", "--manifests", str(world["mf"]),
              "--cache", str(cache), *extra)


# --------------------------------------------------------------------------------------------
# units: the setting, the URLs, the manifest keys


def test_the_setting_defaults_to_debians_archive_and_none_turns_it_off():
    assert snapshot_base(None) == DEFAULT_SNAPSHOT and DEFAULT_SNAPSHOT.startswith("https://")
    assert snapshot_base("none") is None and snapshot_base(" None ") is None
    assert snapshot_base("http://127.0.0.1:8/snap/") == "http://127.0.0.1:8/snap"


def test_a_pin_names_both_url_forms(world):
    (m,) = load_manifests(world["mf"])
    s = m.sources[0]
    assert s.sha1 == sha1_of(world["deb"]) and s.seen == STAMP
    assert snapshot_urls("http://s", s) == [(f"http://s/file/{s.sha1}", "by content"),
                                            (f"http://s/archive/debian/{STAMP}/{POOL}", f"as of {STAMP}")]


def test_every_shipped_debian_pin_carries_what_the_fallback_needs():
    ms = load_manifests(Path(__file__).resolve().parent.parent / "manifests")
    debian = [s for m in ms for s in m.sources if s.kind == "debian"]
    assert len(debian) == 6
    for s in debian:
        assert s.pinned and s.sha1 and s.seen and s.filename, s.key
        assert len(snapshot_urls(DEFAULT_SNAPSHOT, s)) == 2, s.key


@pytest.mark.parametrize("line, words", [
    ('sha1 = "XYZ"', "sha1: must be 40 lower-case hex digits"),
    ('seen = "2026-10-30"', "seen: must be a UTC date and time"),
    ("seen = 2026-10-30T08:08:01+02:00", "seen: must be a UTC date and time"),
    ("seen = 2026-10-30", "seen: must be a UTC date and time"),
])
def test_bad_snapshot_keys_are_a_line_each(tmp_path, world, line, words):
    key = line.split()[0]
    lines = [ln for ln in (world["mf"] / "m.toml").read_text().splitlines() if not ln.startswith(f"{key} =")]
    (tmp_path / "m.toml").write_text("\n".join(lines + [line]) + "\n")
    _, errors = check_manifests(tmp_path)
    assert any(words in e for e in errors), errors


# --------------------------------------------------------------------------------------------
# install from the outside


def test_install_takes_the_file_from_the_snapshot_when_the_mirror_moved_on(tmp_path, world):
    """sid no longer lists librocblas4: the snapshot archive has it by content; the installed tree
    is the one an install from the .deb itself gives, and the output says where it came from."""
    twin = demo_machine(tmp_path / "twin")
    r = rr(twin, "--json", "install", "--yes", "--no-libraries", "--manifests", str(world["mf"]), "--from",
           str(world["deb"]), "--cache", str(tmp_path / "twin-cache"))
    assert r.returncode == 0, r.stdout[-1500:]
    root = demo_machine(tmp_path / "m")
    snap = snapshot_folder(tmp_path / "snap", world["deb"])
    with RepoServer(world["mirror"]) as mirror, RepoServer(snap) as sn:
        r = install(root, world, tmp_path / "cache", "--mirror", mirror.url + "/debian", "--snapshot", sn.url)
        h = rr(demo_machine(tmp_path / "m2"), "install", "--yes", "--no-libraries", "--manifests", str(world["mf"]), "--cache",
               str(tmp_path / "cache2"), "--mirror", mirror.url + "/debian", "--snapshot", sn.url, "--check")
        assert [q[1] for q in sn.requests if q[0] == "GET"] == [f"/file/{sha1_of(world['deb'])}"] * 2
        assert any(q[1] == f"/debian/{POOL}" and q[3] == 404 for q in mirror.requests)
    doc = doc_of(r)
    assert r.returncode == 0, r.stdout[-1500:]
    (copy,) = doc["copies"]
    assert copy["status"] == "installed", copy
    assert copy["artifact"]["url"] == f"{sn.url}/file/{sha1_of(world['deb'])}"
    assert copy["artifact"]["provenance"]["fallback"] == ("not on the mirror any more: from Debian's snapshot "
                                                          "archive (by content)")
    assert tree_hash(root / "opt") == tree_hash(twin / "opt")
    assert artifacts(tmp_path / "cache") == [hashlib.sha256(world["deb"].read_bytes()).hexdigest()]
    # a person reads the same on the terminal
    assert h.returncode == 20, h.stderr[-1500:]
    assert ("librocblas4 6.4.4-4: not on the mirror any more: from Debian's snapshot archive (by content)"
            in h.stderr), h.stderr[-1500:]


def test_by_date_when_the_archive_has_no_file_by_content(tmp_path, world):
    root = demo_machine(tmp_path / "m")
    snap = snapshot_folder(tmp_path / "snap", world["deb"], content=False)
    with RepoServer(world["mirror"]) as mirror, RepoServer(snap) as sn:
        r = install(root, world, tmp_path / "cache", "--mirror", mirror.url + "/debian", "--snapshot", sn.url)
        gets = [(q[1], q[3]) for q in sn.requests if q[0] == "GET"]
    assert r.returncode == 0, r.stdout[-1500:]
    (copy,) = doc_of(r)["copies"]
    assert copy["artifact"]["url"] == f"{sn.url}/archive/debian/{STAMP}/{POOL}"
    assert copy["artifact"]["provenance"]["fallback"].endswith(f"(as of {STAMP})")
    assert gets == [(f"/file/{sha1_of(world['deb'])}", 404), (f"/archive/debian/{STAMP}/{POOL}", 200)]


def test_mirror_and_snapshot_down_is_one_line_naming_both_and_nothing_changes(tmp_path, world):
    root = demo_machine(tmp_path / "m")
    before = tree_hash(root)
    port = closed_port()
    with RepoServer(world["mirror"]) as mirror:
        t0 = time.monotonic()
        r = install(root, world, tmp_path / "cache", "--mirror", mirror.url + "/debian", "--snapshot",
                    f"http://127.0.0.1:{port}", json_out=False)
        took = time.monotonic() - t0
    print(f"mirror moved on and snapshot down: install ended after {took:.2f} s")
    assert r.returncode == 5, r.stderr[-1500:]
    errors = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1, r.stderr[-1500:]
    line = errors[0]
    assert f"the mirror {mirror.url}/debian" in line and "it has no librocblas4 at all" in line, line
    assert f"Debian's snapshot archive http://127.0.0.1:{port} (by content)" in line, line
    assert "connection refused" in line and "(as of" not in line, line  # the dead host is not asked twice
    assert took < 60, took  # generous: the issue asks for 20 s; the measured time is printed above
    assert tree_hash(root) == before
    assert artifacts(tmp_path / "cache") == [] and partials(tmp_path / "cache") == []


@pytest.mark.parametrize("how", ["same size, other bytes", "shorter"])
def test_a_snapshot_serving_other_bytes_is_refused_and_nothing_changes(tmp_path, world, how):
    root = demo_machine(tmp_path / "m")
    before = tree_hash(root)
    good = world["deb"].read_bytes()
    bad = bytes(b ^ 0xFF for b in good[:64]) + good[64:] if how.startswith("same") else good[:1000]
    snap = snapshot_folder(tmp_path / "snap", world["deb"], data=bad)
    with RepoServer(world["mirror"]) as mirror, RepoServer(snap) as sn:
        r = install(root, world, tmp_path / "cache", "--mirror", mirror.url + "/debian", "--snapshot", sn.url)
        asked = [q[1] for q in sn.requests if q[0] == "GET"]
    doc = doc_of(r)
    assert r.returncode == 6 and doc["error"]["code"] == "VERIFY_FAILED", r.stdout[-1500:]
    msg = doc["error"]["message"]
    assert "\n" not in msg and "(by content)" in msg and f"(as of {STAMP})" in msg, msg
    assert ("sha256" in msg) if how.startswith("same") else ("1000 bytes" in msg), msg
    assert len(asked) == 2                                   # both forms asked, both refused
    assert tree_hash(root) == before
    assert artifacts(tmp_path / "cache") == [] and partials(tmp_path / "cache") == []


def test_snapshot_none_never_asks_it(tmp_path, world):
    root = demo_machine(tmp_path / "m")
    before = tree_hash(root)
    snap = snapshot_folder(tmp_path / "snap", world["deb"])
    with RepoServer(world["mirror"]) as mirror, RepoServer(snap) as sn:
        r = install(root, world, tmp_path / "cache", "--mirror", mirror.url + "/debian", "--snapshot", "none")
        assert sn.requests == []
    doc = doc_of(r)
    assert r.returncode == 5 and "is not in" in doc["error"]["message"], doc["error"]
    assert "snapshot" not in doc["error"]["message"]
    assert tree_hash(root) == before


def test_the_config_file_names_the_snapshot(tmp_path, world):
    """``snapshot = "URL"`` in /etc/rocmrevive/config.toml (read under --root), like --snapshot;
    a bad value is a usage line naming the file."""
    root = demo_machine(tmp_path / "m")
    cfg = root / "etc/rocmrevive/config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    snap = snapshot_folder(tmp_path / "snap", world["deb"])
    with RepoServer(world["mirror"]) as mirror, RepoServer(snap) as sn:
        cfg.write_text(f'snapshot = "{sn.url}"\n')
        os.chmod(cfg, 0o644)
        r = install(root, world, tmp_path / "cache", "--mirror", mirror.url + "/debian")
        assert r.returncode == 0, r.stdout[-1500:]
        assert doc_of(r)["copies"][0]["artifact"]["provenance"]["from"] == "snapshot"
    cfg.write_text('snapshot = "ftp://x"\n')
    r = rr(root, "--json", "status")
    assert r.returncode == 2 and "snapshot = 'ftp://x' is not an http://" in doc_of(r)["error"]["message"]
    r = rr(root, "install", "--check", "--snapshot", "gopher://x")
    assert r.returncode == 2 and "--snapshot" in r.stderr


def test_fetch_says_where_the_file_came_from(tmp_path, world):
    snap = snapshot_folder(tmp_path / "snap", world["deb"])
    with RepoServer(world["mirror"]) as mirror, RepoServer(snap) as sn:
        r = rr(Path("/"), "fetch", "--manifests", str(world["mf"]), "--mirror", mirror.url + "/debian",
               "--snapshot", sn.url, "--cache", str(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr[-1500:]
    assert "librocblas4 6.4.4-4: not on the mirror any more: from Debian's snapshot archive (by content)" in r.stdout


def test_a_mirror_down_falls_back_too_and_says_so(tmp_path, world):
    snap = snapshot_folder(tmp_path / "snap", world["deb"])
    with RepoServer(snap) as sn:
        r = rr(Path("/"), "--json", "fetch", "--manifests", str(world["mf"]), "--mirror",
               f"http://127.0.0.1:{closed_port()}/debian", "--snapshot", sn.url, "--cache", str(tmp_path / "cache"))
    assert r.returncode == 0, r.stdout[-1500:]
    (src,) = doc_of(r)["manifests"][0]["sources"]
    assert src["provenance"]["fallback"].startswith("the mirror could not be reached: from Debian's snapshot")


def test_unit_each_place_is_named_in_the_details(tmp_path, world):
    from rocmrevive.sources.fetch import fetch_source
    from rocmrevive.sources.http import Downloader

    (m,) = load_manifests(world["mf"])
    with RepoServer(world["mirror"]) as mirror:
        with pytest.raises(RevError) as ei:
            fetch_source(m.sources[0], tmp_path / "cache", mirror=mirror.url + "/debian",
                         snapshot=f"http://127.0.0.1:{closed_port()}", downloader=Downloader(retries=0))
    places = [t["place"] for t in ei.value.details["tried"]]
    assert places[0] == f"the mirror {mirror.url}/debian" and places[1].startswith("Debian's snapshot archive")
    assert ei.value.code == "NETWORK"


def test_an_unpinned_source_never_falls_back(tmp_path, world):
    """Without sha1 and seen (a manifest of another maker) nothing is asked of the snapshot."""
    mf = write_manifest(tmp_path / "mf", world["deb"])
    snap = snapshot_folder(tmp_path / "snap", world["deb"])
    with RepoServer(world["mirror"]) as mirror, RepoServer(snap) as sn:
        r = rr(Path("/"), "--json", "fetch", "--manifests", str(mf), "--mirror", mirror.url + "/debian",
               "--snapshot", sn.url, "--cache", str(tmp_path / "cache"))
        assert sn.requests == []
    assert r.returncode == 5, r.stdout[-800:]


def _shipped_copy(tmp_path: Path) -> Path:
    d = tmp_path / "shipped"
    shutil.copytree(Path(__file__).resolve().parent.parent / "manifests", d)
    return d


@pytest.mark.debian
@pytest.mark.slow
def test_real_librocblas4_from_the_snapshot_with_the_shipped_manifests(tmp_path, debian_debs, debian_pkgs):
    """Debian's real librocblas4 6.4.4-4 (280 MB), gone from the test mirror's sid, served by the
    test snapshot archive under both URL forms: `install` with the shipped manifests gives the
    tree an install from the .deb gives, byte for byte; by date works too."""
    from tests.machines.build import build_amd_layout_from_debian

    deb = debian_debs["librocblas4_6.4.4-4_amd64"]
    pkg = debian_pkgs["librocblas4_6.4.4-4_amd64"]
    twin = build_amd_layout_from_debian(tmp_path / "twin", pkg)
    r = rr(twin, "--json", "install", "--yes", "--no-libraries", "--from", str(deb), "--cache",
           str(tmp_path / "c0"))
    assert r.returncode == 0, r.stdout[-1500:]
    mirror_dir = moved_on_mirror(tmp_path / "mirror")
    for form in ("content", "date"):
        root = build_amd_layout_from_debian(tmp_path / form, pkg)
        snap = snapshot_folder(tmp_path / f"snap-{form}", deb, content=form == "content", dated=form == "date")
        with RepoServer(mirror_dir) as mirror, RepoServer(snap) as sn:
            r = rr(root, "--json", "install", "--yes", "--no-libraries", "--mirror", mirror.url + "/debian",
                   "--snapshot", sn.url, "--cache", str(tmp_path / f"c-{form}"))
        assert r.returncode == 0, r.stdout[-1500:]
        (copy,) = doc_of(r)["copies"]
        assert copy["status"] == "installed" and copy["summary"]["create"] == 140
        assert copy["artifact"]["provenance"]["from"] == "snapshot"
        assert tree_hash(root / "opt") == tree_hash(twin / "opt"), form
        shutil.rmtree(tmp_path / f"c-{form}")
