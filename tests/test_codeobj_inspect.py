"""``inspect`` off the happy path, from the outside (CLI, exit code, JSON) and through the
readers: cut files, several containers back to back (a dumped ``.hip_fatbin``), Tensile lazy
indexes, FIFOs, hostile section offsets, closed pipes, and output that never cuts an id or path.
Real data: Debian's rocBLAS packages and the compiled fixtures (tests/fixtures/codeobjects.py)."""
from __future__ import annotations

import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import threading

import msgpack
import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.codeobj.elf import parse_header, read_amdgpu_elf
from rocmrevive.codeobj.inspect import classify, inspect_file, iter_elf_payloads
from tests.conftest import REPO

MIXED = "bundler_host_gfx906_gfx906sx_gfx1030"   # host + gfx906 + gfx906:sramecc+:xnack- + gfx1030
COV6 = "bundler_cov6_gfx906_gfx942_gfx9generic"


def run(*args) -> tuple[int, dict]:
    res = CliRunner().invoke(cli, ["--json", *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def cli_proc(*args, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=300)


def entries(rep) -> list[tuple[str, int, int]]:
    return sorted((str(e.target), e.co_version or 0, -1 if e.e_flags is None else e.e_flags)
                  for e in rep.entries)


# ------------------------------------------------------------------------------------------
# cut files

@pytest.mark.debian
@pytest.mark.parametrize("cut", [100, 4096, None])
def test_a_piece_of_a_hsaco_is_flagged_without_deep(tmp_path, rocblas441, cut):
    real = (rocblas441 / "Kernels.so-000-gfx906.hsaco").read_bytes()
    piece = tmp_path / "piece.hsaco"
    piece.write_bytes(real[:cut if cut else len(real) // 2])
    code, doc = run("inspect", str(piece))
    assert code == 6 and doc["error"]["exit"] == 6
    (f,) = doc["files"]
    assert f["kind"] == "amdgpu-elf" and any(p.startswith("truncated") for p in f["problems"]), f
    whole = tmp_path / "whole.hsaco"
    whole.write_bytes(real)
    code, doc = run("inspect", str(whole))
    assert code == 0 and doc["files"][0]["problems"] == []


@pytest.mark.debian
def test_a_truncated_dat_is_flagged_with_deep(tmp_path, rocblas441):
    for name in ("TensileLibrary_lazy_gfx906.dat",
                 "TensileLibrary_Type_HH_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.dat"):
        real = (rocblas441 / name).read_bytes()
        (tmp_path / name).write_bytes(real[:len(real) - 9])
        code, doc = run("inspect", "--deep", str(tmp_path / name))
        assert code == 6, doc
        (f,) = doc["files"]
        assert f["kind"] == "tensile-dat" and f["problems"][0].startswith("truncated"), f
        (tmp_path / name).write_bytes(real + b"\0")
        code, doc = run("inspect", "--deep", str(tmp_path / name))
        assert code == 6 and "after the end" in doc["files"][0]["problems"][0]
        code, doc = run("inspect", "--deep", str(rocblas441 / name))
        assert code == 3 and doc["files"][0]["problems"] == []   # whole; 3: no code object in it


# ------------------------------------------------------------------------------------------
# several containers in one file

def test_two_real_bundles_back_to_back_report_every_target(tmp_path, codeobjects):
    a, b = codeobjects[MIXED].path, codeobjects[COV6].path
    joined = tmp_path / "joined.hipfb"
    joined.write_bytes(a.read_bytes() + b.read_bytes())    # cat a b: the second is not 4096-aligned
    want = sorted(entries(inspect_file(a)) + entries(inspect_file(b)))
    assert len(want) == 6
    for deep in (False, True):
        rep = inspect_file(joined, deep=deep)
        assert rep.problems == [] and entries(rep) == want, (rep.problems, entries(rep))
    # the same through the payload reader the Tensile cross-reference uses
    assert sorted(str(co.target) for co, _ in iter_elf_payloads(joined)) == sorted(t for t, _, _ in want)
    code, doc = run("inspect", str(joined))
    assert code == 0 and doc["summary"]["code_objects"] == 6


def test_a_ccob_then_a_bundle_and_trailing_junk(tmp_path, codeobjects):
    ccob = codeobjects["ccob_v3_zstd"].path.read_bytes()
    plain = codeobjects[COV6].path.read_bytes()
    pad = b"\0" * (-len(ccob) % 4096)                    # as in a .hip_fatbin: 4096-aligned
    f = tmp_path / "fatbin.bin"
    f.write_bytes(ccob + pad + plain)
    rep = inspect_file(f, deep=True)
    assert rep.problems == [] and len(rep.entries) == 6
    assert {e.container.split("@")[0] for e in rep.entries} == {"ccob-v3-zstd", "bundle"}
    f.write_bytes(ccob + pad + plain + b"junk")
    rep = inspect_file(f)
    assert len(rep.entries) == 6 and any("unrecognised bytes" in p for p in rep.problems)


@pytest.mark.debian
def test_a_dumped_hip_fatbin_reports_what_the_host_library_reports(tmp_path, rocblas52):
    """``objcopy -O binary --only-section=.hip_fatbin`` of Debian's librocblas.so.5.2 (65 CCOB v3
    bundles back to back) lists exactly the code objects of the library itself."""
    host = rocblas52.parent.parent.parent / "librocblas.so.5.2"
    dump = tmp_path / "hip_fatbin.bin"
    subprocess.run(["objcopy", "-O", "binary", "--only-section=.hip_fatbin", str(host), str(dump)], check=True)
    from_host, from_dump = inspect_file(host), inspect_file(dump)
    assert from_dump.kind == "ccob" and from_dump.problems == [] and from_host.problems == []
    assert len(from_host.entries) > 800
    assert entries(from_dump) == entries(from_host)
    code, doc = run("inspect", str(dump))
    assert code == 0 and doc["summary"]["code_objects"] == len(from_host.entries)


# ------------------------------------------------------------------------------------------
# labels and wording

@pytest.mark.debian
def test_lazy_indexes_are_tensile_dat_in_either_key_order(tmp_path, rocblas441, rocblas52):
    for lib in (rocblas441, rocblas52):
        for p in lib.glob("TensileLibrary_lazy_gfx*.dat"):
            assert classify(p.read_bytes()[:64]) == "tensile-dat", p
    doc = msgpack.unpackb((rocblas441 / "TensileLibrary_lazy_gfx906.dat").read_bytes(), strict_map_key=False)
    flipped = tmp_path / "TensileLibrary_lazy_gfx906.dat"
    flipped.write_bytes(msgpack.packb({"library": doc["library"], "solutions": doc["solutions"]}))
    assert not flipped.read_bytes().startswith(b"\x82\xa9solutions")
    code, out = run("inspect", "--deep", str(flipped))
    assert code == 3 and out["files"][0]["kind"] == "tensile-dat" and out["files"][0]["problems"] == []


def test_host_elf_wording_names_the_machine():
    code, doc = run("inspect", sys.executable)
    (f,) = doc["files"]
    assert f["kind"] == "host-elf-no-device-code"
    assert "x86-64 ELF" in f["note"] and "machine 62" not in f["note"]


# ------------------------------------------------------------------------------------------
# hostile inputs: FIFOs, offsets past any file

def _with_timeout(fn, seconds=60):
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "hung (a FIFO was opened for reading)"
    return out[0]


def test_a_fifo_is_never_opened(tmp_path):
    fifo = tmp_path / "x.hsaco"
    os.mkfifo(fifo)
    rep = _with_timeout(lambda: inspect_file(fifo))
    assert rep.kind == "unreadable" and "FIFO" in rep.problems[0]
    r = _with_timeout(lambda: cli_proc("inspect", str(fifo)))
    assert r.returncode == 6 and "FIFO" in r.stderr and "Traceback" not in r.stderr
    r = _with_timeout(lambda: cli_proc("inspect", str(tmp_path)))   # inside a folder: skipped
    assert r.returncode == 3 and "Traceback" not in r.stderr


@pytest.mark.debian
def test_fifos_in_a_library_folder_do_not_hang_the_cross_reference(tmp_path, rocblas441):
    from rocmrevive.tensile import xref as X
    from tests.test_tensile import GFX906, HS_PLACEHOLDER, debian_copy

    lib = debian_copy(tmp_path, rocblas441)
    for name in (HS_PLACEHOLDER + ".co", "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.dat"):
        (lib / name).unlink()
        os.mkfifo(lib / name)
    rep = _with_timeout(lambda: X.cross_reference(lib, GFX906), 300)
    kinds = {(f.kind, f.file) for f in rep.errors}
    assert (X.CODE_OBJECT_UNREADABLE, HS_PLACEHOLDER + ".co") in kinds
    assert any(k == X.PLACEHOLDER_UNREADABLE for k, _ in kinds)


@pytest.mark.debian
def test_section_offsets_past_any_file_are_problems_not_overflows(tmp_path, rocblas441):
    """pyelftools raises OverflowError on an sh_offset of 2**64-1 (5 of 6,000 fuzz cases of the
    review); the readers turn it into a problem, and verify into a failed check."""
    real = bytearray((rocblas441 / "Kernels.so-000-gfx906.hsaco").read_bytes())
    hdr = parse_header(bytes(real[:64]))
    for i in range(hdr.e_shnum):
        struct.pack_into("<Q", real, hdr.e_shoff + i * 64 + 24, 2**64 - 1)
    obj = read_amdgpu_elf(bytes(real))
    assert obj.problems and str(obj.target) == "gfx906"
    f = tmp_path / "bad.hsaco"
    f.write_bytes(bytes(real))
    code, doc = run("inspect", "--deep", str(f))
    assert code == 6 and doc["files"][0]["problems"]


def test_the_header_fast_path_says_what_the_full_read_says(tmp_path, codeobjects, monkeypatch):
    """A bundle's sound code objects are read by ``_sound_entry`` (two struct calls); anything it
    does not vouch for goes the full way. Every byte of the first code object's ELF header and
    section table, set to 0x00, 0xFF or flipped, and the entry id naming another target, give
    the same entries and problems with the fast path as without it."""
    from rocmrevive.codeobj import bundle as B
    from rocmrevive.codeobj import inspect as I

    real = codeobjects[MIXED].path.read_bytes()
    dev = next(e for e in B.parse_bundle(real) if not e.is_host)
    hdr = parse_header(real[dev.offset:dev.offset + 64])
    assert hdr is not None and hdr.e_shnum > 3
    spots = list(range(dev.offset, dev.offset + 64))
    spots += range(dev.offset + hdr.e_shoff, dev.offset + hdr.e_shoff + hdr.e_shnum * 64)
    cases = [bytes(real)]
    for at in spots:
        for value in (0x00, 0xFF, real[at] ^ 0x80):
            if value != real[at]:
                cases.append(real[:at] + bytes([value]) + real[at + 1:])
    other = real.replace(b"--gfx1030", b"--gfx1031", 1)
    assert other != real
    cases.append(other)
    f = tmp_path / "b.hipfb"
    full = I._sound_entry

    def seen(data: bytes, fast: bool) -> tuple:
        f.write_bytes(data)
        monkeypatch.setattr(I, "_sound_entry", full if fast else lambda *a: None)
        rep = inspect_file(f)
        return rep.kind, [e.to_json() for e in rep.entries], rep.problems

    differ, flagged = [], 0
    for data in cases:
        slow = seen(data, False)
        flagged += bool(slow[2])
        if seen(data, True) != slow:
            differ.append(data)
    assert not differ, f"{len(differ)} of {len(cases)} damaged bundles read otherwise by the fast path"
    assert flagged > len(cases) // 10    # the damage is seen: the comparison is not of clean reads only
    assert seen(other, True)[2] == ["bundle entry hipv4-amdgcn-amd-amdhsa--gfx1031 holds code for gfx1030"]


def _cut_a_section(real: bytes, entry_id_part: bytes) -> bytes:
    """``real`` with one section of the entry whose id ends in ``entry_id_part`` reaching past
    the entry's end (its sh_offset set to the entry's size): the full check flags it."""
    from rocmrevive.codeobj import bundle as B

    dev = next(e for e in B.parse_bundle(real) if e.entry_id.endswith(entry_id_part.decode()))
    hdr = parse_header(real[dev.offset:dev.offset + 64])
    assert hdr is not None
    out = bytearray(real)
    for i in range(1, hdr.e_shnum):
        at = dev.offset + hdr.e_shoff + i * 64
        kind, size = struct.unpack_from("<I", out, at + 4)[0], struct.unpack_from("<Q", out, at + 32)[0]
        if kind != 8 and size:   # not SHT_NOBITS, some bytes
            struct.pack_into("<Q", out, at + 24, dev.size)
            return bytes(out)
    raise AssertionError("no section with bytes")


def test_a_focus_reads_other_targets_entries_to_their_header_only(tmp_path, codeobjects):
    """audit's scan (issue 40) gives ``inspect_file`` the machine's processors: a cut in another
    target's entry is not this machine's problem (the runtime loads only the agent's entry), a
    cut in the machine's own entry still is, and every entry keeps its target and version."""
    real = codeobjects[MIXED].path.read_bytes()
    f = tmp_path / "b.hipfb"
    f.write_bytes(_cut_a_section(real, b"--gfx1030"))
    whole = inspect_file(f)
    assert any("gfx1030" in p for p in whole.problems), whole.problems
    mine = inspect_file(f, focus=frozenset({"gfx906"}))
    assert mine.problems == [], mine.problems
    assert entries(mine) == entries(inspect_file(codeobjects[MIXED].path))
    assert [e.co_version for e in mine.entries] == [e.co_version for e in whole.entries]
    assert inspect_file(f, focus=frozenset({"gfx1030"})).problems == whole.problems
    f.write_bytes(_cut_a_section(real, b"--gfx906"))   # the machine's own entry: flagged either way
    assert inspect_file(f, focus=frozenset({"gfx906"})).problems == inspect_file(f).problems != []
    f.write_bytes(real.replace(b"--gfx1030", b"--gfx1031", 1))   # the id against the ELF: still read
    assert inspect_file(f, focus=frozenset({"gfx906"})).problems == [
        "bundle entry hipv4-amdgcn-amd-amdhsa--gfx1031 holds code for gfx1030"]


# ------------------------------------------------------------------------------------------
# output: pipes and widths

@pytest.mark.debian
def test_head_closing_the_pipe_is_a_quiet_exit(rocblas441):
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    p = subprocess.Popen([sys.executable, "-m", "rocmrevive.cli.main", "inspect", str(rocblas441)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = p.stdout.readline()
    p.stdout.close()                                       # what `| head -1` does
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0 and first.startswith(b"kind")
    assert err == "", err


@pytest.mark.debian
def test_piped_report_keeps_every_file_name_whole(tmp_path, rocblas441):
    report = tmp_path / "report.txt"
    with open(report, "w") as out:
        r = cli_proc("inspect", str(rocblas441), stdout=out)
    assert r.returncode == 0
    text = report.read_text()
    lines = text.splitlines()
    elves = [p for p in sorted(rocblas441.iterdir()) if p.read_bytes()[:4] == b"\x7fELF"]
    assert len(elves) == 970
    names = {line.split()[-1] for line in lines[1:-1]}
    assert {str(p) for p in elves} <= names               # 970 paths, each whole on its line
    assert max(len(x) for x in lines) > 160                # not cut to a fixed width either


def _on_a_terminal(args: list[str], cols: int) -> str:
    """Run the CLI with stdout on a pseudo-terminal ``cols`` wide; what it wrote."""
    import fcntl
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO), "COLUMNS": str(cols), "TERM": "dumb"}
    p = subprocess.Popen([sys.executable, "-m", "rocmrevive.cli.main", "--no-progress", *args],
                         stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=300)
    os.close(master)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_an_80_column_terminal_gets_whole_ids_and_paths(tmp_path, codeobjects):
    deep_dir = tmp_path / ("a-folder-with-a-long-name-" * 3)
    deep_dir.mkdir()
    f = deep_dir / "bundler_host_gfx906_gfx906sx_gfx1030.hipfb"
    shutil.copy(codeobjects[MIXED].path, f)
    text = _on_a_terminal(["inspect", str(f)], 80)
    assert str(f) in text
    assert "gfx906:sramecc+:xnack-" in text and "hipv4-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-" in text
    assert "…" not in text
