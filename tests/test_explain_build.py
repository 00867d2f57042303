"""``rocmrevive explain`` on what building for gfx906 prints (the catalogue's ninth pass): clang's errors for the
identifiers HIP 6.0 and 7.0 removed or moved, and for nothing else; LLVM's crashes and fatal errors with each of their
causes; rocWMMA's target check; CMake's HIP language errors. Near misses (another identifier in the same clang error,
an LLVM ERROR no entry claims, a bare segfault) stay unrecognised: a wrong answer is worse than none."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rocmrevive.diagnose.catalogue import by_id
from rocmrevive.diagnose.explain import explain_line, explain_text
from tests.conftest import REPO
from tests.test_contract_readonly import env

BUILD_RULES = {e.answer_rule for e in by_id().values() if e.source.startswith((
    "llvm/llvm-project:clang/include/clang/Basic/DiagnosticSemaKinds.td", "llvm/llvm-project:llvm/lib/",
    "ROCm/HIP:include/hip/hip_runtime.h", "ROCm/clr:hipamd/include/hip/amd_detail/amd_warp_sync_functions.h",
    "ROCm/rocWMMA:", "Kitware/CMake:"))} | {"hiprtc-not-linked", "clang-frontend-signal", "ggml-hip-hipcc-legacy",
                                          "ggml-hip-static"}


@pytest.mark.parametrize("line,rule", [
    # every identifier of HIP 6.0's OpenGL interop move, as each clang error names it
    ("main.hip:104:65: error: use of undeclared identifier 'hipGLDeviceListAll'", "hip6-gl-interop-moved"),
    ("main.hip:104:65: error: use of undeclared identifier 'hipGLDeviceListCurrentFrame'", "hip6-gl-interop-moved"),
    ("main.hip:104:65: error: use of undeclared identifier 'hipGLDeviceListNextFrame'", "hip6-gl-interop-moved"),
    ("main.hip:104:15: error: use of undeclared identifier 'hipGLGetDevices'", "hip6-gl-interop-moved"),
    ("main.hip:428:19: error: use of undeclared identifier 'hipGraphicsGLRegisterBuffer'", "hip6-gl-interop-moved"),
    ("main.hip:431:19: error: use of undeclared identifier 'hipGraphicsGLRegisterImage'", "hip6-gl-interop-moved"),
    ("main.hip:90:5: error: unknown type name 'hipGLDeviceList'", "hip6-gl-interop-moved"),
    # hipDeviceProp_t as HIP 6 names it (C++ and C), hipPointerAttribute_t, the removed attributes
    ("query.cpp:33:28: error: no member named 'gcnArch' in 'hipDeviceProp_tR0600'", "hip6-deviceprop-gcnarch-removed"),
    ("query.c:33:28: error: no member named 'gcnArch' in 'struct hipDeviceProp_tR0600'", "hip6-deviceprop-gcnarch-removed"),
    ("ptr.cpp:7:14: error: no member named 'memoryType' in 'hipPointerAttribute_t'", "hip6-pointer-memorytype-removed"),
    ("dev.cpp:9:40: error: use of undeclared identifier 'hipDeviceAttributeGcnArchName'", "hip6-device-attribute-removed"),
    ("dev.cpp:9:40: error: use of undeclared identifier 'hipDeviceAttributeName'", "hip6-device-attribute-removed"),
    ("dev.cpp:9:40: error: use of undeclared identifier 'hipDeviceAttributeUuid'", "hip6-device-attribute-removed"),
    ("graph.cpp:20:3: error: unknown type name 'HIP_MEMSET_NODE_PARAMS'", "hip7-memset-node-params-removed"),
    ("mm.cpp:121:2: error: no matching function for call to 'hipHostAlloc'", "hip-host-alloc-typed-pointer"),
    ("mm.cpp:121:2: error: no matching function for call to 'hipMallocHost'", "hip-host-alloc-typed-pointer"),
    ("/opt/rocm/include/hip/hip_runtime.h:66:2: error: (\"Must define exactly one of __HIP_PLATFORM_AMD__ or "
     "__HIP_PLATFORM_NVIDIA__\");", "hip-platform-undefined"),
    ("/usr/bin/ld: jit.o: in function `main': undefined reference to `hiprtcCreateProgram'", "hiprtc-not-linked"),
    ("/opt/rocm-7.0.0/include/hip/amd_detail/amd_warp_sync_functions.h:297:62: error: static assertion failed due to "
     "requirement 'sizeof(unsigned int) == 8': The mask must be a 64-bit integer. Implicitly promoting a smaller integer "
     "is almost always an error.", "hip-warp-sync-mask-64bit"),
    ("/opt/rocm/include/rocwmma/internal/config.hpp:76:15: error: static assertion failed: Unsupported architecture",
     "rocwmma-unsupported-arch"),
    ("/opt/rocm-6.2.4/include/rocwmma/internal/config.hpp:71:15: error: static_assert failed \"Unsupported architecture\"",
     "rocwmma-unsupported-arch"),
    ("LLVM ERROR: Cannot select: t7: i64 = AtomicLoadFAdd<(load store seq_cst (s64))> t0, t2, t6", "llvm-cannot-select"),
    ("error: Illegal instruction detected: Illegal immediate value for operand.", "llvm-amdgpu-illegal-instruction"),
    ("CMake Error at /usr/share/cmake-3.28/Modules/CMakeDetermineHIPCompiler.cmake:217 (message):", None),
    ("  Failed to find ROCm root directory.", "cmake-hip-rocm-root"),
    ("  The HIPCXX environment variable is set to the hipcc wrapper:", "cmake-hip-compiler-is-hipcc"),
    ("  Failed to find a default HIP architecture.", "cmake-hip-no-default-arch"),
    # llama.cpp's HIP checks as CMake prints them (its paragraphs wrapped at 80 columns)
    ("  Setting hipcc as the C++ compiler is legacy behavior.  Prefer setting the HIP", "ggml-hip-hipcc-legacy"),
    ("  Static linking not supported for HIP/ROCm", "ggml-hip-static"),
])
def test_build_messages_are_recognised_by_their_entries(line, rule):
    d = explain_line(line)
    assert (d.rule if d else None) == rule
    if d is not None:
        assert d.fix and not d.fixable_by_rocmrevive and d.why_not
        assert d.fix.startswith("nothing") == (d.severity.value == "harmless")


@pytest.mark.parametrize("line", [
    # the same clang errors with identifiers that are not HIP API changes: the program's own mistakes
    "main.cpp:12:5: error: use of undeclared identifier 'hipFooBar'",
    "main.cpp:12:5: error: use of undeclared identifier 'hipMalloc'",
    "main.cpp:12:5: error: use of undeclared identifier 'hipGLDeviceListAllX'",
    "main.cpp:12:5: error: use of undeclared identifier 'gcnArch'",
    "main.cpp:12:5: error: unknown type name 'hipGLDeviceListFoo'",
    "main.cpp:12:5: error: no member named 'gcnArch' in 'MyProps'",
    "main.cpp:12:5: error: no member named 'memoryType' in 'hipDeviceProp_tR0600'",
    "main.cpp:12:5: error: no member named 'gcnArchName' in 'hipDeviceProp_tR0600'",
    "main.cpp:12:5: error: no matching function for call to 'hipMalloc'",
    "main.cpp:12:5: error: no matching function for call to 'hipHostMalloc'",
    "undefined reference to `hipMalloc'",
    # what no entry claims: other LLVM fatal errors, the compiler's summary, a bare segfault, a bare error
    "LLVM ERROR: Broken function found, compilation aborted!",
    "LLVM ERROR: Unsupported calling convention",
    "LLVM ERROR: Cannot select",
    "2 errors generated when compiling for gfx906.",
    "Segmentation fault (core dumped)",
    "Illegal instruction (core dumped)",
    "error:",
    "Stack dump:",
    "clang: error: linker command failed with exit code 1 (use -v to see invocation)",
    "clang: error: unable to execute command: Killed",
    "Please submit a bug report to the maintainer",
    # rocWMMA's words without rocWMMA's file: another library's static_assert
    "foo.cpp:3:1: error: static assertion failed: Unsupported architecture",
    "kernel.cu:9:3: error: static assertion failed: The mask must be a 32-bit integer",
])
def test_near_misses_are_not_recognised(line):
    d = explain_line(line)
    assert d is None, (line, d and d.rule)


def test_the_near_misses_keep_the_build_entries_out_of_a_paste_that_has_none_of_them():
    paste = ("main.cpp:12:5: error: use of undeclared identifier 'hipFooBar'\n"
             "main.cpp:13:5: error: no matching function for call to 'hipMalloc'\n"
             "2 errors generated when compiling for gfx906.\n")
    assert {d.rule for d in explain_text(paste)} & BUILD_RULES == set()


def test_a_compile_killed_for_memory_names_both_causes_and_an_llvm_oom_is_the_root():
    killed = explain_text("clang++: error: unable to execute command: Killed\n"
                          "clang++: error: clang frontend command failed due to signal (use -v to see invocation)")
    assert [d.rule for d in killed] == ["clang-frontend-signal"]
    assert killed[0].details["tool"] == "clang frontend"
    assert [c["id"] for c in killed[0].details["causes"]] == ["compiler-crash", "killed-out-of-memory"]
    assert "Killed" in killed[0].details["causes"][1]["check"] and "MAX_JOBS" in killed[0].fix
    oom = explain_text("LLVM ERROR: out of memory\nAllocation failed\n"
                       "PLEASE submit a bug report to https://github.com/ROCm/llvm-project/issues and include the crash "
                       "backtrace, preprocessed source, and associated run script.\nStack dump:\n"
                       "clang: error: unable to execute command: Aborted (core dumped)\n"
                       "clang: error: clang frontend command failed due to signal (use -v to see invocation)")
    assert [d.rule for d in oom] == ["llvm-out-of-memory", "llvm-crash-report", "clang-frontend-signal"]
    assert oom[1].details["explained_by"] == {"rule": "llvm-out-of-memory", "line": 1}
    assert "explained_by" in oom[2].details


def test_a_crash_report_alone_names_a_compiler_bug_and_memory_with_their_checks():
    d = explain_line("PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash "
                     "backtrace.")
    assert d is not None and d.rule == "llvm-crash-report" and d.details["url"].startswith("https://github.com/llvm")
    assert [c["id"] for c in d.details["causes"]] == ["compiler-bug", "out-of-memory"]
    assert all(c["check"] for c in d.details["causes"])


def _run(*args: str, stdin: str | None = None):
    return subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", *args], input=stdin,
                          capture_output=True, text=True, env=env(), cwd=REPO)


def test_the_command_answers_a_hip6_build_log_and_stays_silent_on_a_programs_own_error():
    log = ("main.hip:104:65: error: use of undeclared identifier 'hipGLDeviceListAll'\n"
           "    HIP_CHECK(hipGLGetDevices(&gl_device_count, &hip_device, 1, hipGLDeviceListAll));\n"
           "2 errors generated when compiling for gfx906.\n")
    r = _run("--json", "explain", stdin=log)
    doc = json.loads(r.stdout)
    assert r.returncode == 0
    assert [d["rule"] for d in doc["diagnoses"]] == ["hip6-gl-interop-moved"]
    assert "hip/hip_gl_interop.h" in doc["diagnoses"][0]["fix"]
    r = _run("explain", stdin="main.cpp:12:5: error: use of undeclared identifier 'hipFooBar'\n")
    assert r.returncode == 3
