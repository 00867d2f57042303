"""The one way rocmrevive opens what it writes, renames or deletes (docs/security.md).

rocmrevive runs as root, and the folders it writes may not be root's alone: a shared cache, an
export folder, a ``--root`` image. So nothing is written by a path a link could redirect. A
folder is opened once, component by component from ``/`` without following a link another user
could have planted, its owner and mode are checked, and everything below is then reached
*relative to that descriptor* (``openat`` with ``O_NOFOLLOW``; ``O_EXCL`` for temporaries;
``fstat`` after every open; FIFOs, sockets and devices are never opened).

A folder is *trusted* when it is owned by the effective user (or root) and neither group- nor
world-writable. Writing into any other folder is refused with one line (what, which folder,
how to fix) unless the user opts in with ``ROCMREVIVE_TRUST_SHARED=1``; the ``Dir`` is then
``shared`` and its callers trust nothing read from it (the cache re-hashes every artifact
against its pin and never reuses an index the pin does not vouch for).

    with Dir.open("/var/cache/rocmrevive", create=True, what="cache") as cache:
        with cache.sub("sha256", create=True) as d:
            d.write_atomic("SHA256SUMS", b"...")          # temp (O_EXCL) + fsync + rename + fsync dir
            fd = d.open_read("0561...", max_size=1 << 30)  # a regular file, never a link or a FIFO
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Mapping, Sequence

from rocmrevive.errors import RevError
from rocmrevive.hashing import Reader, hash_fd

SHARED_ENV = "ROCMREVIVE_TRUST_SHARED"
CHUNK = 1 << 20
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC   # a folder, never through a link
_MAX_LINKS = 40


def shared_allowed(env: Mapping[str, str] | None = None) -> bool:
    """Whether the user opted in to folders other users can write (``ROCMREVIVE_TRUST_SHARED=1``)."""
    return (os.environ if env is None else env).get(SHARED_ENV, "").strip().lower() in ("1", "yes", "true", "on")


def _ours(uid: int) -> bool:
    return uid in (0, os.geteuid())


def folder_problem(st: os.stat_result) -> str | None:
    """Why a folder with this ``stat`` may not be written as if it were ours, or None."""
    if not _ours(st.st_uid):
        return f"owned by uid {st.st_uid}"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o002:
        return "world-writable"
    if mode & 0o020:
        return "group-writable"
    return None


def _refuse(what: str, path, why: str) -> RevError:
    return RevError("PERMISSION", f"refusing to write the {what} {path}: it is {why}, so another user could "
                                  f"redirect or replace what rocmrevive writes there; make it owned by "
                                  f"uid {os.geteuid()} and not group/world-writable (chown/chmod go-w), or set "
                                  f"{SHARED_ENV}=1 to use it anyway (then everything read from it is re-verified)",
                    details={"folder": str(path), "problem": why})


def _oserror(what: str, path, exc: OSError) -> RevError:
    if exc.errno == errno.EROFS:
        return RevError("PERMISSION", f"the {what} {path} is on a read-only file system; give one on a writable "
                                      f"file system")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return RevError("PERMISSION", f"no space left for the {what} {path}; free some space or give another folder")
    return RevError("PERMISSION", f"cannot open the {what} {path}: {exc.strerror or exc}")


class Dir:
    """An opened folder; every write, rename and delete below it goes through its descriptor.
    ``shared``: a folder other users can write, used only because the user opted in."""

    def __init__(self, fd: int, path: str | os.PathLike, *, shared: bool = False, what: str = "folder"):
        self.fd = fd
        self.path = Path(path)
        self.shared = shared
        self.what = what

    def __repr__(self) -> str:
        return f"Dir({str(self.path)!r}{', shared' if self.shared else ''})"

    # opening -------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, *, create: bool = False, mode: int = 0o755, what: str = "folder",
             allow_shared: bool | None = None) -> "Dir":
        """Open the folder ``path`` for writing (creating missing components with ``create``).

        From ``/`` down, each component is opened ``O_NOFOLLOW``; a symbolic link is followed only
        when it and the folder holding it are ours (root's or the effective user's, the folder not
        writable by others), so a link another user planted never redirects the walk. Every
        folder on the way must be trusted (a sticky folder such as /tmp may hold ours), the last one
        strictly; otherwise RevError("PERMISSION") unless shared folders are allowed."""
        allow = shared_allowed() if allow_shared is None else allow_shared
        p = os.path.abspath(os.fspath(path))
        walk = _Walk(p, create=create, mode=mode, what=what, allow=allow)
        try:
            walk.run()
        except BaseException:
            os.close(walk.fd)
            raise
        return cls(walk.fd, p, shared=walk.shared, what=what)

    def sub(self, name: str, *, create: bool = False, mode: int = 0o755) -> "Dir":
        """A folder inside this one (one component; never a link), created with ``create``. Inherits
        ``shared``; a subfolder of a trusted folder must itself be ours and not writable by others."""
        _check_name(name)
        if create:
            try:
                os.mkdir(name, mode, dir_fd=self.fd)
            except FileExistsError:
                pass
            except OSError as exc:
                raise _oserror(self.what, self.path / name, exc) from None
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise RevError("PERMISSION", f"{self.path / name} is not a folder (a link or a file where the "
                                             f"{self.what} needs one); remove it") from None
            raise _oserror(self.what, self.path / name, exc) from None
        shared = self.shared
        problem = folder_problem(os.fstat(fd))
        if problem:
            if not (shared or shared_allowed()):
                os.close(fd)
                raise _refuse(self.what, self.path / name, problem)
            shared = True
        return Dir(fd, self.path / name, shared=shared, what=self.what)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "Dir":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except OSError:  # os.close's only error; a collected object has nobody to tell
            pass

    # looking -------------------------------------------------------------------------------
    def lstat(self, name: str) -> os.stat_result | None:
        """``lstat`` of an entry (never followed), or None when absent."""
        _check_name(name)
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def is_file(self, name: str) -> bool:
        st = self.lstat(name)
        return st is not None and stat.S_ISREG(st.st_mode)

    def listdir(self) -> list[str]:
        return sorted(os.listdir(self.fd))

    # reading -------------------------------------------------------------------------------
    def open_read(self, name: str, *, max_size: int | None = None) -> int:
        """A descriptor on the regular file ``name`` (not a link, FIFO or device: opened
        ``O_NONBLOCK`` so a FIFO cannot hang us, then checked with ``fstat``)."""
        _check_name(name)
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        try:
            check_regular(fd, self.path / name, max_size=max_size)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read_bytes(self, name: str, *, max_size: int) -> bytes:
        fd = self.open_read(name, max_size=max_size)
        try:
            return read_fd(fd, max_size=max_size, what=self.path / name)
        finally:
            os.close(fd)

    # writing -------------------------------------------------------------------------------
    def create_temp(self, stem: str, *, mode: int = 0o600) -> tuple[int, str]:
        """A new file ``.<stem>.<random>.tmp`` (``O_EXCL``: a name someone planted is never reused).
        Returns (descriptor, name)."""
        for _ in range(16):
            name = f".{stem}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                             dir_fd=self.fd)
            except FileExistsError:
                continue
            except OSError as exc:
                raise _write_error(self, stem, exc) from None
            return fd, name
        raise RevError("PERMISSION", f"cannot create a temporary file in {self.path}")

    def create_excl(self, name: str, *, mode: int = 0o644) -> int:
        """Create the new file ``name`` (``O_EXCL | O_NOFOLLOW``); FileExistsError if anything is there."""
        _check_name(name)
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                           dir_fd=self.fd)
        except FileExistsError:
            raise
        except OSError as exc:
            raise _write_error(self, name, exc) from None

    def open_rw(self, name: str, *, mode: int = 0o644, append: bool = False) -> int:
        """Open (or create) the regular file ``name`` read-write, never through a link, never a FIFO
        or device (``fstat`` after open)."""
        _check_name(name)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_APPEND if append else 0)
        try:
            fd = os.open(name, flags, mode, dir_fd=self.fd)
        except OSError as exc:
            raise _write_error(self, name, exc) from None
        try:
            check_regular(fd, self.path / name)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def write_atomic(self, name: str, data: bytes, *, mode: int = 0o644) -> None:
        """Replace ``name`` with ``data``: a fresh temporary, fsync, rename over, fsync the folder.
        (The one atomic small-file writer.)"""
        self._publish(name, lambda fd: write_all(fd, data), mode)

    def copy_in(self, name: str, src_fd: int, *, mode: int = 0o644, expect_sha256: str | None = None,
                max_size: int | None = None) -> tuple[str, int]:
        """Copy everything readable from ``src_fd`` into ``name`` (temporary, hash on the way, fsync,
        rename). (sha256, size); RevError("VERIFY_FAILED") when ``expect_sha256`` differs — then
        nothing is left behind."""
        def fill(fd: int) -> tuple[str, int]:
            sha, size = copy_fd(src_fd, fd, max_size=max_size, what=self.path / name)
            if expect_sha256 is not None and sha != expect_sha256:
                raise RevError("VERIFY_FAILED", f"{self.path / name}: sha256 {sha[:16]}… where "
                                                f"{expect_sha256[:16]}… was expected; nothing kept")
            return sha, size
        return self._publish(name, fill, mode)

    def copy_in_closing(self, name: str, src_fd: int, *, mode: int, expect_sha256: str,
                        changed: RevError) -> None:
        """``copy_in`` of a file that must still hash to ``expect_sha256``, closing ``src_fd``;
        a mismatch means the source changed while it was read, reported as ``changed``."""
        try:
            self.copy_in(name, src_fd, mode=mode, expect_sha256=expect_sha256)
        except RevError as exc:
            if exc.code == "VERIFY_FAILED":
                raise changed from exc
            raise
        finally:
            os.close(src_fd)

    def _publish(self, name: str, fill, mode: int):
        """Write a fresh temporary with ``fill(fd)``, fsync, rename it over ``name``, fsync the
        folder; on any failure the temporary is removed. Returns what ``fill`` returned."""
        _check_name(name)
        fd, tmp = self.create_temp(name)
        try:
            try:
                result = fill(fd)
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            self.replace(tmp, name)
        except OSError as exc:
            self.unlink(tmp, missing_ok=True)
            raise _write_error(self, name, exc) from None
        except BaseException:
            self.unlink(tmp, missing_ok=True)
            raise
        self.fsync()
        return result

    def replace(self, src: str, dst: str, *, dst_dir: "Dir | None" = None) -> None:
        """``rename(2)`` relative to descriptors: neither name is resolved through a link."""
        _check_name(src)
        _check_name(dst)
        os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=(dst_dir or self).fd)

    def unlink(self, name: str, *, missing_ok: bool = False) -> None:
        _check_name(name)
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def rmtree(self, name: str, *, missing_ok: bool = True) -> None:
        """Remove ``name`` and everything below it, descending only through real folders opened
        ``O_NOFOLLOW`` (a link in the tree is removed, never followed)."""
        _check_name(name)
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            if missing_ok:
                return
            raise
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=self.fd)
            return
        fd = os.open(name, DIR_FLAGS, dir_fd=self.fd)
        try:
            _rmtree_fd(fd)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=self.fd)

    def fsync(self) -> None:
        """Make renames, creations and removals in this folder durable (POSIX: a rename is atomic,
        not durable, until its folder is synced)."""
        try:
            os.fsync(self.fd)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EROFS):
                raise


def fsync_dir(path: str | os.PathLike) -> None:
    """fsync a folder given by path (for trees reached through ``Root.resolve``); prefer ``Dir.fsync``."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EROFS):
            raise
    finally:
        os.close(fd)


def why_of(fd: int) -> str:
    return folder_problem(os.fstat(fd)) or "writable by others"


class _Walk:
    """One ``Dir.open`` walk from ``/`` to ``p``: the folder open now (``fd``, reached by ``cur``),
    the components still to walk (``parts``; a followed link puts its target in front), and what
    the walk learned on the way: whether the folder holding the next entry is trusted, whether a
    shared folder or link was let through (``shared``), how many links were followed."""

    def __init__(self, p: str, *, create: bool, mode: int, what: str, allow: bool, top: str = "/",
                 probe: bool = False):
        self.p, self.create, self.mode, self.what, self.allow = p, create, mode, what, allow
        # top: the folder "/" stands for (an image's root under --root: an absolute link's target
        # is read under it, ".." never leaves it); probe: stop quietly at the first missing part
        self.top, self.probe = top, probe
        self.parts = [x for x in p.split("/") if x]
        self.cur: list[str] = []
        self.shared = False
        self.hops = 0
        self.parent_trusted = False
        self.fd = os.open(top, DIR_FLAGS)

    def run(self) -> None:
        self.parent_trusted = folder_problem(os.fstat(self.fd)) is None
        while self.parts:
            name = self.parts.pop(0)
            if name == ".":
                continue
            if name == "..":
                # only reached through a link we trust; re-walk from / to the parent
                self.cur = self.cur[:-1]
                self._move_to(walk_plain(self.cur, self.top))
                self.parent_trusted = True
                continue
            lst = self._entry(name)
            if stat.S_ISLNK(lst.st_mode):
                self._follow(name, lst)
            else:
                self._descend(name, lst)

    def _shown(self, name: str) -> str:
        return "/" + "/".join(self.cur + [name])

    def _move_to(self, nfd: int) -> None:
        os.close(self.fd)
        self.fd = nfd

    def _entry(self, name: str) -> os.stat_result:
        """``lstat`` of the next component; a missing one is created as a folder with ``create``
        (only inside a trusted folder unless shared folders are allowed)."""
        shown = self._shown(name)
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            if self.probe:
                raise
            if not self.create:
                raise RevError("USAGE", f"no such folder: {shown} (for the {self.what} {self.p})") from None
            if not self.parent_trusted and not self.allow:
                raise _refuse(self.what, "/" + "/".join(self.cur), why_of(self.fd))
        try:
            os.mkdir(name, self.mode, dir_fd=self.fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _oserror(self.what, shown, exc) from None
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def _follow(self, name: str, lst: os.stat_result) -> None:
        """Follow a symbolic link only when it is ours and its folder is trusted (or sticky)."""
        self.hops += 1
        if self.hops > _MAX_LINKS:
            raise RevError("USAGE", f"too many symbolic links on the way to the {self.what} {self.p}")
        sticky_ok = stat.S_IMODE(os.fstat(self.fd).st_mode) & stat.S_ISVTX
        if not _ours(lst.st_uid) or not (self.parent_trusted or sticky_ok):
            if not self.allow:
                raise RevError("PERMISSION", f"refusing to follow the symbolic link {self._shown(name)} on the "
                                             f"way to the {self.what} {self.p}: uid {lst.st_uid} owns it or its "
                                             f"folder is writable by others; give the real path instead")
            self.shared = True
        target = os.readlink(name, dir_fd=self.fd)
        if target.startswith("/"):
            self._move_to(os.open(self.top, DIR_FLAGS))
            self.cur = []
            self.parent_trusted = folder_problem(os.fstat(self.fd)) is None
        self.parts = [x for x in target.split("/") if x] + self.parts

    def _descend(self, name: str, lst: os.stat_result) -> None:
        """Open the next folder ``O_NOFOLLOW`` (refusing it if it changed since the ``lstat``)."""
        shown = self._shown(name)
        if not stat.S_ISDIR(lst.st_mode):
            raise RevError("USAGE", f"{shown} is not a folder (for the {self.what} {self.p})")
        try:
            nfd = os.open(name, DIR_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise RevError("PERMISSION", f"{shown} changed while it was opened (for the {self.what} "
                                             f"{self.p}); retry") from None
            raise _oserror(self.what, shown, exc) from None
        self._move_to(nfd)
        self.cur.append(name)
        self._check_trust(os.fstat(nfd))

    def _check_trust(self, st: os.stat_result) -> None:
        """Every folder on the way must be trusted (a sticky one of ours may hold ours), the last one
        strictly; otherwise refuse, or mark the result shared when shared folders are allowed."""
        problem = folder_problem(st)
        last = not self.parts
        sticky = bool(stat.S_IMODE(st.st_mode) & stat.S_ISVTX) and _ours(st.st_uid)
        if problem and (last or not sticky):
            if not self.allow:
                raise _refuse(self.what, "/" + "/".join(self.cur), problem)
            self.shared = True
        if not self.parent_trusted and not self.allow:
            raise _refuse(self.what, "/" + "/".join(self.cur[:-1]), "writable by others")
        self.parent_trusted = problem is None or sticky


def check_under(top: str | os.PathLike, machine_path: str, *, what: str = "folder") -> None:
    """Walk ``machine_path`` from the folder ``top`` (an image's root under ``--root``) the way
    ``Dir.open`` walks from ``/``: component by component ``O_NOFOLLOW``, a link followed only
    when it and its folder are ours (an absolute target read under ``top``), every folder on the
    way ours and writable by no one else, checked before the next one is opened. Stops quietly at
    the first missing component (what root would create there, in a folder just checked).
    RevError("PERMISSION") with one line otherwise: a user's ``var/lib`` in an image, or a link
    of theirs named ``rocmrevive``, never sends root's state or cache elsewhere.

        check_under("/srv/img", "/var/lib/rocmrevive", what="state folder")
    """
    try:
        walk = _Walk("/" + machine_path.strip("/"), create=False, mode=0o755, what=what, allow=shared_allowed(),
                     top=os.path.realpath(os.fspath(top)), probe=True)
    except (FileNotFoundError, NotADirectoryError):
        return   # no image there (yet): nothing on the way to check; the caller's own open says so
    try:
        walk.run()
    except (FileNotFoundError, NotADirectoryError):
        pass
    except RevError as exc:
        if exc.code == "USAGE" and "is not a folder" in exc.message:
            return   # a file where a folder would be: the caller's own open says so
        raise
    finally:
        os.close(walk.fd)


def walk_plain(parts: Sequence[str], top: str = "/") -> int:
    """A descriptor of the folder ``top/parts[0]/parts[1]/…``, each component opened ``O_NOFOLLOW``
    relative to the one above (a link or a non-folder on the way: OSError); nothing is judged.
    The one such walk (``Dir``'s re-walk after ``..``, ``trees.trust``, ``txn.folders``)."""
    fd = os.open(top, DIR_FLAGS)
    for name in parts:
        try:
            nfd = os.open(name, DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = nfd
    return fd


def _rmtree_fd(dfd: int) -> None:
    for name in os.listdir(dfd):
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            cfd = os.open(name, DIR_FLAGS, dir_fd=dfd)
            try:
                _rmtree_fd(cfd)
            finally:
                os.close(cfd)
            os.rmdir(name, dir_fd=dfd)
        else:
            os.unlink(name, dir_fd=dfd)


def _check_name(name: str) -> None:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a single path component: {name!r}")


def disk_full(folder, what: str) -> RevError:
    """The one disk-full outcome (exit 4, PERMISSION), naming the folder that filled.

        raise disk_full("/var/cache/rocmrevive/extracted", "writing the extraction's index")
    """
    return RevError("PERMISSION", f"no space left in {folder} while {what}; free some space and retry, or give "
                                  f"a folder on a disk with more room; nothing was kept",
                    details={"folder": str(folder), "disk_full": True})


def _write_error(d: Dir, name: str, exc: OSError) -> RevError:
    if exc.errno == errno.ELOOP:
        return RevError("PERMISSION", f"{d.path / name} is a symbolic link; rocmrevive never writes through one "
                                      f"(remove it)")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return RevError("PERMISSION", f"no space left in {d.path} while writing {name}; free some space and retry")
    if exc.errno == errno.EROFS:
        return RevError("PERMISSION", f"{d.path} is on a read-only file system; give a writable folder")
    return RevError("PERMISSION", f"cannot write {d.path / name}: {exc.strerror or exc}")


# descriptors -----------------------------------------------------------------------------
def check_regular(fd: int, what, *, max_size: int | None = None) -> os.stat_result:
    """``fstat`` an open descriptor: RevError unless it is a regular file (not larger than
    ``max_size``)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or
                stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else
                "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file")
        raise RevError("PERMISSION", f"{what} is {kind}, not a regular file; remove it")
    if max_size is not None and st.st_size > max_size:
        raise RevError("VERIFY_FAILED", f"{what} is {st.st_size:,} bytes, more than the {max_size:,} allowed")
    return st


def open_regular(path: str | os.PathLike, *, max_size: int | None = None, dir_fd: int | None = None,
                 what=None) -> int:
    """Open a file for reading: the last component is not followed when it is a link, a FIFO
    never blocks us and a device or FIFO is refused (``fstat`` after open). With ``dir_fd``,
    ``path`` is relative to that folder and no component of it is followed: each folder on the
    way is opened ``O_NOFOLLOW|O_DIRECTORY`` (a link another user planted in a tree of theirs
    never sends root's read elsewhere). ``what``: how a refusal names the file (default ``path``)."""
    parent, name = dir_fd, os.fspath(path)
    if dir_fd is not None:
        *folders, name = [x for x in name.split("/") if x not in ("", ".")] or ["."]
        parent = _walk_below(dir_fd, folders)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY,
                     dir_fd=parent)
    finally:
        if parent is not None and parent != dir_fd:
            os.close(parent)
    try:
        check_regular(fd, path if what is None else what, max_size=max_size)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _walk_below(dir_fd: int, folders: list[str]) -> int:
    """A new descriptor on ``dir_fd/folders...``, each component opened without following a link."""
    fd = os.dup(dir_fd)
    for name in folders:
        if name == "..":
            os.close(fd)
            raise OSError(errno.EPERM, "'..' in a path read below a folder", name)
        try:
            nfd = os.open(name, DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = nfd
    return fd


def read_regular(path: str | os.PathLike, *, max_size: int, dir_fd: int | None = None, what=None) -> bytes:
    """The whole of a file another user may have written (a venv's module, a config file, an
    archive): ``open_regular`` then ``read_fd``. A link, FIFO, socket, device or folder, a file
    larger than ``max_size`` or one that cannot be read is RevError with one line (``what`` it
    is, remove or fix it); a missing one raises FileNotFoundError.

        data = read_regular("vllm/platforms/rocm.py", dir_fd=site.fd, max_size=1 << 20)
    """
    shown = what if what is not None else path
    try:
        fd = open_regular(path, max_size=max_size, dir_fd=dir_fd, what=shown)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise read_error(shown, exc) from None
    try:
        return read_fd(fd, max_size=max_size, what=shown)
    except OSError as exc:
        raise read_error(shown, exc) from None
    finally:
        os.close(fd)


def read_error(what, exc: OSError) -> RevError:
    """One line for an ``OSError`` met opening or reading ``what`` for reading."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return RevError("PERMISSION", f"{what} is reached through a symbolic link (or a file where a folder "
                                      f"should be); rocmrevive never reads through one: replace it with the "
                                      f"real file")
    return RevError("PERMISSION", f"cannot read {what}: {exc.strerror or exc}")


def write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_fd(fd: int, *, max_size: int, what="file") -> bytes:
    """Everything readable from ``fd``, refusing more than ``max_size`` bytes actually read."""
    out = bytearray()
    while True:
        chunk = os.read(fd, min(CHUNK, max_size + 1 - len(out)) or 1)
        if not chunk:
            return bytes(out)
        out += chunk
        if len(out) > max_size:
            raise RevError("VERIFY_FAILED", f"{what} is larger than the {max_size:,} bytes allowed")


def copy_fd(src_fd: int | Reader, dst_fd: int, *, max_size: int | None = None, what="file", h=None) -> tuple[str, int]:
    """Copy ``src_fd`` (a descriptor or a Reader) to ``dst_fd`` hashing on the way (hashing.hash_fd with
    a sink); stops with RevError("VERIFY_FAILED") as soon as more than ``max_size`` bytes were actually read."""
    return hash_fd(src_fd, h, sink=lambda chunk: write_all(dst_fd, chunk), max_size=max_size, what=what)


def executable_problem(path: str | os.PathLike, *, hops: int = 0) -> str | None:
    """Why ``path`` may not be run as root by something rocmrevive sets up (the apt hook), or
    None: every folder on the way must be root's and not writable by others (sticky folders
    aside), the file itself (and any link on the way) root's and not group/world-writable."""
    if os.geteuid() != 0:
        return None  # only root's own setups are at stake
    p = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(p)
    try:
        with Dir.open(parent, what="folder of the executable", allow_shared=False) as d:
            st = d.lstat(name)
            if st is None:
                return f"{p} does not exist"
            if stat.S_ISLNK(st.st_mode):
                if st.st_uid != 0:
                    return f"{p} is a symbolic link owned by uid {st.st_uid}"
                if hops > _MAX_LINKS:
                    return f"{p}: too many symbolic links"
                target = os.readlink(name, dir_fd=d.fd)
                return executable_problem(os.path.join(parent, target), hops=hops + 1)
    except RevError as exc:
        return exc.message.split(", so another user")[0]
    if not stat.S_ISREG(st.st_mode):
        return f"{p} is not a regular file"
    if st.st_uid != 0:
        return f"{p} is owned by uid {st.st_uid}, not root"
    if stat.S_IMODE(st.st_mode) & 0o022:
        return f"{p} is writable by its group or by everyone"
    return None


def printable_name(name: str) -> bool:
    """A path name rocmrevive may create and print: valid UTF-8 (no surrogate escapes), no
    control characters (newline, ESC, DEL, C1)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 for c in name)
