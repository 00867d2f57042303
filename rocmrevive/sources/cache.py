"""The artifact cache, keyed by sha256. A file is only ever moved into ``sha256/`` after its
size and checksum were verified, so anything found there can be used as is.

    <cache>/sha256/<hex>                verified artifacts (read-only)
    <cache>/partial/<hex>.part          downloads in progress (resumed by the next run)
    <cache>/resolved/<key>.json         what a signed index said about an unpinned source
    <cache>/resolved/<key>/InRelease    ... and the index files themselves, for ``fetch --to``

    cache = Cache(default_cache_dir(root)); cache.has("0561..."); cache.path_for("0561...")
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.hashing import sha256_file  # noqa: F401  (re-exported: the one hash function)
from rocmrevive.rootfs import Root

_HEX = re.compile(r"^[0-9a-f]{64}$")


def default_cache_dir(root: Root | None = None, *, euid: int | None = None, env: dict | None = None) -> Path:
    """/var/cache/rocmrevive (under the root) for root; $XDG_CACHE_HOME/rocmrevive otherwise."""
    root = root or Root("/")
    env = os.environ if env is None else env
    euid = os.geteuid() if euid is None else euid
    if euid == 0:
        return root.path("/var/cache/rocmrevive")
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path(env.get("HOME", os.path.expanduser("~"))) / ".cache"
    return base / "rocmrevive"




class Cache:
    def __init__(self, base: Path | os.PathLike | str):
        self.base = Path(base)

    def __repr__(self) -> str:
        return f"Cache({str(self.base)!r})"

    def _ensure(self, sub: str) -> Path:
        d = self.base / sub
        try:
            d.mkdir(parents=True, exist_ok=True)
        except PermissionError:
            raise RevError("PERMISSION", f"cannot create the cache folder {d}; run as root or pass --cache DIR") \
                from None
        return d

    def path_for(self, sha256: str) -> Path:
        if not _HEX.match(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return self.base / "sha256" / sha256

    def has(self, sha256: str, size: int | None = None) -> bool:
        p = self.path_for(sha256)
        try:
            st = p.stat()
        except FileNotFoundError:
            return False
        return size is None or st.st_size == size

    def partial_path(self, sha256: str) -> Path:
        return self._ensure("partial") / f"{sha256}.part"

    @contextlib.contextmanager
    def lock(self, name: str):
        """An exclusive lock per artifact, so two runs never write the same partial file."""
        import fcntl

        d = self._ensure("partial")
        fd = os.open(d / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def commit(self, part: Path, sha256: str) -> Path:
        """Move a verified partial file into place (atomically, durably)."""
        dest_dir = self._ensure("sha256")
        dest = dest_dir / sha256
        with open(part, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(part, 0o444)
        os.replace(part, dest)
        _fsync_dir(dest_dir)
        return dest

    def add_local(self, src: Path, sha256: str) -> Path:
        """Copy an already verified local file into the cache, checking it again on the way."""
        dest = self.path_for(sha256)
        if dest.exists():
            return dest
        part = self.partial_path(sha256)
        part.unlink(missing_ok=True)
        shutil.copyfile(src, part)
        if sha256_file(part)[0] != sha256:
            part.unlink(missing_ok=True)
            raise RevError("VERIFY_FAILED", f"{src} changed while it was copied into the cache")
        return self.commit(part, sha256)

    # resolutions of unpinned sources ---------------------------------------------------
    def resolution_dir(self, key: str) -> Path:
        return self._ensure("resolved") / key

    def load_resolution(self, key: str) -> dict | None:
        p = self.base / "resolved" / f"{key}.json"
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not _HEX.match(str(data.get("sha256", ""))):
            return None
        return data

    def save_resolution(self, key: str, record: dict, files: dict[str, bytes]) -> None:
        d = self.resolution_dir(key)
        d.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            _atomic_write(d / name, data)
        _atomic_write(self.base / "resolved" / f"{key}.json", json.dumps(record, indent=2, sort_keys=True).encode())


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
