"""An ordinary user attacking root: a real unprivileged account (created with useradd), a
forked child that becomes it (setgroups/setgid/setuid) to plant links, FIFOs and crafted files,
and a root-owned victim folder whose every byte must survive. Shared by tests/test_security_*.py;
``AS_NOBODY`` and ``folder_for_nobody`` also serve the tests that only need someone who is not root.

    att = attacker(); a = Arena.make(att)
    a.as_attacker(lambda: os.symlink(a.precious, a.home / "SHA256SUMS.tmp"))
    rc, doc, err = run_cli(["fetch", ...]); assert a.victim_intact()
"""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocmrevive.txn.fsutil import tree_hash

REPO = Path(__file__).resolve().parent.parent
ATTACKER = "rrattacker"
SHARED = {"ROCMREVIVE_TRUST_SHARED": "1"}


# the everyday unprivileged account, for the tests that only need "not root"
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@contextlib.contextmanager
def folder_for_nobody(prefix: str) -> Iterator[Path]:
    """A fresh folder in /var/tmp that nobody may enter (pytest's tmp_path sits below a folder only
    root may enter), removed afterwards; the test is skipped unless it runs as root with setpriv.

        with folder_for_nobody("rocmrevive-perm-") as where: ...
    """
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to become nobody")
    where = Path(tempfile.mkdtemp(dir="/var/tmp", prefix=prefix))
    try:
        os.chmod(where, 0o755)
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def attacker() -> tuple[int, int]:
    """(uid, gid) of the unprivileged test account, created on first use."""
    try:
        pw = pwd.getpwnam(ATTACKER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", ATTACKER],
                       check=True, capture_output=True)
        pw = pwd.getpwnam(ATTACKER)
    return pw.pw_uid, pw.pw_gid


@dataclass
class Arena:
    """A folder in /var/tmp (so the attacker can reach it) holding the attacker's home and the
    victim: root's own files outside every folder rocmrevive is told to write."""

    base: Path
    uid: int
    gid: int

    @classmethod
    def make(cls, who: tuple[int, int]) -> "Arena":
        base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="rr-security-"))
        os.chmod(base, 0o755)
        a = cls(base, *who)
        a.victim.mkdir()
        a.precious.write_bytes(b"root's own file\n")
        (a.victim / "keep").mkdir()
        (a.victim / "keep" / "x").write_bytes(b"root's own folder\n")
        a.home.mkdir()
        os.chown(a.home, a.uid, a.gid)
        a.before = a.victim_hash()
        return a

    @property
    def victim(self) -> Path:
        return self.base / "victim"

    @property
    def precious(self) -> Path:
        return self.victim / "precious"

    @property
    def home(self) -> Path:
        return self.base / "home"

    def victim_hash(self) -> str:
        return tree_hash(self.victim)

    def victim_intact(self) -> bool:
        """Nothing written, created, deleted, chmodded or truncated in the victim folder."""
        return self.victim_hash() == self.before

    def as_attacker(self, fn) -> None:
        """Run ``fn`` in a forked child that is the attacker (no root groups, no capabilities)."""
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(self.gid)
                os.setuid(self.uid)
                fn()
            except BaseException:  # noqa: BLE001 - the forked child must never return into pytest
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the attacker's setup failed"

    def cleanup(self) -> None:
        subprocess.run(["chattr", "-R", "-i", str(self.base)], capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)


def run_cli(args: list[str], *, env: dict | None = None, timeout: int = 180,
            python: str = sys.executable) -> tuple[int, dict | None, str]:
    """``rocmrevive --json ARGS`` as root in a subprocess (``python``: another interpreter):
    (exit, JSON, stderr)."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("ROCMREVIVE_TRUST_SHARED", None)
    e.update(env or {})
    p = subprocess.run([python, "-m", "rocmrevive.cli.main", "--json", *args], env=e,
                       capture_output=True, text=True, timeout=timeout)
    doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else None
    return p.returncode, doc, p.stderr


def one_line_error(rc: int, doc: dict | None, err: str, code: str) -> str:
    """The documented code, one line, no traceback; returns the line."""
    assert doc is not None, err[-2000:]
    assert doc["error"] is not None and doc["error"]["code"] == code, doc["error"]
    assert rc == doc["error"]["exit"] and rc in (2, 4, 6, 9), rc
    msg = doc["error"]["message"]
    assert "\n" not in msg and "\x1b" not in msg and "Traceback" not in err, msg
    return msg


def files_under(p: Path) -> dict[str, tuple]:
    """rel -> (type, uid, content or link target) of everything under ``p`` (links not followed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(p):
        for n in dirnames + filenames:
            q = Path(dirpath) / n
            st = q.lstat()
            rel = str(q.relative_to(p))
            if q.is_symlink():
                out[rel] = ("l", st.st_uid, os.readlink(q))
            elif q.is_file():
                out[rel] = ("f", st.st_uid, q.read_bytes())
            elif q.is_dir():
                out[rel] = ("d", st.st_uid, None)
            else:
                out[rel] = ("o", st.st_uid, None)
    return out
