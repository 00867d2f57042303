"""Shared fixtures: Debian's real ROCm packages, fetched once into a cache outside the repo."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("ROCMREVIVE_TEST_CACHE", "/var/tmp/rocmrevive-test-cache"))

DEBIAN_PACKAGES = {
    "librocblas4_6.4.4-4_amd64": "librocblas4=6.4.4-4",
    "librocblas5_7.2.4-1~exp1_amd64": "librocblas5=7.2.4-1~exp1",
    "librccl1_5.4.3-3+b1_amd64": "librccl1=5.4.3-3+b1",
    "librccl1_7.2.4-1~exp3_amd64": "librccl1=7.2.4-1~exp3",
}
TRIPLET = "usr/lib/x86_64-linux-gnu"


def _ensure_debian() -> tuple[dict[str, Path], dict[str, Path]]:
    debs_dir, unpacked = CACHE / "debs", CACHE / "unpacked"
    missing = [spec for base, spec in DEBIAN_PACKAGES.items() if not (debs_dir / f"{base}.deb").is_file()]
    if missing:
        subprocess.run(["bash", str(REPO / "tests/fixtures/fetch_debian.sh"), *missing], check=True)
    debs, dirs = {}, {}
    for base in DEBIAN_PACKAGES:
        deb = debs_dir / f"{base}.deb"
        out = unpacked / base
        if not (out / ".complete").exists():
            tmp = unpacked / f".{base}.tmp"
            subprocess.run(["rm", "-rf", str(tmp)], check=True)
            tmp.mkdir(parents=True)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
            (tmp / ".complete").write_text("dpkg-deb -x\n")
            subprocess.run(["rm", "-rf", str(out)], check=True)
            tmp.rename(out)
        debs[base], dirs[base] = deb, out
    return debs, dirs


@pytest.fixture(scope="session")
def debian_pkgs() -> dict[str, Path]:
    """Unpacked Debian packages: name -> folder (as `dpkg-deb -x` made it)."""
    return _ensure_debian()[1]


@pytest.fixture(scope="session")
def debian_debs() -> dict[str, Path]:
    """The real .deb files: name -> path."""
    return _ensure_debian()[0]


@pytest.fixture(scope="session")
def rocblas441(debian_pkgs) -> Path:
    """Debian's rocBLAS 4.4.1 Tensile library folder (1,349 files)."""
    return debian_pkgs["librocblas4_6.4.4-4_amd64"] / TRIPLET / "rocblas/4.4.1/library"


@pytest.fixture(scope="session")
def rocblas52(debian_pkgs) -> Path:
    """Debian's rocBLAS 5.2 (7.2.4) Tensile library folder (1,897 files; .co are CCOB v3)."""
    return debian_pkgs["librocblas5_7.2.4-1~exp1_amd64"] / TRIPLET / "rocblas/5/library"


@pytest.fixture(scope="session")
def codeobjects():
    """Real compiled code objects, bundles, CCOBs and host libraries (tests/fixtures/codeobjects.py)."""
    from tests.fixtures.codeobjects import session_fixtures

    return session_fixtures()
