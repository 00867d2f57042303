"""Library components in manifests (docs/grafts.md): the shipped ones against Debian's real
packages, the schema's rules with file and line, and dpkg ownership/diversions under a root
(with the real dpkg-divert)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rocmrevive.diagnose.audit import graft_remedy_text
from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.sources.manifest_load import check_manifests, load_manifests
from rocmrevive.txn import divert
from tests.conftest import CACHE, REPO

SHIPPED = REPO / "manifests"
LIBRARY_MANIFESTS = {  # id -> (soname, package file, the real file in the package)
    "rocsparse-6.4-gfx906": ("librocsparse.so.1", "librocsparse1_6.4.3-3_amd64", "librocsparse.so.1.0"),
    "rocsolver-6.4-gfx906": ("librocsolver.so.0", "librocsolver0_6.4.3-2+b1_amd64", "librocsolver.so.0.4"),
    "rocfft-6.4-gfx906": ("librocfft.so.0", "librocfft0_6.4.3-1+b1_amd64", "librocfft.so.0.1"),
    "rocrand-6.4-gfx906": ("librocrand.so.1", "librocrand1_6.4.3-1_amd64", "librocrand.so.1.1"),
}


@pytest.fixture(scope="module")
def shipped():
    return {m.id: m for m in load_manifests(SHIPPED)}


def test_shipped_library_manifests(shipped):
    for mid, (soname, _pkg, _real) in LIBRARY_MANIFESTS.items():
        m = shipped[mid]
        (comp,) = m.components
        assert (comp.kind, comp.soname, m.target, m.rocblas_versions) == ("library", soname, "gfx906", None)
        (src,) = m.sources
        assert src.rocm_version is not None and str(src.rocm_version) == "6.4.3"
        assert src.compatible_with_rocm("6.4.0") and src.compatible_with_rocm("6.4.3")
        assert not src.compatible_with_rocm("6.3.3") and not src.compatible_with_rocm("7.0.2")
        assert m.sources_for_rocm("6.4.3") == [src] and m.sources_for_rocm("7.2.0") == []
        assert src.describe().endswith("(Debian, ROCm 6.4.3)")
        assert m.to_json()["rocblas_versions"] is None and m.to_json()["components"][0]["soname"] == soname
        assert not m.components_of("tensile")
    # the rocBLAS manifests are untouched by the new kind
    m4 = shipped["rocblas-4.4-gfx906"]
    assert [c.kind for c in m4.components] == ["tensile"] and m4.sources[0].rocm_versions is None
    assert m4.sources[0].compatible_with_rocm("6.4.3")  # no ROCm range: any
    assert "not load" in shipped["rocsolver-6.4-gfx906"].sources[0].note.lower() or \
        "refused" in shipped["rocsolver-6.4-gfx906"].sources[0].note


@pytest.mark.debian
def test_pins_and_selection_are_the_real_packages(shipped):
    # the packages and their unpacked folders (reused when the cache holds them as pinned)
    r = subprocess.run(["bash", str(REPO / "tests/fixtures/fetch_hostlib_debs.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    for mid, (soname, pkg, real) in LIBRARY_MANIFESTS.items():
        deb = CACHE / "debs" / f"{pkg}.deb"
        unpacked = CACHE / "unpacked" / pkg
        assert deb.is_file() and unpacked.is_dir(), pkg
        (src,) = shipped[mid].sources
        h = hashlib.sha256()
        with open(deb, "rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
        assert (h.hexdigest(), deb.stat().st_size) == (src.sha256, src.size), mid
        assert src.filename.rsplit("/", 1)[-1] == deb.name
        folder = unpacked / src.member_prefix[2:]
        (comp,) = shipped[mid].components
        picked = [p.name for p in folder.iterdir() if comp.select(p.name)]
        assert picked == [real] and len(picked) == src.expected_files
        # the one picked is the file the package's SONAME link leads to, not the link
        assert os.readlink(folder / soname) == real and not (folder / real).is_symlink()


GOOD = (SHIPPED / "rocfft-6.4-gfx906.toml").read_text()


def _errors(tmp_path: Path, text: str) -> list[str]:
    d = tmp_path / "mf"
    d.mkdir(exist_ok=True)
    (d / "m.toml").write_text(text)
    ms, errors = check_manifests(d)
    assert ms == [] or not errors
    return errors


def _line(text: str, needle: str) -> int:
    """Line of the first (or, for "needle#N", the N-th) line containing needle."""
    needle, _, nth = needle.partition("#")
    return [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln][int(nth or 1) - 1]


BAD = [  # (replace this, with this, the line to blame contains, message contains)
    ('soname = "librocfft.so.0"\n', "", '[[components]]', "missing key 'soname'"),
    ('soname = "librocfft.so.0"', 'soname = "rocfft"', 'soname = "rocfft"', "is not a shared library's SONAME"),
    ('files = ["librocfft.so.0.*"]', 'files = ["librocfft*"]', 'files = ["librocfft*"]',
     "must be the library's file: librocfft.so.0 or librocfft.so.0.<version>"),
    ('files = ["librocfft.so.0.*"]', 'files = ["libroc*.so.0.1"]', 'files = ["libroc*', "must be the library's file"),
    ('rocm_versions = ">=6.4.0,<6.5"\nfiles = 1', 'files = 1', '[[sources]]', "missing key 'rocm_versions'"),
    ('rocm_version = "6.4.3"\n', "", '[[sources]]', "missing key 'rocm_version'"),
    ('rocm_version = "6.4.3"', 'rocm_version = "6.3.3"', 'rocm_versions = ">=6.4.0,<6.5"#2',
     "does not contain the source's own ROCm 6.3.3"),
    ('kind = "library"', 'kind = "tensile"', 'soname = "librocfft.so.0"', "only library components name a soname"),
]


@pytest.mark.parametrize("old,new,blame,msg", BAD, ids=[b[3] for b in BAD])
def test_library_component_rules(tmp_path, old, new, blame, msg):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    errors = _errors(tmp_path, text)
    hits = [e for e in errors if msg in e]
    assert hits, errors
    assert hits[0].startswith(f"{tmp_path / 'mf' / 'm.toml'}:{_line(text, blame)}: "), (hits[0], _line(text, blame))


def test_cross_version_library_source_must_say_so(tmp_path):
    text = GOOD.replace('rocm_version = "6.4.3"', 'rocm_version = "6.3.3"', 1) \
               .replace('rocm_versions = ">=6.4.0,<6.5"\nfiles', 'rocm_versions = ">=6.3.0,<6.5"\nfiles', 1)
    errors = _errors(tmp_path, text)
    assert any("ROCm 6.3.3 is outside this manifest's rocm_versions >=6.4.0,<6.5: mark the source "
               "cross_version = true" in e for e in errors), errors
    text2 = text.replace("files = 1\n", 'files = 1\ncross_version = true\nnote = "built for 6.3"\n', 1)
    assert _errors(tmp_path, text2) == []
    (m,) = load_manifests(tmp_path / "mf")
    assert m.sources[0].cross_version and m.sources_for_rocm("6.4.3") == []  # never picked by itself


def test_tensile_manifests_still_need_rocblas_versions(tmp_path):
    text = (SHIPPED / "rocblas-4.4-gfx906.toml").read_text().replace('rocblas_versions = ">=4.4.0,<4.5"\n', "")
    assert any("missing key 'rocblas_versions'" in e for e in _errors(tmp_path, text))


def test_select_kind_keeps_the_kinds_apart(tmp_path):
    """A manifest may carry both kinds (librocblas4 holds the Tensile files and librocblas.so.4):
    each installer path selects only its own."""
    body = (SHIPPED / "rocblas-4.4-gfx906.toml").read_text()
    head, sources = body.split("[[sources]]", 1)
    text = head + '[[components]]\nkind = "library"\nsoname = "librocblas.so.4"\nfiles = ["librocblas.so.4.*"]\n\n' \
        + "[[sources]]" + sources
    assert _errors(tmp_path, text) == []
    (m,) = load_manifests(tmp_path / "mf")
    assert m.select("librocblas.so.4.4") and m.select("TensileLibrary_lazy_gfx906.dat")
    assert m.select_kind("library")("librocblas.so.4.4") and not m.select_kind("library")("TensileLibrary_lazy_gfx906.dat")
    assert m.select_kind("tensile")("TensileLibrary_lazy_gfx906.dat") and not m.select_kind("tensile")("librocblas.so.4.4")
    assert not m.select_kind("library")("librocblas.so.4")  # the link is never selected


# ------------------------------------------------------------------------------------------
# dpkg ownership and diversions under a root

def _dpkg_root(tmp_path: Path) -> Root:
    r = tmp_path / "root"
    (r / "var/lib/dpkg/info").mkdir(parents=True)
    (r / "opt/rocm-6.4.3/lib").mkdir(parents=True)
    (r / "opt/rocm-6.4.3/lib/librocsparse.so.1.0.60403").write_bytes(b"\x7fELF amd")
    (r / "var/lib/dpkg/info/rocm-core.list").write_text("/.\n/opt\n/opt/rocm-6.4.3\n")
    (r / "var/lib/dpkg/info/rocsparse:amd64.list").write_text(
        "/opt/rocm-6.4.3/lib\n/opt/rocm-6.4.3/lib/librocsparse.so.1.0.60403\n/opt/rocm-6.4.3/lib/librocsparse.so.1")
    return Root(r)


def test_owner_of_reads_the_file_lists(tmp_path):
    root = _dpkg_root(tmp_path)
    own = divert.owner_of(root, "/opt/rocm-6.4.3/lib/librocsparse.so.1.0.60403")
    assert (own.dpkg, own.package, own.diverted_by) == (True, "rocsparse", None)
    assert own.divert_path == "/opt/rocm-6.4.3/lib/librocsparse.so.1.0.60403.rocmrevive-orig"
    assert divert.owner_of(root, "/opt/rocm-6.4.3/lib/librocsparse.so.1.0").package is None  # a prefix is not a match
    assert divert.owner_of(root, "/opt/rocm-6.4.3/lib/other", aliases=("/opt/rocm-6.4.3/lib/librocsparse.so.1",)
                           ).package == "rocsparse"
    assert divert.owner_of(Root(tmp_path / "nodpkg"), "/x").dpkg is False
    # merged /usr: the package lists /lib/..., the file is found as /usr/lib/...
    root.path("/var/lib/dpkg/info/libfoo1:amd64.list").write_text("/lib/x86_64-linux-gnu/libfoo.so.1\n")
    assert divert.owner_of(root, "/usr/lib/x86_64-linux-gnu/libfoo.so.1").package == "libfoo1"


def test_foreign_diversion_is_refused(tmp_path):
    root = _dpkg_root(tmp_path)
    f = "/opt/rocm-6.4.3/lib/librocsparse.so.1.0.60403"
    (root.path("/var/lib/dpkg/diversions")).write_text(f"{f}\n{f}.mine\n:\n")
    own = divert.owner_of(root, f)
    assert (own.diverted_by, own.divert_to) == ("", f + ".mine")
    with pytest.raises(RevError) as ei:
        divert.can_divert(root, own)
    assert ei.value.code == "VERIFY_FAILED" and "already diverted by a local diversion" in ei.value.message


@pytest.mark.skipif(shutil.which("dpkg-divert") is None, reason="dpkg-divert is not installed")
def test_add_and_remove_with_the_real_dpkg_divert(tmp_path):
    root = _dpkg_root(tmp_path)
    f = "/opt/rocm-6.4.3/lib/librocsparse.so.1.0.60403"
    assert divert.can_divert(root, divert.owner_of(root, f)) == (True, "")
    divert.add_diversion(root, f)
    divert.add_diversion(root, f)  # idempotent
    assert divert.read_diversions(root) == [(f, f + ".rocmrevive-orig", "rocmrevive")]
    assert divert.is_diverted(root, f)
    listed = subprocess.run(["dpkg-divert", "--root", str(root.base), "--truename", f], capture_output=True,
                            text=True).stdout.strip()
    assert listed == f + ".rocmrevive-orig"
    assert root.path(f).read_bytes() == b"\x7fELF amd"  # --no-rename: nothing moved
    divert.remove_diversion(root, f)
    divert.remove_diversion(root, f)
    assert divert.read_diversions(root) == [] and not divert.is_diverted(root, f)


def test_graft_remedy_text():
    base = {"manifest": "rocsolver-6.4-gfx906", "soname": "librocsolver.so.0",
            "source": "librocsolver0 6.4.3-2+b1 (Debian, ROCm 6.4.3)"}
    t = graft_remedy_text({**base, "abi": "refused", "lines": ["needs GLIBC_2.43 (libm.so.6), x", "b"]}, "use the CPU")
    assert t == ("rocmrevive's source librocsolver0 6.4.3-2+b1 (Debian, ROCm 6.4.3) (rocsolver-6.4-gfx906) does not "
                 "load here: needs GLIBC_2.43 (libm.so.6), x (+1 more); meanwhile: use the CPU")
    assert graft_remedy_text({**base, "abi": "loads"}, "w").startswith("sudo rocmrevive install (grafts librocsolver0")
    assert "install --check` fetches it" in graft_remedy_text({**base, "abi": "not-fetched"}, "w")
