"""``rocmrevive explain`` on the programs behind set K's silent texts that sit on a gfx906 owner's ROCm path (the
catalogue's tenth pass): Tensile's benchmark client aborting on rocm-smi's gpu_metrics, rocFFT's plan builder and test
clients, CuPy's hipRTC compile error, vendor-reset's Vega 20 reset in a VM. Each answered text is the program's own line
as its source prints it; each near miss is a text those entries must NOT answer (a wrong answer is worse than none)."""
from __future__ import annotations

import pytest

from rocmrevive.diagnose.catalogue import by_id
from rocmrevive.diagnose.explain import explain_line, explain_text
from tests.explain_checks import answered_alone, explain_cli

TENTH = ("tensile-client-stoi-metrics", "tensile-benchmark-exited", "rocfft-plan-node-failed", "rocfft-assertion",
         "rocfft-plan-execution-failure", "cupy-hiprtc-compilation", "vendor-reset-vega20-mode1-failed",
         "vendor-reset-smu-message-failed")

TENSILE_RUN = ("/work/tune/0_Build/client/tensile_client --config-file /work/tune/1_BenchmarkProblems/Cijk_Ailk_Bljk_HB_00/"
               "00_Final/build/../source/ClientParameters.ini")

# variants an owner pastes: other numbers, paths, programs, prefixes, and the other forms each pattern takes
ANSWERED = [
    ("Failed on Node: length 4782969 (double): when attempting Scheme: CS_L1D_TRTRT", "rocfft-plan-node-failed"),
    ("Failed on Node: length 17 (single): when attempting Scheme: CS_L1D_CC", "rocfft-plan-node-failed"),
    ("rocfft-selftest: /usr/src/rocFFT-rocm-4.3.0/library/src/plan.cpp:1620: void TreeNode::build_1D(): Assertion "
     "`false' failed.", "rocfft-assertion"),
    ("rocfft-test: /build/library/src/tree_node_real.cpp:210: void RealTransEvenNode::BuildTree_internal(): Assertion "
     "`childNodes.size() == 2' failed.", "rocfft-assertion"),
    ("my_fft_app: /opt/build/rocFFT/library/src/tree_node_2D.cpp:88: void RTRT2DNode::AssignParams_internal(): "
     "Assertion `childNodes.size() == 4' failed.", "rocfft-assertion"),
    ("C++ exception with description \"rocFFT plan execution failure\" thrown in the test body.",
     "rocfft-plan-execution-failure"),
    ("Value of: fft_status == rocfft_status_success\n  Actual: false\nExpected: true\nrocFFT plan execution failure",
     "rocfft-plan-execution-failure"),
    ("cupy_backends.cuda.libs.nvrtc.NVRTCError: HIPRTC_ERROR_COMPILATION (6)", "cupy-hiprtc-compilation"),
    ("cupy.cuda.nvrtc.NVRTCError: HIPRTC_ERROR_COMPILATION (6)", "cupy-hiprtc-compilation"),
    ("[ 91.1] vfio-pci 0000:0b:00.0: AMD_VEGA20: psp mode1 reset failed", "vendor-reset-vega20-mode1-failed"),
    ("vfio-pci 0000:0b:00.0: AMD_VEGA20: falling back to BACO reset", "vendor-reset-vega20-mode1-failed"),
    ("[ 92.4] vfio-pci 0000:0b:00.0: Failed to send message 0x26: return 0xff", "vendor-reset-smu-message-failed"),
]


@pytest.mark.parametrize("text,rule", ANSWERED)
def test_the_programs_lines_are_answered_by_their_entries(text, rule):
    assert "rocmrevive" not in answered_alone(text, rule).fix


# near misses: the same words from other programs, other statuses, bare aborts, generic test-framework lines
NEAR_MISSES = [
    "  what():  stoi",  # a bare stoi abort names no program: many programs throw it
    "terminate called after throwing an instance of 'std::invalid_argument'\n  what():  stoi\nAborted (core dumped)",
    "terminate called after throwing an instance of 'std::invalid_argument'\n  what():  stoi\n"
    "./run.sh: line 5: 4242 Aborted (core dumped) ./my_benchmark --config-file params.ini",
    "  what():  stol",
    "myapp: /home/u/src/myapp/library/src/plan.cpp:120: int plan(): Assertion `n > 0' failed.",  # another program's assert
    "rocfft-test: /build/clients/tests/accuracy_test.cpp:88: void f(): Assertion `x' failed.",  # not the library's planner
    "rocblas-test: /build/rocBLAS/library/src/handle.cpp:42: void g(): Assertion `h' failed.",
    "python3: ../sysdeps/nptl/dl-tls_init_tp.c:98: __tls_init_tp: Assertion `0' failed.",
    "[  FAILED  ] random_real_3d/random_params.vs_fftw/0, where",  # a generic gtest FAILED line
    "/src/rocFFT/clients/selftest/test_complex.cpp:105: Failure",  # a wrong result, no cause in the line
    "[  FAILED  ] pre_checkin/gemv.blas2/gemv_skinny_n_f32_c_T_131071_63_2_131071_2_0_2",
    "Failed on Node: 3",
    "plan execution failure",
    "cupy_backends.cuda.libs.nvrtc.NVRTCError: HIPRTC_ERROR_INVALID_OPTION (5)",  # another status: several causes
    "cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_COMPILATION (6)",  # CUDA's, not ROCm's
    "hiprtcCompileProgram fails with error HIPRTC_ERROR_COMPILATION",  # another program's wrapper, no log named
    "amdgpu 0000:0b:00.0: amdgpu: GPU psp mode1 reset failed",  # amdgpu's own reset (nv.c), not vendor-reset's
    "vfio-pci 0000:0b:00.0: AMD_VEGA20: psp mode1 reset succeeded",
    "vfio-pci 0000:0b:00.0: AMD_VEGA20: BACO reset successful",
    "amdgpu: Failed to send message 0x25, response 0x0",  # the kernel's powerplay smumgr, another format
    "vfio-pci 0000:0b:00.0: SMU error 0x0",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_answered_by_the_tenth_pass(text):
    assert not any(d.rule in TENTH for d in explain_text(text)), text


def test_the_stoi_abort_is_tensiles_only_with_its_client_in_the_paste():
    bare = "terminate called after throwing an instance of 'std::invalid_argument'\n  what():  stoi"
    assert explain_text(bare) == [] and explain_line("  what():  stoi") is None
    for shown in (f"./run.sh: line 5: 335465 Aborted (core dumped) {TENSILE_RUN}",
                  "> UserWarning: BenchmarkProblems: Benchmark Process exited with code 134",
                  "Tensile::WARNING: ClientWriter Benchmark Process exited with code 134"):
        found = explain_text(f"{bare}\n{shown}")
        assert found[0].rule == "tensile-client-stoi-metrics" and found[0].lines == [2], shown
        d = found[0]
        assert "HardwareMonitor: False" in d.fix and "gpu_metrics" in d.cause and "std::stoi" in d.cause
        assert "gfx906" in d.cause and not d.fixable_by_rocmrevive
    # the scripts' exit status alone is context: the client's output before it says why
    alone = explain_text("> UserWarning: ClientWriter Benchmark Process exited with code 134")
    assert [(d.rule, d.severity.value) for d in alone] == [("tensile-benchmark-exited", "context")]


def test_the_planner_failure_explains_the_assertion_after_it():
    found = explain_text("Failed on Node: length 14348907 (single): when attempting Scheme: CS_L1D_TRTRT\n"
                         "rocfft-selftest: /tmp/rocFFT-rocm-4.3.0/library/src/plan.cpp:1620: void TreeNode::build_1D(): "
                         "Assertion `false' failed.\nAborted (core dumped)")
    assert [d.rule for d in found] == ["rocfft-plan-node-failed", "rocfft-assertion", "process-aborted"]
    assert found[1].details["explained_by"]["rule"] == "rocfft-plan-node-failed"
    assert "not the GPU" in found[0].cause and "newer rocFFT" in found[0].fix and "length" in found[0].fix
    assert "NDEBUG" in by_id()["rocfft-assertion"].meaning


def test_an_execution_failure_names_each_cause_with_its_check():
    d = explain_text('C++ exception with description "rocFFT plan execution failure" thrown in the test body.')[0]
    assert [c["id"] for c in d.details["causes"]] == ["work-buffer-allocation", "kernel-or-hip-call", "call-arguments"]
    assert all(c["check"] for c in d.details["causes"])
    assert "ROCFFT_LAYER=1" in d.fix


def test_cupys_hiprtc_error_points_at_the_compile_log_with_two_causes():
    d = explain_text("cupy_backends.cuda.libs.nvrtc.NVRTCError: HIPRTC_ERROR_COMPILATION (6)")[0]
    assert [c["id"] for c in d.details["causes"]] == ["cupy-kernel-with-this-hiprtc", "own-kernel-source"]
    assert "CompileException" in d.fix and "CUPY_DUMP_CUDA_SOURCE_ON_ERROR=1" in d.fix


def test_vendor_resets_unanswered_smu_message_means_the_card_was_not_reset():
    found = explain_text("vfio-pci 0000:43:00.0: AMD_VEGA20: psp mode1 reset failed\n"
                         "vfio-pci 0000:43:00.0: AMD_VEGA20: falling back to BACO reset\n"
                         "vfio-pci 0000:43:00.0: SMU error 0x0\n"
                         "vfio-pci 0000:43:00.0: Failed to send message 0x25: return 0x0\n"
                         "vfio-pci 0000:43:00.0: AMD_VEGA20: BACO reset successful")
    # the unanswered EnterBaco (an error: the card was not reset) before the mode1 fallback (a warning) of line 1
    assert [(d.rule, d.lines) for d in found] == [("vendor-reset-smu-message-failed", [4]),
                                                  ("vendor-reset-vega20-mode1-failed", [1, 2])]
    smu = found[0]
    assert "EnterBaco" in smu.cause and "does not mean the card was reset" in smu.cause
    assert "power-cycle" in smu.fix and "Radeon VII" in found[1].cause


def test_the_cli_answers_with_json_and_exit_code():
    paste = ("terminate called after throwing an instance of 'std::invalid_argument'\n  what():  stoi\n"
             f"./run.sh: line 5: 335465 Aborted                 (core dumped) {TENSILE_RUN}\n"
             "> UserWarning: ClientWriter Benchmark Process exited with code 134\n")
    code, out = explain_cli(paste, stdin=True)
    assert code == 0 and out, out
    assert [d["rule"] for d in out["diagnoses"]] == ["tensile-client-stoi-metrics", "tensile-benchmark-exited"]
    assert out["diagnoses"][0]["fixable_by_rocmrevive"] is False
    assert out["diagnoses"][1]["details"]["explained_by"]["rule"] == "tensile-client-stoi-metrics"
    code, out = explain_cli("cupy_backends.cuda.libs.nvrtc.NVRTCError: HIPRTC_ERROR_COMPILATION (6)")
    assert code == 0 and out and len(out["diagnoses"][0]["details"]["causes"]) == 2
    for miss in ("  what():  stoi", "[  FAILED  ] random_real_3d/random_params.vs_fftw/0, where",
                 "myapp: /src/myapp/library/src/plan.cpp:120: int plan(): Assertion `n > 0' failed."):
        assert explain_cli(miss)[0] == 3, miss
