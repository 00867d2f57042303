"""AMD's TheRock trees (ROCm 7.14, 10.0, 10.1) and the whole-stack gfx906 builds: the fixtures'
layouts (tests/fixtures/therock_layouts.py), and the per-library verdicts detect, doctor, verify
and audit give on them, each proven by breaking one library's gfx906 code."""
from __future__ import annotations

import os
from pathlib import Path

import msgpack
import pytest

from rocmrevive.codeobj.inspect import inspect_file
from rocmrevive.codeobj.kpack import read_kpack
from rocmrevive.rootfs import Root
from tests.cli_support import jrun
from tests.fixtures import therock_layouts as T

pytestmark = pytest.mark.debian


@pytest.fixture(params=list(T.LAYOUTS))
def layout(request, tmp_path, debian_pkgs, codeobjects):
    name = request.param
    root = T.BUILDERS[name](tmp_path / "m", debian_pkgs, codeobjects)
    return root, T.LAYOUTS[name]


def test_fixture_layouts_carry_what_they_claim(layout):
    root, lay = layout
    for key in T.KEYS:
        rep = inspect_file(root / lay.host(key).lstrip("/"))
        procs = set(rep.processors)
        if lay.kpack or key == "hipblas":
            assert procs == set(), (key, procs)          # kpack'd (zeroed .hip_fatbin) or no device code
        else:
            assert "gfx906" in procs or "gfx9-generic" in procs, (key, procs)
    for arch in lay.arches if lay.kpack else ():
        k = read_kpack(root / lay.kpack_archive("blas", arch).lstrip("/"))
        assert k.problems == [] and k.arches == [arch]
        assert sorted(k.binaries) == sorted(f"lib/{T.HOST[x][0]}" for x in ("rocblas", "rocsolver", "rocsparse"))
        assert {str(e.target.processor) for e in k.entries} == {arch}
    lib = root / lay.tensile.lstrip("/")
    for arch in lay.arches:
        folder = lib / arch if lay.nested else lib
        assert (folder / f"TensileLibrary_lazy_{arch}.dat").is_file()
    if lay.name == "stock-10.1":
        assert Root(root).resolve("/opt/rocm/lib") == root / "opt/rocm/core-10.1/lib"   # through /etc/alternatives
        assert "gfx906" not in str(sorted(p.name for p in lib.rglob("*")))


# ---- the verdicts per library, as detect, doctor and verify give them ----------------------

EXPECT = {"stock-10.1": "does-not-serve", "whole-stack-7.14": "serves", "isolated-10.0": "serves"}
OTHER_CHECKS = ("hipblas", "rocsolver", "rocsparse", "miopen", "rccl")


def verdicts(root) -> dict[str, str]:
    """detect's verdict per library for gfx906 (the one TheRock tree of the machine)."""
    (t,) = jrun(root, "detect", rc=0)["therock_trees"]
    return {v["library"]: v["status"] for v in t["libraries"] if v["processor"] == "gfx906"}


def verify_failures(root, rc: int) -> dict[str, list[str]]:
    """verify's failing checks for the MI50s: check name -> the files its offenders name."""
    doc = jrun(root, "verify", rc=rc)
    (copy,) = doc["copies"]
    return {c["name"]: sorted({o["file"] for o in c["offenders"]})
            for d in copy["devices"] for c in d["checks"] if c["status"] == "fail"}


def test_detect_gives_each_tree_and_each_library_its_verdict(layout):
    root, lay = layout
    doc = jrun(root, "detect", rc=0)
    (inst,) = doc["rocm_installs"]
    assert inst["path"] == lay.prefix and inst["version"] == lay.rocm
    assert inst["default"] is (lay.prefix.startswith("/opt/rocm/core"))   # /opt/rocm/core leads there
    (copy,) = doc["rocblas_copies"]
    assert copy["path"] == lay.tensile and copy["rocblas_version"] == "5.3.0" and copy["rocm_version"] == lay.rocm
    assert copy["targets"] == list(lay.arches) and copy["arch_folders"] is lay.nested
    (t,) = doc["therock_trees"]
    assert t["path"] == lay.prefix and t["release"] == lay.rocm
    assert t["kind"] == {"stock-10.1": "packages", "whole-stack-7.14": "gfx906-build",
                         "isolated-10.0": "mi50-prefix"}[lay.name]
    got = {v["library"]: v for v in t["libraries"] if v["processor"] == "gfx906"}
    assert set(got) == set(T.KEYS)
    for key, v in got.items():
        assert v["status"] == EXPECT[lay.name], (key, v)
        assert v["file"] == lay.host(key)
        if v["status"] == "serves" and key != "hipblas":
            held = lay.host(key) if not lay.kpack else lay.kpack_archive(T.HOST[key][2], "gfx906")
            assert held in v["evidence"], (key, v["evidence"])
        if v["status"] != "serves" and key != "hipblas":
            assert "gfx942" in v["problem"] and "not gfx906" in v["problem"]
    assert got["hipblas"]["source"] == "rocblas"      # no kernels of its own: it follows rocBLAS
    if lay.name == "stock-10.1":
        assert "/opt/rocm/lib -> /opt/rocm/core-10.1/lib" in t["via"]
        assert t["device_targets"] == ["gfx1100", "gfx1201", "gfx942"] and "amdrocm-blas10.1-gfx942" in t["packages"]
    if lay.name == "whole-stack-7.14":
        assert t["build"] == "7.14.0-gfx906+20260802001858" and t["device_targets"] == ["gfx906"]


def test_doctor_names_every_library_that_lacks_gfx906(layout):
    root, lay = layout
    rc = 11 if lay.name == "stock-10.1" else 0
    doc = jrun(root, "doctor", rc=rc)
    missing = {f["data"]["library"]: f for f in doc["findings"] if f["id"] == "therock-library-missing-target"}
    serves = [f for f in doc["findings"] if f["id"] == "therock-tree-serves"]
    if lay.name == "stock-10.1":
        assert set(missing) == set(T.KEYS) and not serves
        assert all(f["subject"] == lay.host(k) and f["severity"] == "error" for k, f in missing.items())
    else:
        assert not missing and len(serves) == 1 and serves[0]["subject"] == lay.prefix


def test_verify_gives_a_whole_gfx906_stack_the_same_checks(layout):
    root, lay = layout
    if lay.name == "stock-10.1":
        fails = verify_failures(root, 6)
        assert set(fails) == {"tensile", "host", "kpack", *OTHER_CHECKS}
        for key in ("rocsolver", "rocsparse", "miopen", "rccl", "hipblas"):
            assert fails[key] == [lay.host(key)]
        return
    doc = jrun(root, "verify", rc=0)
    (copy,) = doc["copies"]
    for d in copy["devices"]:
        names = [c["name"] for c in d["checks"]]
        assert {"targets", "tensile", "host", *OTHER_CHECKS} <= set(names), names
        assert all(c["status"] == "pass" for c in d["checks"]), d["checks"]
        assert d["verdict"] == "serves"
    assert {v["library"] for v in copy["libraries"]} == set(T.KEYS)


def test_audit_reads_a_split_library_from_its_archives(layout):
    root, lay = layout
    doc = jrun(root, "audit", "--target", "gfx906", rc=0)
    rows = {r["path"]: r for r in doc["libraries"]}
    for key in ("rocblas", "rocsolver", "rocsparse", "miopen", "rccl"):
        cell = rows[lay.host(key)]["cells"]["gfx906"]
        assert cell["status"] == ("missing" if lay.name == "stock-10.1" else "embedded"), (key, cell)
        assert rows[lay.host(key)]["kind"] == ("host-elf-kpack" if lay.kpack else "host-elf")
    assert rows[lay.tensile]["cells"]["gfx906"]["status"] == ("missing" if lay.name == "stock-10.1" else "embedded")


# ---- each verdict proven: break one library's gfx906 code, only that library fails ---------

def _relink(src: Path, dst: Path) -> None:
    dst.unlink()          # the fixture's files are hard links into the cache: never written through
    os.link(src, dst)


@pytest.fixture
def stack(tmp_path, debian_pkgs, codeobjects):
    return T.build_whole_stack_714(tmp_path / "m", debian_pkgs, codeobjects), T.LAYOUTS["whole-stack-7.14"]


KPACK_BREAKS = {
    # name: (what is done, the checks that must fail, the library verdicts that must fail)
    "rocblas-entry-dropped": ({"host", "hipblas"}, {"rocblas", "hipblas"}),
    "rocblas-lazy-index-removed": ({"tensile", "hipblas"}, {"rocblas", "hipblas"}),
    "rocsolver-entry-dropped": ({"rocsolver"}, {"rocsolver"}),
    "rocsparse-blob-is-gfx1100": ({"rocsparse"}, {"rocsparse"}),
    "miopen-archive-removed": ({"miopen"}, {"miopen"}),
    "rccl-marker-names-another-binary": ({"rccl"}, {"rccl"}),
}


@pytest.mark.parametrize("brk", list(KPACK_BREAKS))
def test_breaking_one_library_of_the_gfx906_stack_fails_that_library(stack, brk, debian_pkgs, codeobjects):
    root, lay = stack
    if brk == "rocblas-entry-dropped":
        T.write_archive(root, lay, "blas", "gfx906", debian_pkgs, drop=("rocblas",))
        named = lay.host("rocblas")
    elif brk == "rocblas-lazy-index-removed":
        (root / lay.tensile.lstrip("/") / "gfx906/TensileLibrary_lazy_gfx906.dat").unlink()
        named = "TensileLibrary_lazy_gfx906.dat"
    elif brk == "rocsolver-entry-dropped":
        T.write_archive(root, lay, "blas", "gfx906", debian_pkgs, drop=("rocsolver",))
        named = lay.host("rocsolver")
    elif brk == "rocsparse-blob-is-gfx1100":
        T.write_archive(root, lay, "blas", "gfx906", debian_pkgs, blob_arch={"rocsparse": "gfx1100"})
        named = lay.host("rocsparse")
    elif brk == "miopen-archive-removed":
        (root / lay.kpack_archive("miopen", "gfx906").lstrip("/")).unlink()
        named = lay.host("miopen")
    else:
        dst = root / lay.host("rccl").lstrip("/")
        dst.unlink()
        T.kpack_host_library(codeobjects["libhip_gfx906_gfx908"].path, dst, kernel_name="lib/librccl.so.9",
                             artifact="rccl")
        named = lay.host("rccl")
    checks, libs = KPACK_BREAKS[brk]
    fails = verify_failures(root, 6)
    assert set(fails) == checks, fails
    first = sorted(checks - {"hipblas"})[0]
    assert any(named in f for f in fails[first]), (first, fails[first], named)
    got = verdicts(root)
    assert {k for k, v in got.items() if v != "serves"} == libs, got


@pytest.fixture
def isolated(tmp_path, debian_pkgs, codeobjects):
    return T.build_isolated_100(tmp_path / "m", debian_pkgs, codeobjects), T.LAYOUTS["isolated-10.0"]


@pytest.mark.parametrize("key", ["rocblas", "rocsolver", "rocsparse", "miopen", "rccl"])
def test_a_fat_binary_without_gfx906_fails_that_library(isolated, key, debian_pkgs, codeobjects):
    """The isolated 10.0 prefix with one library swapped for a real build without gfx906: RCCL is
    Debian's librccl1 7.2.4, the others the clang-15 HIP library for gfx908 + gfx1030."""
    root, lay = isolated
    no906 = (debian_pkgs["librccl1_7.2.4-1~exp3_amd64"] / "usr/lib/x86_64-linux-gnu/librccl.so.1.0"
             if key == "rccl" else codeobjects["libhip_gfx908_gfx1030"].path)
    _relink(no906, root / lay.host(key).lstrip("/"))
    fails = verify_failures(root, 6)
    check = "host" if key == "rocblas" else key
    want = {check, "hipblas"} if key == "rocblas" else {check}
    assert set(fails) == want, fails
    assert fails[check] == [lay.host(key)]
    got = verdicts(root)
    assert {k for k, v in got.items() if v != "serves"} == ({"rocblas", "hipblas"} if key == "rocblas" else {key})


# ---- a marker is the library's content: hostile ones are problem lines -----------------------

@pytest.mark.parametrize("marker, problem", [
    (msgpack.packb({"kpack_search_paths": ["/etc/.kpack/blas_lib.kpm"], "kernel_name": "lib/x"}), "not followed"),
    (msgpack.packb({"kpack_search_paths": ["../../../../root/.kpack/blas_lib.kpm"], "kernel_name": "lib/x"}),
     "not followed"),
    (msgpack.packb({"kpack_search_paths": ["../secrets/blas_lib.kpm"], "kernel_name": "lib/x"}), "not followed"),
    (msgpack.packb({"kpack_search_paths": "../.kpack/blas_lib.kpm", "kernel_name": 7}), "lacks kpack_search_paths"),
    (b"\xc1" * 40, "not MessagePack"),
    (msgpack.packb({"kpack_search_paths": ["x" * 5000], "kernel_name": "lib/x"}), "not MessagePack"),
    (b"\0" * (70 << 10), "does not fit"),
], ids=["absolute", "escaping", "not-a-kpack-folder", "wrong-types", "not-msgpack", "long-string", "oversized"])
def test_a_hostile_marker_is_a_problem_line_and_leads_nowhere(tmp_path, codeobjects, marker, problem):
    from rocmrevive.codeobj.kpackref import device_code

    outside = tmp_path / ".kpack"     # what an escaping path would reach
    outside.mkdir()
    (outside / "blas_lib_gfx906.kpack").write_bytes(b"KPAK")
    lib = tmp_path / "venv/lib/python3/site-packages/x/lib"
    host = T.kpack_host_library(codeobjects["libhip_gfx906_gfx908"].path, lib / "libx.so",
                                kernel_name="lib/x", artifact="blas", marker=marker)
    dc = device_code(host)
    assert dc.entries == [] and dc.archives == []
    assert any(problem in p for p in dc.problems), dc.problems


def test_verify_and_audit_take_the_tree_as_users_name_it(layout):
    """``--tree /opt/rocm`` (TheRock's folder of links: they resolve inside the machine) is the
    prefix ``/opt/rocm/core`` leads to; an MI50 forward-port's prefix is its ``rocm/``."""
    root, lay = layout
    named = T.MI50_PREFIX if lay.name == "isolated-10.0" else "/opt/rocm"
    doc = jrun(root, "verify", "--tree", named, rc=6 if lay.name == "stock-10.1" else 0)
    assert [c["library"] for c in doc["copies"]] == [lay.tensile]
    assert {v["library"] for v in doc["copies"][0]["libraries"]} == set(T.KEYS)
    doc = jrun(root, "audit", "--tree", named, "--target", "gfx906", rc=0)
    assert doc["trees"] == [lay.prefix] and lay.host("rocsolver") in {r["path"] for r in doc["libraries"]}
