"""The code-object core against Debian's real rocBLAS and RCCL packages, checked against
independent tools (GNU readelf decodes AMDGPU e_flags; clang-offload-bundler lists bundles)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rocmrevive.codeobj.inspect import inspect_file, inspect_paths, iter_elf_payloads
from tests.conftest import TRIPLET

pytestmark = pytest.mark.debian

BUNDLER = shutil.which("clang-offload-bundler-15")


def readelf_targets(paths: list[Path]) -> dict[str, tuple[str, int, str | None, str | None]]:
    """GNU readelf's view of each file: (processor, ABI version, xnack, sramecc)."""
    out = subprocess.run(["readelf", "-h", *map(str, paths)], capture_output=True, text=True).stdout
    res, cur = {}, None
    abiv = None
    for line in out.splitlines():
        if line.startswith("File: "):
            cur = line[6:].strip()
        elif "ABI Version:" in line:
            abiv = int(line.split(":")[1])
        elif "Flags:" in line and cur:
            parts = [p.strip() for p in line.split(":", 1)[1].split(",")]
            proc = parts[1]
            feats = dict(p.split(" ", 1) for p in parts[2:])
            res[cur] = (proc, abiv, feats.get("xnack"), feats.get("sramecc"))
    return res


def _ours(entry):
    t = entry.target
    return (t.processor, entry.co_version - 2, t.xnack, t.sramecc)


@pytest.mark.parametrize("folder", ["rocblas441", "rocblas52"])
def test_every_raw_elf_agrees_with_gnu_readelf(folder, request):
    lib = request.getfixturevalue(folder)
    reports = inspect_paths([lib])
    elves = [r for r in reports if r.kind == "amdgpu-elf"]
    assert len(elves) == {"rocblas441": 970, "rocblas52": 935}[folder]
    theirs = readelf_targets([Path(r.path) for r in elves])
    assert len(theirs) == len(elves)
    unknown_names: set[tuple[str, str]] = set()
    for r in elves:
        assert not r.problems, (r.path, r.problems)
        proc, abiv, xnack, sramecc = theirs[r.path]
        mine = _ours(r.entries[0])
        unknown = re.match(r"<unknown AMDGPU GPU type: (0x[0-9a-f]+)>", proc)
        if unknown:  # binutils 2.40 predates gfx11/gfx12: compare the mach number instead
            assert r.entries[0].e_flags & 0xFF == int(unknown.group(1), 16)
            unknown_names.add((mine[0], r.path))
        else:
            assert mine[0] == proc, (r.path, mine, theirs[r.path])
        assert mine[1] == abiv, (r.path, mine, theirs[r.path])
        # readelf says "unsupported" or leaves the feature out where the processor has none
        assert (mine[2] or "unsupported") == (xnack or "unsupported"), r.path
        assert (mine[3] or "unsupported") == (sramecc or "unsupported"), r.path
    # the processors binutils cannot name: one file each against llvm-readelf's amdhsa.target
    llvm = shutil.which("llvm-readelf-15") or shutil.which("llvm-readelf")
    for proc in sorted({n for n, _ in unknown_names}):
        path = next(p for n, p in sorted(unknown_names) if n == proc)
        notes = subprocess.run([llvm, "--notes", path], capture_output=True, text=True).stdout
        assert f"amdhsa.target:   amdgcn-amd-amdhsa--{proc}" in notes, (proc, path)


def test_rocblas441_gfx906_files_are_the_140_of_formats(rocblas441):
    names = sorted(p.name for p in rocblas441.iterdir() if "gfx906" in p.name)
    assert len(names) == 140
    reports = {Path(r.path).name: r for r in inspect_paths([rocblas441 / n for n in names])}
    kinds = {}
    for n, r in reports.items():
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
        for e in r.entries:
            assert str(e.target) == "gfx906" and e.e_flags == 0x52F
            assert e.co_version == (4 if n.endswith(".co") else 6)
    assert kinds == {"amdgpu-elf": 101, "tensile-dat": 39}


def test_ccob_tensile_files_decompress_and_agree_with_readelf(rocblas52, tmp_path):
    cos = sorted(rocblas52.glob("*_gfx906.co"))
    assert len(cos) == 42
    extracted = []
    for f in cos:
        rep = inspect_file(f, deep=True)  # decompresses and checks the MD5
        assert rep.kind == "ccob" and not rep.problems, rep.problems
        assert rep.entries[0].container.startswith("ccob-v3-zstd")
        assert [str(e.target) for e in rep.entries] == ["gfx906"]
        assert rep.entries[0].kernels and rep.entries[0].kernels > 0
        (co, data), = list(iter_elf_payloads(f))
        out = tmp_path / (f.name + ".elf")
        out.write_bytes(data)
        extracted.append(out)
    theirs = readelf_targets(extracted)
    assert {v[0] for v in theirs.values()} == {"gfx906"}
    assert {v[1] for v in theirs.values()} == {2}  # Tensile assembles .co as COv4


def _fatbin_section(lib: Path, out: Path) -> Path:
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.hip_fatbin", str(lib), str(out)], check=True)
    return out


@pytest.mark.parametrize("pkg,lib,expected", [
    ("librocblas4_6.4.4-4_amd64", "librocblas.so.4.4",
     "gfx803 gfx900 gfx906 gfx908 gfx90a gfx1010 gfx1030 gfx1100 gfx1101 gfx1102"),
    ("librocblas5_7.2.4-1~exp1_amd64", "librocblas.so.5.2",
     "gfx803 gfx900 gfx906 gfx908 gfx90a gfx1010 gfx1030 gfx1100 gfx1101 gfx1102 gfx942 gfx1151 gfx1200 gfx1201"),
    ("librccl1_5.4.3-3+b1_amd64", "librccl.so.1.0",
     "gfx803 gfx900 gfx906 gfx908 gfx90a gfx1010 gfx1030 gfx1100 gfx1101 gfx1102"),
    ("librccl1_7.2.4-1~exp3_amd64", "librccl.so.1.0",
     "gfx908 gfx90a gfx942 gfx950 gfx1030 gfx1100 gfx1101 gfx1200 gfx1201"),
])
def test_host_library_targets_equal_the_package_field(debian_pkgs, debian_debs, pkg, lib, expected):
    path = debian_pkgs[pkg] / TRIPLET / lib
    rep = inspect_file(path)
    assert rep.kind == "host-elf" and not rep.problems
    assert set(rep.processors) == set(expected.split())
    # and the package's own X-Rocm-Gpu-Architecture field says the same where it has one
    field = subprocess.run(["dpkg-deb", "-f", str(debian_debs[pkg]), "X-Rocm-Gpu-Architecture"],
                           capture_output=True, text=True).stdout.split()
    if field:
        assert set(field) == set(rep.processors)


@pytest.mark.skipif(BUNDLER is None, reason="clang-offload-bundler-15 not installed")
@pytest.mark.parametrize("pkg,lib", [("librocblas4_6.4.4-4_amd64", "librocblas.so.4.4"),
                                     ("librccl1_5.4.3-3+b1_amd64", "librccl.so.1.0")])
def test_first_bundle_matches_clang_offload_bundler(debian_pkgs, tmp_path, pkg, lib):
    path = debian_pkgs[pkg] / TRIPLET / lib
    sec = _fatbin_section(path, tmp_path / "fatbin")
    listed = subprocess.run([BUNDLER, "-list", "-type=o", f"-input={sec}"], capture_output=True,
                            text=True, check=True).stdout.split()
    rep = inspect_file(path)
    first = rep.entries[0].container
    ours = {e.entry_id for e in rep.entries if e.container == first}
    assert ours == {x for x in listed if not x.startswith("host-")}
    assert any(x.startswith("host-") for x in listed)


def test_strings_grep_is_wrong_and_inspect_is_not(debian_pkgs):
    """The seeds' method names arches that have no code in the file (issue 2)."""
    path = debian_pkgs["librocblas4_6.4.4-4_amd64"] / TRIPLET / "librocblas.so.4.4"
    out = subprocess.run(f"strings '{path}' | grep -o 'gfx[0-9a-f]\\{{3,4\\}}' | sort -u",
                         shell=True, capture_output=True, text=True).stdout.split()
    ours = set(inspect_file(path).processors)
    phantom = set(out) - ours
    assert phantom & {"gfx942", "gfx1150", "gfx1200"}, phantom


def test_cli_json_on_library_folder(rocblas441):
    out = subprocess.run(["python", "-m", "rocmrevive.cli.main", "--json", "inspect", str(rocblas441)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema_version"] == 1 and doc["error"] is None
    s = doc["summary"]
    assert s["files"] == 1349 and s["code_objects"] == 970 and s["problems"] == 0
    assert s["targets"]["gfx906"] == 101
    assert s["kinds"] == {"amdgpu-elf": 970, "tensile-dat": 379}
    f = next(f for f in doc["files"] if f["path"].endswith("Kernels.so-000-gfx906.hsaco"))
    assert f["entries"][0]["e_flags"] == "0x52f" and f["entries"][0]["co_version"] == 6


def test_deep_reads_every_kernel_of_gfx906(rocblas441):
    reports = inspect_paths(sorted(rocblas441.glob("*gfx906*.*co")), deep=True)
    assert reports and all(not r.problems for r in reports)
    kern = next(r for r in reports if "Ailk_Bjlk" in r.path and r.path.endswith(".co")
                and "HH_HPA" in r.path)
    assert kern.entries[0].kernels > 1  # one metadata note per kernel, all merged
