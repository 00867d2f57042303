"""rocBLAS copies that programs carry themselves, built with the exact layouts of the real
products from Debian's real files, on a machine with two MI50s:

* a PyTorch ROCm wheel (torch 2.8.0+rocm6.4): ``site-packages/torch/lib/librocblas.so`` (SONAME
  librocblas.so.4) and ``torch/lib/rocblas/library`` = Debian's rocBLAS 4.4.1 minus gfx906. Its
  rocBLAS is placed at 4.4 by torch.version.hip (ROCm 6.4), so Debian's 4.4.1 is a matched source;
* Ollama's ROCm runner (``lib/ollama/rocm_v7_2``, ROCm 7.2.1, since Ollama 0.13): ``librocblas.so.5``
  and ``rocblas/library`` = Debian's rocBLAS 5.2.1 with ``*gfx90[06]*`` removed, as Ollama's Dockerfile
  does; Ollama's own check (the ``TensileLibrary_lazy_gfx*.dat`` glob) is what ``verify`` reports;
* Ollama 0.9's ``lib/ollama/rocm`` (ROCm 6.3.3, rocBLAS 4.3.0, SONAME only): no version-matched
  source here, refused with the next step.

Each goes from failing `verify` to passing through `install`, and back through `rollback`,
byte for byte (tree hash).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.cli_support import rr_parsed as rr
from tests.conftest import TRIPLET
from tests.machines.build import build, link_or_copy

pytestmark = pytest.mark.debian

R441 = "librocblas4_6.4.4-4_amd64"
R52 = "librocblas5_7.2.4-1~exp1_amd64"
VENV = "/home/alice/venvs/torch"
SITE = f"{VENV}/lib/python3.12/site-packages"
OLLAMA = "/usr/local/lib/ollama/rocm_v7_2"


def library_without(src: Path, dest: Path, drop) -> int:
    n = 0
    for f in sorted(src.iterdir()):
        if not drop(f.name):
            link_or_copy(f, dest / f.name)
            n += 1
    return n


def tree_hash(top: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            h.update(f"{p.relative_to(top)}\0".encode())
            h.update(hashlib.sha256(p.read_bytes()).digest() if p.stat().st_size < (1 << 20)
                     else f"{p.stat().st_size}:{p.stat().st_ino}".encode())
    return h.hexdigest()


def machine_with_torch(tmp_path: Path, debian_pkgs) -> Path:
    root = build("dual-mi50", tmp_path / "m")
    site = root / SITE.lstrip("/")
    (root / VENV.lstrip("/") / "pyvenv.cfg").parent.mkdir(parents=True)
    (root / VENV.lstrip("/") / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    (site / "torch").mkdir(parents=True)
    (site / "torch/version.py").write_text("__version__ = '2.8.0+rocm6.4'\n"
                                           "hip: Optional[str] = '6.4.43482-0f2d60242'\ncuda: Optional[str] = None\n")
    deb = debian_pkgs[R441] / TRIPLET
    link_or_copy(deb / "librocblas.so.4.4", site / "torch/lib/librocblas.so")     # the wheel's name for it
    n = library_without(deb / "rocblas/4.4.1/library", site / "torch/lib/rocblas/library",
                        lambda name: "gfx906" in name)
    assert n == 1349 - 140
    return root


def test_torch_wheel_fails_verify_then_install_then_rollback(tmp_path, debian_pkgs, debian_debs):
    root = machine_with_torch(tmp_path, debian_pkgs)
    lib_dir = f"{SITE}/torch/lib"
    before = tree_hash(root / SITE.lstrip("/"))

    rc, doc, _ = rr(root, "--json", "verify", "--tree", lib_dir)
    assert rc == 6 and doc["ok"] is False

    rc, doc, err = rr(root, "--json", "install", "--yes", "--python", VENV, "--tree", lib_dir,
                      "--from", str(debian_debs[R441]), "--cache", str(tmp_path / "cache"))
    assert rc == 0, err + json.dumps(doc)[:2000]
    (cp,) = doc["copies"]
    assert cp["layout"] == "python-torch" and cp["rocblas_version"] == "4.4" and cp["status"] == "installed"
    assert cp["source"]["name"] == "debian-librocblas4"          # the version-matched source
    txid = cp["txid"]
    added = sorted(p.name for p in (root / lib_dir.lstrip("/") / "rocblas/library").glob("*gfx906*"))
    assert len(added) == 140 and "TensileLibrary_lazy_gfx906.dat" in added

    rc, doc, _ = rr(root, "--json", "verify", "--tree", lib_dir)
    assert rc == 0 and doc["ok"] is True

    rc, doc, err = rr(root, "--json", "rollback", txid)
    assert rc == 0, err
    assert tree_hash(root / SITE.lstrip("/")) == before
    rc, doc, _ = rr(root, "--json", "verify", "--tree", lib_dir)
    assert rc == 6


def test_torch_wheel_of_a_rocm_without_source_gets_the_next_step(tmp_path, debian_pkgs):
    """torch 2.7.1+rocm6.3 (rocBLAS 4.3): no manifest matches; the refusal names the recipe."""
    root = machine_with_torch(tmp_path, debian_pkgs)
    site = root / SITE.lstrip("/")
    (site / "torch/version.py").write_text("__version__ = '2.7.1+rocm6.3'\n"
                                           "hip: Optional[str] = '6.3.42134-a9a80e791'\ncuda: Optional[str] = None\n")
    before = tree_hash(site)
    rc, doc, _ = rr(root, "--json", "install", "--yes", "--python", VENV, "--tree", f"{SITE}/torch/lib",
                    "--cache", str(tmp_path / "cache"))
    (cp,) = doc["copies"]
    assert cp["rocblas_version"] == "4.3" and cp["status"] == "unsupported"
    assert cp["reason"] == (f"no manifest for rocBLAS 4.3; `rocmrevive --root {root} recipe --tree {SITE}/torch/lib/rocblas/"
                            f"library` writes the build, `install --from` takes it")
    assert rc != 0 and tree_hash(site) == before


def machine_with_ollama(tmp_path: Path, debian_pkgs) -> Path:
    root = build("dual-mi50", tmp_path / "m")
    runner = root / OLLAMA.lstrip("/")
    deb = debian_pkgs[R52] / TRIPLET
    link_or_copy(deb / "librocblas.so.5.2", runner / "librocblas.so.5")          # CMake's runtime-dependency copy
    library_without(deb / "rocblas/5/library", runner / "rocblas/library",
                    lambda name: "gfx900" in name or "gfx906" in name)  # Dockerfile: rm -f …/*gfx90[06]*
    return root


def test_ollama_runner_fails_ollamas_check_then_install_then_rollback(tmp_path, debian_pkgs, debian_debs):
    root = machine_with_ollama(tmp_path, debian_pkgs)
    runner = root / OLLAMA.lstrip("/")
    before = tree_hash(runner)
    lib = f"{OLLAMA}/rocblas/library"

    rc, text, _ = rr(root, "verify", "--tree", OLLAMA)
    assert rc == 6 and "gfx906:sramecc+:xnack- DROPPED: no TensileLibrary_lazy_gfx906.dat" in text
    rc, doc, _ = rr(root, "--json", "verify", "--tree", OLLAMA)
    assert rc == 6
    (c,) = doc["copies"]
    assert c["ollama"]["runner"] == OLLAMA and "gfx906" not in c["ollama"]["supported"]
    assert "gfx1030" in c["ollama"]["supported"]
    assert c["ollama"]["devices"] == {d: False for d in doc["targets"]}

    rc, doc, err = rr(root, "--json", "install", "--yes", "--tree", OLLAMA, "--from", str(debian_debs[R52]),
                      "--cache", str(tmp_path / "cache"))
    assert rc == 0, err + json.dumps(doc)[:2000]
    (cp,) = doc["copies"]
    assert (cp["layout"], cp["rocblas_version"], cp["rocm_version"]) == ("bundle", "5.2", "7.2")
    assert cp["status"] == "installed" and cp["source"]["name"] == "debian-librocblas5"
    txid = cp["txid"]

    rc, text, _ = rr(root, "verify", "--tree", OLLAMA)
    assert rc == 0 and ("  Ollama (/usr/local/lib/ollama/rocm_v7_2): gfx906:sramecc+:xnack- kept: its glob finds "
                        "TensileLibrary_lazy_gfx906.dat\n") in text
    rc, doc, _ = rr(root, "--json", "verify", "--tree", OLLAMA)
    assert rc == 0 and doc["ok"] is True
    (c,) = doc["copies"]
    assert "gfx906" in c["ollama"]["supported"] and all(c["ollama"]["devices"].values())
    assert (root / lib.lstrip("/") / "TensileLibrary_lazy_gfx906.dat").is_file()

    rc, doc, err = rr(root, "--json", "rollback", txid)
    assert rc == 0, err
    assert tree_hash(runner) == before
    rc, doc, _ = rr(root, "--json", "verify", "--tree", OLLAMA)
    assert rc == 6 and "gfx906" not in doc["copies"][0]["ollama"]["supported"]


def test_ollama_09_bundle_rocblas_43_is_refused_with_the_next_step(tmp_path, debian_pkgs):
    """Ollama 0.9.x: lib/ollama/rocm from ROCm 6.3.3 (rocBLAS 4.3.0), librocblas.so.4 only: the
    folder names no ROCm release, so only the major is known and no manifest matches."""
    root = build("dual-mi50", tmp_path / "m")
    runner = root / "usr/lib/ollama/rocm"
    deb = debian_pkgs[R441] / TRIPLET
    link_or_copy(deb / "librocblas.so.4.4", runner / "librocblas.so.4")
    library_without(deb / "rocblas/4.4.1/library", runner / "rocblas/library", lambda n: "gfx906" in n)
    before = tree_hash(runner)
    rc, doc, _ = rr(root, "--json", "install", "--yes", "--tree", "/usr/lib/ollama/rocm", "--cache", str(tmp_path / "cache"))
    (cp,) = doc["copies"]
    assert cp["status"] == "unsupported" and cp["rocblas_version"] == "4"
    assert f"; `rocmrevive --root {root} recipe --tree /usr/lib/ollama/rocm/rocblas/library` writes the build" in cp["reason"]
    assert rc != 0 and tree_hash(runner) == before
