"""Root safety of the folders rocmrevive writes (docs/security.md), attacked by an ordinary user:
an export folder (``fetch --to``), an extract folder (``fetch --extract``), a shared cache, a
``--root`` image, an unpacked folder given with ``--from``, member names, the manifests lookup and
the apt hook's executable. Each test plants links, FIFOs or crafted files as the user, runs the
rocmrevive CLI as root and checks: 0 writes outside the intended folder, 0 deletes, 0 modified
bytes installed, and a documented exit code with one line."""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.sources.unpack import extract_selected
from tests.conftest import TRIPLET
from tests.machines.build import build
from tests.security_support import SHARED, Arena, attacker, files_under, one_line_error, run_cli
from tests.test_install import write_manifest
from tests.test_txn_support import Machine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "demo"))
import minirocblas as mr  # noqa: E402

MANIFEST_ID = "rocblas-4.4-gfx906-test"
PREFIX = f"{TRIPLET}/rocblas/4.4.1/library"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root attacked by an ordinary user: needs root")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A real .deb laid out like Debian's librocblas4 (gfx906 Tensile files) and a manifest pinning it."""
    d = tmp_path_factory.mktemp("source")
    deb = Path(mr.build_source_deb(d / "librocblas4_6.4.4-4_amd64.deb")["path"])
    return deb, write_manifest(d / "manifests", deb, manifest_id=MANIFEST_ID)


@pytest.fixture
def arena():
    a = Arena.make(attacker())
    yield a
    a.cleanup()


def machine(where: Path) -> Path:
    root = build("dual-mi50", where)
    mr.build_tree(root, rocm_version="6.4.3", arches_present=("gfx908",), replace=True)
    return root


def lib_files(root: Path) -> dict[str, str]:
    lib = root / "opt/rocm-6.4.3/lib/rocblas/library"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in lib.iterdir() if p.is_file()}


# 1. fetch --to ------------------------------------------------------------------------------
def test_fetch_to_a_folder_the_user_owns(arena, source, tmp_path):
    deb, mf = source
    export = arena.home / "export"
    part_dir = export / "sources/test-source/pool/main/r/rocblas"

    def plant():
        part_dir.mkdir(parents=True)
        os.symlink(arena.precious, export / "SHA256SUMS.tmp")
        os.symlink(arena.victim / "created-by-root", export / "rocmrevive-export.json.tmp")
        os.symlink(arena.precious, part_dir / f"{deb.name}.part")
        (export / "SHA256SUMS").write_text(f"{'0' * 64}  ../victim/precious\n{'1' * 64}  line-of-the-user\n")

    arena.as_attacker(plant)
    planted = files_under(export)
    args = ["fetch", "--manifests", str(mf), "--from", str(deb), "--cache", str(tmp_path / "cache"),
            "--to", str(export)]
    rc, doc, err = run_cli(args)
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert str(arena.home) in msg and "ROCMREVIVE_TRUST_SHARED" in msg  # the first folder the user owns
    assert files_under(export) == planted and arena.victim_intact()

    rc, doc, err = run_cli(args, env=SHARED)  # opted in: written, but never through a link
    assert rc == 0, (doc, err)
    assert arena.victim_intact() and not (arena.victim / "created-by-root").exists()
    for name in ("SHA256SUMS.tmp", "rocmrevive-export.json.tmp"):
        assert os.readlink(export / name) == str(arena.precious if name == "SHA256SUMS.tmp"
                                                 else arena.victim / "created-by-root")
    sums = (export / "SHA256SUMS").read_text().splitlines()
    assert sums and all(not line.endswith(("../victim/precious", "line-of-the-user")) for line in sums)
    for line in sums:  # every line is true
        sha, rel = line.split(None, 1)
        assert hashlib.sha256((export / rel).read_bytes()).hexdigest() == sha
    exported = export / "sources/test-source/pool/main/r/rocblas" / deb.name
    assert exported.read_bytes() == deb.read_bytes() and exported.stat().st_uid == 0


# 2. fetch --extract --------------------------------------------------------------------------
def test_fetch_extract_never_follows_a_planted_folder_link(arena, source, tmp_path):
    deb, mf = source
    x = arena.home / "x"

    def plant():
        x.mkdir()
        os.symlink(arena.victim / "keep", x / MANIFEST_ID)

    arena.as_attacker(plant)
    args = ["fetch", "--manifests", str(mf), "--from", str(deb), "--cache", str(tmp_path / "cache"),
            "--extract", str(x)]
    rc, doc, err = run_cli(args)
    one_line_error(rc, doc, err, "PERMISSION")
    rc, doc, err = run_cli(args, env=SHARED)
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert MANIFEST_ID in msg and "link" in msg
    assert arena.victim_intact() and (arena.victim / "keep/x").is_file()


def test_fetch_extract_into_own_folder_replaces_the_old_extraction(source, tmp_path):
    deb, mf = source
    x = tmp_path / "x"
    args = ["fetch", "--manifests", str(mf), "--from", str(deb), "--cache", str(tmp_path / "cache"),
            "--extract", str(x)]
    assert run_cli(args)[0] == 0
    (x / MANIFEST_ID / ".test-source.new-dead0000").mkdir()  # what a killed run left
    rc, doc, _ = run_cli(args)
    assert rc == 0 and doc["manifests"][0]["extracted"]["files"] > 0
    assert sorted(os.listdir(x / MANIFEST_ID)) == ["test-source"]


# 3. a shared cache -------------------------------------------------------------------------
def test_a_cache_the_user_can_write_never_supplies_bytes(arena, source, tmp_path):
    deb, mf = source
    sha = hashlib.sha256(deb.read_bytes()).hexdigest()
    ref_root = machine(tmp_path / "ref")
    ref_cache = tmp_path / "ref-cache"
    rc, doc, err = run_cli(["--root", str(ref_root), "install", "--yes", "--manifests", str(mf), "--from", str(deb),
                            "--cache", str(ref_cache)])
    assert rc == 0, (doc, err)
    good = lib_files(ref_root)
    key = f"{sha[:32]}-{MANIFEST_ID}"
    cache = arena.home / "cache"
    evil = arena.base / "evil"  # where the attacker can read it
    shutil.copytree(ref_cache / "extracted" / key, evil)
    listed = json.loads((evil / "index.json").read_text())
    victim_name = next(n for n in listed if n.endswith(".hsaco") or n.endswith(".co"))
    with open(evil / "files" / victim_name, "ab") as f:
        f.write(b"\xde\xad\xbe\xef" * 64)  # modified bytes, the index re-hashed to match
    listed[victim_name] = [hashlib.sha256((evil / "files" / victim_name).read_bytes()).hexdigest(),
                           (evil / "files" / victim_name).stat().st_size]
    (evil / "index.json").write_text(json.dumps(listed))
    subprocess.run(["chmod", "-R", "a+rX", str(evil)], check=True)

    forged = bytearray(deb.read_bytes())
    forged[-100] ^= 0xFF  # same size, other bytes, under the pinned name

    def plant():
        for sub in ("extracted", "partial", "sha256"):
            (cache / sub).mkdir(parents=True)
        shutil.copytree(evil, cache / "extracted" / key)
        os.symlink(arena.precious, cache / "partial" / f"{sha}.lock")
        os.symlink(arena.victim / "created-by-root", cache / "partial" / f"{sha}.part")
        (cache / "sha256" / sha).write_bytes(bytes(forged))

    arena.as_attacker(plant)
    planted = files_under(cache)
    root = machine(tmp_path / "m")
    before = lib_files(root)
    args = ["--root", str(root), "install", "--yes", "--manifests", str(mf), "--from", str(deb), "--cache", str(cache)]
    rc, doc, err = run_cli(args)
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert str(arena.home) in msg
    assert lib_files(root) == before and files_under(cache) == planted and arena.victim_intact()

    rc, doc, err = run_cli(args, env=SHARED)  # opted in: every byte re-verified against the pin
    assert rc == 0, (doc, err)
    assert lib_files(root) == good, "bytes the user planted were installed"
    assert arena.victim_intact() and not (arena.victim / "created-by-root").exists()
    assert os.readlink(cache / "partial" / f"{sha}.lock") == str(arena.precious)
    rc, doc, err = run_cli(["--root", str(root), "status"])
    assert rc == 0 and doc["transactions"][-1]["integrity"] == "intact", doc


# 4. --root DIR owned by the user: the state folder ------------------------------------------
def test_state_folder_links_in_a_user_owned_image(arena, tmp_path):
    img = arena.home / "img"
    m = Machine.build(img.parent / "img-build")
    shutil.move(str(m.base), str(img))
    subprocess.run(["chown", f"{arena.uid}:{arena.gid}", str(img), str(img / "var"), str(img / "var/lib")],
                   check=True)
    state = img / "var/lib/rocmrevive"
    cache = img / "var/cache"

    def plant():
        state.mkdir()
        os.symlink(arena.precious, state / "lock")
        os.symlink(arena.victim / "keep", state / "tx")
        os.symlink(arena.victim, state / "backups")
        cache.mkdir()
        os.symlink(arena.victim / "keep", cache / "rocmrevive")

    arena.as_attacker(plant)
    for env in (None, SHARED):
        for cmd in (["rollback"], ["recover"], ["install", "--yes", "--from", str(tmp_path / "none.deb")]):
            rc, doc, err = run_cli(["--root", str(img), *cmd], env=env)
            one_line_error(rc, doc, err, "PERMISSION" if rc == 4 else doc["error"]["code"])
            assert arena.victim_intact(), cmd
    assert arena.precious.read_bytes() == b"root's own file\n"


@pytest.mark.parametrize("kind", ["fifo", "link-to-fifo"])
def test_a_fifo_as_the_lock_never_hangs(arena, tmp_path, kind):
    from rocmrevive.txn.apply import apply_plan

    m = Machine.build(tmp_path)
    apply_plan(m.root, m.plan())  # something to roll back: the lock is needed
    state = m.state()
    os.unlink(state / "lock")
    if kind == "fifo":
        os.mkfifo(state / "lock")
    else:
        os.mkfifo(arena.victim / "fifo")
        os.symlink(arena.victim / "fifo", state / "lock")
    rc, doc, err = run_cli(["--root", str(m.base), "rollback"], timeout=60)
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert "lock" in msg


# 8. folder sources --------------------------------------------------------------------------
@pytest.mark.parametrize("swap", ["fifo", "link-to-shadow", "link-to-dev-zero"])
def test_install_from_a_user_owned_folder_with_swapped_members(arena, source, tmp_path, swap):
    deb, mf = source
    folder = arena.home / "unpacked"
    unpacked = arena.base / "u"  # where the attacker can read it
    subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    subprocess.run(["chmod", "-R", "a+rX", str(unpacked)], check=True)
    lib = folder / PREFIX
    name = next(n for n in sorted(os.listdir(unpacked / PREFIX)) if "gfx906" in n and n.endswith(".co"))

    def plant():
        shutil.copytree(unpacked, folder, symlinks=True)
        os.unlink(lib / name)
        if swap == "fifo":
            os.mkfifo(lib / name)
        else:
            os.symlink("/etc/shadow" if swap == "link-to-shadow" else "/dev/zero", lib / name)

    arena.as_attacker(plant)
    root = machine(tmp_path / "m")
    before = lib_files(root)
    cache = tmp_path / "cache"
    rc, doc, err = run_cli(["--root", str(root), "install", "--yes", "--manifests", str(mf), "--from", str(folder),
                            "--cache", str(cache)], timeout=120)
    msg = one_line_error(rc, doc, err, "VERIFY_FAILED")
    assert name in msg and ("fifo" in msg.lower() or "link" in msg), msg
    assert lib_files(root) == before and arena.victim_intact()
    left = [p for p in cache.rglob("*") if p.is_file()] if cache.exists() else []
    assert not any(p.name == name for p in left), "the refused member stayed in the cache"


def test_folder_source_cap_counts_bytes_read_not_lstat(tmp_path, monkeypatch):
    """A file that grows between fstat and the end of the copy is cut at its fstat size."""
    from rocmrevive.sources.unpack import folder

    src = tmp_path / "tree/lib"
    src.mkdir(parents=True)
    (src / "a.co").write_bytes(b"x" * 1000)
    real_fstat = os.fstat
    grown = {"done": False}

    def fstat(fd):
        st = real_fstat(fd)
        if not grown["done"] and os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == "a.co":
            grown["done"] = True
            with open(src / "a.co", "ab") as f:
                f.write(b"y" * 5000)  # the swap/growth after the check
        return st

    monkeypatch.setattr(folder.os, "fstat", fstat)
    with pytest.raises(RevError) as ei:
        extract_selected(tmp_path / "tree", lambda n: True, tmp_path / "stage", member_prefix="lib/")
    assert ei.value.code == "VERIFY_FAILED" and "grew" in ei.value.message
    assert not (tmp_path / "stage").exists()


# 10. refusals leave nothing in the cache; killed runs' staging is swept ------------------------
def test_refused_source_leaves_nothing_extracted_and_stale_staging_is_swept(source, tmp_path, codeobjects):
    deb, _ = source
    bad_dir = tmp_path / "bad"
    subprocess.run(["dpkg-deb", "-R", str(deb), str(bad_dir)], check=True)
    victim = next((bad_dir / PREFIX).glob("*_gfx906.co"))
    shutil.copy(codeobjects["gfx908_v4"].path, victim)  # wrong target: refused after extraction
    bad_deb = tmp_path / "bad.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(bad_dir), str(bad_deb)], check=True,
                   capture_output=True)
    mf = write_manifest(tmp_path / "badmf", bad_deb, manifest_id=MANIFEST_ID)
    cache = tmp_path / "cache"
    (cache / "staging/stage-999999-deadbeef").mkdir(parents=True)  # a killed run's (no such PID)
    (cache / "staging/stage-999999-deadbeef/big").write_bytes(b"z" * 4096)
    sha = hashlib.sha256(bad_deb.read_bytes()).hexdigest()
    (cache / f"extracted/.{sha[:32]}-{MANIFEST_ID}.999999-cafe").mkdir(parents=True)
    root = machine(tmp_path / "m")
    rc, doc, err = run_cli(["--root", str(root), "install", "--yes", "--manifests", str(mf), "--from", str(bad_deb),
                            "--cache", str(cache)])
    one_line_error(rc, doc, err, "VERIFY_FAILED")
    assert os.listdir(cache / "extracted") == [], "a refused source stayed extracted in the cache"
    assert os.listdir(cache / "staging") == []


# 11. member names -----------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["new\nline.co", "esc\x1b[31mred.co", b"latin\xff.co".decode("utf-8", "surrogateescape")])
def test_member_names_must_be_printable_utf8(tmp_path, bad):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as t:
        for name in ("lib/good.co", f"lib/{bad}"):
            info = tarfile.TarInfo(name)
            info.size = 4
            t.addfile(info, io.BytesIO(b"abcd"))
    tar = tmp_path / "a.tar"
    tar.write_bytes(buf.getvalue())
    with pytest.raises(RevError) as ei:
        extract_selected(tar, lambda n: True, tmp_path / "stage", member_prefix="lib/")
    assert ei.value.code == "VERIFY_FAILED"
    assert "\n" not in ei.value.message and "\x1b" not in ei.value.message and "\udcff" not in ei.value.message
    assert not (tmp_path / "stage").exists()

    mf = write_manifest(tmp_path / "mf", tar, manifest_id=MANIFEST_ID, member_prefix="lib/")
    x = tmp_path / "x"
    rc, doc, err = run_cli(["fetch", "--manifests", str(mf), "--from", str(tar), "--cache", str(tmp_path / "cache"),
                            "--extract", str(x)])
    one_line_error(rc, doc, err, "VERIFY_FAILED")
    assert not (x / MANIFEST_ID).exists() or os.listdir(x / MANIFEST_ID) == []


# 13. manifests lookup and the hook's executable -------------------------------------------------
def test_a_manifests_folder_in_site_packages_is_never_used(tmp_path):
    site = tmp_path / "site-packages"
    shutil.copytree(Path(__file__).resolve().parent.parent / "rocmrevive", site / "rocmrevive", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "manifests").mkdir()  # some other package's folder
    (site / "manifests" / "evil.toml").write_text('id = "evil"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("ROCMREVIVE_MANIFESTS", "PYTHONPATH")}
    p = subprocess.run([sys.executable, "-c", "from rocmrevive.sources.manifest_load import default_manifest_dir "
                        "as d; print(d())"], env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert Path(p.stdout.strip()) == site / "rocmrevive/data/manifests"


@pytest.mark.parametrize("how", ["--bin", "root-link-in-user-folder"])  # PATH is not consulted (the running one is)
def test_hook_refuses_an_executable_the_user_controls(arena, tmp_path, how):
    root = tmp_path / "m"
    (root / "etc/apt/apt.conf.d").mkdir(parents=True)
    bindir = arena.home / "bin"

    def plant():
        bindir.mkdir()
        exe = bindir / "rocmrevive"
        if how == "root-link-in-user-folder":
            os.symlink(sys.executable, exe)
        else:
            exe.write_text("#!/bin/sh\nexit 0\n")
            os.chmod(exe, 0o755)

    arena.as_attacker(plant)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    args = ["--root", str(root), "hook", "install", "--bin", str(bindir / "rocmrevive")]
    rc, doc, err = run_cli(args, env=env)
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert str(bindir / "rocmrevive") in msg
    assert os.listdir(root / "etc/apt/apt.conf.d") == []


# 12. documented exit codes, never exit 1 ----------------------------------------------------------
@pytest.mark.parametrize("layout", ["subfolder", "dot-prefix"])
def test_members_outside_the_flat_library_folder_are_refused(source, tmp_path, layout):
    deb, _ = source
    extra = {}
    if layout == "subfolder":
        d = tmp_path / "pkg"
        subprocess.run(["dpkg-deb", "-R", str(deb), str(d)], check=True)
        f = next((d / PREFIX).glob("*_gfx906.co"))
        (d / PREFIX / "sub").mkdir()
        shutil.copy(f, d / PREFIX / "sub" / f.name)
        deb = tmp_path / "sub.deb"
        subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(d), str(deb)], check=True, capture_output=True)
    else:
        extra["member_prefix"] = "./"
    mf = write_manifest(tmp_path / "mf", deb, manifest_id=MANIFEST_ID, **extra)
    root = machine(tmp_path / "m")
    before = lib_files(root)
    rc, doc, err = run_cli(["--root", str(root), "install", "--yes", "--manifests", str(mf), "--from", str(deb),
                            "--cache", str(tmp_path / "cache")])
    msg = one_line_error(rc, doc, err, "VERIFY_FAILED")
    assert "flat library folder" in msg and lib_files(root) == before


@pytest.mark.parametrize("how", ["read-only", "full"])
def test_a_read_only_or_full_cache_is_a_permission_error(source, tmp_path, how):
    deb, mf = source
    cache = tmp_path / "cache"
    cache.mkdir()
    if how == "read-only":
        cmd = ["mount", "--bind", "-o", "ro", str(cache), str(cache)]
    else:
        cmd = ["mount", "-t", "tmpfs", "-o", "size=8k,mode=0755", "tmpfs", str(cache)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    try:
        root = machine(tmp_path / "m")
        before = lib_files(root)
        rc, doc, err = run_cli(["--root", str(root), "install", "--yes", "--manifests", str(mf), "--from", str(deb),
                                "--cache", str(cache)])
        msg = one_line_error(rc, doc, err, "PERMISSION")
        assert ("read-only" in msg or "space" in msg), msg
        assert lib_files(root) == before
    finally:
        subprocess.run(["umount", str(cache)], check=True)


def test_download_into_a_shared_cache_with_planted_partial_links(arena, tmp_path):
    from tests.fixtures.aptrepo import RepoServer, make_world

    world = make_world(tmp_path / "srv")
    sha = world.debian.package("librocblas4").sha256
    cache = arena.home / "cache"

    def plant():
        (cache / "partial").mkdir(parents=True)
        os.symlink(arena.precious, cache / "partial" / f"{sha}.lock")
        os.symlink(arena.precious, cache / "partial" / f"{sha}.part")

    arena.as_attacker(plant)
    with RepoServer(world.base) as srv:
        mdir = tmp_path / "manifests"
        mdir.mkdir()
        (mdir / "test.toml").write_text(world.manifest_text(srv.url))
        args = ["fetch", "--manifests", str(mdir), "--mirror", srv.url + "/debian", "--cache", str(cache)]
        rc, doc, err = run_cli(args)
        one_line_error(rc, doc, err, "PERMISSION")
        rc, doc, err = run_cli(args, env=SHARED)
    assert rc == 0, (doc, err)
    assert arena.victim_intact() and arena.precious.stat().st_mode & 0o777 == 0o644
    got = cache / "sha256" / sha
    assert got.stat().st_uid == 0 and hashlib.sha256(got.read_bytes()).hexdigest() == sha


# 14. a file the user names with -o ------------------------------------------------------------
def test_an_output_file_in_a_user_owned_folder_is_never_written_through_a_planted_link(arena, tmp_path):
    """`rccl env -o ~alice/rccl.env` as root: the folder is the user's choice (written, as before),
    but links alice planted at the output's former fixed temporary name and at every name she can
    guess are never followed: the victim is intact and the output is a new regular file of root's."""
    root = build("mi50x4-switch", tmp_path / "m")
    out = arena.home / "rccl.env"

    def plant():
        os.symlink(arena.precious, arena.home / ".rccl.env.rocmrevive-new")   # the old fixed name
        os.symlink(arena.victim / "created-by-root", arena.home / ".rccl.env.tmp")

    arena.as_attacker(plant)
    rc, doc, err = run_cli(["--root", str(root), "rccl", "env", "-o", str(out)])
    assert rc == 0 and doc["written"] == str(out), (doc, err)
    assert arena.victim_intact() and not (arena.victim / "created-by-root").exists()
    assert not out.is_symlink() and out.stat().st_uid == 0 and "HSA_FORCE_FINE_GRAIN_PCIE=1" in out.read_text()
    assert os.readlink(arena.home / ".rccl.env.rocmrevive-new") == str(arena.precious)

    os.unlink(out)
    arena.as_attacker(lambda: os.symlink(arena.precious, out))   # the output name itself: replaced, not followed
    rc, doc, err = run_cli(["--root", str(root), "rccl", "env", "-o", str(out)])
    assert rc == 0, (doc, err)
    assert arena.victim_intact() and not out.is_symlink() and out.stat().st_uid == 0


def test_the_hook_log_is_never_written_through_a_link(arena, tmp_path):
    """The apt hook appends to /var/log/rocmrevive/hook.log as root: a link at that name, or a
    log folder another user owns, is refused (PERMISSION) and the victim is untouched."""
    from rocmrevive.install.hooks import HOOK_LOG, _open_log
    from rocmrevive.rootfs import Root

    root = tmp_path / "m"
    log = root / HOOK_LOG.lstrip("/")
    log.parent.mkdir(parents=True)
    os.symlink(arena.precious, log)
    with pytest.raises(RevError) as e:
        _open_log(Root(root), HOOK_LOG)
    assert e.value.code == "PERMISSION" and "symbolic link" in str(e.value)
    os.unlink(log)
    os.chown(log.parent, arena.uid, arena.gid)
    with pytest.raises(RevError) as e:
        _open_log(Root(root), HOOK_LOG)
    assert e.value.code == "PERMISSION" and "owned by uid" in str(e.value)
    assert arena.victim_intact() and not log.exists()
    os.chown(log.parent, 0, 0)
    with _open_log(Root(root), HOOK_LOG) as f:
        f.write("a line\n")
    with _open_log(Root(root), HOOK_LOG) as f:
        f.write("another\n")
    assert log.read_text() == "a line\nanother\n"
