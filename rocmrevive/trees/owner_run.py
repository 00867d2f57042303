"""Running something as a tree's owner, never as root, and never waiting on it without a deadline
(docs/security.md, "Executing user code", "Waiting on user processes").

Root never executes or imports anything another user can write: a program (a venv's interpreter,
a llama.cpp build in a home folder) whose file, or any folder on its way or its environment's
``site-packages``, belongs to one user is run as that user (their uid, primary group and
supplementary groups, so ``/dev/kfd`` and ``/dev/dri`` open as they would for them); mixed owners
or a folder others can write: refused with one line. Who runs it is decided by reading the
file system only (``trees.trust``): nothing of the user's runs to find out.

    who = runner_for(["/home/alice/venv/bin/python"], ["/home/alice/venv/lib/python3.12/site-packages"])
    who.account.name         # "alice" (None when it is root's own: run as this process)
    p = spawn([...], who.account, env)     # exec'd as alice: setgroups, setgid, setuid in the child
"""
from __future__ import annotations

import os
import pwd
import shlex
import stat
import subprocess
from dataclasses import dataclass
from typing import Any

from rocmrevive.errors import RevError
from rocmrevive.trees.trust import TreeTrust, Trust, decide, owner_name

# seconds a run as a tree's owner may take before root kills it (ROCMREVIVE_OWNER_DEADLINE overrides)
OWNER_DEADLINE_S = 1800.0
_ENV_DROP = ("HOME", "USER", "LOGNAME", "MAIL", "PWD", "OLDPWD", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME",
             "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "SUDO_COMMAND", "SUDO_USER", "SUDO_UID",
             "SUDO_GID", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE")


def owner_deadline(env: dict | None = None) -> float:
    """The deadline of a run as a tree's owner, in seconds."""
    raw = (os.environ if env is None else env).get("ROCMREVIVE_OWNER_DEADLINE", "")
    try:
        v = float(raw)
    except ValueError:
        return OWNER_DEADLINE_S
    return v if v > 0 else OWNER_DEADLINE_S


@dataclass(frozen=True)
class Account:
    """Who a child becomes: uid, primary gid, supplementary groups, name and home."""

    uid: int
    gid: int
    groups: tuple[int, ...]
    name: str
    home: str

    @classmethod
    def of(cls, uid: int) -> "Account":
        """The account ``uid`` from the password and group databases (RevError when it has none)."""
        try:
            pw = pwd.getpwuid(uid)
        except KeyError:
            raise RevError("PERMISSION", f"uid {uid} owns it but has no account here; run it as that uid "
                                         f"yourself, or give it to an account") from None
        try:
            groups = tuple(os.getgrouplist(pw.pw_name, pw.pw_gid))
        except OSError:
            groups = (pw.pw_gid,)
        return cls(uid, pw.pw_gid, groups, pw.pw_name, pw.pw_dir)

    def drop(self) -> None:
        """Become this account for good (in a forked child): groups, then gid, then uid."""
        os.setgroups(list(self.groups))
        os.setresgid(self.gid, self.gid, self.gid)
        os.setresuid(self.uid, self.uid, self.uid)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (root's environment) with root's own home, name and session folders replaced by
        the account's: nothing the child writes lands in root's home."""
        out = {k: v for k, v in (os.environ if base is None else base).items() if k not in _ENV_DROP}
        out.update(HOME=self.home, USER=self.name, LOGNAME=self.name)
        return out


@dataclass(frozen=True)
class Runner:
    """Who runs a program: ``account`` None = this process's own user (the program is root's,
    or this run is not root's); ``why`` says which file or folder decided."""

    account: Account | None
    why: str


def _file_owner(path: str) -> tuple[int, str | None]:
    """(uid that may replace the file itself, why) from its own lstat: its owner, or a problem
    when others may write it."""
    st = os.lstat(path)
    mode = stat.S_IMODE(st.st_mode)
    if not stat.S_ISLNK(st.st_mode) and mode & 0o022:
        return st.st_uid, (f"{path} is writable by {'everyone' if mode & 0o002 else 'its group'} "
                           f"(mode {mode:o}), so any user could change what runs")
    return st.st_uid, None


def runner_for(programs: list[str], trees: list[str] | tuple[str, ...] = (), *, euid: int | None = None) -> Runner:
    """Who must run ``programs`` (each as named and as its links lead) given the folders it
    imports from (``trees``: a venv's site-packages): decided on the file system alone.
    RevError("PERMISSION") with one line for mixed owners or a folder others can write."""
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        return Runner(None, "not run as root: runs as this user")
    decisions: list[TreeTrust] = []
    problems: list[str] = []
    uids: dict[int, str] = {}
    for prog in programs:
        p = os.path.abspath(prog)
        real = os.path.realpath(p)
        decisions.append(decide(os.path.dirname(p)))
        decisions.append(decide(os.path.dirname(real)))
        try:
            uid, problem = _file_owner(real)
        except OSError as exc:
            raise RevError("USAGE", f"cannot read {shlex.quote(p)}: {exc.strerror or exc}") from None
        if problem:
            problems.append(problem)
        if uid != 0:
            uids.setdefault(uid, real)
    for t in trees:
        decisions.append(decide(t))
    for d in decisions:
        if d.verdict is Trust.REFUSED:
            problems.append(d.line)
        elif d.verdict is Trust.OWNER:
            uids.setdefault(d.uid, d.offender or d.path)
    what = shlex.quote(os.path.abspath(programs[0])) if programs else "it"
    if problems:
        raise RevError("PERMISSION", f"refusing to run {what} as root: {problems[0]}")
    if len(uids) > 1:
        names = " and ".join(f"{owner_name(u)} ({w})" for u, w in sorted(uids.items()))
        raise RevError("PERMISSION", f"refusing to run {what}: it belongs to {names}, mixed owners; "
                                     f"give it to one owner (chown -R)")
    if not uids:
        return Runner(None, f"{what} and every folder it runs from are root's")
    (uid, where), = uids.items()
    acct = Account.of(uid)
    return Runner(acct, f"{where} belongs to {acct.name}: run as {acct.name}, never as root")


def popen_as(argv: list[str], account: Account | None, env: dict[str, str] | None = None,
             **kw: Any) -> subprocess.Popen:
    """``subprocess.Popen`` of ``argv`` as ``account`` (None: as this process): the drop happens
    in the child between fork and exec (``extra_groups``, ``group``, ``user``), so nothing of
    Python runs there; the child starts in a session of its own (its group can be killed) in
    ``/`` with the account's environment."""
    kw.setdefault("start_new_session", True)
    if account is None:
        return subprocess.Popen(argv, env=env, **kw)
    kw.setdefault("cwd", "/")
    return subprocess.Popen(argv, env=account.env(env), user=account.uid, group=account.gid,
                            extra_groups=list(account.groups), **kw)
