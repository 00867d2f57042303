"""The folders of a tree, opened by descriptor: every write, rename and delete of a transaction
(apply, undo, recover) happens relative to them, never by a path a link could redirect.

An unprivileged user who can write a folder on the way to a tree file (a venv's ``torch/lib``)
can swap it for a link at any moment (``renameat2(RENAME_EXCHANGE)``). So each folder is opened
once, component by component from the root with ``O_NOFOLLOW``, its device/inode recorded as
surveyed (and checked against the one the journal recorded, for an undo in a later process);
then names are created, renamed and removed with ``openat``/``renameat``/``unlinkat``/``linkat``
relative to that descriptor. A descriptor stays bound to the folder it opened, whatever the path
leads to afterwards. Temporaries get random names, created ``O_EXCL`` (docs/transactions.md,
"Descriptors").

    with Folders(root) as f:
        fd = f.fd(real.parent)                                  # opened O_NOFOLLOW from the root
        tmp = f.create_temp(real.parent, real.name)             # ".<name>.<12 hex>.rocmrevive-new"
        os.rename(tmp.name, real.name, src_dir_fd=fd, dst_dir_fd=fd)
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.fs import DIR_FLAGS, walk_plain
from rocmrevive.txn.journal import temp_name

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

Identity = tuple[int, int]  # (st_dev, st_ino) of a folder


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino)


class Folders:
    """Folders under one root, each opened once (``O_NOFOLLOW`` per component from the root) and
    kept open. A folder found as a link is refused with RevError("DRIFT"), never followed.
    ``expected``: machine path -> (dev, ino) a journal recorded; a folder found with another
    inode (or below one) is *replaced*: it may be read (an upgrade that put the tree back leaves
    an undo nothing to do), but every write in it is refused (``writable``). The device number is
    recorded but not compared: btrfs subvolumes, device-mapper and overlay mounts may renumber it
    at the next boot, where inode numbers stay."""

    def __init__(self, root, expected: dict[str, Identity] | None = None):
        self.root = root
        self.expected = dict(expected or {})
        self.base = Path(root.base)
        self._fds: dict[Path, int] = {}
        self.ids: dict[Path, Identity] = {}
        self.replaced: dict[Path, str] = {}  # folder -> why it is not the one the journal recorded
        # the root itself is the caller's (root's) choice: reached by its resolved path
        self._fds[self.base] = _open_plain(Path(os.path.realpath(self.base)))
        self.ids[self.base] = identity(os.fstat(self._fds[self.base]))

    def fd(self, real: Path) -> int:
        """The descriptor of the folder ``real`` (under the root), opened on first use and checked
        against its surveyed identity on every later use."""
        real = Path(real)
        fd = self._fds.get(real)
        if fd is not None:
            self._check(real, fd)
            return fd
        if real == real.parent or self.base not in real.parents:
            raise RevError("VERIFY_FAILED", f"{real} is not a folder under the root {self.base}; refusing")
        pfd = self.fd(real.parent)
        try:
            fd = os.open(real.name, DIR_FLAGS, dir_fd=pfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise self._refusal(real, "is now a symbolic link or not a folder") from None
            raise
        st = os.fstat(fd)
        want = self.expected.get(self.root.machine_path(real))
        if real.parent in self.replaced:
            self.replaced[real] = self.replaced[real.parent]
        elif want is not None and st.st_ino != want[1]:
            self.replaced[real] = (f"is another folder than the one the transaction wrote (inode {st.st_ino}, "
                                   f"recorded {want[1]})")
        self._fds[real] = fd
        self.ids[real] = identity(st)
        return fd

    def _check(self, real: Path, fd: int) -> None:
        """The folder behind ``fd`` is still the surveyed one and still in the file system (a
        removed folder has no links left)."""
        st = os.fstat(fd)
        if identity(st) != self.ids[real] or st.st_nlink == 0:
            raise self._refusal(real, "was removed or replaced while rocmrevive was working in it")

    def _refusal(self, real: Path, why: str) -> RevError:
        return RevError("DRIFT", f"the folder {self.root.machine_path(real)} {why}; rocmrevive writes only "
                                 "through the folders it surveyed and refuses this step, even with --force: "
                                 "inspect it by hand", details={"folder": self.root.machine_path(real)})

    def writable(self, real: Path) -> int:
        """The descriptor of the folder ``real`` for a write: refused (RevError("DRIFT")) when it is
        not the folder the journal recorded."""
        fd = self.fd(real)
        why = self.replaced.get(Path(real))
        if why is not None:
            raise self._refusal(Path(real), why)
        return fd

    def exists(self, real: Path) -> bool:
        """Whether the folder ``real`` can be opened now (False when it, or one above, is missing)."""
        try:
            self.fd(real)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def identity_of(self, real: Path) -> Identity:
        self.fd(real)
        return self.ids[Path(real)]

    def lstat(self, real: Path) -> os.stat_result | None:
        """``lstat`` of the entry ``real`` through its folder's descriptor; None when absent."""
        try:
            return os.stat(real.name, dir_fd=self.fd(real.parent), follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def mkdir(self, real: Path, mode: int, uid: int, gid: int) -> Identity:
        """Create the folder ``real`` (its parent opened already), owned and moded as asked; its
        identity. Refuses a name that exists (FileExistsError): a folder someone else planted
        is never adopted."""
        pfd = self.writable(real.parent)
        os.mkdir(real.name, 0o700, dir_fd=pfd)
        fd = self.fd(real)
        if (uid, gid) != (os.geteuid(), os.getegid()):
            os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)
        return self.ids[Path(real)]

    def rmdir(self, real: Path) -> None:
        """Remove the (empty) folder ``real`` through its parent's descriptor and forget it."""
        os.rmdir(real.name, dir_fd=self.writable(real.parent))
        fd = self._fds.pop(Path(real), None)
        self.ids.pop(Path(real), None)
        if fd is not None:
            os.close(fd)

    def create_temp(self, folder: Path, name: str) -> tuple[Path, int]:
        """A new temporary for ``name`` in ``folder`` (``O_EXCL`` under a random name); its path and
        an open descriptor. FileExistsError only when the random name was taken."""
        tmp = folder / temp_name(name)
        return tmp, self.open_temp(tmp)

    def open_temp(self, tmp: Path) -> int:
        """Create the temporary ``tmp`` (named already, e.g. by a journal record) ``O_EXCL``."""
        return os.open(tmp.name, _TEMP_FLAGS, 0o600, dir_fd=self.writable(tmp.parent))

    def open_file(self, real: Path) -> int:
        """A read descriptor on the regular file ``real`` (never a link, FIFO or device)."""
        fd = os.open(real.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd(real.parent))
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file", str(real))
        os.set_blocking(fd, True)
        return fd

    def unlink(self, real: Path, *, missing_ok: bool = True) -> None:
        try:
            os.unlink(real.name, dir_fd=self.writable(real.parent))
        except FileNotFoundError:
            if not missing_ok:
                raise

    def rename(self, src: Path, dst: Path) -> None:
        """``renameat(2)`` of ``src`` over ``dst`` (both in surveyed folders)."""
        os.rename(src.name, dst.name, src_dir_fd=self.writable(src.parent), dst_dir_fd=self.writable(dst.parent))

    def fsync(self, real: Path) -> None:
        try:
            os.fsync(self.fd(real))
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EROFS):
                raise

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> "Folders":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except OSError:  # os.close's only error; a collected object has nobody to tell
            pass


def _open_plain(p: Path) -> int:
    """The root's own folder, walked from ``/`` without following a link (``p`` is resolved)."""
    return walk_plain(p.parts[1:])
