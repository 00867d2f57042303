"""Where rocBLAS reads a processor's Tensile files: the library folder itself, or TheRock's per-arch
folder ``library/<processor>/`` (rocm-kpack's rocBLAS database handler accepts both layouts,
rocm-libraries#5976).

    tensile_folder(Path("/opt/rocm/core-7.14/lib/rocblas/library"), "gfx906")   # …/library/gfx906
"""
from __future__ import annotations

import os
from pathlib import Path


def tensile_folder(library: Path, processor: str) -> Path:
    """The folder rocBLAS reads ``processor``'s Tensile files from: TheRock's per-arch folder
    ``library/<processor>/`` when there is one, else ``library`` itself."""
    sub = library / processor
    try:
        return sub if sub.is_dir() and any(n.startswith("TensileLibrary") for n in os.listdir(sub)) else library
    except OSError:   # unreadable (a user's folder, or gone meanwhile): rocBLAS could not read it either
        return library
