"""`rocmrevive fetch` with Debian's real librocblas4 6.4.4-4 (280 MB; or the revision of rocBLAS
4.4.1 sid had instead, when the pin drifted): from a mirror served on 127.0.0.1 and from the local
.deb, the shipped manifest yields the package's gfx906 files (140 in 6.4.4-4, counted in the package),
byte for byte what `dpkg-deb -x` gives."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from tests.fixtures.aptrepo import RepoServer
from tests.fixtures.fetched import fetched, gfx906_files, manifests_for_fetched

PKG = "librocblas4_6.4.4-4_amd64"   # the pin; fetched(PKG) is the package the tests got
LIB = "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library"

pytestmark = [pytest.mark.debian, pytest.mark.slow]


def _fetch(tmp_path, *args):
    res = CliRunner().invoke(cli, ["--json", "fetch", "--manifests", str(manifests_for_fetched(tmp_path)),
                                   "--manifest", "rocblas-4.4-gfx906", *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def _check_gfx906(doc, ref: Path):
    (m,) = doc["manifests"]
    want = gfx906_files(ref)
    assert want and m["ok"] and m["extracted"]["files"] == len(want)
    out = Path(m["extracted"]["dir"])
    sums = dict(reversed(line.split("  ", 1)) for line in (out / "SHA256SUMS").read_text().splitlines())
    assert sorted(sums) == want
    for name in want:
        data = (out / name).read_bytes()
        assert data == (ref / name).read_bytes(), name
        assert hashlib.sha256(data).hexdigest() == sums[name]


def test_fetch_real_package_from_a_local_mirror(tmp_path, debian_debs, debian_pkgs):
    got = fetched(PKG)
    pool = f"pool/main/r/rocblas/{got.deb}"
    mirror = tmp_path / "srv"
    (mirror / "debian" / pool).parent.mkdir(parents=True)
    os.symlink(debian_debs[PKG], mirror / "debian" / pool)
    with RepoServer(mirror) as srv:
        code, doc = _fetch(tmp_path, "--mirror", srv.url + "/debian", "--cache", str(tmp_path / "cache"),
                           "--extract", str(tmp_path / "x"))
    assert code == 0, doc
    src = doc["manifests"][0]["sources"][0]
    assert src["status"] == "downloaded" and src["verified"] is True
    assert src["sha256"] == got.sha256 and src["size"] == got.size
    assert src["url"] == f"{srv.url}/debian/{pool}"
    _check_gfx906(doc, debian_pkgs[PKG] / LIB)


def test_fetch_real_package_from_local_deb(tmp_path, debian_debs, debian_pkgs):
    code, doc = _fetch(tmp_path, "--from", str(debian_debs[PKG]), "--cache", str(tmp_path / "cache"),
                       "--extract", str(tmp_path / "x"))
    assert code == 0, doc
    assert doc["manifests"][0]["sources"][0]["status"] == "local"
    _check_gfx906(doc, debian_pkgs[PKG] / LIB)
