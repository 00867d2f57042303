"""Who may write a tree: one decision per tree, made where the tree is selected and carried with it
(docs/security.md, "Trees").

rocmrevive runs as root, and a tree it writes (a rocBLAS library folder, a venv's
``torch/lib``, vLLM's package folder) may not be root's alone. Root writes a tree only when the
tree and every folder above it, from ``/`` (under ``--root DIR``: DIR's own parents too), are
root's and writable by no one else: the rule of sshd's StrictModes and sudo's secure path, and
the one ``fs.Dir`` applies to rocmrevive's own folders (a sticky folder such as /tmp may lie on
the way, as there: others cannot rename what root owns in it; the tree itself is never sticky).
A tree whose folders below root's belong to ONE other user is that user's: written only by
that user (a run as them: ``sudo -u alice rocmrevive ...``). Mixed owners, or a folder
writable by its group or by everyone: refused.

    t = decide("/opt/rocm-6.4.3/lib/rocblas/library")
    t.verdict is Trust.ROOT; t.writable_by(0)          # True
    decide("/home/alice/venv/.../torch/lib").owner    # "alice" (Trust.OWNER)
"""
from __future__ import annotations

import errno
import os
import pwd
import shlex
import stat
from dataclasses import dataclass
from typing import Mapping

from rocmrevive.errors import RevError
from rocmrevive.fs import DIR_FLAGS, walk_plain
from rocmrevive.invocation import shell_command
from rocmrevive.strenum import StrEnum

_MAX_LINKS = 40


class Trust(StrEnum):
    """Who may write a tree."""

    ROOT = "root"          # root's alone, up to /: root writes it
    OWNER = "owner"        # one other user's (root's folders above it): only that user writes it
    REFUSED = "refused"    # mixed owners, or a folder others can write: nobody does


@dataclass(frozen=True)
class Folder:
    """One folder (or link) on the way to a tree, as ``fstat``/``lstat`` saw it."""

    path: str
    uid: int
    mode: int              # st_mode
    link: bool = False


@dataclass(frozen=True)
class TreeTrust:
    """The decision for one tree: ``verdict``, its owner (``uid``, ``owner`` its name), the first
    folder that decided against it (``offender``) and one human ``line``."""

    path: str              # the real path decided on
    verdict: Trust
    uid: int
    owner: str
    offender: str | None
    line: str

    def writable_by(self, euid: int) -> bool:
        """Whether a run with this effective uid may write the tree."""
        return self.verdict is not Trust.REFUSED and self.uid == euid

    def to_json(self) -> dict:
        return {"verdict": self.verdict.value, "uid": self.uid, "owner": self.owner,
                "offender": self.offender, "line": self.line}


def owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def state_dir_of(uid: int, env: Mapping[str, str] | None = None) -> str | None:
    """The state folder (journals, backups, lock) of a run as ``uid`` other than root (None for
    root: /var/lib/rocmrevive): ``$XDG_STATE_HOME/rocmrevive``, else ``<home>/.local/state/rocmrevive``
    with the account's home from the password database. A machine path, as ``--state-dir`` is.

        state_dir_of(1000, {})   # "/home/alice/.local/state/rocmrevive"
    """
    env = os.environ if env is None else env
    if uid == 0:
        return None
    xdg = env.get("XDG_STATE_HOME", "")
    if xdg.startswith("/"):
        return xdg.rstrip("/") + "/rocmrevive"
    try:
        home = pwd.getpwuid(uid).pw_dir
    except KeyError:
        home = env.get("HOME", "")
    return home.rstrip("/") + "/.local/state/rocmrevive" if home.startswith("/") else None


def _writable_by_others(f: Folder, last: bool) -> bool:
    """Group- or world-writable; a sticky folder on the way is not (its entries stay their owners'),
    the tree itself always is (fs._Walk._check_trust's rule)."""
    if f.link:
        return False   # a link's mode means nothing; its folder decides who may replace it
    mode = stat.S_IMODE(f.mode)
    if not mode & 0o022:
        return False
    return last or not mode & stat.S_ISVTX


def judge(path: str, chain: list[Folder]) -> TreeTrust:
    """The decision on the folders from ``/`` to a tree, in walking order (a pure function).

        judge("/t", [Folder("/", 0, 0o40755), Folder("/t", 1000, 0o40755)]).verdict  # Trust.OWNER
    """
    owner: Folder | None = None       # the first folder not root's
    for i, f in enumerate(chain):
        last = i == len(chain) - 1
        if _writable_by_others(f, last):
            kind = "world-writable" if stat.S_IMODE(f.mode) & 0o002 else "group-writable"
            return _refused(path, f, f"{f.path} is {kind} (mode {stat.S_IMODE(f.mode):o}), so any user of "
                                     f"it could redirect or replace what is written in {path}; "
                                     f"make it writable by its owner alone (chmod go-w {shlex.quote(f.path)})")
        if f.uid == 0 and owner is None:
            continue
        if owner is None:
            owner = f
            continue
        if f.uid != owner.uid:
            return _refused(path, f, f"{owner.path} belongs to {owner_name(owner.uid)} but {f.path} below it "
                                     f"belongs to {owner_name(f.uid)}: mixed owners, so neither may write "
                                     f"{path} safely; give the whole tree to one owner (chown -R)")
    if owner is None:
        return TreeTrust(path, Trust.ROOT, 0, "root", None, f"{path} and every folder above it are root's")
    name = owner_name(owner.uid)
    return TreeTrust(path, Trust.OWNER, owner.uid, name, owner.path,
                     f"{path} belongs to {name} (uid {owner.uid}) from {owner.path} down")


def _refused(path: str, f: Folder, line: str) -> TreeTrust:
    return TreeTrust(path, Trust.REFUSED, f.uid, owner_name(f.uid), f.path, line)


def survey(path: str | os.PathLike) -> list[Folder]:
    """The folders from ``/`` to ``path`` (each opened ``O_NOFOLLOW`` relative to the one above and
    ``fstat``ed; a link on the way is recorded, then its target walked; the walk stops at the
    first missing component: what root would create there, the deepest folder decides)."""
    parts = [x for x in os.path.abspath(os.fspath(path)).split("/") if x]
    fd = os.open("/", DIR_FLAGS)
    chain = [_folder("/", os.fstat(fd))]
    cur: list[str] = []
    hops = 0
    try:
        while parts:
            name = parts.pop(0)
            if name in (".", ".."):
                if name == "..":
                    cur = cur[:-1]
                    os.close(fd)
                    fd = walk_plain(cur)
                continue
            shown = "/" + "/".join(cur + [name])
            try:
                lst = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                break
            if stat.S_ISLNK(lst.st_mode):
                hops += 1
                if hops > _MAX_LINKS:
                    raise RevError("USAGE", f"too many symbolic links on the way to {path}")
                chain.append(_folder(shown, lst, link=True))
                target = os.readlink(name, dir_fd=fd)
                if target.startswith("/"):
                    os.close(fd)
                    fd, cur = os.open("/", DIR_FLAGS), []
                parts = [x for x in target.split("/") if x] + parts
                continue
            if not stat.S_ISDIR(lst.st_mode):
                break
            try:
                nfd = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    raise RevError("PERMISSION", f"{shown} changed while it was looked at; retry") from None
                raise
            os.close(fd)
            fd = nfd
            cur.append(name)
            chain.append(_folder(shown, os.fstat(fd)))
    finally:
        os.close(fd)
    return chain


def _folder(path: str, st: os.stat_result, *, link: bool = False) -> Folder:
    return Folder(path, st.st_uid, st.st_mode, link)


def decide(path: str | os.PathLike) -> TreeTrust:
    """The decision for the tree at the real path ``path`` (the folder to be written)."""
    p = os.path.abspath(os.fspath(path))
    return judge(p, survey(p))


def as_user_command(trust: TreeTrust, args: list[str]) -> str:
    """The command that does the same as the tree's owner: ``sudo -u alice rocmrevive ARGS``."""
    return shell_command(args, user=trust.owner)


@dataclass(frozen=True)
class NotWritable:
    """Why this run may not write a tree (``reason``), what to do (``todo``) and, for one user's
    tree seen by root, the exact command to run as that user."""

    shown: str
    reason: str
    todo: str
    command: str | None
    details: dict

    def error(self) -> RevError:
        """The refusal of a tree the user named: one line, exit 4, nothing written."""
        return RevError("PERMISSION", f"refusing to write {self.shown}: {self.reason}; nothing was changed; "
                                      f"{self.todo}", details=self.details)

    def warning(self) -> str:
        """The line for a tree found on its own and left alone."""
        return f"left alone {self.shown}: {self.reason}; {self.todo}"


def not_writable(trust: TreeTrust, shown: str, args: list[str], euid: int | None = None) -> NotWritable | None:
    """None when a run with ``euid`` may write the tree; else why not and what to do (``args``: the
    command's arguments that name the tree, for the command its owner would run)."""
    euid = os.geteuid() if euid is None else euid
    if trust.writable_by(euid):
        return None
    details: dict = {"tree": shown, "trust": trust.to_json()}
    if trust.verdict is Trust.REFUSED:
        return NotWritable(shown, trust.line, "then run rocmrevive again", None, details)
    if trust.verdict is Trust.OWNER and euid == 0:
        cmd = as_user_command(trust, args)
        details["command"] = cmd
        return NotWritable(shown, f"it belongs to {trust.owner} (uid {trust.uid}), who could redirect what root "
                                  f"writes there", f"run it as {trust.owner}: {cmd}", cmd, details)
    return NotWritable(shown, f"it belongs to {trust.owner}, not to {owner_name(euid)}",
                       f"run rocmrevive as {trust.owner} for it", None, details)


def refusal(trust: TreeTrust, shown: str, args: list[str], euid: int | None = None) -> RevError | None:
    """RevError("PERMISSION") with one line when this run may not write the tree, else None."""
    why = not_writable(trust, shown, args, euid)
    return None if why is None else why.error()


def undo_refusal(txid: str, shown: str, trust: TreeTrust, euid: int | None = None) -> RevError | None:
    """RevError("PERMISSION") when this run may not undo transaction ``txid`` in the tree ``shown``
    (its decision now: a tree that has since become another user's, or writable by others, could
    redirect the undo), else None."""
    euid = os.geteuid() if euid is None else euid
    if trust.writable_by(euid):
        return None
    reason = trust.line if trust.verdict is Trust.REFUSED else f"it belongs to {trust.owner} now"
    me = owner_name(euid)
    return RevError("PERMISSION", f"refusing to undo transaction {txid} in {shown} as {me}: {reason}, so the "
                                  f"undo could be redirected; nothing was changed; make the tree {me}'s alone "
                                  f"(chown -R, chmod go-w) and run it again, or let its owner reinstall what "
                                  f"it held", details={"txid": txid, "tree": shown, "trust": trust.to_json()})


def refuse_untrusted_undo(root, results) -> None:
    """Before an undo (``rollback``, ``recover``, the recovery a command runs first): each
    transaction's tree must still be one this run may write; ``results`` are the dry run's, which
    name the tree. Raises the first ``undo_refusal``."""
    for res in results:
        if res.tree and res.actions:
            err = undo_refusal(res.txid, res.tree, decide(root.resolve(res.tree)))
            if err is not None:
                raise err
