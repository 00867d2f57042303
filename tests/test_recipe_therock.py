"""TheRock (ROCm 7.13+) trees: `.kpack` archives read by structure in inspect, detect, doctor,
audit, recipe and install; for gfx906 rocmrevive lists the real choices (no AMD package exists for a
stable release: tests/test_gfx906_choices.py checks every printed name against the table).
The tree is tests/fixtures/therock.py (Debian's real files in TheRock's layout)."""
from __future__ import annotations

import json
import struct

import pytest

from rocmrevive.codeobj.kpack import read_kpack
from tests.cli_support import jrun
from tests.fixtures import therock as F
from tests.test_install import rr, tree_hash

pytestmark = [pytest.mark.debian]
NO_PACKAGE = "AMD publishes no gfx906 device package for ROCm 7.13"


@pytest.fixture
def machine(tmp_path, debian_pkgs):
    return F.build_therock_machine(tmp_path / "m", debian_pkgs)


def test_kpack_reader_gives_the_exact_targets(machine):
    rep = read_kpack(machine / "opt/rocm-7.13.0/.kpack/blas_lib_gfx1100.kpack")
    assert rep.problems == [] and rep.version == 1 and rep.group == "blas" and rep.family == "gfx110X-all"
    assert rep.arches == ["gfx1100"] and rep.compression == "none" and rep.kernels == 1
    assert rep.binaries == {"lib/librocblas.so.5": ["gfx1100"]}
    (e,) = rep.entries
    assert e.target.processor == "gfx1100" and e.co_version == 6   # Debian's clang-22 .hsaco: COv6


def test_kpack_reader_says_what_is_wrong(tmp_path):
    bad = tmp_path / "x.kpack"
    bad.write_bytes(b"KPAK" + struct.pack("<IQ", 1, 10 ** 9))
    assert "outside the file" in read_kpack(bad).problems[0]
    bad.write_bytes(b"KPAK" + struct.pack("<IQ", 7, 16))
    assert "format version 7" in read_kpack(bad).problems[0]
    bad.write_bytes(b"NOPE" + bytes(60))
    assert "no KPAK magic" in read_kpack(bad).problems[0]
    bad.write_bytes(b"KPAK" + struct.pack("<IQ", 1, 16) + b"\xc1")   # 0xc1: never used in MessagePack
    assert "not MessagePack" in read_kpack(bad).problems[0]


def test_inspect_reads_a_kpack(machine):
    doc = jrun(machine, "inspect", str(machine / "opt/rocm-7.13.0/.kpack/blas_lib_gfx1101.kpack"), rc=0)
    (f,) = doc["files"]
    assert f["kind"] == "kpack" and f["targets"] == ["gfx1101"]
    assert "group blas" in f["note"] and "lib/librocblas.so.5" in json.dumps(f["entries"])


def test_detect_and_doctor_name_the_choices(machine):
    doc = jrun(machine, "detect", rc=0)
    (c,) = [c for c in doc["rocblas_copies"] if c["path"] == F.LIB]
    assert c["kpack"] is True and c["kpack_arches"] == ["gfx1100", "gfx1101"]
    assert c["kpack_archives"] == [f"{F.TREE}/.kpack/blas_lib_gfx1100.kpack", f"{F.TREE}/.kpack/blas_lib_gfx1101.kpack"]
    assert "gfx906" not in c["targets"] and "gfx1100" in c["targets"]
    r = rr(machine, "--json", "doctor")
    doc = json.loads(r.stdout)
    (f,) = [f for f in doc["findings"] if f["id"] == "rocblas-therock-gfx906"]
    assert f["severity"] == "error" and NO_PACKAGE in f["fix"] and f"rocmrevive --root {machine} recipe --tree {F.LIB}" in f["fix"]


def test_recipe_lists_the_choices(machine):
    doc = jrun(machine, "recipe", rc=0)
    assert doc["kind"] == "therock-choices" and doc["tag"] is None
    assert [c["kind"] for c in doc["choices"]] == ["nightly-build", "local-build"]   # no whole stack for 7.13
    assert "git clone --branch therock-7.13 https://github.com/ROCm/TheRock.git TheRock" in doc["choices"][1]["commands"]
    assert doc["install"] == f"rocmrevive verify --tree {F.LIB}"
    assert any("does not copy device code into a .kpack tree" in n for n in doc["notes"])


def test_install_refuses_with_the_command_and_changes_nothing(machine, tmp_path):
    before = tree_hash(machine / "opt")
    r = rr(machine, "--json", "install", "--yes", "--cache", str(tmp_path / "c"))
    doc = json.loads(r.stdout)
    (copy,) = doc["copies"]
    assert copy["status"] == "unsupported" and NO_PACKAGE in copy["reason"]
    assert tree_hash(machine / "opt") == before


def test_audit_lists_the_archives_and_the_missing_card(machine):
    doc = jrun(machine, "audit", "--tree", F.TREE, "--no-programs", rc=0)
    rows = {r["path"]: r for r in doc["libraries"]}
    k = rows[f"{F.TREE}/.kpack/blas_lib_gfx1100.kpack"]
    assert k["kind"] == "kpack" and k["processors"] == ["gfx1100"]
    cell = k["cells"]["gfx906:sramecc+:xnack-"]
    assert cell["status"] == "missing" and "for gfx906 AMD publishes none in a stable release" in cell["remedy"]
    doc = jrun(machine, "audit", "--tree", F.TREE, "--target", "gfx1101", "--no-programs", rc=0)
    rows = {r["path"]: r for r in doc["libraries"]}
    assert rows[f"{F.TREE}/.kpack/blas_lib_gfx1101.kpack"]["cells"]["gfx1101"]["status"] == "embedded"


def test_verify_checks_the_archives_per_card(machine):
    r = rr(machine, "--json", "verify", "--tree", F.TREE)
    assert r.returncode == 6
    (copy,) = json.loads(r.stdout)["copies"]
    (dev,) = copy["devices"]
    (k,) = [c for c in dev["checks"] if c["name"] == "kpack"]
    assert k["status"] == "fail" and NO_PACKAGE in k["summary"] and "carry gfx1100, gfx1101" in k["summary"]
    doc = jrun(machine, "verify", "--tree", F.TREE, "--target", "gfx1100", rc=0)
    (dev,) = doc["copies"][0]["devices"]
    assert [c["status"] for c in dev["checks"] if c["name"] == "kpack"] == ["pass"]
