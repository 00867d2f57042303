"""``rocmrevive explain`` on what ROCm's math libraries around rocBLAS print (the catalogue's tenth pass: hipBLAS,
hipBLASLt, rocSOLVER, rocSPARSE). Each answered text is the library's own line as its source prints it; each near
miss is a text these entries must NOT answer (a wrong answer is worse than none); a harmless line never takes the
root-cause place from an error in the same paste."""
from __future__ import annotations

import pytest

from rocmrevive.diagnose.catalogue import by_id, sources
from rocmrevive.diagnose.explain import explain_text
from tests.explain_checks import explain_cli

LIBS = ("hipblaslt-could-not-load",)

# hipBLASLt's load lines as an owner pastes them: 2024's bare path, rocm-libraries' quoted one, behind a log prefix
ANSWERED = [
    ("rocblaslt error: Could not load /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat", "gfx906"),
    ('rocblaslt error: Could not load "/opt/rocm-7.0.2/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat"',
     "gfx906"),
    ("rocblaslt error: Could not load /home/me/venv/lib/python3.12/site-packages/torch/lib/hipblaslt/library/"
     "TensileLibrary_lazy_gfx906.dat", "gfx906"),
    ("[rank0]: rocblaslt error: Could not load /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat",
     "gfx906"),
]


@pytest.mark.parametrize("text,arch", ANSWERED)
def test_hipblaslts_load_line_is_harmless_on_gfx906(text, arch):
    (d,) = explain_text(text)
    assert d.rule == "hipblaslt-no-files" and d.severity.value == "harmless" and d.arch == arch
    assert d.fix.startswith("nothing") and "TORCH_BLAS_PREFER_HIPBLASLT" in d.fix
    assert not d.fixable_by_rocmrevive and "gfx906" in d.why_not
    assert by_id()["hipblaslt-could-not-load"].answer_rule == d.rule


def test_rocm_libraries_quoted_directory_form_is_harmless_where_the_paste_names_gfx906():
    paste = ('rocblaslt warning: No paths matched "/opt/rocm/lib/hipblaslt/library". Make sure that '
             "HIPBLASLT_TENSILE_LIBPATH is set correctly.\n"
             'rocblaslt error: Cannot read "/opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat": No such '
             "file or directory\n"
             'rocblaslt error: Could not load "/opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat"\n')
    (d,) = explain_text(paste)  # one answer for the three lines of one cause
    assert d.rule == "hipblaslt-no-files" and d.severity.value == "harmless" and d.arch == "gfx906"


def test_on_another_gpu_the_same_line_stays_a_warning():
    (d,) = explain_text('rocblaslt error: Could not load "/opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx1201.dat"')
    assert d.rule == "hipblaslt-no-files" and d.severity.value == "warning"


# near misses: hipBLASLt's and the neighbours' other texts that share words but name no cause of their own
NEAR_MISSES = [
    "rocblaslt error: Could not initialize Tensile host:",  # the exception text on the next line is the cause
    "rocblaslt error: Could not initialize Tensile library",  # unreachable in the source; never answered
    "Hip error: 'out of memory'(2) at /long_pathname/hipblaslt/library/src/amd_detail/hipblaslt.cpp:148",
    "AMaxWithScale: No valid solution found!",
    "rocsparse_csritilu0_preprocess has detected 12 missing diagonal elements",
    "The matrix is specified as unit triangular but contains 3 diagonal elements",
    "rocsparse_convert_array numerical conversion error 0.5",
    "rocblaslt info: loaded /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx942.dat",
    "rocblas error: Could not load the library",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_answered_by_the_libraries_entries(text):
    assert not {d.rule for d in explain_text(text)} & {"hipblaslt-no-files", *LIBS}


def test_hipblas_status_wrappers_stay_unanswered():
    # a status has several causes and the line names none: no entry answers it (no catch-all)
    for text in ("CUDA error: HIPBLAS_STATUS_NOT_SUPPORTED when calling `hipblasGemmEx(handle, opa, opb)`",
                 "CUDA error: HIPBLAS_STATUS_INTERNAL_ERROR when calling `hipblasCreate(handle)`"):
        assert explain_text(text) == []


def test_a_harmless_hipblaslt_line_never_takes_the_root_cause_place():
    paste = ("rocblaslt warning: No paths matched /opt/rocm/lib/hipblaslt/library/*gfx906*co. Make sure that "
             "HIPBLASLT_TENSILE_LIBPATH is set correctly.\n"
             "rocblaslt error: Cannot read /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat: No such "
             "file or directory\n"
             "rocblaslt error: Could not load /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat\n"
             "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory "
             "for GPU arch : gfx906\n")
    found = explain_text(paste)
    assert found[0].rule != "hipblaslt-no-files" and found[0].severity.value == "error"
    assert "rocblas" in found[0].rule
    lt = [d for d in found if d.rule == "hipblaslt-no-files"]
    assert len(lt) == 1 and lt[0].severity.value == "harmless" and found.index(lt[0]) == len(found) - 1


def test_the_error_after_it_comes_first_with_pytorch():
    paste = ("rocblaslt error: Could not load /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat\n"
             "RuntimeError: HIP error: invalid device function\n")
    rules = [d.rule for d in explain_text(paste)]
    assert rules == ["torch-invalid-device-function", "hipblaslt-no-files"]


def test_the_source_rows_count_the_libraries():
    rows = {s.component: s for s in sources()}
    assert rows["hipBLASLt"].formats == 7 and rows["hipBLASLt"].in_catalogue() == 4
    for quiet in ("hipBLAS", "rocSOLVER", "rocSPARSE"):
        assert rows[quiet].formats == 0 and rows[quiet].in_catalogue() == 0 and rows[quiet].counted


def test_the_cli_answers_with_json_and_exit_code():
    code, out = explain_cli('rocblaslt error: Could not load "/opt/rocm/lib/hipblaslt/library/'
                            'TensileLibrary_lazy_gfx906.dat"')
    assert code == 0 and out, out
    assert out["recognised"] == 1 and [d["rule"] for d in out["diagnoses"]] == ["hipblaslt-no-files"]
    assert out["diagnoses"][0]["severity"] == "harmless" and out["diagnoses"][0]["fixable_by_rocmrevive"] is False
    assert explain_cli("rocblaslt error: Could not initialize Tensile library")[0] == 3


def test_where_hipblaslt_is_forced_rocblas_error_is_the_answer():
    paste = ("rocblaslt error: Cannot read /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat: No such "
             "file or directory\n"
             "rocblaslt error: Could not load /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat\n"
             "rocBLAS error: No hipBLASLt solution found\n")
    found = explain_text(paste)
    assert [d.rule for d in found] == ["rocblas-no-hipblaslt-solution", "hipblaslt-no-files"]
    assert "ROCBLAS_USE_HIPBLASLT" in found[0].fix


def test_with_a_hipblas_status_error_the_hipblaslt_line_is_its_cause():
    # hipBLASLt's load lines, then the failed call as PyTorch (hipified TORCH_CUDABLAS_CHECK) reports it
    paste = ("rocblaslt warning: No paths matched /home/me/venv/lib/python3.10/site-packages/torch/lib/hipblaslt/"
             "library/*gfx906*co. Make sure that HIPBLASLT_TENSILE_LIBPATH is set correctly.\n"
             "RuntimeError: CUDA error: HIPBLAS_STATUS_NOT_SUPPORTED when calling `hipblasLtMatmul(ltHandle, "
             "computeDesc.descriptor(), &alpha_val, mat1_ptr, Adesc.descriptor())`\n")
    (d,) = explain_text(paste)
    assert d.rule == "hipblaslt-no-files" and d.severity.value == "error" and d.arch == "gfx906"
    assert "TORCH_BLAS_PREFER_HIPBLASLT=0" in d.fix and "DISABLE_ADDMM_HIP_LT=1" in d.fix
    assert "called anyway" in d.cause and not d.fixable_by_rocmrevive
    # HIPBLAS_STATUS_SUCCESS is no failure: the line stays harmless
    (ok,) = explain_text(paste.replace("HIPBLAS_STATUS_NOT_SUPPORTED", "HIPBLAS_STATUS_SUCCESS"))
    assert ok.severity.value == "harmless"
