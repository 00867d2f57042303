"""demo/minirocblas.py: a small rocBLAS Tensile library, ROCm tree and .deb that must look like
the real ones to every reader rocmrevive has (and to Debian's own files, where fetched).

Expected facts come from outside the generator: file names are derived here from the .dat files
by Tensile's rule (docs/formats.md §5.3), kernels are read back by rocmrevive's code-object core and
by llvm-readelf-15, package contents by dpkg-deb, and the .dat structure is compared with
Debian's rocBLAS 4.4.1 files.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "demo"))
import minirocblas as mr  # noqa: E402

from rocmrevive.codeobj.elf import read_amdgpu_elf  # noqa: E402
from rocmrevive.codeobj.inspect import inspect_file, inspect_paths  # noqa: E402

ARCHES = ["gfx906", "gfx908"]
DAT_MAGIC = b"\x82\xa9solutions"
DEB_LIBDIR = "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library"


# ------------------------------------------------------------------------------------------
# helpers written from docs/formats.md, independent of the generator

def _load(path: Path):
    return msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)


def _placeholders(node, out: list[str]) -> list[str]:
    """Every Placeholder value in a lazy index, in order."""
    if isinstance(node, dict):
        if node.get("type") == "Placeholder":
            out.append(node["value"])
        for v in node.values():
            _placeholders(v, out)
    elif isinstance(node, list):
        for v in node:
            _placeholders(v, out)
    return out


def _code_object(placeholder: str, source_kernel: bool, arch: str) -> str:
    # Tensile's PlaceholderLibrary::getCodeObjectFileName (docs/formats.md §5.3)
    if not source_kernel:
        return placeholder + ".co"
    if "fallback" in placeholder:
        return f"{placeholder}_{arch}.hsaco"
    return placeholder + ".hsaco"


def _expected_files(lib: Path, arch: str) -> dict[str, set[str]]:
    """code object -> solution names it must hold, for one arch, read from the lazy index."""
    lazy = _load(lib / f"TensileLibrary_lazy_{arch}.dat")
    want: dict[str, set[str]] = {}
    for p in _placeholders(lazy["library"], []):
        for s in _load(lib / f"{p}.dat")["solutions"]:
            co = _code_object(p, s["sizeMapping"]["sourceKernel"], arch)
            want.setdefault(co, set()).add(s["name"])
    return want


def _key_paths(obj, pre: str = "", out: set | None = None) -> set[str]:
    """Every key path of a msgpack document (lists merged, ProblemMap keys as '*')."""
    out = set() if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{pre}.{'*' if pre.endswith('.map') else k}"
            out.add(p)
            _key_paths(v, p, out)
    elif isinstance(obj, list):
        for v in obj:
            _key_paths(v, pre + "[]", out)
    return out


def _snapshot(root: Path) -> dict[str, tuple]:
    snap = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        data = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else None
        snap[str(p.relative_to(root))] = (st.st_mode, st.st_mtime_ns, data)
    return snap


# ------------------------------------------------------------------------------------------
# fixtures

@pytest.fixture(scope="session")
def minilib(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("minirocblas") / "library"
    info = mr.build_library(out, arches=ARCHES)
    return out, info


@pytest.fixture(scope="session")
def minideb(tmp_path_factory) -> dict:
    return mr.build_source_deb(tmp_path_factory.mktemp("deb") / "librocblas4_6.4.4-4_amd64.deb")


# ------------------------------------------------------------------------------------------
# the library

def test_file_names_follow_tensile_scheme_and_stay_small(minilib):
    lib, info = minilib
    on_disk = {p.name for p in lib.iterdir()}
    assert info["library"] == str(lib)
    expected = set()
    for arch in ARCHES:
        want = _expected_files(lib, arch)
        lazy = _load(lib / f"TensileLibrary_lazy_{arch}.dat")
        expected |= {f"{p}.dat" for p in _placeholders(lazy["library"], [])}
        expected |= set(want) | {f"TensileLibrary_lazy_{arch}.dat", f"Kernels.so-000-{arch}.hsaco"}
        # a placeholder with asm and source solutions gives a .co and a .hsaco (like Debian's SS)
        assert any(n.endswith(f"_{arch}.co") for n in want) and any(
            n.endswith(f"_{arch}.hsaco") and "fallback" not in n for n in want)
        assert any(n.endswith(f"_fallback_{arch}.hsaco") for n in want)
        per_arch = [n for n in on_disk if n.endswith((f"_{arch}.dat", f"_{arch}.co", f"_{arch}.hsaco",
                                                       f"-{arch}.hsaco"))]
        assert 8 <= len(per_arch) <= 20, per_arch
    assert on_disk == expected
    # the arch-neutral fallback .dat files are there, and no fallback .dat carries an arch
    fallback_dats = {n for n in on_disk if n.endswith("_fallback.dat")}
    assert fallback_dats and all(n.startswith("TensileLibrary_Type_") for n in fallback_dats)
    # gfx908 (MFMA) has a placeholder gfx906 lacks, as in Debian's library
    assert len(_expected_files(lib, "gfx908")) > len(_expected_files(lib, "gfx906"))
    total = sum(p.stat().st_size for p in lib.iterdir())
    assert total < 2 * 1024 * 1024 and total == info["total_bytes"]
    for name, meta in info["files"].items():
        assert hashlib.sha256((lib / name).read_bytes()).hexdigest() == meta["sha256"]


def test_inspect_reports_the_right_targets_and_no_problems(minilib):
    lib, _ = minilib
    reports = inspect_paths([lib], deep=True)
    assert len(reports) == len(list(lib.iterdir()))
    for rep in reports:
        name = Path(rep.path).name
        assert rep.problems == [], (name, rep.problems)
        if name.endswith(".dat"):
            assert rep.kind == "tensile-dat" and rep.entries == []
            assert Path(rep.path).read_bytes().startswith(DAT_MAGIC)
            continue
        arch = re.search(r"[_-](gfx[0-9a-f]+)\.(co|hsaco)$", name).group(1)
        assert rep.kind == "amdgpu-elf", name
        assert rep.targets == [arch], name  # xnack/sramecc "any", like every Debian gfx906 file
        (entry,) = rep.entries
        # Tensile assembles .co as COv4; .hsaco follow the compiler (abi_co=4 here)
        assert entry.co_version == 4, name
        assert entry.kernels and entry.kernels >= 1


def test_every_solution_name_is_a_kernel_in_the_derived_code_object(minilib):
    lib, _ = minilib
    for arch in ARCHES:
        want = _expected_files(lib, arch)
        for co, names in want.items():
            elf = read_amdgpu_elf((lib / co).read_bytes())
            assert elf.problems == [], (co, elf.problems)
            assert str(elf.target) == arch
            assert names <= elf.kd_symbols, (co, names - elf.kd_symbols)
            assert names <= elf.kernel_names, (co, names - elf.kernel_names)
            assert set(elf.note_targets) == {f"amdgcn-amd-amdhsa--{arch}"}
            if co.endswith(".co"):
                # one metadata note per kernel, each assembled on its own (docs/formats.md §2)
                assert elf.notes == len(elf.kernel_names) >= 2, co
            else:
                assert elf.notes == 1, co
        # reverse direction: every code object of this arch is referenced (helpers aside)
        on_disk = {p.name for p in lib.iterdir()
                   if p.name.endswith((f"_{arch}.co", f"_{arch}.hsaco"))}
        assert on_disk == set(want)
        helper = read_amdgpu_elf((lib / f"Kernels.so-000-{arch}.hsaco").read_bytes())
        assert helper.kd_symbols == helper.kernel_names and len(helper.kd_symbols) >= 2


def test_llvm_readelf_agrees_on_notes_and_kernel_descriptors(minilib):
    lib, _ = minilib
    want = _expected_files(lib, "gfx906")
    co = next(n for n in want if n.endswith(".co"))
    out = subprocess.run(["llvm-readelf-15", "-h", "--notes", "--dyn-syms", str(lib / co)],
                         capture_output=True, text=True, check=True).stdout
    assert len(re.findall(r"NT_AMDGPU_METADATA", out)) == len(want[co])
    kd = set(re.findall(r"\s64 OBJECT\s+GLOBAL\s+\w+\s+\d+\s+(\S+)\.kd$", out, re.M))
    assert kd == want[co]
    assert re.search(r"ABI Version:\s+2$", out, re.M)  # COv4
    assert re.search(r"Flags:\s+0x52F$", out, re.M)    # gfx906, xnack any, sramecc any


def test_dat_files_round_trip_through_msgpack_unchanged(minilib):
    lib, _ = minilib
    for p in lib.glob("*.dat"):
        data = p.read_bytes()
        assert msgpack.packb(_load(p), use_bin_type=True) == data, p.name


@pytest.mark.debian
def test_dat_structure_equals_debians(minilib, rocblas441):
    """Same key paths (and key order) as Debian's file of the same name: lazy index,
    placeholders with and without source kernels, fallbacks."""
    lib, _ = minilib
    compared = 0
    for p in sorted(lib.glob("*.dat")):
        real = rocblas441 / p.name
        assert real.exists(), f"Debian's rocBLAS 4.4.1 has no {p.name}"
        mine, theirs = _load(p), _load(real)
        assert list(mine) == list(theirs) == ["solutions", "library"]
        assert _key_paths(mine) == _key_paths(theirs), p.name
        if mine["solutions"]:
            for key in (None, "problemType", "sizeMapping"):
                a = mine["solutions"][0] if key is None else mine["solutions"][0][key]
                b = theirs["solutions"][0] if key is None else theirs["solutions"][0][key]
                assert list(a) == list(b), (p.name, key)
        compared += 1
    assert compared == len(list(lib.glob("*.dat"))) >= 7


@pytest.mark.debian
def test_every_file_name_exists_in_debians_library(minilib, rocblas441):
    lib, _ = minilib
    missing = sorted(p.name for p in lib.iterdir() if not (rocblas441 / p.name).exists())
    assert missing == []


def test_code_object_v6_hsaco_next_to_v4_co_like_debian(tmp_path):
    pytest.importorskip("ziglang")
    info = mr.build_library(tmp_path / "lib", arches=["gfx906"], abi_co=6)
    lib = Path(info["library"])
    seen = set()
    for rep in inspect_paths([lib]):
        if rep.kind != "amdgpu-elf":
            continue
        assert rep.problems == [] and rep.targets == ["gfx906"]
        suffix = Path(rep.path).suffix
        seen.add((suffix, rep.entries[0].co_version))
    assert seen == {(".co", 4), (".hsaco", 6)}
    for co, names in _expected_files(lib, "gfx906").items():
        assert names <= read_amdgpu_elf((lib / co).read_bytes()).kd_symbols


def test_cold_cache_build_is_reproducible_and_then_cached(tmp_path, monkeypatch, minideb):
    monkeypatch.setenv("ROCMREVIVE_TEST_CACHE", str(tmp_path / "cache"))
    first = mr.build_source_deb(tmp_path / "a.deb")
    # its speed is not asserted here (no clock in tests): reproducibility and reuse are
    # same inputs, fresh cache: the same bytes (manifests can pin the sha256)
    assert first["sha256"] == minideb["sha256"]
    again = mr.build_source_deb(tmp_path / "b.deb")
    assert again["build_seconds"] == first["build_seconds"]  # read from the cache, not rebuilt
    assert (tmp_path / "b.deb").read_bytes() == (tmp_path / "a.deb").read_bytes()
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "cache/minirocblas").iterdir()) == \
        ["arch", "deb", "hostlib", "library"]


# ------------------------------------------------------------------------------------------
# the ROCm tree

def test_tree_writes_only_its_rocm_folder(tmp_path):
    root = tmp_path / "machine"
    (root / "sys/class/kfd/kfd/topology/nodes/1").mkdir(parents=True)
    (root / "sys/class/kfd/kfd/topology/nodes/1/properties").write_text("gfx_target_version 90006\n")
    (root / "opt/rocm-6.3.3/lib").mkdir(parents=True)
    (root / "opt/rocm-6.3.3/lib/keep.txt").write_text("untouched\n")
    before = _snapshot(root)

    res = mr.build_tree(root, rocm_version="6.4.3", arches_present=["gfx908"])
    after = _snapshot(root)
    rocm = root / "opt/rocm-6.4.3"
    for path, state in before.items():
        if path not in ("opt",):
            assert after[path] == state, path
    new = set(after) - set(before)
    assert new and all(p.startswith("opt/rocm-6.4.3") for p in new)
    assert sorted(res["written"]) == sorted(p for p in new if (root / p).is_file() or (root / p).is_symlink())

    assert (rocm / ".info/version").read_text() == "6.4.3-128\n"
    lib = rocm / "lib/rocblas/library"
    assert res["library"] == str(lib)
    names = {p.name for p in lib.iterdir()}
    assert "TensileLibrary_lazy_gfx908.dat" in names
    assert not any("gfx906" in n for n in names)  # AMD's 6.4 ships no gfx906 Tensile files
    assert any(n.endswith("_fallback.dat") for n in names)
    assert {p.name for p in lib.iterdir()} == {n for n in names}
    for co, kernels in _expected_files(lib, "gfx908").items():
        assert kernels <= read_amdgpu_elf((lib / co).read_bytes()).kd_symbols

    so = rocm / "lib/librocblas.so"
    assert os.readlink(so) == "librocblas.so.4"
    assert os.readlink(rocm / "lib/librocblas.so.4") == "librocblas.so.4.4.60403"
    assert Path(res["host_lib"]).resolve() == so.resolve()
    rep = inspect_file(so, deep=True)
    assert rep.kind == "host-elf" and rep.problems == []
    assert rep.targets == ["gfx906", "gfx908"]
    soname = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
    assert "Library soname: [librocblas.so.4]" in soname

    with pytest.raises(FileExistsError):
        mr.build_tree(root, rocm_version="6.4.3")
    mr.build_tree(root, rocm_version="6.4.3", arches_present=["gfx908"], host_arches=["gfx908"],
                  replace=True, opt_rocm_link=True)
    assert inspect_file(so).targets == ["gfx908"]
    assert os.readlink(root / "opt/rocm") == "rocm-6.4.3"
    assert (root / "opt/rocm-6.3.3/lib/keep.txt").read_text() == "untouched\n"


# ------------------------------------------------------------------------------------------
# the Debian package

def _dpkg(*args: str) -> str:
    return subprocess.run(["dpkg-deb", *args], capture_output=True, text=True, check=True).stdout


def test_deb_lists_extracts_and_matches_its_report(minideb, tmp_path):
    deb = Path(minideb["path"])
    data = deb.read_bytes()
    assert hashlib.sha256(data).hexdigest() == minideb["sha256"] and len(data) == minideb["size"]

    listing = _dpkg("-c", str(deb)).splitlines()
    entries = [re.split(r"\s+", line, maxsplit=5) for line in listing]
    assert all(e[1] == "root/root" for e in entries)
    names = sorted(e[5].split(" -> ")[0] for e in entries if not e[0].startswith("d"))
    assert names == minideb["members"]
    lib_members = [m for m in names if m.startswith(f"./{DEB_LIBDIR}/")]
    assert lib_members == minideb["library_members"]
    assert {m.rsplit("/", 1)[1] for m in lib_members} >= {
        "TensileLibrary_lazy_gfx906.dat", "Kernels.so-000-gfx906.hsaco"}
    assert not any("gfx908" in m for m in lib_members)

    assert _dpkg("-f", str(deb), "Package").strip() == "librocblas4"
    assert _dpkg("-f", str(deb), "Version").strip() == "6.4.4-4"
    assert _dpkg("-f", str(deb), "X-Rocm-Gpu-Architecture").strip() == "gfx906"

    out = tmp_path / "x"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(out)], check=True)
    ref = mr.build_library(tmp_path / "ref", arches=["gfx906"])
    extracted = out / DEB_LIBDIR
    assert {p.name for p in extracted.iterdir()} == set(ref["files"])
    for name in ref["files"]:
        assert (extracted / name).read_bytes() == (tmp_path / "ref" / name).read_bytes(), name
    # control md5sums cover every file and match the extracted bytes
    ctrl = tmp_path / "ctrl"
    subprocess.run(["dpkg-deb", "-e", str(deb), str(ctrl)], check=True)
    sums = dict(reversed(line.split("  ", 1)) for line in (ctrl / "md5sums").read_text().splitlines())
    files = [m[2:] for m in names if not (out / m[2:]).is_symlink()]
    assert sorted(sums) == sorted(files)
    for rel, md5 in sums.items():
        assert hashlib.md5((out / rel).read_bytes()).hexdigest() == md5, rel
    host = out / "usr/lib/x86_64-linux-gnu/librocblas.so.4"
    assert os.readlink(host) == "librocblas.so.4.4"
    assert inspect_file(host).targets == ["gfx906"]  # equals X-Rocm-Gpu-Architecture, as Debian's


def test_deb_with_other_arches_carries_them_everywhere(tmp_path):
    res = mr.build_source_deb(tmp_path / "two.deb", other_arches=["gfx908"])
    assert _dpkg("-f", res["path"], "X-Rocm-Gpu-Architecture").strip() == "gfx906 gfx908"
    out = tmp_path / "x"
    subprocess.run(["dpkg-deb", "-x", res["path"], str(out)], check=True)
    assert inspect_file(out / "usr/lib/x86_64-linux-gnu/librocblas.so.4.4").targets == ["gfx906", "gfx908"]
    lazies = sorted(p.name for p in (out / DEB_LIBDIR).glob("TensileLibrary_lazy_*.dat"))
    assert lazies == ["TensileLibrary_lazy_gfx906.dat", "TensileLibrary_lazy_gfx908.dat"]


def test_deb_and_tree_agree_on_the_fallback_placeholders(minideb, tmp_path):
    """Like Debian's package and AMD's tree: the package's gfx906 lazy index names fallback
    placeholders whose arch-neutral .dat files the tree already has, byte for byte."""
    tree = mr.build_tree(tmp_path / "m", arches_present=["gfx908"])
    tree_lib = Path(tree["library"])
    out = tmp_path / "x"
    subprocess.run(["dpkg-deb", "-x", minideb["path"], str(out)], check=True)
    deb_lib = out / DEB_LIBDIR
    lazy = _load(deb_lib / "TensileLibrary_lazy_gfx906.dat")
    fallbacks = [p for p in _placeholders(lazy["library"], []) if "fallback" in p]
    assert fallbacks
    for p in fallbacks:
        assert (tree_lib / f"{p}.dat").read_bytes() == (deb_lib / f"{p}.dat").read_bytes()
    # after copying the package's gfx906 files in, the tree resolves gfx906 completely
    for f in deb_lib.iterdir():
        if "gfx906" in f.name:
            (tree_lib / f.name).write_bytes(f.read_bytes())
    for co, names in _expected_files(tree_lib, "gfx906").items():
        assert names <= read_amdgpu_elf((tree_lib / co).read_bytes()).kd_symbols


def test_script_prints_json(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "demo/minirocblas.py"), "library",
                           str(tmp_path / "lib"), "--arch", "gfx906"],
                          capture_output=True, text=True, check=True)
    doc = json.loads(proc.stdout)
    assert doc["arches"] == ["gfx906"]
    assert sorted(p.name for p in (tmp_path / "lib").iterdir()) == sorted(doc["files"])


def test_rocmrevive_inspect_command_reads_the_tree(tmp_path):
    tree = mr.build_tree(tmp_path / "m", arches_present=["gfx908"])
    proc = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--json", "inspect",
                           str(Path(tree["rocm_root"]) / "lib")],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    summary = doc["summary"]
    assert summary["files_with_problems"] == 0
    # the Tensile files are gfx908 only; gfx906 is present only in librocblas.so's fat binary
    kinds = {Path(f["path"]).name: (f["kind"], f["targets"]) for f in doc["files"]}
    assert kinds[Path(tree["host_lib"]).name] == ("host-elf", ["gfx906", "gfx908"])
    tensile = {n: k for n, k in kinds.items() if n != Path(tree["host_lib"]).name}
    assert {t for kind, ts in tensile.values() for t in ts} == {"gfx908"}
    assert {kind for kind, _ in tensile.values()} == {"amdgpu-elf", "tensile-dat"}
