"""ROCm 7.1 (rocBLAS 5.1): no manifest source matches, so `rocmrevive recipe` names the exact
build, and `install --from` accepts a folder or tarball no manifest pins only by content.
The tree and the sources are Debian's real rocBLAS files (tests/fixtures/rocm71.py says what is
relabelled)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import jrun
from tests.conftest import REPO
from tests.fixtures import rocm71 as F
from tests.machines.build import link_or_copy
from tests.test_contract_terminal import Pty
from tests.test_install import rr, tree_hash

pytestmark = [pytest.mark.debian, pytest.mark.slow]


@pytest.fixture
def machine(tmp_path, debian_pkgs):
    return F.build_rocm71_machine(tmp_path / "m", debian_pkgs)


def test_detect_sees_rocblas_51_without_gfx906(machine):
    doc = jrun(machine, "detect", rc=0)
    (copy,) = [c for c in doc["rocblas_copies"] if c["path"] == F.LIB]
    assert copy["rocblas_version"] == "5.1.0" and copy["rocm_version"] == "7.1.1"
    assert "gfx906" not in copy["targets"] and "gfx942" in copy["targets"]


def test_install_without_from_says_what_to_do(machine, tmp_path):
    r = rr(machine, "--json", "install", "--check", "--cache", str(tmp_path / "c"))
    doc = json.loads(r.stdout)
    (copy,) = doc["copies"]
    assert copy["status"] == "refused"
    # the printed command keeps --root (pasted, it acts on the same machine)
    assert f"rocmrevive --root {machine} recipe" in copy["reason"] and "--from" in copy["reason"]


def test_recipe_names_the_tag_the_targets_and_the_install(machine, tmp_path):
    doc = jrun(machine, "recipe", rc=0)
    assert doc["tree"] == F.LIB and doc["kind"] == "source-build"
    assert doc["tag"] == "rocm-7.1.1" and doc["rocblas_version"] == "5.1.0"
    assert doc["targets"] == ["gfx906"]
    assert doc["prefix"] == "/opt/rocmrevive/rocblas/5.1.0-gfx906"
    assert doc["output_library"] == "/opt/rocmrevive/rocblas/5.1.0-gfx906/lib/rocblas/library"
    assert doc["install"] == f"sudo rocmrevive install --tree {F.LIB} --from /opt/rocmrevive/rocblas/5.1.0-gfx906"
    assert any("ROCm 7.1.1 ships rocBLAS 5.1 (release page: rocBLAS 5.1.0)" in n for n in doc["notes"])
    s = doc["script"]
    for needle in ('ROCBLAS_REF="${ROCBLAS_REF:-rocm-7.1.1}"', "GPU_TARGETS=gfx906", '-DGPU_TARGETS="$GPU_TARGETS"',
                   "-DTensile_LAZY_LIBRARY_LOADING=ON", "ROCM_PATH=/opt/rocm-7.1.1", "cmake --install",
                   "TensileLibrary_lazy_gfx906.dat", doc["install"]):
        assert needle in s, needle
    assert s.rstrip().endswith(doc["install"])
    # the script is valid bash, and -o writes it executable
    out = tmp_path / "build.sh"
    jrun(machine, "recipe", "-o", str(out), rc=0)
    assert out.stat().st_mode & 0o111
    import subprocess
    assert subprocess.run(["bash", "-n", str(out)]).returncode == 0


def test_recipe_for_an_older_rocm_in_the_line(machine):
    doc = jrun(machine, "recipe", "--rocm-version", "7.0.1", rc=0)
    # the tree says rocBLAS 5.1: the build follows the tree, not a release with another rocBLAS
    assert doc["tag"] == "rocm-7.1.1"
    assert any("ROCm 7.0.1 shipped rocBLAS 5.0" in n for n in doc["notes"])
    assert any("its last release with a tag is ROCm 7.1.1" in n for n in doc["notes"])


def test_content_verified_from_is_installed_journaled_and_rolled_back(machine, tmp_path, debian_pkgs):
    prefix = F.good_prefix(tmp_path / "prefix", debian_pkgs)
    before = tree_hash(machine / "opt")
    args = ["--from", str(prefix), "--cache", str(tmp_path / "c")]
    doc = jrun(machine, "install", "--check", *args, rc=20)
    (copy,) = doc["copies"]
    assert copy["status"] == "planned" and copy["verification"] == "verified by content, unpinned"
    assert tree_hash(machine / "opt") == before
    doc = jrun(machine, "install", "--yes", *args, rc=0)
    (copy,) = doc["copies"]
    assert copy["status"] == "installed" and copy["summary"]["create"] == 156
    assert copy["verification"] == "verified by content, unpinned"
    assert copy["artifact"]["library"] == "lib/rocblas/library"
    assert copy["artifact"]["version_evidence"][0]["version"] == "5.1.0"
    dev = copy["verify_staged"]["devices"][0]
    assert dev["tensile"]["solutions"] == 8181
    assert copy["verify_after"]["ok"] is True
    # the journal says so, and status shows it
    st = jrun(machine, "status", rc=0)
    (tx,) = st["transactions"]
    assert tx["meta"]["verification"] == "verified by content, unpinned" and tx["meta"]["pinned"] is False
    human = rr(machine, "status", check_rc=0).stdout
    assert "verified by content, unpinned" in " ".join(human.split())
    assert jrun(machine, "verify", "--tree", F.TREE, rc=0)["ok"] is True
    rr(machine, "rollback", check_rc=0)
    assert tree_hash(machine / "opt") == before


def test_wrong_rocblas_by_content_is_refused_with_the_reason(machine, tmp_path, debian_pkgs):
    """Debian's rocBLAS 4.4.1 gfx906 files, no version metadata: the cross-reference against the
    tree's own fallback index finds the kernels missing."""
    tarball = F.wrong_tarball(tmp_path / "rocblas-gfx906.tar.gz", debian_pkgs)
    before = tree_hash(machine / "opt")
    r = rr(machine, "--json", "install", "--yes", "--from", str(tarball), "--cache", str(tmp_path / "c"))
    assert r.returncode == 6, r.stdout[-1500:]     # VERIFY_FAILED
    doc = json.loads(r.stdout)
    (copy,) = doc["copies"]
    assert copy["status"] == "refused"
    assert "does not serve" in copy["reason"] and "tensile" in copy["reason"]
    assert "another rocBLAS release" in copy["reason"]
    assert tree_hash(machine / "opt") == before
    assert not (machine / "var/lib/rocmrevive/tx").exists() or not any((machine / "var/lib/rocmrevive/tx").iterdir())


def test_wrong_version_metadata_is_refused_before_anything_is_read(machine, tmp_path, debian_pkgs):
    prefix = F.good_prefix(tmp_path / "prefix44", debian_pkgs, header=(4, 4, 1))
    before = tree_hash(machine / "opt")
    r = rr(machine, "--json", "install", "--yes", "--from", str(prefix), "--cache", str(tmp_path / "c"))
    assert r.returncode == 6
    (copy,) = json.loads(r.stdout)["copies"]
    assert "is a build of rocBLAS 4.4.1" in copy["reason"] and "has rocBLAS 5.1.0" in copy["reason"]
    assert tree_hash(machine / "opt") == before


def test_a_from_without_the_index_is_refused(machine, tmp_path):
    empty = tmp_path / "empty"
    (empty / "lib").mkdir(parents=True)
    r = rr(machine, "--json", "install", "--yes", "--from", str(empty), "--cache", str(tmp_path / "c"))
    assert r.returncode == 6
    (copy,) = json.loads(r.stdout)["copies"]
    assert "no TensileLibrary_lazy_gfx906.dat in it" in copy["reason"]


def test_unpinned_stage_takes_only_the_targets_files(tmp_path, debian_pkgs):
    from rocmrevive.install import unpinned as U

    full = tmp_path / "full"
    shutil.copytree(F.library52(debian_pkgs), full / "lib/rocblas/library", copy_function=link_or_copy)
    st = U.stage(full, "gfx906", U.selector(U.default_patterns("gfx906")), tmp_path / "w")
    assert len(st.by_name) == 156
    assert all("gfx906" in n for n in st.by_name)   # never an arch-neutral *_fallback.dat
    assert st.library_member == "lib/rocblas/library"


def test_what_from_is_offered_as_is_decided_by_content(tmp_path, debian_pkgs, debian_debs):
    """Only a rocBLAS build goes to the content check; packages and exports keep their meaning
    (artifacts matched to the manifests by sha256: a library's .deb for a graft or RCCL)."""
    from rocmrevive.install import unpinned as U

    w = tmp_path / "w"
    w.mkdir()
    prefix = F.good_prefix(tmp_path / "prefix", debian_pkgs)
    assert U.offered_as_build(prefix, None)                          # <prefix>/lib/rocblas/library/lazy index
    debs = tmp_path / "debs"
    debs.mkdir()
    link_or_copy(debian_debs["librccl1_5.4.3-3+b1_amd64"], debs / "librccl1_5.4.3-3+b1_amd64.deb")
    assert not U.offered_as_build(debs, None)                        # a folder of packages
    export = tmp_path / "export"
    (export / "sources" / "debian-trixie").mkdir(parents=True)
    assert not U.offered_as_build(export, None)                      # `fetch --to`'s export
    empty = tmp_path / "empty"
    (empty / "lib").mkdir(parents=True)
    assert U.offered_as_build(empty, None)                           # neither: the check says what it lacks
    assert not U.offered_as_build(debs / "librccl1_5.4.3-3+b1_amd64.deb", w)    # another library's package
    assert U.offered_as_build(debian_debs[F.PKG44], w)               # rocBLAS's own package: its index
    assert U.offered_as_build(F.wrong_tarball(tmp_path / "t.tar.gz", debian_pkgs), w)
    assert not any(w.rglob("*.dat"))                                 # a listing writes nothing


def test_fixture_is_what_it_says(machine, debian_pkgs):
    lib = machine / F.LIB.lstrip("/")
    assert sum(1 for _ in lib.iterdir()) == 1897 - 156
    assert (lib / "TensileLibrary_lazy_gfx942.dat").stat().st_ino == \
        (F.library52(debian_pkgs) / "TensileLibrary_lazy_gfx942.dat").stat().st_ino
    assert Path(machine / "opt/rocm").readlink() == Path("rocm-7.1.1")


def test_a_tarball_of_the_build_prefix_is_verified_the_same_way(machine, tmp_path, debian_pkgs):
    import subprocess

    prefix = F.good_prefix(tmp_path / "p", debian_pkgs)
    tarball = tmp_path / "rocblas-5.1.0-gfx906.tar.zst"
    subprocess.run(["tar", "--zstd", "-cf", str(tarball), "-C", str(prefix), "."], check=True)
    doc = jrun(machine, "install", "--check", "--from", str(tarball), "--cache", str(tmp_path / "c"), rc=20)
    (copy,) = doc["copies"]
    assert copy["status"] == "planned" and copy["summary"]["create"] == 156
    assert copy["artifact"]["kind"] == "tar.zst" and copy["artifact"]["library"] == "lib/rocblas/library"


def _shims(bindir: Path, root: Path) -> dict:
    """``sudo`` (this test is root already) and ``rocmrevive`` (the real CLI, on the copied
    machine) first on PATH, so the script's own lines run as written."""
    bindir.mkdir()
    (bindir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    (bindir / "rocmrevive").write_text(f'#!/bin/sh\nexec {sys.executable} -m rocmrevive.cli.main --root {root} "$@"\n')
    for f in bindir.iterdir():
        f.chmod(0o755)
    return {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO), "PATH": f"{bindir}:{os.environ['PATH']}"}


def test_the_recipe_scripts_install_lines_run_to_the_end_under_set_e(machine, tmp_path, debian_pkgs):
    """The lines after the build, as the script has them: `install --check` exits 20 (changes
    pending), which must not end a `set -e` script before its install line (issue 29)."""
    root = machine
    prefix = F.good_prefix(tmp_path / "prefix", debian_pkgs)   # what the build leaves
    doc = jrun(root, "recipe", "--prefix", str(prefix), rc=0)
    script = doc["script"]
    assert script.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in script
    tail = "set -euo pipefail\n" + script[script.index("# Then rocmrevive takes it"):]
    assert "sudo rocmrevive install --check" in tail and tail.rstrip().endswith(doc["install"])
    e = _shims(tmp_path / "bin", root)
    before = tree_hash(root / "opt")
    # a check that fails (here: the build's folder is not there) stops the script with its exit
    prefix.rename(tmp_path / "away")
    p = subprocess.run(["bash", "-c", tail], capture_output=True, text=True, env=e, cwd=tmp_path, check=False)
    assert p.returncode not in (0, 20) and "not installing" in p.stderr, (p.returncode, p.stderr[-1500:])
    assert tree_hash(root / "opt") == before
    (tmp_path / "away").rename(prefix)
    t = Pty(["bash", "-c", tail], extra_env={"PATH": e["PATH"]})   # the install asks on the terminal
    shown = t.read_until("apply? [Y/n]")
    assert "apply? [Y/n]" in shown, shown[-2000:]
    t.send("y\n")
    rc, shown = t.finish()
    assert rc == 0, shown[-2000:]
    assert tree_hash(root / "opt") != before and (root / F.LIB.lstrip('/') / "TensileLibrary_lazy_gfx906.dat").exists(), shown[-1500:]
    after = tree_hash(root / "opt")   # again: the check exits 0, the script says so and ends 0 without installing
    p = subprocess.run(["bash", "-c", tail], capture_output=True, text=True, env=e, cwd=tmp_path, check=False)
    assert p.returncode == 0 and "nothing to install" in p.stdout, (p.stdout[-1500:], p.stderr[-1500:])
    assert tree_hash(root / "opt") == after
