"""A user's tree, installed as that user: a forked child that drops to the tree's owner
(``setgroups([])``, ``setresgid``, ``setresuid``, as apt downloads as ``_apt``) walks the copy with
its journal, backups and cache in that user's own folders, and hands its outcome back as JSON
(docs/security.md, "Trees"). The kernel then allows the child exactly what the user could do
anyway: a link the user plants can only lead it where the user could write.

    out = install_as_owner(run, trust, lambda mine: install_copy(mine, copy), CopyOutcome(copy.path, ...))
"""
from __future__ import annotations

import json
import os
import pwd
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Callable

from rocmrevive.errors import EXIT_CODES, RevError
from rocmrevive.fs import read_fd, write_all
from rocmrevive.install.report import CopyOutcome
from rocmrevive.install.run import InstallRun
from rocmrevive.trees.trust import TreeTrust, owner_name, state_dir_of
from rocmrevive.txn.result import as_rev_error

MAX_OUTCOME = 64 << 20        # a CopyOutcome with its diff: ~2 MB for 2,000 files


def owner_folders(root, uid: int) -> tuple[str, Path]:
    """(state folder as a machine path, cache folder as a real path) of the account ``uid``: the
    state folder its own runs use (``trees.trust.state_dir_of``, never from root's environment) and
    ``<home>/.cache/rocmrevive``, read under the root as every machine path is."""
    state = state_dir_of(uid, {})
    if state is None:
        raise RevError("PERMISSION", f"uid {uid} owns the tree but has no account with a home folder here; "
                                     f"run rocmrevive as that user, or give the tree to one")
    home = state[:-len("/.local/state/rocmrevive")]
    if not root.path(home).is_dir():
        raise RevError("PERMISSION", f"{owner_name(uid)} owns the tree but has no home folder {home} under "
                                     f"{root.base} for the journal of a run as them; create it (theirs, mode 0700) "
                                     f"or run rocmrevive as {owner_name(uid)} with --state-dir")
    return state, root.path(f"{home}/.cache/rocmrevive")


def install_as_owner(run: InstallRun, trust: TreeTrust, step: Callable[[InstallRun], CopyOutcome],
                     base: CopyOutcome) -> CopyOutcome:
    """Run ``step(the run as the owner)`` in a child that is the tree's owner and return its
    outcome, as ``base`` (the copy as the parent knows it) with what the child reported
    (``as_user`` names the owner). A child that fails without an outcome: RevError."""
    state_dir, cache_dir = owner_folders(run.root, trust.uid)
    # no progress callback: a drawing thread of the parent does not exist in the child
    mine = replace(run, state_dir=state_dir, cache_dir=cache_dir, progress=None)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(r)
        _child(w, trust.uid, lambda: step(mine), run.root)
    os.close(w)
    try:
        data = read_fd(r, max_size=MAX_OUTCOME, what="the owner's outcome")
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    if not data:  # killed (by its owner, who may signal it, or the OOM killer) before it answered
        raise RevError("INTERRUPTED", f"the run as {trust.owner} (the tree's owner) ended without an outcome; "
                                      f"a transaction it began is in {state_dir}: run `sudo -u {trust.owner} "
                                      f"rocmrevive recover` to finish or undo it")
    doc = _outcome(data)
    if "copy" not in doc:
        code = str(doc.get("code"))
        code = code if code in EXIT_CODES else "INTERNAL"
        raise RevError(code, f"as {trust.owner} (the tree's owner): {str(doc['error'])[:2000]}")
    out = replace(base.from_child(doc["copy"]), as_user=trust.owner)
    if not out.txid:
        return out
    where = "" if run.root.is_host else f"--root {run.root.base} "
    return replace(out, reason=out.reason + (f"; as {trust.owner}, journal in {state_dir}: undo with "
                                             f"`sudo -u {trust.owner} rocmrevive {where}rollback {out.txid}`"))


def _child(w: int, uid: int, work, root=None) -> None:
    """Drop to ``uid`` for good, run ``work``, write its outcome (a CopyOutcome) as JSON, exit."""
    code = 0
    try:
        pw = pwd.getpwuid(uid)
        for fd in [int(x) for x in os.listdir("/proc/self/fd")]:
            if fd > 2 and fd != w:   # nothing root opened (a lock, a cache folder) stays in the user's hands
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.setgroups([])
        os.setresgid(pw.pw_gid, pw.pw_gid, pw.pw_gid)
        os.setresuid(uid, uid, uid)
        rec = work()
        out = {"copy": rec.to_json()}
    except BaseException as exc:  # noqa: BLE001 - the forked child never returns: the parent says what went wrong
        err = as_rev_error(exc, root)   # a folder the owner moved meanwhile: one line, as for root's runs
        out = ({"error": err.message, "code": err.code} if err is not None else
               {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-4000:]})
        code = 0 if err is not None else 1
    try:
        write_all(w, json.dumps(out, default=str).encode())
    finally:
        os._exit(code)


def _outcome(data: bytes) -> dict:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        doc = None
    if not isinstance(doc, dict) or not ("copy" in doc or "error" in doc):
        raise RevError("INTERNAL", "the run as the tree's owner gave no outcome")
    return doc
