"""Who may write a tree (rocmrevive/trees/trust.py, docs/security.md "Trees"), driven with a real
unprivileged account (``rrattacker``): root writes a tree only when root alone can write it and
every folder above it; a tree of one user is refused as root with the command to run as that
user, and that command, run as the user, installs and rolls back byte for byte; trees found on
their own that root may not write are reported and left alone; mixed owners and folders others
can write are refused. Issue 26, findings 1, 3 and 4.

    att = attacker(); root, args = demo(place); chown_tree(root / "opt/rocm-6.4.3", att)
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rocmrevive.trees.trust import Folder, Trust, judge
from rocmrevive.txn.fsutil import tree_hash
from tests.machines.build import build
from tests.security_support import ATTACKER, REPO, attacker, one_line_error, run_cli
from tests.test_contract_readonly import _site_for_nobody
from tests.test_install import mr, write_manifest

VENV = f"/home/{ATTACKER}/venv"
SITE = f"{VENV}/lib/python3.12/site-packages"
LIB = f"{SITE}/torch/lib/rocblas/library"
ROCM_LIB = "/opt/rocm-6.4.3/lib/rocblas/library"
D, STICKY = stat.S_IFDIR | 0o755, stat.S_IFDIR | 0o1777


# ---- the decision itself ------------------------------------------------------------------------
def test_judge_root_user_mixed_and_writable_folders():
    root_chain = [Folder("/", 0, D), Folder("/opt", 0, D), Folder("/opt/t", 0, D)]
    assert judge("/opt/t", root_chain).verdict is Trust.ROOT
    assert judge("/opt/t", root_chain).writable_by(0) and not judge("/opt/t", root_chain).writable_by(1000)
    user = [Folder("/", 0, D), Folder("/home", 0, D), Folder("/home/a", 1000, D), Folder("/home/a/t", 1000, D)]
    t = judge("/home/a/t", user)
    assert (t.verdict, t.uid, t.offender) == (Trust.OWNER, 1000, "/home/a")
    assert t.writable_by(1000) and not t.writable_by(0)
    # a sticky /tmp on the way is fine (others cannot rename what is not theirs in it); the tree itself sticky is not
    assert judge("/tmp/t", [Folder("/", 0, D), Folder("/tmp", 0, STICKY), Folder("/tmp/t", 0, D)]).verdict is Trust.ROOT
    assert judge("/tmp", [Folder("/", 0, D), Folder("/tmp", 0, STICKY)]).verdict is Trust.REFUSED
    mixed = judge("/home/a/t", user[:3] + [Folder("/home/a/t", 0, D)])
    assert mixed.verdict is Trust.REFUSED and mixed.offender == "/home/a/t" and "mixed owners" in mixed.line
    two = judge("/home/a/t", user[:3] + [Folder("/home/a/t", 1001, D)])
    assert two.verdict is Trust.REFUSED and not two.writable_by(1000) and not two.writable_by(1001)
    loose = judge("/opt/t", root_chain[:2] + [Folder("/opt/t", 0, stat.S_IFDIR | 0o777)])
    assert loose.verdict is Trust.REFUSED and "world-writable" in loose.line and not loose.writable_by(0)
    group = judge("/opt/t", [Folder("/", 0, D), Folder("/opt", 0, stat.S_IFDIR | 0o775), Folder("/opt/t", 0, D)])
    assert group.verdict is Trust.REFUSED and group.offender == "/opt" and "group-writable" in group.line


def test_a_users_state_folder_is_its_own_and_roots_is_unchanged():
    from rocmrevive.trees.trust import state_dir_of

    uid = attacker()[0]
    assert state_dir_of(0, {}) is None                      # root: /var/lib/rocmrevive, as before
    assert state_dir_of(uid, {}) == f"/home/{ATTACKER}/.local/state/rocmrevive"
    assert state_dir_of(uid, {"XDG_STATE_HOME": "/srv/s/"}) == "/srv/s/rocmrevive"
    assert state_dir_of(uid, {"XDG_STATE_HOME": "relative"}) == f"/home/{ATTACKER}/.local/state/rocmrevive"


# ---- machines in a folder the account can reach ------------------------------------------------
@pytest.fixture
def place():
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="rr-trees-"))
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def demo(base: Path) -> tuple[Path, list[str]]:
    """The dual-MI50 machine with root's mini rocBLAS 4.4 tree (gfx908 only) and a gfx906 source
    every account may read."""
    root = build("dual-mi50", base / "m")
    mr.build_tree(root, rocm_version="6.4.3", arches_present=("gfx908",), replace=True)
    deb = mr.build_source_deb(base / "librocblas4_6.4.4-4_amd64.deb")["path"]
    mf = write_manifest(base / "manifests", Path(deb))
    for p in (mf, mf / "m.toml", Path(deb)):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return root, ["--manifests", str(mf), "--from", str(deb), "--yes"]


def chown_tree(top: Path, who: tuple[int, int]) -> None:
    for d, dirs, files in os.walk(top):
        for x in [d, *(os.path.join(d, n) for n in dirs + files)]:
            os.chown(x, *who, follow_symlinks=False)


def user_venv(root: Path, who: tuple[int, int]) -> Path:
    """A PyTorch-style venv of the account (torch 2.8.0+rocm6.4: rocBLAS 4.4, gfx908 only),
    every folder and file its own; its home holds nothing else."""
    site = root / SITE.lstrip("/")
    lib = site / "torch/lib"
    lib.mkdir(parents=True)
    (root / VENV.lstrip("/") / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    (site / "torch/version.py").write_text("__version__ = '2.8.0+rocm6.4'\nhip: Optional[str] = '6.4.43482-0f2d60242'\n")
    rocm = root / "opt/rocm-6.4.3/lib"
    shutil.copytree(rocm / "rocblas/library", lib / "rocblas/library")
    shutil.copy(next(p for p in rocm.glob("librocblas.so.4.4.*")), lib / "librocblas.so")
    chown_tree(root / "home" / ATTACKER, who)
    return root / VENV.lstrip("/")


def install(root: Path, base: Path, args: list[str], *more: str, env: dict | None = None):
    return run_cli(["--root", str(root), "install", *args, "--cache", str(base / "cache"), *more], env=env)


def readable_site(base: Path) -> Path:
    """rocmrevive's libraries copied where every account may read them."""
    site = base / "site"
    if not site.exists():
        _site_for_nobody(site)
    return site


def install_as_root_readable(root: Path, base: Path, args: list[str], *more: str, env: dict | None = None):
    """``install`` as root from an interpreter and libraries every account may read, as an installed
    rocmrevive's are (this machine's own interpreter lives in /root, mode 0700): the child that
    installs a user's tree imports what it needs as that user."""
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{readable_site(base)}", **(env or {})}
    return run_cli(["--root", str(root), "install", *args, "--cache", str(base / "cache"), *more], env=env,
                   python=python)


def as_user(base: Path, who: tuple[int, int], command: str) -> subprocess.CompletedProcess:
    """Run a printed ``sudo -u rrattacker rocmrevive ...`` as the account (setpriv, no groups), with
    rocmrevive importable and a cache folder of its own."""
    words = shlex.split(command)
    assert words[:4] == ["sudo", "-u", ATTACKER, "rocmrevive"], command
    site = readable_site(base)
    cache = base / "user-cache"
    cache.mkdir(exist_ok=True)
    os.chown(cache, *who)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(site), "NO_COLOR": "1", "XDG_CACHE_HOME": str(cache),
           "HOME": f"/home/{ATTACKER}"}
    return subprocess.run(["setpriv", f"--reuid={who[0]}", f"--regid={who[1]}", "--clear-groups", sys.executable,
                           "-m", "rocmrevive.cli.main", "--json", *words[4:]], capture_output=True, text=True,
                          env=env, cwd="/", timeout=300)


# ---- trees of a --root machine that root may not write ------------------------------------------
@pytest.mark.parametrize("mine", ["/opt/rocm-6.4.3", ROCM_LIB])
def test_a_user_owned_rocm_install_is_left_alone_when_found_and_written_as_its_owner_when_named(place, mine):
    att = attacker()
    root, args = demo(place)
    chown_tree(root / mine.lstrip("/"), att)
    (root / f"home/{ATTACKER}").mkdir(parents=True)       # its home, for the journal of a run as it
    os.chown(root / f"home/{ATTACKER}", *att)
    before = tree_hash(root / "opt")
    rc, doc, err = install(root, place, args)
    msg = one_line_error(rc, doc, err, "PERMISSION")        # the only tree found, and not root's to write
    assert f"left alone {ROCM_LIB}: it belongs to {ATTACKER}" in msg and f"sudo -u {ATTACKER} rocmrevive" in msg
    assert tree_hash(root / "opt") == before
    rc, doc, err = install_as_root_readable(root, place, args, "--tree", "/opt/rocm-6.4.3")
    assert rc == 0, (err[-3000:], json.dumps(doc)[-3000:])
    (cp,) = doc["copies"]
    assert cp["status"] == "installed" and cp["as_user"] == ATTACKER
    new = sorted((root / ROCM_LIB.lstrip("/")).glob("*gfx906*"))
    assert new and all(p.stat().st_uid == att[0] for p in new)          # never a root-owned file in a user's tree
    p = as_user(place, att, f"sudo -u {ATTACKER} rocmrevive --root {root} rollback {cp['txid']}")
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    assert tree_hash(root / "opt") == before


@pytest.mark.parametrize("how", ["mode-0777-library", "group-writable-parent", "mixed-owners"])
def test_loose_folders_of_a_rocm_install_are_refused(place, how):
    att = attacker()
    root, args = demo(place)
    lib = root / ROCM_LIB.lstrip("/")
    if how == "mode-0777-library":
        os.chmod(lib, 0o777)
    elif how == "group-writable-parent":
        os.chmod(lib.parent.parent, 0o775)
    else:   # the install is the user's, the library folder inside it root's: neither may write it
        os.chown(root / "opt/rocm-6.4.3", *att)
    before = tree_hash(root / "opt")
    rc, doc, err = install(root, place, args, "--tree", "/opt/rocm-6.4.3")
    msg = one_line_error(rc, doc, err, "PERMISSION")
    want = {"mode-0777-library": f"{lib} is world-writable",
            "group-writable-parent": f"{lib.parent.parent} is group-writable",
            "mixed-owners": "mixed owners"}[how]
    assert want in msg, msg
    assert tree_hash(root / "opt") == before


# ---- a user's venv -----------------------------------------------------------------------------
def test_a_users_venv_is_left_alone_when_found_and_installed_as_its_owner_when_named(place):
    att = attacker()
    root, args = demo(place)
    venv = user_venv(root, att)
    before = tree_hash(venv)

    # both installs "in the same second" (a frozen clock): their ids still differ (issue 45: the
    # machine's and the user's state folders each start at 0001, and an idle machine once gave both
    # the same id, so root's journal was found under the user's)
    same_second = {"ROCMREVIVE_TEST_CLOCK": "1796601600"}
    # found on its own: reported with the command, not written; root's own tree is installed
    rc, doc, err = install(root, place, args, env=same_second)
    assert rc == 0, err[-2000:]
    (cp,) = doc["copies"]
    assert cp["library"] == ROCM_LIB and cp["status"] == "installed" and cp["trust"]["verdict"] == "root"
    (alone,) = doc["left_alone"]
    assert alone["path"] == LIB and alone["trust"]["verdict"] == "owner" and alone["trust"]["owner"] == ATTACKER
    assert any(w.startswith(f"left alone {LIB}: it belongs to {ATTACKER}") and alone["command"] in w
               for w in doc["warnings"])
    assert tree_hash(venv) == before

    # named, as root: written by a child that is the user (its files, its journal), never as root
    roots_txid = cp["txid"]
    rc, doc, err = install_as_root_readable(root, place, args, "--python", VENV, env=same_second)
    assert rc == 0, (err[-3000:], json.dumps(doc)[-3000:])
    (cp,) = [c for c in doc["copies"] if c["library"] == LIB]
    assert cp["txid"] != roots_txid and cp["txid"][:21] == "0001" + roots_txid[4:21]  # same sequence, same second
    assert cp["status"] == "installed" and cp["as_user"] == ATTACKER and cp["trust"]["verdict"] == "owner"
    new = sorted((root / LIB.lstrip("/")).glob("*gfx906*"))
    assert new and all(p.stat().st_uid == att[0] for p in new)
    state = root / f"home/{ATTACKER}/.local/state/rocmrevive"
    assert (state / "tx" / f"{cp['txid']}.jsonl").is_file() and (state / "tx").stat().st_uid == att[0]
    assert not list((root / "var/lib/rocmrevive/tx").glob(f"{cp['txid']}*"))
    p = as_user(place, att, f"sudo -u {ATTACKER} rocmrevive --root {root} rollback {cp['txid']}")
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    assert tree_hash(venv) == before

    # the printed command, run as the user: its tree installed, files its own, state in its home
    p = as_user(place, att, alone["command"])
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    doc = json.loads(p.stdout)
    (cp,) = doc["copies"]
    assert cp["library"] == LIB and cp["status"] == "installed" and cp["trust"]["verdict"] == "owner"
    assert doc["left_alone"] == [] and doc["libraries"] == []
    new = sorted((root / LIB.lstrip("/")).glob("*gfx906*"))
    assert new and all(p.stat().st_uid == att[0] for p in new)
    assert tree_hash(venv) != before

    # and the user's rollback is byte-exact
    p = as_user(place, att, f"sudo -u {ATTACKER} rocmrevive --root {root} rollback {cp['txid']}")
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    assert tree_hash(venv) == before


def test_mixed_owners_in_a_venv_are_refused(place):
    """A root-owned library folder inside the user's venv (what `sudo pip install` leaves): the user
    could move it, root could not be stopped from writing through it; refused for both."""
    att = attacker()
    root, args = demo(place)
    venv = user_venv(root, att)
    chown_tree(root / LIB.lstrip("/"), (0, 0))
    before = tree_hash(venv)
    rc, doc, err = install(root, place, args, "--python", VENV, "--tree", LIB)
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert "mixed owners" in msg and f"belongs to {ATTACKER}" in msg
    assert tree_hash(venv) == before


def test_rollback_refuses_a_tree_that_became_a_users(place):
    """Root installed into its tree; the tree is then given to a user: undoing as root could be
    redirected by that user, so it is refused, one line, nothing changed."""
    att = attacker()
    root, args = demo(place)
    rc, doc, err = install(root, place, args)
    assert rc == 0, err[-2000:]
    chown_tree(root / "opt/rocm-6.4.3", att)
    before = tree_hash(root / "opt")
    rc, doc, err = run_cli(["--root", str(root), "rollback"])
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert msg.startswith("refusing to undo transaction") and f"belongs to {ATTACKER} now" in msg
    assert tree_hash(root / "opt") == before


def test_patch_apply_on_a_users_venv_is_refused_as_root(place):
    from tests.test_patch import PID, venv_with
    from tests.test_patch import SITE as VLLM_SITE

    att = attacker()
    root = build("dual-mi50", place / "m")
    site = venv_with(root, "0.4.2")
    chown_tree(root / "home/alice", att)
    before = tree_hash(site)
    rc, doc, err = run_cli(["--root", str(root), "patch", "apply", PID, "--python", VLLM_SITE])
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert f"it belongs to {ATTACKER}" in msg and f"patch apply {PID} --python {VLLM_SITE}" in msg
    assert tree_hash(site) == before


def test_recover_refuses_a_pending_transaction_on_a_tree_that_became_a_users(place):
    """A root install killed mid-transaction, the tree then given to a user: neither `recover`
    nor the recovery `install` does first undoes it as root (exit 4, nothing changed)."""
    att = attacker()
    root, args = demo(place)
    rc, doc, err = install(root, place, args, env={"ROCMREVIVE_TEST_KILL_AT": "rename:4"})
    assert rc == -9, err[-2000:]
    chown_tree(root / "opt/rocm-6.4.3", att)
    before = tree_hash(root / "opt")
    for cmd in (["recover"], ["install", *args, "--cache", str(place / "cache")]):
        rc, doc, err = run_cli(["--root", str(root), *cmd])
        msg = one_line_error(rc, doc, err, "PERMISSION")
        assert msg.startswith("refusing to undo transaction") and f"belongs to {ATTACKER} now" in msg, msg
        assert tree_hash(root / "opt") == before


def test_detect_reads_a_users_venv_and_says_whose_it_is(place):
    att = attacker()
    root, _args = demo(place)
    user_venv(root, att)
    rc, doc, err = run_cli(["--root", str(root), "detect", "--python", VENV])
    assert rc == 0, err[-2000:]
    (env,) = [e for e in doc["python_envs"] if e["prefix"] == VENV]
    assert env["torch_version"] == "2.8.0+rocm6.4"
    assert env["trust"]["verdict"] == "owner" and env["trust"]["owner"] == ATTACKER


def test_survey_follows_a_link_on_the_way_and_judges_its_target(place):
    """A root-owned link to a user's folder makes the tree the user's (the target decides); a
    missing tail is decided on the deepest folder that exists (what root would create it in)."""
    from rocmrevive.trees.trust import decide

    att = attacker()
    (place / "home").mkdir()
    os.chown(place / "home", *att)
    (place / "root").mkdir()
    os.symlink(place / "home", place / "root/link")
    t = decide(place / "root/link/not/yet")
    assert t.verdict is Trust.OWNER and t.uid == att[0] and t.offender == str(place / "home")
    assert decide(place / "root/new/folder").verdict is Trust.ROOT


def test_a_run_as_the_owner_killed_mid_transaction_is_the_owners_to_recover(place):
    """The child that is the user is killed mid-transaction (as the user may kill it): root says so,
    exit 9, and names the user's recover; that recover undoes it byte for byte."""
    att = attacker()
    root, args = demo(place)
    venv = user_venv(root, att)
    before = tree_hash(venv)
    rc, doc, err = install_as_root_readable(root, place, args, "--python", VENV, "--tree", LIB,
                                            env={"ROCMREVIVE_TEST_KILL_AT": "rename:4"})
    msg = one_line_error(rc, doc, err, "INTERRUPTED")
    assert f"sudo -u {ATTACKER} rocmrevive --root {root} recover" in msg   # the command as typed, --root kept
    assert tree_hash(venv) != before                          # the child got as far as four renames
    assert not list((root / "var/lib/rocmrevive").glob("tx/*.jsonl"))   # nothing of it in root's state
    p = as_user(place, att, f"sudo -u {ATTACKER} rocmrevive --root {root} recover")
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    assert tree_hash(venv) == before


def _swap_forever(lib: Path, victim: Path) -> None:
    """As the user: swap the venv's library folder with a link to root's, over and over."""
    real = lib.with_name("library.real")
    while True:
        try:
            os.rename(lib, real)
            os.symlink(victim, lib)
            os.unlink(lib)
            os.rename(real, lib)
            time.sleep(0.001)   # the real folder in place most of the time: selection succeeds, the race is on the write
        except OSError:
            pass


def test_a_racing_user_cannot_steer_the_run_as_the_owner_into_roots_tree(place):
    """Finding 3's race, on a venv named as root: the user swaps its library folder for a link to
    root's own rocBLAS folder in a tight loop while the install runs. The run that writes the venv
    is the user, so the kernel keeps it out of root's tree: not a byte of root's tree changes, and
    root's state holds nothing of it, whatever the install's outcome."""
    att = attacker()
    root, args = demo(place)
    user_venv(root, att)
    victim = root / ROCM_LIB.lstrip("/")
    before = tree_hash(root / "opt")
    reached = 0
    for _ in range(40):          # until 5 runs got as far as the child (selection races too)
        if reached >= 5:
            break
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(att[1])
                os.setuid(att[0])
                _swap_forever(root / LIB.lstrip("/"), victim)
            finally:
                os._exit(0)
        try:
            rc, doc, err = install_as_root_readable(root, place, args, "--python", VENV, "--tree", LIB, "-v")
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        assert doc is not None and rc not in (1, -9), f"{rc}\n{err[-4000:]}"   # a documented code, never a traceback
        reached += any(c.get("as_user") for c in doc.get("copies") or []) or "as rrattacker" in str(doc["error"])
        assert tree_hash(root / "opt") == before
        assert not list((root / "var/lib/rocmrevive").glob("tx/*.jsonl"))
        lib = root / LIB.lstrip("/")
        if lib.is_symlink():
            lib.unlink()
        if (lib.with_name("library.real")).is_dir() and not lib.exists():
            os.rename(lib.with_name("library.real"), lib)
    assert reached >= 5, f"only {reached} runs got as far as the child that writes"
