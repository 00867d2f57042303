"""Locks: rocmrevive's own exclusive lock, and refusing to run while a package manager is busy.

The kernel drops an ``flock`` when its holder dies, so a stale lock file is harmless; the PID
written into it is for humans only (docs/transactions.md, "Locks"). Package managers' locks are detected,
never taken: apt and dpkg hold ``fcntl`` locks on ``/var/lib/dpkg/lock-frontend`` and ``lock``.

    with TxLock(root.path("/var/lib/rocmrevive/lock"), display="/var/lib/rocmrevive/lock"):
        ...  # apply, rollback, recover
    check_package_managers(root)  # RevError("LOCKED") while apt/dpkg/rpm holds its lock
"""
from __future__ import annotations

import fcntl
import os
import stat
import struct
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir
from rocmrevive.invocation import holder_line

PACKAGE_MANAGER_LOCKS = ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/rpm/.rpm.lock")


class TxLock:
    """Exclusive, non-blocking ``flock`` on ``path``; a second holder gets RevError("LOCKED")
    naming the PID that holds it. The file is opened through its folder's descriptor
    (``rocmrevive.fs``): never through a link, never a FIFO or device."""

    def __init__(self, path: Path, *, display: str | None = None):
        self.path = Path(path)
        self.display = display or str(path)
        self._fd = -1

    def acquire(self) -> "TxLock":
        try:
            with Dir.open(self.path.parent, create=True, what="state folder") as d:
                fd = d.open_rw(self.path.name)
        except RevError as exc:
            hint = "; run as root (or pass --state-dir)" if "Permission denied" in exc.message else ""
            raise RevError(exc.code, f"cannot create the lock {self.display}: {exc.message}{hint}",
                           details=exc.details) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = holder(self.path, fd)
            os.close(fd)
            raise RevError("LOCKED", f"another rocmrevive{who} holds {self.display}; nothing was changed; "
                                     "wait for it to finish and retry", details={"lock": self.display})
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder_line(), 0)
        except OSError:
            pass  # the PID is for humans only
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing drops the flock
            self._fd = -1

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def is_held(path: Path) -> str | None:
    """If someone holds a lock on ``path`` (flock or fcntl), a description of who; else None.
    Never creates the file and never keeps a lock."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a FIFO or device is nobody's lock (and must not be read)
        pid = _fcntl_holder(fd)
        if pid is not None:
            return f" (PID {pid})" if pid > 0 else ""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return holder(path, fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def holder(path: Path, fd: int) -> str:
    """" (PID n)" for whoever locks ``path``: from the kernel's /proc/locks, else the PID the
    holder wrote into the file; "" when unknown."""
    st = os.fstat(fd)
    pids = []
    try:
        with open("/proc/locks") as f:
            for line in f:
                parts = line.split()
                if "->" in parts:
                    continue
                try:
                    pid, devino = parts[4], parts[5]
                    major, minor, ino = devino.split(":")
                except (IndexError, ValueError):
                    continue
                if (int(ino) == st.st_ino and int(major, 16) == os.major(st.st_dev)
                        and int(minor, 16) == os.minor(st.st_dev) and pid.isdigit() and pid != "0"):
                    pids.append(int(pid))
    except OSError:
        pass
    pids = [p for p in pids if p != os.getpid()]
    if pids:
        return f" (PID {pids[0]})"
    try:
        first = os.pread(fd, 256, 0).decode("ascii", "replace").split()
        if first and first[0].isdigit():
            return f" (PID {first[0]})"
    except OSError:
        pass
    return ""


def _fcntl_holder(fd: int) -> int | None:
    """PID of a conflicting POSIX (fcntl) write lock on the whole file, -1 for an open-file-
    description lock, or None. F_GETLK only asks; it takes nothing."""
    fmt = "hhxxxxqqixxxx"  # struct flock on 64-bit Linux
    req = struct.pack(fmt, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    try:
        res = fcntl.fcntl(fd, fcntl.F_GETLK, req)
    except OSError:
        return None
    l_type, _, _, _, pid = struct.unpack(fmt, res)
    if l_type == fcntl.F_UNLCK:
        return None
    return pid


def check_package_managers(root) -> None:
    """RevError("LOCKED") while apt, dpkg or rpm holds its lock under ``root``: they may be
    rewriting /opt/rocm-* right now."""
    for mpath in PACKAGE_MANAGER_LOCKS:
        who = is_held(root.path(mpath))
        if who is not None:
            raise RevError("LOCKED", f"a package manager{who} holds {mpath}; nothing was changed; wait for "
                                     "apt/dpkg to finish and retry", details={"lock": mpath})
