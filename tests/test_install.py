"""`rocmrevive install` end to end: a machine in a folder (built from a real capture), a ROCm
6.4.3 tree whose rocBLAS lacks gfx906, a real .deb as the source, then check what a user would
check: the files, the tree hash, the JSON, the exit codes; and that bad sources change nothing."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, TRIPLET
from tests.fixtures.fetched import gfx906_files, manifests_for_fetched
from tests.machines.build import build, build_amd_layout_from_debian

sys.path.insert(0, str(REPO / "demo"))
import minirocblas as mr  # noqa: E402

DEMO_MANIFEST = (REPO / "manifests/rocblas-4.4-gfx906.toml").read_text().split("[[sources]]")[0]


def tree_hash(top: Path) -> str:
    """Every path, type, mode, owner and content under ``top`` (the transaction core's own hash)."""
    from rocmrevive.txn.fsutil import tree_hash as _tree_hash

    return _tree_hash(top)


def write_manifest(folder: Path, deb: Path, manifest_id="rocblas-4.4-gfx906-test", **extra) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = deb.read_bytes()
    body = DEMO_MANIFEST.replace('id = "rocblas-4.4-gfx906"', f'id = "{manifest_id}"')
    src = {"name": "test-source", "kind": "debian", "package": "librocblas4", "version": "6.4.4-4",
           "suite": "sid", "filename": "pool/main/r/rocblas/librocblas4_6.4.4-4_amd64.deb",
           "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
           "member_prefix": "./usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/",
           "rocblas_version": "4.4.1", "compatible": ">=4.4.0,<4.5", **extra}
    lines = ["[[sources]]"] + [f"{k} = {json.dumps(v)}" for k, v in src.items()]
    (folder / "m.toml").write_text(body + "\n".join(lines) + "\n")
    return folder


def rr(root: Path, *args, check_rc=None):
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), *args],
                       capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    if check_rc is not None:
        assert r.returncode == check_rc, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return r


@pytest.fixture
def demo(tmp_path):
    """The dual-MI50 machine with a mini rocBLAS 4.4 tree (gfx908 only) and a gfx906 source."""
    return demo_machine(tmp_path)


def demo_machine(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """``demo``'s machine: its root, the source .deb and the install arguments that name it."""
    root = build("dual-mi50", tmp_path / "m")
    mr.build_tree(root, rocm_version="6.4.3", arches_present=("gfx908",), replace=True)
    deb = mr.build_source_deb(tmp_path / "librocblas4_6.4.4-4_amd64.deb")["path"]
    mf = write_manifest(tmp_path / "manifests", Path(deb))
    args = ["--manifests", str(mf), "--from", str(deb), "--cache", str(tmp_path / "cache"), "--yes"]
    return root, Path(deb), args


def test_check_then_install_then_idempotent_then_rollback(demo):
    root, deb, args = demo
    before = tree_hash(root / "opt")
    r = rr(root, "--json", "install", "--check", *args, check_rc=20)
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1 and doc["changed"] is False and doc["error"]["code"] == "CHANGES_PENDING"
    (copy,) = doc["copies"]
    assert copy["status"] == "planned" and copy["summary"]["create"] == 9
    assert tree_hash(root / "opt") == before            # --check wrote nothing to the tree
    assert not (root / "var/lib/rocmrevive/tx").exists() or not any((root / "var/lib/rocmrevive/tx").iterdir())

    r = rr(root, "--json", "install", *args, check_rc=0)
    doc = json.loads(r.stdout)
    (copy,) = doc["copies"]
    assert doc["changed"] is True and copy["status"] == "installed" and copy["txid"]
    assert copy["verify_after"]["ok"] is True
    lib = root / "opt/rocm-6.4.3/lib/rocblas/library"
    listed = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True).stdout
    wanted = sorted(line.split()[-1].rsplit("/", 1)[-1] for line in listed.splitlines()
                    if "/rocblas/4.4.1/library/" in line and "gfx906" in line)
    assert sorted(p.name for p in lib.iterdir() if "gfx906" in p.name) == wanted
    assert set(doc["diff"]["after"]) == {f"/opt/rocm-6.4.3/lib/rocblas/library/{n}" for n in wanted}
    # owner and mode follow the tree's own files
    ref = (lib / "TensileLibrary_lazy_gfx908.dat").stat()
    new = (lib / "TensileLibrary_lazy_gfx906.dat").stat()
    assert (new.st_mode, new.st_uid, new.st_gid) == (ref.st_mode, ref.st_uid, ref.st_gid)

    r = rr(root, "--json", "install", *args, check_rc=0)      # idempotent
    doc = json.loads(r.stdout)
    assert doc["changed"] is False and doc["copies"][0]["status"] == "satisfied"

    rr(root, "verify", check_rc=0)
    r = rr(root, "--json", "rollback", check_rc=0)
    assert json.loads(r.stdout)["changed"] is True
    assert tree_hash(root / "opt") == before


def test_wrong_target_in_source_is_refused_and_nothing_changes(demo, tmp_path, codeobjects):
    """A gfx908 code object under a gfx906 name in the package: refused before any write."""
    root, deb, args = demo
    bad_dir = tmp_path / "bad"
    subprocess.run(["dpkg-deb", "-R", str(deb), str(bad_dir)], check=True)
    lib = bad_dir / TRIPLET / "rocblas/4.4.1/library"
    victim = next(lib.glob("*_gfx906.co"))
    shutil.copy(codeobjects["gfx908_v4"].path, victim)
    bad_deb = tmp_path / "bad.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(bad_dir), str(bad_deb)], check=True,
                   capture_output=True)
    mf = write_manifest(tmp_path / "badmf", bad_deb)
    before = tree_hash(root / "opt")
    r = rr(root, "--json", "install", "--manifests", str(mf), "--from", str(bad_deb), "--yes",
           "--cache", str(tmp_path / "cache2"), check_rc=6)
    doc = json.loads(r.stdout)
    assert doc["error"]["code"] == "VERIFY_FAILED"
    assert victim.name in doc["copies"][0]["reason"] and "gfx908" in doc["copies"][0]["reason"]
    assert tree_hash(root / "opt") == before


def test_checksum_mismatch_is_refused(demo, tmp_path):
    root, deb, args = demo
    other = tmp_path / "other.deb"
    data = bytearray(deb.read_bytes())
    data[-1] ^= 1
    other.write_bytes(bytes(data))
    before = tree_hash(root / "opt")
    mf = args[args.index("--manifests") + 1]
    r = rr(root, "install", "--manifests", mf, "--from", str(other), "--yes",
           "--cache", str(tmp_path / "c3"))
    assert r.returncode == 6, r.stderr
    assert "Traceback" not in r.stderr
    assert tree_hash(root / "opt") == before


def test_no_gpu_machine_needs_a_target(tmp_path):
    root = build("no-amd-gpu", tmp_path / "m")
    r = rr(root, "install", "--check")
    assert r.returncode == 3 and "--target gfx906" in r.stderr


def test_target_without_card_plans_for_an_image(demo, tmp_path):
    root, deb, args = demo
    shutil.rmtree(root / "sys/class/kfd")
    r = rr(root, "--json", "install", "--check", "--target", "gfx906", *args, check_rc=20)
    assert json.loads(r.stdout)["devices"] == ["gfx906"]


def test_tree_option_names_one_install(demo):
    root, deb, args = demo
    r = rr(root, "--json", "install", "--check", "--tree", "/opt/rocm-6.4.3", *args, check_rc=20)
    assert [c["library"] for c in json.loads(r.stdout)["copies"]] == ["/opt/rocm-6.4.3/lib/rocblas/library"]
    r = rr(root, "install", "--check", "--tree", "/opt/nowhere", *args)
    assert r.returncode == 2 and "no such folder" in r.stderr


@pytest.mark.debian
@pytest.mark.slow
def test_real_package_round_trip(tmp_path, rocblas441, debian_debs, debian_pkgs):
    """AMD's layout filled from Debian's real rocBLAS 4.4.1 minus its gfx906 files (AMD's 6.4.x
    ships the same names without gfx906); install from the real 280 MB package with the shipped
    manifest: its gfx906 files (140 in 6.4.4-4) equal Debian's byte for byte, nothing else changed; rollback
    restores the tree hash."""
    root = build_amd_layout_from_debian(tmp_path / "m", debian_pkgs["librocblas4_6.4.4-4_amd64"])
    lib = root / "opt/rocm-6.4.3/lib/rocblas/library"
    before = tree_hash(root / "opt")
    deb = debian_debs["librocblas4_6.4.4-4_amd64"]
    r = rr(root, "--json", "install", "--yes", "--from", str(deb), "--manifests", str(manifests_for_fetched(tmp_path)),
           "--cache", str(tmp_path / "cache"), check_rc=0)
    doc = json.loads(r.stdout)
    (copy,) = doc["copies"]
    assert copy["status"] == "installed" and copy["summary"]["create"] == len(gfx906_files(rocblas441))
    assert copy["verify_after"]["ok"] is True
    tensile = next(d for d in copy["verify_after"]["devices"])["tensile"]
    assert tensile["solutions"] == 7761
    for f in rocblas441.glob("*gfx906*"):
        assert hashlib.sha256((lib / f.name).read_bytes()).digest() == hashlib.sha256(f.read_bytes()).digest()
    assert sum(1 for p in lib.iterdir()) == sum(1 for p in rocblas441.iterdir())   # 1,349 in 6.4.4-4
    rr(root, "rollback", check_rc=0)
    assert tree_hash(root / "opt") == before


@pytest.mark.parametrize("step", ["begin:1", "stage:3", "intent:1", "rename:4", "dirsync:1", "done:1", "commit:1"])
def test_killed_install_is_finished_or_undone_by_the_next_command(demo, step):
    """kill -9 inside `install`, then run a read-only command (detect): it reports the open
    transaction (exit 9) and leaves it alone; `recover` completes or undoes it, and the tree is
    wholly old or wholly new."""
    root, deb, args = demo
    before = tree_hash(root / "opt")
    env = {**os.environ, "ROCMREVIVE_TEST_KILL_AT": step}
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "install", *args],
                       capture_output=True, text=True, env=env)
    assert r.returncode == -9, r.stderr
    killed = tree_hash(root)
    r = rr(root, "--json", "detect")
    # killed after the commit record there is nothing left to recover
    pending = step != "commit:1"
    assert r.returncode == (9 if pending else 0), r.stderr
    doc = json.loads(r.stdout)
    assert doc["changed"] is False and bool(doc.get("pending")) == pending
    assert doc["gpus"], "detect still reports the machine"
    assert tree_hash(root) == killed                       # detect finished or undid nothing
    r = rr(root, "--json", "recover", check_rc=0)
    assert bool(json.loads(r.stdout)["recovered"]) == pending
    lib = root / "opt/rocm-6.4.3/lib/rocblas/library"
    gfx906 = sorted(p.name for p in lib.iterdir() if "gfx906" in p.name)
    assert gfx906 == [] or len(gfx906) == 9, gfx906
    if not gfx906:
        assert tree_hash(root / "opt") == before
    assert not [p for p in lib.iterdir() if p.name.startswith(".")]     # no stray temporary files
    status = json.loads(rr(root, "--json", "status").stdout)
    assert status["error"] is None


def test_install_from_an_unpacked_folder(demo, tmp_path):
    """--from a folder (an air-gapped copy of the package's files): no artifact hash to trust,
    so the code-object and Tensile checks carry the weight, and nothing is cached."""
    root, deb, args = demo
    folder = tmp_path / "unpacked"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(folder)], check=True)
    mf = args[args.index("--manifests") + 1]
    cache = tmp_path / "cache-folder"
    r = rr(root, "--json", "install", "--yes", "--manifests", mf, "--from", str(folder), "--cache", str(cache),
           check_rc=0)
    (copy,) = json.loads(r.stdout)["copies"]
    assert copy["status"] == "installed" and copy["summary"]["create"] == 9
    assert not (cache / "extracted").exists() or not any((cache / "extracted").iterdir())
    assert not any((cache / "staging").iterdir())    # this install's staging is gone


def test_a_whole_install_scans_the_hardware_once_and_verifies_each_copy_twice(demo, monkeypatch):
    """In process: the GPUs are read once, and verify_copy runs before (is anything needed?) and
    on the staged overlay; the check after the apply re-hashes what was written instead."""
    from rocmrevive.diagnose import verify as dverify
    from rocmrevive.hardware import gpus
    from rocmrevive.install.pipeline import install
    from rocmrevive.install.run import InstallOptions
    from rocmrevive.rootfs import Root

    root, deb, args = demo
    calls = {"scan": 0, "verify_copy": 0}

    def counted(name, fn):
        def wrapper(*a, **kw):
            calls[name] += 1
            return fn(*a, **kw)
        return wrapper

    monkeypatch.setattr(gpus, "scan", counted("scan", gpus.scan))
    monkeypatch.setattr(dverify, "verify_copy", counted("verify_copy", dverify.verify_copy))
    opts = dict(zip(args[0:6:2], args[1:6:2]))
    rep = install(Root(root), InstallOptions(manifests_dir=opts["--manifests"], from_path=opts["--from"],
                                             cache=opts["--cache"]))
    (copy,) = rep.copies
    assert copy.status == "installed" and copy.verify_after is not None and copy.verify_after.ok is True
    assert calls == {"scan": 1, "verify_copy": 2}
