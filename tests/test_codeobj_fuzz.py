"""The readers never crash, hang or allocate what a hostile header claims."""
from __future__ import annotations

import struct
import tracemalloc
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocmrevive.codeobj import bundle as B
from rocmrevive.codeobj.inspect import KINDS, inspect_file

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _bundle(entries: list[tuple[str, bytes]]) -> bytes:
    head = B.BUNDLE_MAGIC + struct.pack("<Q", len(entries))
    table_len = len(head) + sum(24 + len(i) for i, _ in entries)
    off = (table_len + 4095) // 4096 * 4096
    table, body = b"", b""
    for eid, payload in entries:
        table += struct.pack("<QQQ", off, len(payload), len(eid)) + eid.encode()
        body += payload.ljust((len(payload) + 4095) // 4096 * 4096, b"\0") if payload else b""
        off += (len(payload) + 4095) // 4096 * 4096 if payload else 0
    out = (head + table).ljust((table_len + 4095) // 4096 * 4096, b"\0") + body
    return out


def _elf_header(flags=0x52F, abiv=2, machine=224) -> bytes:
    ident = b"\x7fELF" + bytes([2, 1, 1, 64, abiv]) + b"\0" * 7
    return ident + struct.pack("<HHIQQQIHHHHHH", 3, machine, 1, 0, 0, 0, flags, 64, 56, 0, 64, 0, 0)


SEEDS = [
    _elf_header(),
    _bundle([("host-x86_64-unknown-linux-gnu-", b""), ("hipv4-amdgcn-amd-amdhsa--gfx906", _elf_header())]),
]


def _ccob(version: int, inner: bytes) -> bytes:
    comp = zlib.compress(inner)
    h = B.ccob_hash(inner)
    if version == 1:
        hdr = b"CCOB" + struct.pack("<HHIQ", 1, 0, len(inner), h)
    elif version == 2:
        hdr = b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + len(comp), len(inner), h)
    else:
        hdr = b"CCOB" + struct.pack("<HHQQQ", 3, 0, 32 + len(comp), len(inner), h)
    return hdr + comp


SEEDS += [_ccob(v, SEEDS[1]) for v in (1, 2, 3)]


def _check(tmp_path, data: bytes, deep: bool = False):
    p = tmp_path / "f"
    p.write_bytes(data)
    rep = inspect_file(p, deep=deep)
    assert rep.kind in KINDS
    return rep


def test_seeds_are_read(tmp_path):
    for seed in SEEDS:
        rep = _check(tmp_path, seed, deep=True)
        assert [str(e.target) for e in rep.entries] == ["gfx906"], (rep.kind, rep.problems)


@SETTINGS
@given(data=st.binary(max_size=2048), prefix=st.sampled_from([b"", b"\x7fELF", B.BUNDLE_MAGIC, b"CCOB",
                                                                b"\x82\xa9solutions"]))
def test_random_bytes_never_crash(tmp_path, data, prefix):
    _check(tmp_path, prefix + data, deep=True)


@SETTINGS
@given(seed=st.sampled_from(SEEDS), edits=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)),
                                                   min_size=1, max_size=8),
       cut=st.integers(0, 5000))
def test_mutated_real_headers_never_crash(tmp_path, seed, edits, cut):
    b = bytearray(seed)
    for pos, val in edits:
        if pos < len(b):
            b[pos] = val
    _check(tmp_path, bytes(b[:cut] if cut < len(b) else b), deep=True)


@pytest.mark.parametrize("data,needle", [
    (B.BUNDLE_MAGIC + struct.pack("<Q", 2**63), "entries"),
    (B.BUNDLE_MAGIC + struct.pack("<QQQQ", 1, 4096, 2**40, 30) + b"hipv4-amdgcn-amd-amdhsa--gfx906", "past the end"),
    (b"CCOB" + struct.pack("<HHQQQ", 3, 1, 2**40, 2**62, 0), "uncompressed bytes"),
    (b"CCOB" + struct.pack("<HHQQQ", 3, 1, 2**40, 1000, 0), "only"),
    (b"CCOB" + struct.pack("<HHIIQ", 2, 0, 10, 5, 0), "smaller than its header"),
    (b"CCOB" + struct.pack("<HHIIQ", 2, 7, 100, 5, 0), "method"),
])
def test_hostile_sizes_are_refused_without_allocating(tmp_path, data, needle):
    tracemalloc.start()
    rep = _check(tmp_path, data + b"\0" * 64, deep=True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8 << 20
    assert any(needle in p for p in rep.problems), rep.problems


def test_zlib_bomb_is_bounded(tmp_path):
    """A CCOB whose payload inflates far past its stated size stops at the limit."""
    bomb = zlib.compress(b"\0" * (256 << 20), 9)  # 256 MiB of zeros in ~250 KB
    data = b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + len(bomb), 4096, 0) + bomb
    tracemalloc.start()
    rep = _check(tmp_path, data, deep=True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 << 20
    assert any("more than its stated" in p for p in rep.problems), rep.problems
