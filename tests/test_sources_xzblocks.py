"""A multi-block xz data tarball (what dpkg writes on several threads) is read by block: blocks
inside unselected members are never decoded, the ones that are decoded are checked, and any
stream the block reader does not take is read front to back as before.

The streams are made by the system's ``xz`` with ``--block-size`` (as dpkg's threaded
compressor cuts them), the packages around them by hand (``ar_archive``)."""
from __future__ import annotations

import io
import lzma
import os
import shutil
import struct
import subprocess
import tarfile
import zlib
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.sources.unpack import extract_selected
from rocmrevive.sources.unpack.xzblocks import XzBlockStream, read_index
from tests.fixtures.aptrepo import PREFIX_DEBIAN, ar_archive, incompressible

PREFIX = "./" + PREFIX_DEBIAN
BLOCK = 64 << 10

# archive order: unselected members big enough to hold whole blocks, between selected ones
MEMBERS = [
    ("usr/share/doc/big-before.bin", incompressible(300_000, 1)),
    (PREFIX_DEBIAN + "TensileLibrary_Type_SS_Contraction_gfx906.co", incompressible(150_000, 2)),
    (PREFIX_DEBIAN + "TensileLibrary_Type_SS_Contraction_gfx908.co", incompressible(500_000, 3)),
    (PREFIX_DEBIAN + "TensileLibrary_lazy_gfx906.dat", b"\x82\xa9solutions" * 100),
    ("usr/share/doc/big-after.bin", incompressible(300_000, 4)),
]
SELECTED = {name.rsplit("/", 1)[1]: data for name, data in MEMBERS if "gfx906" in name}


def gfx906(name: str) -> bool:
    return "gfx906" in name


def _tar() -> tuple[bytes, dict[str, tuple[int, int]]]:
    """The tar stream and, per member, where its data lies in it: (start, end)."""
    buf = io.BytesIO()
    where = {}
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name, data in MEMBERS:
            ti = tarfile.TarInfo("./" + name)
            ti.size, ti.mode = len(data), 0o644
            t.addfile(ti, io.BytesIO(data))
            where[name] = (buf.tell() - len(data) - (-len(data) % 512), buf.tell() - (-len(data) % 512))
    return buf.getvalue(), where


def _xz(data: bytes, *args: str) -> bytes:
    xz = shutil.which("xz")
    assert xz, "the system xz (xz-utils) is needed to build multi-block streams"
    return subprocess.run([xz, "-c", "-1", *args], input=data, capture_output=True, check=True).stdout


def _deb(payload: bytes) -> bytes:
    return ar_archive([("debian-binary", b"2.0\n"), ("control.tar.gz", b""), ("data.tar.xz", payload)])


def _data_offset(deb: bytes) -> int:
    return deb.index(b"\xfd7zXZ\x00")


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    tar, where = _tar()
    xz = _xz(tar, f"--block-size={BLOCK}")
    path = tmp_path_factory.mktemp("xzb") / "multi.deb"
    path.write_bytes(_deb(xz))
    with open(path, "rb") as f:
        index = read_index(f.fileno(), _data_offset(path.read_bytes()), len(xz))
    return path, index, where


def _extract(art: Path, tmp_path: Path, external: bool = True) -> dict[str, bytes]:
    files = extract_selected(art, gfx906, tmp_path / "stage", member_prefix=PREFIX, external=external)
    return {f.name: (tmp_path / "stage" / f.name).read_bytes() for f in files}


def _corrupt_inside(multi, member: str) -> tuple[bytes, int]:
    """The package with one byte flipped in the middle of a block lying wholly inside ``member``'s
    data; and that block's number."""
    path, index, where = multi
    start, end = where[member]
    inside = [n for n, b in enumerate(index.blocks) if b.u_start >= start and b.u_start + b.u_size <= end]
    assert inside, f"no block lies wholly inside {member}: the fixture's sizes are wrong"
    n = inside[len(inside) // 2]
    blk = index.blocks[n]
    deb = bytearray(path.read_bytes())
    deb[_data_offset(bytes(deb)) + blk.c_off + blk.c_size // 2] ^= 0xFF
    return bytes(deb), n


# --------------------------------------------------------------------------------------------


def test_the_index_describes_the_stream_xz_wrote(multi):
    path, index, _where = multi
    tar, _ = _tar()
    assert index is not None and len(index.blocks) == -(-len(tar) // BLOCK)
    assert index.total == len(tar) and all(b.u_size == BLOCK for b in index.blocks[:-1])
    with open(path, "rb") as f:
        stream = XzBlockStream(f.fileno(), index, workers=2)
        out, mv = bytearray(), memoryview(bytearray(100_000))
        while k := stream.readinto(mv):
            out += mv[:k]
        stream.finish()
    assert bytes(out) == tar


@pytest.mark.parametrize("external", [True, False], ids=["system-tools", "python"])
def test_selected_members_come_out_whole(tmp_path, multi, external):
    assert _extract(multi[0], tmp_path, external) == SELECTED


def test_a_block_inside_skipped_data_is_never_decoded(tmp_path, multi):
    """Damage inside the unselected gfx908 object: the block holding it is skipped, so the
    extraction is the same (the pin on the whole package is what vouches for such bytes)."""
    deb, _n = _corrupt_inside(multi, PREFIX_DEBIAN + "TensileLibrary_Type_SS_Contraction_gfx908.co")
    art = tmp_path / "skipped-damage.deb"
    art.write_bytes(deb)
    assert _extract(art, tmp_path) == SELECTED


def test_a_damaged_block_that_is_read_is_refused(tmp_path, multi):
    deb, n = _corrupt_inside(multi, PREFIX_DEBIAN + "TensileLibrary_Type_SS_Contraction_gfx906.co")
    art = tmp_path / "read-damage.deb"
    art.write_bytes(deb)
    with pytest.raises(RevError) as ei:
        _extract(art, tmp_path)
    assert ei.value.code == "VERIFY_FAILED" and str(art) in ei.value.message
    assert f"block {n + 1} of {len(multi[1].blocks)}" in ei.value.message, ei.value.message
    assert not (tmp_path / "stage").exists()


def _rewrite_index(xz: bytes, edit) -> bytes:
    """``xz`` with its index records changed by ``edit(list of [unpadded, uncompressed])``,
    the index's CRC32 made right again, so only the sizes disagree with the blocks."""
    backward = (struct.unpack("<I", xz[-8:-4])[0] + 1) * 4
    raw = xz[-12 - backward:-12]
    count, i, recs = raw[1], 2, []
    for _ in range(count):
        rec = []
        for _f in range(2):
            v, shift = 0, 0
            while True:
                b = raw[i]
                v |= (b & 0x7F) << shift
                i, shift = i + 1, shift + 7
                if not b & 0x80:
                    break
            rec.append(v)
        recs.append(rec)
    edit(recs)

    def enc(v: int) -> bytes:
        out = bytearray()
        while v >= 0x80:
            out.append(v & 0x7F | 0x80)
            v >>= 7
        return bytes(out + bytes([v]))
    body = b"\0" + enc(count) + b"".join(enc(a) + enc(b) for a, b in recs)
    body += b"\0" * (-len(body) % 4)
    assert len(body) + 4 == backward, "the edit must keep the index's length"
    return xz[:-12 - backward] + body + struct.pack("<I", zlib.crc32(body)) + xz[-12:]


def test_an_index_that_lies_about_a_block_is_refused(tmp_path):
    tar, _ = _tar()
    xz = _xz(tar, f"--block-size={BLOCK}")

    def shrink_first(recs):  # the first block said to hold 8 bytes fewer: still a 3-byte number
        recs[0][1] -= 8
    art = tmp_path / "lying-index.deb"
    art.write_bytes(_deb(_rewrite_index(xz, shrink_first)))
    with pytest.raises(RevError) as ei:
        _extract(art, tmp_path)
    assert ei.value.code == "VERIFY_FAILED" and "block 1 of" in ei.value.message, ei.value.message


@pytest.mark.parametrize("shape", ["one-block", "two-streams", "stream-padding", "truncated"])
def test_streams_the_block_reader_does_not_take_are_read_front_to_back(tmp_path, shape):
    tar, _ = _tar()
    multi = _xz(tar, f"--block-size={BLOCK}")
    payload = {
        "one-block": lzma.compress(tar),
        "two-streams": _xz(tar[:len(tar) // 2], f"--block-size={BLOCK}") + _xz(tar[len(tar) // 2:]),
        "stream-padding": multi + b"\0" * 4,
        "truncated": multi[:-100],
    }[shape]
    art = tmp_path / f"{shape}.deb"
    art.write_bytes(_deb(payload))
    with open(art, "rb") as f:
        assert read_index(f.fileno(), _data_offset(art.read_bytes()), len(payload)) is None
    if shape == "truncated":
        with pytest.raises(RevError) as ei:
            _extract(art, tmp_path)
        assert ei.value.code == "VERIFY_FAILED"
    else:
        assert _extract(art, tmp_path) == SELECTED


def test_damage_anywhere_in_the_index_and_footer_is_an_error_or_ignored_never_a_crash(tmp_path, multi):
    """Each of the last 80 bytes flipped in turn: either the index is refused (front-to-back
    read, which then fails on the damage) or the extraction is refused; never a traceback,
    never a file kept."""
    path = multi[0]
    good = path.read_bytes()
    for back in range(1, 81):
        deb = bytearray(good)
        deb[len(deb) - back] ^= 0x55
        art = tmp_path / "flip.deb"
        art.write_bytes(bytes(deb))
        try:
            got = _extract(art, tmp_path)
        except RevError as exc:
            assert exc.code == "VERIFY_FAILED", (back, exc.message)
            assert not (tmp_path / "stage").exists()
        else:
            assert got == SELECTED, back
            shutil.rmtree(tmp_path / "stage")
    assert os.listdir(tmp_path) == ["flip.deb"]
