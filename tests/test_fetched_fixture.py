"""tests/fixtures/fetched.py: a drifted fixture pin puts its stand-in into the manifests the
tests install with (version, file, size, sha256; no sha1/seen/files of the old package); no drift
leaves the shipped folder as it is."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rocmrevive.sources.manifest_load import load_manifests
from tests.fixtures import fetched, fixcache

NEW_SHA = "ab" * 32


def test_no_drift_is_the_shipped_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMREVIVE_TEST_CACHE", str(tmp_path / "cache"))
    assert fetched.manifests_for_fetched(tmp_path) == fetched.SHIPPED
    assert fetched.fetched("librocblas4_6.4.4-4_amd64").version == "6.4.4-4"


def test_a_drifted_pin_stands_in_in_the_manifests(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMREVIVE_TEST_CACHE", str(tmp_path / "cache"))
    (pinned,) = [p for p in fixcache.pins("rocm", drift=False) if p.name == "librocblas4"]
    drift = fixcache.drift_file(pinned.name, pinned.version)
    drift.parent.mkdir(parents=True)
    drift.write_text(f"6.4.4-5 280000001 {NEW_SHA}\n")
    assert fetched.fetched(pinned.deb[:-4]).version == "6.4.4-5"
    mdir = fetched.manifests_for_fetched(tmp_path)
    assert mdir != fetched.SHIPPED
    got = {m.id: m for m in load_manifests(str(mdir))}
    shipped = {m.id: m for m in load_manifests(str(fetched.SHIPPED))}
    s = got["rocblas-4.4-gfx906"].source("debian-librocblas4")
    assert (s.version, s.size, s.sha256) == ("6.4.4-5", 280000001, NEW_SHA)
    assert s.filename == "pool/main/r/rocblas/librocblas4_6.4.4-5_amd64.deb"
    assert s.expected_files is None and not getattr(s, "sha1", None)
    assert s.member_prefix == shipped["rocblas-4.4-gfx906"].source("debian-librocblas4").member_prefix
    # the other pins and the components are left as shipped
    assert got["rocblas-4.4-gfx906"].components == shipped["rocblas-4.4-gfx906"].components
    assert got["rocblas-5-gfx906"].sources == shipped["rocblas-5-gfx906"].sources
    amd = "amd-rocblas-4.3.0-rocm6.3.3"
    a, b = got["rocblas-4.4-gfx906"].source(amd), shipped["rocblas-4.4-gfx906"].source(amd)
    assert replace(a, line=0) == replace(b, line=0)   # only its line in the file moved
    assert sorted(p.name for p in Path(mdir).iterdir()) == sorted(p.name for p in fetched.SHIPPED.glob("*.toml"))
