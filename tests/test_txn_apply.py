"""Applying a plan: the journal, owners and modes, idempotency, dry runs and every refusal
(drift, unsafe paths, locks, disk full, read-only tree, permission denied, a concurrent run):
each with its one line, its exit code, and the tree hash proving nothing changed."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_txn_support import LIB, OWNER, TREE, Machine, child_cmd, child_env, read_journal, run_child

from rocmrevive.errors import RevError
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.fsutil import sha256_file
from rocmrevive.txn.history import list_transactions
from rocmrevive.txn.journal import read_records
from rocmrevive.txn.plan import FileChange, Plan, plan_from_staged
from rocmrevive.txn.state import find_pending, require_no_pending
from rocmrevive.txn.undo import recover_pending, rollback
from tests.security_support import AS_NOBODY, folder_for_nobody

RLIB = LIB  # the resolved library path (plans go through /opt/rocm)


@pytest.fixture
def m(tmp_path) -> Machine:
    return Machine.build(tmp_path)


def _refused(m: Machine, plan: Plan, code: str, *words: str, **kw) -> RevError:
    h = m.hash()
    n = len(m.journals())
    with pytest.raises(RevError) as ei:
        apply_plan(m.root, plan, **kw)
    err = ei.value
    assert err.code == code, err.message
    for w in words:
        assert w in err.message, err.message
    assert "\n" not in err.message
    assert m.hash() == h, "a refusal changed the tree"
    assert len(m.journals()) == n, "a refusal before any change wrote a journal"
    return err


# the happy path ------------------------------------------------------------------------------
def test_apply_puts_exactly_the_plan_in_place_with_tree_owners_and_modes(m):
    plan = m.plan()
    before = m.listing()
    res = apply_plan(m.root, plan)
    assert res.changed and res.state == "committed" and res.txid.startswith("0001-")
    assert res.tree == TREE, "the symlinked /opt/rocm is resolved to the real tree"
    after = m.listing()
    def rel(p):
        return p.removeprefix("/opt/")

    expect = dict(before)
    lib = rel(RLIB)
    for c in plan.changes:
        key = rel(c.dest.replace("/opt/rocm/", "/opt/rocm-6.4.3/"))
        if c.op == "delete":
            del expect[key]
            continue
        old = before.get(key)
        if old:  # a replace keeps the file's own owner and mode
            expect[key] = ["f", old[1], old[2], old[3], c.sha256]
        elif "/gfx906/extra/" in key:  # in a new folder: the folder's owner, its mode minus x bits
            expect[key] = ["f", 0o644, 0, 0, c.sha256]
        else:  # beside the tree's files: what they have
            expect[key] = ["f", 0o644, *OWNER, c.sha256]
    expect[f"{lib}/gfx906"] = ["d", 0o755, *OWNER, None]  # created folders copy their parent
    expect[f"{lib}/gfx906/extra"] = ["d", 0o755, *OWNER, None]
    expect[f"{lib}/gfx906/extra/sub.hsaco"][2:4] = list(OWNER)
    assert after == expect
    acts = {a.path: a.op for a in res.actions}
    assert acts[f"{RLIB}/TensileManifest.txt"] == "replace"
    assert acts[f"{RLIB}/Kernels.so-000-gfx90a.hsaco"] == "delete"
    assert acts[f"{RLIB}/gfx906"] == "mkdir"
    assert set(res.diff["after"]) == {c.dest.replace("/opt/rocm/", "/opt/rocm-6.4.3/") for c in plan.changes}
    assert res.journal_path == f"/var/lib/rocmrevive/tx/{res.txid}.jsonl"


def test_written_identity_vouches_only_for_the_very_file_the_apply_wrote(m):
    """TxResult.written lets a verify after skip re-hashing a file only while it is the inode the
    apply wrote: a file put in its place after the apply with the same size, other bytes and the
    old mtime (os.utime) is a new inode, and is not vouched for (the caller hashes it)."""
    res = apply_plan(m.root, m.plan())
    written = {a.path for a in res.actions if a.op in ("create", "replace")}
    assert set(res.written) == written and written
    for p in written:
        assert res.still_written(p, m.root.resolve(p)), p
    path = f"{RLIB}/TensileManifest.txt"
    real = m.root.resolve(path)
    old = os.lstat(real)
    data = real.read_bytes()
    forged = real.with_name("forged")
    forged.write_bytes(bytes(b ^ 0xFF for b in data))  # same size, other bytes
    os.utime(forged, ns=(old.st_atime_ns, old.st_mtime_ns))
    os.replace(forged, real)
    assert os.lstat(real).st_size == old.st_size and os.lstat(real).st_mtime_ns == old.st_mtime_ns
    assert not res.still_written(path, real)
    assert sha256_file(real)[0] != next(a.after for a in res.actions if a.path == path)
    assert not res.still_written(f"{RLIB}/not-written", real), "only what the apply wrote"
    assert "written" not in res.to_json(), "the JSON is unchanged"


def test_journal_holds_begin_intents_before_done_backups_and_commit(m):
    plan = m.plan()
    replaced = m.p(f"{LIB}/TensileManifest.txt")
    old_sha, old_size = sha256_file(replaced)
    old_mtime = os.stat(replaced).st_mtime_ns
    res = apply_plan(m.root, plan)
    recs = read_journal(m.root.path(res.journal_path))
    types = [r["type"] for r in recs]
    assert types[0] == "begin" and types[-1] == "commit"
    b = recs[0]
    assert b["tree"] == TREE and b["tree_given"] == "/opt/rocm" and b["meta"]["manifest"] == "rocblas-4.4.1-gfx906"
    assert b["host"]["distro"] == "Ubuntu 24.04.2 LTS" and b["tool"].startswith("rocmrevive ")
    assert {f["path"] for f in b["files"]} == set(res.diff["after"])
    assert b["mkdirs"] == [f"{RLIB}/gfx906", f"{RLIB}/gfx906/extra"]
    intents = {r["path"]: i for i, r in enumerate(recs) if r["type"] == "intent"}
    dones = {r["path"]: i for i, r in enumerate(recs) if r["type"] == "done"}
    assert set(intents) == set(dones) == set(b["files"][i]["path"] for i in range(len(b["files"]))) | set(b["mkdirs"])
    assert all(intents[p] < dones[p] for p in intents)
    stage = types.index("stage")
    assert all(intents[p] < stage for p in b["mkdirs"]), "folders are made (intent first) before staging"
    assert all(intents[f["path"]] > stage for f in b["files"]), "file intents follow the staged temporaries"
    rep = next(r for r in recs if r["type"] == "intent" and r["path"].endswith("TensileManifest.txt"))
    assert rep["before"] == {"exists": True, "sha256": old_sha, "size": old_size, "mode": 0o640,
                             "uid": OWNER[0], "gid": OWNER[1], "mtime_ns": old_mtime}
    assert rep["after"]["mode"] == 0o640 and rep["backup"] == f"backups/{old_sha}"
    backup = m.state("backups", old_sha)
    assert sha256_file(backup) == (old_sha, old_size), "backups are content addressed"
    new = next(r for r in recs if r["type"] == "intent" and r["op"] == "create")
    assert new["before"] == {"exists": False} and new["temp"].endswith(".rocmrevive-new")
    assert not list(m.p(LIB).glob(".*rocmrevive-new")), "no temporary is left behind"
    assert [t.txid for t in list_transactions(m.root)] == [res.txid]


def test_second_apply_is_a_no_op_and_writes_no_journal(m):
    plan = m.plan()
    apply_plan(m.root, plan)
    h = m.hash()
    res = apply_plan(m.root, plan)
    assert (res.changed, res.txid, res.journal_path, res.state) == (False, None, None, "unchanged")
    assert {a.op for a in res.actions} == {"unchanged"}
    assert res.diff == {"before": {}, "after": {}}
    assert m.hash() == h and len(m.journals()) == 1


def test_files_already_in_place_are_left_alone(m):
    plan = m.plan(replace=False, delete=False, subdir=False)
    first = plan.changes[0]
    shutil.copyfile(first.staged, m.p(first.dest))
    res = apply_plan(m.root, plan)
    ops = {a.path.rsplit("/", 1)[1]: a.op for a in res.actions}
    assert ops[first.dest.rsplit("/", 1)[1]] == "unchanged"
    assert list(ops.values()).count("create") == len(plan.changes) - 1
    begin = read_journal(m.journals()[0])[0]
    assert len(begin["files"]) == len(plan.changes) - 1
    rollback(m.root)  # takes away only what it added
    assert m.p(first.dest).read_bytes() == first.staged.read_bytes()


def test_dry_run_checks_everything_and_writes_nothing(m):
    plan = m.plan()
    h = m.hash()
    res = apply_plan(m.root, plan, dry_run=True)
    assert res.changed and res.state == "dry-run" and res.txid is None
    assert m.hash() == h and not m.state().exists(), "a dry run created the state folder"
    assert len([a for a in res.actions if a.op == "mkdir"]) == 2
    (m.stage / plan.changes[0].staged.name).write_bytes(b"short")
    _refused(m, plan, "VERIFY_FAILED", "staged file", "fetch again", dry_run=True)


def test_plan_from_staged_makes_creates_and_pinned_replaces(m):
    a = m.staged("new.co", 100)
    b = m.staged("TensileManifest.txt", 50, seed="other")
    plan = plan_from_staged(m.root, "/opt/rocm", {"/opt/rocm/lib/rocblas/library/new.co": a,
                                                  "/opt/rocm/lib/rocblas/library/TensileManifest.txt": b})
    ops = {c.dest.rsplit("/", 1)[1]: (c.op, c.before_sha256) for c in plan.changes}
    assert ops["new.co"] == ("create", None)
    assert ops["TensileManifest.txt"] == ("replace", sha256_file(m.p(f"{LIB}/TensileManifest.txt"))[0])


# refusals ------------------------------------------------------------------------------------
def test_tree_changed_between_plan_and_apply_is_refused(m):
    plan = m.plan()
    target = m.p(f"{LIB}/TensileManifest.txt")
    target.write_bytes(b"edited by someone")
    err = _refused(m, plan, "DRIFT", "changed since the plan", "TensileManifest.txt", "plan again")
    assert err.exit == 8
    target.unlink()
    _refused(m, plan, "DRIFT", "TensileManifest.txt is missing")
    m2 = Machine.build(m.base.parent / "two")
    plan2 = m2.plan()
    m2.p(plan2.changes[0].dest).write_bytes(b"appeared")
    _refused(m2, plan2, "DRIFT", "exists", "expected no file")
    shutil.rmtree(m2.p(TREE))
    _refused(m2, plan2, "DRIFT", "is gone")


def test_staged_bytes_that_differ_from_the_plan_are_caught_and_undone(m):
    plan = m.plan()
    victim = plan.changes[3].staged
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF
    victim.write_bytes(bytes(data))  # same size: only the hash can tell
    h = m.hash()
    with pytest.raises(RevError) as ei:
        apply_plan(m.root, plan)
    assert ei.value.code == "VERIFY_FAILED" and "was undone, the tree is unchanged" in ei.value.message
    assert m.hash() == h
    recs = read_journal(m.journals()[0])
    assert recs[-1]["type"] == "rolled_back" and "apply failed" in recs[-1]["reason"]
    assert find_pending(m.root) == []


def test_tree_symlink_leading_outside_the_root_is_refused(m, tmp_path):
    outside = tmp_path / "outside/rocm"
    (outside / "lib/rocblas/library").mkdir(parents=True)
    link = m.root.path("/opt/rocm-evil")
    link.symlink_to(str(outside))  # absolute: under the root it names nothing; the kernel would follow it out
    plan = Plan("/opt/rocm-evil", [FileChange("/opt/rocm-evil/lib/rocblas/library/x.co", m.staged("x", 10),
                                              sha256_file(m.stage / "x")[0], 10, "create")])
    _refused(m, plan, "VERIFY_FAILED", "leads outside the root", "/opt/rocm-evil")
    link.unlink()
    link.symlink_to("../../../../../../../../.." + str(outside))  # relative, climbing out
    _refused(m, plan, "VERIFY_FAILED", "leads outside the root")
    assert list(outside.rglob("*")) == [outside / "lib", outside / "lib/rocblas", outside / "lib/rocblas/library"]
    lib = m.p(LIB)
    (lib / "sneaky").symlink_to(str(outside))  # a folder inside the tree leading out
    plan = Plan(TREE, [FileChange(f"{LIB}/sneaky/x.co", m.stage / "x", sha256_file(m.stage / "x")[0], 10, "create")])
    _refused(m, plan, "VERIFY_FAILED", "outside")
    (lib / "link.co").symlink_to("Kernels.so-000-gfx90a.hsaco")
    plan = Plan(TREE, [FileChange(f"{LIB}/link.co", m.stage / "x", sha256_file(m.stage / "x")[0], 10, "replace")])
    _refused(m, plan, "VERIFY_FAILED", "symbolic link", "only regular files")


def test_relative_opt_rocm_symlink_inside_the_root_works(m):
    link = m.root.path("/opt/rocm")
    link.unlink()
    link.symlink_to("rocm-6.4.3")
    res = apply_plan(m.root, m.plan())
    assert res.tree == TREE and all(a.path.startswith(TREE) for a in res.actions)


def test_state_folder_outside_the_root_is_refused(m, tmp_path):
    (m.base / "var/lib/rocmrevive").symlink_to(str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere").mkdir()
    _refused(m, m.plan(), "VERIFY_FAILED", "state folder", "outside the root")


@contextlib.contextmanager
def _holding(cmd: list[str], path: Path):
    """Run a process that holds a lock on ``path`` until we leave."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "locked"
        yield p
    finally:
        p.kill()
        p.wait()


def _flock_holder(path: Path):
    return _holding(["flock", "-x", "-o", str(path), "sh", "-c", "echo locked; exec sleep 30"], path)


def _fcntl_holder(path: Path):  # as apt and dpkg lock: POSIX record locks
    code = ("import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); "
            "print('locked', flush=True); time.sleep(30)")
    return _holding([sys.executable, "-c", code, str(path)], path)


def test_a_second_run_is_told_who_holds_the_lock(m):
    lock = m.state("lock")
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    with _flock_holder(lock):
        err = _refused(m, m.plan(), "LOCKED", "another rocmrevive", "/var/lib/rocmrevive/lock", "retry")
        assert err.exit == 7
        assert "PID " in err.message
        _refused(m, m.plan(), "LOCKED", dry_run=True)
        with pytest.raises(RevError) as ei:
            rollback(m.root)
        assert ei.value.code == "LOCKED"
    assert apply_plan(m.root, m.plan()).changed  # the kernel dropped the lock with its holder


@pytest.mark.parametrize("holder", [_flock_holder, _fcntl_holder])
@pytest.mark.parametrize("which", ["lock-frontend", "lock"])
def test_refuses_while_apt_or_dpkg_holds_its_lock(m, holder, which):
    path = m.p(f"/var/lib/dpkg/{which}")
    with holder(path) as proc:
        err = _refused(m, m.plan(), "LOCKED", "package manager", f"/var/lib/dpkg/{which}", "apt/dpkg",
                       "nothing was changed")
        assert f"PID {proc.pid}" in err.message or "PID" not in err.message
    assert path.read_bytes() == b"", "the dpkg lock file was written"


def test_concurrent_runs_one_applies_the_other_is_locked_or_finds_nothing_to_do(m):
    plan = m.plan(n_create=40, size=64 * 1024)
    procs = [subprocess.Popen(child_cmd(m, "apply", plan), env=child_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [(p.wait(), p.stdout.read()) for p in procs]
    codes = sorted(rc for rc, _ in outs)
    docs = [json.loads(o.splitlines()[-1]) for _, o in outs]
    assert codes.count(0) >= 1 and set(codes) <= {0, 7}, outs
    assert sum(1 for d in docs if d.get("changed")) == 1, docs
    assert all("holds /var/lib/rocmrevive/lock" in d["message"] for d in docs if "error" in d)
    assert len(m.journals()) == 1
    assert apply_plan(m.root, plan).changed is False


# the environment says no ---------------------------------------------------------------------
@contextlib.contextmanager
def _tmpfs(where: Path, size: str):
    """A small filesystem at ``where``: a tmpfs, else a loop-mounted ext4 image; skip if neither."""
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        img = where.parent / f"{where.name}.ext4"
        subprocess.run(["truncate", "-s", size.upper(), str(img)], check=True)
        made = subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], capture_output=True, text=True)
        r2 = subprocess.run(["mount", "-o", "loop", str(img), str(where)], capture_output=True, text=True)
        if made.returncode != 0 or r2.returncode != 0:
            pytest.skip(f"cannot mount a small filesystem here: tmpfs: {r.stderr.strip()}; "
                        f"loop ext4: {(made.stderr or r2.stderr).strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _move_tree_onto(m: Machine, mount: Path) -> None:
    src = m.p(TREE)
    subprocess.run(["cp", "-a", f"{src}/.", str(mount)], check=True)
    shutil.rmtree(src)
    src.mkdir()
    subprocess.run(["mount", "--bind", str(mount), str(src)], check=True)


def test_disk_full_is_found_before_anything_changes(m, tmp_path):
    plan = m.plan(n_create=4, size=400_000)  # 1.6 MB onto a 1 MB filesystem
    with _tmpfs(tmp_path / "small", "1m") as mnt:
        _move_tree_onto(m, mnt)
        try:
            err = _refused(m, plan, "PERMISSION", "not enough free space", "/opt/rocm-6.4.3", "free some space")
            assert err.exit == 4
            _refused(m, plan, "PERMISSION", "not enough free space", dry_run=True)
        finally:
            subprocess.run(["umount", "-l", str(m.p(TREE))], check=False)


def test_disk_filling_up_during_apply_is_undone(tmp_path):
    """Another process fills the disk after the preflight (here: as the first file is staged).
    Tree, staging and state folder share one small filesystem, so a later write fails for
    certain: a staged copy or, at the latest, the journal's group of intents (> 1 page)."""
    with _tmpfs(tmp_path / "small", "8m") as mnt:
        m = Machine.build(mnt)
        plan = m.plan(n_create=20, size=50_000)
        h = m.hash()
        filler = mnt / "filler"

        def fill(_n):
            if filler.exists():
                return
            with open(filler, "wb", buffering=0) as f:
                with contextlib.suppress(OSError):
                    while True:
                        f.write(b"\0" * 65536)

        with pytest.raises(RevError) as ei:
            apply_plan(m.root, plan, progress=fill)
        assert ei.value.code == "PERMISSION" and ei.value.message.startswith("no space left on the device"), ei.value
        assert "undone, the tree is unchanged" in ei.value.message
        assert m.hash() == h
        filler.unlink()
        recover_pending(m.root)  # a full disk may have kept the journal's last record out
        assert find_pending(m.root) == [] and m.hash() == h
        records, torn = read_records(m.journals()[0])  # a record the full disk cut short is skipped
        assert records[-1]["type"] == "rolled_back" and torn <= 1
        assert apply_plan(m.root, plan).changed  # with space again it goes through


def test_read_only_tree_is_refused(m):
    lib = m.p(LIB)
    r = subprocess.run(["mount", "--bind", "-o", "ro", str(lib), str(lib)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here: {r.stderr.strip()}")
    try:
        err = _refused(m, m.plan(), "PERMISSION", "read-only file system", LIB, "remount")
        assert err.exit == 4
    finally:
        subprocess.run(["umount", str(lib)], check=True)


def test_immutable_tree_folder_is_refused(m):
    lib = m.p(LIB)
    r = subprocess.run(["chattr", "+i", str(lib)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"chattr +i does not work here: {r.stderr.strip()}")
    try:
        _refused(m, m.plan(), "PERMISSION", "not writable even by root", "lsattr")
    finally:
        subprocess.run(["chattr", "-i", str(lib)], check=True)


def _as_nobody(m: Machine, plan: Plan) -> subprocess.CompletedProcess:
    cmd = AS_NOBODY + child_cmd(m, "apply", plan)
    return subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=60)


def test_permission_denied_for_an_ordinary_user(tmp_path):
    with folder_for_nobody("rocmrevive-perm-") as where:
        m = Machine.build(where)
        os.chmod(m.stage, 0o755)
        probe = subprocess.run(AS_NOBODY + [sys.executable, "-c", "import rocmrevive.txn.apply"],
                               env=child_env(), capture_output=True, text=True)
        if probe.returncode != 0:
            pytest.skip(f"nobody cannot run this Python: {probe.stderr.strip()[-200:]}")
        plan = m.plan()
        h = m.hash()
        p = _as_nobody(m, plan)  # /var/lib under the root belongs to root: no lock for nobody
        assert p.returncode == 4, p.stdout + p.stderr
        # the checks run before the lock is taken: the first file nobody may replace is named
        assert "permission denied: /opt/rocm-6.4.3/lib/rocblas/library/" in p.stdout and "run as root" in p.stdout
        assert not (m.root.path("/var/lib/rocmrevive/lock")).exists()
        state = m.state()
        state.mkdir(parents=True)
        os.chown(state, 65534, 65534)  # nobody's own state folder: the lock is obtainable, the tree still is not
        # writable (a world-writable state folder would be refused: docs/security.md)
        p = _as_nobody(m, plan)
        assert p.returncode == 4, p.stdout + p.stderr
        doc = json.loads(p.stdout.splitlines()[-1])  # the 0640 file it would replace is unreadable
        assert doc["error"] == "PERMISSION", doc
        assert doc["message"].startswith(f"permission denied: {LIB}/TensileManifest.txt; run as root"), doc
        os.chmod(m.p(f"{LIB}/TensileManifest.txt"), 0o644)
        h = m.hash()
        p = _as_nobody(m, plan)  # readable now; the folder is still not writable
        doc = json.loads(p.stdout.splitlines()[-1])
        assert p.returncode == 4 and doc["error"] == "PERMISSION", doc
        assert doc["message"] == (f"cannot write to {LIB}: permission denied; nothing was changed; "
                                  "run as root (sudo)"), doc
        assert m.hash() == h and m.journals() == []


def test_interrupted_transaction_blocks_apply_and_rollback_until_recovered(m):
    plan = m.plan()
    p = run_child(m, "apply", plan, kill_at="rename:2")
    assert p.returncode == -9
    pending = find_pending(m.root)
    assert len(pending) == 1
    with pytest.raises(RevError) as ei:
        require_no_pending(m.root)
    assert ei.value.code == "INTERRUPTED" and "rocmrevive recover" in ei.value.message and TREE in ei.value.message
    for call in (lambda: apply_plan(m.root, plan), lambda: rollback(m.root), lambda: apply_plan(m.root, plan, dry_run=True)):
        with pytest.raises(RevError) as ei:
            call()
        assert ei.value.code == "INTERRUPTED" and ei.value.exit == 9
