"""The code-object core against objects compiled here by real compilers; the expected facts
come from llvm-readelf, GNU readelf and clang-offload-bundler (tests/fixtures/codeobjects.py)."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from rocmrevive.codeobj.inspect import inspect_file, iter_elf_payloads


def _key(e: dict, exact: bool):
    target = e["target"] if exact else e["processor"]
    return (e["entry_id"], target, e["co_version"], e["offset"], e["size"], e["container"])


def _mine(co, exact: bool):
    target = str(co.target) if exact else co.target.processor
    return (co.entry_id, target, co.co_version, co.offset, co.size, co.container)


@pytest.mark.parametrize("deep", [False, True])
def test_good_fixtures_match_the_independent_tools(codeobjects, deep):
    checked = 0
    for f in codeobjects.good():
        if f.path.is_dir():
            continue
        rep = inspect_file(f.path, deep=deep)
        assert rep.kind == f.kind, (f.name, rep.kind)
        assert not rep.problems, (f.name, rep.problems)
        want = sorted(_key(e, e["features_exact"]) for e in f.expected_entries)
        exact = {e["entry_id"]: e["features_exact"] for e in f.expected_entries}
        got = sorted(_mine(c, exact.get(c.entry_id, True)) for c in rep.entries)
        assert got == want, f.name
        for c in rep.entries:
            e = next(x for x in f.expected_entries if x["offset"] == c.offset and x["entry_id"] == c.entry_id)
            if c.e_flags is not None:
                assert c.e_flags == e["e_flags"], f.name
            if deep and e["note_count"]:
                assert c.kernels == len(e["kernel_names"]), f.name
        checked += 1
    assert checked >= 35


def test_payloads_are_the_bytes_the_bundler_unbundles(codeobjects):
    for f in codeobjects.good():
        if f.path.is_dir() or not f.expected_entries:
            continue
        got = {(co.entry_id, co.offset): hashlib.sha256(data).hexdigest()
               for co, data in iter_elf_payloads(f.path)}
        want = {(e["entry_id"], e["offset"]): e["sha256"] for e in f.expected_entries}
        assert got == want, f.name


def test_two_bundles_in_one_fatbin_are_both_walked(codeobjects):
    rep = inspect_file(codeobjects["libhip_two_bundles"].path, deep=True)
    containers = {c.container.split("@")[0] for c in rep.entries}
    assert containers == {"bundle", "ccob-v2-zstd"} or containers == {"bundle", "ccob-v2-zlib"}
    assert {str(c.target) for c in rep.entries} == {"gfx906", "gfx908", "gfx906:sramecc+:xnack-", "gfx1030"}


def test_metadata_cross_check_sees_every_note(codeobjects):
    f = codeobjects["tensile_gfx906_two_kernels"]
    rep = inspect_file(f.path, deep=True)
    assert rep.entries[0].kernels == 2 and not rep.problems


@pytest.mark.parametrize("deep", [False, True])
def test_bad_files_each_give_a_problem(codeobjects, deep):
    for f in codeobjects.bad():
        if f.problems_need_deep and not deep:
            continue
        if f.path.is_dir():
            continue
        rep = inspect_file(f.path, deep=deep)
        assert rep.problems, (f.name, rep.kind)


def test_a_disagreeing_note_is_reported(codeobjects, tmp_path):
    """Patch e_flags of a gfx906:sramecc+:xnack- object to say gfx908: the metadata note still
    says gfx906, and --deep must report the disagreement instead of hiding it."""
    src = codeobjects["gfx906_sramecc_on_xnack_off_v4"].path.read_bytes()
    bad = bytearray(src)
    flags = int.from_bytes(bad[48:52], "little")
    bad[48:52] = ((flags & ~0xFF) | 0x30).to_bytes(4, "little")
    p = tmp_path / "lies.hsaco"
    p.write_bytes(bytes(bad))
    rep = inspect_file(p, deep=True)
    assert any("e_flags say gfx908" in x and "gfx906:sramecc+:xnack-" in x for x in rep.problems), rep.problems


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", *args], capture_output=True, text=True)


def test_cli_exit_codes_and_json(codeobjects, tmp_path):
    good = codeobjects["libhip_gfx906_gfx908"].path
    r = _cli("inspect", "--json", str(good))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["summary"]["processors"] == ["gfx906", "gfx908"]
    assert doc["files"][0]["kind"] == "host-elf"

    bad = codeobjects["bad_bundle_entry_past_end"].path
    r = _cli("--json", "inspect", str(bad), str(good))
    assert r.returncode == 6
    doc = json.loads(r.stdout)
    assert doc["error"]["code"] == "VERIFY_FAILED" and doc["error"]["exit"] == 6
    assert doc["summary"]["files_with_problems"] == 1

    text = codeobjects["text_folder"].path
    r = _cli("inspect", str(text))
    assert r.returncode == 3 and "no GPU code object" in r.stderr
    assert "Traceback" not in r.stderr

    r = _cli("inspect", str(tmp_path / "missing"))
    assert r.returncode == 2


def test_cli_human_output_is_plain_when_piped(codeobjects):
    r = _cli("inspect", str(codeobjects["bundler_host_gfx906_gfx906sx_gfx1030"].path))
    assert r.returncode == 0
    assert "\x1b[" not in r.stdout
    assert "gfx906:sramecc+:xnack-" in r.stdout and "hipv4-amdgcn-amd-amdhsa--gfx1030" in r.stdout
