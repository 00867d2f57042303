"""extract_selected: real packages (dpkg-deb built, and Debian's own librocblas4), tarballs,
folders, and an adversarial corpus that must be refused without writing outside staging."""
from __future__ import annotations

import hashlib
import io
import lzma
import subprocess
import tarfile
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.sources.manifest_load import load_manifests
from rocmrevive.sources.unpack import Limits, archive_kind, extract_selected
from tests.fixtures.aptrepo import (
    PREFIX_DEBIAN,
    ar_archive,
    build_deb,
    gfx906_names,
    incompressible,
    raw_deb,
    rocblas_library_files,
)

REPO = Path(__file__).resolve().parent.parent
PREFIX = "./" + PREFIX_DEBIAN


def gfx906(name: str) -> bool:
    return "gfx906" in name.rsplit("/", 1)[-1]


@pytest.fixture(scope="module")
def libfiles():
    return rocblas_library_files()


@pytest.fixture(scope="module")
def debs(tmp_path_factory, libfiles):
    out = tmp_path_factory.mktemp("debs")
    files = {PREFIX_DEBIAN + n: b for n, b in libfiles.items()}
    files["usr/lib/x86_64-linux-gnu/librocblas.so.4.4"] = incompressible(1 << 20)
    files["usr/share/doc/librocblas4/gfx906-notes.txt"] = b"outside the prefix: never selected\n"
    links = {"usr/lib/x86_64-linux-gnu/librocblas.so.4": "librocblas.so.4.4"}
    return {comp: build_deb(out / comp, "librocblas4", "6.4.4-4", files, compression=comp, symlinks=links)
            for comp in ("xz", "zstd", "gzip", "none")}


# --------------------------------------------------------------------------------------------
# good archives


@pytest.mark.parametrize("comp", ["xz", "zstd", "gzip", "none"])
@pytest.mark.parametrize("external", [True, False], ids=["system-tools", "python"])
def test_deb_selects_exactly_the_gfx906_files(tmp_path, debs, libfiles, comp, external):
    staged = extract_selected(debs[comp], gfx906, tmp_path / "stage", member_prefix=PREFIX, external=external)
    assert {f.name for f in staged} == gfx906_names(libfiles)
    for f in staged:
        assert f.path == tmp_path / "stage" / f.name
        assert f.path.read_bytes() == libfiles[f.name]
        assert f.sha256 == hashlib.sha256(libfiles[f.name]).hexdigest() and f.size == len(libfiles[f.name])
        assert f.mode == 0o644
    assert sorted(p.name for p in (tmp_path / "stage").iterdir()) == sorted(gfx906_names(libfiles))


def test_same_bytes_as_dpkg_deb_x(tmp_path, debs):
    subprocess.run(["dpkg-deb", "-x", str(debs["xz"]), str(tmp_path / "dpkg")], check=True)
    staged = extract_selected(debs["xz"], gfx906, tmp_path / "stage", member_prefix=PREFIX)
    ref = tmp_path / "dpkg" / PREFIX_DEBIAN
    assert {f.name for f in staged} == {p.name for p in ref.iterdir() if gfx906(p.name)}
    for f in staged:
        assert f.path.read_bytes() == (ref / f.name).read_bytes()


def test_manifest_select_on_a_package(tmp_path, debs, libfiles):
    m = load_manifests(REPO / "manifests")[0]
    staged = extract_selected(debs["xz"], m.select, tmp_path / "stage", member_prefix=PREFIX)
    assert {f.name for f in staged} == gfx906_names(libfiles)


def test_tarball_and_folder_sources(tmp_path, libfiles):
    tree = tmp_path / "tree"
    for n, b in libfiles.items():
        (tree / "opt/rocm-6.3.3/lib/rocblas/library").mkdir(parents=True, exist_ok=True)
        (tree / "opt/rocm-6.3.3/lib/rocblas/library" / n).write_bytes(b)
    tarball = tmp_path / "lib.tar.zst"
    subprocess.run(f"tar -C {tree} -cf - opt | zstd -q -o {tarball}", shell=True, check=True)
    assert archive_kind(tarball) == "tar.zst" and archive_kind(tree) == "dir"
    a = extract_selected(tarball, gfx906, tmp_path / "a", member_prefix="opt/rocm-6.3.3/lib/rocblas/library/")
    b = extract_selected(tree, gfx906, tmp_path / "b", member_prefix="./opt/rocm-6.3.3/lib/rocblas/library/")
    assert sorted((f.name, f.sha256) for f in a) == sorted((f.name, f.sha256) for f in b)
    assert len(a) == len(gfx906_names(libfiles))


def test_folder_with_selected_symlink_is_refused(tmp_path):
    lib = tmp_path / "tree/lib"
    lib.mkdir(parents=True)
    (lib / "TensileLibrary_lazy_gfx906.dat").symlink_to("/etc/passwd")
    with pytest.raises(RevError) as ei:
        extract_selected(tmp_path / "tree", gfx906, tmp_path / "stage", member_prefix="lib/")
    assert "symbolic link" in ei.value.message
    assert not (tmp_path / "stage").exists()


def test_staging_must_be_empty(tmp_path, debs):
    (tmp_path / "stage").mkdir()
    (tmp_path / "stage" / "old").write_text("x")
    with pytest.raises(RevError) as ei:
        extract_selected(debs["xz"], gfx906, tmp_path / "stage", member_prefix=PREFIX)
    assert ei.value.code == "USAGE" and "not empty" in ei.value.message
    assert (tmp_path / "stage" / "old").read_text() == "x"


# --------------------------------------------------------------------------------------------
# Debian's real librocblas4 6.4.4-4


@pytest.mark.debian
@pytest.mark.slow
def test_real_librocblas4_gives_the_140_files_of_dpkg_deb(tmp_path, debian_debs, debian_pkgs):
    deb = debian_debs["librocblas4_6.4.4-4_amd64"]
    ref = debian_pkgs["librocblas4_6.4.4-4_amd64"] / "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library"
    m = {x.id: x for x in load_manifests(REPO / "manifests")}["rocblas-4.4-gfx906"]
    src = m.source("debian-librocblas4")
    staged = extract_selected(deb, m.select, tmp_path / "stage", member_prefix=src.member_prefix)
    want = sorted(p.name for p in ref.iterdir() if "gfx906" in p.name)
    assert len(staged) == 140 == len(want) == src.expected_files
    assert sorted(f.name for f in staged) == want
    assert sum(f.size for f in staged) == 142_014_224
    for f in staged:
        data = f.path.read_bytes()
        assert data == (ref / f.name).read_bytes(), f.name
        assert hashlib.sha256(data).hexdigest() == f.sha256
    assert sorted(p.name for p in (tmp_path / "stage").iterdir()) == want


# --------------------------------------------------------------------------------------------
# the adversarial corpus


def _tar(members, fmt=tarfile.GNU_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for m in members:
            ti = tarfile.TarInfo(m["name"])
            ti.type = m.get("type", tarfile.REGTYPE)
            ti.linkname = m.get("link", "")
            ti.mode = 0o644
            data = m.get("data", b"")
            ti.size = len(data) if ti.type == tarfile.REGTYPE else 0
            if ti.type in (tarfile.CHRTYPE, tarfile.BLKTYPE):
                ti.devmajor, ti.devminor = 1, 3
            t.addfile(ti, io.BytesIO(data) if ti.type == tarfile.REGTYPE else None)
    return buf.getvalue()


def _ok(name="TensileLibrary_lazy_gfx906.dat"):
    return {"name": PREFIX + name, "data": b"\x82\xa9solutions"}


def _bomb_tar() -> bytes:
    """A selected member whose header declares 1 TiB (GNU base-256 size), and no data."""
    ti = tarfile.TarInfo(PREFIX + "TensileLibrary_Type_SS_gfx906.co")
    ti.size = 1 << 40
    return ti.tobuf(tarfile.GNU_FORMAT) + b"\0" * 4096


def _corrupt_header_tar() -> bytes:
    t = bytearray(_tar([_ok()]))
    t[0] ^= 0x20  # the name changes, the stored checksum does not
    return bytes(t)


CORPUS = {
    "traversal-in-prefix": (lambda outer: raw_deb(_tar([_ok(), {
        "name": PREFIX + "../" * 10 + str(outer).lstrip("/") + "/evil_gfx906.co", "data": b"x"}])),
                            "climbs out with '..'"),
    "traversal-elsewhere": (lambda outer: raw_deb(_tar([{"name": "./../../evil", "data": b"x"}, _ok()])),
                            "climbs out with '..'"),
    "traversal-long-gnu-name": (lambda outer: raw_deb(_tar([{
        "name": PREFIX + "a" * 120 + "/../../../../../../../../../../../../evil_gfx906.co", "data": b"x"}])),
                                "climbs out with '..'"),
    "traversal-pax-path": (lambda outer: raw_deb(_tar([{
        "name": PREFIX + "\u00e9" * 60 + "/../../../../../../../../../../evil_gfx906.co", "data": b"x"}],
        fmt=tarfile.PAX_FORMAT)), "climbs out with '..'"),
    "absolute-path": (lambda outer: raw_deb(_tar([{
        "name": "/" + PREFIX_DEBIAN + "TensileLibrary_lazy_gfx906.dat", "data": b"x"}])), "absolute path"),
    "symlink": (lambda outer: raw_deb(_tar([_ok(), {"name": PREFIX + "Kernels.so-000-gfx906.hsaco",
                                                     "type": tarfile.SYMTYPE, "link": "/etc/passwd"}])),
                "is a symbolic link -> /etc/passwd"),
    "hardlink": (lambda outer: raw_deb(_tar([_ok(), {"name": PREFIX + "Kernels.so-000-gfx906.hsaco",
                                                      "type": tarfile.LNKTYPE, "link": "etc/shadow"}])),
                 "is a hard link"),
    "device": (lambda outer: raw_deb(_tar([{"name": PREFIX + "Kernels.so-000-gfx906.hsaco",
                                            "type": tarfile.CHRTYPE}])), "is a character device"),
    "fifo": (lambda outer: raw_deb(_tar([{"name": PREFIX + "Kernels.so-000-gfx906.hsaco",
                                          "type": tarfile.FIFOTYPE}])), "is a fifo"),
    "duplicate": (lambda outer: raw_deb(_tar([_ok(), _ok()])), "appears twice"),
    "file-then-folder": (lambda outer: raw_deb(_tar([{"name": PREFIX + "a_gfx906", "data": b"1"},
                                                     {"name": PREFIX + "a_gfx906/b_gfx906", "data": b"2"}])),
                         "both a file and a folder"),
    "truncated-xz": (lambda outer: _truncated_xz(), "truncated"),
    "corrupt-zstd": (lambda outer: _corrupt_zstd(), "corrupt"),
    "truncated-ar-member": (lambda outer: raw_deb(_tar([_ok()]))[:-40], "is truncated"),
    "tar-bomb": (lambda outer: raw_deb(_bomb_tar()), "declares 1 TiB"),
    "corrupt-tar-header": (lambda outer: raw_deb(_corrupt_header_tar()), "corrupt tar header"),
    "bad-ar-header": (lambda outer: b"!<arch>\n" + b"debian-binary   " + b"garbage" * 6 + b"!!" + b"2.0\n" + b"\0" * 600,
                      "bad ar header at offset 8"),
    "not-ar": (lambda outer: b"!<arxh>\n" + b"\0" * 600, "neither a Debian package nor a tarball"),
    "wrong-first-member": (lambda outer: ar_archive([("data.tar.xz", lzma.compress(_tar([_ok()])))]),
                           "first ar member is not debian-binary"),
    "data-not-xz": (lambda outer: ar_archive([("debian-binary", b"2.0\n"), ("control.tar.gz", b""),
                                              ("data.tar.xz", b"PK\x03\x04 a zip")]), "does not hold xz data"),
}


def _truncated_xz() -> bytes:
    """A consistent ar whose data.tar.xz stream stops two thirds of the way."""
    tar = _tar([_ok(), {"name": PREFIX + "Kernels.so-000-gfx906.hsaco", "data": incompressible(200_000)}])
    xz = lzma.compress(tar)
    return ar_archive([("debian-binary", b"2.0\n"), ("control.tar.gz", b""), ("data.tar.xz", xz[: len(xz) * 2 // 3])])


def _corrupt_zstd() -> bytes:
    import zstandard

    tar = _tar([_ok(), {"name": PREFIX + "Kernels.so-000-gfx906.hsaco", "data": b"\x7fELF" * 50_000}])
    z = bytearray(zstandard.ZstdCompressor().compress(tar))
    z[len(z) // 2] ^= 0xFF
    return ar_archive([("debian-binary", b"2.0\n"), ("control.tar.gz", b""), ("data.tar.zst", bytes(z))])


@pytest.mark.parametrize("external", [True, False], ids=["system-tools", "python"])
@pytest.mark.parametrize("case", sorted(CORPUS))
def test_adversarial_archive_is_refused(tmp_path, case, external):
    outer = tmp_path / "outer"
    outer.mkdir()
    build, expect = CORPUS[case]
    art = tmp_path / f"{case}.deb"
    art.write_bytes(build(outer))
    with pytest.raises(RevError) as ei:
        extract_selected(art, gfx906, outer / "stage", member_prefix=PREFIX, external=external)
    err = ei.value
    assert err.code == "VERIFY_FAILED"
    assert "\n" not in err.message and str(art) in err.message
    assert expect in err.message, err.message
    assert list(outer.rglob("*")) == []  # nothing written outside staging, and staging is gone
    assert not (tmp_path / "evil").exists() and not (tmp_path / "evil_gfx906.co").exists()


def test_existing_staging_is_emptied_again_on_error(tmp_path):
    art = tmp_path / "dup.deb"
    art.write_bytes(raw_deb(_tar([_ok(), {"name": PREFIX + "sub/x_gfx906.co", "data": b"1"}, _ok()])))
    (tmp_path / "stage").mkdir()
    with pytest.raises(RevError):
        extract_selected(art, gfx906, tmp_path / "stage", member_prefix=PREFIX)
    assert (tmp_path / "stage").is_dir() and list((tmp_path / "stage").iterdir()) == []


def test_member_limit_is_configurable(tmp_path, debs):
    with pytest.raises(RevError) as ei:
        extract_selected(debs["xz"], gfx906, tmp_path / "stage", member_prefix=PREFIX,
                         limits=Limits(max_member_bytes=1000))
    assert "allowed for one file" in ei.value.message
    assert not (tmp_path / "stage").exists()


def test_unselected_links_and_other_prefixes_are_fine(tmp_path):
    art = tmp_path / "ok.deb"
    art.write_bytes(raw_deb(_tar([
        {"name": "./usr/lib/x86_64-linux-gnu/librocblas.so.4", "type": tarfile.SYMTYPE, "link": "/abs/target"},
        {"name": PREFIX + "TensileLibrary_Type_SS_gfx908.co", "type": tarfile.SYMTYPE, "link": "../../x"},
        {"name": "./dev/null-ish", "type": tarfile.CHRTYPE},
        _ok()])))
    staged = extract_selected(art, gfx906, tmp_path / "stage", member_prefix=PREFIX)
    assert [f.name for f in staged] == ["TensileLibrary_lazy_gfx906.dat"]


def test_subfolders_under_the_prefix(tmp_path):
    art = tmp_path / "sub.deb"
    art.write_bytes(raw_deb(_tar([{"name": PREFIX + "gfx906/TensileLibrary_lazy_gfx906.dat", "data": b"a"},
                                  {"name": PREFIX + "gfx906/x/Kernels.so-000-gfx906.hsaco", "data": b"b"}]),
                            compression="zst"))
    staged = extract_selected(art, gfx906, tmp_path / "stage", member_prefix=PREFIX)
    assert [f.name for f in staged] == ["gfx906/TensileLibrary_lazy_gfx906.dat",
                                        "gfx906/x/Kernels.so-000-gfx906.hsaco"]
    assert (tmp_path / "stage/gfx906/x/Kernels.so-000-gfx906.hsaco").read_bytes() == b"b"


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT],
                         ids=["gnu", "pax", "ustar"])
@pytest.mark.parametrize("comp", ["bz2", "gz", "zst", "none"])
def test_tar_formats_and_long_names(tmp_path, fmt, comp):
    """Long names: GNU 'L' records, pax 'path' records, and ustar's prefix field."""
    long_dir = "x" * 60 + "/" + "y" * 60 + "/"
    names = ["TensileLibrary_Type_HH_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx906.hsaco",
             long_dir + "Kernels.so-000-gfx906.hsaco"]
    art = tmp_path / "fmt.deb"
    payload = {n: incompressible(3000 + i, seed=i) for i, n in enumerate(names)}
    art.write_bytes(raw_deb(_tar([{"name": PREFIX + n, "data": d} for n, d in payload.items()]
                                 + [{"name": PREFIX + "TensileLibrary_lazy_gfx908.dat", "data": b"no"}], fmt=fmt),
                            compression=comp))
    for external in (True, False):
        staged = extract_selected(art, gfx906, tmp_path / f"s{external}", member_prefix=PREFIX, external=external)
        assert {f.name: f.path.read_bytes() for f in staged} == payload
