"""``rocmrevive audit``: libraries × targets from the fat binaries, on Debian's real host
libraries and on small host libraries compiled here with and without gfx906."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.diagnose.audit import CellStatus, audit_files
from rocmrevive.trees.layout import library_files
from tests.conftest import CACHE, REPO, TRIPLET
from tests.test_tensile import link_file, link_folder

GFX906 = "gfx906:sramecc+:xnack-"
SRC = REPO / "tests/fixtures/src"


def run(*args, root: Path | None = None) -> tuple[int, dict]:
    pre = ["--json"] + (["--root", str(root)] if root else [])
    res = CliRunner().invoke(cli, pre + list(args), catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def cells(doc: dict) -> dict[str, dict[str, str]]:
    """file name -> target -> status"""
    return {lib["path"].rsplit("/", 1)[-1]: {t: c["status"] for t, c in lib["cells"].items()}
            for lib in doc["libraries"]}


@pytest.fixture(scope="session")
def xnack_on_only_lib() -> Path:
    """A host library whose only gfx906 code is for xnack+ (clang-15, minimal HIP decls);
    cached by the hash of its sources and the compiler's version."""
    clang = shutil.which("clang-15")
    if clang is None:
        pytest.skip("clang-15 is not installed (scripts/setup-system.sh installs it)")
    cmd = [clang, "-x", "hip", "--offload-arch=gfx906:xnack+", "--offload-arch=gfx90a", "-nogpulib",
           "-nogpuinc", "-fPIC", "-shared", "-fuse-ld=lld"]
    h = hashlib.sha256(" ".join(cmd[1:]).encode())
    h.update(subprocess.run([clang, "--version"], capture_output=True, text=True).stdout.encode())
    for f in ("hip_vadd.hip", "hip_minimal.h"):
        h.update((SRC / f).read_bytes())
    out = CACHE / "audit-fixtures" / h.hexdigest()[:20] / "libxnackon.so"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        subprocess.run(cmd + [str(SRC / "hip_vadd.hip"), "-o", str(tmp)], check=True, cwd=SRC)
        os.replace(tmp, out)
    return out


# ------------------------------------------------------------------------------------------

@pytest.mark.debian
def test_debian_host_libraries_are_told_apart(debian_pkgs):
    rocblas = debian_pkgs["librocblas4_6.4.4-4_amd64"] / TRIPLET
    rccl5 = debian_pkgs["librccl1_5.4.3-3+b1_amd64"] / TRIPLET / "librccl.so.1.0"
    rccl7 = debian_pkgs["librccl1_7.2.4-1~exp3_amd64"] / TRIPLET
    code, doc = run("audit", "--tree", str(rocblas), "--tree", str(rccl5), "--tree", str(rccl7),
                    "--target", GFX906)
    assert code == 0 and doc["error"] is None
    by_path = {lib["path"]: lib for lib in doc["libraries"]}
    assert by_path[str(rocblas / "librocblas.so.4.4")]["cells"][GFX906]["status"] == CellStatus.EMBEDDED
    assert by_path[str(rccl5)]["cells"][GFX906]["status"] == CellStatus.EMBEDDED
    r7 = by_path[str(rccl7 / "librccl.so.1.0")]
    assert (r7["name"], r7["cells"][GFX906]["status"]) == ("RCCL", CellStatus.MISSING)
    assert "gfx908" in r7["processors"] and "gfx906" not in r7["processors"]
    # the Tensile folder of the rocBLAS package is a row too
    tensile = by_path[str(rocblas / "rocblas/4.4.1/library")]
    assert (tensile["name"], tensile["cells"][GFX906]["status"]) == ("rocBLAS Tensile library", CellStatus.EMBEDDED)
    (miss,) = doc["missing"]
    assert miss["path"] == str(rccl7 / "librccl.so.1.0")
    assert "collectives" in miss["breaks"] and "librccl1 5.4.3" in miss["remedy"]


@pytest.mark.debian
def test_reads_only_headers_fast(debian_pkgs):
    """Three libraries of 1.2 GB together: header reads only."""
    files = [debian_pkgs["librocblas4_6.4.4-4_amd64"] / TRIPLET / "librocblas.so.4.4",
             debian_pkgs["librccl1_5.4.3-3+b1_amd64"] / TRIPLET / "librccl.so.1.0",
             debian_pkgs["librccl1_7.2.4-1~exp3_amd64"] / TRIPLET / "librccl.so.1.0"]
    rep = audit_files(files, [TargetId.parse(GFX906)])
    assert rep.seconds >= 0  # speed is measured in bench/ (a ratio), never asserted by the clock
    assert [r.cells[GFX906].status for r in sorted(rep.rows, key=lambda r: r.path)] == \
        [CellStatus.EMBEDDED, CellStatus.MISSING, CellStatus.EMBEDDED]


def test_compiled_libraries(tmp_path, codeobjects, xnack_on_only_lib):
    """Host libraries compiled here: a rocSPARSE stand-in without gfx906 shows as missing, one
    with gfx906 as embedded, one with only gfx906:xnack+ as other-mode for an MI50, a known
    library without device code as such, and an unknown plain library not at all."""
    lib = tmp_path / "opt/rocm-6.4.3/lib"
    link_file(codeobjects["libhip_gfx908_gfx1030"].path, lib / "librocsparse.so.1.0.0")
    os.symlink("librocsparse.so.1.0.0", lib / "librocsparse.so.1")
    link_file(codeobjects["libhip_gfx906_gfx908"].path, lib / "librocsolver.so.0.5")
    link_file(xnack_on_only_lib, lib / "libMIOpen.so.1.0")
    link_file(codeobjects["libplain_host"].path, lib / "libhipblas.so.2.4")
    shutil.copy(codeobjects["libplain_host"].path, lib / "libunrelated.so.3")  # its own inode
    (tmp_path / "opt/rocm-6.4.3/.info").mkdir(parents=True)
    (tmp_path / "opt/rocm-6.4.3/.info/version").write_text("6.4.3-128\n")

    # no --tree: the /opt/rocm* installs of the machine
    code, doc = run("audit", "--target", GFX906, "--target", "gfx908", root=tmp_path)
    assert code == 0, doc["error"]
    assert doc["trees"] == ["/opt/rocm-6.4.3/lib"]
    got = cells(doc)
    assert got == {
        "librocsparse.so.1.0.0": {GFX906: CellStatus.MISSING, "gfx908": CellStatus.EMBEDDED},
        "librocsolver.so.0.5": {GFX906: CellStatus.EMBEDDED, "gfx908": CellStatus.EMBEDDED},
        "libMIOpen.so.1.0": {GFX906: CellStatus.OTHER_MODE, "gfx908": CellStatus.MISSING},
        "libhipblas.so.2.4": {GFX906: CellStatus.NOT_GPU, "gfx908": CellStatus.NOT_GPU},
    }
    assert doc["skipped_non_gpu_libraries"] == 1  # libunrelated.so.3
    missing = {(m["name"], m["target"]): m for m in doc["missing"]}
    assert set(missing) == {("rocSPARSE", GFX906), ("MIOpen", GFX906), ("MIOpen", "gfx908")}
    assert "sparse" in missing[("rocSPARSE", GFX906)]["breaks"]
    assert "xnack+" in missing[("MIOpen", GFX906)]["detail"]

    # a Radeon VII runs with xnack on only when told; a device with xnack+ loads that code
    code, doc = run("audit", "--target", "gfx906:sramecc-:xnack+", root=tmp_path)
    assert cells(doc)["libMIOpen.so.1.0"] == {"gfx906:sramecc-:xnack+": CellStatus.EMBEDDED}


@pytest.mark.debian
def test_tensile_folder_without_gfx906_names_the_install_command(tmp_path, rocblas441):
    """AMD's 6.4 layout without gfx906 Tensile files: the remedy is rocmrevive's own source."""
    lib = tmp_path / "opt/rocm-6.4.3/lib/rocblas/library"
    lib.mkdir(parents=True)
    for f in rocblas441.iterdir():
        if "gfx906" not in f.name:
            link_file(f, lib / f.name)
    code, doc = run("audit", "--tree", "/opt/rocm-6.4.3", "--target", GFX906, root=tmp_path)
    assert code == 0
    (miss,) = doc["missing"]
    assert (miss["name"], miss["path"]) == ("rocBLAS Tensile library", "/opt/rocm-6.4.3/lib/rocblas/library")
    assert "rocmrevive install" in miss["remedy"] and "rocblas-4.4-gfx906" in miss["remedy"]
    link_folder(rocblas441, tmp_path / "copy")  # with the files: embedded
    code, doc = run("audit", "--tree", "/copy", "--target", GFX906, root=tmp_path)
    assert doc["missing"] == [] and cells(doc)["copy"] == {GFX906: CellStatus.EMBEDDED}


def test_load_verdict():
    t = TargetId.parse
    assert t("gfx906").load_verdict(t(GFX906)) == "yes"
    assert t("gfx906:xnack-").load_verdict(t(GFX906)) == "yes"
    assert t("gfx906:xnack+").load_verdict(t(GFX906)) == "no"
    assert t("gfx906:xnack+").load_verdict(t("gfx906")) == "if-mode"
    assert t("gfx9-generic").load_verdict(t(GFX906)) == "yes"
    assert t("gfx908").load_verdict(t(GFX906)) == "no"


def test_nothing_to_audit(tmp_path):
    code, doc = run("audit", "--target", "gfx906", root=tmp_path)
    assert code == 3 and "--tree" in doc["error"]["message"]
    code, doc = run("audit", "--target", "gfx906", "--tree", "/nope", root=tmp_path)
    assert code == 2
    assert library_files([tmp_path]) == []


def test_human_output_says_what_breaks(tmp_path, codeobjects):
    lib = tmp_path / "lib"
    link_file(codeobjects["libhip_gfx908_gfx1030"].path, lib / "librccl.so.1.0")
    res = CliRunner().invoke(cli, ["--no-progress", "audit", "--tree", str(tmp_path), "--target", GFX906])
    assert res.exit_code == 0
    assert "RCCL" in res.output and "MISSING" in res.output
    assert "breaks: multi-GPU collectives" in res.output and "do:" in res.output


def test_device_code_under_another_name_is_read(tmp_path, codeobjects):
    """The library matrix reads a folder by content: a HIP library not named lib*.so (a plugin,
    a renamed copy) is a row; a plain file of the same folder is not (issue 27)."""
    lib = tmp_path / "opt/rocm-6.4.3/lib"
    link_file(codeobjects["libhip_gfx908_gfx1030"].path, lib / "hip_kernels_plugin.bin")
    shutil.copy(codeobjects["libplain_host"].path, lib / "helper.so")
    (lib / "notes.txt").write_text("x" * 100)
    (tmp_path / "opt/rocm-6.4.3/.info").mkdir(parents=True)
    (tmp_path / "opt/rocm-6.4.3/.info/version").write_text("6.4.3-128\n")
    assert [p.name for p in library_files([lib])] == ["hip_kernels_plugin.bin"]
    code, doc = run("audit", "--target", GFX906, "--no-programs", root=tmp_path)
    assert code == 0
    assert cells(doc) == {"hip_kernels_plugin.bin": {GFX906: CellStatus.MISSING}}
