"""A user's tree, installed as that user: a forked child that drops to the tree's owner
(the owner's groups, ``setresgid``, ``setresuid``: trees.owner_run.Account.drop) walks the copy with
its journal, backups and cache in that user's own folders, and hands its outcome back as JSON
(docs/security.md, "Trees"). The kernel then allows the child exactly what the user could do
anyway: a link the user plants can only lead it where the user could write.

Root never waits on it for ever: the child has a deadline (trees.owner_run.owner_deadline); a child
still running then (stopped by its owner, say) is killed with its process group, and root exits
INTERRUPTED (9) with one line naming the owner's `recover` command: the transaction the child began
is in the owner's journal, recoverable by them. Everything the child may import is imported before
the fork (``preload``): after the drop it may not be able to read rocmrevive's own interpreter (a
pyenv under /root, mode 0700).

    out = install_as_owner(run, trust, lambda mine: install_copy(mine, copy), CopyOutcome(copy.path, ...))
"""
from __future__ import annotations

import importlib
import json
import os
import pkgutil
import select
import signal
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Callable

from rocmrevive.errors import EXIT_CODES, RevError
from rocmrevive.fs import write_all
from rocmrevive.install.report import CopyOutcome
from rocmrevive.install.run import InstallRun
from rocmrevive.invocation import shell_command
from rocmrevive.trees.owner_run import Account, owner_deadline
from rocmrevive.trees.trust import TreeTrust, owner_name, state_dir_of
from rocmrevive.txn.result import as_rev_error

MAX_OUTCOME = 64 << 20        # a CopyOutcome with its diff: ~2 MB for 2,000 files
# imported before the fork: what an install may import on demand (the standard library's lazy
# imports: compression, codecs, pickle under copy, tracebacks) and every package below the CLI
_PRELOAD = ("pickle", "copy", "copyreg", "tarfile", "zipfile", "gzip", "bz2", "lzma", "zlib", "hashlib",
            "tempfile", "shutil", "traceback", "linecache", "tokenize", "difflib", "uuid", "random",
            "struct", "subprocess", "selectors", "threading", "queue", "concurrent.futures",
            "concurrent.futures.thread", "encodings.idna", "encodings.latin_1", "encodings.ascii",
            "encodings.utf_8", "encodings.unicode_escape", "encodings.raw_unicode_escape", "unicodedata",
            "stringprep", "tomllib", "requests", "urllib3", "http.client", "ssl", "email.parser")
_PRELOAD_PACKAGES = ("install", "txn", "sources", "tensile", "codeobj", "trees", "hostlib", "hardware")
_preloaded = False


def preload() -> None:
    """Import, in this process, everything a forked child may import after it dropped to an
    account that cannot read this interpreter's files (finding 8 of issue 35)."""
    global _preloaded
    if _preloaded:
        return
    names = list(_PRELOAD)
    for pkg in _PRELOAD_PACKAGES:
        mod = importlib.import_module(f"rocmrevive.{pkg}")
        names += [m.name for m in pkgutil.walk_packages(mod.__path__, f"rocmrevive.{pkg}.")]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:   # an optional one this machine lacks: the child lacks it as well
            pass
    _preloaded = True


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
    account = Account.of(trust.uid)
    # no progress callback: a drawing thread of the parent does not exist in the child; its log
    # lines come back with its outcome and are shown by the parent (the child never writes to
    # root's terminal, and needs nothing of the CLI's)
    lines: list[str] = []
    mine = replace(run, state_dir=state_dir, cache_dir=cache_dir, progress=None,
                   log=lambda m: lines.append(str(m)[:2000]) if len(lines) < 1000 else None)
    preload()
    deadline = owner_deadline()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(r)
        _child(w, account, lambda: step(mine), lines, run.root)
    os.close(w)
    until = time.monotonic() + deadline
    try:
        data, late = _read_until(r, until)
    finally:
        os.close(r)
        killed = _reap(pid, until)
    base_root = None if run.root.is_host else run.root.base
    recover = shell_command(["recover"], base_root, user=trust.owner)
    if late or (killed and not data):
        raise RevError("INTERRUPTED", f"the run as {trust.owner} (the tree's owner) did not finish in {deadline:g} s "
                                      f"and was killed; a transaction it began is in {state_dir}: run "
                                      f"`{recover}` to finish or undo it")
    if not data:  # killed (by its owner, who may signal it, or the OOM killer) before it answered
        raise RevError("INTERRUPTED", f"the run as {trust.owner} (the tree's owner) ended without an outcome; "
                                      f"a transaction it began is in {state_dir}: run `{recover}` to finish or undo it")
    doc = _outcome(data)
    log = doc.get("log")
    for line in (log if isinstance(log, list) else [])[:1000]:
        run.log(str(line)[:2000])
    if "copy" not in doc:
        code = str(doc.get("code"))
        code = code if code in EXIT_CODES else "INTERNAL"
        raise RevError(code, f"as {trust.owner} (the tree's owner): {str(doc['error'])[:2000]}")
    out = replace(base.from_child(doc["copy"]), as_user=trust.owner)
    if not out.txid:
        return out
    undo = shell_command(["rollback", out.txid], base_root, user=trust.owner)
    return replace(out, reason=out.reason + f"; as {trust.owner}, journal in {state_dir}: undo with `{undo}`")


def _read_until(fd: int, until: float) -> tuple[bytes, bool]:
    """The child's outcome from the pipe ``fd`` until it closes, at most MAX_OUTCOME bytes:
    (bytes, whether the monotonic time ``until`` came first)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), False
        size += len(chunk)
        if size > MAX_OUTCOME:
            raise RevError("INTERNAL", "the run as the tree's owner gave an outcome larger than "
                                       f"{MAX_OUTCOME >> 20} MiB")
        chunks.append(chunk)


def _reap(pid: int, until: float) -> bool:
    """Wait for the child until ``until`` (monotonic), then kill its process group and it;
    True when it had to be killed. Root never waits on a process its owner may stop."""
    while time.monotonic() < until:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
        time.sleep(0.05)
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except OSError:
            pass
    os.waitpid(pid, 0)
    return True


def _child(w: int, account: Account, work, lines: list[str], root=None) -> None:
    """Drop to ``account`` for good, run ``work``, write its outcome (a CopyOutcome) as JSON, exit."""
    code = 0
    try:
        for fd in [int(x) for x in os.listdir("/proc/self/fd")]:
            if fd > 2 and fd != w:   # nothing root opened (a lock, a cache folder) stays in the user's hands
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.setsid()                  # a group of its own: root kills it whole at the deadline
        account.drop()
        rec = work()
        out = {"copy": rec.to_json()}
    except BaseException as exc:  # noqa: BLE001 - the forked child never returns: the parent says what went wrong
        err = as_rev_error(exc, root)   # a folder the owner moved meanwhile: one line, as for root's runs
        out = ({"error": err.message, "code": err.code} if err is not None else
               {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-4000:]})
        code = 0 if err is not None else 1
    out["log"] = lines
    try:
        write_all(w, json.dumps(out, default=str).encode())
    finally:
        os._exit(code)


def _outcome(data: bytes) -> dict:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):   # the owner may forge any bytes
        doc = None
    if not isinstance(doc, dict) or not ("copy" in doc or "error" in doc):
        raise RevError("INTERNAL", "the run as the tree's owner gave no outcome")
    return doc
