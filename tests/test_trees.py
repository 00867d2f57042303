"""ROCm installs and rocBLAS copies: layouts, versions, targets, coverage of the detected GPUs.

Real parts where they matter: Debian's real librocblas4/5 packages (deep scan of real code
objects), gfx906 code objects compiled here with clang-15, an ELF SONAME from a real link.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest
from machines import fresh_machine, machine  # noqa: F401

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.hardware.gpus import device_target
from rocmrevive.rootfs import Root
from rocmrevive.trees.installs import find_installs
from rocmrevive.trees.pythonenv import find_envs, sites_for
from rocmrevive.trees.rocblas import find_copies, mark_coverage
from rocmrevive.trees.survey import diagnose, survey

CLANG = shutil.which("clang-15")
LLD = shutil.which("ld.lld-15")
FORMATS_441 = "gfx803 gfx900 gfx906 gfx908 gfx90a gfx1010 gfx1030 gfx1100 gfx1101 gfx1102".split()


def _by_layout(copies):
    return {c.layout: c for c in copies}


def test_every_layout_and_how_its_version_is_known(machine):
    s = survey(Root(machine("rocm643-torch-venv")))
    c = _by_layout(s.copies)
    assert set(c) == {"amd", "debian", "python-torch", "bundle"}
    amd = c["amd"]
    assert (amd.path, amd.rocblas_version, amd.version_source) == (
        "/opt/rocm-6.4.3/lib/rocblas/library", "4.4.1", "include/rocblas/internal/rocblas-version.h")
    assert (amd.rocm_version, amd.rocm_version_source) == ("6.4.3", "/opt/rocm-6.4.3/.info/version")
    deb = c["debian"]
    assert (deb.rocblas_version, deb.version_source) == ("4.4.1", "folder name")
    assert (deb.rocm_version, deb.rocm_version_source) == ("6.4.4", "dpkg: librocblas4 6.4.4-4")
    torch = c["python-torch"]
    assert torch.path == "/home/alice/venvs/torch/lib/python3.12/site-packages/torch/lib/rocblas/library"
    assert (torch.rocblas_version, torch.version_source) == (
        "4.3", "librocblas.so.4; ROCm 6.3 (torch.version.hip 6.3.42134-a9a80e791) ships rocBLAS 4.3")
    assert (torch.rocm_version, torch.rocm_version_source) == ("6.3", "torch.version.hip 6.3.42134-a9a80e791")
    assert torch.owner.endswith("(torch 2.7.1+rocm6.3)")
    assert c["bundle"].path == "/usr/lib/ollama/rocm/rocblas/library"
    # coverage: only AMD's 6.4.3 tree lacks gfx906
    assert amd.missing_for_gpus == [0] and "gfx906" not in amd.targets
    assert all(c[k].missing_for_gpus == [] for k in ("debian", "python-torch", "bundle"))
    assert c["debian"].targets == FORMATS_441


def test_python_envs_named_and_searched(machine):
    root = Root(machine("rocm643-torch-venv"))
    envs, problems = find_envs(root, ["/home/alice/venvs/torch/bin/python"], common=False)
    assert not problems and [e.site_packages for e in envs] == [
        "/home/alice/venvs/torch/lib/python3.12/site-packages"]
    assert envs[0].named and envs[0].torch_version == "2.7.1+rocm6.3" and envs[0].python == "3.12"
    # the venv folder and the site-packages folder name the same environment
    assert sites_for(root, "/home/alice/venvs/torch")[0] == sites_for(
        root, "/home/alice/venvs/torch/lib/python3.12/site-packages")[0]
    # common places find both venvs; only the one with torch carries rocBLAS
    found, _ = find_envs(root, [])
    assert {e.site_packages for e in found} == {"/home/alice/venvs/torch/lib/python3.12/site-packages",
                                                 "/home/alice/.venv/lib/python3.12/site-packages"}
    _, problems = find_envs(root, ["/home/bob/venv"], common=False)
    assert problems == ["--python /home/bob/venv: /home/bob/venv does not exist"]
    # without the search and without --python the wheel's copy is not seen
    s = survey(root, common_envs=False)
    assert "python-torch" not in _by_layout(s.copies)


def test_installs_and_the_rocm_link(fresh_machine):
    root = fresh_machine("mi50-66a0-lota09")
    installs, link = find_installs(Root(root))
    assert [(i.path, i.version, i.build, i.default) for i in installs] == [
        ("/opt/rocm-6.2.0", "6.2.0", "66", False), ("/opt/rocm-7.14.0", "7.14.0", None, True)]
    assert (link.target, link.resolved, link.exists) == ("rocm-7.14.0", "/opt/rocm-7.14.0", True)
    # the same tree through /opt/rocm is not a second copy
    copies = find_copies(Root(root), installs=installs)
    assert [c.path for c in copies] == ["/opt/rocm-6.2.0/lib/rocblas/library", "/opt/rocm-7.14.0/lib/rocblas/library"]
    # an absolute link through /etc/alternatives resolves inside the root
    os.unlink(root / "opt/rocm")
    (root / "etc/alternatives").mkdir(parents=True)
    os.symlink("/opt/rocm-6.2.0", root / "etc/alternatives/rocm")
    os.symlink("/etc/alternatives/rocm", root / "opt/rocm")
    installs, link = find_installs(Root(root))
    assert link.resolved == "/opt/rocm-6.2.0" and [i.default for i in installs] == [True, False]
    # a broken link is an error with a fix
    shutil.rmtree(root / "opt/rocm-6.2.0")
    s = survey(Root(root))
    assert s.rocm_link.exists is False
    f = next(f for f in diagnose(s, user="root") if f.id == "rocm-link-broken")
    assert f.severity == "error" and "ln -sfn" in f.fix and "/opt/rocm-7.14.0" in f.fix


def test_version_from_dpkg_and_from_the_file_name(fresh_machine):
    root = fresh_machine("dual-mi50")
    (root / "opt/rocm-6.4.3/include/rocblas/internal/rocblas-version.h").unlink()
    c = survey(Root(root)).copies[0]
    assert (c.rocblas_version, c.version_source) == ("4.4", "librocblas.so.4.4.60403")
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(
        "Package: rocblas\nStatus: install ok installed\nVersion: 4.4.1.60403-128~22.04\n\n"
        "Package: rocblas-dev\nStatus: install ok installed\nVersion: 4.4.1.60403-128~22.04\n")
    c = survey(Root(root)).copies[0]
    assert (c.rocblas_version, c.version_source) == ("4.4.1", "dpkg: rocblas 4.4.1.60403-128~22.04")


def test_new_layouts_and_missing_index(fresh_machine):
    root = fresh_machine("dual-mi50")
    lib = root / "opt/rocm-6.4.3/lib/rocblas/library"
    # gfx906 code objects copied by pattern, without the lazy index
    (lib / "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.co").write_text("x")
    s = survey(Root(root))
    ids = [f.id for f in diagnose(s, user="root")]
    assert "rocblas-gfx906-no-index" in ids and "rocblas-missing-gfx906" not in ids
    # TheRock 7.13+: per-arch folders and .kpack archives are recognised
    (lib / "gfx906").mkdir()
    (lib / "gfx906/TensileLibrary_lazy_gfx906.dat").write_text("x")
    (lib / "gfx906/rocblas_gfx906.kpack").write_text("x")
    c = survey(Root(root)).copies[0]
    assert c.arch_folders and c.kpack and "gfx906" in c.targets and c.missing_for_gpus == []
    assert "rocblas-new-layout" in {f.id for f in diagnose(survey(Root(root)), user="root")}


@pytest.mark.skipif(not (CLANG and LLD), reason="clang-15 / ld.lld-15 not installed")
def test_deep_scan_reads_real_code_objects(fresh_machine, tmp_path):
    """gfx906 code built for sramecc- loads on the Radeon VII but not on the MI50 (sramecc+)."""
    src = tmp_path / "k.cl"
    src.write_text("__kernel void k(__global float *a) { a[__builtin_amdgcn_workitem_id_x()] += 1.0f; }\n")
    root = fresh_machine("mi50-radeon-vii")
    lib = root / "opt/rocm-6.4.3/lib/rocblas/library"
    lib.mkdir(parents=True)
    (root / "opt/rocm-6.4.3/.info").mkdir()
    (root / "opt/rocm-6.4.3/.info/version").write_text("6.4.3-128\n")
    obj = tmp_path / "k.o"
    subprocess.run([CLANG, "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx906:sramecc-:xnack-", "-nogpulib",
                    "-c", str(src), "-o", str(obj)], check=True)
    subprocess.run([LLD, "-shared", str(obj), "-o", str(lib / "TensileLibrary_Type_SS_Contraction_gfx906.co")],
                   check=True)
    (lib / "TensileLibrary_lazy_gfx906.dat").write_text("index placeholder")
    shallow = survey(Root(root))
    assert shallow.copies[0].missing_for_gpus == []          # by names both cards look served
    deep = survey(Root(root), deep=True)
    c = deep.copies[0]
    assert c.deep.targets == ["gfx906:sramecc-:xnack-"] and c.deep.files == 1
    mi50 = next(g for g in deep.hardware.gpus if g.pci.device == 0x66A1)
    assert c.missing_for_gpus == [mi50.index]
    f = next(f for f in diagnose(deep, user="root") if f.id == "rocblas-gfx906-wrong-target")
    assert f.severity == "error" and "gfx906:sramecc+:xnack-" in f.message


@pytest.mark.skipif(not CLANG, reason="clang-15 not installed")
def test_unversioned_wheel_library_version_from_soname(fresh_machine, tmp_path):
    """PyTorch wheels ship librocblas.so without a version in the name: read DT_SONAME."""
    root = fresh_machine("rocm643-torch-venv")
    tlib = root / "home/alice/venvs/torch/lib/python3.12/site-packages/torch/lib"
    (tlib / "librocblas.so.4").unlink()
    (tmp_path / "e.c").write_text("int rocblas_create_handle(void *h) { return 0; }\n")
    subprocess.run([CLANG, "-shared", "-fPIC", "-Wl,-soname,librocblas.so.4", str(tmp_path / "e.c"),
                    "-o", str(tlib / "librocblas.so")], check=True)
    c = _by_layout(survey(Root(root)).copies)["python-torch"]
    assert (c.rocblas_version, c.version_source) == (
        "4.3", "SONAME librocblas.so.4; ROCm 6.3 (torch.version.hip 6.3.42134-a9a80e791) ships rocBLAS 4.3")


@pytest.mark.debian
def test_debian_packages_real_files(debian_pkgs):
    root441 = Root(debian_pkgs["librocblas4_6.4.4-4_amd64"])
    (c,) = find_copies(root441, deep=False)
    assert (c.layout, c.path, c.rocblas_version, c.version_source) == (
        "debian", "/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library", "4.4.1", "folder name")
    assert c.targets == FORMATS_441 and c.files == 1349
    t0 = time.perf_counter()
    (deep,) = find_copies(root441, deep=True)
    elapsed = time.perf_counter() - t0
    print(f"\ndeep scan of Debian rocBLAS 4.4.1: {deep.deep.files} code objects in {elapsed:.2f} s")
    assert deep.deep.files == 970 and deep.deep.problems == [] and deep.deep.not_code == []
    assert "gfx906" in deep.deep.targets                     # built "any": loads on every gfx906
    gpus = [type("G", (), {"index": i, "processor": "gfx906", "target": device_target("gfx906", s, False)})()
            for i, s in enumerate((True, False))]
    mark_coverage([deep], gpus)
    assert deep.missing_for_gpus == []
    root52 = Root(debian_pkgs["librocblas5_7.2.4-1~exp1_amd64"])
    (c5,) = find_copies(root52)
    assert (c5.rocblas_version, c5.version_source) == ("5.2", "librocblas.so.5.2")
    assert "gfx906" in c5.targets and "gfx942" in c5.targets


def test_covers_uses_exact_targets_only_after_a_deep_scan():
    from rocmrevive.trees.rocblas import DeepScan, RocblasCopy

    c = RocblasCopy("/x", "user", targets=["gfx906"])
    mi50 = TargetId.parse("gfx906:sramecc+:xnack-")
    assert c.covers(mi50, "gfx906") and not c.covers(mi50, "gfx908")
    c.deep = DeepScan(["gfx906:xnack+"], 1, [], [])
    assert not c.covers(mi50, "gfx906")


def test_a_wheels_rocblas_version_reads_as_amds_tree_does(fresh_machine):
    """A wheel that ships librocblas.so.4.4.60403 (AMD's name: rocBLAS major.minor, then ROCm's
    release) is rocBLAS 4.4, as AMD's tree with the same file is, not '4.4.60403'."""
    root = fresh_machine("rocm643-torch-venv")
    lib = root / "home/alice/venvs/torch/lib/python3.12/site-packages/torch/lib"
    for p in lib.glob("librocblas.so*"):
        p.unlink()
    (lib / "librocblas.so.4.4.60403").write_bytes(b"")
    (root / "opt/rocm-6.4.3/include/rocblas/internal/rocblas-version.h").unlink()
    s = survey(Root(root), pythons=["/home/alice/venvs/torch/bin/python"])
    c = _by_layout(s.copies)
    assert c["python-torch"].rocblas_version.startswith("4.4") and c["amd"].rocblas_version == "4.4"
    assert c["python-torch"].rocblas_version == c["amd"].rocblas_version, (c["python-torch"].version_source)
