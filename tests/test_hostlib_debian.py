"""The static ABI check on Debian's real ROCm libraries (sid's 6.4.3 builds, experimental's 7.2.4),
against a root holding Debian trixie's C/C++ runtime and against this machine's own (bookworm)
libraries, each verdict compared with the real dynamic loader: trixie's own ld.so for the trixie
root, this machine's `ldd -r` for the host.

The packages and the root come from tests/fixtures/fetch_hostlib_debs.sh (cached)."""
from __future__ import annotations

import inspect
import json
import os
import subprocess
from pathlib import Path

import pytest
from test_hostlib import agree, ldd_r, parse_loader_trace

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.hostlib.abi import check_library
from rocmrevive.rootfs import Root
from tests.fixtures import fixcache

pytestmark = pytest.mark.debian

CACHE = Path(os.environ.get("ROCMREVIVE_TEST_CACHE", "/var/tmp/rocmrevive-test-cache"))
FETCH = Path(__file__).parent / "fixtures" / "fetch_hostlib_debs.sh"
TREE = "/opt/rocm-6.4.3/lib"
MI50 = TargetId.parse("gfx906:sramecc+:xnack-")
RADEON_VII = TargetId.parse("gfx906:sramecc-:xnack-")
GRAFTS = ["librocsparse.so.1", "librocfft.so.0", "librocrand.so.1", "librocblas.so.4"]


def _hostlib_root() -> Path:
    """roots/trixie-rocm643: trixie's libc6/libstdc++6/libgcc-s1 and system libraries, sid's ROCm
    6.4.3 libraries in /opt/rocm-6.4.3/lib (see the fetch script, which reuses the cached root while
    its recorded inputs and files match, and rebuilds it otherwise)."""
    p = subprocess.run(["bash", str(FETCH)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    return Path(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def troot() -> Path:
    return _hostlib_root()


def _variant(base: Path, name: str, edit) -> Path:
    """A copy of ``base`` made of hard links, changed by ``edit(path)``; cached while ``base``'s
    inputs and the edit's code are the same."""
    inputs = {"base": fixcache.recorded_inputs(base), "edit": inspect.getsource(edit)}

    def build(tmp: Path) -> None:
        tmp.rmdir()
        subprocess.run(["cp", "-al", str(base), str(tmp)], check=True)
        (tmp / fixcache.RECORD).unlink()
        edit(tmp)

    return fixcache.build_entry(CACHE / "roots" / name, inputs, build)


def root_loader(root: Path, lib: Path, dirs: list[str]) -> dict:
    """The root's own ld.so (trixie's glibc 2.41) in trace mode with relocations (what `ldd -r`
    runs), searching only the root's directories."""
    ld = root / "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    env = {"LD_TRACE_LOADED_OBJECTS": "1", "LD_WARN": "yes", "LD_BIND_NOW": "yes"}
    path = ":".join(str(root) + d for d in dirs)
    p = subprocess.run([str(ld), "--inhibit-cache", "--library-path", path, str(lib)],
                       env=env, capture_output=True, text=True)
    return parse_loader_trace(p.stdout + p.stderr, p.returncode)


ROOT_DIRS = [TREE, "/usr/lib/x86_64-linux-gnu"]


def _check(root: Path, name: str, **kw):
    kw.setdefault("search_dirs", [TREE])
    return check_library(Root(root), root / TREE.lstrip("/") / name, **kw)


# ---------------------------------------------------------------------------------------
# trixie root

@pytest.mark.parametrize("name", GRAFTS)
def test_trixie_root_takes_the_sid_builds(troot, name):
    v = _check(troot, name, targets=[MI50, RADEON_VII], rocm_version="6.4.3")
    assert v.ok, v.lines
    assert v.lines == []
    needed = {n["name"]: n for n in v.details["needed"]}
    assert needed["libamdhip64.so.6"]["path"] == f"{TREE}/libamdhip64.so.6"
    assert needed["libc.so.6"]["path"] == "/usr/lib/x86_64-linux-gnu/libc.so.6"
    cov = v.details["coverage"]["targets"]
    assert [(c["target"], c["covered"], c["by"], c["co_versions"]) for c in cov] == [
        ("gfx906:sramecc+:xnack-", True, ["gfx906"], [6]),
        ("gfx906:sramecc-:xnack-", True, ["gfx906"], [6])]
    agree(v, root_loader(troot, troot / TREE.lstrip("/") / name, ROOT_DIRS), Root(troot))


def test_trixie_root_refuses_rocsolver_rebuilt_for_glibc_2_43(troot):
    # sid's 6.4.3-2+b1 is a rebuild against glibc 2.43: its sqrtf@GLIBC_2.43 is not in trixie
    v = _check(troot, "librocsolver.so.0", targets=[MI50], rocm_version="6.4.3")
    assert not v.ok
    assert v.lines == ["needs GLIBC_2.43 (libm.so.6), this root's libm.so.6 has up to GLIBC_2.41"]
    assert v.details["undefined_symbols"] == [{
        "symbol": "sqrtf", "version": "GLIBC_2.43", "file": "libm.so.6",
        "required_by": "librocsolver.so.0", "required_by_path": f"{TREE}/librocsolver.so.0",
        "reason": "version-missing"}]
    # its device code still covers gfx906, through gfx9-generic (code object v6)
    (cell,) = v.details["coverage"]["targets"]
    assert cell == {"target": "gfx906:sramecc+:xnack-", "covered": True, "by": ["gfx9-generic"],
                    "co_versions": [6], "min_rocm": "6.3"}
    lib = troot / TREE.lstrip("/") / "librocsolver.so.0"
    t = root_loader(troot, lib, ROOT_DIRS)
    assert t["versions"] == {("GLIBC_2.43", "libm.so.6", os.path.realpath(lib))}
    assert t["undefined"] == {("sqrtf", "GLIBC_2.43", os.path.realpath(lib))}
    agree(v, t, Root(troot))


def test_comgr_and_llvm_closure_in_the_loader_s_order(troot):
    # libamd_comgr.so.3 -> libLLVM.so.21.1 -> libxml2, libz3, libedit...: 15 libraries, ~3,900
    # symbols; the closure is listed in the order the loader maps (and searches) it
    v = _check(troot, "libamd_comgr.so.3")
    assert v.ok, v.lines
    assert v.details["symbols_resolved"] > 3000
    t = root_loader(troot, troot / TREE.lstrip("/") / "libamd_comgr.so.3", ROOT_DIRS)
    agree(v, t, Root(troot))
    mine = [n["name"] for n in v.details["needed"] if n["name"] != "ld-linux-x86-64.so.2"]
    assert mine == list(t["resolved"])


def test_generic_and_v6_code_need_rocm_6_3(troot):
    v = _check(troot, "librocsparse.so.1", targets=[MI50], rocm_version="6.2.4")
    assert v.lines == ["gfx906:sramecc+:xnack-: librocsparse.so.1 has only code object v6 (gfx906), "
                       "which needs ROCm >= 6.3; this tree is 6.2.4"]
    v = _check(troot, "librocsolver.so.0", targets=[RADEON_VII], rocm_version="6.2.4")
    assert "gfx906:sramecc-:xnack-: librocsolver.so.0 has only code object v6 (gfx9-generic), " \
           "which needs ROCm >= 6.3; this tree is 6.2.4" in v.lines
    v = _check(troot, "librocsparse.so.1", targets=[MI50], rocm_version=None)
    assert v.lines == ["gfx906:sramecc+:xnack-: librocsparse.so.1 has only code object v6 (gfx906), "
                       "which needs ROCm >= 6.3; the tree's ROCm version is unknown"]


def test_host_only_library_has_no_coverage_question(troot):
    v = _check(troot, "libroctx64.so.4", targets=[MI50], rocm_version="6.4.3")
    assert v.ok and v.details["coverage"]["kind"] == "host-elf-no-device-code"


def test_the_tree_is_found_through_ld_so_conf(troot):
    # no search_dirs: /etc/ld.so.conf.d/10-rocm.conf under the root names the tree
    v = _check(troot, "librocrand.so.1", search_dirs=[])
    assert v.ok, v.lines
    hip = [n for n in v.details["needed"] if n["name"] == "libamdhip64.so.6"][0]
    assert hip["via"] == "ld.so.conf" and hip["path"] == f"{TREE}/libamdhip64.so.6"


def test_missing_roctx(troot):
    def drop_roctx(r: Path) -> None:
        for f in (r / TREE.lstrip("/")).glob("libroctx64.so*"):
            f.unlink()
    root = _variant(troot, "trixie-rocm643-no-roctx", drop_roctx)
    v = _check(root, "librocblas.so.4", targets=[MI50], rocm_version="6.4.3")
    assert not v.ok
    assert v.lines[0] == ("needs libroctx64.so.4, not found in /opt/rocm-6.4.3/lib, "
                          "/usr/local/lib/x86_64-linux-gnu, /lib/x86_64-linux-gnu, "
                          "/usr/lib/x86_64-linux-gnu, /lib64, /usr/lib64, … (2 more)")
    roctx = {u["symbol"] for u in v.details["undefined_symbols"]}
    assert roctx and all(s.startswith("roctx") for s in roctx)
    assert {u["reason"] for u in v.details["undefined_symbols"]} == {"library-missing"}
    t = root_loader(root, root / TREE.lstrip("/") / "librocblas.so.4", ROOT_DIRS)
    assert t["missing"] == {"libroctx64.so.4"}
    agree(v, t, Root(root))


def test_faked_version_link_is_refused_though_the_loader_takes_it(troot, debian_pkgs):
    # the forum recipe: make libamdhip64.so.7 a link to the 6.x runtime so a 7.x library loads
    def fake(r: Path) -> None:
        (r / TREE.lstrip("/") / "libamdhip64.so.7").symlink_to("libamdhip64.so.6")
    root = _variant(troot, "trixie-rocm643-faked-hip7", fake)
    lib = debian_pkgs["librocblas5_7.2.4-1~exp1_amd64"] / "usr/lib/x86_64-linux-gnu/librocblas.so.5"
    v = check_library(Root(root), lib, search_dirs=[TREE], origin=TREE, targets=[MI50],
                      rocm_version="6.4.3")
    assert v.lines == [f"needs libamdhip64.so.7, but {TREE}/libamdhip64.so.7 is libamdhip64.so.6 "
                       f"(its SONAME): a renamed link, not that library"]
    t = root_loader(root, lib, ROOT_DIRS)
    assert t["rc"] == 0 and not (t["missing"] | t["versions"] | t["undefined"])  # it loads
    # and without the fake: the plain answer
    v = check_library(Root(troot), lib, search_dirs=[TREE], origin=TREE)
    assert v.lines[0].startswith("needs libamdhip64.so.7, not found in /opt/rocm-6.4.3/lib, ")


def test_staged_copy_outside_the_root(troot):
    staged = CACHE / "unpacked/librocsparse1_6.4.3-3_amd64/usr/lib/x86_64-linux-gnu/librocsparse.so.1"
    v = check_library(Root(troot), staged, search_dirs=[TREE], origin=TREE, targets=[MI50],
                      rocm_version="6.4.3")
    placed = _check(troot, "librocsparse.so.1")
    assert v.ok and v.library == str(staged)
    assert [n["path"] for n in v.details["needed"]] == [n["path"] for n in placed.details["needed"]]


def test_no_gfx906_in_rccl_7(troot, debian_pkgs):
    lib = debian_pkgs["librccl1_7.2.4-1~exp3_amd64"] / "usr/lib/x86_64-linux-gnu/librccl.so.1"
    v = check_library(Root(troot), lib, search_dirs=[TREE], origin=TREE, targets=[MI50],
                      rocm_version="7.2.4")
    assert ("no device code for gfx906:sramecc+:xnack- in librccl.so.1 (it has gfx1030, gfx1100, "
            "gfx1101, gfx1200, gfx1201, gfx908, gfx90a, gfx942, gfx950)") in v.lines
    assert "needs GLIBC_2.42 (libc.so.6), this root has up to GLIBC_2.41" in v.lines
    doc = json.loads(json.dumps(v.to_json()))
    assert doc["ok"] is False and doc["coverage"]["targets"][0]["covered"] is False


# ---------------------------------------------------------------------------------------
# this machine (bookworm, glibc 2.36): the sid builds are refused with the exact versions

def _host_glibc() -> tuple[int, int]:
    major, minor = os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2]
    return int(major), int(minor)


@pytest.mark.parametrize("name", GRAFTS + ["librocsolver.so.0"])
def test_this_host_refuses_the_sid_builds(troot, name):
    if _host_glibc() >= (2, 38):
        pytest.skip("this host's glibc is new enough for sid's 6.4.3 builds")
    tree = str(troot / TREE.lstrip("/"))  # the tree's files, on this machine's own libraries
    lib = Path(tree) / name
    v = check_library(Root("/"), lib, search_dirs=[tree], targets=[MI50], rocm_version="6.4.3")
    assert not v.ok
    glibc = "GLIBC_%d.%d" % _host_glibc()
    libc_line = [line for line in v.lines if line.startswith("needs GLIBC_2.38 (libc.so.6")]
    assert len(libc_line) == 1 and libc_line[0].endswith(f", this host has up to {glibc}")
    assert any(line.startswith("needs GLIBCXX_3.4.32 (libstdc++.so.6") for line in v.lines)
    if _host_glibc() == (2, 36) and name == "librocsparse.so.1":  # bookworm, exactly
        assert v.lines == [
            "needs GLIBC_2.38 (libc.so.6; required by libamdhip64.so.6, libhsa-runtime64.so.1, "
            "librocsparse.so.1), this host has up to GLIBC_2.36",
            "needs GLIBCXX_3.4.32 (libstdc++.so.6; required by libamdhip64.so.6, "
            "libhsa-runtime64.so.1, librocsparse.so.1), this host's libstdc++.so.6 has up to "
            "GLIBCXX_3.4.30",
            "needs CXXABI_1.3.15 (libstdc++.so.6; required by libamdhip64.so.6, "
            "libhsa-runtime64.so.1), this host's libstdc++.so.6 has up to CXXABI_1.3.13"]
    t = ldd_r(lib, [tree])
    assert t["versions"]
    agree(v, t)
