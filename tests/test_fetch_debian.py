"""`rocmrevive fetch` with Debian's real librocblas4 6.4.4-4 (280 MB): from a mirror served on
127.0.0.1 and from the local .deb, the shipped manifest yields the 140 gfx906 files, byte for byte
what `dpkg-deb -x` gives."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from tests.fixtures.aptrepo import RepoServer

REPO = Path(__file__).resolve().parent.parent
POOL = "pool/main/r/rocblas/librocblas4_6.4.4-4_amd64.deb"

pytestmark = [pytest.mark.debian, pytest.mark.slow]


def _fetch(*args):
    res = CliRunner().invoke(cli, ["--json", "fetch", "--manifests", str(REPO / "manifests"),
                                   "--manifest", "rocblas-4.4-gfx906", *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def _check_140(doc, ref: Path):
    (m,) = doc["manifests"]
    assert m["ok"] and m["extracted"]["files"] == 140
    out = Path(m["extracted"]["dir"])
    sums = dict(reversed(line.split("  ", 1)) for line in (out / "SHA256SUMS").read_text().splitlines())
    want = sorted(p.name for p in ref.iterdir() if "gfx906" in p.name)
    assert sorted(sums) == want and len(want) == 140
    for name in want:
        data = (out / name).read_bytes()
        assert data == (ref / name).read_bytes(), name
        assert hashlib.sha256(data).hexdigest() == sums[name]


def test_fetch_real_package_from_a_local_mirror(tmp_path, debian_debs, debian_pkgs):
    mirror = tmp_path / "srv"
    (mirror / "debian" / POOL).parent.mkdir(parents=True)
    os.symlink(debian_debs["librocblas4_6.4.4-4_amd64"], mirror / "debian" / POOL)
    with RepoServer(mirror) as srv:
        code, doc = _fetch("--mirror", srv.url + "/debian", "--cache", str(tmp_path / "cache"),
                           "--extract", str(tmp_path / "x"))
    assert code == 0, doc
    src = doc["manifests"][0]["sources"][0]
    assert src["status"] == "downloaded" and src["verified"] is True
    assert src["sha256"] == "05613a07d3fba2feaa8b81a86a22bc142dd4fb6630c44c416883a33bf22a1cdb"
    assert src["url"] == f"{srv.url}/debian/{POOL}"
    _check_140(doc, debian_pkgs["librocblas4_6.4.4-4_amd64"] / "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library")


def test_fetch_real_package_from_local_deb(tmp_path, debian_debs, debian_pkgs):
    code, doc = _fetch("--from", str(debian_debs["librocblas4_6.4.4-4_amd64"]), "--cache", str(tmp_path / "cache"),
                       "--extract", str(tmp_path / "x"))
    assert code == 0, doc
    assert doc["manifests"][0]["sources"][0]["status"] == "local"
    _check_140(doc, debian_pkgs["librocblas4_6.4.4-4_amd64"] / "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library")
