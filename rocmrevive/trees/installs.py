"""ROCm installs under ``/opt``: every ``/opt/rocm-X.Y.Z`` (and a real ``/opt/rocm`` folder), its
version from ``.info/version`` (``6.4.3-128``; AMD's packages write it, ECOSYSTEM §2.1), and where
the ``/opt/rocm`` link leads (possibly through ``/etc/alternatives/rocm``). TheRock's packages
(ROCm 7.13+) install to ``/opt/rocm/core-X.Y`` and make ``/opt/rocm`` a folder of alternatives
links: each prefix is an install, the folder is not (``trees.therock``).

    installs, link = find_installs(Root("/")); [i.version for i in installs]
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from rocmrevive.hardware.sysfs import list_dir, read_text
from rocmrevive.rootfs import Root

OPT = "/opt"
_NAME = re.compile(r"^rocm(?:-(\d+\.\d+(?:\.\d+)?)(?:[-~.].*)?)?$")
_VERSION = re.compile(r"^\s*(\d+\.\d+(?:\.\d+)?)(?:[-.~](\S+))?\s*$")


@dataclass
class RocmInstall:
    path: str                    # machine path, "/opt/rocm-6.4.3"
    version: str | None
    build: str | None
    version_source: str | None   # ".info/version" | "folder name"
    default: bool = False        # the /opt/rocm link leads here
    problems: list[str] = field(default_factory=list)

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        return tuple(int(x) for x in self.version.split(".")) if self.version else None

    def to_json(self) -> dict:
        return {"path": self.path, "version": self.version, "build": self.build,
                "version_source": self.version_source, "default": self.default,
                "problems": self.problems}


@dataclass
class RocmLink:
    path: str
    target: str | None           # the link text
    resolved: str | None         # machine path it leads to
    exists: bool

    def to_json(self) -> dict:
        return {"path": self.path, "target": self.target, "resolved": self.resolved, "exists": self.exists}


def read_version(root: Root, install: str) -> tuple[str | None, str | None, str | None]:
    """(version, build, problem) from ``<install>/.info/version``."""
    text, problem = read_text(root.path(f"{install}/.info/version"))
    if problem:
        return None, None, f".info/version: {problem}"
    if text is None:
        return None, None, None
    m = _VERSION.match(text.splitlines()[0] if text.strip() else "")
    if not m:
        return None, None, f".info/version holds {text.strip()[:40]!r}, not a version"
    return m.group(1), m.group(2), None


def _install(root: Root, mpath: str, folder_version: str | None, default: bool) -> RocmInstall:
    inst = RocmInstall(mpath, None, None, None)
    inst.version, inst.build, problem = read_version(root, mpath)
    if problem:
        inst.problems.append(problem)
    if inst.version:
        inst.version_source = ".info/version"
    elif folder_version:
        inst.version, inst.version_source = folder_version, "folder name"
    inst.default = default
    return inst


def find_installs(root: Root) -> tuple[list[RocmInstall], RocmLink | None]:
    link = None
    lpath = root.path(f"{OPT}/rocm")
    if lpath.is_symlink():
        target = os.readlink(lpath)
        try:
            real = root.resolve(f"{OPT}/rocm")
            resolved, exists = root.machine_path(real), real.is_dir()
        except (ValueError, OSError):
            resolved, exists = None, False
        link = RocmLink(f"{OPT}/rocm", target, resolved, exists)
    out = []
    from rocmrevive.trees import therock  # TheRock: /opt/rocm is a folder of links around core-X.Y

    umbrella = therock.is_umbrella(root)
    for name in list_dir(root.path(OPT)):
        m = _NAME.match(name)
        if not m or (name == "rocm" and umbrella):
            continue
        mpath = f"{OPT}/{name}"
        real = root.path(mpath)
        if real.is_symlink() or not real.is_dir():
            continue
        out.append(_install(root, mpath, m.group(1), bool(link and link.resolved == mpath)))
    for mpath, default in therock.prefixes(root):
        out.append(_install(root, mpath, None, default))
    out.sort(key=lambda i: (i.version_tuple or (0,), i.path))
    return out, link
