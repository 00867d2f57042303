"""``rocmrevive explain`` on the core runtimes, read further (HIP's CLR, ROCr and its GPU core dump, MIOpen's
allocator, RCCL's communicator checks). Each answered text is the runtime's own line as it prints it by default
(CLR's LOG_NONE prefix, MIOpen's level and function, NCCL's host:pid:tid prefix); each near miss is a text these
entries must NOT answer (a wrong answer is worse than none); the context lines after a memory fault must not take
the root-cause place from it."""
from __future__ import annotations

import pytest

from rocmrevive.diagnose.catalogue import by_id, sources
from rocmrevive.diagnose.explain import explain_text
from tests.explain_checks import answered_alone, explain_cli

CORE = ("hip-internal-error-host-thread", "hip-missing-co-isa-line", "hsa-memory-critical-error", "hsa-gpu-core-dump-failed",
        "hsa-gpu-core-dump-create-failed", "hsa-gpu-core-dump-debugger", "hsa-scratch-limit-clamped",
        "miopen-hipmemgetinfo-workaround", "miopen-alloc-out-of-memory", "rccl-duplicate-gpu",
        "rccl-invalid-rank", "rccl-invalid-device-count")

ANSWERED = [
    (":0:hip_memory.cpp           :615 : 2417830925 us:  An internal error has occurred. This may be due to "
     "insufficient memory.", "hip-internal-error-host-thread"),
    ("An internal error has occurred. This may be due to insufficient memory.", "hip-internal-error-host-thread"),
    (":1:hip_fatbin.cpp           :116 : 2417830926 us:       amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-",
     "hip-missing-co-isa-line"),
    ("Memory critical error by agent node-2 (Agent handle: 0x55d0c8a1b2e0) on address 0x7fa4b6200000. Reason: "
     "Memory in use. ", "hsa-memory-critical-error"),
    ("GPU core dump failed", "hsa-gpu-core-dump-failed"),
    ("Failed to create GPU coredump: Permission denied", "hsa-gpu-core-dump-create-failed"),
    ("Failed to create GPU coredump: File exists", "hsa-gpu-core-dump-create-failed"),
    ("Failed to enable debug interface, debugger might be already attached.", "hsa-gpu-core-dump-debugger"),
    ("User specified scratch limit exceeds device limits (requested:34359738368 max:4278190080)!",
     "hsa-scratch-limit-clamped"),
    ("MIOpen(HIP): Warning [hip_mem_get_info_wrapper] hipMemGetInfo error, status: 1",
     "miopen-hipmemgetinfo-workaround"),
    ("MIOpen(HIP): Warning [default_allocator] hipMalloc 8589934592 status: 2", "miopen-alloc-out-of-memory"),
    ("mi50box:41237:41237 [1] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 43000",
     "rccl-duplicate-gpu"),
    ("node01:9911:9911 [0] NCCL WARN invalid device count (0) requested", "rccl-invalid-device-count"),
    ("node01:9911:9911 [0] NCCL WARN Invalid rank requested : 4/4", "rccl-invalid-rank"),
    ("node02:771:771 [0] NCCL WARN Invalid rank requested : -1/2", "rccl-invalid-rank"),
]


@pytest.mark.parametrize("text,rule", ANSWERED)
def test_the_core_runtimes_lines_are_answered_by_their_entries(text, rule):
    d = answered_alone(text, rule)
    assert d.severity == by_id()[rule].severity
    assert "rocmrevive install" not in d.fix and "rocmrevive verify" not in d.fix


NEAR_MISSES = [
    "An internal error has occurred.",  # another program's generic text, without HIP's second sentence
    "hipErrorOutOfMemory: out of memory",
    "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x2. Reason: Page not present or supervisor "
    "privilege.",  # the fault, answered by its own rule, not by the free-denied entry
    "     amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-",  # a target alone, without HIP's hip_fatbin.cpp prefix
    ":1:hip_code_object.cpp      :116 : 1 us:      amdgcn-amd-amdhsa--gfx906",  # another file's line
    "Memory critical error by agent",  # no node, handle, address: a paraphrase
    "GPU core dump skipped because PC Sampling active",
    "Failed to create core dump",
    "User specified scratch limit",
    "MIOpen(HIP): Info [hip_mem_get_info_wrapper] hipMemGetInfo ok",
    "MIOpen(HIP): Warning [default_allocator] hipMalloc 8589934592 status: 1",  # not out of memory: no answer
    "MIOpen(HIP): Warning [default_allocator] hipMalloc 8589934592 status: 21",
    "MIOpen(HIP): Warning [default_deallocator] hipMemPtrGetInfo at 0x7f0000000000 status: 1",
    "MIOpen(HIP): Error [BuildHip] HIPRTC status = HIPRTC_ERROR_COMPILATION (6), source file: naive_conv.cpp",
    "MIOpen(HIP): Warning [KernDb] Invalid fields in table: kern_db disabling access to /opt/rocm/share/miopen/db/"
    "gfx906_60.kdb",
    "mi50box:1:1 [0] NCCL WARN P2P is disabled between NVLINK connected GPUs 0 and 1. This should not be the case "
    "given their connectivity, and is probably due to a hardware issue.",  # NVIDIA-only: RCCL never prints it
    "mi50box:1:1 [0] NCCL INFO P2P is disabled between connected GPUs 0 and 1.",
    "mi50box:1:1 [0] NCCL WARN invalid device ordinal",
    "Duplicate GPU detected",
    "node01:1:1 [0] NCCL WARN Invalid device count requested : -1",  # ncclCommInitAll's own check, not counted
    "node01:1:1 [0] NCCL WARN rank 4 exceeds ndev=4",
    "Invalid rank requested",
    "rocprofiler-register failed for hip with error code 2: invalid argument",  # compiled off in CLR
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_answered_by_the_core_entries(text):
    assert not {d.rule for d in explain_text(text)} & set(CORE)


def test_the_memory_fault_stays_the_root_cause_over_the_core_dump_lines():
    paste = ("Memory access fault by GPU node-1 (Agent handle: 0x5581e2a3c0f0) on address 0x7f3d1c000000. Reason: "
             "Page not present or supervisor privilege.\n"
             "Failed to create GPU coredump: Permission denied\n"
             "GPU core dump failed\n"
             "Aborted (core dumped)\n")
    found = explain_text(paste)
    rules = [d.rule for d in found]
    assert rules[0] == "hsa-memory-access-fault"
    assert {"hsa-gpu-core-dump-create-failed", "hsa-gpu-core-dump-failed"} <= set(rules[1:])
    dump = next(d for d in found if d.rule == "hsa-gpu-core-dump-failed")
    assert dump.details["explained_by"]["rule"] == "hsa-memory-access-fault"


def test_harmless_lines_do_not_take_the_root_cause_place():
    paste = ("MIOpen(HIP): Warning [hip_mem_get_info_wrapper] hipMemGetInfo error, status: 1\n"
             "User specified scratch limit exceeds device limits (requested:34359738368 max:4278190080)!\n"
             "MIOpen(HIP): Warning [default_allocator] hipMalloc 8589934592 status: 2\n")
    found = explain_text(paste)
    assert found[0].rule == "miopen-alloc-out-of-memory"
    assert {d.rule for d in found[1:]} == {"miopen-hipmemgetinfo-workaround", "hsa-scratch-limit-clamped"}
    assert all(d.fix.startswith("nothing") for d in found[1:])


def test_the_gfx906_workaround_says_it_is_expected_on_gfx906():
    d = explain_text("MIOpen(HIP): Warning [hip_mem_get_info_wrapper] hipMemGetInfo error, status: 1")[0]
    assert "gfx906" in d.cause and "16 GiB" in d.cause


def test_a_duplicate_gpu_names_its_two_causes_each_with_its_check():
    d = explain_text("h:1:1 [1] NCCL WARN Duplicate GPU detected : rank 3 and rank 1 both on CUDA device c3000")[0]
    causes = d.details["causes"]
    assert [c["id"] for c in causes] == ["no-set-device", "same-visible-device"] and all(c["check"] for c in causes)
    assert d.details["busid"] == "c3000" and d.details["rank"] == "3" and d.details["other"] == "1"


def test_the_target_lines_follow_the_missing_co_line_that_explains_them():
    paste = (":1:hip_fatbin.cpp           :113 : 2417830925 us:  Missing CO for these ISAs - \n"
             ":1:hip_fatbin.cpp           :116 : 2417830926 us:       amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-\n")
    found = explain_text(paste)
    assert [d.rule for d in found] == ["hip-no-binary-for-gpu", "hip-missing-co-isa-line"]
    assert found[1].details["explained_by"]["rule"] == "hip-no-binary-for-gpu"
    assert found[1].details["isa"] == "amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-"


def test_the_memory_critical_error_explains_the_abort_after_it():
    paste = ("Memory critical error by agent node-1 (Agent handle: 0x1d2e3f0) on address 0x7f0000000000. Reason: "
             "Memory in use. \nAborted (core dumped)\n")
    found = explain_text(paste)
    assert found[0].rule == "hsa-memory-critical-error"
    assert len(found) == 2 and found[1].details["explained_by"]["rule"] == "hsa-memory-critical-error"


def test_the_source_rows_name_what_was_read():
    rows = {s.component: s for s in sources()}
    thunk = rows["ROCt thunk (libhsakmt)"]
    assert thunk.formats == 0 and thunk.in_catalogue() == 0 and "HSAKMT_DEBUG_LEVEL" in thunk.counted
    for comp in ("ROCr (HSA runtime)", "RCCL"):
        assert rows[comp].formats == rows[comp].in_catalogue()  # every counted format of these is answered now
    for comp in ("HIP runtime (CLR)", "MIOpen"):
        assert rows[comp].in_catalogue() < rows[comp].formats  # and these say what is left out
    for rule in CORE:
        assert any(s.holds(by_id()[rule]) for s in sources())


def test_the_cli_answers_with_json_and_exit_code():
    code, out = explain_cli("node01:9911:9911 [0] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
                            "device 43000")
    assert code == 0 and out, out
    assert out["recognised"] == 1 and [d["rule"] for d in out["diagnoses"]] == ["rccl-duplicate-gpu"]
    assert out["diagnoses"][0]["fixable_by_rocmrevive"] is False
    assert [c["id"] for c in out["diagnoses"][0]["details"]["causes"]] == ["no-set-device", "same-visible-device"]
    assert explain_cli("MIOpen(HIP): Warning [default_allocator] hipMalloc 4096 status: 1")[0] == 3
