"""The transaction raced by an ordinary user (issue 26, findings 2, 3, 5): the real unprivileged
account owns a folder inside the tree (as in a venv's ``torch/lib/rocblas``) and, from a forked
child, swaps the library folder with a link to root's own folder (``renameat2(RENAME_EXCHANGE)``)
at the moment the journal changes (inotify on the state folder) or in a tight loop, while root runs
``apply_plan``, ``rollback`` or ``recover_pending``. Not one byte of root's folder may change: every
write of the transaction goes through the folders it surveyed (``txn.folders``), never by path.

These drive the transaction layer directly (the tree-trust decision that refuses a user's tree up
front is a layer above): they prove the descriptor layer on its own. Each scenario fails on the code
before descriptors (the escapes counted there are in the commit message)."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.txn import apply as txn_apply
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.folders import Folders
from rocmrevive.txn.state import StateDir
from rocmrevive.txn.undo import recover_pending, rollback
from tests.security_support import Arena, attacker, one_line_error, run_cli
from tests.test_security_folders import source  # noqa: F401  (a fixture: a .deb and its manifest)
from tests.test_txn_support import LIB, Machine, cli, read_journal, run_child

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root raced by an ordinary user: needs root")

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_IN_MODIFY, _IN_CREATE, _IN_MOVED_TO = 0x2, 0x100, 0x80
REPS_INOTIFY = 20
REPS_LOOP = 25
REPS_LOOP_APPLY = 50  # a tight loop wins the apply's short window less often (2 of 25 before descriptors)


def exchange(a: Path, b: Path) -> int:
    """renameat2(a, b, RENAME_EXCHANGE): 0, or the errno."""
    rc = _libc.syscall(316, _AT_FDCWD, os.fsencode(str(a)), _AT_FDCWD, os.fsencode(str(b)), _RENAME_EXCHANGE)
    return 0 if rc == 0 else ctypes.get_errno()


def wait_inotify(folder: Path, mask: int, ready_w: int) -> None:
    """Block until something happens in ``folder`` (inotify), telling the parent when watching."""
    fd = _libc.inotify_init1(os.O_CLOEXEC)
    assert fd >= 0, ctypes.get_errno()
    assert _libc.inotify_add_watch(fd, os.fsencode(str(folder)), mask) >= 0, ctypes.get_errno()
    os.write(ready_w, b"r")
    os.read(fd, 4096)


class Racer:
    """A forked child that becomes the attacker and swaps ``lib`` with ``evil`` (a link to root's
    folder): once, when the state folder's ``tx`` changes (``trigger``), or over and over."""

    def __init__(self, arena: Arena, lib: Path, evil: Path, trigger: Path | None):
        self.lib, self.evil = lib, evil
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.close(r)
                os.setgroups([])
                os.setgid(arena.gid)
                os.setuid(arena.uid)
                if trigger is not None:
                    wait_inotify(trigger, _IN_MODIFY | _IN_CREATE | _IN_MOVED_TO, w)
                    exchange(lib, evil)
                    os._exit(0)
                os.write(w, b"r")
                while True:
                    exchange(lib, evil)
            except BaseException:  # noqa: BLE001 - the forked racer must never return into pytest
                os._exit(1)
        os.close(w)
        assert os.read(r, 1) == b"r"
        os.close(r)

    def stop(self) -> None:
        with _suppress():
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        if self.lib.is_symlink():  # left swapped: put the folder back for the checks that follow
            exchange(self.lib, self.evil)


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        return typ is not None and issubclass(typ, ProcessLookupError)


@pytest.fixture
def arena():
    a = Arena.make(attacker())
    yield a
    a.cleanup()


def victim_machine(arena: Arena, n: int, *, up: int = 0) -> tuple[Machine, Path, Path]:
    """A machine in the arena whose ``lib/rocblas`` (the library's parent) the attacker owns, with a
    link ``evil`` beside the library pointing at root's folder; the swapped folder is the library
    itself, or with ``up=1`` its parent (``lib/rocblas``, the attacker owning ``lib``). Root's
    folder gets a copy of the library (``copy_into_victim``), so an escape shows there."""
    where = arena.base / f"m{n}"
    where.mkdir()
    m = Machine.build(where)
    swapped = m.p(LIB)
    for _ in range(up):
        swapped = swapped.parent
    os.chown(swapped.parent, arena.uid, arena.gid)
    evil = swapped.parent / "evil"
    os.symlink(arena.victim, evil)
    os.lchown(evil, arena.uid, arena.gid)
    StateDir(m.root).ensure()
    return m, swapped, evil


def copy_into_victim(arena: Arena, swapped: Path, lib: Path | None = None) -> None:
    """Root's folder gets the library's files at the place the swapped folder would put them (so an
    escaped backup, restore or delete succeeds and shows)."""
    lib = lib or swapped
    dest = arena.victim / lib.relative_to(swapped)
    dest.mkdir(parents=True, exist_ok=True)
    for p in lib.iterdir():
        if p.is_file():
            shutil.copy2(p, dest / p.name)
    arena.before = arena.victim_hash()


def attempt(fn):
    """Run one transaction command; a refusal (one RevError) is a fine outcome of a race."""
    try:
        fn()
        return "ok"
    except RevError as exc:
        assert "\n" not in exc.message
        return exc.code


def race(arena: Arena, lib: Path, evil: Path, trigger: Path | None, fn) -> str:
    racer = Racer(arena, lib, evil, trigger)
    try:
        outcome = attempt(fn)
    finally:
        racer.stop()
    return outcome


def tally(outcomes: list[str], escapes: int, reps: int) -> None:
    print(f"{reps} runs: {escapes} escapes; outcomes {sorted(set(outcomes))}")
    assert escapes == 0, f"root wrote or deleted in its own folder in {escapes} of {reps} runs"


@pytest.mark.parametrize("mode", ["inotify", "loop"])
def test_apply_raced_never_writes_outside_the_tree(arena, mode):
    reps = REPS_INOTIFY if mode == "inotify" else REPS_LOOP_APPLY
    escapes, outcomes = 0, []
    for n in range(reps):
        m, lib, evil = victim_machine(arena, n)
        copy_into_victim(arena, lib)
        plan = m.plan()
        trigger = m.state("tx") if mode == "inotify" else None
        outcomes.append(race(arena, lib, evil, trigger, lambda: apply_plan(m.root, plan)))
        escapes += not arena.victim_intact()
        restore_victim(arena)
    tally(outcomes, escapes, reps)


@pytest.mark.parametrize("mode", ["inotify", "loop"])
def test_rollback_raced_never_writes_outside_the_tree(arena, mode):
    reps = REPS_INOTIFY if mode == "inotify" else REPS_LOOP
    escapes, outcomes = 0, []
    for n in range(reps):
        m, lib, evil = victim_machine(arena, n)
        apply_plan(m.root, m.plan())
        copy_into_victim(arena, lib)
        trigger = m.state("tx") if mode == "inotify" else None
        outcomes.append(race(arena, lib, evil, trigger, lambda: rollback(m.root)))
        escapes += not arena.victim_intact()
        restore_victim(arena)
    tally(outcomes, escapes, reps)


@pytest.mark.parametrize("mode", ["inotify", "loop"])
def test_recover_raced_never_writes_outside_the_tree(arena, mode):
    reps = REPS_INOTIFY if mode == "inotify" else REPS_LOOP
    escapes, outcomes = 0, []
    for n in range(reps):
        m, lib, evil = victim_machine(arena, n)
        assert run_child(m, "apply", m.plan(), kill_at="rename:3").returncode == -9
        copy_into_victim(arena, lib)
        trigger = m.state("tx") if mode == "inotify" else None
        outcomes.append(race(arena, lib, evil, trigger, lambda: recover_pending(m.root)))
        escapes += not arena.victim_intact()
        restore_victim(arena)
    tally(outcomes, escapes, reps)


def restore_victim(arena: Arena) -> None:
    """Root's folder back to its first state, for the next run."""
    shutil.rmtree(arena.victim)
    arena.victim.mkdir()
    arena.precious.write_bytes(b"root's own file\n")
    (arena.victim / "keep").mkdir()
    (arena.victim / "keep" / "x").write_bytes(b"root's own folder\n")
    arena.before = arena.victim_hash()


@pytest.mark.parametrize("op", ["apply", "rollback"])
def test_the_parent_folder_raced_on_inotify(arena, op):
    """The swapped folder is the library's parent (``lib/rocblas``): the walk down from it, not
    only the last folder, must never be re-resolved."""
    escapes, outcomes = 0, []
    for n in range(REPS_INOTIFY):
        m, swapped, evil = victim_machine(arena, n, up=1)
        if op == "rollback":
            apply_plan(m.root, m.plan())
        copy_into_victim(arena, swapped, m.p(LIB))
        plan = m.plan() if op == "apply" else None
        run = (lambda: apply_plan(m.root, plan)) if op == "apply" else (lambda: rollback(m.root))
        outcomes.append(race(arena, swapped, evil, m.state("tx"), run))
        escapes += not arena.victim_intact()
        restore_victim(arena)
    tally(outcomes, escapes, REPS_INOTIFY)


# finding 5: a planted temporary never jams the machine ------------------------------------------
def test_a_folder_planted_at_the_old_temporary_names_neither_fails_install_nor_jams_recover(arena):
    m, lib, _ = victim_machine(arena, 0)
    os.chown(lib, arena.uid, arena.gid)
    plan = m.plan()
    names = [Path(c.dest).name for c in plan.changes if c.op != "delete" and "/gfx906/" not in c.dest]

    def plant():
        for name in names:
            (lib / f".{name}.rocmrevive-new").mkdir()
            (lib / f".{name}.rocmrevive-new" / "x").write_bytes(b"the user's")

    arena.as_attacker(plant)
    res = apply_plan(m.root, plan)
    assert res.changed and res.state == "committed"
    for name in names:
        assert (lib / f".{name}.rocmrevive-new" / "x").read_bytes() == b"the user's"
    assert rollback(m.root).state == "rolled_back"
    for name in names:
        assert (lib / f".{name}.rocmrevive-new" / "x").read_bytes() == b"the user's"


def test_a_folder_planted_at_a_recorded_temporary_leaves_recover_working(arena):
    m, lib, _ = victim_machine(arena, 0)
    os.chown(lib, arena.uid, arena.gid)
    assert run_child(m, "apply", m.plan(), kill_at="stage:2").returncode == -9
    temps = [t for r in read_journal(m.journals()[-1]) if r["type"] == "stage" for t in r["temps"]]
    assert temps
    for t in temps:  # what a user who read the journal could do: a folder where a temporary is
        real = m.root.path(t)
        if real.exists():
            real.unlink()
    arena.as_attacker(lambda: [m.root.path(t).mkdir() for t in temps if m.root.path(t).parent == lib])
    res = recover_pending(m.root)
    assert [r.state for r in res] == ["rolled_back"]
    assert any("left" in w for w in res[0].warnings)
    assert not any(t.pending for t in StateDir(m.root).load_all())


def test_a_temporary_name_found_taken_is_drawn_again_and_left_alone(arena, monkeypatch):
    """The random name is recorded before it is created: one someone created first is recorded as
    foreign, another drawn, and neither the apply nor its rollback touches the planted file."""
    m, lib, _ = victim_machine(arena, 0)
    os.chown(lib, arena.uid, arena.gid)
    plan = m.plan(subdir=False)
    planted = ".TensileManifest.txt.0123456789ab.rocmrevive-new"
    arena.as_attacker(lambda: (lib / planted).write_bytes(b"the user's"))
    real = txn_apply.temp_name
    first = iter([planted])
    monkeypatch.setattr(txn_apply, "temp_name", lambda name: next(first, None) or real(name)
                        if name == "TensileManifest.txt" else real(name))
    assert apply_plan(m.root, plan).state == "committed"
    stages = [r for r in read_journal(m.journals()[-1]) if r["type"] == "stage"]
    assert len(stages) == 2 and stages[1]["foreign"] == [f"/opt/rocm-6.4.3/lib/rocblas/library/{planted}"]
    assert rollback(m.root).state == "rolled_back"
    assert (lib / planted).read_bytes() == b"the user's"


# an undo from a journal: a folder now a link, or another folder, is refused, never followed ----
def test_rollback_refuses_a_folder_now_a_link_or_another_folder(arena):
    m, lib, evil = victim_machine(arena, 0)
    apply_plan(m.root, m.plan())
    copy_into_victim(arena, lib)
    h = m.hash()
    assert exchange(lib, evil) == 0  # now a link to root's folder
    with pytest.raises(RevError) as ei:
        rollback(m.root)
    assert ei.value.code in ("DRIFT", "VERIFY_FAILED") and "\n" not in ei.value.message
    assert arena.victim_intact()
    assert exchange(lib, evil) == 0
    other = lib.parent / "other"
    shutil.copytree(lib, other, symlinks=True)  # same names and bytes, another inode
    os.rename(lib, lib.parent / "orig")
    os.rename(other, lib)
    with pytest.raises(RevError) as ei:
        rollback(m.root)
    assert ei.value.code == "DRIFT" and "another folder than the one the transaction wrote" in ei.value.message
    shutil.rmtree(lib)
    os.rename(lib.parent / "orig", lib)
    assert m.hash() == h
    assert rollback(m.root).state == "rolled_back"


def test_journal_done_records_carry_the_identity_of_each_file_written(arena):
    m, lib, _ = victim_machine(arena, 0)
    apply_plan(m.root, m.plan())
    done = [r for r in read_journal(m.journals()[-1]) if r["type"] == "done" and r["op"] in ("create", "replace")]
    assert done
    for r in done:
        st = os.lstat(m.root.path(r["path"]))
        assert r["ident"] == [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    begin = read_journal(m.journals()[-1])[0]
    st = os.stat(lib)
    assert begin["dirs"]["/opt/rocm-6.4.3/lib/rocblas/library"] == [st.st_dev, st.st_ino]


# finding 10: status checks the files written, not only the bytes at the paths -----------------
def test_status_sees_equal_bytes_at_another_inode_as_drifted(arena):
    """An escape or a swap leaves copies with the right bytes at the paths; ``status`` compared
    only bytes and said "intact". Now the inode written (the done record's identity) must be there."""
    m, lib, _ = victim_machine(arena, 0)
    apply_plan(m.root, m.plan(subdir=False))
    rc, doc, _ = cli(m, "status")
    assert rc == 0 and doc["transactions"][0]["integrity"] == "intact"
    swapped = lib.parent / "copy"
    shutil.copytree(lib, swapped, symlinks=True)  # same names, same bytes, other inodes
    os.rename(swapped, lib.parent / "library.tmp")
    os.rename(lib, swapped)
    os.rename(lib.parent / "library.tmp", lib)
    rc, doc, _ = cli(m, "status")
    t = doc["transactions"][0]
    assert t["integrity"] == "drifted" and t["intact"] == [c["path"] for c in t["changes"] if c["op"] == "delete"]
    assert sorted(t["drifted"]) == sorted(c["path"] for c in t["changes"] if c["op"] != "delete")


# finding 9: under --root the cache never leaves the root ----------------------------------------
@pytest.mark.parametrize("link", ["var/cache", "var/cache/rocmrevive"])
def test_a_root_owned_link_never_takes_the_cache_out_of_the_root(arena, source, link):
    deb, mf = source
    img = arena.base / "img"
    (img / link).parent.mkdir(parents=True)
    os.symlink(arena.victim, img / link)  # root's own link, to a folder outside the image
    rc, doc, err = run_cli(["--root", str(img), "fetch", "--manifests", str(mf), "--from", str(deb)])
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert "stays under --root" in msg
    assert arena.victim_intact()


def test_cli_rollback_raced_never_writes_outside_the_tree(arena):
    """The same race against ``rocmrevive rollback`` in its own process (a tree-trust check above
    the transaction may refuse the tree first: any refusal is fine, an escape is not)."""
    escapes, outcomes = 0, []
    for n in range(8):
        m, lib, evil = victim_machine(arena, n)
        apply_plan(m.root, m.plan())
        copy_into_victim(arena, lib)
        racer = Racer(arena, lib, evil, m.state("tx"))
        try:
            rc, doc, err = cli(m, "rollback")
        finally:
            racer.stop()
        outcomes.append(rc)
        escapes += not arena.victim_intact()
        restore_victim(arena)
    tally([str(o) for o in outcomes], escapes, 8)
    assert set(outcomes) <= {0, 4, 8}, outcomes  # done, or refused: never left interrupted


def test_a_file_planted_at_the_old_fixed_temporary_name_is_not_removed_by_an_undo(arena):
    m, lib, _ = victim_machine(arena, 0)
    os.chown(lib, arena.uid, arena.gid)
    plan = m.plan(subdir=False)
    arena.as_attacker(lambda: (lib / ".TensileManifest.txt.rocmrevive-new").write_bytes(b"the user's"))
    apply_plan(m.root, plan)
    assert rollback(m.root).state == "rolled_back"
    assert (lib / ".TensileManifest.txt.rocmrevive-new").read_bytes() == b"the user's"


def test_folders_refuse_a_link_on_the_way_and_writes_in_a_replaced_folder(tmp_path):
    """The descriptor layer on its own: a component that is a link is never opened; a folder with
    another identity than recorded is readable but every write in it is refused."""
    m = Machine.build(tmp_path)
    lib = m.p(LIB)
    with Folders(m.root) as f:
        assert f.lstat(lib / "TensileManifest.txt") is not None
        with pytest.raises(RevError) as ei:
            f.fd(m.root.path("/opt/rocm/lib"))  # /opt/rocm is a link to rocm-6.4.3
        assert ei.value.code == "DRIFT" and "symbolic link" in ei.value.message
    mp = m.root.machine_path(lib)
    with Folders(m.root, {mp: (0, 1)}) as f:
        assert f.lstat(lib / "TensileManifest.txt") is not None and lib in f.replaced
        with pytest.raises(RevError) as ei:
            f.create_temp(lib, "x.co")
        assert ei.value.code == "DRIFT" and "another folder" in ei.value.message
        with pytest.raises(RevError):
            f.unlink(lib / "TensileManifest.txt")
    assert (lib / "TensileManifest.txt").is_file() and not [p for p in lib.iterdir() if p.name.startswith(".")]
