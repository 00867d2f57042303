"""Tensile .dat reading and the lazy index → placeholder → code object → kernel cross-reference,
on Debian's real rocBLAS 4.4.1 and 5.2 libraries, pristine and broken the ways users break them.

Broken copies are hard-link farms of the real folders (symlinks across filesystems): a file is
only ever changed after unlinking it, so the cached packages are never touched.
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import msgpack
import pytest

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.tensile import xref as X
from rocmrevive.tensile.dat import (
    DAT_MAGIC,
    LazyIndex,
    TensileFormatError,
    arch_of_lazy_index,
    code_object_name,
    is_tensile_dat,
    lazy_index_name,
    read_solutions,
)

GFX906 = TargetId.parse("gfx906:sramecc+:xnack-")  # an MI50 as ROCm reports it
HS_PLACEHOLDER = "TensileLibrary_Type_HH_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906"
SS_FALLBACK = "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback"


# ------------------------------------------------------------------------------------------
# farms of real library folders (shared with the verify tests)

def link_folder(src: Path, dst: Path) -> Path:
    """``dst`` holding a link to every file of ``src`` (hard links; symlinks if that fails)."""
    dst.mkdir(parents=True, exist_ok=True)
    with os.scandir(src) as it:
        for e in it:
            if e.is_file():
                link_file(Path(e.path), dst / e.name)
    return dst


def link_file(src: Path, dst: Path) -> Path:
    """A hard link; a symbolic link across file systems (not machines/build.link_or_copy's copy: a
    farm of rocBLAS 4.4.1's library, 1,349 files and 2.9 GB, copied into a tmpfs /tmp would not fit)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        os.symlink(src, dst)
    return dst


def rewrite(path: Path, data: bytes) -> None:
    """Give ``path`` new bytes without touching the file it was linked to."""
    path.unlink()
    path.write_bytes(data)


def debian_copy(tmp_path: Path, library: Path) -> Path:
    """A Debian-layout copy: ``<tmp>/usr/lib/x86_64-linux-gnu/rocblas/<ver>/library`` and its
    ``librocblas.so.*`` next to ``rocblas/``. Returns the library folder."""
    libdir = library.parent.parent.parent
    ver = library.parent.name
    dst_libdir = tmp_path / "usr/lib/x86_64-linux-gnu"
    lib = link_folder(library, dst_libdir / "rocblas" / ver / "library")
    for so in libdir.glob("librocblas.so.*"):
        if so.is_file() and not so.is_symlink():
            link_file(so, dst_libdir / so.name)
    return lib


def kernels_of(dat: Path) -> list[str]:
    """Kernel names a .dat lists (each once, in order), read with plain msgpack rather than
    with the code under test."""
    d = msgpack.unpackb(dat.read_bytes(), raw=False, strict_map_key=False)
    return list(dict.fromkeys(s["name"] for s in d["solutions"]))


def kinds(report) -> Counter:
    return Counter(f.kind for f in report.findings)


# ------------------------------------------------------------------------------------------
# .dat reading

@pytest.mark.debian
def test_lazy_index_names_the_placeholders_of_formats(rocblas441, rocblas52):
    idx = LazyIndex.read(rocblas441 / "TensileLibrary_lazy_gfx906.dat")
    assert idx.arch == "gfx906" and idx.processors == ["gfx906"]
    assert len(idx.placeholders) == 88 and idx.solutions == 0
    assert sum(p.endswith("_gfx906") for p in idx.placeholders) == 38
    assert sum(p.endswith("_fallback") for p in idx.placeholders) == 50
    # every placeholder names a .dat that is really there
    assert all((rocblas441 / f"{p}.dat").is_file() for p in idx.placeholders)
    assert len(LazyIndex.read(rocblas52 / "TensileLibrary_lazy_gfx906.dat").placeholders) == 96


@pytest.mark.debian
def test_solutions_agree_with_plain_msgpack(rocblas441):
    for ph in (HS_PLACEHOLDER, SS_FALLBACK):
        dat = rocblas441 / f"{ph}.dat"
        assert is_tensile_dat(dat.read_bytes()[:16])
        sols = read_solutions(dat)
        assert list(dict.fromkeys(s.name for s in sols)) == kernels_of(dat)
        raw = msgpack.unpackb(dat.read_bytes(), raw=False, strict_map_key=False)["solutions"]
        assert [s.source_kernel for s in sols] == [r["sizeMapping"]["sourceKernel"] for r in raw]
        assert [s.index for s in sols] == [r["index"] for r in raw]


@pytest.mark.debian
def test_derived_code_object_names_exist_on_disk(rocblas441):
    """The file name rule, checked against the files Debian ships: every name it derives for a
    gfx906 solution is a file in the folder."""
    idx = LazyIndex.read(rocblas441 / "TensileLibrary_lazy_gfx906.dat")
    names = set()
    for ph in idx.placeholders:
        for s in read_solutions(rocblas441 / f"{ph}.dat"):
            names.add(code_object_name(ph, s.source_kernel, "gfx906:sramecc+:xnack-"))
    assert names and all((rocblas441 / n).is_file() for n in names)
    assert len(names) == 100


def test_code_object_name_rule():
    assert code_object_name("T_Type_SS_gfx906", False, "gfx906") == "T_Type_SS_gfx906.co"
    assert code_object_name("T_Type_SS_gfx906", True, "gfx906") == "T_Type_SS_gfx906.hsaco"
    assert code_object_name("T_Type_SS_fallback", True, "gfx90a:xnack+") == "T_Type_SS_fallback_gfx90a.hsaco"
    assert code_object_name("T_Type_SS_fallback", False, "gfx906") == "T_Type_SS_fallback.co"
    assert lazy_index_name("gfx906") == "TensileLibrary_lazy_gfx906.dat"
    assert arch_of_lazy_index("TensileLibrary_lazy_gfx90a.dat") == "gfx90a"
    assert arch_of_lazy_index("TensileLibrary_Type_SS_gfx906.dat") is None


def test_damaged_and_foreign_dat_files(tmp_path):
    good = msgpack.packb({"solutions": [{"name": "k1", "index": 3, "sizeMapping": {"sourceKernel": True}}],
                          "library": {"type": "Problem", "rows": []}})
    assert good.startswith(DAT_MAGIC)
    (tmp_path / "a.dat").write_bytes(good)
    assert [(s.name, s.index, s.source_kernel) for s in read_solutions(tmp_path / "a.dat")] == [("k1", 3, True)]
    # the library map first: still read (only the quick classifier relies on the order)
    flipped = msgpack.packb({"library": {"type": "Placeholder", "value": "P"}, "solutions": [{"name": "k2"}]})
    (tmp_path / "b.dat").write_bytes(flipped)
    assert [s.name for s in read_solutions(tmp_path / "b.dat")] == ["k2"]
    assert LazyIndex.read(tmp_path / "b.dat").placeholders == ["P"]
    for name, data in {"trunc.dat": good[:-7], "empty.dat": b"", "text.dat": b"solutions: []\n",
                       "nosol.dat": msgpack.packb({"library": {}}),
                       "badsol.dat": msgpack.packb({"solutions": [{"index": 1}], "library": {}})}.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(TensileFormatError):
            read_solutions(tmp_path / name)
    with pytest.raises(TensileFormatError):
        LazyIndex.read(tmp_path / "text.dat")
    assert LazyIndex.read(tmp_path / "nosol.dat").placeholders == []
    with pytest.raises(FileNotFoundError):
        read_solutions(tmp_path / "absent.dat")


# ------------------------------------------------------------------------------------------
# the cross-reference on pristine libraries

@pytest.mark.debian
def test_pristine_441_gfx906_matches_formats(rocblas441):
    rep = X.cross_reference(rocblas441, GFX906)
    assert rep.ok and rep.findings == []
    assert (rep.placeholders, rep.solutions, rep.asm_solutions, rep.source_solutions) == (88, 7761, 6613, 1148)
    assert rep.kernels_found == 7761
    assert (rep.referenced, len(rep.on_disk)) == (100, 100)
    helper = [c for c in rep.code_objects.values() if c.helper]
    assert [c.file for c in helper] == ["Kernels.so-000-gfx906.hsaco"]
    # every code object read is gfx906, COv4 (.co) or COv6 (.hsaco): FORMATS §5.1
    versions = {(c.file.rsplit(".", 1)[1], e.co_version) for c in rep.code_objects.values() for e in c.entries}
    assert versions == {("co", 4), ("hsaco", 6)}
    assert {e.target.processor for c in rep.code_objects.values() for e in c.entries} == {"gfx906"}


@pytest.mark.debian
def test_pristine_52_gfx906_reads_ccob_code_objects(rocblas52):
    rep = X.cross_reference(rocblas52, TargetId.parse("gfx906"))
    assert rep.ok, [f.to_json() for f in rep.errors][:3]
    assert (rep.placeholders, rep.solutions, rep.kernels_found) == (96, 8181, 8181)
    assert (rep.referenced, len(rep.on_disk)) == (112, 112)
    assert {c.container for c in rep.code_objects.values() if c.file.endswith(".co")} == {"bundle"}


@pytest.mark.debian
@pytest.mark.parametrize("target,solutions", [("gfx900", 3686), ("gfx1030", 5249)])
def test_other_arches_of_441(rocblas441, target, solutions):
    rep = X.cross_reference(rocblas441, TargetId.parse(target))
    assert rep.ok and rep.solutions == rep.kernels_found == solutions


# ------------------------------------------------------------------------------------------
# broken the ways users break them

@pytest.fixture
def copy441(tmp_path, rocblas441) -> Path:
    return debian_copy(tmp_path, rocblas441)


@pytest.mark.debian
def test_deleted_code_object_is_named_with_its_kernels(copy441):
    victim = HS_PLACEHOLDER + ".co"
    (copy441 / victim).unlink()
    rep = X.cross_reference(copy441, GFX906)
    assert not rep.ok
    (f,) = rep.errors
    assert (f.kind, f.file) == (X.CODE_OBJECT_MISSING, victim)
    dat_kernels = [s.name for s in read_solutions(copy441 / (HS_PLACEHOLDER + ".dat")) if not s.source_kernel]
    assert f.kernels == list(dict.fromkeys(dat_kernels)) and len(f.kernels) > 10
    assert rep.kernels_found == 7761 - len(dat_kernels)


@pytest.mark.debian
def test_gfx908_code_object_under_a_gfx906_name(copy441, rocblas441):
    """Debian's own gfx908 build of the same problem type, copied over the gfx906 name."""
    victim = HS_PLACEHOLDER + ".co"
    rewrite(copy441 / victim, (rocblas441 / victim.replace("gfx906", "gfx908")).read_bytes())
    rep = X.cross_reference(copy441, GFX906)
    (f,) = rep.errors
    assert (f.kind, f.file) == (X.WRONG_TARGET, victim)
    assert "gfx908" in f.detail and len(f.kernels) > 10


@pytest.mark.debian
def test_compiled_gfx908_code_object_under_a_gfx906_name(copy441, codeobjects):
    victim = "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.co"
    rewrite(copy441 / victim, codeobjects["gfx908_v4"].path.read_bytes())
    rep = X.cross_reference(copy441, GFX906)
    assert [(f.kind, f.file) for f in rep.errors] == [(X.WRONG_TARGET, victim)]


@pytest.mark.debian
def test_code_object_for_another_xnack_mode(copy441, codeobjects):
    """gfx906:xnack+ code does not load on an MI50 running xnack- (the default)."""
    victim = "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.hsaco"
    rewrite(copy441 / victim, codeobjects["gfx906_xnack_on_v4"].path.read_bytes())
    rep = X.cross_reference(copy441, GFX906)
    assert [(f.kind, f.file) for f in rep.errors] == [(X.INCOMPATIBLE_FEATURES, victim)]
    assert "xnack" in rep.errors[0].detail
    # the same file is fine for a device that does run with xnack on
    rep_on = X.cross_reference(copy441, TargetId.parse("gfx906:sramecc+:xnack+"))
    assert X.INCOMPATIBLE_FEATURES not in kinds(rep_on)


@pytest.mark.debian
def test_truncated_hsaco(copy441):
    victim = SS_FALLBACK + "_gfx906.hsaco"
    data = (copy441 / victim).read_bytes()
    rewrite(copy441 / victim, data[: len(data) // 2])
    rep = X.cross_reference(copy441, GFX906)
    (f,) = rep.errors
    assert (f.kind, f.file) == (X.CODE_OBJECT_UNREADABLE, victim)
    assert "truncated" in f.detail
    assert f.kernels == kernels_of(copy441 / (SS_FALLBACK + ".dat"))


@pytest.mark.debian
def test_dropped_lazy_index(copy441):
    (copy441 / "TensileLibrary_lazy_gfx906.dat").unlink()
    rep = X.cross_reference(copy441, GFX906)
    assert [(f.kind, f.file) for f in rep.errors] == [(X.LAZY_INDEX_MISSING, "TensileLibrary_lazy_gfx906.dat")]
    assert "TensileLibrary.dat" in rep.errors[0].detail  # what rocBLAS will then say


@pytest.mark.debian
def test_lazy_index_of_another_processor_reaches_the_generic_fallback(copy441, rocblas441):
    """gfx908's index in gfx906's place: its gfx908 row never matches a gfx906, but its TruePred
    rows do (Tensile tries every matching row), and they lead to the arch-neutral fallback
    placeholders, whose kernels the folder has for gfx906: GEMMs run, slowly. Not a failure."""
    rewrite(copy441 / "TensileLibrary_lazy_gfx906.dat", (rocblas441 / "TensileLibrary_lazy_gfx908.dat").read_bytes())
    rep = X.cross_reference(copy441, GFX906)
    assert rep.ok and rep.generic_only, [f.to_json() for f in rep.errors]
    assert rep.placeholders > 0 and rep.kernels_found == rep.solutions > 0


@pytest.mark.debian
def test_lazy_index_of_another_processor_without_fallback_rows(copy441, rocblas441):
    doc = msgpack.unpackb((rocblas441 / "TensileLibrary_lazy_gfx908.dat").read_bytes(), raw=False, strict_map_key=False)
    doc["library"]["rows"] = [r for r in doc["library"]["rows"] if r["predicate"]["type"] != "TruePred"]
    rewrite(copy441 / "TensileLibrary_lazy_gfx906.dat", msgpack.packb(doc))
    rep = X.cross_reference(copy441, GFX906)
    assert rep.errors[0].kind == X.LAZY_INDEX_OTHER_PROCESSOR and "gfx908" in rep.errors[0].detail


@pytest.mark.debian
def test_fallback_dat_from_another_rocblas_version(copy441, rocblas52):
    """The arch-neutral fallback .dat comes from the tree; one from rocBLAS 5.2 names kernels the
    4.4.1 fallback code object does not have: each one is reported, with the file."""
    dat = SS_FALLBACK + ".dat"
    rewrite(copy441 / dat, (rocblas52 / dat).read_bytes())
    rep = X.cross_reference(copy441, GFX906)
    (f,) = rep.errors
    assert (f.kind, f.file) == (X.KERNEL_MISSING, SS_FALLBACK + "_gfx906.hsaco")
    assert f.kernels == kernels_of(rocblas52 / dat)
    assert rep.kernels_found == rep.solutions - len(read_solutions(rocblas52 / dat))


@pytest.mark.debian
def test_missing_placeholder_dat_and_helper_kernels(copy441):
    (copy441 / (HS_PLACEHOLDER + ".dat")).unlink()
    (copy441 / "Kernels.so-000-gfx906.hsaco").unlink()
    rep = X.cross_reference(copy441, GFX906)
    assert {(f.kind, f.file) for f in rep.errors} == {
        (X.PLACEHOLDER_MISSING, HS_PLACEHOLDER + ".dat"),
        (X.HELPER_MISSING, "Kernels.so-000-gfx906.hsaco")}
    # the placeholder's code objects are still on disk, and nobody references them now
    assert {(f.kind, f.file) for f in rep.warnings} == {
        (X.UNREFERENCED_CODE_OBJECT, HS_PLACEHOLDER + ".co"),
        (X.UNREFERENCED_CODE_OBJECT, HS_PLACEHOLDER + ".hsaco")}


@pytest.mark.debian
def test_left_over_code_object_is_a_warning_only(copy441):
    link_file(copy441 / (HS_PLACEHOLDER + ".co"), copy441 / "TensileLibrary_Type_XX_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.co")
    rep = X.cross_reference(copy441, GFX906)
    assert rep.ok
    assert [(f.kind, f.severity) for f in rep.findings] == [(X.UNREFERENCED_CODE_OBJECT, X.WARNING)]


@pytest.mark.debian
def test_ccob_code_object_truncated_in_52(tmp_path, rocblas52):
    lib = debian_copy(tmp_path, rocblas52)
    victim = "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.co"
    data = (lib / victim).read_bytes()
    assert data[:4] == b"CCOB"
    rewrite(lib / victim, data[:-1000])
    rep = X.cross_reference(lib, GFX906)
    (f,) = rep.errors
    assert (f.kind, f.file) == (X.CODE_OBJECT_UNREADABLE, victim)
    assert len(f.kernels) > 10


# ------------------------------------------------------------------------------------------
# indexes that parse but lead rocBLAS nowhere (a false pass in the review)

def _lazy(lib: Path) -> dict:
    return msgpack.unpackb((lib / "TensileLibrary_lazy_gfx906.dat").read_bytes(), raw=False, strict_map_key=False)


def _empty_problem_maps(node):
    if isinstance(node, dict):
        if node.get("type") == "ProblemMap":
            node["map"] = {}
        for v in node.values():
            _empty_problem_maps(v)
    elif isinstance(node, list):
        for v in node:
            _empty_problem_maps(v)


@pytest.mark.debian
def test_an_index_reaching_no_solution_fails(copy441):
    doc = _lazy(copy441)
    _empty_problem_maps(doc)
    rewrite(copy441 / "TensileLibrary_lazy_gfx906.dat", msgpack.packb(doc))
    rep = X.cross_reference(copy441, GFX906)
    assert not rep.ok and rep.solutions == 0
    assert [(f.kind, f.file) for f in rep.errors] == [(X.LAZY_INDEX_EMPTY, "TensileLibrary_lazy_gfx906.dat")]


@pytest.mark.debian
def test_placeholders_with_zero_solutions_fail(copy441):
    for ph in LazyIndex.read(copy441 / "TensileLibrary_lazy_gfx906.dat").placeholders:
        dat = copy441 / (ph + ".dat")
        lib = msgpack.unpackb(dat.read_bytes(), raw=False, strict_map_key=False)["library"]
        rewrite(dat, msgpack.packb({"solutions": [], "library": lib}))
    rep = X.cross_reference(copy441, GFX906)
    assert not rep.ok and rep.solutions == 0 and rep.placeholders == 88
    # their selection tables still name solutions: Tensile's "Invalid solution index", each file named
    invalid = {f.file for f in rep.errors if f.kind == X.PLACEHOLDER_INVALID}
    assert len(invalid) == 88 and all("Invalid solution index" in f.detail for f in rep.errors)


@pytest.mark.debian
@pytest.mark.parametrize("mutate", ["single", "no-rows", "row-without-predicate", "list"])
def test_an_index_rocblas_cannot_read_fails(copy441, mutate):
    doc = _lazy(copy441)
    if mutate == "single":
        doc["library"] = {"type": "Single", "index": 0}
    elif mutate == "no-rows":
        doc["library"]["rows"] = []
    elif mutate == "row-without-predicate":
        del doc["library"]["rows"][0]["predicate"]
    else:
        doc = [doc]
    rewrite(copy441 / "TensileLibrary_lazy_gfx906.dat", msgpack.packb(doc))
    rep = X.cross_reference(copy441, GFX906)
    assert not rep.ok
    assert X.LAZY_INDEX_UNREADABLE in {f.kind for f in rep.errors}, [f.to_json() for f in rep.errors]


@pytest.mark.debian
def test_verify_fails_a_gfx906_index_with_zero_solutions(copy441):
    from tests.test_verify import run, statuses

    doc = _lazy(copy441)
    _empty_problem_maps(doc)
    rewrite(copy441 / "TensileLibrary_lazy_gfx906.dat", msgpack.packb(doc))
    code, out = run("verify", "--tree", str(copy441.parent.parent.parent), "--target", "gfx906:sramecc+:xnack-")
    assert code == 6 and out["error"]["exit"] == 6
    assert statuses(out)[("gfx906:sramecc+:xnack-", "tensile")] == "fail"


# ------------------------------------------------------------------------------------------
# what Tensile's deserialisers demand (tensile.logic), on small trees

def _matching(*indices):
    return {"type": "Matching", "distance": "Euclidean", "properties": [{"type": "FreeSizeA", "index": 0}],
            "table": [{"key": [i], "index": i, "speed": 1.0} for i in indices]}


def test_solution_indices_must_be_in_the_files_list():
    from rocmrevive.tensile.logic import tree_problems

    lib = {"type": "Problem", "rows": [{"predicate": {"type": "TruePred"}, "library": _matching(1, 2)}]}
    assert tree_problems(lib, {1, 2}) == []
    (problem,) = tree_problems(lib, {1})
    assert "solution 2" in problem and "Invalid solution index" in problem
    assert "Invalid solution index" in tree_problems({"type": "Single", "index": 5}, set())[0]


def test_unknown_types_and_missing_fields_are_what_tensile_refuses():
    from rocmrevive.tensile.logic import tree_problems

    assert "Unknown subclass" in tree_problems({"type": "Placeholdr", "value": "x"}, set())[0]
    bad_pred = {"type": "Problem", "rows": [{"predicate": {"type": "TruPred"}, "library": _matching(1)}]}
    assert "'TruPred'" in tree_problems(bad_pred, {1})[0]
    assert "properties" in tree_problems(dict(_matching(1), properties=[]), {1})[0]
    assert "distance" in tree_problems(dict(_matching(1), distance="Chebyshev"), {1})[0]
    assert "without its predicate" in tree_problems({"type": "Hardware", "rows": [{"library": _matching(1)}]}, {1})[0]
    assert tree_problems({"type": "ProblemMap", "property": {"type": "OperationIdentifier"}}, set())


def test_the_rows_a_processor_reaches():
    from rocmrevive.tensile.logic import select_rows

    def row(pred, name):
        return {"predicate": pred, "library": {"type": "Placeholder", "value": name}}
    gfx = {"type": "AMDGPU", "value": {"type": "Processor", "value": "gfx908"}}
    lib = {"type": "Hardware", "rows": [row(gfx, "tuned"), row({"type": "TruePred"}, "generic")]}
    rows, generic_only = select_rows(lib, "gfx908")
    assert [r["library"]["value"] for r in rows] == ["tuned", "generic"] and not generic_only
    rows, generic_only = select_rows(lib, "gfx906")
    assert [r["library"]["value"] for r in rows] == ["generic"] and generic_only
    rows, _ = select_rows({"type": "Hardware", "rows": [row(gfx, "tuned")]}, "gfx906")
    assert rows == []
