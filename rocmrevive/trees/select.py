"""Which trees a command works on: each ``--tree`` converted once, and every rocBLAS copy and
host-library folder it names (or every one found on the machine), as frozen selections that carry
what the commands need: the machine path, the real path (links resolved under the root, once),
the library folder, its ``librocblas.so``, the ROCm version and the tree's trust decision (who may
write it, ``trust.py``). ``install``, ``verify``, ``audit`` and ``recipe`` select through here, with
one set of error messages.

    trees = given_trees(root, ["/opt/rocm-6.4.3"])
    for c in rocblas_copies(root, trees):
        c.path, c.real, c.host, c.rocm_version, c.trust.verdict
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Sequence

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.trees import therock
from rocmrevive.trees.installs import RocmInstall, find_installs, read_version
from rocmrevive.trees.layout import library_files, rocblas_host_library, rocblas_library_dirs
from rocmrevive.trees.pythonenv import PythonEnv, find_envs
from rocmrevive.trees.rocblas import RocblasCopy, find_copies
from rocmrevive.trees.trust import TreeTrust, decide


@dataclass(frozen=True)
class Tree:
    """One ``--tree`` as typed, and where it is."""

    typed: str
    path: str      # its machine path, links resolved under the root
    real: Path     # the real path of that


@dataclass(frozen=True)
class Copy:
    """One rocBLAS copy selected: its Tensile library folder."""

    path: str                   # machine path of the library folder, as the machine's install names it
    real: Path                  # its real path, links resolved under the root
    host: Path | None           # the real path of its librocblas.so (None: none found)
    rocm_version: str | None
    found: RocblasCopy          # what trees.rocblas knows of it (layout, versions, targets)
    tree: Tree | None = None    # the --tree it lies in (None: found on its own)
    env: PythonEnv | None = None   # the Python environment it lies in (a wheel's copy)

    @property
    def layout(self) -> str:
        return self.found.layout

    @property
    def rocblas_version(self) -> str | None:
        return self.found.rocblas_version

    @cached_property
    def trust(self) -> TreeTrust:
        """Who may write it (``trust.decide``), decided once, the first time a command asks (a
        read-only command never does)."""
        return decide(self.real)


@dataclass(frozen=True)
class LibraryFolder:
    """A folder whose host libraries may be grafted (``install/graft.py``)."""

    path: str                   # machine path
    real: Path
    rocm_version: str | None

    @cached_property
    def trust(self) -> TreeTrust:
        """Who may write it, decided once, the first time it is asked."""
        return decide(self.real)


def given_trees(root: Root, typed, *, files: bool = False) -> list[Tree]:
    """Each ``--tree`` converted once, its links resolved inside the machine: RevError("USAGE") for
    one that is not a folder (``files``: nor a file), or whose links leave the root or loop."""
    out: list[Tree] = []
    for t in typed:
        try:
            real = root.resolve(root.machine_path(root.given(t)))
        except ValueError as exc:
            raise RevError("USAGE", f"--tree {t}: {exc}") from None
        real = therock.given_tree(root, real)   # TheRock's /opt/rocm, an MI50 forward-port's prefix
        if not (real.exists() if files else real.is_dir()):
            kind = "file or folder" if files else "folder"
            what = f"is not a {kind}" if os.path.lexists(real) else f"does not exist (no such {kind})"
            where = "" if root.is_host else f" under {root.base}"
            give = "a library, " if files else ""
            raise RevError("USAGE", f"--tree {t} {what}{where}; give {give}an /opt/rocm-X.Y.Z install or its "
                                    f"rocblas/library folder (`rocmrevive detect` lists them)")
        out.append(Tree(t, root.machine_path(real), real))
    return out


def nothing_found(root: Root) -> RevError:
    """The error of a command that found no rocBLAS copy to work on."""
    return RevError("NOTHING_SUPPORTED", f"no rocBLAS copy found under {root.base} (/opt/rocm*, /usr/lib*, "
                                         f"Python environments); name one with --tree (an /opt/rocm-X.Y.Z "
                                         f"install or its rocblas/library folder)")


def rocblas_copies(root: Root, trees: Sequence[Tree], *, installs: Sequence[RocmInstall] = (),
                   envs: Sequence[PythonEnv] = ()) -> list[Copy]:
    """Every rocBLAS copy in ``trees`` (RevError("NOTHING_SUPPORTED") for a tree without one), or
    every copy on the machine when none is given (an empty list when there is none: the caller
    may go on, or raise ``nothing_found``). Each real folder once, named as its install or package
    knows it (``find_copies``)."""
    _found, copies = machine_copies(root, trees, installs=installs, envs=envs)
    return [c for c in copies if c.tree is not None] if trees else copies


def machine_copies(root: Root, trees: Sequence[Tree], *, installs: Sequence[RocmInstall] = (),
                   envs: Sequence[PythonEnv] = (), deep: bool = False,
                   progress=None) -> tuple[list[RocblasCopy], list[Copy]]:
    """Every rocBLAS copy on the machine and in ``trees`` (``detect`` and ``doctor`` show them all):
    what ``find_copies`` found (each real folder once), and the same as selections, each copy of a
    ``--tree`` with its ``tree`` (RevError("NOTHING_SUPPORTED") for a tree without one). A tree
    adds its library folders, never itself: the folder of an install is no copy."""
    libs: list[tuple[Tree, Path]] = []
    for t in trees:
        found = rocblas_library_dirs(t.real)
        if not found:
            raise RevError("NOTHING_SUPPORTED", f"--tree {t.typed}: no rocBLAS Tensile library folder in it "
                                                f"(looked for TensileLibrary* files in it, lib/rocblas/library "
                                                f"and rocblas/*/library)")
        # a link inside the tree (lib -> lib64) resolved too: each folder is known by its real path
        libs += [(t, _resolved(root, root.machine_path(lib)) or lib) for lib in found]
    copies = find_copies(root, installs=list(installs), envs=list(envs),
                         extra=[root.machine_path(lib) for _, lib in libs], deep=deep, progress=progress)
    by_real: dict[Path, RocblasCopy] = {}
    for c in copies:
        real = _resolved(root, c.path)
        if real is not None and real.is_dir():
            by_real.setdefault(real, c)
    tree_of: dict[Path, Tree] = {}
    for t, lib in libs:
        tree_of.setdefault(lib, t)
    # the trees' copies first, in the order given, then every other one as found
    ordered = [lib for _, lib in libs if lib in by_real] + list(by_real)
    return copies, [_copy(by_real[real], real, tree_of.get(real)) for real in dict.fromkeys(ordered)]


def _resolved(root: Root, machine_path: str) -> Path | None:
    try:
        return root.resolve(machine_path)
    except (ValueError, OSError):
        return None


def _copy(c: RocblasCopy, real: Path, tree: Tree | None) -> Copy:
    return Copy(c.path, real, rocblas_host_library(real), c.rocm_version, c, tree)


def library_folders(root: Root, trees: Sequence[Tree], installs: Sequence[RocmInstall]) -> list[LibraryFolder]:
    """Every folder whose host libraries may be grafted: the ``lib`` folder of each ROCm install
    (or of each ``--tree``; a library folder itself too), with its ROCm version."""
    out: list[LibraryFolder] = []
    homes = [(r, inst) for inst in installs if (r := _resolved(root, inst.path)) is not None]

    def add(real: Path | None, version: str | None) -> None:
        if real is not None and real.is_dir() and all(o.real != real for o in out):
            out.append(LibraryFolder(root.machine_path(real), real, version))

    def version_of(real: Path) -> str | None:
        for ireal, inst in homes:
            if real == ireal or ireal in real.parents:
                return inst.version
        machine = root.machine_path(real)
        return read_version(root, os.path.dirname(machine.rstrip("/")))[0] or read_version(root, machine)[0]

    if not trees:
        for _ireal, inst in homes:
            add(_resolved(root, f"{inst.path}/lib"), inst.version)
        return out
    for t in trees:
        lib = _resolved(root, f"{t.path.rstrip('/')}/lib")   # a link lib -> lib64 is read inside the machine
        if lib is not None and lib.is_dir():
            add(lib, version_of(t.real))
        elif library_files([t.real], by_content=False):   # a library folder itself
            add(t.real, version_of(t.real))
    return out


@dataclass(frozen=True)
class Selection:
    """What an installing command works on, selected once: the ``--tree`` folders, the rocBLAS
    copies (each with the Python environment it lies in) and, when asked, the library folders."""

    trees: tuple[Tree, ...]
    copies: tuple[Copy, ...]
    folders: tuple[LibraryFolder, ...]


def for_install(root: Root, typed: Sequence[str], *, pythons: Sequence[str] = (),
                libraries: bool = False) -> Selection:
    """``install``'s selection: every copy on the machine, or those in the ``--tree`` folders; with
    ``libraries`` the folders whose host libraries may be grafted too (a ``--tree`` without a
    rocBLAS folder may still hold those). RevError("NOTHING_SUPPORTED") when there is nothing to
    work on; a folder that changes while it is read is one line, exit 2, nothing changed."""
    with _selecting(root):
        trees = given_trees(root, typed)
        installs, _link = find_installs(root)
        folders = library_folders(root, trees, installs) if libraries else []
        envs, _problems = find_envs(root, pythons)
        try:
            copies = rocblas_copies(root, trees, installs=installs, envs=envs)
        except RevError as exc:
            if exc.code != "NOTHING_SUPPORTED" or not folders:
                raise
            copies = []
        homes = [(real, env) for env in envs if (real := _resolved(root, env.site_packages)) is not None]
    if not copies and not folders:
        raise nothing_found(root)
    return Selection(tuple(trees), tuple(replace(c, env=_env_of(c, homes)) for c in copies), tuple(folders))


def _env_of(copy: Copy, homes: Sequence[tuple[Path, PythonEnv]]) -> PythonEnv | None:
    return next((env for real, env in homes if real in copy.real.parents), None)


@contextlib.contextmanager
def _selecting(root: Root):
    """Selection reads folders their owners may move meanwhile (a link gone, a folder renamed):
    such a race is one line, exit 2, nothing changed."""
    try:
        yield
    except OSError as exc:
        raise RevError("USAGE", f"{root.machine_path(exc.filename or '?')} changed while the trees were "
                                f"selected ({(exc.strerror or str(exc)).lower()}); nothing was changed; "
                                f"retry") from None
