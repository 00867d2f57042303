"""Package-owned files that a transaction replaces: find the owner, and keep dpkg from silently
overwriting the graft (``dpkg-divert``), so that a package upgrade lands beside it and shows up.

A host-library graft (docs/grafts.md) replaces a file that a package usually owns (AMD's
``rocsparse`` package owns ``/opt/rocm-6.4.3/lib/librocsparse.so.1.0.60403``). Without care the
next upgrade or reinstall of that package writes its own file over the graft. With a diversion,
dpkg writes the package's file to ``<file>.rocmrevive-orig`` instead:

    owner = owner_of(root, "/opt/rocm-6.4.3/lib/librocsparse.so.1.0.60403")   # Ownership(package="rocsparse")
    if can_divert(root, owner):
        plan: create <file>.rocmrevive-orig (the package's bytes) + replace <file> (the graft),
        meta={"divert": {"wanted": True, "path": file, ...}}
        apply_plan(...)          # the transaction itself runs follow(): diverted before the renames
    rollback(root); recover_pending(root)    # follow() again: the diversion goes with the graft

The file work stays in the transaction (journal, backups, byte-identical rollback): what
``dpkg-divert --rename`` would do by moving the file is done by the transaction as a copy, and
``dpkg-divert`` is only asked to record the diversion (``--no-rename``). The state on disk is the
one ``--rename`` leaves, so a user can undo it with dpkg's own tools (``rm <file>; dpkg-divert
--package rocmrevive --rename --remove <file>``). The dpkg database is never written directly.
A root other than ``/`` is handled with ``dpkg-divert --root``, as for a chroot.

Which transactions want a diversion is in their journal (``meta.divert``); ``reconcile`` makes
dpkg's list agree with the journals (a committed graft: diverted; a rolled-back one: not; one still
open: left as it is until recovery decides). Every transaction that wants one runs ``follow``
inside ``txn``: an apply after its intents are journaled and before the first rename, an undo
(rollback, failed apply, recovery) after its files are restored and before ``rolled_back``, a
roll-forward before its ``commit``; so a kill at any moment leaves a journal whose recovery puts
the diversion where the files are.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from rocmrevive.errors import RevError
from rocmrevive.txn.fsutil import sha256_file
from rocmrevive.txn.journal import TxState
from rocmrevive.txn.state import JournalEntry, StateDir

DIVERT_SUFFIX = ".rocmrevive-orig"
PACKAGE = "rocmrevive"
ADMINDIR = "/var/lib/dpkg"


@dataclass
class Ownership:
    """Who owns a file according to dpkg under a root."""

    path: str                       # machine path of the file
    dpkg: bool                      # the root is a dpkg system (has /var/lib/dpkg/info)
    package: str | None = None      # the package whose file list names it
    diverted_by: str | None = None  # an existing diversion of this file: its package ("" = --local)
    divert_to: str | None = None

    @property
    def divert_path(self) -> str:
        return self.path + DIVERT_SUFFIX

    def to_json(self) -> dict:
        return {"path": self.path, "dpkg": self.dpkg, "package": self.package,
                "diverted_by": self.diverted_by, "divert_to": self.divert_to}


def read_diversions(root) -> list[tuple[str, str, str]]:
    """dpkg's diversions under the root: (file, divert-to, package; ":" means --local)."""
    p = root.path(f"{ADMINDIR}/diversions")
    try:
        lines = p.read_text(errors="replace").split("\n")
    except OSError:
        return []
    out = []
    for i in range(0, len(lines) - 2, 3):
        if lines[i]:
            out.append((lines[i], lines[i + 1], lines[i + 2]))
    return out


def owner_of(root, machine_path: str, *, aliases: tuple[str, ...] = ()) -> Ownership:
    """The dpkg package whose ``info/<pkg>.list`` names ``machine_path`` (or one of its
    ``aliases``, e.g. the path through a symbolic link), and any diversion of it."""
    info = root.path(f"{ADMINDIR}/info")
    own = Ownership(machine_path, info.is_dir())
    names = [machine_path, *[a for a in aliases if a != machine_path]]
    for n in list(names):  # merged /usr: a package may list /lib/... for a file in /usr/lib/...
        for a, b in (("/usr/lib/", "/lib/"), ("/lib/", "/usr/lib/")):
            if n.startswith(a) and b + n[len(a):] not in names:
                names.append(b + n[len(a):])
    for f, to, pkg in read_diversions(root):
        if f in names:
            own.diverted_by, own.divert_to = ("" if pkg == ":" else pkg), to
            break
    if not own.dpkg:
        return own
    needles = [("\n" + n + "\n").encode() for n in names]
    try:
        entries = sorted(e for e in os.listdir(info) if e.endswith(".list"))
    except OSError:
        return own
    for e in entries:
        try:
            with open(info / e, "rb") as fh:
                data = b"\n" + fh.read()
        except OSError:
            continue
        if not data.endswith(b"\n"):
            data += b"\n"
        if any(n in data for n in needles):
            own.package = e[:-len(".list")].split(":", 1)[0]  # "pkg:amd64.list" on multi-arch
            break
    return own


def divert_command(root) -> list[str] | None:
    """``dpkg-divert`` for this root (``--root`` for a folder), or None when there is none."""
    exe = shutil.which("dpkg-divert")
    if exe is None:
        return None
    return [exe] if root.is_host else [exe, "--root", str(root.base)]


def can_divert(root, own: Ownership) -> tuple[bool, str]:
    """(whether to divert, why not). Only a package-owned file that nobody diverts yet."""
    if not own.package:
        return False, "no package owns it"
    if own.diverted_by not in (None, PACKAGE):
        who = own.diverted_by or "a local diversion"
        raise RevError("VERIFY_FAILED", f"{own.path} is already diverted by {who} (to {own.divert_to}); "
                                        f"rocmrevive does not stack diversions; nothing was changed")
    if divert_command(root) is None:
        return False, (f"owned by package {own.package}, but dpkg-divert is not installed: an upgrade of "
                       f"{own.package} will overwrite the graft (`rocmrevive status` shows it)")
    return True, ""


def _run(root, args: list[str], what: str) -> None:
    cmd = divert_command(root)
    if cmd is None:
        raise RevError("PERMISSION", f"dpkg-divert is not installed; cannot {what}")
    p = subprocess.run(cmd + args, capture_output=True, text=True)
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        raise RevError("PERMISSION", f"dpkg-divert could not {what}: {msg[-1] if msg else 'exit ' + str(p.returncode)}")


def add_diversion(root, machine_path: str) -> None:
    """Record that every package's copy of ``machine_path`` goes to ``<path>.rocmrevive-orig``
    (idempotent; moves nothing)."""
    _run(root, ["--quiet", "--package", PACKAGE, "--no-rename", "--divert", machine_path + DIVERT_SUFFIX,
                "--add", machine_path], f"divert {machine_path}")


def remove_diversion(root, machine_path: str) -> None:
    """Remove rocmrevive's diversion of ``machine_path`` (idempotent; moves nothing)."""
    _run(root, ["--quiet", "--package", PACKAGE, "--no-rename", "--divert", machine_path + DIVERT_SUFFIX,
                "--remove", machine_path], f"remove the diversion of {machine_path}")


def is_diverted(root, machine_path: str) -> bool:
    return any(f == machine_path and pkg == PACKAGE for f, _to, pkg in read_diversions(root))


def _wanted(st: StateDir, decided: tuple[str, TxState, str | None] | None = None) -> dict[str, tuple[bool, JournalEntry]]:
    """path -> (diversion wanted, the transaction that decides it) from the journals: wanted while a
    committed graft of the path wants it, unwanted once each was rolled back (the latest says so);
    a path whose graft is still open (interrupted, in progress) and none committed is left out,
    for its recovery to decide. ``decided``: (txid, state, diverted path) of a transaction this
    process is about to bring to that state (its journal is not read).

    What each journal wants and its state come from ``final-journals`` (``StateDir.scan``): only
    journals not listed there are read, so the check costs the same on a long history."""
    committed: dict[str, JournalEntry] = {}
    rolled_back: dict[str, JournalEntry] = {}
    still_open: set[str] = set()
    given = {decided[0]: (decided[1], decided[2])} if decided is not None else None
    for e in st.scan(given=given):
        if not e.divert:
            continue
        if e.state == TxState.COMMITTED:
            committed[e.divert] = e  # later transactions override earlier ones
        elif e.state == TxState.ROLLED_BACK:
            rolled_back[e.divert] = e
        else:
            still_open.add(e.divert)
    out = {path: (False, e) for path, e in rolled_back.items() if path not in still_open}
    out.update({path: (True, e) for path, e in committed.items()})
    return out


def reconcile(root, state_dir: str, *, decided: tuple[str, TxState, str | None] | None = None) -> list[str]:
    """Make dpkg's diversions agree with the journals: add the diversion of each committed graft
    that lacks it, remove rocmrevive's diversion of each graft that was rolled back. Returns one
    line per change; cheap when there is nothing to do. ``decided``: (txid, TxState.COMMITTED or
    ROLLED_BACK, the path it diverts), a transaction about to record that end (``follow``)."""
    done: list[str] = []
    wanted = _wanted(StateDir(root, state_dir), decided)
    if not wanted:
        return done
    have = {f for f, _to, pkg in read_diversions(root) if pkg == PACKAGE}
    for path, (want, tx) in sorted(wanted.items()):
        if want and path not in have:
            add_diversion(root, path)
            done.append(f"diverted {path} (package copies now go to {path}{DIVERT_SUFFIX}; transaction {tx.txid})")
        elif not want and path in have:
            remove_diversion(root, path)
            done.append(f"removed the diversion of {path} (transaction {tx.txid} was rolled back)")
    return done


def follow(root, state_dir: str, meta: dict | None, txid: str, state: TxState, *, strict: bool) -> list[str]:
    """The hook of every transaction, run by ``txn`` itself: when transaction ``txid`` grafts a
    package-owned file (``meta.divert``), make dpkg's diversions what they must be once it is
    ``state`` (committed, rolled_back). Returns lines for the result's warnings. ``strict`` (an
    apply): a dpkg-divert failure raises, so the apply is undone; otherwise (an undo or a
    recovery, which must finish) it becomes a warning, and ``status`` shows what is left.

        apply:  follow(root, st.machine, plan.meta, txid, TxState.COMMITTED, strict=True)
        undo:   follow(root, st.machine, tx.begin["meta"], tx.txid, TxState.ROLLED_BACK, strict=False)
    """
    d = (meta or {}).get("divert") or {}
    if not d.get("wanted"):
        return []
    try:
        lines = reconcile(root, state_dir, decided=(txid, state, d.get("path") if isinstance(d.get("path"), str) else None))
    except RevError as exc:
        if strict:
            raise
        return [f"dpkg-divert: {exc.message}; `rocmrevive status` shows the diversion left over"]
    return [f"dpkg-divert: {line}" for line in lines]


def findings(root, state_dir: str) -> list[dict]:
    """For ``status``: grafts whose protection is not what the journal says, and package files
    that an upgrade wrote beside a graft. Each: {txid, path, problem, hint}."""
    out: list[dict] = []
    have = {f for f, _to, pkg in read_diversions(root) if pkg == PACKAGE}
    st = StateDir(root, state_dir)
    for path, (want, e) in sorted(_wanted(st).items()):
        if want and path not in have:
            out.append({"txid": e.txid, "path": path, "problem": "not diverted",
                        "hint": "a package upgrade would overwrite the graft; run `rocmrevive install` "
                                "(it restores the diversion)"})
        elif not want and path in have:
            out.append({"txid": e.txid, "path": path, "problem": "stale diversion",
                        "hint": f"rolled back, but dpkg still diverts it to {path}{DIVERT_SUFFIX}; run "
                                f"`dpkg-divert --package {PACKAGE} --no-rename --remove {path}` (the next "
                                f"`rocmrevive install` does it too)"})
        if want:
            d = ((st.load_entry(e).begin or {}).get("meta") or {}).get("divert") or {}
            orig = d.get("orig_sha256")
            real = root.path(path + DIVERT_SUFFIX)
            if orig and real.is_file():
                if sha256_file(real)[0] != orig:
                    pkg = d.get("package") or "its package"
                    out.append({"txid": e.txid, "path": path + DIVERT_SUFFIX,
                                "problem": "package upgraded",
                                "hint": f"{pkg} was upgraded or reinstalled while the graft was in place: its new "
                                        f"file is {path}{DIVERT_SUFFIX}; the graft in {path} was kept. Run "
                                        f"`rocmrevive install --check` (it re-checks the graft against the new "
                                        f"tree) or `rocmrevive rollback --force {e.txid}` and reinstall {pkg}"})
    return out
