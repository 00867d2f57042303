"""The rocBLAS minor of a wheel or bundle that ships only ``librocblas.so.N``, from its ROCm
release; and Ollama's support check as Ollama does it (a file-name glob)."""
from __future__ import annotations

import pytest

from rocmrevive.trees.rocblas import ollama_supported, rocblas_of_rocm


@pytest.mark.parametrize("rocm, major, want", [
    ("6.4", "4", "4.4"), ("6.4.43484-123", "4", "4.4"), ("6.3", "4", "4.3"), ("7.2", "5", "5.2"),
    ("7.0", "5", "5.0"), ("7.1", "5", "5.1"),
    ("6.4", "5", None),        # the SONAME disagrees with the ROCm release: not guessed
    ("7.14", "5", None),       # TheRock: not in the table
    (None, "4", None), ("6.4", None, None),
])
def test_rocblas_minor_from_the_rocm_release(rocm, major, want):
    assert rocblas_of_rocm(rocm, major) == want


def test_ollama_glob_takes_file_names_only(tmp_path):
    lib = tmp_path / "rocm_v7_2/rocblas/library"
    lib.mkdir(parents=True)
    for name in ("TensileLibrary_lazy_gfx1030.dat", "TensileLibrary_lazy_gfx906.dat",
                 "TensileLibrary_lazy_gfx90a-xnack+.dat", "TensileLibrary_Type_HH_Contraction_gfx942.dat",
                 "TensileLibrary_lazy_gfx1100.co"):
        (lib / name).write_bytes(b"")
    # Ollama keeps the text between the prefix and ".dat": an xnack-suffixed index names
    # "gfx90a-xnack+", which no device reports, and only .dat files count
    assert ollama_supported(str(lib)) == ["gfx1030", "gfx906", "gfx90a-xnack+"]
    assert ollama_supported(str(tmp_path / "nowhere")) == []
