"""Host-library grafts end to end (issue 7; docs/grafts.md): real Debian libraries grafted into a
ROCm 6.4.3 tree of a machine in a folder whose system libraries are a real distribution's.

The machines: the dual-MI50 fixture (tests/machines) with
  * the C/C++ runtime and system libraries of Debian trixie (glibc 2.41, libstdc++ 14) — or of this
    machine itself (bookworm: glibc 2.36, libstdc++ 12) — in /usr/lib/x86_64-linux-gnu, hard-linked;
  * the tree's HIP runtime: Debian's libamdhip64-6 6.4.3 (+ ROCr, roctx, comgr), hard-linked into
    /opt/rocm-6.4.3/lib, standing in for AMD's;
  * in the same folder, AMD-style libraries without gfx906 (librocfft.so.0 -> librocfft.so.0.1.60403):
    real host libraries compiled here with gfx908/gfx1030 device code only.
The sources are Debian's real packages, given with --from, and the shipped library manifests.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from rocmrevive.rootfs import Root
from rocmrevive.txn import divert
from tests.conftest import CACHE, REPO
from tests.machines.build import build
from tests.test_hostlib_debian import _hostlib_root
from tests.test_install import rr, tree_hash

pytestmark = pytest.mark.debian

TREE = "/opt/rocm-6.4.3/lib"
LIBDIR = "usr/lib/x86_64-linux-gnu"
MI50 = "gfx906:sramecc+:xnack-"
HIP = ("libamdhip64.so.6", "libhsa-runtime64.so.1", "libroctx64.so.4", "libamd_comgr.so.3", "libLLVM",
       "libxml2.so.16")
DEBS = {"rocfft": "librocfft0_6.4.3-1+b1_amd64.deb", "rocsparse": "librocsparse1_6.4.3-3_amd64.deb",
        "rocsolver": "librocsolver0_6.4.3-2+b1_amd64.deb", "rocrand": "librocrand1_6.4.3-1_amd64.deb"}
UNPACKED_ROCFFT = CACHE / "unpacked/librocfft0_6.4.3-1+b1_amd64" / LIBDIR / "librocfft.so.0.1"


@pytest.fixture(scope="module")
def troot() -> Path:
    return _hostlib_root()


def _link(src: Path, dst: Path) -> None:
    """A symbolic link as a link, a file as a hard link (a copy across filesystems)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
        return
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def system_libraries(root: Path, source: Path, names) -> None:
    """Give ``root`` the library files ``names`` of the folder ``source`` (a distribution's
    /usr/lib/x86_64-linux-gnu), links as links; names the source lacks are left out."""
    todo = list(names)
    while todo:
        name = todo.pop()
        src, dst = source / name, root / LIBDIR / name
        if os.path.lexists(dst) or not (src.is_symlink() or src.is_file()):
            continue
        _link(src, dst)
        if src.is_symlink() and "/" not in os.readlink(src):
            todo.append(os.readlink(src))  # the file the link names (libstdc++.so.6.0.30)


def compose_machine(tmp: Path, troot: Path, codeobjects, *, system: str = "trixie",
                    without_gfx906=("librocfft.so.0",), with_gfx906=(), owned_by: dict | None = None) -> Path:
    """The dual-MI50 machine, the system libraries of ``system`` ("trixie" or "host"), the tree's
    HIP runtime, and AMD-style libraries in /opt/rocm-6.4.3/lib: ``without_gfx906`` (gfx908 and
    gfx1030 code only) and ``with_gfx906`` (gfx906 and gfx908), each ``<soname>`` ->
    ``<soname>.<minor>.60403`` as AMD names them. ``owned_by``: {soname: dpkg package} writes
    var/lib/dpkg/info/<package>.list naming the file (AMD's packages own their files)."""
    root = build("dual-mi50", tmp / "machine")
    names = sorted(os.listdir(troot / LIBDIR))
    system_libraries(root, troot / LIBDIR if system == "trixie" else Path("/") / LIBDIR, names)
    tree = root / TREE.lstrip("/")
    for f in sorted((troot / TREE.lstrip("/")).iterdir()):
        if f.name.startswith(HIP):
            _link(f, tree / f.name)
    for soname, fixture in [(s, "libhip_gfx908_gfx1030") for s in without_gfx906] + \
                           [(s, "libhip_gfx906_gfx908") for s in with_gfx906]:
        real = f"{soname}.0.60403"
        shutil.copy(codeobjects[fixture].path, tree / real)  # its own inode: audit lists each file once
        os.symlink(real, tree / soname)
    for soname, pkg in (owned_by or {}).items():
        info = root / "var/lib/dpkg/info"
        info.mkdir(parents=True, exist_ok=True)
        real = os.readlink(tree / soname)
        (info / f"{pkg}.list").write_text(f"/.\n/opt\n/opt/rocm-6.4.3\n{TREE}\n{TREE}/{real}\n{TREE}/{soname}\n")
    return root


def manifests(tmp: Path, *names: str) -> Path:
    """A folder with copies of the shipped library manifests ``names`` (rocfft, rocsparse, ...)."""
    d = tmp / "manifests"
    d.mkdir(exist_ok=True)
    for n in names:
        shutil.copy(REPO / f"manifests/{n}-6.4-gfx906.toml", d)
    return d


def leave_extracted(root: Path, mdir: Path, from_path: Path, cache: Path, area: Path) -> None:
    """What an install leaves in the cache for each library source it reads: the package fetched
    (here read from ``from_path``) and its members extracted, by the install's own functions."""
    from rocmrevive.install.extract import extracted, fetch_first
    from rocmrevive.install.graft import library_components
    from rocmrevive.sources.manifest_load import load_manifests

    ms = load_manifests(mdir)
    for m, _comp in library_components(ms, "6.4.3"):
        try:
            src, fetched = fetch_first(Root(root), m.sources_for_rocm("6.4.3"), cache, mirror=None,
                                       from_path=str(from_path), log=lambda _m: None, progress=None, manifests=ms)
        except Exception as exc:            # noqa: BLE001 — a manifest with no package in from_path
            if "rocsparse" in m.id or "rocsolver" in m.id:
                raise AssertionError(f"{m.id}: {exc}") from exc
            continue
        area.mkdir(exist_ok=True)
        extracted(fetched, m, src, cache, lambda _m: None, area)


def debs(tmp: Path, *names: str) -> Path:
    """A folder holding the real packages (hard links into the test cache)."""
    d = tmp / "debs"
    d.mkdir(exist_ok=True)
    for n in names:
        src = CACHE / "debs" / DEBS[n]
        if not src.exists():
            _hostlib_root()
        if not (d / DEBS[n]).exists():
            _link(src, d / DEBS[n])
    return d


def install_args(tmp: Path, *names: str) -> list[str]:
    return ["--manifests", str(manifests(tmp, *names)), "--from", str(debs(tmp, *names)),
            "--cache", str(tmp / "cache"), "--yes"]


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def only_library(doc: dict, soname: str) -> dict:
    (lp,) = [x for x in doc["libraries"] if x["soname"] == soname]
    return lp


def real_loader(root: Path, lib: Path, ld: Path) -> subprocess.CompletedProcess:
    """The dynamic loader ``ld`` itself, in trace mode with every relocation bound (what `ldd -r`
    runs), searching only the root's tree and system folders: the verdict's cross-check."""
    env = {"LD_TRACE_LOADED_OBJECTS": "1", "LD_WARN": "yes", "LD_BIND_NOW": "yes"}
    path = f"{root}{TREE}:{root}/{LIBDIR}"
    return subprocess.run([str(ld), "--inhibit-cache", "--library-path", path, str(lib)], env=env,
                          capture_output=True, text=True)


def _host_glibc() -> tuple[int, int]:
    major, minor = os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2]
    return int(major), int(minor)


# ------------------------------------------------------------------------------------------
# trixie: the graft passes; install, verify, status, rollback byte for byte

def test_round_trip_on_trixie(tmp_path, troot, codeobjects):
    root = compose_machine(tmp_path, troot, codeobjects)
    args = install_args(tmp_path, "rocfft")
    tree = root / TREE.lstrip("/")
    original = sha(tree / "librocfft.so.0.0.60403")
    before = tree_hash(root / "opt")

    r = rr(root, "--json", "install", "--check", *args, check_rc=20)
    doc = json.loads(r.stdout)
    lp = only_library(doc, "librocfft.so.0")
    assert (lp["status"], lp["abi_ok"], lp["lines"]) == ("planned", True, [])
    assert lp["path"] == f"{TREE}/librocfft.so.0.0.60403"
    assert lp["missing"] == [MI50] and lp["has"] == ["gfx1030", "gfx908"]
    assert lp["abi"]["coverage"]["targets"] == [{"target": MI50, "covered": True, "by": ["gfx906"],
                                                 "co_versions": [6], "min_rocm": "6.3"}]
    assert {n["name"]: n["path"] for n in lp["abi"]["needed"]}["libamdhip64.so.6"] == f"{TREE}/libamdhip64.so.6"
    assert lp["divert"]["wanted"] is False and lp["owner"]["package"] is None
    assert "1 host library would change" in doc["error"]["message"]
    assert tree_hash(root / "opt") == before            # --check changed nothing

    r = rr(root, "--json", "install", *args, check_rc=3)  # 3: the graft is made, and the rocBLAS copy (no manifest in this folder) is left without gfx906
    doc = json.loads(r.stdout)
    assert "1 rocBLAS copy still without gfx906 files" in doc["error"]["message"]
    lp = only_library(doc, "librocfft.so.0")
    assert lp["status"] == "installed" and lp["txid"] and doc["changed"] is True
    assert lp["verify_after"]["ok"] is True
    # the tree's file now holds Debian's bytes, under AMD's name, behind AMD's link
    assert sha(tree / "librocfft.so.0.0.60403") == sha(UNPACKED_ROCFFT)
    assert os.readlink(tree / "librocfft.so.0") == "librocfft.so.0.0.60403"
    assert doc["diff"]["before"] == {f"{TREE}/librocfft.so.0.0.60403": original}
    # trixie's own ld.so agrees: every library found, every version and symbol bound
    t = real_loader(root, tree / "librocfft.so.0", root / LIBDIR / "ld-linux-x86-64.so.2")
    assert t.returncode == 0 and "not found" not in t.stdout + t.stderr, t.stdout + t.stderr
    assert "undefined symbol" not in t.stdout + t.stderr and f"{root}{TREE}/libamdhip64.so.6" in t.stdout

    # verify: the audit matrix now has gfx906 code in rocFFT
    r = rr(root, "--json", "audit", "--tree", "/opt/rocm-6.4.3", "--target", MI50, check_rc=0)
    rows = {x["path"]: x for x in json.loads(r.stdout)["libraries"]}
    assert rows[f"{TREE}/librocfft.so.0.0.60403"]["cells"][MI50]["status"] == "embedded"

    r = rr(root, "--json", "install", *args, check_rc=3)   # idempotent (3: the rocBLAS copy, as above)
    doc = json.loads(r.stdout)
    assert doc["changed"] is False and only_library(doc, "librocfft.so.0")["status"] == "satisfied"

    r = rr(root, "--json", "status", check_rc=0)
    (tx,) = json.loads(r.stdout)["transactions"]
    assert tx["integrity"] == "intact" and tx["meta"]["kind"] == "library" and tx["tree"] == TREE

    r = rr(root, "--json", "rollback", check_rc=0)
    assert json.loads(r.stdout)["state"] == "rolled_back"
    assert tree_hash(root / "opt") == before
    assert sha(tree / "librocfft.so.0.0.60403") == original


def test_a_package_upgrade_that_overwrites_the_graft_is_seen(tmp_path, troot, codeobjects):
    """No dpkg ownership (or no dpkg-divert): an upgrade writes the package's file over the
    graft; `status` reports the drift and `rollback` refuses to guess."""
    root = compose_machine(tmp_path, troot, codeobjects)
    rr(root, "install", *install_args(tmp_path, "rocfft"), check_rc=3)  # 3: the graft is made, and the rocBLAS copy (no manifest in this folder) is left without gfx906
    f = root / TREE.lstrip("/") / "librocfft.so.0.0.60403"
    tmp = f.with_name(".upgrade")
    shutil.copy(codeobjects["libhip_gfx908_gfx1030"].path, tmp)  # what a package upgrade writes back
    with open(tmp, "ab") as fh:
        fh.write(b"\0" * 16)
    os.replace(tmp, f)
    r = rr(root, "--json", "status", check_rc=8)
    doc = json.loads(r.stdout)
    assert doc["error"]["code"] == "DRIFT"
    (tx,) = doc["transactions"]
    assert tx["integrity"] == "drifted" and tx["drifted"] == [f"{TREE}/librocfft.so.0.0.60403"]
    r = rr(root, "--json", "rollback", check_rc=8)
    assert "librocfft.so.0.0.60403" in json.loads(r.stdout)["error"]["message"]
    # a fresh install sees the library lacks gfx906 again and plans the graft again
    r = rr(root, "--json", "install", "--check", *install_args(tmp_path, "rocfft")[:-1], check_rc=20)
    assert only_library(json.loads(r.stdout), "librocfft.so.0")["status"] == "planned"


def test_package_owned_file_is_diverted(tmp_path, troot, codeobjects):
    """AMD's package owns the file: the package's bytes go to <file>.rocmrevive-orig, dpkg
    records the diversion (real dpkg-divert, --root), an upgrade lands beside the graft and is
    seen; rollback and reconcile leave no trace."""
    if shutil.which("dpkg-divert") is None:
        pytest.skip("dpkg-divert is not installed")
    root = compose_machine(tmp_path, troot, codeobjects, owned_by={"librocfft.so.0": "rocfft"})
    tree = root / TREE.lstrip("/")
    f = f"{TREE}/librocfft.so.0.0.60403"
    original = sha(tree / "librocfft.so.0.0.60403")
    before = tree_hash(root / "opt")
    r = rr(root, "--json", "install", *install_args(tmp_path, "rocfft"), check_rc=3)  # 3: the graft is made, and the rocBLAS copy (no manifest in this folder) is left without gfx906
    lp = only_library(json.loads(r.stdout), "librocfft.so.0")
    assert lp["owner"]["package"] == "rocfft"
    assert lp["divert"] | {} == {"wanted": True, "path": f, "divert_to": f + ".rocmrevive-orig",
                                 "package": "rocfft", "orig_sha256": original, "registered": True, "why_not": ""}
    listed = subprocess.run(["dpkg-divert", "--root", str(root), "--list"], capture_output=True, text=True).stdout
    assert listed.strip() == f"diversion of {f} to {f}.rocmrevive-orig by rocmrevive"
    assert sha(tree / "librocfft.so.0.0.60403.rocmrevive-orig") == original
    assert sha(tree / "librocfft.so.0.0.60403") == sha(UNPACKED_ROCFFT)
    assert divert.findings(Root(root), "/var/lib/rocmrevive") == []

    # a package upgrade: dpkg writes the package's new file to the diverted name
    (tree / "librocfft.so.0.0.60403.rocmrevive-orig").unlink()
    (tree / "librocfft.so.0.0.60403.rocmrevive-orig").write_bytes(b"\x7fELF upgraded")
    r = rr(root, "--json", "status", check_rc=8)
    (tx,) = json.loads(r.stdout)["transactions"]
    assert tx["drifted"] == [f + ".rocmrevive-orig"]
    (found,) = divert.findings(Root(root), "/var/lib/rocmrevive")
    assert found["problem"] == "package upgraded" and "rocfft was upgraded" in found["hint"]
    rr(root, "rollback", check_rc=8)                   # refuses to throw the upgrade away silently
    r = rr(root, "--json", "rollback", "--force", check_rc=0)
    # the rollback restored the bytes, and dpkg's list followed the journals in the same command
    assert json.loads(r.stdout)["warnings"][-1] == (
        f"dpkg-divert: removed the diversion of {f} (transaction {tx['txid']} was rolled back)")
    assert divert.findings(Root(root), "/var/lib/rocmrevive") == []
    assert divert.reconcile(Root(root), "/var/lib/rocmrevive") == []
    assert divert.read_diversions(Root(root)) == []
    assert tree_hash(root / "opt") == before


def test_an_interrupted_graft_is_recovered_with_its_diversion(tmp_path, troot, codeobjects, monkeypatch):
    """A graft of a package-owned file killed mid-transaction (dpkg has recorded the diversion, the
    first file is renamed into place): `recover`, and the recovery `install` runs first, leave the
    tree and dpkg's diversions as they were before the install (the undo takes the diversion with it)."""
    if shutil.which("dpkg-divert") is None:
        pytest.skip("dpkg-divert is not installed")
    root = compose_machine(tmp_path, troot, codeobjects, owned_by={"librocfft.so.0": "rocfft"})
    f = f"{TREE}/librocfft.so.0.0.60403"
    before = tree_hash(root / "opt")
    for n, recover_with in enumerate(("recover", "install"), start=1):
        monkeypatch.setenv("ROCMREVIVE_TEST_KILL_AT", "rename:1")  # rocmrevive/txn/testseam.py
        r = rr(root, "install", *install_args(tmp_path, "rocfft"))
        monkeypatch.delenv("ROCMREVIVE_TEST_KILL_AT")
        assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr[-2000:])
        assert divert.is_diverted(Root(root), f), "dpkg records the diversion before the graft is renamed in"
        assert tree_hash(root / "opt") != before
        (tx,) = [t for t in json.loads(rr(root, "--json", "status", check_rc=9).stdout)["transactions"]
                 if t["state"] == "interrupted"]
        assert tx["txid"].startswith(f"{n:04d}-")
        if recover_with == "recover":
            doc = json.loads(rr(root, "--json", "recover", check_rc=0).stdout)
            assert [x["state"] for x in doc["recovered"]] == ["rolled_back"]
            assert doc["warnings"][-1] == f"dpkg-divert: removed the diversion of {f} (transaction {tx['txid']} was rolled back)"
        else:
            # a writer recovers first; without libraries this install has nothing else it may change
            r = rr(root, "install", "--no-libraries", *install_args(tmp_path, "rocfft"))
            assert f"recovered interrupted transaction {tx['txid']}: rolled_back" in r.stderr, r.stderr[-2000:]
        assert tree_hash(root / "opt") == before
        assert divert.read_diversions(Root(root)) == []
        assert divert.findings(Root(root), "/var/lib/rocmrevive") == []
        assert divert.reconcile(Root(root), "/var/lib/rocmrevive") == []
        states = [t["state"] for t in json.loads(rr(root, "--json", "status", check_rc=0).stdout)["transactions"]]
        assert states == ["rolled_back"] * n


# ------------------------------------------------------------------------------------------
# this machine's own libraries (bookworm): refused with the exact versions, nothing changes

def test_bookworm_root_refuses_with_the_exact_versions(tmp_path, troot, codeobjects):
    if _host_glibc() >= (2, 38):
        pytest.skip("this host's glibc is new enough for sid's 6.4.3 builds")
    root = compose_machine(tmp_path, troot, codeobjects, system="host")
    before = tree_hash(root / "opt")
    # nothing here can be served (the rocBLAS copy has no manifest in this folder): exit 3
    r = rr(root, "--json", "install", *install_args(tmp_path, "rocfft"), check_rc=3)
    doc = json.loads(r.stdout)
    lp = only_library(doc, "librocfft.so.0")
    assert (lp["status"], lp["abi_ok"], doc["changed"]) == ("refused", False, False)
    assert f"{TREE}/librocfft.so.0: librocfft0 6.4.3-1+b1 (Debian, ROCm 6.4.3) does not load here: needs " \
           "GLIBC_2.38" in doc["error"]["message"]
    glibc = "GLIBC_%d.%d" % _host_glibc()
    assert lp["lines"][0].startswith("needs GLIBC_2.38 (libc.so.6; required by libamdhip64.so.6, ")
    assert lp["lines"][0].endswith(f"), this root has up to {glibc}")
    assert any(x.startswith("needs GLIBCXX_3.4.32 (libstdc++.so.6") for x in lp["lines"])
    if _host_glibc() == (2, 36):  # bookworm, exactly
        assert lp["lines"] == [
            "needs GLIBC_2.38 (libc.so.6; required by libamdhip64.so.6, libhsa-runtime64.so.1, "
            "librocfft.so.0), this root has up to GLIBC_2.36",
            "needs GLIBCXX_3.4.32 (libstdc++.so.6; required by libamdhip64.so.6, libhsa-runtime64.so.1, "
            "librocfft.so.0), this root's libstdc++.so.6 has up to GLIBCXX_3.4.30",
            "needs CXXABI_1.3.15 (libstdc++.so.6; required by libamdhip64.so.6, libhsa-runtime64.so.1), "
            "this root's libstdc++.so.6 has up to CXXABI_1.3.13"]
    assert any("librocfft.so.0 lacks gfx906:sramecc+:xnack-" in w and "GLIBC_2.38" in w for w in doc["warnings"])
    # this machine's own loader says the same about the staged library on these libraries
    staged = next((tmp_path / "cache/extracted").glob("*-rocfft-6.4-gfx906/files/librocfft.so.0.1"))
    t = real_loader(root, staged, Path("/lib64/ld-linux-x86-64.so.2"))
    out = t.stdout + t.stderr
    assert "version `GLIBC_2.38' not found" in out and "version `GLIBCXX_3.4.32' not found" in out
    assert "version `CXXABI_1.3.15' not found" in out
    assert tree_hash(root / "opt") == before
    assert not (root / "var/lib/rocmrevive/tx").exists() or not any((root / "var/lib/rocmrevive/tx").iterdir())
    # the human table says why, in the verdict's own words
    r = rr(root, "install", "--check", *install_args(tmp_path, "rocfft")[:-1], check_rc=3)
    assert "REFUSED" in r.stdout and "needs GLIBC_2.38" in r.stdout


def test_install_check_says_per_library_graft_or_not_and_why(tmp_path, troot, codeobjects):
    """The human output: one line per library with the decision and its reason, then the ABI
    verdict (nothing is fetched for a library that is absent or already serves the GPU)."""
    root = compose_machine(tmp_path, troot, codeobjects, without_gfx906=("librocfft.so.0",),
                           with_gfx906=("librocsparse.so.1",))
    mdir = manifests(tmp_path, "rocfft", "rocsparse", "rocrand")
    r = rr(root, "install", "--check", "--manifests", str(mdir), "--from", str(debs(tmp_path, "rocfft")),
           "--cache", str(tmp_path / "cache"), check_rc=20)
    out = r.stdout
    assert "host libraries in /opt/rocm-6.4.3/lib (ROCm 6.4.3):" in out
    assert ("  rocFFT librocfft.so.0        GRAFT (planned): lacks gfx906:sramecc+:xnack- (has gfx1030, gfx908); "
            "would replace /opt/rocm-6.4.3/lib/librocfft.so.0.0.60403 with librocfft0 6.4.3-1+b1 (Debian, ROCm "
            "6.4.3)") in out
    assert "      ABI check of librocfft0 6.4.3-1+b1: loads here (14 libraries, " in out
    assert "  rocRAND librocrand.so.1      not in this tree: no librocrand.so.1 in /opt/rocm-6.4.3/lib" in out
    assert f"  rocSPARSE librocsparse.so.1  no graft needed: has device code for {MI50}" in out
    assert "1 host library would change (run without --check)" in r.stderr


def test_no_libraries_switch(tmp_path, troot, codeobjects):
    root = compose_machine(tmp_path, troot, codeobjects)
    r = rr(root, "--json", "install", "--check", "--no-libraries", *install_args(tmp_path, "rocfft"))
    doc = json.loads(r.stdout)
    assert doc["libraries_enabled"] is False and doc["libraries"] == []
    assert r.returncode == 3  # the tree's rocBLAS has no manifest here and nothing else was considered


# ------------------------------------------------------------------------------------------
# the 6.4.3 fixture machine with the shipped manifests: per library, graft or not and why

@pytest.mark.slow
def test_install_check_on_the_643_fixture_machine(tmp_path, troot, codeobjects, debian_pkgs):
    """AMD's 6.4.3 layout on trixie's libraries: rocSPARSE and rocSOLVER without gfx906, rocFFT
    with it, no rocRAND. The four shipped library manifests, Debian's real packages. Then audit's
    remedy column says the same, from what install --check left in the cache."""
    root = compose_machine(tmp_path, troot, codeobjects,
                           without_gfx906=("librocsparse.so.1", "librocsolver.so.0"),
                           with_gfx906=("librocfft.so.0",))
    tree = root / TREE.lstrip("/")
    (tree / "librocblas.so.4.4.60403").unlink()   # a real rocBLAS (rocSOLVER needs its symbols)
    os.link(debian_pkgs["librocblas4_6.4.4-4_amd64"] / LIBDIR / "librocblas.so.4.4", tree / "librocblas.so.4.4.60403")
    names = ("rocsparse", "rocsolver", "rocfft", "rocrand")
    mdir = manifests(tmp_path, *names)
    # rocmrevive's download cache, kept between runs: decoding the two packages (3.6 GB of
    # libraries) is most of this test's first run; later runs re-hash what it extracted
    cache = CACHE / "grafts-download-cache"
    args = ["--manifests", str(mdir), "--from", str(debs(tmp_path, "rocsparse", "rocsolver")), "--cache", str(cache)]

    # with nothing fetched, audit knows the sources exist but has not checked them
    r = rr(root, "--json", "audit", "--tree", "/opt/rocm-6.4.3", "--target", MI50, "--manifests", str(mdir),
           "--cache", str(tmp_path / "empty-cache"), check_rc=0)
    miss = {m["name"]: m for m in json.loads(r.stdout)["missing"]}
    assert miss["rocSPARSE"]["graft"]["abi"] == "not-fetched"
    assert "sudo rocmrevive install --check" in miss["rocSPARSE"]["remedy"]

    before = tree_hash(root / "opt")
    r = rr(root, "--json", "install", "--check", *args, check_rc=20)
    doc = json.loads(r.stdout)
    got = {lp["soname"]: lp for lp in doc["libraries"]}
    assert {k: v["status"] for k, v in got.items()} == {
        "librocsparse.so.1": "planned", "librocsolver.so.0": "refused",
        "librocfft.so.0": "satisfied", "librocrand.so.1": "absent"}
    sparse, solver = got["librocsparse.so.1"], got["librocsolver.so.0"]
    assert sparse["abi_ok"] is True and sparse["lines"] == []
    assert sparse["abi"]["coverage"]["targets"][0]["by"] == ["gfx906"]
    # rocSOLVER: the two honest reasons — a libm symbol from glibc 2.43, and fmt as a shared library
    assert solver["abi_ok"] is False
    assert "needs GLIBC_2.43 (libm.so.6), this root's libm.so.6 has up to GLIBC_2.41" in solver["lines"]
    assert solver["lines"][0].startswith("needs libfmt.so.11, not found in /opt/rocm-6.4.3/lib, ")
    assert solver["abi"]["coverage"]["targets"][0]["by"] == ["gfx9-generic"]
    assert got["librocfft.so.0"]["reason"] == f"has device code for {MI50}"
    assert tree_hash(root / "opt") == before

    # audit's remedy column, from the sources an install leaves extracted in the cache (install
    # --check no longer writes the cache: check mode never writes; the extraction is the install's own)
    leave_extracted(root, mdir, debs(tmp_path, "rocsparse", "rocsolver"), cache, tmp_path / "area")
    r = rr(root, "--json", "audit", "--tree", "/opt/rocm-6.4.3", "--target", MI50, "--manifests", str(mdir),
           "--cache", str(cache), check_rc=0)
    miss = {m["name"]: m for m in json.loads(r.stdout)["missing"]}
    assert set(miss) == {"rocSPARSE", "rocSOLVER", "rocBLAS Tensile library"}  # rocFFT has gfx906
    assert miss["rocSPARSE"]["graft"]["abi"] == "loads"
    assert miss["rocSPARSE"]["remedy"].startswith("sudo rocmrevive install (grafts librocsparse1 6.4.3-3")
    assert miss["rocSOLVER"]["graft"]["abi"] == "refused"
    assert miss["rocSOLVER"]["graft"]["lines"] == solver["lines"]
    assert "does not load here: needs libfmt.so.11" in miss["rocSOLVER"]["remedy"]
