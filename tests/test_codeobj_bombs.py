"""Compression bombs in real CCOB containers, written with the project's own CCOB writer
(tests/fixtures/ccob.py), against the commands that read them: ``inspect``, ``inspect --deep``,
``verify`` and ``install --from FOLDER`` (its staged check). Each command runs as a subprocess
whose peak RSS is measured (``getrusage(RUSAGE_CHILDREN)`` in a fresh wrapper process, so no
earlier child of the test run counts); each must end with exit 6 and one line, under 1 GiB.

The shapes are the review's: a ~0.5 MB v3/zstd CCOB that inflates to 16 GiB and a ~19 MB
v1/zlib one that inflates to 18 GiB, each both declaring its real size (refused from the header:
past ``MAX_UNCOMPRESSED``) and declaring a size under the cap but inflating far past it (the
stream stops at the stated size; memory holds one code object at most).
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from rocmrevive.codeobj import bundle as B
from tests.conftest import REPO
from tests.fixtures import ccob

RSS_LIMIT = 1 << 30
HOST_ID = "host-x86_64-unknown-linux-gnu-"
GFX906_ID = "hipv4-amdgcn-amd-amdhsa--gfx906"

# Runs argv[1:] and prints the child's peak RSS in bytes (ru_maxrss is in KiB on Linux).
_WRAPPER = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "sys.stderr.write(r.stderr)\n"
            "sys.stdout.write(r.stdout)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, file=sys.stderr)\n"
            "sys.exit(r.returncode)\n")


def measured(*args: str) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr without the RSS line, peak RSS in bytes) of the CLI."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-c", _WRAPPER, sys.executable, "-m", "rocmrevive.cli.main", *args],
                       capture_output=True, text=True, env=env, timeout=600)
    *err, rss = r.stderr.rstrip("\n").split("\n")
    return r.returncode, r.stdout, "\n".join(err), int(rss)


def bundle_head(sizes: list[int]) -> bytes:
    """The entry table of a real-shaped bundle: the empty host entry, then one gfx906 entry per
    size, each 4096-aligned (clang's HIPCodeObjectAlign), padded to the first entry."""
    ids = [HOST_ID] + [GFX906_ID] * len(sizes)
    table_len = 32 + sum(24 + len(i) for i in ids)
    first = -(-table_len // 4096) * 4096
    out = B.BUNDLE_MAGIC + struct.pack("<Q", len(ids))
    out += struct.pack("<QQQ", first, 0, len(HOST_ID)) + HOST_ID.encode()
    off = first
    for size in sizes:
        out += struct.pack("<QQQ", off, size, len(GFX906_ID)) + GFX906_ID.encode()
        off += -(-size // 4096) * 4096
    return out.ljust(first, b"\0")


GIB, MIB = 1 << 30, 1 << 20


def _bombs() -> dict[str, tuple[bytes, str]]:
    """name -> (CCOB bytes, the words the one line must contain)."""
    # honest headers, huge output: refused before anything is decompressed
    v3_huge = ccob.write_ccob_bomb(bundle_head([16 * GIB - 8192]), 16 * GIB, version=3, method="zstd")
    v1_huge = ccob.write_ccob_bomb(bundle_head([4 * GIB - 8192]), 18 * GIB, version=1, method="zlib")
    # under the caps on paper (entries of 200 MiB, 600 MiB in all), 16/18 GiB in the payload
    lying = bundle_head([200 * MIB] * 3)
    v3_lie = ccob.write_ccob_bomb(lying, 16 * GIB, version=3, method="zstd", declared=600 * MIB + 4096)
    v1_lie = ccob.write_ccob_bomb(lying, 18 * GIB, version=1, method="zlib", declared=600 * MIB + 4096)
    return {"v3_zstd_16g": (v3_huge, "uncompressed bytes, more than"),
            "v1_zlib_18g": (v1_huge, "uncompressed bytes, more than"),
            "v3_zstd_lying": (v3_lie, "more than its stated"),
            "v1_zlib_lying": (v1_lie, "more than its stated")}


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    d = tmp_path_factory.mktemp("bombs")
    out = {}
    for name, (blob, words) in _bombs().items():
        p = d / f"{name}.co"
        p.write_bytes(blob)
        out[name] = (p, words)
    return out


def test_bombs_have_the_reviewed_shapes(bombs):
    sizes = {n: p.stat().st_size for n, (p, _) in bombs.items()}
    assert 400_000 < sizes["v3_zstd_16g"] < 700_000           # the review's: 491 KB
    assert 17_000_000 < sizes["v1_zlib_18g"] < 21_000_000     # the review's: 18.7 MB
    raw = bombs["v3_zstd_16g"][0].read_bytes()
    assert struct.unpack_from("<Q", raw, 16)[0] > 15 * GIB     # declared honestly: 16 GiB


@pytest.mark.slow
@pytest.mark.parametrize("name", ["v3_zstd_16g", "v1_zlib_18g", "v3_zstd_lying", "v1_zlib_lying"])
@pytest.mark.parametrize("deep", [False, True])
def test_inspect_a_bomb_is_bounded(bombs, name, deep):
    path, words = bombs[name]
    if name == "v3_zstd_lying" and not deep:
        words = "not an ELF file"  # headers only: the lie is past the head, the head holds zeros
    code, out, err, rss = measured("inspect", *(["--deep"] if deep else []), str(path))
    assert code == 6, (out, err)
    assert rss < RSS_LIMIT, f"peak RSS {rss:,} bytes"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in err, lines
    code, out, err, rss = measured("--json", "inspect", *(["--deep"] if deep else []), str(path))
    doc = json.loads(out)
    assert code == 6 and doc["error"]["exit"] == 6 and rss < RSS_LIMIT
    (f,) = doc["files"]
    assert any(words in p for p in f["problems"]), f["problems"]


@pytest.mark.debian
@pytest.mark.slow
@pytest.mark.parametrize("name", ["v3_zstd_16g", "v1_zlib_lying"])
def test_verify_a_library_with_a_bomb_is_bounded(bombs, name, tmp_path, rocblas441):
    from tests.test_tensile import HS_PLACEHOLDER, debian_copy, rewrite

    lib = debian_copy(tmp_path, rocblas441)
    rewrite(lib / (HS_PLACEHOLDER + ".co"), bombs[name][0].read_bytes())
    tree = lib.parent.parent.parent
    code, out, err, rss = measured("--json", "verify", "--tree", str(tree), "--target", "gfx906:sramecc+:xnack-")
    assert code == 6, (out[-2000:], err)
    assert rss < RSS_LIMIT, f"peak RSS {rss:,} bytes"
    doc = json.loads(out)
    (copy,) = doc["copies"]
    (dev,) = copy["devices"]
    tensile = next(c for c in dev["checks"] if c["name"] == "tensile")
    assert tensile["status"] == "fail"
    hit = [o for o in tensile["offenders"] if o["file"] == HS_PLACEHOLDER + ".co"]
    assert hit and bombs[name][1] in hit[0]["problem"], tensile["offenders"]
    assert "Traceback" not in err


@pytest.mark.slow
def test_install_from_a_folder_with_a_bomb_changes_nothing(bombs, tmp_path):
    """``install --from FOLDER`` pins nothing, so the staged check is all that stands between a
    bomb and the tree: it must refuse with exit 6, one line, bounded memory, no change."""
    from tests.test_install import build, mr, tree_hash, write_manifest

    root = build("dual-mi50", tmp_path / "m")
    mr.build_tree(root, rocm_version="6.4.3", arches_present=("gfx908",), replace=True)
    deb = Path(mr.build_source_deb(tmp_path / "librocblas4_6.4.4-4_amd64.deb")["path"])
    mf = write_manifest(tmp_path / "manifests", deb)
    folder = tmp_path / "unpacked"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(folder)], check=True)
    victim = sorted(folder.rglob("*gfx906*.co"))[0]
    victim.write_bytes(bombs["v3_zstd_lying"][0].read_bytes())
    before = tree_hash(root / "opt")
    code, out, err, rss = measured("--root", str(root), "install", "--yes", "--manifests", str(mf),
                                   "--from", str(folder), "--cache", str(tmp_path / "cache"))
    assert code == 6, (out[-2000:], err)
    assert rss < RSS_LIMIT, f"peak RSS {rss:,} bytes"
    assert victim.name in err and "Traceback" not in err
    assert tree_hash(root / "opt") == before
