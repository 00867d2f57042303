"""``rocmrevive explain``: every failure line users reported (captures/error_strings.txt, copied
here verbatim with the rule each must meet), variants with other paths, versions and targets,
and text that must not be recognised."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.diagnose.explain import RULES, explain_line, explain_text

# captures/error_strings.txt, line by line (its first line is a comment), and the rule each
# line must be recognised by.
CAPTURED = [
    ("rocBLAS error: Cannot read /opt/rocm-6.4.0/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx906", "rocblas-tensile-missing"),
    (" List of available TensileLibrary Files : ", "rocblas-tensile-list"),
    ("rocBLAS error: Could not initialize Tensile host:", "rocblas-tensile-init"),
    ("rocBLAS warning: No paths matched /usr/lib64/library/*gfx906*co. Make sure that ROCBLAS_TENSILE_LIBPATH is set correctly.", "rocblas-tensile-no-paths"),
    ("rocBLAS error: Tensile solution found, but kernel not found in any loaded module", "rocblas-kernel-not-found"),
    ("rocBLAS error from hip error code: 'hipErrorInvalidDeviceFunction':98", "rocblas-invalid-device-function"),
    ("ggml_cuda_compute_forward: SOLVE_TRI failed", "llamacpp-op-failed"),
    ("ROCm error: invalid device function", "llamacpp-invalid-device-function"),
    ("Aborted (core dumped)", "process-aborted"),
    ("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", "hip-no-binary-for-gpu"),
    ("Missing CO for these ISAs - ", "hip-no-binary-for-gpu"),
    ("init: Returned hipErrorNoBinaryForGpu : continue parsing remaining modules", "hip-no-binary-for-gpu"),
    ("Cannot retrieve Static function, error: 218", "hip-static-function"),
    ("RuntimeError: HIP error: invalid device function", "torch-invalid-device-function"),
    ("RuntimeError: HIP error: invalid argument", "hip-invalid-argument"),
    ("HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.", "torch-async-error-note"),
    ("Warning: Attempting to use hipBLASLt on an unsupported architecture! Overriding blas backend to hipblas (function operator())", "torch-hipblaslt-unsupported"),
    ("RuntimeError: Attempting to use hipBLASLt on a unsupported architecture!", "torch-hipblaslt-unsupported"),
    ("Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES", "hsa-out-of-resources"),
    ('checkHipErrors() HIP API error = 0100 "no ROCm-capable device is detected"', "hip-no-device"),
    ("Test NCCL failure .../rccl-tests/build/src/hipify/common.cu.cpp:775 'unhandled cuda error (run with NCCL_DEBUG=INFO for details)'", "rccl-failure"),
    ("RuntimeError: NCCL error", "rccl-failure"),
    ('NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!', "rccl-iommu-warning"),
    ('NCCL WARN Missing "HSA_FORCE_FINE_GRAIN_PCIE=1" from environment which can lead to low RCCL performance, system instablity or hang!', "rccl-fine-grain-warning"),
    ('[ { "status": "No supported GPUs", "message": "No compatible ROCm GPUs found on device" } ]', "app-no-supported-gpus"),
    ("At least ROCM/HIP V6.1 is required", "hip-version-too-old"),
    ("WARNING: Skipping device: 0000:04:00.0 Bar size smaller than needed for binary header.", "pci-bar-too-small"),
    ("ERROR: All AMD devices failed IP discovery.", "ip-discovery-failed"),
    ("undefined reference to `std::ios_base_library_init()@GLIBCXX_3.4.32'", "toolchain-newer-runtime"),
    ("undefined reference to `__isoc23_strtol@GLIBC_2.38'", "toolchain-newer-runtime"),
    ("Depends: hipcc (= 1.1.1.60304-76~24.04) but 5.7.1-3 is to be installed", "apt-hipcc-conflict"),
]
HEADER = ("# Verbatim error/warning strings (one per line) collected for rocmrevive's log classifier. "
          "Sources: the public issue trackers of ROCm, rocBLAS, llama.cpp forks, Ollama, LM Studio and others.")


@pytest.mark.parametrize("line,rule", CAPTURED, ids=[f"line{i + 2}" for i in range(len(CAPTURED))])
def test_every_captured_line_is_recognised(line, rule):
    d = explain_line(line)
    assert d is not None and d.rule == rule
    assert d.cause and d.fix and d.library
    assert d.fixable_by_rocmrevive or d.why_not  # a fix, or why rocmrevive has none


def test_the_capture_as_one_log():
    text = "\n".join([HEADER] + [line for line, _ in CAPTURED])
    found = explain_text(text)
    lines = sorted(n for d in found for n in d.lines)
    assert lines == list(range(2, len(CAPTURED) + 2))  # every line but the header
    # the GPU target named on line 2 fills in for lines that name none
    assert {d.arch for d in found if d.library.startswith("rocBLAS")} == {"gfx906"}
    assert {d.rule for d in found} == {r for _, r in CAPTURED}


def test_the_three_no_binary_lines_merge():
    lines = [CAPTURED[9][0], CAPTURED[10][0] + "amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-", CAPTURED[11][0]]
    found = explain_text("\n".join(lines))
    assert [(d.rule, d.arch, d.lines) for d in found] == [
        ("hip-no-binary-for-gpu", "gfx906:sramecc+:xnack-", [1, 2, 3])]


# ------------------------------------------------------------------------------------------
# the same failures with other paths, versions and targets

def test_tensile_missing_other_paths_and_arches():
    d = explain_line("rocBLAS error: Cannot read /usr/lib/x86_64-linux-gnu/rocblas/5/library/"
                     "TensileLibrary.dat: No such file or directory for GPU arch : gfx906")
    assert d.arch == "gfx906" and d.fixable_by_rocmrevive
    assert d.details["library_dir"] == "/usr/lib/x86_64-linux-gnu/rocblas/5/library"
    assert "--tree /usr/lib/x86_64-linux-gnu/rocblas/5/library" in d.fix
    # another GPU: recognised, and rocmrevive says it has no files for it
    d = explain_line("rocBLAS error: Cannot read /home/u/venv/lib/python3.12/site-packages/torch/lib/rocblas/"
                     "library/TensileLibrary.dat: Permission denied for GPU arch : gfx1010:xnack-")
    assert d.rule == "rocblas-tensile-missing" and d.arch == "gfx1010:xnack-"
    assert not d.fixable_by_rocmrevive and "gfx906" in d.why_not
    d = explain_line("rocBLAS warning: No paths matched /opt/rocm-7.1.0/lib/rocblas/library/*gfx90a*co. "
                     "Make sure that ROCBLAS_TENSILE_LIBPATH is set correctly.")
    assert d.arch == "gfx90a" and d.details["searched"].startswith("/opt/rocm-7.1.0")


@pytest.mark.parametrize("line,rule,library,arch", [
    ("Cannot find CO in the bundle /opt/rocm-7.0.2/lib/librocsolver.so.0.6 for ISA: "
     "amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-", "hip-cannot-find-co", "rocSOLVER", "gfx906:sramecc+:xnack-"),
    ("Cannot find CO in the bundle /usr/lib/x86_64-linux-gnu/librccl.so.1.0 for ISA: gfx906",
     "hip-cannot-find-co", "RCCL", "gfx906"),
    ("Missing CO for these ISAs - amdgcn-amd-amdhsa--gfx906:sramecc-:xnack-", "hip-no-binary-for-gpu",
     "HIP runtime", "gfx906:sramecc-:xnack-"),
    ("rocBLAS error from hip error code: 'hipErrorInvalidDeviceFunction':98", "rocblas-invalid-device-function",
     "rocBLAS (host library)", None),
    ("ggml_cuda_compute_forward: MUL_MAT failed", "llamacpp-op-failed", "llama.cpp (ggml-hip)", None),
    ("CUDA error: invalid device function", "llamacpp-invalid-device-function", "llama.cpp (ggml-hip)", None),
    ("hipModuleLaunchKernel failed: hipErrorInvalidDeviceFunction in /opt/rocm/lib/librocsparse.so.1",
     "hip-invalid-device-function", "rocSPARSE", None),
    ("hipLaunchKernel returned hipErrorInvalidDeviceFunction", "hip-invalid-device-function", "HIP runtime", None),
    ("  what():  HIP error: invalid device function", "torch-invalid-device-function", "PyTorch (HIP)", None),
    ("Kernel Cijk_Ailk_Bljk_SB_MT64x64x8 not found in any loaded module.", "rocblas-kernel-not-found",
     "rocBLAS (Tensile)", None),
])
def test_variants(line, rule, library, arch):
    d = explain_line(line)
    assert (d.rule, d.library, d.arch) == (rule, library, arch)


def test_variants_with_numbers():
    d = explain_line("Cannot retrieve Static function, error: 98")
    assert d.details == {"hip_error": 98, "hip_error_name": "hipErrorInvalidDeviceFunction"}
    d = explain_line("Cannot retrieve Static function, error: 218")
    assert "code object version" in d.cause
    d = explain_line("At least ROCM/HIP V6.2 is required")
    assert d.details["required"] == "6.2" and "6.2 or newer" in d.fix
    d = explain_line("WARNING: Skipping device: 0000:c3:00.0 Bar size smaller than needed for binary header.")
    assert d.details["pci"] == "0000:c3:00.0"
    d = explain_line("undefined reference to `memcpy@GLIBC_2.39'")
    assert d.details["version"] == "GLIBC_2.39"
    d = explain_line("Depends: rocm-hip-runtime (= 6.4.3.60403-128~22.04) but 5.7.1-1 is to be installed")
    assert d.details["rocm"] == "6.4.3" and d.details["package"] == "rocm-hip-runtime"
    d = explain_line("Depends: hipcc (= 1.1.1.60304-76~24.04) but 5.7.1-3 is to be installed")
    assert d.details["rocm"] == "6.3.4" and "Pin-Priority" in d.fix
    warn = explain_line(CAPTURED[16][0])
    err = explain_line(CAPTURED[17][0])
    assert (warn.severity, err.severity) == ("warning", "error")
    assert warn.fix == err.fix == "export TORCH_BLAS_PREFER_HIPBLASLT=0"


NEGATIVES = [
    HEADER,
    "",
    "rocBLAS info: loading TensileLibrary_lazy_gfx906.dat",
    "NCCL INFO Bootstrap : Using eth0:192.168.1.10<0>",
    "z292:58192:58200 [2] NCCL INFO [node_id = 4; gpu_id = 9962; location_id = 51200]",
    "llama_model_load: loaded meta data with 19 key-value pairs",
    "Depends: libc6 (>= 2.34) but 2.31-13 is to be installed",
    "The build was aborted (core dumped the logs to /tmp)",
    "We fixed 'HIP error' handling last week",
    "Reading package lists... Done",
    "compute capability: gfx906 works fine now, thanks!",
]


@pytest.mark.parametrize("line", NEGATIVES)
def test_unrelated_text_is_not_recognised(line):
    assert explain_line(line) is None


def test_rule_ids_are_unique():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))


# ------------------------------------------------------------------------------------------
# the command

def test_cli_argument_file_and_stdin(tmp_path):
    r = CliRunner().invoke(cli, ["--json", "explain", "ROCm", "error:", "invalid", "device", "function"])
    doc = json.loads(r.output)
    assert r.exit_code == 0 and doc["diagnoses"][0]["rule"] == "llamacpp-invalid-device-function"

    log = tmp_path / "train.log"
    log.write_text("step 1\nRuntimeError: HIP error: invalid device function\nHIP kernel errors might be "
                   "asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n")
    r = CliRunner().invoke(cli, ["--json", "explain", "--file", str(log)])
    doc = json.loads(r.output)
    assert r.exit_code == 0 and [d["lines"] for d in doc["diagnoses"]] == [[2], [3]]

    r = CliRunner().invoke(cli, ["--json", "explain"], input="all fine\nnothing here\n")
    doc = json.loads(r.output)
    assert r.exit_code == 3 and doc["recognised"] == 0 and doc["error"]["code"] == "NOTHING_SUPPORTED"

    r = CliRunner().invoke(cli, ["explain", "--file", "-"], input=CAPTURED[0][0] + "\n")
    assert r.exit_code == 0
    assert "rocmrevive install --tree /opt/rocm-6.4.0/lib/rocblas/library" in r.output
    assert "cause:" in r.output and "gfx906" in r.output

    r = CliRunner().invoke(cli, ["--json", "explain", "--file", str(tmp_path / "absent.log")])
    assert r.exit_code == 2


def test_a_lone_abort_is_no_answer_but_follows_a_failure_it_ends():
    """bash's "Aborted (core dumped)" names no failure: a paste whose only recognised line it is gets no answer
    (exit 3, as for a paste with nothing recognised), rather than "the cause is in the lines before" about lines
    explain could not read; after a recognised failure it is listed as following from it."""
    unknown = ("terminate called after throwing an instance of 'std::runtime_error'\n"
               "  what():  some library's own error text\nAborted (core dumped)")
    assert explain_text(unknown) == [] and explain_text("Aborted (core dumped)") == []
    assert explain_line("Aborted (core dumped)").rule == "process-aborted"   # the line itself is still known
    r = CliRunner().invoke(cli, ["--json", "explain", unknown])
    assert r.exit_code == 3 and json.loads(r.stdout)["error"]["code"] == "NOTHING_SUPPORTED", r.output
    known = "HIP error: invalid device function\nAborted (core dumped)"
    found = explain_text(known)
    assert [d.rule for d in found][-1] == "process-aborted"
    assert found[-1].details["explained_by"]["line"] == 1
    r = CliRunner().invoke(cli, ["--json", "explain", known])
    assert r.exit_code == 0, r.output
