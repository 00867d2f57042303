"""The artifact cache, keyed by sha256. A file is only ever moved into ``sha256/`` after its
size and checksum were verified, so anything found there can be used as is — in a *trusted*
cache (owned by the effective user, not group/world-writable: see ``rocmrevive.fs``). A cache
other users can write is refused unless ``ROCMREVIVE_TRUST_SHARED=1``; then nothing in it is
trusted: every artifact is copied into a private folder and re-hashed against its pin before it
is used, downloads go to that private folder, recorded resolutions, keys and extracted files are
ignored (docs/security.md).

    <cache>/sha256/<hex>                verified artifacts (read-only)
    <cache>/partial/<hex>.part          downloads in progress (resumed by the next run)
    <cache>/resolved/<key>.json         what a signed index said about an unpinned source
    <cache>/resolved/<key>/InRelease    ... and the index files themselves, for ``fetch --to``

    cache = Cache(default_cache_dir(root)); cache.has("0561..."); cache.path_for("0561...")
"""
from __future__ import annotations

import atexit
import contextlib
import contextvars
import fcntl
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Literal, Mapping, overload

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, check_under, open_regular
from rocmrevive.hashing import sha256_file  # noqa: F401  (re-exported: the one hash function)
from rocmrevive.invocation import holder_line
from rocmrevive.rootfs import Root
from rocmrevive.txn.lock import holder

_HEX = re.compile(r"^[0-9a-f]{64}$")


def default_cache_dir(root: Root | None = None, *, euid: int | None = None,
                      env: Mapping[str, str] | None = None) -> Path:
    """/var/cache/rocmrevive (under the root) for root; $XDG_CACHE_HOME/rocmrevive otherwise.
    Under ``--root DIR`` a link on the way is resolved as the machine would (an absolute target is
    read under DIR), and one that leads out of DIR is refused (RevError("PERMISSION")): the cache
    never leaves the root, as ``--root`` promises (issue 26, finding 9)."""
    root = root or Root("/")
    environ: Mapping[str, str] = os.environ if env is None else env
    euid = os.geteuid() if euid is None else euid
    if euid == 0:
        if root.is_host:
            return root.path("/var/cache/rocmrevive")
        # walked from the image's root, owners checked, before a link is followed (issue 35, finding 3)
        check_under(root.base, "/var/cache/rocmrevive", what="cache folder")
        try:
            return root.resolve("/var/cache/rocmrevive", strict=True, what="cache folder")
        except ValueError as exc:
            raise RevError("PERMISSION", f"{exc}; the cache stays under --root {root.base}: remove the link or "
                                         "give --cache DIR") from None
    xdg = environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path(environ.get("HOME", os.path.expanduser("~"))) / ".cache"
    return base / "rocmrevive"




MAX_RECORD = 1 << 20  # a resolution record or an index file kept in the cache

# check mode (install --check): every Cache made meanwhile reads what is there and writes nothing
_READ_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("rocmrevive_cache_read_only", default=False)


@contextlib.contextmanager
def read_only_caches():
    """Within it, a Cache uses the verified artifacts already there and writes nothing into the
    cache: downloads, --from copies, resolutions and extractions go to a private folder removed at
    exit (what ``install --check`` promises: it changes nothing).

        with read_only_caches(): plan = install(root, check=True)
    """
    token = _READ_ONLY.set(True)
    try:
        yield
    finally:
        _READ_ONLY.reset(token)


class Cache:
    def __init__(self, base: Path | os.PathLike | str):
        self.base = Path(base)
        self._dir: Dir | None = None
        self._private: Path | None = None
        self.read_only = _READ_ONLY.get()

    def __repr__(self) -> str:
        return f"Cache({str(self.base)!r})"

    # the folders -------------------------------------------------------------------------
    def dir(self) -> Dir:
        """The cache folder, opened (and created) once; RevError("PERMISSION") when another user
        could write it and the user did not opt in."""
        if self._dir is None:
            self._dir = Dir.open(self.base, create=not self.read_only, what="cache")
        return self._dir

    @property
    def shared(self) -> bool:
        """A cache other users can write, used because the user opted in: trust nothing in it."""
        if self.read_only and not os.path.lexists(self.base):
            return False  # nothing there to trust or distrust, and nothing will be made
        return self.dir().shared

    @property
    def private_writes(self) -> bool:
        """Whether what this run makes goes to its private folder, not into the cache."""
        return self.read_only or self.shared

    @overload
    def _sub(self, sub: str, *, create: Literal[True] = True) -> Dir: ...
    @overload
    def _sub(self, sub: str, *, create: bool) -> Dir | None: ...

    def _sub(self, sub: str, *, create: bool = True) -> Dir | None:
        try:
            return self.dir().sub(sub, create=create)
        except FileNotFoundError:
            return None

    def _ensure(self, sub: str) -> Path:
        d = self._sub(sub)
        d.close()
        return self.base / sub

    def private_dir(self) -> Path:
        """A folder only this process uses (0700, removed at exit): where a shared cache's
        artifacts are re-verified and downloaded."""
        if self._private is None:
            self._private = Path(tempfile.mkdtemp(prefix="rocmrevive-private-"))
            atexit.register(shutil.rmtree, self._private, True)
        return self._private

    # artifacts ---------------------------------------------------------------------------
    def path_for(self, sha256: str) -> Path:
        if not _HEX.match(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return self.base / "sha256" / sha256

    def has(self, sha256: str, size: int | None = None) -> bool:
        self.path_for(sha256)  # checks the name
        if self.read_only and not os.path.lexists(self.base):
            return False
        d = self._sub("sha256", create=False)
        if d is None:
            return False
        with d:
            st = d.lstat(sha256)
        return st is not None and stat.S_ISREG(st.st_mode) and (size is None or st.st_size == size)

    def artifact(self, sha256: str, size: int | None = None) -> Path | None:
        """The verified artifact, or None. In a trusted cache the file in ``sha256/`` (verified when
        it entered); in a shared one a private copy, re-hashed against ``sha256`` on the way."""
        if not self.has(sha256, size):
            return None
        if not self.shared:
            return self.path_for(sha256)
        out = self.private_dir() / sha256
        if out.is_file():
            return out
        d = self._sub("sha256", create=False)
        if d is None:  # removed since has() looked
            return None
        with d:
            try:
                fd = d.open_read(sha256, max_size=size)
            except (OSError, RevError):
                return None
            try:
                with Dir.open(self.private_dir(), allow_shared=False) as priv:
                    priv.copy_in(sha256, fd, mode=0o444, expect_sha256=sha256, max_size=size)
            except RevError:
                return None
            finally:
                os.close(fd)
        return out

    def partial_path(self, sha256: str) -> Path:
        """Where a download in progress is kept: ``partial/`` of a trusted cache (resumed by the
        next run), the private folder for a shared one."""
        if self.private_writes:
            return self.private_dir() / f"{sha256}.part"
        return self._ensure("partial") / f"{sha256}.part"

    @contextlib.contextmanager
    def lock(self, name: str, waiting=None):
        """An exclusive lock per artifact, so two runs never write the same partial file. A shared
        cache downloads into this process's private folder: nothing to share, no lock file to trust.
        The lock file is removed by its holder before it lets go; a waiter that then holds a removed
        file opens the name again, so two runs never hold two different files of one name.
        ``waiting(who)`` is told who holds it (" (PID n)") before this run waits."""
        if self.private_writes:
            yield
            return
        lock = f"{name}.lock"
        with self._sub("partial") as d:
            told = False
            while True:
                fd = d.open_rw(lock)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if waiting is not None and not told:
                        waiting(holder(self.base / "partial" / lock, fd))
                        told = True
                    fcntl.flock(fd, fcntl.LOCK_EX)
                now, mine = d.lstat(lock), os.fstat(fd)
                if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                    break
                os.close(fd)  # the holder we waited for removed it: lock the name anew
            try:  # who holds it, for the next run that has to wait (for humans only)
                os.ftruncate(fd, 0)
                os.pwrite(fd, holder_line(), 0)
            except OSError:
                pass
            try:
                yield
            finally:
                d.unlink(lock, missing_ok=True)  # removed while held: no empty .lock is left behind
                os.close(fd)

    def commit(self, part: Path, sha256: str) -> Path:
        """Move a verified partial file into place (atomically, durably). In a shared cache the
        private file is copied in for others and the private one is what this run uses."""
        part = Path(part)
        if self.read_only:
            return part  # verified in the private folder; the cache is left as it was
        if self.shared:
            fd = open_regular(part)
            try:
                with self._sub("sha256") as d:
                    d.copy_in(sha256, fd, mode=0o444, expect_sha256=sha256)
            finally:
                os.close(fd)
            return part
        with self._sub("partial") as pd, self._sub("sha256") as sd:
            fd = pd.open_read(part.name)
            try:
                os.fsync(fd)
                os.fchmod(fd, 0o444)
            finally:
                os.close(fd)
            pd.replace(part.name, sha256, dst_dir=sd)
            sd.fsync()
        return self.path_for(sha256)

    def add_local(self, src: Path, sha256: str) -> Path:
        """Copy an already verified local file into the cache, checking it again on the way."""
        if not self.shared and self.has(sha256):
            return self.path_for(sha256)
        try:
            fd = open_regular(src)
        except OSError as exc:
            raise RevError("USAGE", f"cannot read {src}: {exc.strerror}") from None
        try:
            target = Dir.open(self.private_dir(), allow_shared=False) if self.private_writes else self._sub("sha256")
        except BaseException:
            os.close(fd)
            raise
        with target as d:
            d.copy_in_closing(sha256, fd, mode=0o444, expect_sha256=sha256, changed=RevError(
                "VERIFY_FAILED", f"{src} changed while it was copied into the cache"))
        if self.private_writes:
            return self.private_dir() / sha256
        return self.path_for(sha256)

    # resolutions of unpinned sources ---------------------------------------------------
    def resolution_dir(self, key: str) -> Path:
        _check_key(key)
        return self._ensure("resolved") / key

    def load_resolution(self, key: str) -> dict | None:
        """What a signed index said earlier; never from a shared cache (the index is read again)."""
        _check_key(key)
        if self.shared:
            return None
        d = self._sub("resolved", create=False)
        if d is None:
            return None
        try:
            with d:
                data = json.loads(d.read_bytes(f"{key}.json", max_size=MAX_RECORD))
        except (OSError, ValueError, RevError):
            return None
        if not isinstance(data, dict) or not _HEX.match(str(data.get("sha256", ""))):
            return None
        return data

    def save_resolution(self, key: str, record: dict, files: dict[str, bytes]) -> dict[str, Path]:
        """Keep a resolution and its index files; {name: path} of the kept files. A shared cache
        keeps them in the private folder for this run only (nobody may rely on them later)."""
        _check_key(key)
        if self.private_writes:
            with Dir.open(self.private_dir(), allow_shared=False) as priv, priv.sub(key, create=True) as d:
                for name, data in files.items():
                    d.write_atomic(name, data)
            return {name: self.private_dir() / key / name for name in files}
        with self._sub("resolved") as rd:
            with rd.sub(key, create=True) as d:
                for name, data in files.items():
                    d.write_atomic(name, data)
            rd.write_atomic(f"{key}.json", json.dumps(record, indent=2, sort_keys=True).encode())
        return {name: self.base / "resolved" / key / name for name in files}

    def resolved_file(self, key: str, name: str) -> Path | None:
        """An index file kept with a resolution (for ``fetch --to``), or None."""
        _check_key(key)
        if self.shared:
            return None
        p = self.base / "resolved" / key / name
        try:
            st = os.lstat(p)
        except OSError:
            return None
        return p if stat.S_ISREG(st.st_mode) else None

    # signing keys fetched for a source (trust still comes from the manifest's fingerprint)
    def key_file(self, fpr: str) -> Path | None:
        _check_key(fpr)
        if self.shared:
            return None
        p = self.base / "keys" / f"{fpr}.gpg"
        try:
            st = os.lstat(p)
        except OSError:
            return None
        return p if stat.S_ISREG(st.st_mode) else None

    def save_key(self, fpr: str, data: bytes) -> None:
        _check_key(fpr)
        if self.private_writes:
            return
        with self._sub("keys") as d:
            d.write_atomic(f"{fpr}.gpg", data)


_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def _check_key(key: str) -> None:
    if not _KEY.match(key) or ".." in key:
        raise ValueError(f"not a cache key: {key!r}")
