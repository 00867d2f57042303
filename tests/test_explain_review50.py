"""An independent review of the loader, libdrm, PyTorch 'CUDA error:' wording, vLLM float32 and severity-order
additions to the explain catalogue: each test holds one answer the review found wrong and now must stay right."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.diagnose.explain import explain_text
from tests.explain_checks import explain_cli

# ------------------------------------------------------------------------------------------
# what the loader entries say `rocmrevive install --check` does must be what the command does

_LOADER_LINES = [
    "/opt/rocm/lib/libhipblas.so.2: undefined symbol: rocsolver_sgetrf",
    "python3: symbol lookup error: /opt/rocm/lib/librocblas.so.4: undefined symbol: hipGetDevicePropertiesR0600",
    "/opt/rocm/lib/librocblas.so.4: version `ROCBLAS_4.0' not found (required by /usr/lib/ollama/libggml-hip.so)",
]


def test_install_check_changes_nothing_per_its_help():
    res = CliRunner().invoke(cli, ["install", "--help"])
    assert res.exit_code == 0 and re.search(r"--check.*\n?.*change\s+nothing", res.output)


@pytest.mark.parametrize("line", _LOADER_LINES)
def test_the_loader_answers_say_install_check_only_shows_and_install_applies(line):
    (d,) = explain_text(line)
    fix = d.fix or ""
    # --check plans, fetches and verifies and changes nothing (install --help): the answer must not say it adds files
    assert not re.search(r"install --check: it (?:adds|replaces)", fix), fix
    assert re.search(r"sudo rocmrevive install --check[^;]*chang\w* nothing", fix), fix
    # the step that writes is the install without --check
    assert re.search(r"sudo rocmrevive install(?! --check)\b", fix), fix
    code, out = explain_cli(line + "\n", stdin=True)
    assert code == 0 and out and "install --check: it adds" not in out["diagnoses"][0]["fix"]


# ------------------------------------------------------------------------------------------
# PyTorch's "CUDA error: no kernel image" is answered as ROCm's only where the paste shows ROCm: collect_env's
# report prints 'HIP runtime version: N/A' on every NVIDIA build (torch/utils/collect_env.py), which shows no ROCm

_CUDA_WORDING = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
_NVIDIA_COLLECT_ENV = ("Collecting environment information...\n"
                       "PyTorch version: 2.7.0+cu126\nIs debug build: False\nCUDA used to build PyTorch: 12.6\n"
                       "ROCM used to build PyTorch: N/A\n\nOS: Ubuntu 24.04.2 LTS (x86_64)\n"
                       "Is CUDA available: True\nCUDA runtime version: 12.8.93\n"
                       "GPU models and configuration: GPU 0: NVIDIA GeForce RTX 5090\n"
                       "Nvidia driver version: 570.124.06\ncuDNN version: Could not collect\n"
                       "HIP runtime version: N/A\nMIOpen runtime version: N/A\nIs XNNPACK available: True\n")


def test_an_nvidia_collect_env_report_does_not_make_cuda_wording_rocms():
    paste = _CUDA_WORDING + "\n" + _NVIDIA_COLLECT_ENV
    assert explain_text(paste) == []
    assert explain_cli(paste, stdin=True)[0] == 3


def test_a_rocm_collect_env_report_still_shows_rocm():
    paste = (_CUDA_WORDING + "CUDA used to build PyTorch: N/A\nROCM used to build PyTorch: 6.1.40091-a8dbc0c19\n"
             "HIP runtime version: 6.1.40091\nMIOpen runtime version: 3.1.0\n")
    assert [d.rule for d in explain_text(paste)] == ["torch-no-kernel-image-cuda-wording"]


# ------------------------------------------------------------------------------------------
# vLLM's float32 fallback is printed on NVIDIA's Pascal/Volta/Turing cards too (platforms/cuda.py lists float16 and
# float32 below capability 8.0, so a Gemma 2/3 or GLM-4 falls to float32 on a T4 or V100) and on a CPU without
# bfloat16: the entry's MI50/gfx906 answer is only for an AMD device

@pytest.mark.parametrize("line", [
    "WARNING 10-02 11:00:00 [model.py:1682] Your device 'Tesla T4' (with compute capability 7.5) doesn't support "
    "torch.bfloat16. Falling back to torch.float32 for compatibility.",
    "WARNING 10-02 11:00:00 [model.py:1682] Your device 'Tesla V100-SXM2-32GB' (with compute capability 7.0) doesn't "
    "support torch.bfloat16. Falling back to torch.float32 for compatibility.",
    "WARNING 10-02 11:00:01 [model.py:1682] Your device 'CPU' doesn't support torch.bfloat16. Falling back to "
    "torch.float32 for compatibility.",
])
def test_the_float32_fallback_of_another_vendors_device_is_not_answered_as_gfx906(line):
    assert explain_text(line) == []


@pytest.mark.parametrize("line", [
    "(APIServer pid=71) WARNING 10-02 11:00:00 [model.py:1682] Your device 'AMD Instinct MI50/MI60' (with compute "
    "capability 9.0) doesn't support torch.bfloat16. Falling back to torch.float32 for compatibility.",
    "WARNING 10-02 11:00:00 [model.py:1682] Your device 'AMD Radeon VII' (with compute capability 9.0) doesn't support "
    "torch.bfloat16. Falling back to torch.float32 for compatibility.",
])
def test_the_float32_fallback_of_an_amd_device_is_still_answered(line):
    assert [d.rule for d in explain_text(line)] == ["vllm-bf16-falls-back-to-fp32"]


# ------------------------------------------------------------------------------------------
# the severity order (errors before warnings) must not put a consequence before its cause: TheRock's rocm_sdk warns
# that the framework was compiled against another ROCm release than the environment's rocm package (a warning),
# and the loader then refuses a library of that framework for a ROCm symbol (an error): the mismatch is the cause

_THEROCK_WARNING = ("/home/u/venv/lib/python3.12/site-packages/rocm_sdk/__init__.py:120: UserWarning: The program was "
                    "compiled against a ROCm version matching '7\\.10\\.0.*' but the installed ROCm version in this "
                    "Python environment is 7.9.0rc20251008. This incompatibility may result in unexpected behavior\n"
                    "  warnings.warn(\n")


@pytest.mark.parametrize("refusal,rule", [
    ("ImportError: /home/u/venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so: undefined symbol: "
     "hipblasLtMatmulAlgoGetHeuristic", "rocm-library-undefined-symbol"),
    ("ImportError: /home/u/venv/lib/python3.12/site-packages/_rocm_sdk_core/lib/libamdhip64.so.7: version `hip_7.1' "
     "not found (required by /home/u/venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so)",
     "rocm-library-version-not-found"),
])
def test_therocks_version_mismatch_is_the_cause_of_the_loaders_refusal(refusal, rule):
    found = explain_text(_THEROCK_WARNING + refusal + "\n")
    assert [d.rule for d in found] == ["rocm-sdk-version-mismatch", rule]
    assert found[1].details["explained_by"] == {"rule": "rocm-sdk-version-mismatch", "line": 1}
    code, out = explain_cli(_THEROCK_WARNING + refusal + "\n", stdin=True)
    assert code == 0 and out and out["diagnoses"][0]["rule"] == "rocm-sdk-version-mismatch"


# vLLM's float32 fallback for a bfloat16 model (a warning) doubles the weights' memory; the out-of-memory error that
# follows in the same log (an error) is its consequence: the fallback is the answer, the OOM follows from it

_FP32 = ("(APIServer pid=71) WARNING 10-02 11:00:00 [model.py:1682] Your device 'AMD Instinct MI50/MI60' (with compute "
         "capability 9.0) doesn't support torch.bfloat16. Falling back to torch.float32 for compatibility.\n")
_OOM = ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 31.98 GiB "
        "of which 1.10 GiB is free.\n")


def test_vllms_float32_fallback_is_the_cause_of_the_out_of_memory_after_it():
    found = explain_text(_FP32 + _OOM)
    assert [d.rule for d in found] == ["vllm-bf16-falls-back-to-fp32", "gpu-out-of-memory"]
    assert found[1].details["explained_by"] == {"rule": "vllm-bf16-falls-back-to-fp32", "line": 1}
    code, out = explain_cli(_FP32 + _OOM, stdin=True)
    assert code == 0 and out and out["diagnoses"][0]["rule"] == "vllm-bf16-falls-back-to-fp32"
    # the out-of-memory error alone keeps its own answer
    assert [d.rule for d in explain_text(_OOM)] == ["gpu-out-of-memory"]


# ------------------------------------------------------------------------------------------
# glibc names the object that NEEDS the symbol only when it binds a reference (dl-lookup.c with the referencing map:
# loading, lazy binding). dlsym() on a handle looks the name up in that handle's scope and names the handle
# (dl-sym.c do_sym: undef_map = the handle), the library that LACKS it; Python's ctypes raises that dlerror() as
# AttributeError. The loader entries' answers (the library named was built with HIP 6 headers, ldd it, two releases
# mixed) are about the object that needs the symbol, so the ctypes form must not get them

@pytest.mark.parametrize("line", [
    # a ctypes binding written for HIP 6 asking a ROCm 5 libamdhip64 for an R0600 function
    "AttributeError: /opt/rocm/lib/libamdhip64.so: undefined symbol: hipGetDevicePropertiesR0600",
    # a binding asking the installed libamdhip64 for a function of a later release
    "AttributeError: /opt/rocm/lib/libamdhip64.so.6: undefined symbol: hipMemcpyBatchAsync",
    "    AttributeError: /opt/rocm-6.2.0/lib/librocblas.so.4: undefined symbol: rocblas_gemm_ex3",
])
def test_ctypes_dlsym_refusal_names_the_library_that_lacks_the_symbol_and_is_not_answered_as_a_load(line):
    assert explain_text(line) == []


@pytest.mark.parametrize("line,rule", [
    ("OSError: /opt/rocm/lib/libhipblas.so.2: undefined symbol: rocsolver_sgetrf", "rocm-library-undefined-symbol"),
    ("ImportError: /opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so: undefined symbol: "
     "hipGetDevicePropertiesR0600", "rocm-hip6-symbol-runtime-older"),
    ('msg="failed to load" error="/usr/lib/ollama/rocm/libggml-hip.so: undefined symbol: hipblasGemmEx_v2"',
     "rocm-library-undefined-symbol"),
])
def test_load_time_refusals_are_still_answered(line, rule):
    assert [d.rule for d in explain_text(line)] == [rule]


# ------------------------------------------------------------------------------------------
# the C/C++ runtime refusal's checks told the owner to read 'the path after the first colon'; in the bare dlerror()
# form (Ollama's error="...", a program printing dlerror) nothing but ' version ...' follows the first colon, and the
# only path after it is the ROCm library's, which is never the system's C++ runtime: the check must name the path
# that lacks the version, the one just before ': version'

@pytest.mark.parametrize("line", [
    "/home/u/miniconda3/envs/x/lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by "
    "/opt/rocm/lib/libamdhip64.so.6)",
    'msg="failed to load" error="/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32\' not found '
    '(required by /usr/lib/ollama/rocm/libhipblas.so.2)"',
])
def test_the_c_runtime_checks_name_the_path_that_lacks_the_version(line):
    (d,) = explain_text(line)
    assert d.rule == "rocm-library-needs-newer-libc"
    for c in d.details["causes"]:
        assert "after the first colon" not in c["check"], c
        assert "before ': version" in c["check"], c


def test_the_amdgpu_ids_entry_names_the_libdrm_release_that_first_reads_the_file():
    # mesa-drm 7e6bf88c 'amdgpu: move asic id table to a separate file' (first in libdrm-2.4.82) brought the fopen of
    # amdgpu.ids and its '%s: %s' line; before it the table was compiled in and nothing could be missing
    from rocmrevive.diagnose.catalogue import by_id
    versions = by_id()["libdrm-amdgpu-ids-missing"].versions
    assert versions.startswith("libdrm 2.4.82+") and "2.4.79" not in versions


# ------------------------------------------------------------------------------------------
# LLVM's linker (ld.lld, which ROCm's clang and -fuse-ld=lld use) and mold say a link-time undefined symbol as
# '<linker>: error: undefined symbol: <name>': that is the link entry's failure (hip6-symbol-older-runtime), not the
# loader's refusal of an object named 'error'

@pytest.mark.parametrize("paste", [
    "ld.lld: error: undefined symbol: hipGetDevicePropertiesR0600\n>>> referenced by main.cpp\n"
    ">>>               /tmp/main-abc.o:(main)\n"
    "clang++: error: linker command failed with exit code 1 (use -v to see invocation)\n",
    "mold: error: undefined symbol: hipChooseDeviceR0600\n>>> referenced by bench.o\n",
])
def test_lld_and_molds_link_time_r0600_error_is_the_link_entrys(paste):
    found = explain_text(paste)
    assert [d.rule for d in found] == ["hip6-symbol-older-runtime"]
    assert found[0].details["symbol"] in ("hipGetDevicePropertiesR0600", "hipChooseDeviceR0600")


def test_a_main_program_named_by_argv0_is_still_the_loaders():
    # a main program's name is argv[0] (dl-lookup.c: _dl_argv[0] for the main map's empty name), no dot or slash
    found = explain_text("bench: symbol lookup error: bench: undefined symbol: hipGetDevicePropertiesR0600, "
                         "version hip_6.0")
    assert [d.rule for d in found] == ["rocm-hip6-symbol-runtime-older"] and found[0].details["lib"] == "bench"


def test_a_rocm_soname_inside_a_longer_name_is_not_a_rocm_library():
    # rocm-library-not-found had no boundary before the soname (a doubt the stop-50 review left): another library
    # whose name ends in a ROCm soname is not ROCm's
    assert explain_text("./app: error while loading shared libraries: mylibamdhip64.so.6: cannot open shared object "
                        "file: No such file or directory") == []
    for text in ("./app: error while loading shared libraries: libamdhip64.so.6: cannot open shared object file: No "
                 "such file or directory",
                 "OSError: /opt/rocm/lib/librocblas.so.4: cannot open shared object file: No such file or directory"):
        assert [d.rule for d in explain_text(text)] == ["rocm-library-not-found"], text


@pytest.mark.parametrize("line", [
    "WARNING 10-02 11:00:00 [model.py:1682] Your device 'Tesla T4' (with compute capability 7.5) doesn't support "
    "torch.bfloat16. Falling back to torch.float16 for compatibility.",
    "WARNING 03-01 10:00:00 [config.py:2768] Your Tesla V100-SXM2-32GB device (with compute capability 7.0) doesn't "
    "support torch.bfloat16. Falling back to torch.float16 for compatibility.",
])
def test_the_float16_fallback_on_an_nvidia_card_is_not_given_the_gfx906_reading(line):
    # vllm-bf16-falls-back-to-fp16 answered any device with vllm-gfx906's platform reading (a doubt the stop-50 review
    # left): it now needs an AMD device name, as its float32 sibling does
    assert explain_text(line) == []
