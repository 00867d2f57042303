"""The mutation campaign: one kind of damage per fresh copy of a real rocBLAS library (Debian's
4.4.1 and 5.2, built with lazy loading; Debian's 2.47, built without), each judged by what
Tensile's deserialisers and ROCr's loader would do with it (read from their sources: Tensile's
Serialization/*.hpp and ExactLogicLibrary, rocBLAS's tensile_host.cpp, ROCr's code object
loader). A kind that breaks serving must be caught with the file named; a kind that does not
must pass; the unmutated libraries pass (no false alarm); and the same damage staged through
``install --from`` is refused before anything is written.

A copy holds only what the gfx906 lookup reads (hard links into the fixture cache; a mutated
file is replaced, never written through the link)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import msgpack
import pytest

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.diagnose.verify import CheckStatus, Verdict, verify_copy
from rocmrevive.trees import layout as locate
from tests.machines.build import build_amd_layout_from_debian
from tests.test_tensile import HS_PLACEHOLDER as HS
from tests.test_tensile import SS_FALLBACK, link_file, rewrite

pytestmark = pytest.mark.debian

GFX906 = TargetId.parse("gfx906:sramecc+:xnack-")
LAZY = "TensileLibrary_lazy_gfx906.dat"
HELPER = "Kernels.so-000-gfx906.hsaco"
MASTER = "TensileLibrary.dat"
EAGER_CO = "TensileLibrary_gfx906.co"
HOSTS = {"441": ("librocblas.so.4.4", "librocblas.so.4"), "52": ("librocblas.so.5.2", "librocblas.so.5"),
         "247": ("librocblas.so.0.1", "librocblas.so.0")}
VERSIONS = {"441": "4.4.1", "52": "5", "247": "2.47.0"}


@dataclass(frozen=True)
class Expect:
    verdict: Verdict
    file: str | None = None  # the file a failing check must name


def breaks(file: str) -> Expect:
    return Expect(Verdict.DOES_NOT_SERVE, file)


SERVES = Expect(Verdict.SERVES)
GENERIC = Expect(Verdict.GENERIC_ONLY)


# ------------------------------------------------------------------------------------------
# copies and bytes

@pytest.fixture(scope="module")
def sources(rocblas441, rocblas52, rocblas247) -> dict[str, Path]:
    return {"441": rocblas441, "52": rocblas52, "247": rocblas247}


def needed(name: str, lazy: bool) -> bool:
    if lazy:
        return "gfx906" in name or name.endswith("_fallback.dat")
    return name == MASTER or "gfx906" in name


def fresh_copy(tmp: Path, src: Path, key: str) -> Path:
    """Debian's layout with only the gfx906 lookup's files, and the host library's real link chain."""
    libdir = tmp / "usr/lib/x86_64-linux-gnu"
    lib = libdir / "rocblas" / VERSIONS[key] / "library"
    lib.mkdir(parents=True)
    for name in os.listdir(src):
        if needed(name, key != "247"):
            link_file(src / name, lib / name)
    real, soname = HOSTS[key]
    link_file(src.parent.parent.parent / real, libdir / real)
    os.symlink(real, libdir / soname)
    return lib


def load(path: Path) -> dict:
    return msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)


def save(path: Path, doc: Any) -> None:
    rewrite(path, msgpack.packb(doc))


def nodes(doc: Any, kind: str) -> list[dict]:
    """Every node of ``type`` kind, depth first."""
    out, stack = [], [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if x.get("type") == kind:
                out.append(x)
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, list):
            stack.extend(reversed(x))
    return out


def patch(path: Path, edit: Callable[[bytearray], None]) -> None:
    data = bytearray(path.read_bytes())
    edit(data)
    rewrite(path, bytes(data))


def set_flags(path: Path, fn: Callable[[int], int]) -> None:
    def edit(d: bytearray) -> None:
        d[48:52] = fn(int.from_bytes(d[48:52], "little")).to_bytes(4, "little")
    patch(path, edit)


def elf_of(lib: Path) -> str:
    """A raw-ELF code object of the HH placeholder (4.4.1: its .co; 5.2's .co are CCOB: its .hsaco)."""
    for name in (HS + ".co", HS + ".hsaco"):
        if (lib / name).read_bytes()[:4] == b"\x7fELF":
            return name
    raise AssertionError("no raw ELF code object for " + HS)


def first_note_desc(data: bytes) -> int:
    """The offset of the first NT_AMDGPU_METADATA note's msgpack descriptor."""
    at = 0
    while True:
        at = data.index(b"AMDGPU\x00\x00", at + 1)
        if int.from_bytes(data[at - 4:at], "little") == 32:
            return at + 8


# ------------------------------------------------------------------------------------------
# the kinds of damage: name -> (libraries, mutation returning what it must do)

KINDS: dict[str, tuple[tuple[str, ...], Callable[[Path, Path], Expect]]] = {}
BOTH_LAZY = ("441", "52")


def kind(name: str, libs: tuple[str, ...] = BOTH_LAZY):
    def register(fn):
        KINDS[name] = (libs, fn)
        return fn
    return register


def _placeholder(lib: Path, edit: Callable[[dict], None], name: str = HS + ".dat") -> Expect:
    doc = load(lib / name)
    edit(doc)
    save(lib / name, doc)
    return breaks(name)


def _table(doc: dict) -> list[dict]:
    return nodes(doc["library"], "Matching")[0]["table"]


@kind("placeholder-solutions-emptied")
def _(lib, src):
    return _placeholder(lib, lambda d: d.update(solutions=[]))


@kind("placeholder-referenced-solution-removed")
def _(lib, src):
    def edit(d):
        idx = _table(d)[0]["index"]
        d["solutions"] = [s for s in d["solutions"] if s["index"] != idx]
    return _placeholder(lib, edit)


@kind("placeholder-solution-renumbered")
def _(lib, src):
    def edit(d):
        idx = _table(d)[0]["index"]
        next(s for s in d["solutions"] if s["index"] == idx)["index"] = idx + 10**9
    return _placeholder(lib, edit)


@kind("placeholder-table-index-out-of-list")
def _(lib, src):
    return _placeholder(lib, lambda d: _table(d)[0].update(index=2**31 - 1))


@kind("placeholder-table-key-width")
def _(lib, src):
    return _placeholder(lib, lambda d: _table(d)[0].update(key=_table(d)[0]["key"][:-1]))


@kind("placeholder-node-type-unknown")
def _(lib, src):
    return _placeholder(lib, lambda d: nodes(d["library"], "Matching")[0].update(type="Matchin"))


@kind("placeholder-predicate-type-unknown")
def _(lib, src):
    return _placeholder(lib, lambda d: nodes(d["library"], "Matching")[0]["properties"][0].update(type="FreeSizeZ"))


@kind("placeholder-matching-without-properties")
def _(lib, src):
    return _placeholder(lib, lambda d: nodes(d["library"], "Matching")[0].update(properties=[]))


@kind("placeholder-distance-unknown")
def _(lib, src):
    return _placeholder(lib, lambda d: nodes(d["library"], "Matching")[0].update(distance="Chebyshev"))


@kind("placeholder-row-without-library")
def _(lib, src):
    return _placeholder(lib, lambda d: nodes(d["library"], "Problem")[0]["rows"][0].pop("library"))


@kind("placeholder-solutions-not-a-list")
def _(lib, src):
    return _placeholder(lib, lambda d: d.update(solutions={"0": 1}))


@kind("placeholder-truncated")
def _(lib, src):
    patch(lib / (HS + ".dat"), lambda d: d.__delitem__(slice(len(d) // 2, None)))
    return breaks(HS + ".dat")


@kind("placeholder-not-msgpack")
def _(lib, src):
    rewrite(lib / (HS + ".dat"), b"# not a Tensile library\n")
    return breaks(HS + ".dat")


@kind("placeholder-deleted")
def _(lib, src):
    (lib / (HS + ".dat")).unlink()
    return breaks(HS + ".dat")


@kind("placeholder-kernel-renamed")
def _(lib, src):
    doc = load(lib / (HS + ".dat"))
    next(s for s in doc["solutions"] if not s["sizeMapping"]["sourceKernel"])["name"] += "_GONE"
    save(lib / (HS + ".dat"), doc)
    return breaks(HS + ".co")


def _lazy(lib: Path, edit: Callable[[dict], Any]) -> Expect:
    doc = load(lib / LAZY)
    out = edit(doc)
    save(lib / LAZY, doc)
    return out if isinstance(out, Expect) else breaks(LAZY)


@kind("lazy-index-deleted")
def _(lib, src):
    (lib / LAZY).unlink()
    return breaks(LAZY)


@kind("lazy-index-truncated")
def _(lib, src):
    patch(lib / LAZY, lambda d: d.__delitem__(slice(len(d) * 2 // 3, None)))
    return breaks(LAZY)


@kind("lazy-index-not-msgpack")
def _(lib, src):
    rewrite(lib / LAZY, b"\xc1" * 64)
    return breaks(LAZY)


@kind("lazy-index-placeholder-renamed")
def _(lib, src):
    def edit(d):
        ph = nodes(d["library"], "Placeholder")[0]
        ph["value"] += "_gone"
        return breaks(ph["value"] + ".dat")
    return _lazy(lib, edit)


@kind("lazy-index-node-type-unknown")
def _(lib, src):
    return _lazy(lib, lambda d: nodes(d["library"], "Placeholder")[0].update(type="Placeholdr"))


@kind("lazy-index-predicate-type-unknown")
def _(lib, src):
    return _lazy(lib, lambda d: nodes(d["library"], "Problem")[0]["rows"][0]["predicate"].update(type="TruePredicate"))


@kind("lazy-index-rows-emptied")
def _(lib, src):
    return _lazy(lib, lambda d: d["library"].update(rows=[]))


@kind("lazy-index-problem-map-without-map")
def _(lib, src):
    return _lazy(lib, lambda d: nodes(d["library"], "ProblemMap")[0].pop("map"))


@kind("lazy-index-single-without-solution")
def _(lib, src):
    def edit(d):
        ph = nodes(d["library"], "Placeholder")[0]
        ph.clear()
        ph.update(type="Single", index=7)
    return _lazy(lib, edit)


@kind("lazy-index-processor-renamed")  # the TruePred row is left: fallback placeholders only
def _(lib, src):
    return _lazy(lib, lambda d: nodes(d["library"]["rows"][0]["predicate"], "Processor")[0].update(value="gfx908")
                 or GENERIC)


@kind("lazy-index-processor-row-removed")
def _(lib, src):
    return _lazy(lib, lambda d: d["library"].update(rows=d["library"]["rows"][1:]) or GENERIC)


@kind("lazy-index-all-rows-other-processor")
def _(lib, src):
    def edit(d):
        d["library"]["rows"] = [r for r in d["library"]["rows"] if r["predicate"]["type"] != "TruePred"]
        nodes(d["library"]["rows"][0]["predicate"], "Processor")[0]["value"] = "gfx908"
    return _lazy(lib, edit)


@kind("lazy-index-hardware-row-true-for-all")  # the same placeholders, reached by every GPU: serves
def _(lib, src):
    return _lazy(lib, lambda d: d["library"]["rows"][0].update(predicate={"type": "TruePred"}) or SERVES)


@kind("lazy-index-repacked")  # the same tree written again (msgpack floats widened): serves
def _(lib, src):
    return _lazy(lib, lambda d: SERVES)


@kind("lazy-index-of-gfx908")  # only its TruePred rows reach a gfx906: the generic fallback
def _(lib, src):
    rewrite(lib / LAZY, (src / "TensileLibrary_lazy_gfx908.dat").read_bytes())
    return GENERIC


@kind("code-object-deleted")
def _(lib, src):
    (lib / (HS + ".co")).unlink()
    return breaks(HS + ".co")


@kind("code-object-truncated")
def _(lib, src):
    name = elf_of(lib)
    patch(lib / name, lambda d: d.__delitem__(slice(4096, None)))
    return breaks(name)


@kind("code-object-ccob-truncated", ("52",))
def _(lib, src):
    patch(lib / (HS + ".co"), lambda d: d.__delitem__(slice(len(d) // 2, None)))
    return breaks(HS + ".co")


@kind("code-object-osabi-not-hsa")
def _(lib, src):
    name = elf_of(lib)
    patch(lib / name, lambda d: d.__setitem__(7, 0))
    return breaks(name)


@kind("code-object-abi-version-unknown")
def _(lib, src):
    name = elf_of(lib)
    patch(lib / name, lambda d: d.__setitem__(8, 9))
    return breaks(name)


@kind("code-object-class-32")
def _(lib, src):
    name = elf_of(lib)
    patch(lib / name, lambda d: d.__setitem__(4, 1))
    return breaks(name)


@kind("code-object-machine-x86")
def _(lib, src):
    name = elf_of(lib)
    patch(lib / name, lambda d: d.__setitem__(slice(18, 20), (62).to_bytes(2, "little")))
    return breaks(name)


@kind("code-object-mach-gfx908")
def _(lib, src):
    name = elf_of(lib)
    set_flags(lib / name, lambda f: (f & ~0xFF) | 0x30)
    return breaks(name)


@kind("code-object-xnack-on")
def _(lib, src):
    name = elf_of(lib)
    set_flags(lib / name, lambda f: (f & ~0x300) | 0x300)
    return breaks(name)


@kind("code-object-sramecc-off")
def _(lib, src):
    name = elf_of(lib)
    set_flags(lib / name, lambda f: (f & ~0xC00) | 0x800)
    return breaks(name)


@kind("code-object-exact-mode-note-plain")  # e_flags gfx906:sramecc+:xnack-, note gfx906: serves
def _(lib, src):
    set_flags(lib / elf_of(lib), lambda f: (f & ~0xF00) | 0xC00 | 0x200)
    return SERVES


@kind("code-object-kd-symbols-renamed")
def _(lib, src):
    name = elf_of(lib)
    patch(lib / name, lambda d: d.__setitem__(slice(None), d.replace(b".kd\x00", b".kx\x00")))
    return breaks(name)


@kind("code-object-metadata-names-renamed")
def _(lib, src):
    name = elf_of(lib)
    patch(lib / name, lambda d: d.__setitem__(slice(None), d.replace(b"\xa5.name", b"\xa5.nama")))
    return breaks(name)


@kind("code-object-note-not-msgpack")
def _(lib, src):
    name = elf_of(lib)
    patch(lib / name, lambda d: d.__setitem__(first_note_desc(bytes(d)), 0xC1))
    return breaks(name)


@kind("code-object-section-table-past-end")
def _(lib, src):
    name = elf_of(lib)
    patch(lib / name, lambda d: d.__setitem__(slice(40, 48), (len(d) + 64).to_bytes(8, "little")))
    return breaks(name)


@kind("code-object-not-elf")
def _(lib, src):
    rewrite(lib / (HS + ".co"), os.urandom(4096))
    return breaks(HS + ".co")


@kind("code-object-from-gfx908")
def _(lib, src):
    name = elf_of(lib)
    rewrite(lib / name, (src / name.replace("gfx906", "gfx908")).read_bytes())
    return breaks(name)


@kind("code-object-unreferenced-extra")  # a left-over file nothing loads: a warning, serves
def _(lib, src):
    (lib / "TensileLibrary_Type_QQ_Leftover_gfx906.co").write_bytes((lib / (HS + ".co")).read_bytes())
    return SERVES


@kind("helper-kernels-deleted")
def _(lib, src):
    (lib / HELPER).unlink()
    return breaks(HELPER)


@kind("helper-kernels-from-gfx908")
def _(lib, src):
    rewrite(lib / HELPER, (src / HELPER.replace("gfx906", "gfx908")).read_bytes())
    return breaks(HELPER)


@kind("fallback-code-object-deleted")
def _(lib, src):
    (lib / (SS_FALLBACK + "_gfx906.hsaco")).unlink()
    return breaks(SS_FALLBACK + "_gfx906.hsaco")


@kind("fallback-placeholder-solutions-emptied")
def _(lib, src):
    return _placeholder(lib, lambda d: d.update(solutions=[]), SS_FALLBACK + ".dat")


@kind("fallback-placeholder-of-another-release", ("441",))
def _(lib, src):
    other = src.parent.parent.parent.parent.parent.parent.parent
    five = other / "librocblas5_7.2.4-1~exp1_amd64/usr/lib/x86_64-linux-gnu/rocblas/5/library"
    rewrite(lib / (SS_FALLBACK + ".dat"), (five / (SS_FALLBACK + ".dat")).read_bytes())
    return breaks(SS_FALLBACK + "_gfx906.hsaco")


def _host(key: str, lib: Path) -> Path:
    return lib.parent.parent.parent


@kind("host-library-gone-link-dangles", ("441", "52", "247"))
def _(lib, src):
    key = next(k for k, (real, _so) in HOSTS.items() if (_host(k, lib) / real).exists())
    (_host(key, lib) / HOSTS[key][0]).unlink()
    return breaks(HOSTS[key][1])


@kind("host-soname-link-retargeted", BOTH_LAZY)
def _(lib, src):
    key = next(k for k, (real, _so) in HOSTS.items() if (_host(k, lib) / real).exists())
    so = _host(key, lib) / HOSTS[key][1]
    so.unlink()
    os.symlink(HOSTS[key][0] + ".99", so)
    return breaks(HOSTS[key][1])


# ---- the library built without lazy loading (2.47) ----------------------------------------

@pytest.fixture(scope="module")
def master247(rocblas247) -> dict:
    return load(rocblas247 / MASTER)


def _gfx906_row(doc: dict) -> dict:
    return next(r for r in doc["library"]["rows"] if "gfx906" in json.dumps(r["predicate"]))


def _master(lib: Path, doc: dict, solutions=None, rows=None) -> None:
    library = dict(doc["library"], rows=rows if rows is not None else doc["library"]["rows"])
    save(lib / MASTER, {"solutions": solutions if solutions is not None else doc["solutions"], "library": library})


@kind("master-referenced-solution-removed", ("247",))
def _(lib, src, doc):
    idx = nodes(_gfx906_row(doc)["library"], "Matching")[0]["table"][0]["index"]
    _master(lib, doc, solutions=[s for s in doc["solutions"] if s["index"] != idx])
    return breaks(MASTER)


@kind("master-processor-row-removed", ("247",))  # only the TruePred row is left: the generic fallback
def _(lib, src, doc):
    _master(lib, doc, rows=[r for r in doc["library"]["rows"] if r is not _gfx906_row(doc)])
    return GENERIC


@kind("master-processor-and-generic-rows-removed", ("247",))
def _(lib, src, doc):
    row = _gfx906_row(doc)
    _master(lib, doc, rows=[r for r in doc["library"]["rows"] if r is not row and r["predicate"]["type"] != "TruePred"])
    return breaks(MASTER)


@kind("master-kernel-renamed", ("247",))
def _(lib, src, doc):
    idx = nodes(_gfx906_row(doc)["library"], "Matching")[0]["table"][0]["index"]
    sols = [dict(s, name=s["name"] + "_GONE") if s["index"] == idx else s for s in doc["solutions"]]
    _master(lib, doc, solutions=sols)
    return breaks(EAGER_CO)


@kind("master-truncated", ("247",))
def _(lib, src, doc):
    patch(lib / MASTER, lambda d: d.__delitem__(slice(len(d) // 3, None)))
    return breaks(MASTER)


@kind("master-deleted", ("247",))
def _(lib, src, doc):
    (lib / MASTER).unlink()
    return breaks(LAZY)


@kind("eager-code-object-deleted", ("247",))
def _(lib, src, doc):
    (lib / EAGER_CO).unlink()
    return breaks(EAGER_CO)


@kind("eager-code-object-osabi-not-hsa", ("247",))
def _(lib, src, doc):
    patch(lib / EAGER_CO, lambda d: d.__setitem__(7, 0))
    return breaks(EAGER_CO)


@kind("eager-code-object-mach-gfx908", ("247",))
def _(lib, src, doc):
    set_flags(lib / EAGER_CO, lambda f: (f & ~0xFF) | 0x30)
    return breaks(EAGER_CO)


@kind("eager-helper-kernels-deleted", ("247",))
def _(lib, src, doc):
    (lib / HELPER).unlink()
    return breaks(HELPER)


CASES = [(k, lib) for k, (libs, _fn) in KINDS.items() for lib in libs]


# ------------------------------------------------------------------------------------------
# the campaign

def judge(lib: Path) -> tuple[Verdict, set[str], dict]:
    res = verify_copy(lib, [GFX906], host_library=locate.rocblas_host_library(lib), show=lambda p: p.name)
    (dev,) = res.devices
    named = {o["file"] for c in dev.checks if c.status == CheckStatus.FAIL for o in c.offenders}
    return dev.verdict, named, dev.to_json()


@pytest.mark.parametrize("key", ["441", "52", "247"])
def test_the_real_libraries_serve_gfx906(tmp_path, sources, key):
    """0 false alarms: each unmutated library, in the same minimal copy the mutations use."""
    verdict, named, doc = judge(fresh_copy(tmp_path, sources[key], key))
    assert verdict == Verdict.SERVES and not named, doc
    if key == "247":
        assert doc["tensile"]["lazy"] is False and doc["tensile"]["kernels_found"] == doc["tensile"]["solutions"] == 7963


@pytest.mark.parametrize("name,key", CASES, ids=[f"{k}-{lib}" for k, lib in CASES])
def test_each_mutation_gets_the_runtime_verdict(tmp_path, sources, request, name, key):
    lib = fresh_copy(tmp_path, sources[key], key)
    mutate = KINDS[name][1]
    want = mutate(lib, sources[key], request.getfixturevalue("master247")) if key == "247" and name.startswith(
        ("master", "eager")) else mutate(lib, sources[key])
    verdict, named, doc = judge(lib)
    assert verdict == want.verdict, json.dumps(doc, default=str)[:3000]
    if want.file is not None:
        assert want.file in named, (named, doc)


# kinds that leave rocBLAS serving gfx906 (fully, or through the generic fallback only)
NOT_BREAKING = {"lazy-index-processor-renamed", "lazy-index-processor-row-removed", "lazy-index-hardware-row-true-for-all",
                "lazy-index-repacked", "lazy-index-of-gfx908", "code-object-exact-mode-note-plain",
                "code-object-unreferenced-extra", "master-processor-row-removed"}


def test_the_campaign_is_at_least_forty_kinds():
    assert NOT_BREAKING <= set(KINDS)
    assert len(KINDS) - len(NOT_BREAKING) >= 40 and {lib for _k, lib in CASES} == {"441", "52", "247"}


# ------------------------------------------------------------------------------------------
# the same damage staged through install --from: refused, nothing written

def tree_hash(top: Path) -> str:
    from rocmrevive.txn.fsutil import tree_hash as _tree_hash

    return _tree_hash(top)


STAGED = ["placeholder-referenced-solution-removed", "lazy-index-node-type-unknown", "code-object-osabi-not-hsa",
          "code-object-kd-symbols-renamed"]


@pytest.mark.parametrize("name", STAGED)
def test_install_from_a_build_with_one_breaking_change_is_refused(tmp_path, debian_pkgs, rocblas441, name):
    root = build_amd_layout_from_debian(tmp_path / "m", debian_pkgs["librocblas4_6.4.4-4_amd64"])
    build = tmp_path / "build"  # laid out as the package is: the shipped manifest's member prefix
    lib = build / "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library"
    lib.mkdir(parents=True)
    for f in rocblas441.iterdir():
        if "gfx906" in f.name:
            link_file(f, lib / f.name)
    want = KINDS[name][1](lib, rocblas441)
    before = tree_hash(root / "opt")
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "--json", "install",
                        "--yes", "--from", str(build), "--cache", str(tmp_path / "cache")],
                       capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    doc = json.loads(r.stdout)
    assert r.returncode == 6 and doc["error"]["code"] == "VERIFY_FAILED", (r.returncode, r.stdout[-3000:])
    assert want.file in doc["error"]["message"], doc["error"]["message"]
    assert tree_hash(root / "opt") == before
    assert not (root / "var/lib/rocmrevive/tx").exists() or not any((root / "var/lib/rocmrevive/tx").iterdir())
