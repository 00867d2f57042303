"""Root never runs a user's code and never waits on a user's process (issue 35, findings 1, 2
and 8; docs/security.md "Executing user code", "Waiting on user processes"), driven with a real
unprivileged account (``rrattacker``): a venv of its own whose interpreter wrapper, ``.pth``
line, ``sitecustomize.py`` (Debian's own comes first there) and ``torch/__init__.py`` each leave a mark naming the uid, groups and
gid that ran them. ``smoke`` finds the venv by reading files, runs it as its owner only, and
kills it at the deadline when the owner stops it; ``install --python`` on the venv, run from an
interpreter only root may read, still installs as the owner; a stopped owner-run install child
is killed at the deadline.

    a = Arena.make(attacker()); venv = marking_venv(a.base / "img", a)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.trees.owner_run import Account, runner_for
from tests.security_support import ATTACKER, Arena, attacker, run_cli
from tests.test_security_trees import place  # noqa: F401  (the shared fixture: a folder every account may reach)

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/python3").exists(),
                                reason="needs root (to become the account) and /usr/bin/python3")

HOME = f"/home/{ATTACKER}"
MARK = ("import os\n"
        "open(os.path.join({marks!r}, '{what}-%d-%d' % (os.getuid(), os.getpid())), 'w')"
        ".write('%d %d %s' % (os.getuid(), os.getgid(), sorted(os.getgroups())))\n")


def _real_python() -> tuple[str, str]:
    real = os.path.realpath("/usr/bin/python3")
    ver = subprocess.run([real, "-c", "import sys;print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return real, ver


def marking_venv(top: Path, who: tuple[int, int]) -> tuple[Path, Path]:
    """A venv at ``top/home/rrattacker/venv`` (every folder and file the account's) whose code
    leaves marks in ``top/home/rrattacker/marks``: (venv, marks)."""
    real, ver = _real_python()
    home = top / HOME.lstrip("/")
    venv, marks = home / "venv", home / "marks"
    site = venv / f"lib/python{ver}/site-packages"
    (site / "torch").mkdir(parents=True)
    marks.mkdir()
    (venv / "bin").mkdir()
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(real)}\nversion = {ver}\n")
    os.symlink(real, venv / f"bin/python{ver}")
    wrapper = venv / "bin/python"
    wrapper.write_text(f"#!/bin/sh\ntouch {marks}/wrapper-$(id -u)-$$\n"
                       f"[ -e {marks}/STOP ] && kill -STOP $$\n"
                       f'exec "$(dirname "$0")/python{ver}" "$@"\n')
    wrapper.chmod(0o755)
    (site / "marker.pth").write_text(MARK.format(marks=str(marks), what="pth").replace("\n", ";")
                                     .replace("import os;", "import os; ").rstrip(";") + "\n")
    (site / "sitecustomize.py").write_text(MARK.format(marks=str(marks), what="sitecustomize"))
    (site / "torch/__init__.py").write_text(MARK.format(marks=str(marks), what="torch")
                                            + "raise ImportError('not a real torch')\n")
    (site / "torch/version.py").write_text("__version__ = '2.9.0+rocm6.4'\nhip = '6.4.1'\n")
    for p in [top / "home", *sorted(home.rglob("*"), key=str), home]:
        if p == top / "home":
            continue
        os.lchown(p, *who)
    return venv, marks


def _marks(marks: Path) -> list[tuple[str, int]]:
    return sorted((p.name, p.stat().st_uid) for p in marks.iterdir() if p.name != "STOP")


@pytest.fixture
def arena():
    a = Arena.make(attacker())
    yield a
    a.cleanup()


def test_runner_is_decided_from_files_alone(arena):
    att = (arena.uid, arena.gid)
    venv, marks = marking_venv(arena.base / "img", att)
    real, ver = _real_python()
    site = str(next(venv.glob("lib/python*/site-packages")))
    # root's own interpreter: run as root; the user's venv: run as the user, with its groups
    assert runner_for([real]).account is None
    who = runner_for([str(venv / "bin/python")], [site])
    assert who.account == Account.of(arena.uid) and who.account.name == ATTACKER
    assert set(who.account.groups) == set(os.getgrouplist(ATTACKER, arena.gid))
    # deciding ran nothing
    assert _marks(marks) == []
    # not root: nobody is dropped to
    assert runner_for([str(venv / "bin/python")], [site], euid=arena.uid).account is None
    # a folder others can write on the way, and two owners: refused with one line
    os.chmod(venv / "bin", 0o777)
    with pytest.raises(RevError) as e:
        runner_for([str(venv / "bin/python")], [site])
    assert e.value.code == "PERMISSION" and "world-writable" in e.value.message and "\n" not in e.value.message
    os.chmod(venv / "bin", 0o755)
    os.chown(venv / "bin/python", 0, 0)
    other = Path(arena.base / "other")
    other.mkdir()
    os.chown(other, 65534, 65534)
    with pytest.raises(RevError) as e:
        runner_for([str(venv / "bin/python")], [site, str(other)])
    assert "mixed owners" in e.value.message


def _smoke(args: list[str], env: dict | None = None, timeout: int = 300):
    return run_cli(["smoke", "--torch", "--cpu-test-mode", "--timeout", "20", *args], env=env, timeout=timeout)


def _assert_only_the_user_ran(marks: Path, uid: int, gid: int, want: set[str]) -> None:
    got = _marks(marks)
    assert {n.split("-")[0] for n, _ in got} >= want, got
    assert all(owner == uid and f"-{uid}-" in name for name, owner in got), got   # never uid 0
    groups = sorted(os.getgrouplist(ATTACKER, gid))
    for p in marks.iterdir():
        if not p.name.startswith("wrapper") and p.name != "STOP":
            assert p.read_text() == f"{uid} {gid} {groups}", p.read_text()


def test_smoke_finds_a_users_venv_in_the_image_and_runs_it_as_the_user_only(arena):
    img = arena.base / "img"
    venv, marks = marking_venv(img, (arena.uid, arena.gid))
    rc, doc, err = _smoke(["--root", str(img)])
    t = doc["torch"]
    # found by reading its files, inside the image only (no host interpreter looked at)
    assert t["python"].startswith(str(img)) and t["run_as"] == ATTACKER, t
    assert t["status"] == "unavailable" and "not a real torch" in (t["reason"] or "") + err, (t, err[-2000:])
    _assert_only_the_user_ran(marks, arena.uid, arena.gid, {"pth", "torch"})


def test_smoke_python_given_runs_as_its_owner(arena):
    venv, marks = marking_venv(arena.base / "img", (arena.uid, arena.gid))
    rc, doc, err = _smoke(["--python", str(venv / "bin/python")])
    assert doc["torch"]["run_as"] == ATTACKER, (doc, err[-2000:])
    _assert_only_the_user_ran(marks, arena.uid, arena.gid, {"wrapper", "pth", "torch"})


def test_a_stopped_user_interpreter_is_killed_at_the_deadline(arena):
    venv, marks = marking_venv(arena.base / "img", (arena.uid, arena.gid))
    (marks / "STOP").touch()
    t0 = time.monotonic()
    rc, doc, err = _smoke(["--python", str(venv / "bin/python")], env={"ROCMREVIVE_OWNER_DEADLINE": "4"},
                          timeout=120)
    took = time.monotonic() - t0
    assert rc == 10 and doc["error"]["code"] == "SMOKE_FAILED", (rc, doc, err[-2000:])
    assert "did not finish in 4 s and was killed" in doc["error"]["message"]
    assert took < 60, took
    assert [n for n, _ in _marks(marks) if n.startswith("wrapper")]     # it did start, as the user
    alive = subprocess.run(["pgrep", "-u", ATTACKER], capture_output=True, text=True).stdout.split()
    assert alive == [], alive


def test_a_root_only_venv_still_runs_as_root(arena):
    if shutil.which("pgrep") is None:
        pytest.skip("no pgrep")
    real, _ = _real_python()
    assert runner_for([sys.executable]).account is None
    assert runner_for([real]).account is None


# ---- install's child that is the tree's owner --------------------------------------------------


def test_install_into_a_users_venv_from_an_interpreter_only_root_can_read(place):
    """Finding 8: this machine's own interpreter lives in /root (0700); the child imports
    everything before it drops, so the install as the owner still works."""
    from tests.test_security_trees import LIB, VENV, demo, install, user_venv

    att = attacker()
    root, args = demo(place)
    venv = user_venv(root, att)
    rc, doc, err = install(root, place, args, "--python", VENV, "--tree", LIB)
    assert rc == 0, (err[-3000:], doc and doc.get("error"))
    (cp,) = [c for c in doc["copies"] if c["library"] == LIB]
    assert cp["status"] == "installed" and cp["as_user"] == ATTACKER
    assert all(p.stat().st_uid == att[0] for p in (root / LIB.lstrip("/")).glob("*gfx906*"))
    assert venv.is_dir()


def test_a_stopped_owner_child_is_killed_at_the_deadline_and_left_recoverable(place):
    """Finding 2: the child that is the owner stops (SIGSTOP, as its owner may send) mid-transaction;
    root kills it at the deadline, exits INTERRUPTED (9) with one line naming the owner's recover,
    and that recover restores the venv byte for byte."""
    from rocmrevive.txn.fsutil import tree_hash
    from tests.security_support import one_line_error
    from tests.test_security_trees import LIB, VENV, as_user, demo, install, user_venv

    att = attacker()
    root, args = demo(place)
    venv = user_venv(root, att)
    before = tree_hash(venv)
    t0 = time.monotonic()
    rc, doc, err = install(root, place, args, "--python", VENV, "--tree", LIB,
                           env={"ROCMREVIVE_TEST_KILL_AT": "rename:2:STOP", "ROCMREVIVE_OWNER_DEADLINE": "5"})
    took = time.monotonic() - t0
    msg = one_line_error(rc, doc, err, "INTERRUPTED")
    assert "did not finish in 5 s and was killed" in msg and f"sudo -u {ATTACKER} rocmrevive --root {root} recover" in msg
    assert took < 90, took
    alive = subprocess.run(["pgrep", "-u", ATTACKER], capture_output=True, text=True).stdout.split()
    assert alive == [], alive
    assert tree_hash(venv) != before
    p = as_user(place, att, f"sudo -u {ATTACKER} rocmrevive --root {root} recover")
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    assert tree_hash(venv) == before


# ---- the apt hook's #! chain (finding 6) --------------------------------------------------------
@pytest.mark.parametrize("how", ["user-python", "chain", "env-ok", "plain-ok"])
def test_the_hook_checks_its_whole_interpreter_chain(arena, tmp_path, how):
    root = tmp_path / "m"
    (root / "etc/apt/apt.conf.d").mkdir(parents=True)
    bindir = tmp_path / "rootbin"            # root's own folder: the script itself passes
    bindir.mkdir()
    os.chmod(tmp_path, 0o755)
    user_py = arena.home / "python"

    def plant():
        user_py.write_text("#!/bin/sh\ntouch /tmp/PWNED-by-hook\n")
        os.chmod(user_py, 0o755)

    arena.as_attacker(plant)
    exe = bindir / "rocmrevive"
    if how == "user-python":
        exe.write_text(f"#!{user_py}\n")
    elif how == "chain":
        middle = bindir / "python-wrapper"
        middle.write_text(f"#!{user_py} -E\n")
        middle.chmod(0o755)
        exe.write_text(f"#!{middle}\n")
    elif how == "env-ok":   # env's program is looked up on the secure path inside the image
        (root / "usr/bin").mkdir(parents=True)
        (root / "usr/bin/python3").write_text("#!/bin/sh\n")
        (root / "usr/bin/python3").chmod(0o755)
        exe.write_text("#!/usr/bin/env python3\nimport sys\n")
    else:
        exe.write_text(f"#!{os.path.realpath('/usr/bin/python3')}\n")
    exe.chmod(0o755)
    rc, doc, err = run_cli(["--root", str(root), "hook", "install", "--bin", str(exe)])
    if how.endswith("-ok"):
        assert rc == 0, (doc and doc["error"], err[-2000:])
        return
    from tests.security_support import one_line_error

    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert f"the #! interpreter {user_py}" in msg and f"uid {arena.uid}" in msg, msg
    assert os.listdir(root / "etc/apt/apt.conf.d") == []


def test_under_root_no_interpreter_outside_the_image_is_looked_at(tmp_path):
    from rocmrevive.rootfs import Root
    from rocmrevive.smoke.torch_runner import candidate_pythons, pick_python

    (tmp_path / "img/usr/bin").mkdir(parents=True)
    assert candidate_pythons(Root(tmp_path / "img")) == []
    py, why = pick_python(None, Root(tmp_path / "img"))
    assert py is None and "looked at: nothing" in why
    # on the host, this interpreter is a candidate (root's own: it would run as root)
    assert any(os.path.realpath(p) == os.path.realpath(sys.executable) for p, _ in candidate_pythons(Root("/")))


def test_a_users_llama_build_runs_as_the_user_and_is_killed_when_it_stops(arena):
    """smoke's llama.cpp part: a build in a user's folder runs as that user (never root), and one
    that stops itself is killed at its step's time limit."""
    from rocmrevive.smoke.llama import run_llama_smoke

    bindir, marks = arena.home / "llama", arena.home / "marks"

    def plant():
        bindir.mkdir()
        marks.mkdir()
        bench = bindir / "llama-bench"
        bench.write_text(f"#!/bin/sh\ntouch {marks}/bench-$(id -u)-$$\n"
                         f"[ -e {marks}/STOP ] && kill -STOP $$\necho 'no GPU' >&2; exit 1\n")
        bench.chmod(0o755)

    arena.as_attacker(plant)
    out = run_llama_smoke(bindir, timeout=5)
    assert out["run_as"] == ATTACKER and out["status"] == "failed", out
    got = _marks(marks)
    assert got and all(uid == arena.uid and f"-{arena.uid}-" in n for n, uid in got), got
    (marks / "STOP").touch()
    t0 = time.monotonic()
    out = run_llama_smoke(bindir, timeout=3)
    assert out["status"] == "failed" and "did not finish within 3 s" in out["reason"], out
    assert time.monotonic() - t0 < 60
    assert subprocess.run(["pgrep", "-u", ATTACKER], capture_output=True, text=True).stdout.split() == []
