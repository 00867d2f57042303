"""`rocmrevive explain` knows the failures gfx906 owners paste (issue 16). Each line below is a
real text from a public tracker, as the tool printed it (only an over-long tail shortened), with
its source: repository and issue/pull-request number."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rocmrevive.diagnose.explain import explain_line, explain_text
from tests.test_contract_readonly import env

REPORTED = [
    # RCCL / NCCL
    ("vllm-project/vllm#10626", "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for "
     "details)", "rccl-system-error"),
    ("NVIDIA/nccl-tests#320", "Test NCCL failure common.cu:1119 'unhandled system error (run with NCCL_DEBUG=INFO "
     "for details)'", "rccl-system-error"),
    ("NVIDIA/nccl#1657", "NCCL error: unhandled system error", "rccl-system-error"),
    # the HSA runtime's memory access fault (the node number is KFD's)
    ("ROCm/tensorflow-upstream#1959", "Memory access fault by GPU node-2 (Agent handle: 0x38b6960) on address "
     "0x1000. Reason: Page not present or supervisor privilege.", "hsa-memory-access-fault"),
    ("ROCm/rccl#1034", "Memory access fault by GPU node-8 (Agent handle: 0x23a5640) on address 0x7f461ec00000. "
     "Reason: Page not present or supervisor privilege", "hsa-memory-access-fault"),
    ("ROCm/legacy-rocm-build#1339", "Memory access fault by GPU node-4 (Agent handle: 0x152e220) on address (nil). "
     "Reason: Page not present or supervisor privilege.", "hsa-memory-access-fault"),
    # HIP runtime error names, through PyTorch
    ("ROCm/legacy-rocm-build#5814", "torch.AcceleratorError: HIP error: an illegal memory access was encountered",
     "hip-illegal-address"),
    ("ROCm/legacy-rocm-build#6003", "Search for `hipErrorIllegalAddress' in "
     "https://rocm.docs.amd.com/projects/HIP/en/latest/index.html for more information.", "hip-illegal-address"),
    ("ROCm/legacy-rocm-build#6003", "  what():  CUDA error: an illegal memory access was encountered",
     "hip-illegal-address"),
    ("ROCm/legacy-rocm-build#4358", "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 4.50 GiB. GPU 0 "
     "has a total capacity of 15.98 GiB of which 1.40 GiB is free.", "gpu-out-of-memory"),
    ("keras-team/keras#13889", "E tensorflow/stream_executor/rocm/rocm_driver.cc:600] failed to allocate 890.06M "
     "(933298432 bytes) from device: HIP_ERROR_OutOfMemory", "gpu-out-of-memory"),
    # llama.cpp and Ollama
    ("ggml-org/llama.cpp#16725", "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 14136.04 MiB on device 0: "
     "cudaMalloc failed: out of memory", "gpu-out-of-memory"),
    ("ollama/ollama#11569", 'level=WARN source=amd_linux.go:376 msg="amdgpu is not supported (supported '
     'types:[gfx1030 gfx1100 gfx1101 gfx1102 gfx1151 gfx1200 gfx1201 gfx908 gfx90a gfx942])" gpu_type=gfx906 '
     'gpu=GP>', "ollama-gpu-not-supported"),
    # kernel messages
    ("ROCm/legacy-rocm-build#1886", "[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: GPU reset begin!",
     "amdgpu-gpu-reset"),
    ("yuzu-emu/yuzu#2559", "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, but soft recovered",
     "amdgpu-ring-soft-recovered"),  # its own format in amdgpu_job.c (issue 38)
    ("lamikr/rocm_sdk_builder#180", "[    5.408757] amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init",
     "amdgpu-init-failed"),
    ("lamikr/rocm_sdk_builder#180", "[    5.408787] amdgpu 0000:03:00.0: probe with driver amdgpu failed with "
     "error -12", "amdgpu-init-failed"),
]


@pytest.mark.parametrize("source,line,rule", REPORTED, ids=[f"{s}:{r}" for s, _, r in REPORTED])
def test_each_reported_text_is_recognised(source, line, rule):
    d = explain_line(line)
    assert d is not None and d.rule == rule, (source, d and d.rule)
    assert d.cause and d.fix and d.library and (d.fixable_by_rocmrevive or d.why_not)


def test_what_the_texts_carry_is_read_from_them():
    d = explain_line(REPORTED[3][1])
    assert d.details == {"node": 2, "address": "0x1000", "reason": "Page not present or supervisor privilege"}
    assert "KFD node 2" in d.cause and "rocmrevive detect" in d.fix
    d = explain_line(REPORTED[12][1])
    assert d.arch == "gfx906" and "gfx908" in d.details["supported"] and "gfx906" not in d.details["supported"]
    assert "sudo rocmrevive install" in d.fix
    assert explain_line(REPORTED[9][1]).details == {"requested": "4.50 GiB"}
    assert "error -12" in explain_line(REPORTED[-1][1]).cause


def test_a_vllm_log_gives_one_diagnosis_per_failure():
    log = "\n".join(["INFO 11-25 10:00:00 worker.py:123] loading model", REPORTED[0][1], REPORTED[0][1],
                     REPORTED[3][1], "Aborted (core dumped)"])
    rules = sorted(d.rule for d in explain_text(log))
    assert rules == ["hsa-memory-access-fault", "process-aborted", "rccl-system-error"]
    first = next(d for d in explain_text(log) if d.rule == "rccl-system-error")
    assert first.lines == [2, 3]


def test_explain_from_the_command_line_reads_a_pasted_log_on_stdin():
    text = "\n".join(line for _, line, _ in REPORTED)
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--json", "explain"], input=text,
                       capture_output=True, text=True, env=env())
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and {d["rule"] for d in doc["diagnoses"]} == {rule for _, _, rule in REPORTED}
