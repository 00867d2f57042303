"""``rocmrevive explain`` on glibc's loader refusing a ROCm library: dl-lookup.c's "undefined symbol: %s%s%s" (after
the object that needs the symbol) and dl-version.c's "version `%s' not found (required by %s)" (after the object that
lacks the version), as the loader prints them at start-up ("<program>: symbol lookup error: ...") and as dlerror()
reaches Python (ImportError, ctypes' OSError) and Ollama's log. Answered only for a ROCm library (or an application's
HIP library missing a ROCm symbol); every near miss is another library's refusal, which these causes do not fit."""
from __future__ import annotations

import re

import pytest

from rocmrevive.diagnose.catalogue import by_id
from rocmrevive.diagnose.explain import explain_text
from tests.explain_checks import answered_alone, cause_ids, explain_cli

MIXED = ["copied-by-hand", "two-rocm-releases-on-the-path", "built-for-a-newer-rocm"]

# (the line as an owner pastes it, the entry, the object the line names)
ANSWERED = [
    ("/opt/rocm/lib/librocblas.so.4: undefined symbol: _ZN7Tensile13LoadLibraryFileERKNSt7__cxx1112basic_stringIcSt11"
     "char_traitsIcESaIcEEE", "rocm-library-undefined-symbol", "/opt/rocm/lib/librocblas.so.4"),
    ("OSError: /opt/rocm/lib/libhipblas.so.2: undefined symbol: rocsolver_sgetrf", "rocm-library-undefined-symbol",
     "/opt/rocm/lib/libhipblas.so.2"),
    ("ImportError: /opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so: undefined symbol: hipblasLtMatmul",
     "rocm-library-undefined-symbol", "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so"),
    ("./llama-server: symbol lookup error: /home/u/llama.cpp/build/bin/libggml-hip.so: undefined symbol: "
     "hipblasGemmEx_v2", "rocm-library-undefined-symbol", "/home/u/llama.cpp/build/bin/libggml-hip.so"),
    ("python3: symbol lookup error: /opt/rocm/lib/librocblas.so.4: undefined symbol: hipGetDevicePropertiesR0600",
     "rocm-hip6-symbol-runtime-older", "/opt/rocm/lib/librocblas.so.4"),
    ("/opt/rocm/lib/librocblas.so.4: version `ROCBLAS_4.0' not found (required by /usr/lib/ollama/libggml-hip.so)",
     "rocm-library-version-not-found", "/opt/rocm/lib/librocblas.so.4"),
    ('time=2026-03-01T10:00:01.000Z level=INFO source=ggml.go:104 msg="failed to load" error="/opt/rocm-6.2.4/lib/'
     "libamdhip64.so.6: version `hip_6.4' not found (required by /usr/lib/ollama/rocm/libggml-hip.so)\"",
     "rocm-library-version-not-found", "/opt/rocm-6.2.4/lib/libamdhip64.so.6"),
]


@pytest.mark.parametrize("text,rule,lib", ANSWERED)
def test_the_loaders_refusal_of_a_rocm_library_is_answered_with_its_causes(text, rule, lib):
    d = answered_alone(text, rule)
    assert d.details["lib"] == lib
    # a library copied in for gfx906 is what rocmrevive's own install replaces, checked before it writes
    assert "sudo rocmrevive install --check" in d.fix and "ABI check" in d.fix
    if rule == "rocm-hip6-symbol-runtime-older":
        assert "older than 6.0" in d.cause and "ldd" in d.fix and "rocmrevive rollback" in d.fix
    else:
        assert cause_ids(text) == MIXED
        # the action names rocmrevive's real commands for the versions and its own files
        assert "rocmrevive detect" in d.fix and "sudo rocmrevive rollback" in d.fix


def test_a_rocm_library_built_for_a_newer_c_runtime_names_both_causes():
    text = ("ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by "
            "/opt/rocm/lib/librocblas.so.4)")
    d = answered_alone(text, "rocm-library-needs-newer-libc")
    assert d.details["by"] == "/opt/rocm/lib/librocblas.so.4" and d.details["ver"] == "GLIBCXX_3.4.32"
    assert cause_ids(text) == ["packages-for-a-newer-distribution", "older-runtime-first-on-the-path"]


# each a loader's refusal these causes do not fit: another library's symbol or version, a torch extension built
# against another torch, an object whose name only holds a ROCm name, the link-time error
NEAR_MISSES = [
    "ImportError: /usr/lib/x86_64-linux-gnu/libcudnn.so.8: undefined symbol: cublasLtMatmul",
    "OSError: /usr/local/lib/libfoo.so.1: undefined symbol: hipMalloc",
    "ImportError: /opt/venv/lib/python3.12/site-packages/torchvision/_C.so: undefined symbol: _ZN3c104cuda9SetDeviceEab",
    "ImportError: /opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so: undefined symbol: "
    "_ZN3c1017RegisterOperatorsD1Ev",
    "/usr/lib/ollama/libggml-hip.so: undefined symbol: ggml_backend_dev_get_props",
    "/opt/app/mylibrocblas.so: undefined symbol: rocblas_sgemm",
    "/opt/rocm/lib/librocblas.so.4: undefined symbol: _ZN3fmt2v96detail18throw_format_errorEPKc",
    "./myprog: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found (required by ./myprog)",
    "/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by /usr/lib/libLLVM-17.so.1)",
    "/usr/lib/libssl.so.3: version `OPENSSL_3.2.0' not found (required by /usr/lib/libcurl.so.4)",
    "./myprog: error while loading shared libraries: libGL.so.1: cannot open shared object file: No such file or "
    "directory",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_another_librarys_refusal_is_not_answered(text):
    assert explain_text(text) == []


def test_the_link_time_r0600_error_stays_the_link_entry():
    found = explain_text("main.cpp:(.text+0x322): undefined reference to `hipGetDevicePropertiesR0600'")
    assert [d.rule for d in found] == ["hip6-symbol-older-runtime"]


# the ROCm libraries each loader entry names: one set, so the four answer the same libraries
ROCM_LIBS = ["libamdhip64", "libhsa-runtime64", "libhsakmt", "librocblas", "libhipblas", "libhipblaslt", "librocsolver",
             "libhipsolver", "librocsparse", "libhipsparse", "libhipsparselt", "librocfft", "libhipfft", "librocrand",
             "libhiprand", "libMIOpen", "librccl", "libroctracer64", "libroctx64", "librocprofiler-register",
             "librocm_smi64", "libamd_smi", "libamd_comgr", "libhiprtc", "librocroller", "libmigraphx"]


@pytest.mark.parametrize("name", ROCM_LIBS)
def test_the_loader_entries_answer_the_same_rocm_libraries(name):
    lines = {
        "rocm-library-not-found": f"ImportError: {name}.so.1: cannot open shared object file: No such file or directory",
        "rocm-library-undefined-symbol": f"/opt/rocm/lib/{name}.so.1: undefined symbol: hipMemcpyWithStream",
        "rocm-library-version-not-found": f"/opt/rocm/lib/{name}.so.1: version `X_1.0' not found (required by ./app)",
        "rocm-library-needs-newer-libc": f"/lib/libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by "
                                         f"/opt/rocm/lib/{name}.so.1)",
    }
    for rule, line in lines.items():
        assert [d.rule for d in explain_text(line)] == [rule], line
    # an application's HIP library is answered for a missing ROCm symbol only (its own symbols are its own build's)
    assert not re.search(by_id()["rocm-library-not-found"].pattern, "libtorch_hip.so: cannot open shared object file")


def test_the_command_answers_a_start_up_refusal_with_its_causes():
    code, out = explain_cli("python3: symbol lookup error: /opt/rocm/lib/libhipblas.so.2: undefined symbol: "
                            "rocsolver_sgetrf\n", stdin=True)
    assert code == 0 and out and out["recognised"] == 1
    (d,) = out["diagnoses"]
    assert d["rule"] == "rocm-library-undefined-symbol" and d["fixable_by_rocmrevive"] is False
    assert [c["id"] for c in d["details"]["causes"]] == MIXED
    assert explain_cli("OSError: /usr/local/lib/libfoo.so.1: undefined symbol: hipMalloc\n", stdin=True)[0] == 3
