"""AMD's TheRock trees (ROCm 7.14, 10.0, 10.1) and the whole-stack gfx906 builds: the fixtures'
layouts (tests/fixtures/therock_layouts.py), and the per-library verdicts detect, doctor, verify
and audit give on them, each proven by breaking one library's gfx906 code."""
from __future__ import annotations

import pytest

from rocmrevive.codeobj.inspect import inspect_file
from rocmrevive.codeobj.kpack import read_kpack
from rocmrevive.rootfs import Root
from tests.fixtures import therock_layouts as T

pytestmark = pytest.mark.debian


@pytest.fixture(params=list(T.LAYOUTS))
def layout(request, tmp_path, debian_pkgs, codeobjects):
    name = request.param
    root = T.BUILDERS[name](tmp_path / "m", debian_pkgs, codeobjects)
    return root, T.LAYOUTS[name]


def test_fixture_layouts_carry_what_they_claim(layout):
    root, lay = layout
    for key in T.KEYS:
        rep = inspect_file(root / lay.host(key).lstrip("/"))
        procs = set(rep.processors)
        if lay.kpack or key == "hipblas":
            assert procs == set(), (key, procs)          # kpack'd (zeroed .hip_fatbin) or no device code
        else:
            assert "gfx906" in procs or "gfx9-generic" in procs, (key, procs)
    for arch in lay.arches if lay.kpack else ():
        k = read_kpack(root / lay.kpack_archive("blas", arch).lstrip("/"))
        assert k.problems == [] and k.arches == [arch]
        assert sorted(k.binaries) == sorted(f"lib/{T.HOST[x][0]}" for x in ("rocblas", "rocsolver", "rocsparse"))
        assert {str(e.target.processor) for e in k.entries} == {arch}
    lib = root / lay.tensile.lstrip("/")
    for arch in lay.arches:
        folder = lib / arch if lay.nested else lib
        assert (folder / f"TensileLibrary_lazy_{arch}.dat").is_file()
    if lay.name == "stock-10.1":
        assert Root(root).resolve("/opt/rocm/lib") == root / "opt/rocm/core-10.1/lib"   # through /etc/alternatives
        assert "gfx906" not in str(sorted(p.name for p in lib.rglob("*")))
