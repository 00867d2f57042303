"""explain on the LLM runtimes as they are now (the catalogue's ninth pass, issue 38): Ollama 0.12+ (runner
discovery, llama-server), llama.cpp's current ggml-hip lines and vLLM's ROCm platform. Pastes shaped as these
runtimes print them; harmless and context lines never come before an error in the same paste; several causes
come with their checks; texts that look alike but are not these messages get no answer."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rocmrevive.diagnose.catalogue import by_id
from rocmrevive.diagnose.explain import explain_line, explain_text
from tests.conftest import REPO
from tests.test_contract_readonly import env

# the device lines llama.cpp prints at start on an MI50 (three shapes of the device line over the versions)
GGML_START = """ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no
ggml_cuda_init: GGML_CUDA_FORCE_CUBLAS: no
ggml_cuda_init: found 1 ROCm devices (Total VRAM: 32752 MiB):
  Device 0: AMD Radeon Graphics, gfx906:sramecc+:xnack- (0x906), VMM: no, Wave Size: 64, VRAM: 32752 MiB
"""


def _quiet_after_errors(found) -> None:
    """No harmless or context line comes before an error that nothing else in the paste explains."""
    kinds = [(d.severity in ("harmless", "context"), "explained_by" in d.details) for d in found]
    first_quiet = next((i for i, (quiet, _) in enumerate(kinds) if quiet), len(kinds))
    assert all(quiet or explained for quiet, explained in kinds[first_quiet:]), [(d.rule, d.severity) for d in found]


def _rules(text: str) -> list[tuple[str, str | None]]:
    return [(d.rule, (d.details.get("explained_by") or {}).get("rule")) for d in explain_text(text)]


@pytest.mark.parametrize("line", [
    "ggml_cuda_init: found 2 ROCm devices:",
    "ggml_cuda_init: found 1 ROCm devices (Total VRAM: 16368 MiB):",
])
def test_the_device_count_is_harmless(line):
    d = explain_line(line)
    assert d.rule == "ggml-cuda-found-devices" and d.severity == "harmless" and d.fix.startswith("nothing")


@pytest.mark.parametrize("line,arch", [
    ("  Device 0: AMD Radeon Graphics, gfx906:sramecc+:xnack- (0x906), VMM: no, Wave Size: 64", "gfx906:sramecc+:xnack-"),
    ("  Device 1: AMD Radeon VII, gfx906:sramecc-:xnack- (0x906), VMM: no, Wave Size: 64, ID: 0", "gfx906:sramecc-:xnack-"),
    ("  Device 0: AMD Instinct MI60 / MI50, gfx906:sramecc+:xnack- (0x906), VMM: no, Wave Size: 64, VRAM: 32752 MiB",
     "gfx906:sramecc+:xnack-"),
])
def test_the_device_line_is_harmless_and_reads_the_target(line, arch):
    d = explain_line(line)
    assert d.rule == "ggml-cuda-device-line" and d.severity == "harmless" and d.arch == arch
    assert "VMM: no" in d.cause and "does not say the build has code" in d.cause


def test_device_lines_never_come_before_the_error_of_the_same_paste():
    text = GGML_START + ("ROCm error: invalid device function\n"
                         "  current device: 0, in function ggml_cuda_compute_forward at ggml-cuda.cu:2313\n")
    got = explain_text(text)
    assert got[0].rule == "llamacpp-invalid-device-function"
    _quiet_after_errors(got)
    assert [d.rule for d in got if d.severity == "harmless"] == ["ggml-cuda-found-devices", "ggml-cuda-device-line"]
    # alone, the device lines are answered: harmless information, not a failure
    alone = explain_text(GGML_START)
    assert {d.severity for d in alone} == {"harmless"} and len(alone) == 2


def test_vram_exhausted_the_allocator_lines_and_the_load_wrappers_follow_the_cudamalloc_line():
    text = GGML_START + """load_tensors: offloading 48 repeating layers to GPU
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 17408.00 MiB on device 0: cudaMalloc failed: out of memory
alloc_tensor_range: failed to allocate ROCm0 buffer of size 18253611008
llama_model_load: error loading model: unable to allocate ROCm0 buffer
llama_model_load_from_file_impl: failed to load model
srv    load_model: failed to load model, '/models/qwen2.5-32b-q4_k_m.gguf'
srv    operator(): operator(): cleaning up before exit...
main: exiting due to model loading error
"""
    got = explain_text(text)
    assert got[0].rule == "gpu-out-of-memory"
    rules = [d.rule for d in got]
    for rule in ("ggml-rocm-buffer-alloc-failed", "llamacpp-unable-to-allocate-rocm-buffer",
                 "llamacpp-model-load-failed", "llamacpp-server-load-failed", "llamacpp-server-exiting"):
        assert rule in rules
    # the allocator's and the loader's lines follow from the cudaMalloc line; no harmless or context line before it
    follows = {d.rule: (d.details.get("explained_by") or {}).get("rule") for d in got}
    assert follows["ggml-rocm-buffer-alloc-failed"] == "gpu-out-of-memory"
    assert follows["llamacpp-unable-to-allocate-rocm-buffer"] in ("gpu-out-of-memory", "ggml-rocm-buffer-alloc-failed")
    _quiet_after_errors(got)
    # without the cudaMalloc line, the allocator's line is the root and the loader's follows from it
    alone = explain_text("\n".join(text.splitlines()[6:]))
    assert alone[0].rule == "ggml-rocm-buffer-alloc-failed" and "explained_by" not in alone[0].details
    loader = next(d for d in alone if d.rule == "llamacpp-unable-to-allocate-rocm-buffer")
    assert loader.details["explained_by"]["rule"] == "ggml-rocm-buffer-alloc-failed"
    server = next(d for d in got if d.rule == "llamacpp-server-load-failed")
    assert server.details["path"] == "/models/qwen2.5-32b-q4_k_m.gguf" and server.severity == "context"


def test_no_kernel_image_is_the_missing_gfx906_code_and_its_epilogue_follows():
    text = ("ROCm error: no kernel image is available for execution on the device\n"
            "  current device: 0, in function ggml_cuda_compute_forward at ggml/src/ggml-cuda/ggml-cuda.cu:2512\n"
            "  err\n"
            "/src/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:84: ROCm error\n")
    got = explain_text(GGML_START + text)
    assert got[0].rule == "ggml-no-kernel-image" and "AMDGPU_TARGETS=gfx906" in got[0].fix
    follows = {d.rule: (d.details.get("explained_by") or {}).get("rule") for d in got}
    assert follows["ggml-error-location"] == follows["ggml-abort"] == "ggml-no-kernel-image"
    _quiet_after_errors(got)
    # in an Ollama log the answer points at Ollama's bundled backend
    ollama = explain_text("ollama serve\n" + text)[0]
    assert ollama.rule == "ggml-no-kernel-image" and "Ollama's bundled libggml-hip" in ollama.fix


def test_the_pinned_memory_warning_is_harmless_in_both_of_its_shapes():
    for line in ("ggml_cuda_host_malloc: failed to allocate 2048.00 MiB of pinned memory: out of memory",
                 "WARNING: failed to allocate 512.00 MB of pinned memory: invalid argument"):
        d = explain_line(line)
        assert d.rule == "ggml-pinned-memory" and d.severity == "harmless" and "GGML_CUDA_NO_PINNED" in d.fix


def test_no_backends_loaded_points_at_the_backend_libraries():
    d = explain_line("llama_model_load_from_file_impl: no backends are loaded. hint: use ggml_backend_load() or "
                     "ggml_backend_load_all() to load a backend before calling this function")
    assert d.rule == "ggml-no-backends-loaded" and d.severity == "error" and "libggml-hip.so" in d.fix


# ------------------------------------------------------------------------------------------
# Ollama 0.12+

OLLAMA_030 = """time=2026-08-30T09:12:01.101Z level=INFO source=runner.go:60 msg="discovering available GPUs..."
time=2026-08-30T09:12:03.412Z level=WARN source=amd.go:470 msg="dropping ROCm device — no rocblas support for gfx target" \
device="AMD Radeon Graphics" gfx_target=gfx906 supported="map[gfx1030:true gfx1100:true gfx908:true gfx90a:true]" \
hint="set HSA_OVERRIDE_GFX_VERSION to map to a supported target"
time=2026-08-30T09:12:03.500Z level=INFO source=types.go:50 msg="inference compute" id=cpu library=cpu compute="" \
name=cpu description=cpu libdirs=ollama driver="" pci_id="" type="" total="62.7 GiB" available="58.1 GiB"
"""


def test_ollama_030_drops_the_gfx906_and_runs_on_the_cpu():
    got = explain_text(OLLAMA_030)
    assert [d.rule for d in got] == ["ollama-rocm-device-dropped", "ollama-inference-compute-cpu"]
    first = got[0]
    assert first.arch == "gfx906" and first.severity == "error" and not first.fixable_by_rocmrevive
    assert "HSA_OVERRIDE_GFX_VERSION, does not help" in first.cause and "OLLAMA_VULKAN=1" in first.fix
    assert got[1].severity == "context"


def test_the_cpu_line_of_ollama_up_to_0_12_3_is_the_same_context():
    old = ('time=2025-08-01T10:00:00Z level=INFO source=types.go:130 msg="inference compute" id=0 library=cpu '
           'variant=avx2 compute="" driver=0.0 name="" total="62.7 GiB" available="58.1 GiB"')
    assert explain_line(old).rule == "ollama-inference-compute-cpu"
    # a GPU whose library is named cpu-something is not the CPU line
    assert explain_line(old.replace("library=cpu", "library=cpuhelper")) is None


def test_a_mangled_dash_still_reads_as_the_dropped_device():
    line = 'msg="dropping ROCm device \u00e2\u20ac\u201d no rocblas support for gfx target" gfx_target=gfx906'
    assert explain_line(line).rule == "ollama-rocm-device-dropped"


def test_the_gpu_in_use_line_is_harmless_and_never_first():
    gpu = ('time=2025-09-20T08:00:00Z level=INFO source=types.go:131 msg="inference compute" id=0 library=rocm '
           'variant="" compute=gfx906 driver=6.3 name=1002:66af total="16.0 GiB" available="15.7 GiB"')
    d = explain_line(gpu)
    assert d.rule == "ollama-inference-compute-rocm" and d.severity == "harmless" and d.arch == "gfx906"
    text = gpu + "\nError: llama runner process has terminated: exit status 2\n"
    assert [r for r, _ in _rules(text)] == ["ollama-runner-terminated", "ollama-inference-compute-rocm"]


@pytest.mark.parametrize("line,cause", [
    ('time=2025-10-10T10:00:00Z level=INFO source=runner.go:462 msg="failure during GPU discovery" '
     'OLLAMA_LIBRARY_PATH="[/usr/lib/ollama /usr/lib/ollama/rocm]" extra_envs=map[] '
     'error="failed to finish discovery before timeout"', "discovery-timeout"),
    ('time=2026-08-30T09:12:03Z level=INFO source=runner.go:522 msg="failure during llama-server GPU discovery" '
     'OLLAMA_LIBRARY_PATH="[/usr/lib/ollama /usr/lib/ollama/rocm_v7_2]" extra_envs=map[] '
     'error="llama-server --list-devices failed: exit status 1" detail=""', "runner-error"),
])
def test_the_discovery_failure_names_its_causes_with_their_checks(line, cause):
    d = explain_line(line)
    assert d.rule == "ollama-discovery-failure" and d.severity == "warning"
    causes = d.details["causes"]
    assert [c["id"] for c in causes] == ["discovery-timeout", "runner-crashed", "runner-error"]
    assert all(c["check"] for c in causes)
    # the error= text each check names is the line's own
    check = next(c["check"] for c in causes if c["id"] == cause)
    assert ("failed to finish discovery before timeout" in check) == (cause == "discovery-timeout")
    assert ("exit status N" in check) == (cause == "runner-error")


def test_the_watchdog_timeout_is_the_cause_of_the_discovery_failure_after_it():
    text = ('time=2026-08-30T09:12:33Z level=WARN source=runner.go:584 msg="llama-server GPU discovery watchdog timed '
            'out" OLLAMA_LIBRARY_PATH="[/usr/lib/ollama /usr/lib/ollama/rocm_v7_2]" extra_envs=map[] '
            'error="context deadline exceeded"\n'
            'time=2026-08-30T09:12:33Z level=INFO source=runner.go:522 msg="failure during llama-server GPU discovery" '
            'OLLAMA_LIBRARY_PATH="[/usr/lib/ollama /usr/lib/ollama/rocm_v7_2]" extra_envs=map[] '
            'error="context deadline exceeded" detail=""\n')
    assert _rules(text) == [("ollama-discovery-watchdog", None), ("ollama-discovery-failure", "ollama-discovery-watchdog")]


def test_the_override_warning_names_the_variable_and_is_context():
    text = ('time=2026-01-02T10:00:00Z level=WARN source=runner.go:536 msg="user overrode visible devices" '
            'HSA_OVERRIDE_GFX_VERSION=9.0.8\n'
            'time=2026-01-02T10:00:00Z level=WARN source=runner.go:540 msg="if GPUs are not correctly discovered, unset '
            'and try again"\n')
    got = explain_text(text)
    assert len(got) == 1 and got[0].rule == "ollama-override-visible-devices" and got[0].lines == [1, 2]
    assert got[0].severity == "context" and got[0].details["var"] == "HSA_OVERRIDE_GFX_VERSION"
    assert "systemctl edit ollama" in got[0].fix


def test_the_system_memory_refusal_names_the_dropped_gpu_as_a_cause():
    d = explain_line("Error: model requires more system memory (35.2 GiB) than is available (30.9 GiB)")
    assert d.rule == "ollama-system-memory" and d.details["need"] == "35.2 GiB" and d.details["free"] == "30.9 GiB"
    assert [c["id"] for c in d.details["causes"]] == ["gpu-not-used", "model-too-large"]
    assert "library=cpu" in d.details["causes"][0]["check"]
    # with the log's CPU line in the paste, the refusal is the answer and the CPU line the context after it
    text = OLLAMA_030.splitlines()[-1] + "\nError: model requires more system memory (35.2 GiB) than is available (30.9 GiB)"
    assert [r for r, _ in _rules(text)] == ["ollama-system-memory", "ollama-inference-compute-cpu"]


def test_llama_server_texts_of_ollama_030():
    d = explain_line("Error: llama-server process has terminated: exit status 2: ROCm error: out of memory")
    assert d.rule == "ollama-runner-terminated" and d.details["reason"].startswith("exit status 2")
    d = explain_line("Error: llama-server reported out-of-memory during startup: ggml_backend_cuda_buffer_type_alloc_"
                     "buffer: allocating 14336.00 MiB on device 0: cudaMalloc failed: out of memory")
    assert d.rule == "ollama-llama-server-oom" and "num_ctx" in d.fix
    d = explain_line("Error: model runner has unexpectedly stopped, this may be due to resource limitations or an "
                     "internal error, check ollama server logs for details")
    assert d.rule == "ollama-runner-stopped" and d.severity == "error" and "journalctl -u ollama" in d.fix
    assert by_id()["ollama-runner-terminated"].covers == 2


# ------------------------------------------------------------------------------------------
# vLLM's ROCm platform

def test_vllm_backend_override_and_xgmi_are_harmless_and_never_first():
    text = ("INFO 08-30 10:00:00 [rocm.py:512] Found incompatible backend(s) [ROCM_ATTN] with AttentionType.DECODER. "
            "Overriding with TRITON_ATTN out of potential backends: ['TRITON_ATTN'].\n"
            "ERROR 08-30 10:00:01 [rocm.py:640] AMD 1 hop XGMI detection failed.\n"
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "31.98 GiB of which 1.10 GiB is free.\n")
    got = explain_text(text)
    assert got[0].severity == "error" and got[0].rule not in ("vllm-attention-backend-override",
                                                              "vllm-xgmi-detection-failed")
    quiet = {d.rule: d for d in got[1:]}
    assert quiet["vllm-attention-backend-override"].details["backend"] == "TRITON_ATTN"
    assert quiet["vllm-xgmi-detection-failed"].severity == "harmless"


@pytest.mark.parametrize("line", [
    "(APIServer pid=71) WARNING 10-02 11:00:00 [model.py:1682] Your device 'AMD Radeon Graphics' (with compute "
    "capability 9.0) doesn't support torch.bfloat16. Falling back to torch.float16 for compatibility.",
    "WARNING 03-01 10:00:00 [config.py:2768] Your AMD Instinct MI50/MI60 device (with compute capability 9.0) doesn't "
    "support torch.bfloat16. Falling back to torch.float16 for compatibility.",
])
def test_the_bf16_fallback_of_vllm_gfx906_is_harmless_in_both_wordings(line):
    d = explain_line(line)
    assert d.rule == "vllm-bf16-falls-back-to-fp16" and d.severity == "harmless" and "--dtype float16" in d.fix


def test_the_bf16_fallback_never_comes_before_an_error():
    text = ("WARNING [model.py:1682] Your device 'AMD Radeon Graphics' (with compute capability 9.0) doesn't support "
            "torch.bfloat16. Falling back to torch.float16 for compatibility.\n"
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "15.98 GiB of which 1.10 GiB is free.\n")
    got = explain_text(text)
    assert got[0].severity == "error" and got[-1].rule == "vllm-bf16-falls-back-to-fp16"
    _quiet_after_errors(got)


@pytest.mark.parametrize("line", [
    "(APIServer pid=71) WARNING 10-02 11:00:00 [model.py:1682] Your device 'AMD Instinct MI50/MI60' (with compute "
    "capability 9.0) doesn't support torch.bfloat16. Falling back to torch.float32 for compatibility.",
    "WARNING 03-01 10:00:00 [config.py:2768] Your AMD Radeon Graphics device (with compute capability 9.0) doesn't "
    "support torch.bfloat16. Falling back to torch.float32 for compatibility.",
])
def test_the_bf16_fallback_to_float32_is_a_warning_that_says_what_it_costs(line):
    # Gemma 2/3, PLaMo 2, GLM-4: vLLM counts float16 unstable for them, so vllm-gfx906 loads them in float32
    d = explain_line(line)
    assert d.rule == "vllm-bf16-falls-back-to-fp32" and d.severity == "warning"
    assert "twice the memory" in d.cause and "Gemma" in d.cause and "refuses --dtype float16" in d.fix
    # the out-of-memory error it can lead to follows from it (its explains): the warning is the answer, the error after
    got = explain_text(line + "\ntorch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                       "total capacity of 31.98 GiB of which 1.10 GiB is free.\n")
    assert [g.severity.value for g in got] == ["warning", "error"] and got[0].rule == "vllm-bf16-falls-back-to-fp32"
    assert got[1].details["explained_by"]["rule"] == "vllm-bf16-falls-back-to-fp32"


@pytest.mark.parametrize("line", [
    # a platform without float16 (vLLM's CPU backend), not gfx906's missing bfloat16
    "WARNING [model.py:1682] Your device 'cpu' doesn't support torch.float16. Falling back to torch.float32 for "
    "compatibility.",
    "WARNING [model.py:1682] Your device 'cpu' doesn't support torch.float16. Falling back to torch.bfloat16 for "
    "compatibility.",
])
def test_other_dtype_fallbacks_are_not_gfx906s(line):
    assert explain_text(line) == []


# ------------------------------------------------------------------------------------------
# near misses: no answer

@pytest.mark.parametrize("line", [
    "ggml_cuda_init: found 0 ROCm devices:",  # no GPU: not the harmless count
    "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes",
    "  Device 0: AMD Radeon Graphics, gfx906:sramecc+:xnack-",  # no VMM and wave size: not ggml's line
    'time=2025-10-01T10:00:00Z level=INFO source=types.go:42 msg="inference compute" id=GPU-1234 library=CUDA '
    "compute=8.6 name=CUDA0",
    'msg="inference compute" id=cpu library=ROCm',
    "alloc_tensor_range: failed to allocate CUDA0 buffer of size 1024",
    "alloc_tensor_range: failed to allocate ROCm_Host buffer of size 1024",
    "we are dropping ROCm device support for old cards next release",
    'level=INFO source=server.go:1069 msg="model requires more system memory than is currently available, evicting '
    'a model to make space"',
    "the llama runner process is starting",
    "ggml_cuda_host_malloc: allocated 1024.00 MiB of pinned memory",
    "Found 2 compatible backends: ['TRITON_ATTN']",
    "XGMI detection succeeded",
    "GPU discovery finished in 1.2s",
    "failed to load model weights from disk cache, retrying",
    "unable to allocate memory buffer",
    "no backends are configured",
    "the user overrode the settings",
    "discovery watchdog started",
    "Your device 'cpu' doesn't support torch.float16. Falling back to torch.float32 for compatibility.",
])
def test_near_misses_are_not_recognised(line):
    assert explain_line(line) is None


# ------------------------------------------------------------------------------------------
# the command

def test_the_command_answers_an_ollama_030_paste_root_first():
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--json", "explain"], input=OLLAMA_030,
                       capture_output=True, text=True, env=env(), cwd=REPO)
    assert r.returncode == 0, r.stderr
    diagnoses = json.loads(r.stdout)["diagnoses"]
    assert [d["rule"] for d in diagnoses] == ["ollama-rocm-device-dropped", "ollama-inference-compute-cpu"]
    assert diagnoses[0]["fixable_by_rocmrevive"] is False and diagnoses[0]["why_not"]
