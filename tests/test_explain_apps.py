"""``rocmrevive explain`` on what the applications gfx906 owners run print about the GPU, and on the OpenCL stack
(the catalogue's ninth pass: hashcat, Blender's Cycles HIP, stable-diffusion-webui, PyTorch's CPU-only build, the
OpenCL driver's build log, clinfo). Each answered text is the application's own line, as its source prints it;
each near miss is a text those entries must NOT answer (a wrong answer is worse than none)."""
from __future__ import annotations

import pytest

from rocmrevive.diagnose.explain import explain_text
from tests.explain_checks import answered_alone, cause_ids, explain_cli

NINTH = ("ocl-code-object-load-failed", "clinfo-no-platforms", "hashcat-platform-not-found", "hashcat-no-runtime",
         "hashcat-hip-runtime-too-old", "hashcat-hip-library-missing", "hashcat-no-devices", "blender-hip-rdna-required",
         "blender-hip-compute-capability", "sdwebui-torch-gpu-test", "torch-not-compiled-with-cuda")

# variants an owner pastes: other names, numbers, prefixes, and the other forms each entry's pattern takes
ANSWERED = [
    ("Error: AMD HSA Code Object loading failed.", "ocl-code-object-load-failed"),
    ("Number of platforms                               0", "clinfo-no-platforms"),
    ("clGetPlatformIDs(): CL_PLATFORM_NOT_FOUND_KHR", "hashcat-platform-not-found"),
    ("ATTENTION! No OpenCL, HIP or CUDA installation found.", "hashcat-no-runtime"),
    ("ATTENTION! No OpenCL, Metal, HIP or CUDA compatible platform found.", "hashcat-no-runtime"),
    ("Unsupported AMD HIP runtime version '5.7.31921' detected! Falling back to OpenCL...", "hashcat-hip-runtime-too-old"),
    ("Unsupported AMD HIP runtime version '4.2' detected! Falling back to OpenCL...", "hashcat-hip-runtime-too-old"),
    ("Failed to initialize the AMD main driver HIP runtime library. Please install the AMD HIP SDK.",
     "hashcat-hip-library-missing"),
    ("Failed to initialize AMD HIP RTC library. Please install the AMD HIP SDK.", "hashcat-hip-library-missing"),
    ("No devices found/left.", "hashcat-no-devices"),
    ("HIP backend requires AMD RDNA graphics card or up, but found AMD Instinct MI60 / MI50.", "blender-hip-rdna-required"),
    ("HIP backend requires compute capability 10.1 or up, but found 9.0. Your GPU is not supported.",
     "blender-hip-compute-capability"),
    ("RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to disable "
     "this check", "sdwebui-torch-gpu-test"),
    ("AssertionError: Torch not compiled with CUDA enabled", "torch-not-compiled-with-cuda"),
]


@pytest.mark.parametrize("text,rule", ANSWERED)
def test_the_applications_lines_are_answered_by_their_entries(text, rule):
    answered_alone(text, rule)


# near misses: other statuses, other counts, other programs' texts with some of the same words
NEAR_MISSES = [
    "[08:34:15] Error CL_BUILD_PROGRAM_FAILURE when calling clBuildProgram",  # a miner's own line, no cause in it
    "clBuildProgram(): CL_BUILD_PROGRAM_FAILURE",  # hashcat's: the build log after it tells why; several causes
    "clBuildProgram failed: error -11",
    "Error CL_INVALID_KERNEL_NAME when calling clCreateKernel for kernel 'blake_512_80'",
    "Number of platforms                               1",
    "Number of platforms                               10",
    "Number of devices                                 0",  # any platform (Mesa's lists 0 for this card): no cause
    "clGetPlatformIDs(): CL_OUT_OF_HOST_MEMORY",
    "ATTENTION! OpenCL kernel self-test failed.",
    "Successfully initialized AMD HIP RTC library.",
    "Successfully initialized the AMD main driver HIP runtime library.",
    "Unsupported HIP version 3.5 detected, you need HIP 4.0 or newer.",  # Blender's hipcc check, not hashcat's
    "HIP binary kernel for this graphics card compute capability (10.3) not found.",  # never reached by gfx906
    "AssertionError: Torch not compiled with XPU enabled",
    "Torch is not able to use GPU",  # a paraphrase, not the webui's line
    "Device: cuda:0 AMD Radeon VII : native",  # ComfyUI's device line: the card works
    "Unsupported GPU Processing Mode",  # DaVinci Resolve's: Blackmagic documents no cause for it
    "* Device #1: Skipping (hash-mode 22000)",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_answered_by_the_ninth_pass(text):
    assert not {d.rule for d in explain_text(text)} & set(NINTH)


def test_tensile_no_devices_is_not_hashcats_no_devices():
    found = explain_text("rocBLAS error: Could not initialize Tensile host: No devices found")
    assert found and found[0].rule == "rocblas-tensile-init-no-devices"


def test_rocms_form_of_the_code_object_line_keeps_the_status_answer():
    text = ("Error: AMD HSA Code Object loading failed: HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is "
            "invalid.")
    assert "ocl-code-object-load-failed" not in {d.rule for d in explain_text(text)}


def test_several_causes_each_with_its_check():
    for text, ids in (("No devices found/left.", ["no-gpu-listed", "all-devices-skipped", "filtered-out"]),
                      ("Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to "
                       "disable this check", ["not-a-rocm-build", "hip-sees-no-gpu"])):
        assert cause_ids(text) == ids


def test_hashcats_runtime_lines_come_before_no_devices_and_explain_it():
    paste = ("clGetPlatformIDs(): CL_PLATFORM_NOT_FOUND_KHR\n"
             "ATTENTION! No OpenCL, HIP or CUDA compatible platform found.\n"
             "You are probably missing the OpenCL, CUDA or HIP runtime installation.\n"
             "No devices found/left.\n")
    found = explain_text(paste)
    assert [d.rule for d in found] == ["hashcat-platform-not-found", "hashcat-no-runtime", "hashcat-no-devices"]
    assert found[1].details["explained_by"]["rule"] == "hashcat-platform-not-found"
    assert found[2].details["explained_by"]["rule"] in ("hashcat-platform-not-found", "hashcat-no-runtime")


def test_a_windows_paste_gets_the_windows_action():
    paste = ("Traceback (most recent call last):\n"
             '  File "C:\\sd\\stable-diffusion-webui\\launch.py", line 48, in <module>\n'
             "RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to "
             "disable this check\n")
    d = explain_text(paste)[0]
    assert d.rule == "sdwebui-torch-gpu-test" and d.fix.startswith("on Windows") and "rocmrevive" not in d.fix
    linux = explain_text(paste.replace("C:\\sd\\", "/home/me/"))[0]
    assert "rocmrevive doctor" in linux.fix and "torch.version.hip" in linux.fix


def test_blender_answers_name_the_application_limit_not_rocm():
    d = explain_text("HIP backend requires AMD RDNA graphics card or up, but found AMD Radeon VII.")[0]
    assert "RDNA" in d.cause and "9.0" in d.cause and "CPU" in d.fix
    assert "Blender" in d.why_not


def test_the_cli_answers_with_json_and_exit_code():
    code, out = explain_cli("HIP backend requires compute capability 10.1 or up, but found 9.0. Your GPU is not "
                            "supported.")
    assert code == 0 and out, out
    assert out["recognised"] == 1 and [d["rule"] for d in out["diagnoses"]] == ["blender-hip-compute-capability"]
    assert out["diagnoses"][0]["fixable_by_rocmrevive"] is False and "9.0" in out["diagnoses"][0]["text"]
    assert explain_cli("Number of platforms                               2")[0] == 3
