"""Where things are on a machine: the folders of a tree that hold shared libraries, its rocBLAS
Tensile folders and their ``librocblas.so``, TheRock's ``.kpack`` archives, the system's ROCm
library folders, and which files of a folder are libraries. Only paths and headers are looked at;
which copies a machine has and their versions is ``rocblas.py``'s job, which of them a command
works on is ``select.py``'s.

A tree is whatever holds ROCm libraries: an AMD install (``/opt/rocm-6.4.3``: ``lib/``,
``lib/rocblas/library/``), a distribution's library folder (``/usr/lib/x86_64-linux-gnu``:
``rocblas/4.4.1/library/``), a PyTorch wheel (``torch/lib``: ``rocblas/library/``), or the
rocBLAS library folder itself (docs/architecture.md, "Every copy of rocBLAS").

    rocblas_library_dirs(Path("/opt/rocm-6.4.3"))   # [Path('/opt/rocm-6.4.3/lib/rocblas/library')]
    library_files(system_library_dirs(Root("/")))   # every ROCm library of the machine
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

from rocmrevive.codeobj.sniff import sniff
from rocmrevive.errors import RevError
from rocmrevive.fs import open_regular
from rocmrevive.rootfs import Root
from rocmrevive.trees.installs import find_installs

_TRIPLETS = ("x86_64-linux-gnu", "aarch64-linux-gnu")


def _is_tensile_library(d: Path, nested: bool = True) -> bool:
    """Tensile files in ``d``, or (TheRock 7.14+) in its per-arch folders ``d/gfx…/``."""
    try:
        with os.scandir(d) as it:
            ents = list(it)
    except OSError:
        return False
    return any(e.name.startswith("TensileLibrary") for e in ents) or nested and any(
        re.fullmatch(r"gfx[0-9a-f]+", e.name) and e.is_dir() and _is_tensile_library(Path(e.path), False) for e in ents)


def lib_dirs(tree: Path) -> list[Path]:
    """The folders of ``tree`` that hold shared libraries."""
    out = []
    for sub in ("lib", "lib64", *(f"lib/{t}" for t in _TRIPLETS)):
        if (tree / sub).is_dir():
            out.append(tree / sub)
    if (tree / "torch" / "lib").is_dir():
        out.append(tree / "torch" / "lib")
    return out or [tree]


def rocblas_library_dirs(tree: Path) -> list[Path]:
    """Every rocBLAS Tensile library folder in ``tree`` (the tree may be one itself)."""
    if _is_tensile_library(tree):
        return [tree]
    found: list[Path] = []
    for base in [tree, *lib_dirs(tree)]:
        for cand in (base / "rocblas" / "library", *sorted((base / "rocblas").glob("*/library"))):
            if cand.is_dir() and cand not in found and _is_tensile_library(cand):
                found.append(cand)
    return found


def _so_major(name: str) -> int | None:
    m = re.match(r"^librocblas\.so\.([0-9]+)", name)
    return int(m.group(1)) if m else None


def rocblas_host_library(library: Path) -> Path | None:
    """The ``librocblas.so`` a Tensile library folder belongs to, in the nearest folder above it
    (the most specific name: ``librocblas.so.4.4`` rather than its ``librocblas.so`` link). Where a distribution installs two rocBLAS majors side by side
    (``rocblas/4.4.1/library`` and ``rocblas/5/library``), the folder's version picks the soname."""
    want = None
    parts = library.parts
    if len(parts) >= 2 and re.match(r"^[0-9]+(\.[0-9]+)*$", parts[-2]):
        want = int(parts[-2].split(".")[0])
    d = library.parent
    for _ in range(4):
        cands = []
        try:
            with os.scandir(d) as it:
                for e in it:
                    # a link whose file is gone counts: the loader finds the name and fails
                    if e.name.startswith("librocblas.so") and (e.is_file() or e.is_symlink()):
                        cands.append(e.name)
        except OSError:
            cands = []
        if want is not None:
            cands = [c for c in cands if _so_major(c) in (want, None)] or cands
        if cands:
            # the most specific name is the real file (librocblas.so.4.4 over librocblas.so)
            return d / sorted(cands, key=lambda c: (-len(c), c))[0]
        if d.parent == d:
            break
        d = d.parent
    return None


def tree_library(root: Root, libdir: str, soname: str) -> tuple[str | None, str]:
    """The machine path of the file ``<libdir>/<soname>`` leads to (None when absent) and, when
    it cannot be used, why. Only a regular file in the same folder is grafted over."""
    link = f"{libdir.rstrip('/')}/{soname}"
    if not os.path.lexists(root.path(link)):
        return None, ""
    try:
        real = root.resolve(link)
    except ValueError as exc:
        return None, f"{link}: {exc}"
    if not real.is_file():
        return None, f"{link} leads to {root.machine_path(real)}, which is not a file"
    if real.parent != root.resolve(libdir):
        return None, (f"{link} leads to {root.machine_path(real)}, outside {libdir}; rocmrevive replaces "
                      f"only a library that lives in the tree's own folder")
    return root.machine_path(real), ""


def system_library_dirs(root: Root) -> list[Path]:
    """Folders holding ROCm libraries (real paths): every /opt/rocm* install's lib folders, and a
    system library folder when a HIP runtime lives there."""
    installs, _link = find_installs(root)
    out: list[Path] = []
    for inst in installs:
        out += lib_dirs(root.path(inst.path))
    for p in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64"):
        d = root.path(p)
        if d.is_dir() and any(d.glob("libamdhip64.so*")):
            out.append(d)
    return out


def kpack_files(tree: Path, *, every: bool = False) -> list[Path]:
    """TheRock's ``<tree>/.kpack/*.kpack`` archives (none for other layouts). A ``.kpack`` that is
    a link is not followed (in a user's venv it could name any folder of root's); it is listed
    through its own descriptor, regular files only (``every``: links and FIFOs by those names
    too, for a reader that refuses each with a problem line)."""
    try:
        fd = os.open(tree / ".kpack", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        with os.scandir(fd) as it:
            names = [e.name for e in it if e.name.endswith(".kpack") and (every or e.is_file(follow_symlinks=False))]
    except OSError:
        return []
    finally:
        os.close(fd)
    return sorted(tree / ".kpack" / n for n in names)


def library_files(dirs: Iterable[Path], *, by_content: bool = True) -> list[Path]:
    """Shared libraries directly in ``dirs`` (``lib*.so``, ``lib*.so.N…``), and any other file
    there whose header says device code (``codeobj.sniff``: a HIP library or code object by
    another name), each real file once. Symbolic links are skipped: they name a file of the same
    folder (``librocblas.so.4`` -> ``librocblas.so.4.4``), and following an absolute one could
    leave ``--root``. ``by_content=False`` for a rocBLAS Tensile folder: its code objects are the
    Tensile row's (``tensile_row``)."""
    seen: set[tuple[int, int]] = set()
    out: list[Path] = []
    for d in dirs:
        try:
            with os.scandir(d) as it:
                ents = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in ents:
            named = e.name.startswith("lib") and (e.name.endswith(".so") or ".so." in e.name)
            if (named or (by_content and _has_device_code(e.path))) and first_sight(e, seen):
                out.append(Path(e.path))
    return out


def _has_device_code(path: str) -> bool:
    """The header test of a file by another name (no link followed, never a FIFO)."""
    try:
        fd = open_regular(path)
    except (OSError, RevError):   # a link, a FIFO, a device: not a program file
        return False
    try:
        return sniff(fd, os.fstat(fd).st_size) is not None
    except OSError:
        return False
    finally:
        os.close(fd)


def first_sight(entry: os.DirEntry | Path, seen: set[tuple[int, int]]) -> bool:
    """True for a regular file (not a link) whose device and inode are not in ``seen`` yet (then
    added): how a scan reads each real file once."""
    try:
        if entry.is_symlink() or not entry.is_file():
            return False
        st = entry.stat()
    except OSError:
        return False
    key = (st.st_dev, st.st_ino)
    if key in seen:
        return False
    seen.add(key)
    return True
