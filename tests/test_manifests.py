"""Manifests: the shipped ones against Debian's real packages, and line-precise validation."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.errors import RevError
from rocmrevive.sources.cache import sha256_file
from rocmrevive.sources.manifest_load import check_manifests, load_manifests
from tests.fixtures import fixcache
from tests.fixtures.fetched import fetched, gfx906_files

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "manifests"
TRIPLET = "usr/lib/x86_64-linux-gnu"


@pytest.fixture(scope="module")
def shipped():
    return {m.id: m for m in load_manifests(SHIPPED)}


def test_shipped_manifests_load(shipped):
    assert set(shipped) == {"rocblas-4.4-gfx906", "rocblas-5-gfx906", "rocfft-6.4-gfx906",
                            "rocrand-6.4-gfx906", "rocsolver-6.4-gfx906", "rocsparse-6.4-gfx906"}
    m4 = shipped["rocblas-4.4-gfx906"]
    assert m4.target == "gfx906"
    assert [s.name for s in m4.sources] == ["debian-librocblas4", "amd-rocblas-4.3.0-rocm6.3.3"]
    assert set(m4.layouts) == {"amd", "debian", "torch"} and m4.layouts["amd"] == "lib/rocblas/library"
    assert m4.components[0].kind == "tensile"
    amd = m4.source("amd-rocblas-4.3.0-rocm6.3.3")
    assert amd.signed_by == "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C" and not amd.pinned
    assert amd.repo.startswith("https://repo.radeon.com/")


def test_version_matching_is_honest(shipped):
    m4, m5 = shipped["rocblas-4.4-gfx906"], shipped["rocblas-5-gfx906"]
    deb, amd = m4.sources
    for tree in ("4.4.0", "4.4.1"):
        assert m4.rocblas_versions.contains(tree)
        assert deb.compatible_with(tree) and not amd.compatible_with(tree)
        assert m4.sources_for(tree) == [deb]
    assert amd.cross_version and not deb.cross_version
    assert "NOT version-matched" in amd.note
    assert m4.sources_for() == [deb]  # cross-version sources are never picked by default
    assert amd.compatible_with("4.3.0") and not deb.compatible_with("4.3.0")
    (deb5,) = m5.sources
    assert deb5.compatible_with("5.2.0") and not deb5.compatible_with("5.0.0")
    assert m4.rocm_versions.contains("6.4.3") and not m4.rocm_versions.contains("7.0.0")


@pytest.mark.debian
def test_pins_are_the_real_packages(shipped, debian_debs):
    """The shipped pins are the fixtures' pins; the fetched file is that pin, or (drifted: the
    suite moved on and the snapshot archive could not serve it) the stand-in it recorded."""
    for mid, src_name, deb in [("rocblas-4.4-gfx906", "debian-librocblas4", "librocblas4_6.4.4-4_amd64"),
                               ("rocblas-5-gfx906", "debian-librocblas5", "librocblas5_7.2.4-1~exp1_amd64")]:
        s = shipped[mid].source(src_name)
        (pinned,) = [p for p in fixcache.pins("rocm", drift=False) if p.deb[:-4] == deb]
        assert (pinned.version, pinned.sha256, pinned.size, pinned.sha1) == (s.version, s.sha256, s.size, s.sha1)
        assert s.filename.rsplit("/", 1)[-1] == pinned.deb
        got = fetched(deb)
        assert sha256_file(debian_debs[deb]) == (got.sha256, got.size) and debian_debs[deb].name == got.deb


@pytest.mark.debian
def test_select_picks_exactly_the_gfx906_files(shipped, debian_pkgs):
    cases = [("rocblas-4.4-gfx906", "librocblas4_6.4.4-4_amd64", "rocblas/4.4.1/library"),
             ("rocblas-5-gfx906", "librocblas5_7.2.4-1~exp1_amd64", "rocblas/5/library")]
    for mid, pkg, sub in cases:
        m = shipped[mid]
        lib = debian_pkgs[pkg] / TRIPLET / sub
        names = [p.name for p in lib.iterdir()]
        picked = {n for n in names if m.select(n)}
        assert picked == set(gfx906_files(lib)) and picked
        # the manifest's count (140, 156) is a pin of the pinned package; a stand-in counts its own
        if fetched(pkg).version == m.sources[0].version:
            assert len(picked) == m.sources[0].expected_files
        # the prefix in the manifest is where dpkg puts them
        assert (debian_pkgs[pkg] / m.sources[0].member_prefix[2:]).resolve() == lib.resolve()


def test_select_details(shipped):
    m = shipped["rocblas-4.4-gfx906"]
    yes = ["TensileLibrary_lazy_gfx906.dat", "Kernels.so-000-gfx906.hsaco", "Kernels.so-000-gfx906-xnack-.hsaco",
           "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback_gfx906.hsaco",
           "TensileLibrary_Type_HH_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.co",
           "./usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/TensileLibrary_lazy_gfx906.dat"]
    no = ["TensileLibrary_lazy_gfx908.dat", "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback.dat",
          "TensileLibrary_Type_SS_gfx906.co.bak", "tensilelibrary_lazy_gfx906.dat", "Kernels.so-000-gfx9060.hsaco",
          "TensileLibrary_lazy_gfx906.dat/", ""]
    assert all(m.select(n) for n in yes)
    assert not any(m.select(n) for n in no)


# --------------------------------------------------------------------------------------------
# validation: every error names file, line and key


GOOD = (SHIPPED / "rocblas-4.4-gfx906.toml").read_text()


def _write(tmp_path: Path, text: str, name="m.toml") -> Path:
    d = tmp_path / "mf"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return d


def _line_of(text: str, needle: str) -> int:
    """Line of the first (or, for "needle#N", the N-th) line containing needle."""
    nth = 1
    if "#" in needle and needle.rsplit("#", 1)[1].isdigit():
        needle, n = needle.rsplit("#", 1)
        nth = int(n)
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    return hits[nth - 1]


BAD = [
    # (replace this, with this, the line to blame contains, message contains)
    ('sha256 = "05613a07', 'sha256 = "05613A07', 'sha256 = "05613A07', "sources[0].sha256: must be 64 lower-case hex"),
    ("size = 280155896", "size = -1", "size = -1", "sources[0].size: must be a positive integer"),
    ("size = 280155896\n", "", 'sha256 = "05613a07', "size and sha256 pin a file together"),
    ('signed_by = "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"', 'signed_by = "9386B48A1A693C5C"', "signed_by =",
     "full 40-hex-digit fingerprint"),
    ('signed_by = "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"\n', "", 'key_url = "https://repo.radeon.com',
     "key_url without signed_by"),
    ('name = "amd-rocblas-4.3.0-rocm6.3.3"', 'name = "debian-librocblas4"', 'name = "debian-librocblas4"#2',
     "is used by an earlier source"),
    ('kind = "debian"', 'kind = "rpm"', 'kind = "rpm"', "'rpm' is not one of debian, apt"),
    ('"Kernels.so-*-gfx906.hsaco",', '"Kernels.so-*-gfx908.hsaco",', '"Kernels.so-*-gfx908.hsaco"',
     "does not name the target gfx906"),
    ('"Kernels.so-*-gfx906.hsaco",', '"lib/Kernels.so-*-gfx906.hsaco",', '"lib/Kernels.so', "not paths"),
    ('"Kernels.so-*-gfx906.hsaco",', '"TensileLibrary_lazy_gfx906.dat",', '"TensileLibrary_lazy_gfx906.dat",#2',
     "listed twice"),
    ("cross_version = true\n", "", 'rocblas_version = "4.3.0"', "mark the source cross_version = true"),
    ('compatible = ">=4.4.0,<4.5"', 'compatible = ">=4.3.0,<4.4"', 'compatible = ">=4.3.0,<4.4"#1',
     "does not contain the source's own rocBLAS 4.4.1"),
    ('rocblas_versions = ">=4.4.0,<4.5"', 'rocblas_versions = "4.4"', "rocblas_versions =", "is not a version range"),
    ('member_prefix = "./usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/"',
     'member_prefix = "./usr/lib/../../etc/"', 'member_prefix = "./usr/lib/../', "without '..'"),
    ('filename = "pool/main/r/rocblas/librocblas4_6.4.4-4_amd64.deb"', 'filename = "/etc/passwd"',
     'filename = "/etc/passwd"', "relative .deb path"),
    ('repo = "https://repo.radeon.com/rocm/apt/6.3.3"', 'repo = "ftp://repo.radeon.com/x"', 'repo = "ftp:',
     "is not an http(s) URL"),
    ('suite = "sid"', 'sutie = "sid"', 'sutie = "sid"', "unknown key (did you mean 'suite'?)"),
    ('target = "gfx906"', 'target = "gfx906:xnack-"', "target =", "a GPU processor name"),
    ("schema = 1", "schema = 2", "schema = 2", "this rocmrevive reads schema 1"),
    ('amd = "lib/rocblas/library"', 'amd = "/opt/rocm/lib/rocblas/library"', 'amd = "/opt', "relative to the tree root"),
    ('files = 140', 'files = "140"', 'files = "140"', "must be a positive integer"),
]


@pytest.mark.parametrize("old,new,blame,msg", BAD, ids=[b[3][:40] for b in BAD])
def test_bad_manifest_errors_name_file_and_line(tmp_path, old, new, blame, msg):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    d = _write(tmp_path, text)
    ms, errors = check_manifests(d)
    assert ms == []
    line = _line_of(text, blame)
    hits = [e for e in errors if msg in e]
    assert hits, errors
    assert hits[0].startswith(f"{d / 'm.toml'}:{line}: "), (hits[0], line)
    with pytest.raises(RevError) as ei:
        load_manifests(d)
    assert ei.value.code == "USAGE" and ei.value.message.startswith(f"{d / 'm.toml'}:")


def test_toml_syntax_error_has_its_line(tmp_path):
    text = GOOD.replace('package = "librocblas4"', 'package = "librocblas4', 1)
    d = _write(tmp_path, text)
    _, errors = check_manifests(d)
    assert len(errors) == 1 and "invalid TOML" in errors[0]
    assert errors[0].startswith(f"{d / 'm.toml'}:{_line_of(text, 'package = ' + chr(34) + 'librocblas4')}:")


def test_never_half_loads(tmp_path):
    d = _write(tmp_path, GOOD, "a.toml")
    _write(tmp_path, GOOD.replace('id = "rocblas-4.4-gfx906"', 'id = "other"').replace("size = 280155896", "size = 0"),
           "b.toml")
    ms, errors = check_manifests(d)
    assert ms == [] and len(errors) == 1 and "b.toml" in errors[0]
    with pytest.raises(RevError):
        load_manifests(d)


def test_duplicate_ids_across_files(tmp_path):
    d = _write(tmp_path, GOOD, "a.toml")
    _write(tmp_path, GOOD, "b.toml")
    _, errors = check_manifests(d)
    assert len(errors) == 1
    assert errors[0].startswith(f"{d / 'b.toml'}:{_line_of(GOOD, 'id = ')}: id: ") and "a.toml" in errors[0]


def test_every_error_is_reported(tmp_path):
    text = GOOD.replace("size = 280155896", "size = 0").replace('suite = "jammy"', 'suite = ""')
    _, errors = check_manifests(_write(tmp_path, text))
    assert len(errors) == 2


def test_empty_folder_is_an_error(tmp_path):
    (tmp_path / "none").mkdir()
    with pytest.raises(RevError) as ei:
        load_manifests(tmp_path / "none")
    assert "no *.toml" in ei.value.message


# --------------------------------------------------------------------------------------------
# the command


def _run(*args):
    res = CliRunner().invoke(cli, ["--json", *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def test_cli_manifests_list_and_check(tmp_path):
    code, doc = _run("manifests", "--dir", str(SHIPPED))
    assert code == 0 and doc["command"] == "manifests list" and doc["schema_version"] == 1
    assert [m["id"] for m in doc["manifests"]] == ["rocblas-4.4-gfx906", "rocblas-5-gfx906", "rocfft-6.4-gfx906",
                                                   "rocrand-6.4-gfx906", "rocsolver-6.4-gfx906",
                                                   "rocsparse-6.4-gfx906"]
    src = doc["manifests"][0]["sources"][1]
    assert src["cross_version"] is True and src["pinned"] is False and src["compatible"] == ">=4.3.0,<4.4"
    code, doc = _run("manifests", "check", str(SHIPPED))
    assert code == 0 and doc["valid"] is True and doc["errors"] == []

    bad = _write(tmp_path, GOOD.replace("size = 280155896", "size = 0"))
    code, doc = _run("manifests", "check", str(bad))
    assert code == 2 and doc["valid"] is False
    assert doc["error"]["code"] == "USAGE" and len(doc["errors"]) == 1
    assert doc["errors"][0].startswith(f"{bad / 'm.toml'}:{_line_of(GOOD, 'size = 280155896')}: sources[0].size")


def test_cli_manifests_show_unknown_id():
    code, doc = _run("manifests", "--dir", str(SHIPPED), "show", "nope")
    assert code == 2 and "rocblas-4.4-gfx906" in doc["error"]["message"]
