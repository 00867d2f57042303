"""An independent review of the ninth and tenth passes' catalogue entries: each test holds one answer the review
found wrong (a line of another program answered with an entry's gfx906 cause, a paste from Linux taken for one from
Windows, a cause the entry did not name) and now must stay right."""
from __future__ import annotations

import pytest

from rocmrevive.diagnose.explain import explain_text
from tests.explain_checks import explain_cli

# hashcat 7 on Linux with ROCm's OpenCL and without libamdhip64.so/libhiprtc.so: it warns (backend.c prints these
# two texts while it lists an AMD OpenCL device, on every platform), then finds nothing left to run on
HASHCAT_LINUX = ("hashcat (v7.1.2) starting\n\n"
                 "Failed to initialize the AMD main driver HIP runtime library. Please install the AMD HIP SDK.\n\n"
                 "Failed to initialize AMD HIP RTC library. Please install the AMD HIP SDK.\n\n"
                 "No devices found/left.\n")


def test_hashcats_hip_sdk_words_on_linux_do_not_make_the_paste_windows():
    # hashcat 7's backend.c prints 'Please install the AMD HIP SDK.' on every platform; on Linux the paste must keep
    # its Linux steps and must not be told it comes from Windows
    found = explain_text(HASHCAT_LINUX)
    assert sorted(d.rule for d in found) == ["hashcat-hip-library-missing", "hashcat-no-devices"]
    for d in found:
        assert "windows" not in d.details.get("context", {}), d.rule
        assert "Windows" not in (d.why_not or ""), (d.rule, d.why_not)
    devices = next(d for d in found if d.rule == "hashcat-no-devices")
    assert devices.fix and not devices.fix.startswith("on Windows") and "rocminfo" in devices.fix


def test_a_warning_never_comes_before_an_error_of_the_same_paste():
    # hashcat warns that HIP did not load (it goes on with OpenCL), then stops with no device left: the error is the
    # answer, the warning before it comes after it (both are hashcat's, layer 3: only the severity orders them)
    found = explain_text(HASHCAT_LINUX)
    assert [(d.rule, d.severity.value) for d in found] == [("hashcat-no-devices", "error"),
                                                          ("hashcat-hip-library-missing", "warning")]
    code, out = explain_cli(HASHCAT_LINUX, stdin=True)
    assert code == 0 and out and out["diagnoses"][0]["rule"] == "hashcat-no-devices"
    # a warning of a lower layer (the kernel's small BAR, layer 0) does not come before a library's error (layer 2)
    # either, and a harmless line comes after both
    paste = ("/usr/share/libdrm/amdgpu.ids: No such file or directory\n"
             "amdgpu 0000:03:00.0: amdgpu: Not enough PCI address space for a large BAR.\n"
             "rocBLAS error: Could not initialize Tensile host: No devices found\n")
    assert [(d.rule, d.severity.value) for d in explain_text(paste)] == [
        ("rocblas-tensile-init-no-devices", "error"), ("amdgpu-small-bar", "warning"),
        ("libdrm-amdgpu-ids-missing", "harmless")]


def test_hashcat_with_a_windows_drive_path_is_still_windows():
    paste = "PS C:\\hashcat-7.1.2> .\\hashcat.exe -I\n" + HASHCAT_LINUX
    found = explain_text(paste)
    assert found and all("Windows" in (d.why_not or "") for d in found)
    # a Windows paste that names the HIP SDK in its own words stays one
    other = explain_text("rocBLAS error: Could not initialize Tensile host: No devices found\n"
                         "using the HIP SDK 5.7 on this box\n")
    assert other and "Windows" in (other[0].why_not or "")


@pytest.mark.parametrize("text", [
    "[DECODE] WARN: Illegal instruction detected: 00000013 at PC=00000004",  # an RTL simulation's assertion
    "Illegal instruction detected: 0x3F",                                    # an emulator's message box text
    "Illegal instruction detected: Operand has incorrect register class.",   # no compiler diagnostic around it
])
def test_illegal_instruction_words_of_other_programs_are_not_the_amdgpu_backends(text):
    assert explain_text(text) == []


@pytest.mark.parametrize("text", [
    "error: Illegal instruction detected: VOP* instruction violates constant bus restriction",
    "<unknown>:0: error: in function _Z3fooPf void (ptr): Illegal instruction detected: Illegal immediate value "
    "for operand.",
])
def test_the_amdgpu_backends_illegal_instruction_is_still_answered(text):
    assert [d.rule for d in explain_text(text)] == ["llvm-amdgpu-illegal-instruction"]


@pytest.mark.parametrize("text", [
    "LLVM ERROR: Cannot select: 0x55d4c2e1a8f0: v8i32 = X86ISD::VPERMV 0x55d4c2e1a6e8, 0x55d4c2e1a7c0",
    "LLVM ERROR: Cannot select: intrinsic %llvm.x86.avx512.mask.cvtps2dq.512",
    "LLVM ERROR: Cannot select: t21: i64 = AArch64ISD::UADDV t20",
    "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.ldg.global.f",
])
def test_another_targets_cannot_select_is_not_given_gfx906s_causes(text):
    # llvm-cannot-select's causes (an operation gfx906 lacks, an AMDGPU backend bug) are wrong for an x86, Arm or
    # NVPTX node: another compile in the same build failed
    assert explain_text(text) == []


@pytest.mark.parametrize("text", [
    "LLVM ERROR: Cannot select: t7: i64 = AtomicLoadFAdd<(load store seq_cst (s64))> t0, t2, t6",
    "LLVM ERROR: Cannot select: t14: v2f32 = AMDGPUISD::CVT_PKRTZ_F16_F32 t10, t12",
    "LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.mfma.f32.32x32x8f16",
])
def test_amdgpu_cannot_select_is_still_answered(text):
    assert [d.rule for d in explain_text(text)] == ["llvm-cannot-select"]


def test_a_linker_killed_by_a_signal_is_not_called_the_frontend():
    d, = explain_text("clang: error: linker command failed due to signal (use -v to see invocation)")
    assert d.rule == "clang-frontend-signal"
    assert "linker" in d.cause and "(the frontend, cc1)" not in d.cause


def test_memory_critical_error_names_selinux_in_a_container_as_a_cause():
    # node-0 is the CPU agent; on an SELinux host a container may open /dev/kfd but not map it, and ROCr aborts with
    # this line: telling that owner to report the program sends them the wrong way
    paste = ("Memory critical error by agent node-0 (Agent handle: 0x5eac2930) on address 0x7fbb51601000. Reason: "
             "Memory in use. \nAborted (core dumped)\n")
    found = explain_text(paste)
    assert found[0].rule == "hsa-memory-critical-error"
    causes = found[0].details["causes"]
    assert [c["id"] for c in causes] == ["selinux-container-map-denied", "freed-while-in-use"]
    assert "hsa_device_t" in causes[0]["check"] and "SELinux" in causes[1]["check"]
    assert "container_use_devices" in (found[0].fix or "") and "report it to the program" in (found[0].fix or "")
    assert "node-0 is the CPU agent" in found[0].cause


def test_the_cli_answers_the_review_fixes_in_json():
    code, out = explain_cli(HASHCAT_LINUX, stdin=True)
    assert code == 0 and out, out
    assert all("Windows" not in (d.get("why_not") or "") for d in out["diagnoses"])
    for miss in ("LLVM ERROR: Cannot select: 0x1: v8i32 = X86ISD::VPERMV 0x2, 0x3",
                 "[DECODE] WARN: Illegal instruction detected: 00000013 at PC=00000004"):
        assert explain_cli(miss)[0] == 3, miss


def test_lemonades_llama_server_exit_is_not_answered_as_ollamas():
    # lemonade runs llama.cpp's llama-server itself and says so in its own words; the Ollama entry's action
    # (journalctl -u ollama, Ollama's lib/ollama folder) is not that owner's
    assert explain_text("[Error] (WrappedServer) llama-server process has terminated with exit code: 134") == []
    for text in ("Error: llama runner process has terminated: exit status 2",
                 "Error: 500 Internal Server Error: llama-server process has terminated: signal: killed",
                 'msg="Load failed" error="llama runner process has terminated with exit code -1"'):
        assert [d.rule for d in explain_text(text)] == ["ollama-runner-terminated"], text


def test_pytorchs_cuda_error_no_kernel_image_is_not_given_llamacpps_rebuild():
    # llama.cpp's ggml_cuda_error prints 'CUDA error: ...' (before its ROCm rename) at the start of its line;
    # PyTorch raises the same words as RuntimeError, where rebuilding llama.cpp is the wrong way
    paste = ("Traceback (most recent call last):\n"
             '  File "/home/u/venv/lib/python3.10/site-packages/torch/nn/modules/conv.py", line 456, in forward\n'
             "RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    assert all(not d.rule.startswith("ggml-no-kernel-image") for d in explain_text(paste))
    text = "ggml_cuda_compute_forward: ROCm error: no kernel image is available for execution on the device"
    assert [d.rule for d in explain_text(text)] == ["ggml-no-kernel-image"], text
    # CUDA's wording (llama.cpp's HIP builds before the ROCm rename, and every NVIDIA build) only with ROCm in the paste
    # (stop 50: the bare line was answered 'rebuild llama.cpp for gfx906', an NVIDIA owner's too)
    cuda = "CUDA error: no kernel image is available for execution on the device"
    assert explain_text(cuda) == []
    nvidia = ("ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
              + cuda)
    assert explain_text(nvidia) == []
    hip = "ggml_init_cublas: found 1 ROCm devices:\n  Device 0: AMD Radeon VII, compute capability 9.0\n" + cuda
    found = explain_text(hip)
    assert found[0].rule == "ggml-no-kernel-image-cuda-wording" and "AMDGPU_TARGETS=gfx906" in found[0].fix


def test_hashcat_on_windows_gets_no_linux_command():
    # hashcat's actions named both systems ('...; on Windows: ...'), so a Windows paste kept the Linux steps
    # (ldconfig, /etc/OpenCL/vendors, /etc/ld.so.conf.d, rocm-opencl-runtime); each now has its own Windows action
    paste = ("PS C:\\hashcat-7.1.2> .\\hashcat.exe -I\n"
             "clGetPlatformIDs(): CL_PLATFORM_NOT_FOUND_KHR\n"
             "ATTENTION! No OpenCL, HIP or CUDA compatible platform found.\n"
             "Unsupported AMD HIP runtime version '4.2' detected! Falling back to OpenCL...\n"
             "Failed to initialize the AMD main driver HIP runtime library. Please install the AMD HIP SDK.\n")
    found = explain_text(paste)
    assert sorted(d.rule for d in found) == ["hashcat-hip-library-missing", "hashcat-hip-runtime-too-old",
                                             "hashcat-no-runtime", "hashcat-platform-not-found"]
    for d in found:
        fix = d.fix or ""
        assert "Windows" in fix, (d.rule, fix)
        for linux in ("ldconfig", "/etc/", "rocm-opencl-runtime", "hip-runtime-amd", "/opt/rocm", "sudo"):
            assert linux not in fix, (d.rule, linux, fix)
    # the same lines from Linux keep the Linux steps
    linux = explain_text(paste.split("\n", 1)[1])
    assert any("ldconfig" in (d.fix or "") for d in linux if d.rule == "hashcat-hip-library-missing")


_TORCH_CUDA_WORDING = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"


@pytest.mark.parametrize("context", [
    "torch 2.0.1+rocm5.4.2\n",                                                     # a ROCm wheel's version
    "OSError: loading /opt/rocm-5.4.2/lib/librocblas.so\n",                         # ROCm's folder
    "$ HIP_VISIBLE_DEVICES=0 python3 train.py\n",                                   # HIP's own variable
    "  Name:                    gfx906\n",                                          # rocminfo's target
])
def test_pytorchs_cuda_wording_of_no_kernel_image_is_answered_where_the_paste_shows_rocm(context):
    found = explain_text(context + _TORCH_CUDA_WORDING)
    assert [d.rule for d in found] == ["torch-no-kernel-image-cuda-wording"]
    assert "gfx906" in found[0].cause and "rocmrevive audit" in (found[0].fix or "")
    code, out = explain_cli(context + _TORCH_CUDA_WORDING, stdin=True)
    assert code == 0 and out and out["diagnoses"][0]["rule"] == "torch-no-kernel-image-cuda-wording"


@pytest.mark.parametrize("paste", [
    # NVIDIA's: a CUDA wheel, an NVIDIA card, CUDA's notes (ComfyUI, an RTX 2060 with 2.7.1+cu128)
    "torch 2.7.1+cu128, NVIDIA GeForce RTX 2060\n" + _TORCH_CUDA_WORDING
    + "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
      "incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n",
    # no word of either: the words alone are NVIDIA's as much as AMD's
    _TORCH_CUDA_WORDING,
    'File "/home/u/venv/lib/python3.10/site-packages/torch/nn/modules/conv.py", line 456, in forward\n'
    + _TORCH_CUDA_WORDING,
])
def test_pytorchs_cuda_wording_without_rocm_in_the_paste_is_not_answered(paste):
    assert explain_text(paste) == []
    assert explain_cli(paste, stdin=True)[0] == 3
