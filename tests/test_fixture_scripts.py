"""The fixture scripts themselves (tests/fixtures/*.sh and fixcache.py), run into an empty cache
with Debian's real packages served by a local apt repository on 127.0.0.1 (a copy of the cached
.debs), as a fresh machine would run them: the result is complete, a second run reuses it, and
emptying one fixture folder or editing one fixture script rebuilds exactly that fixture.

The scripts run from a copy of tests/fixtures (so a test can edit one) with a small pin set: a few
of trixie's C libraries and of sid's ROCm libraries, enough for the root to be composed the way
the full set is.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CACHE, REPO
from tests.fixtures import fixcache
from tests.fixtures.aptrepo import RepoServer, build_repo

pytestmark = pytest.mark.debian

FIXTURES = REPO / "tests" / "fixtures"
TRIXIE = ["libgcc-s1=14.2.0-19", "libzstd1=1.5.7+dfsg-1", "libmd0=1.1.0-2+b1"]
SID = ["libroctx64-4=6.4.1-1", "libfmt11=11.1.1+ds1-2", "libhsa-runtime64-1=6.4.3+dfsg-5"]
ROCM = ["libfmt11=11.1.1+ds1-2"]


def _pins() -> dict[str, fixcache.Pin]:
    """pinned spec -> the pin, or what stands in for it where its suite moved on (drift)."""
    return {p.spec: fixcache.drifted(p) or p for p in fixcache.pins("hostlib", drift=False)}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """(copy of tests/fixtures, pins file, server) with the small set served from 127.0.0.1."""
    base = tmp_path_factory.mktemp("fixture-scripts")
    pins = _pins()
    # the real packages, from the cache (fetched from Debian's archive when it lacks them)
    r = subprocess.run(["bash", str(FIXTURES / "fetch_debian.sh"), *TRIXIE, *SID], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [f"rocm     {pins[s].suite} {s} {pins[s].size} {pins[s].sha256} {pins[s].sha1}" for s in ROCM]
    lines += [f"hostlib  {pins[s].suite} {s} {pins[s].size} {pins[s].sha256} {pins[s].sha1}" for s in TRIXIE + SID]
    (base / "pins.txt").write_text("# a small set for tests/test_fixture_scripts.py\n" + "\n".join(lines) + "\n")
    repo = base / "repo"
    build_repo(repo, "trixie", [CACHE / "debs" / pins[s].deb for s in TRIXIE])
    build_repo(repo, "sid", [CACHE / "debs" / pins[s].deb for s in SID])
    build_repo(repo, "experimental", [])
    with RepoServer(repo) as srv:
        yield base, srv


class Run:
    """The copied fixture scripts with one empty cache, against the local repository."""

    def __init__(self, base: Path, srv: RepoServer, name: str):
        self.dir = base / name
        self.fx = self.dir / "fixtures"
        shutil.copytree(FIXTURES, self.fx, ignore=shutil.ignore_patterns("__pycache__"))
        self.cache = self.dir / "cache"
        self.srv = srv
        self.env = {**os.environ, "ROCMREVIVE_TEST_CACHE": str(self.cache),
                    "ROCMREVIVE_DEBIAN_PINS": str(base / "pins.txt"),
                    "ROCMREVIVE_DEBIAN_MIRROR": srv.url + "/",
                    "ROCMREVIVE_DEBIAN_SNAPSHOT": "none"}   # never Debian's own from a test

    def popen(self, script: str, *args: str) -> subprocess.Popen:
        return subprocess.Popen(["bash", str(self.fx / script), *args], env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def run(self, script: str, *args: str) -> str:
        p = self.popen(script, *args)
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        return out

    def builds(self) -> list[str]:
        """The fixtures built so far, in order (the entry names of .fixture-builds.log)."""
        log = self.cache / ".fixture-builds.log"
        return [line.split()[1] for line in log.read_text().splitlines()] if log.exists() else []

    def deb_gets(self) -> int:
        return sum(1 for r in self.srv.requests if r[0] == "GET" and r[1].endswith(".deb"))

    def fc(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["python3", str(self.fx / "fixcache.py"), *args], env=self.env,
                              capture_output=True, text=True)


def _root_is_complete(root: Path, cache: Path) -> None:
    pins = _pins()
    for spec in TRIXIE:  # every file of every trixie package, where trixie puts it
        names = subprocess.run(["dpkg-deb", "-c", str(cache / "debs" / pins[spec].deb)], check=True,
                               capture_output=True, text=True).stdout
        for line in names.splitlines():
            path = line.split()[5].split(" -> ")[0]
            if not path.endswith("/"):
                assert (root / path).exists() or (root / path).is_symlink(), (spec, path)
    lib = root / "opt/rocm-6.4.3/lib"
    for spec in SID:  # every library of every sid package, flattened into AMD's layout
        unpacked = cache / "unpacked" / pins[spec].deb[:-4] / "usr/lib/x86_64-linux-gnu"
        sonames = [p.name for p in unpacked.iterdir() if ".so" in p.name]
        assert sonames, spec
        for name in sonames:
            assert (lib / name).exists() or (lib / name).is_symlink(), (spec, name)
    assert (lib / "libroctx64.so.4").exists() and (lib / "libfmt.so.11").exists()
    assert (root / "usr/lib/x86_64-linux-gnu/libzstd.so.1").exists()
    assert (root / "etc/ld.so.conf.d/10-rocm.conf").read_text() == "/opt/rocm-6.4.3/lib\n"


def test_scripts_build_a_complete_cache_from_nothing_and_reuse_it(world):
    base, srv = world
    r = Run(base, srv, "cold")
    gets0 = r.deb_gets()
    # two runs at once into the same empty cache (test runs share one): each fixture is built once
    procs = [r.popen("fetch_hostlib_debs.sh"), r.popen("fetch_hostlib_debs.sh")]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    root = Path(outs[0][0].strip().splitlines()[-1])
    assert root == r.cache / "roots/trixie-rocm643" == Path(outs[1][0].strip().splitlines()[-1])
    pins = _pins()
    assert r.deb_gets() - gets0 == len(TRIXIE + SID)  # each package downloaded once
    for spec in TRIXIE + SID:
        deb = r.cache / "debs" / pins[spec].deb
        assert fixcache.sha256_file(deb) == pins[spec].sha256
    built = r.builds()
    assert sorted(built) == sorted([f"unpacked/{pins[s].deb[:-4]}" for s in SID] + ["roots/trixie-rocm643"])
    _root_is_complete(root, r.cache)
    record = json.loads((root / fixcache.RECORD).read_text())
    assert record["inputs"]["script"] == fixcache.script_hash("fetch_hostlib_debs.sh")
    assert len(record["inputs"]["packages"]) == len(TRIXIE + SID)

    # the same run again reuses everything: nothing downloaded, nothing built
    gets = r.deb_gets()
    r.run("fetch_hostlib_debs.sh")
    assert r.deb_gets() == gets and r.builds() == built
    status = r.fc("status").stdout
    assert "roots/trixie-rocm643: ok" in status and "unpacked/libfmt11_11.1.1+ds1-2_amd64: ok" in status


def test_emptying_one_fixture_folder_rebuilds_exactly_that_one(world):
    base, srv = world
    r = Run(base, srv, "empty-one")
    r.run("fetch_hostlib_debs.sh")
    pins = _pins()
    fmt = f"unpacked/{pins['libfmt11=11.1.1+ds1-2'].deb[:-4]}"
    for name in (fmt, "roots/trixie-rocm643"):
        before, gets = len(r.builds()), r.deb_gets()
        folder = r.cache / name
        shutil.rmtree(folder)
        folder.mkdir()  # an empty folder, as a killed run or a cleanup may leave it
        r.run("fetch_hostlib_debs.sh")
        assert r.builds()[before:] == [name]
        assert r.deb_gets() == gets  # the pinned .debs are reused, not downloaded again
    _root_is_complete(r.cache / "roots/trixie-rocm643", r.cache)

    # a file gone from inside a fixture is found too
    before = len(r.builds())
    next((r.cache / fmt / "usr/lib/x86_64-linux-gnu").glob("libfmt.so.11.*")).unlink()
    r.run("fetch_hostlib_debs.sh")
    assert r.builds()[before:] == [fmt]


def test_a_deb_that_does_not_match_its_pin_is_fetched_again_and_only_it(world):
    base, srv = world
    r = Run(base, srv, "bad-deb")
    r.run("fetch_hostlib_debs.sh")
    pins = _pins()
    deb = r.cache / "debs" / pins["libzstd1=1.5.7+dfsg-1"].deb
    data = bytearray(deb.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other bytes
    deb.write_bytes(bytes(data))
    before, gets = len(r.builds()), r.deb_gets()
    r.run("fetch_hostlib_debs.sh")
    assert r.deb_gets() == gets + 1
    assert fixcache.sha256_file(deb) == pins["libzstd1=1.5.7+dfsg-1"].sha256
    assert r.builds()[before:] == []  # the root was built from the pinned bytes: still valid


def test_editing_one_fixture_script_rebuilds_exactly_its_fixture(world):
    base, srv = world
    r = Run(base, srv, "edit-one")
    r.run("fetch_hostlib_debs.sh")
    # records for the fixtures too slow to build here (llama.cpp, the Ansible venv), made from
    # what the current scripts would record; the decision the scripts take is fixcache's check
    llama = json.loads(r.fc("inputs", "llama").stdout)
    ansible = json.loads(r.fc("inputs", "ansible").stdout)
    for folder, inputs in ((r.cache / "llama" / llama["version"], llama), (r.cache / "ansible-venv", ansible)):
        folder.mkdir(parents=True)
        (folder / "bin").mkdir()
        (folder / "bin/tool").write_text("x\n")
        assert r.fc("record", str(folder), json.dumps(inputs)).returncode == 0
    assert r.fc("scripts-changed").returncode == 1  # nothing built by other scripts

    def stale() -> list[str]:
        rows = [line for line in r.fc("status").stdout.splitlines()
                if not line.startswith("ok") and not line.split()[1].startswith(("debs/", "codeobjects/"))]
        return [line.split()[1].rstrip(":") for line in rows]

    assert stale() == []
    for script, fixture in (("build_llama.sh", f"llama/{llama['version']}"), ("ansible_env.sh", "ansible-venv"),
                            ("fetch_hostlib_debs.sh", "roots/trixie-rocm643")):
        path = r.fx / script
        original = path.read_text()
        path.write_text(original + "# an edit\n")
        assert stale() == [fixture], script
        assert r.fc("scripts-changed").stdout.split() == [fixture]
        if script == "fetch_hostlib_debs.sh":  # cheap enough to run: it rebuilds that one only
            before, gets = len(r.builds()), r.deb_gets()
            r.run(script)
            assert r.builds()[before:] == [fixture] and r.deb_gets() == gets
            assert stale() == []
        path.write_text(original)
        assert stale() == [] or script == "fetch_hostlib_debs.sh"


# ---- Debian moves on (issue 43): a pin its suite no longer serves ---------------------------

FMT = "libfmt11=11.1.1+ds1-2"
FMT_NEXT = "11.1.1+ds1-3"


def _next_revision(deb: Path, version: str, out: Path) -> Path:
    """Debian's real package with the next revision in its control file (what the suite holds
    once a new upload replaced the pinned one): the same files, another version."""
    tree = out / "tree"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-R", str(deb), str(tree)], check=True, capture_output=True)
    control = tree / "DEBIAN/control"
    control.write_text("".join(f"Version: {version}\n" if ln.startswith("Version:") else ln
                               for ln in control.read_text().splitlines(keepends=True)))
    new = out / deb.name.replace("11.1.1+ds1-2", version)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(tree), str(new)], check=True, capture_output=True)
    return new


@pytest.fixture(scope="module")
def moved_on(world, tmp_path_factory):
    """A signed mirror whose sid holds libfmt11 at a newer revision than its pin."""
    from tests.fixtures.aptrepo import signing_keys

    base, _ = world
    d = tmp_path_factory.mktemp("moved-on")
    pins = _pins()
    key = signing_keys()["pinned"]
    newer = _next_revision(CACHE / "debs" / pins[FMT].deb, FMT_NEXT, d / "new")
    repo = d / "repo"
    build_repo(repo, "trixie", [CACHE / "debs" / pins[s].deb for s in TRIXIE], key=key)
    build_repo(repo, "sid", [CACHE / "debs" / pins[s].deb for s in SID if s != FMT] + [newer], key=key)
    build_repo(repo, "experimental", [], key=key)
    with RepoServer(repo) as srv:
        yield base, srv, key


def test_a_pin_its_suite_no_longer_serves_is_replaced_through_the_signed_index(moved_on, monkeypatch):
    base, srv, key = moved_on
    r = Run(base, srv, "drift")
    r.env["ROCMREVIVE_DEBIAN_KEYRING"] = str(key.public_gpg)
    p = r.popen("fetch_hostlib_debs.sh")
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-3000:]
    line = f"pin drifted: libfmt11 11.1.1+ds1-2 -> {FMT_NEXT}; update debian-packages.txt"
    assert line in err, err[-3000:]
    # the tests get the package that was fetched: pins() names it, and the root is built from it
    monkeypatch.setenv("ROCMREVIVE_TEST_CACHE", str(r.cache))
    monkeypatch.setenv("ROCMREVIVE_DEBIAN_PINS", str(base / "pins.txt"))
    fmt = next(pin for pin in fixcache.pins("hostlib") if pin.name == "libfmt11")
    assert fmt.version == FMT_NEXT and fixcache.deb_ok(r.cache / "debs" / fmt.deb, fmt)
    assert fixcache.drifts() == [line]
    root = Path(out.strip().splitlines()[-1])
    _root_is_complete(root, r.cache)
    assert (r.cache / "unpacked" / fmt.deb[:-4]).is_dir()
    # a second run reuses it: nothing downloaded, the drift still named
    gets = r.deb_gets()
    assert r.fc("drifts").stdout.strip() == line
    r.run("fetch_hostlib_debs.sh")
    assert r.deb_gets() == gets


def test_a_drifted_pin_is_never_fetched_from_an_index_the_keyring_did_not_sign(moved_on):
    from tests.fixtures.aptrepo import signing_keys

    base, srv, _ = moved_on
    r = Run(base, srv, "drift-unsigned")
    r.env["ROCMREVIVE_DEBIAN_KEYRING"] = str(signing_keys()["other"].public_gpg)
    p = r.popen("fetch_debian.sh", "--set", "hostlib")
    out, err = p.communicate(timeout=600)
    assert p.returncode != 0 and "pin drifted" not in out + err, (out, err[-2000:])
    assert not list((r.cache / "debs").glob("libfmt11_*.deb"))
    assert not (r.cache / "debs" / ".drift").exists() or not list((r.cache / "debs" / ".drift").iterdir())


@pytest.fixture(scope="module")
def gone(world, tmp_path_factory):
    """A mirror whose sid has no libfmt11 at all, and a snapshot archive serving the pinned file
    by its sha1."""
    d = tmp_path_factory.mktemp("gone")
    pins = _pins()
    repo = d / "repo"
    build_repo(repo, "trixie", [CACHE / "debs" / pins[s].deb for s in TRIXIE])
    build_repo(repo, "sid", [CACHE / "debs" / pins[s].deb for s in SID if s != FMT])
    build_repo(repo, "experimental", [])
    snap = d / "snap"
    (snap / "file").mkdir(parents=True)
    shutil.copyfile(CACHE / "debs" / pins[FMT].deb, snap / "file" / pins[FMT].sha1)
    with RepoServer(repo) as srv, RepoServer(snap) as sn:
        yield world[0], srv, sn


def test_a_pin_gone_from_its_suite_comes_from_the_snapshot_archive_byte_for_byte(gone, monkeypatch):
    base, srv, sn = gone
    r = Run(base, srv, "gone")
    r.env["ROCMREVIVE_DEBIAN_SNAPSHOT"] = sn.url
    p = r.popen("fetch_hostlib_debs.sh")
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-3000:]
    pins = _pins()
    line = (f"fetch_debian: libfmt11 11.1.1+ds1-2 is no longer served by the mirror: fetched from the snapshot "
            f"archive ({sn.url}/file/{pins[FMT].sha1}), the pinned bytes")
    assert line in err and "pin drifted" not in err, err[-3000:]
    assert fixcache.sha256_file(r.cache / "debs" / pins[FMT].deb) == pins[FMT].sha256
    assert [q[1] for q in sn.requests] == [f"/file/{pins[FMT].sha1}"]
    monkeypatch.setenv("ROCMREVIVE_TEST_CACHE", str(r.cache))
    assert fixcache.drifts() == []
    _root_is_complete(Path(out.strip().splitlines()[-1]), r.cache)


def test_a_pin_gone_everywhere_fails_with_one_line(gone):
    base, srv, _ = gone
    r = Run(base, srv, "gone-everywhere")           # no snapshot (none), and sid has no libfmt11
    from tests.fixtures.aptrepo import signing_keys

    r.env["ROCMREVIVE_DEBIAN_KEYRING"] = str(signing_keys()["pinned"].public_gpg)
    p = r.popen("fetch_debian.sh", "--set", "hostlib")
    out, err = p.communicate(timeout=600)
    assert p.returncode != 0 and "pin drifted" not in out, (out, err[-2000:])
