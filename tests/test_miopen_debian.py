"""Issue 44, MIOpen's verdicts on real packages: Debian's libmiopen1 (sid 6.4.3, experimental 7.2.4,
pinned in tests/fixtures/debian-packages.txt, set "miopen") unpacked into the dual-MI50 machine. Debian
ships the library with no database at all (no /usr/share/miopen/db) and no device code in it (kernels
are compiled at run time), so doctor and audit say 'no-db-folder' and what that costs; each verdict is
then shown to follow a database file added or taken away (mutations)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CACHE, REPO
from tests.machines.build import build

pytestmark = [pytest.mark.debian]
PKGS = ("libmiopen1_6.4.3+dfsg-1+b1_amd64", "libmiopen1_7.2.4+dfsg-1_amd64")
LIB = "/usr/lib/x86_64-linux-gnu/libMIOpen.so.1.0"
DB = "usr/share/miopen/db"


@pytest.fixture(scope="session")
def miopen_debs() -> dict[str, Path]:
    from tests.fixtures import fixcache

    pins = fixcache.pins("miopen")
    debs = CACHE / "debs"
    missing = [p.spec for p in pins if not fixcache.deb_ok(debs / p.deb, p)]
    if missing:
        subprocess.run(["bash", str(REPO / "tests/fixtures/fetch_debian.sh"), *missing], check=True)
    return {p.deb[:-4]: fixcache.unpacked(debs / p.deb) for p in pins}


def run(root: Path, *args) -> tuple[int, dict]:
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "--json", *args],
                       capture_output=True, text=True, timeout=300)
    return r.returncode, json.loads(r.stdout)


@pytest.mark.parametrize("pkg", PKGS)
def test_debians_libmiopen1_has_no_gfx906_database(tmp_path, miopen_debs, pkg):
    root = build("dual-mi50", tmp_path / "m")
    shutil.copytree(miopen_debs[pkg] / "usr", root / "usr", dirs_exist_ok=True, symlinks=True)
    assert not (root / DB).exists()                  # what Debian ships: the library, no database

    def verdicts():
        _rc, doc = run(root, "doctor")
        found = [(f["subject"], f["data"]["verdict"], f["data"]["library"]) for f in doc["findings"]
                 if f["id"].startswith("miopen")]
        _rc, audit = run(root, "audit", "--no-programs")
        return found, [(t["prefix"], t["verdict"]) for t in audit["miopen"]], audit

    found, audited, audit = verdicts()
    assert found == [("/usr", "no-db-folder", LIB)] and audited == [("/usr", "no-db-folder")]
    _rc, ins = run(root, "inspect", str(root / LIB.lstrip("/")))
    (f,) = ins["files"]
    assert f["kind"] == "host-elf-no-device-code" and f["targets"] == []   # kernels are compiled at run time
    _rc, doc = run(root, "doctor")
    (f,) = [f for f in doc["findings"] if f["id"] == "miopen-no-gfx906-db"]
    assert "Missing system database file: gfx906_<CUs>.kdb" in f["cause"] and "no pinned" in f["fix"]
    # mutations: each database file moves the verdict, and taking them away moves it back
    db = root / DB
    db.mkdir(parents=True)
    assert verdicts()[1] == [("/usr", "no-gfx906-db")]
    (db / "gfx906_60.kdb").write_bytes(b"SQLite format 3\x00")
    assert verdicts()[1] == [("/usr", "partial")]
    (db / "gfx906_60.HIP.fdb.txt").write_text("x\n")
    (db / "gfx906_60.db").write_bytes(b"SQLite format 3\x00")
    found, audited, _ = verdicts()
    assert audited == [("/usr", "complete")] and found == [("/usr", "complete", LIB)]
    (db / "gfx906_60.db").unlink()
    assert verdicts()[1] == [("/usr", "partial")]
    # the library gone: no MIOpen, nothing said
    for n in ("libMIOpen.so.1.0", "libMIOpen.so.1"):
        (root / LIB.lstrip("/")).parent.joinpath(n).unlink()
    assert verdicts()[:2] == ([], [])
