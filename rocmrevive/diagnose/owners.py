"""Which package ships a file: the Python distribution whose ``*.dist-info/RECORD`` lists it (pip
installed it), or the Debian package whose ``/var/lib/dpkg/info/<package>.list`` names it. That
package is what a user replaces when the file's kernels lack a card.

    owners = Owners(Root("/"))
    owners.of("/home/alice/venv/lib/python3.12/site-packages/inferna/lib/libggml-hip.so",
              site="/home/alice/venv/lib/python3.12/site-packages")   # Owner('pip', 'inferna-rocm', '0.2.1')

Everything read here can be written by a user (a venv's RECORD): each file is opened without
following a link, never a FIFO, size-capped, and a line that does not parse is skipped.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from rocmrevive.errors import RevError
from rocmrevive.fs import open_regular, read_fd
from rocmrevive.rootfs import Root

RECORD_MAX = 32 << 20   # torch's RECORD is ~2 MB
LIST_MAX = 16 << 20
# PEP 503 names and PEP 440-ish versions; anything else in a folder name is not trusted as one
_DIST_INFO = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._]*)-([A-Za-z0-9.+!_]+)\.dist-info$")
_DPKG_LIST = re.compile(r"^([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9-]+)?\.list$")


@dataclass(frozen=True)
class Owner:
    """The package a file came with: ``manager`` is ``pip`` or ``dpkg``."""

    manager: str
    name: str
    version: str | None = None

    def to_json(self) -> dict:
        return {"manager": self.manager, "name": self.name, "version": self.version}


def read_capped(path, cap: int) -> bytes | None:
    """A regular file's bytes (no link followed, no FIFO), or None when it is not one, cannot be
    read or is larger than ``cap``."""
    try:
        fd = open_regular(path, max_size=cap)
    except (OSError, RevError):
        return None
    try:
        return read_fd(fd, max_size=cap)
    except (OSError, RevError):   # grew past the cap while read
        return None
    finally:
        os.close(fd)


def normalize(name: str) -> str:
    """PEP 503: ``Cyllama_ROCm`` -> ``cyllama-rocm``."""
    return re.sub(r"[-_.]+", "-", name).lower()


class Owners:
    """The owners of files on a machine, each index read once, when first asked."""

    def __init__(self, root: Root):
        self.root = root
        self._sites: dict[str, dict[str, Owner]] = {}
        self._dpkg: dict[str, Owner] | None = None

    def of(self, mpath: str, site: str | None = None) -> Owner | None:
        """The owner of the machine path ``mpath``: pip's RECORD when it lies in ``site``, else dpkg."""
        if site and (mpath == site or mpath.startswith(site.rstrip("/") + "/")):
            found = self._site(site).get(mpath[len(site.rstrip("/")) + 1:])
            if found is not None:
                return found
        return self._dpkg_index().get(mpath)

    def _site(self, site: str) -> dict[str, Owner]:
        if site not in self._sites:
            self._sites[site] = self._read_records(site)
        return self._sites[site]

    def _read_records(self, site: str) -> dict[str, Owner]:
        """site-relative path -> Owner, from every ``*.dist-info/RECORD`` of ``site``."""
        index: dict[str, Owner] = {}
        real = self.root.path(site)
        try:
            names = sorted(e.name for e in os.scandir(real) if e.is_dir(follow_symlinks=False))
        except OSError:
            return index
        for folder in names:
            m = _DIST_INFO.match(folder)
            data = read_capped(real / folder / "RECORD", RECORD_MAX) if m else None
            if m is None or data is None:
                continue
            owner = Owner("pip", normalize(m.group(1)), m.group(2))
            for line in data.decode("utf-8", "replace").splitlines():
                rel = line.partition(",")[0]
                if rel.endswith((".py", ".pyc", ".pyi")):
                    continue   # never device code, and most of a RECORD: not indexed
                index.setdefault(rel.strip('"'), owner)
        return index

    def _dpkg_index(self) -> dict[str, Owner]:
        """machine path -> Owner, from dpkg's file lists (read once per scan)."""
        if self._dpkg is None:
            self._dpkg = {}
            info = self.root.path("/var/lib/dpkg/info")
            try:
                names = sorted(os.listdir(info))
            except OSError:
                names = []
            for name in names:
                m = _DPKG_LIST.match(name)
                data = read_capped(info / name, LIST_MAX) if m else None
                if m is None or data is None:
                    continue
                owner = Owner("dpkg", m.group(1))
                for line in data.decode("utf-8", "replace").splitlines():
                    if line.startswith("/"):
                        self._dpkg.setdefault(line, owner)
        return self._dpkg


__all__ = ["Owner", "Owners", "normalize", "read_capped"]
