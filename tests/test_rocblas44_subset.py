"""The rocBLAS 4.4 layout with real files and no fetched package: tests/data/librocblas4-subset/
holds ten files copied unchanged from Debian's librocblas4 6.4.4-4 (the gfx906 lazy index, two of
its placeholders with their .co, their fallback .dat and .hsaco, the helper Kernels.so-000), so
these tests run the day librocblas4 has left every Debian suite (and the snapshot archive cannot be
reached). The figures are constants on purpose: the bytes are pinned here by SHA256SUMS."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.sources.manifest_load import load_manifests
from rocmrevive.tensile import xref as X
from tests.fixtures.fetched import fetched

REPO = Path(__file__).resolve().parent.parent
SUBSET = REPO / "tests/data/librocblas4-subset"
LIB = "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library"
GFX906 = TargetId.parse("gfx906:sramecc+:xnack-")
CC = "TensileLibrary_Type_CC_Contraction_l_AlikC_Bljk_Cijk_Dijk_gfx906"
DD = "TensileLibrary_Type_DD_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx906"


def _sums() -> dict[str, str]:
    return {name: sha for sha, name in (ln.split("  ", 1) for ln in (SUBSET / "SHA256SUMS").read_text().splitlines())}


def _copy(tmp_path: Path) -> Path:
    """The subset as a Debian tree: <tmp>/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library."""
    lib = tmp_path / LIB
    shutil.copytree(SUBSET / "library", lib)
    return lib


def test_the_subset_is_what_its_readme_says():
    files = sorted(p.name for p in (SUBSET / "library").iterdir())
    assert files == sorted(_sums()) and len(files) == 10
    for name, sha in _sums().items():
        assert hashlib.sha256((SUBSET / "library" / name).read_bytes()).hexdigest() == sha, name
    # the package the README names is the shipped pin
    readme = (SUBSET / "README.md").read_text()
    (m,) = [m for m in load_manifests(str(REPO / "manifests")) if m.id == "rocblas-4.4-gfx906"]
    deb = m.source("debian-librocblas4")
    assert f"`librocblas4` {deb.version}" in readme and deb.sha256 in readme and deb.sha1 and deb.sha1 in readme
    assert f"{deb.size:,} bytes" in readme and deb.filename in readme
    # small enough to live in the repo (the budget: a few MB)
    assert sum(p.stat().st_size for p in SUBSET.rglob("*") if p.is_file()) < 2_000_000


def test_xref_of_the_real_subset(tmp_path):
    """rocBLAS 4.4.1's gfx906 index names 88 placeholders; the two kept here reach 35 solutions,
    every kernel of which is found in the code object rocBLAS would load; the 84 left out are
    named as missing and nothing else is said."""
    lib = _copy(tmp_path)
    rep = X.cross_reference(lib, GFX906)
    assert (rep.placeholders, rep.solutions, rep.asm_solutions, rep.source_solutions) == (88, 35, 27, 8)
    assert rep.kernels_found == 35 and (rep.referenced, len(rep.on_disk)) == (4, 4)
    assert {f.kind for f in rep.findings} == {X.PLACEHOLDER_MISSING} and len(rep.findings) == 84
    assert not {f.file for f in rep.findings} & set(_sums())
    assert [c.file for c in rep.code_objects.values() if c.helper] == ["Kernels.so-000-gfx906.hsaco"]
    # FORMATS §5.1: .co are COv4, .hsaco COv6, all gfx906
    versions = {(c.file.rsplit(".", 1)[1], e.co_version) for c in rep.code_objects.values() for e in c.entries}
    assert versions == {("co", 4), ("hsaco", 6)}
    assert {e.target.processor for c in rep.code_objects.values() for e in c.entries} == {"gfx906"}


@pytest.mark.parametrize("how,kind,file", [
    ("delete", X.CODE_OBJECT_MISSING, CC + ".co"),
    ("swap", X.KERNEL_MISSING, DD + ".co"),
    ("delete-helper", X.HELPER_MISSING, None),
    ("delete-index", X.LAZY_INDEX_MISSING, "TensileLibrary_lazy_gfx906.dat"),
])
def test_the_subset_broken_is_named(tmp_path, how, kind, file):
    """Each check above can fail: the same real files, broken the ways users break them."""
    lib = _copy(tmp_path)
    if how == "delete":
        (lib / (CC + ".co")).unlink()
    elif how == "swap":   # another real code object under the DD name: its kernels are not there
        shutil.copyfile(lib / (CC + ".co"), lib / (DD + ".co"))
    elif how == "delete-helper":
        (lib / "Kernels.so-000-gfx906.hsaco").unlink()
    else:
        (lib / "TensileLibrary_lazy_gfx906.dat").unlink()
    rep = X.cross_reference(lib, GFX906)
    hits = [f for f in rep.findings if f.kind == kind]
    assert hits, [(f.kind, f.file) for f in rep.findings if f.kind != X.PLACEHOLDER_MISSING]
    if file:
        assert hits[0].file == file
    if how in ("delete", "swap"):
        assert hits[0].kernels and rep.kernels_found < 35


def _cli(*args: str) -> tuple[int, dict]:
    res = CliRunner().invoke(cli, ["--json", *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def test_verify_and_inspect_from_the_outside(tmp_path):
    """`rocmrevive verify` on the subset as a Debian tree: the 35 kernels found, the 84 missing
    placeholders are why it does not serve (exit 6); `inspect` reads five gfx906 code objects."""
    _copy(tmp_path)
    code, doc = _cli("--root", str(tmp_path), "verify", "--tree", "/" + LIB, "--target", "gfx906")
    assert code == 6
    (dev,) = doc["copies"][0]["devices"]
    checks = {c["name"]: c for c in dev["checks"]}
    assert dev["verdict"] == "does-not-serve" and checks["targets"]["status"] == "pass"
    t = checks["tensile"]
    assert t["status"] == "fail" and "88 placeholders, 35/35 solutions' kernels found" in t["summary"]
    assert {o["kind"] for o in t["offenders"]} == {"placeholder-missing"}
    code, doc = _cli("inspect", str(SUBSET / "library"))
    assert code == 0
    assert doc["summary"]["kinds"] == {"amdgpu-elf": 5, "tensile-dat": 5}
    assert doc["summary"]["targets"] == {"gfx906": 5} and doc["summary"]["problems"] == 0


@pytest.mark.debian
def test_the_subset_is_the_package_s_bytes(debian_pkgs):
    """With the package fetched: the subset's files are its files, byte for byte (a stand-in for a
    drifted pin is another build: then only the names are checked)."""
    lib = debian_pkgs["librocblas4_6.4.4-4_amd64"] / LIB
    same_build = fetched("librocblas4_6.4.4-4_amd64").version == "6.4.4-4"
    for name, sha in _sums().items():
        assert (lib / name).is_file(), name
        if same_build:
            assert hashlib.sha256((lib / name).read_bytes()).hexdigest() == sha, name
