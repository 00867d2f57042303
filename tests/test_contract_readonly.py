"""The user contract off the happy path (issue 16), driven from the outside: read-only commands
never finish or undo an interrupted transaction (they report it and exit 9), runs that change
nothing never create or rewrite the lock, any number of concurrent runs end 0, 7 or 9, and
`--from` of another package leaves a copy to its normal source.

The machine is the demo's (demo/machines/dual-mi50, copied), with demo/minirocblas.py's real
rocBLAS 4.4 tree lacking gfx906 and a real .deb carrying it."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.security_support import AS_NOBODY, folder_for_nobody
from tests.test_install import tree_hash, write_manifest

sys.path.insert(0, str(REPO / "demo"))
import minirocblas as mr  # noqa: E402

LIB = "opt/rocm-6.4.3/lib/rocblas/library"
LOCK = "var/lib/rocmrevive/lock"


def env(**extra) -> dict:
    e = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    e.pop("ROCMREVIVE_TEST_KILL_AT", None)
    e.update(extra)
    return e


def rr(root: Path, *args, extra_env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), *args],
                          capture_output=True, text=True, env=env(**(extra_env or {})), **kw)


def doc_of(r: subprocess.CompletedProcess) -> dict:
    assert "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A real librocblas4 .deb with the gfx906 files and a manifest pinned to it."""
    d = tmp_path_factory.mktemp("source")
    deb = Path(mr.build_source_deb(d / "librocblas4_6.4.4-4_amd64.deb")["path"])
    return deb, write_manifest(d / "manifests", deb)


def demo_machine(where: Path) -> Path:
    shutil.copytree(REPO / "demo/machines/dual-mi50", where, symlinks=True)
    mr.build_tree(where, rocm_version="6.4.3", arches_present=("gfx908",), replace=True)
    return where


def src_args(source, cache: Path) -> list[str]:
    deb, mf = source
    return ["--manifests", str(mf), "--from", str(deb), "--cache", str(cache)]


def killed_install(root: Path, source, cache: Path, step: str = "rename:4") -> str:
    """An install SIGKILLed mid-transaction: returns the interrupted transaction's id."""
    r = rr(root, "install", "--yes", *src_args(source, cache), extra_env={"ROCMREVIVE_TEST_KILL_AT": step})
    assert r.returncode == -9, r.stderr
    (journal,) = (root / "var/lib/rocmrevive/tx").glob("*.jsonl")
    return journal.stem


@pytest.fixture
def pending(tmp_path, source):
    root = demo_machine(tmp_path / "m")
    txid = killed_install(root, source, tmp_path / "cache")
    return root, txid


# ---- read-only means read-only ------------------------------------------------------------

READ_ONLY = [("detect",), ("doctor", "--user", "alice"), ("verify",), ("audit",), ("status",),
             ("rccl", "audit")]


def test_read_only_commands_report_the_interrupted_transaction_and_change_nothing(pending):
    root, txid = pending
    before = tree_hash(root)
    for args in READ_ONLY:
        r = rr(root, "--json", *args)
        doc = doc_of(r)
        assert r.returncode == 9, (args, r.stdout[-1500:], r.stderr[-800:])
        assert doc["error"]["code"] == "INTERRUPTED" and txid in doc["error"]["message"], args
        assert "rocmrevive recover" in doc["error"]["message"]
        assert doc["pending"] == [txid] and doc["changed"] is False, args
        assert tree_hash(root) == before, f"{args} changed the machine"
        # the same in human output: the report, then the line naming the transaction
        r = rr(root, *args)
        assert r.returncode == 9 and txid in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert tree_hash(root) == before, f"{args} changed the machine"
    # detect still reports the machine while it says so
    doc = doc_of(rr(root, "--json", "detect"))
    assert len(doc["gpus"]) == 2 and doc["rocblas_copies"]
    # recover is the one that finishes it
    r = rr(root, "--json", "recover")
    assert r.returncode == 0 and doc_of(r)["recovered"][0]["txid"] == txid
    assert rr(root, "--json", "detect").returncode == 0


def test_commands_that_would_write_refuse_while_a_transaction_is_open(pending, tmp_path):
    root, txid = pending
    before = tree_hash(root)
    for args in (("smoke", "--cpu-test-mode", "--torch"), ("fetch", "--cache", str(tmp_path / "c2")),
                 ("rccl", "install", "--check")):
        r = rr(root, "--json", *args)
        doc = doc_of(r)
        assert r.returncode == 9 and doc["error"]["code"] == "INTERRUPTED" and txid in doc["error"]["message"], \
            (args, r.stdout[-800:])
        assert tree_hash(root) == before and not (tmp_path / "c2").exists(), args


def test_detect_as_an_ordinary_user_still_works_while_a_transaction_is_open(source):
    with folder_for_nobody("rocmrevive-contract-") as where:
        site = _site_for_nobody(where / "site")
        root = demo_machine(where / "m")
        txid = killed_install(root, source, where / "cache")
        os.chmod(root / "var/lib/rocmrevive/tx", 0o700)   # journals unreadable for nobody
        before = tree_hash(root)
        p = _detect_as_nobody(root, site)
        doc = doc_of(p)
        assert p.returncode == 0 and len(doc["gpus"]) == 2, p.stdout[-1000:]
        assert any("cannot read rocmrevive's journals" in w for w in doc["warnings"]), doc["warnings"]
        assert tree_hash(root) == before
        os.chmod(root / "var/lib/rocmrevive/tx", 0o755)   # the folder readable, the 0600 journal not: said so
        (journal,) = (root / "var/lib/rocmrevive/tx").glob("*.jsonl")
        p = _detect_as_nobody(root, site)
        doc = doc_of(p)
        assert p.returncode == 0 and not doc.get("pending") and len(doc["gpus"]) == 2, p.stdout[-1000:]
        assert any(f"cannot read the journal /{journal.relative_to(root)} as user nobody" in w
                   for w in doc["warnings"]), doc["warnings"]
        os.chmod(journal, 0o644)                           # readable: detect names the transaction
        before = tree_hash(root)
        p = _detect_as_nobody(root, site)
        doc = doc_of(p)
        assert p.returncode == 9 and doc["pending"] == [txid] and len(doc["gpus"]) == 2
        assert tree_hash(root) == before


def _detect_as_nobody(root: Path, site: Path) -> subprocess.CompletedProcess:
    """`rocmrevive --json detect` as nobody, importing rocmrevive from ``site``."""
    return subprocess.run(AS_NOBODY + [sys.executable, "-m", "rocmrevive.cli.main", "--json", "--root", str(root),
                                       "detect"], capture_output=True, text=True, env=env(PYTHONPATH=str(site)), cwd="/")


def _site_for_nobody(site: Path) -> Path:
    """rocmrevive and the libraries detect imports, copied where nobody can read them (this
    interpreter's own site-packages may sit in a folder only root may enter)."""
    import importlib

    site.mkdir()
    for name in ("rocmrevive", "click", "rich", "markdown_it", "mdurl", "pygments", "packaging", "elftools",
                 "msgpack", "zstandard", "typing_extensions"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        f = Path(mod.__file__)
        if f.name == "__init__.py":
            shutil.copytree(f.parent, site / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(f, site / f.name)
    for d, _, files in os.walk(site):
        os.chmod(d, 0o755)
        for x in files:
            os.chmod(os.path.join(d, x), 0o644)
    return site


# ---- nothing changes unless the JSON says changed: true -------------------------------------

def lock_state(root: Path):
    p = root / LOCK
    if not p.exists():
        return None
    st = p.stat()
    return p.read_bytes(), st.st_mtime_ns, st.st_ino


def test_runs_that_change_nothing_never_create_or_rewrite_the_lock(tmp_path, source):
    root = demo_machine(tmp_path / "m")
    args = src_args(source, tmp_path / "cache")
    for cmd in (("detect",), ("status",), ("verify",), ("rollback",), ("recover",), ("install", "--check", *args)):
        r = rr(root, "--json", *cmd)
        assert r.returncode in (0, 6, 20), (cmd, r.stdout[-500:])
        assert doc_of(r)["changed"] is False and lock_state(root) is None, f"{cmd} created the lock"

    # apt holds its lock: install refuses and changes nothing, not even rocmrevive's own lock
    dpkg = root / "var/lib/dpkg"
    dpkg.mkdir(parents=True, exist_ok=True)
    (dpkg / "lock-frontend").touch()
    before = tree_hash(root)
    with open(dpkg / "lock-frontend", "a") as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        r = rr(root, "--json", "install", "--yes", *args)
    assert r.returncode == 7 and "/var/lib/dpkg/lock-frontend" in doc_of(r)["error"]["message"], r.stdout[-800:]
    assert lock_state(root) is None and tree_hash(root) == before

    r = rr(root, "--json", "install", "--yes", *args)
    assert r.returncode == 0 and doc_of(r)["changed"] is True
    held = lock_state(root)
    assert held is not None                                   # the install that changed files took it
    for cmd in (("install", "--yes", *args), ("recover",), ("status",), ("detect",), ("verify",)):
        r = rr(root, "--json", *cmd)
        assert r.returncode == 0 and doc_of(r)["changed"] is False, (cmd, r.stdout[-500:])
        assert lock_state(root) == held, f"{cmd} rewrote the lock"
    r = rr(root, "--json", "rollback")
    assert r.returncode == 0 and doc_of(r)["changed"] is True
    held = lock_state(root)
    r = rr(root, "--json", "rollback", "0001")               # already rolled back: a no-op
    assert r.returncode == 0 and doc_of(r)["changed"] is False and lock_state(root) == held


# ---- one run at a time ------------------------------------------------------------------------

def test_eight_installs_and_eight_readers_at_once(tmp_path, source):
    """8 installs (each adopting --from into one shared, empty cache and extracting it) and 8
    read-only commands on one machine folder: every process ends with a documented status, none
    with a traceback, and the tree is whole: wholly patched, every file intact."""
    root = demo_machine(tmp_path / "m")
    cache = tmp_path / "cache"
    before = tree_hash(root / "opt")
    base = [sys.executable, "-m", "rocmrevive.cli.main", "--json", "--root", str(root)]
    installs = [base + ["install", "--yes", *src_args(source, cache)] for _ in range(8)]
    readers = [base + list(a) for a in (("detect",), ("status",), ("verify",), ("doctor", "--user", "alice"),
                                        ("audit",), ("detect",), ("status",), ("verify",))]
    procs = [(cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env()))
             for pair in zip(installs, readers) for cmd in pair]
    results = [(cmd, p.wait(timeout=600), *p.communicate()) for cmd, p in procs]
    allowed = {"install": {0, 7}, "detect": {0, 7, 9}, "status": {0, 7, 9}, "verify": {0, 6, 7, 9},
               "doctor": {0, 11, 7, 9}, "audit": {0, 7, 9}}
    codes = []
    for cmd, rc, out, err in results:
        name = cmd[cmd.index("--root") + 2]
        assert rc in allowed[name], (cmd[-6:], rc, out[-600:], err[-600:])
        assert "Traceback" not in err and "internal error" not in out + err, (cmd[-6:], err[-1500:])
        doc = json.loads(out)                                  # one JSON document, always
        assert doc["command"] == name
        if name == "install":
            codes.append(rc)
            if rc == 7:
                assert doc["error"]["code"] == "LOCKED" and doc["changed"] is False
    assert 0 in codes, codes
    lib = root / LIB
    assert len([p for p in lib.iterdir() if "gfx906" in p.name]) == 9
    assert not [p for p in lib.iterdir() if p.name.startswith(".")]       # no stray temporaries
    assert tree_hash(root / "opt") != before
    st = doc_of(rr(root, "--json", "status"))
    assert st["error"] is None and st["pending"] == [] and st["trees"][0]["state"] == "intact"
    assert rr(root, "--json", "verify").returncode == 0
    # a second wave on the patched machine: nothing to do for any of them
    again = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
             for c in installs]
    for p in again:
        rc = p.wait(timeout=600)
        out, err = p.communicate()
        assert rc in (0, 7) and "Traceback" not in err, (rc, err[-800:])
        assert json.loads(out)["changed"] is False


# ---- --from of another package -----------------------------------------------------------------

def test_from_another_package_leaves_the_copy_to_its_normal_source(tmp_path, source):
    root = demo_machine(tmp_path / "m")
    deb, mf = source
    cache = tmp_path / "cache"
    other = tmp_path / "librocsparse1_6.4.3-3_amd64.deb"           # not the rocBLAS package
    other.write_bytes(b"!<arch>\n" + os.urandom(2048))
    mf2 = tmp_path / "manifests2"                                   # a run whose manifests pin it too
    shutil.copytree(mf, mf2)
    (write_manifest(tmp_path / "m3", other, manifest_id="zz-other-test") / "m.toml").rename(mf2 / "zz.toml")
    # no cached copy and no mirror answering (a closed port): the message says both things
    r = rr(root, "--json", "install", "--check", "--manifests", str(mf2), "--from", str(other), "--cache", str(cache),
           "--no-libraries", "--mirror", "http://127.0.0.1:9/debian")
    msg = doc_of(r)["error"]["message"]
    assert r.returncode == 5 and f"--from {other} is not librocblas4" in msg and "127.0.0.1:9" in msg, msg
    # once the rocBLAS package is in the cache, the other file does not stand in its way (fetch fills
    # the cache: install --check leaves it as it was)
    assert rr(root, "--json", "fetch", "--manifests", str(mf), "--from", str(deb), "--cache", str(cache)).returncode == 0
    r = rr(root, "--json", "install", "--check", "--manifests", str(mf2), "--from", str(other), "--cache", str(cache),
           "--no-libraries")
    (copy,) = doc_of(r)["copies"]
    assert r.returncode == 20 and copy["status"] == "planned" and copy["artifact"]["origin"] == "cache", copy
