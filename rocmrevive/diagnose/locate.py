"""Where rocBLAS and the other libraries sit inside a tree the user names with ``--tree``.

A tree is whatever holds ROCm libraries: an AMD install (``/opt/rocm-6.4.3``: ``lib/``,
``lib/rocblas/library/``), a distribution's library folder (``/usr/lib/x86_64-linux-gnu``:
``rocblas/4.4.1/library/``), a PyTorch wheel (``torch/lib``: ``rocblas/library/``), or the
rocBLAS library folder itself (docs/architecture.md, "Every copy of rocBLAS").

    rocblas_library_dirs(Path("/opt/rocm-6.4.3"))   # [Path('/opt/rocm-6.4.3/lib/rocblas/library')]

Only paths are looked at. Which copies a machine has and their versions is ``trees``' job;
this answers the narrower question "given this folder, where are rocBLAS's files?".
"""
from __future__ import annotations

import os
import re
from pathlib import Path

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
