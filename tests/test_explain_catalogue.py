"""The message catalogue (rocmrevive/data/messages.toml): each format, filled with realistic values, is
recognised by the answer it names; the patterns are built from the formats (the named parts read back the
values); every entry has a source; the coverage table in docs/explain.md is the catalogue's; a paste of
several lines is answered root cause first; context words sharpen the answer; empty input is a usage error."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rocmrevive.diagnose import catalogue
from rocmrevive.diagnose.catalogue import coverage_table, entries, pattern_of, problems, sources
from rocmrevive.diagnose.explain import RULES, context_of, explain_line, explain_text
from tests.conftest import REPO
from tests.test_contract_readonly import env

ENTRIES = entries()


def _anchored(entry) -> bool:
    """A pattern that must start the line (a list item, a heading, the shell's 'Aborted')."""
    rule = next((r for r in RULES if r.id == entry.rule), None)
    return (rule.pattern.pattern if rule else entry.pattern.pattern).startswith("^")


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_each_format_filled_with_real_values_is_recognised(entry):
    line = entry.filled()
    # an entry that needs another line of the paste (the program that printed it) gets it; alone it is not recognised
    ctx = context_of(f"{entry.needs_example}\n{line}") if entry.needs else None
    if entry.needs:
        assert explain_line(line) is None or explain_line(line).rule != entry.answer_rule
    d = explain_line(line, ctx)
    assert d is not None and d.rule == entry.answer_rule, (line, d and d.rule)
    assert d.cause and d.fix and d.library and (d.fixable_by_rocmrevive or d.why_not)
    if entry.rule is None:  # answered from the data: the entry's own words
        assert (d.cause, d.severity, d.library) == (entry.meaning, entry.severity, entry.component)
        if entry.check_path:  # the file the line names is checked first
            assert d.fix.startswith("rocmrevive ") and d.fix.endswith(entry.action) and d.fix != entry.action
        else:
            assert d.fix == entry.action
    if not _anchored(entry):
        # in a log: a timestamp or a logger's prefix in front does not hide it
        d = explain_line(f"[2026-03-01 10:00:01] worker.py:12] {line}", ctx)
        assert d is not None and d.rule == entry.answer_rule


@pytest.mark.parametrize("entry", [e for e in ENTRIES if not e.pattern_text and e.example],
                         ids=[e.id for e in ENTRIES if not e.pattern_text and e.example])
def test_a_pattern_built_from_its_format_reads_the_values_back(entry):
    m = entry.pattern.search(entry.filled())
    assert m is not None
    assert {k: v for k, v in m.groupdict().items()} == {k: str(v) for k, v in entry.example.items()}


def test_patterns_by_construction_take_other_values_and_refuse_other_words():
    fmt = "HSA Error:  Incompatible kernel and userspace, {product} disabled. Upgrade amdgpu."
    import re
    rx = re.compile(pattern_of(fmt))
    for product in ("AMD Radeon VII", "Vega 20", "AMD Radeon (TM) Pro VII", "Vega 20 WKS GL-XE [Radeon Pro VII]"):
        line = fmt.format(product=product)
        assert rx.search(line).group("product") == product
        assert explain_line(line).rule == "hsa-incompatible-kernel"
    assert not rx.search("HSA Error:  Compatible kernel and userspace, Vega 20 enabled. Upgrade amdgpu.")
    # the runs of blanks of a format are any blanks (a log shipper may squeeze them)
    assert explain_line("HSA Error: Incompatible kernel and userspace, Vega 20 disabled. Upgrade amdgpu.")
    assert pattern_of("Kernel {kernel} not found.") == r"Kernel\s+(?P<kernel>\S+)\s+not\s+found\."


def test_the_data_has_no_problems():
    assert problems() == []


def test_an_entry_without_a_source_is_caught(monkeypatch):
    first, second = ENTRIES[0], ENTRIES[1]
    filled = next(e for e in ENTRIES[2:] if e.example)
    broken = tuple(dataclasses.replace(first, source="") if e is first else
                   dataclasses.replace(second, id="x-unlisted", source="someone/else:src/file.c") if e is second else
                   dataclasses.replace(filled, id="x-example", example={}) if e is filled else e
                   for e in ENTRIES)
    monkeypatch.setattr(catalogue, "entries", lambda: broken)
    got = problems()
    assert f"{first.id}: no source (owner/repo:path or closed:<product>)" in got
    assert "x-unlisted: source someone/else:src/file.c is in no [[source]] row" in got
    assert any(p.startswith("x-example: example [] does not fill") for p in got)


def test_every_rule_has_a_catalogue_entry_with_its_source():
    answered = {e.answer_rule for e in ENTRIES}
    assert [r.id for r in RULES if r.id not in answered] == []


def test_the_coverage_in_the_docs_is_the_catalogues():
    doc = (REPO / "docs" / "explain.md").read_text()
    assert coverage_table() in doc
    for s in sources():
        if s.formats is not None:  # a counted source holds at least what the catalogue recognises of it
            assert s.in_catalogue() <= s.formats, s.component


# ------------------------------------------------------------------------------------------
# several lines: each recognised, the root cause first

def _answer(text: str) -> list[tuple[str, list[int], str | None]]:
    return [(d.rule, d.lines, (d.details.get("explained_by") or {}).get("rule")) for d in explain_text(text)]


def test_a_tensile_load_failure_explains_the_could_not_initialize_after_it():
    text = "\n".join([
        "rocBLAS error: Could not initialize Tensile host:",
        "rocBLAS error: Cannot read /opt/rocm-6.4.1/lib/rocblas/library/TensileLibrary.dat: No such file or "
        "directory for GPU arch : gfx906",
        " List of available TensileLibrary Files : ",
        "This message will be only be displayed once, unless the ROCBLAS_VERBOSE_TENSILE_ERROR environment "
        "variable is set.",
        "Aborted (core dumped)"])
    assert _answer(text) == [
        ("rocblas-tensile-missing", [2], None),
        ("rocblas-tensile-init", [1], "rocblas-tensile-missing"),
        ("rocblas-tensile-list", [3], "rocblas-tensile-missing"),
        ("rocblas-message-once", [4], "rocblas-tensile-missing"),
        ("process-aborted", [5], "rocblas-tensile-missing")]
    first = explain_text(text)[0]
    assert first.fixable_by_rocmrevive and "rocmrevive install" in first.fix


def test_the_kernel_driver_refusal_comes_before_what_it_breaks():
    text = "\n".join([
        "UserWarning: HIP initialization: Unexpected error from hipGetDeviceCount(). Did you run some cuda "
        "functions before calling NumHipDevices() that might have already set an error? Error 101: "
        "hipErrorInvalidDevice (Triggered internally at ../c10/hip/HIPFunctions.cpp:110.)",
        "HSA Error:  Incompatible kernel and userspace, AMD Radeon (TM) Pro VII disabled. Upgrade amdgpu.",
        'checkHipErrors() HIP API error = 0100 "no ROCm-capable device is detected"'])
    got = _answer(text)
    assert got[0] == ("hsa-incompatible-kernel", [2], None)
    assert {(r, c) for r, _, c in got[1:]} == {("torch-hip-init-warning", "hsa-incompatible-kernel"),
                                               ("hip-no-device", "hsa-incompatible-kernel")}
    d = explain_text(text)[0]
    assert "kernel" in d.fix and d.library == "ROCr (HSA runtime)" and not d.fixable_by_rocmrevive


def test_an_ollama_journal_is_answered_by_its_refusal():
    text = "\n".join([
        'time=2025-08-01T10:00:00.000Z level=WARN source=amd_linux.go:376 msg="amdgpu is not supported '
        '(supported types:[gfx1030 gfx1100 gfx1101 gfx1102 gfx1151 gfx1200 gfx1201 gfx908 gfx90a gfx942])" '
        "gpu_type=gfx906 gpu=0 library=/usr/local/lib/ollama/rocm",
        'time=2025-08-01T10:00:00.001Z level=WARN source=amd_linux.go:383 msg="See https://github.com/ollama/'
        'ollama/blob/main/docs/gpu.md#overrides for HSA_OVERRIDE_GFX_VERSION usage"',
        'time=2025-08-01T10:00:00.002Z level=INFO source=amd_linux.go:404 msg="no compatible amdgpu devices '
        'detected"',
        'time=2025-08-01T10:00:00.003Z level=INFO source=gpu.go:377 msg="no compatible GPUs were discovered"'])
    got = _answer(text)
    assert got[0] == ("ollama-gpu-not-supported", [1], None)
    assert [c for _, _, c in got[1:]] == ["ollama-gpu-not-supported"] * 3
    assert explain_text(text)[0].fixable_by_rocmrevive


def test_a_llamacpp_crash_is_answered_by_its_error_not_its_epilogue():
    text = "\n".join([
        "ggml_cuda_compute_forward: MUL_MAT failed",
        "ROCm error: invalid device function",
        "  current device: 0, in function ggml_cuda_compute_forward at /src/llama.cpp/ggml/src/ggml-cuda/"
        "ggml-cuda.cu:2313",
        "  err",
        "/src/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:75: ROCm error",
        "Aborted (core dumped)"])
    got = _answer(text)
    assert got[0] == ("llamacpp-invalid-device-function", [2], None)
    assert {r: c for r, _, c in got[1:]} == {"llamacpp-op-failed": "llamacpp-invalid-device-function",
                                             "ggml-error-location": "llamacpp-invalid-device-function",
                                             "ggml-abort": "llamacpp-invalid-device-function",
                                             "process-aborted": "llamacpp-invalid-device-function"}


def test_two_unrelated_failures_are_both_roots_in_layer_order():
    text = "\n".join([
        "RuntimeError: HIP error: invalid device function",
        "[  12.000000] kfd kfd: amdgpu: skipped device 1002:66a1, PCI rejects atomics 730<0"])
    got = _answer(text)
    assert [r for r, _, _ in got] == ["kfd-pci-atomics", "torch-invalid-device-function"]
    assert all(c is None for _, _, c in got)


# ------------------------------------------------------------------------------------------
# context words sharpen the answer

def test_the_rocm_version_in_the_paste_sharpens_the_tensile_answer():
    line = ("rocBLAS error: Cannot read /opt/rocm-{v}/lib/rocblas/library/TensileLibrary.dat: No such file or "
            "directory for GPU arch : gfx906")
    old = explain_text(line.format(v="6.3.3"))[0]
    new = explain_text(line.format(v="6.4.1"))[0]
    assert "damaged or incomplete" in old.cause and "damaged or incomplete" not in new.cause
    assert old.details["context"] == {"rocm": "6.3.3"}


def test_the_application_in_the_paste_sharpens_the_invalid_device_function_answer():
    bare = explain_text("ROCm error: invalid device function")[0]
    ollama = explain_text("ollama serve\nROCm error: invalid device function")[0]
    assert "rebuild llama.cpp" in bare.fix and "Ollama" not in bare.fix
    assert "Ollama's bundled libggml-hip" in ollama.fix and ollama.details["context"] == {"app": "ollama"}
    # the GPU target named on another line fills in for a line that names none
    assert explain_text("Device 0: AMD Radeon VII, gfx906:sramecc-:xnack-\n"
                        "rocBLAS error: Could not initialize Tensile library")[0].arch == "gfx906:sramecc-:xnack-"


@pytest.mark.parametrize("line", [
    'time=2025-08-01T10:00:00Z level=INFO source=amd_linux.go:389 msg="amdgpu is supported" gpu=0 gpu_type=gfx906',
    "load_backend: loaded ROCm backend from /usr/local/lib/libggml-hip.so",
    "[    3.100000] kfd kfd: amdgpu: added device 1002:66a1",
    "[    3.000000] amdgpu 0000:03:00.0: amdgpu: SE 4, SH per SE 1, CU per SH 15, active_cu_number 60",
    "INFO 03-01 10:00:00 [rocm.py:100] Using TRITON_ATTN backend out of potential backends: ['TRITON_ATTN'].",
    "rocBLAS info: loaded TensileLibrary_lazy_gfx906.dat",
    "The Devices: section of the report is empty",
])
def test_ordinary_lines_are_not_recognised(line):
    assert explain_line(line) is None


# ------------------------------------------------------------------------------------------
# the command: empty input is a usage error

def _run(*args: str, stdin: str | None = None):
    return subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", *args], input=stdin,
                          capture_output=True, text=True, env=env(), cwd=REPO)


@pytest.mark.parametrize("args,stdin", [(["explain", ""], None), (["explain", "   "], None),
                                        (["explain"], " \n\t\n"),
                                        (["explain", "--file", str(Path(__file__).parent / "fixtures" / "empty.log")], None)])
def test_empty_or_blank_text_gets_a_usage_line_and_exit_2(args, stdin):
    r = _run(*args, stdin=stdin)
    assert r.returncode == 2 and "usage: rocmrevive explain" in r.stderr and r.stdout == ""
    r = _run("--json", *args, stdin=stdin)
    doc = json.loads(r.stdout)
    assert r.returncode == 2 and doc["error"]["code"] == "USAGE" and "usage:" in doc["error"]["message"]


def test_a_device_named_with_file_is_refused_in_one_line():
    # a device (/dev/zero: 64 MiB of NULs read; /dev/tty: a wait) is no log: one USAGE line, exit 2
    r = _run("--json", "explain", "--file", "/dev/zero")
    doc = json.loads(r.stdout)
    assert r.returncode == 2 and doc["error"]["code"] == "USAGE" and "a device" in doc["error"]["message"]


def test_the_command_answers_a_paste_root_cause_first():
    text = ("rocBLAS error: Could not initialize Tensile host:\nrocBLAS warning: No paths matched "
            "/opt/rocm/lib/rocblas/library/*gfx906*co. Make sure that ROCBLAS_TENSILE_LIBPATH is set correctly.\n")
    r = _run("--json", "explain", stdin=text)
    doc = json.loads(r.stdout)
    assert r.returncode == 0
    assert [d["rule"] for d in doc["diagnoses"]] == ["rocblas-tensile-no-paths", "rocblas-tensile-init"]
    assert doc["diagnoses"][1]["details"]["explained_by"] == {"rule": "rocblas-tensile-no-paths", "line": 2}
    r = _run("explain", stdin=text)
    assert r.returncode == 0 and "follows from line 2 (rocblas-tensile-no-paths)" in r.stdout
    assert r.stdout.index("line 2:") < r.stdout.index("line 1:")


def test_a_harmless_line_never_comes_before_a_failure():
    # rocm-smi's unreadable value (harmless, an earlier line) and a kernel with no gfx906 code (the failure)
    found = explain_text("GPU[0]\t\t: get_power_cap_range, Unexpected data received\n"
                         "RuntimeError: HIP error: device kernel image is invalid")
    assert [d.rule for d in found] == ["torch-hip-invalid-image", "rsmi-value-unavailable"]
    # the kernel's report of a page fault: the fault first, its detail lines follow from it
    found = explain_text("amdgpu 0000:03:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00301031\n"
                         "amdgpu 0000:03:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 "
                         "pasid:32769)")
    assert [d.rule for d in found] == ["amdgpu-vm-fault", "amdgpu-vm-fault-detail"]
    assert found[1].details["explained_by"] == {"rule": "amdgpu-vm-fault", "line": 2}


# ------------------------------------------------------------------------------------------
# the kernel's firmware lines: a file the driver can do without, and one it needs (psp_v11_0.c, gfx_v9_0.c,
# amdgpu_psp.c, amdgpu_device.c; the dmesg lines as Linux prints them)

_DMESG = "[    3.353884] amdgpu 0000:19:00.0: "


def test_an_optional_vega20_firmware_miss_is_harmless_and_says_why():
    for fw, why in (("vega20_ta.bin", "trusted applications"), ("vega20_mec2.bin", "second compute micro-engine")):
        d = explain_line(f"{_DMESG}Direct firmware load for amdgpu/{fw} failed with error -2")
        assert (d.rule, d.severity.value) == ("amdgpu-firmware-optional", "harmless"), fw
        assert why in d.cause and d.fix.startswith("nothing") and d.details["firmware"] == fw
    # the driver's own note that it went on without the TA file (Linux <= 6.2) is harmless too
    found = explain_text(f"{_DMESG}Direct firmware load for amdgpu/vega20_ta.bin failed with error -2\n"
                         f'{_DMESG}psp v11.0: Failed to load firmware "amdgpu/vega20_ta.bin"')
    assert [(d.rule, d.severity.value) for d in found] == [("amdgpu-firmware-optional", "harmless"),
                                                            ("amdgpu-psp-ta-optional", "harmless")]


def test_a_required_vega20_firmware_miss_explains_the_failed_init_after_it():
    # the sequence Linux 5.x prints for a missing PSP secure OS file
    text = "\n".join(f"[    3.96{i}] {ln}" for i, ln in enumerate([
        "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/vega20_sos.bin failed with error -2",
        "amdgpu 0000:03:00.0: amdgpu: failed to init sos firmware",
        "[drm:psp_sw_init [amdgpu]] *ERROR* Failed to load psp firmware!",
        "[drm:amdgpu_device_init.cold [amdgpu]] *ERROR* sw_init of IP block <psp> failed -2",
        "amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init"]))
    got = _answer(text)
    assert got[0] == ("amdgpu-firmware-missing", [1], None)
    assert {r: c for r, _, c in got[1:]} == {
        "amdgpu-psp-sos-failed": "amdgpu-firmware-missing", "amdgpu-psp-firmware-failed": "amdgpu-firmware-missing",
        "amdgpu-ip-block-init-failed": "amdgpu-firmware-missing", "amdgpu-init-failed": "amdgpu-firmware-missing"}
    first = explain_text(text)[0]
    assert first.severity.value == "error" and "linux-firmware" in first.fix and not first.fixable_by_rocmrevive


def test_the_ta_file_is_required_where_the_paste_shows_the_card_failing():
    # from Linux 6.3 psp_v11_0.c returns the TA request's error: the card fails, and the paste says so
    text = (f"{_DMESG}Direct firmware load for amdgpu/vega20_ta.bin failed with error -2\n"
            f"{_DMESG}amdgpu: early_init of IP block <psp> failed -19\n"
            f"{_DMESG}amdgpu: Fatal error during GPU init")
    got = _answer(text)
    assert got[0] == ("amdgpu-firmware-missing", [1], None)
    assert {r: c for r, _, c in got[1:]} == {"amdgpu-ip-block-init-failed": "amdgpu-firmware-missing",
                                             "amdgpu-init-failed": "amdgpu-firmware-missing"}
    assert "Linux 6.3" in explain_text(text)[0].cause
    # the MEC2 file stays optional whatever follows: the failure is another one's
    text = (f"{_DMESG}Direct firmware load for amdgpu/vega20_mec2.bin failed with error -2\n"
            f"{_DMESG}amdgpu: Fatal error during GPU init")
    assert [d.rule for d in explain_text(text)] == ["amdgpu-init-failed", "amdgpu-firmware-optional"]


@pytest.mark.parametrize("line,rule", [
    ("amdgpu 0000:03:00.0: amdgpu: fail to initialize asd microcode", "amdgpu-psp-asd-failed"),
    ("[drm:amdgpu_device_ip_init [amdgpu]] *ERROR* hw_init of IP block <smu> failed -22", "amdgpu-ip-block-init-failed"),
    ("amdgpu 0000:03:00.0: Direct firmware load for amdgpu/vega20_smc.bin failed with error -2", "amdgpu-firmware-missing"),
    ("amdgpu 0000:03:00.0: Direct firmware load for amdgpu/vega20_tabular.bin failed with error -2",
     "amdgpu-firmware-missing"),
])
def test_the_other_firmware_and_init_lines(line, rule):
    d = explain_line(line)
    assert d.rule == rule and d.severity.value == "error"
    # a block's suspend or resume failure is not an init failure
    assert explain_line("[drm:amdgpu_device_ip_suspend_phase2 [amdgpu]] *ERROR* suspend of IP block <psp> "
                        "failed -22") is None


def test_the_command_answers_an_optional_firmware_miss_as_harmless():
    r = _run("--json", "explain", stdin=f"{_DMESG}Direct firmware load for amdgpu/vega20_ta.bin failed with error -2\n")
    doc = json.loads(r.stdout)
    assert r.returncode == 0
    d = doc["diagnoses"][0]
    assert (d["rule"], d["severity"]) == ("amdgpu-firmware-optional", "harmless") and d["fix"].startswith("nothing")


# ------------------------------------------------------------------------------------------
# the fifth pass: MIOpen's find failure, ROCr's loader refusal, PyTorch's empty device list, the old ROC-smi's levels

@pytest.mark.parametrize("line", [
    "MIOpen Error: /MIOpen/src/ocl/convolutionocl.cpp:518: Forward Convolution cannot be executed due to incorrect params",
    "MIOpen Error: /root/driver/MLOpen/src/ocl/convolutionocl.cpp:1157: Fwd Convolution cannot be executed due to "
    "incorrect params",
    "MIOpen Error: /long_pathname/src/ocl/convolutionocl.cpp:903: No suitable algorithm was found to execute the "
    "required convolution",
])
def test_miopen_finding_no_algorithm_old_and_new(line):
    d = explain_line(line)
    assert d.rule == "miopen-no-suitable-algorithm" and "MIOPEN_LOG_LEVEL=6" in d.fix


def test_rocr_incompatible_arguments_is_answered_for_the_loader_call_only():
    d = explain_line("hsa_executable_load_code_object failed: HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: The arguments "
                     "passed to a functions are not compatible.")
    assert d.rule == "hsa-code-object-incompatible" and "gfx906:sramecc+:xnack-" in d.fix
    # the bare status string carries no call, hence no one cause: not this answer
    bare = explain_line("HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: The arguments passed to a functions are not compatible.")
    assert bare is None or bare.rule != "hsa-code-object-incompatible"


def test_pytorch_no_gpus_in_rocm_and_cuda_builds():
    for api in ("HIP", "CUDA"):
        d = explain_line(f"RuntimeError: No {api} GPUs are available")
        assert d.rule == "torch-no-gpus" and d.details["api"] == api and "Linux:" in d.fix and "Windows:" in d.fix
    assert explain_line("CUDA GPU is not available. Please run on a CUDA-enabled device.") is None


def test_the_old_rocsmi_set_level_explains_the_refused_write_before_it():
    text = ("Unable to write to to sysfs file /sys/class/drm/card0/device/pp_od_clk_voltage\n"
            "WARNING: IO or OS error\n"
            "GPU[0] \t\t: Unable to set mclk clock to Level m 1 1200 1000\n")
    got = _answer(text)
    assert got == [("rocsmi-old-set-level", [3], None), ("rocsmi-old-write-failed", [1], "rocsmi-old-set-level")]
    assert explain_text(text)[0].details == {"clk": "mclk", "value": "m 1 1200 1000"}


# ------------------------------------------------------------------------------------------
# a message with several causes in the sources is answered with each cause and the check that tells it

def test_invalid_isa_names_each_cause_of_the_sources_with_its_check():
    d = explain_line("HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.")
    assert d.rule == "hsa-invalid-isa" and "not mean code for another GPU" in d.cause
    causes = d.details["causes"]
    assert [c["id"] for c in causes] == ["work-group-registers", "code-for-another-gpu", "unknown-isa-handle"]
    assert all(c["check"] for c in causes) and "not this paste's" not in causes[2]["cause"]
    # a paste that shows a queue's asynchronous error puts the API call's cause last and says it is not this one
    queued = explain_text("Queue at 0x7f23e803a000 inactivated due to async error:\n"
                          "        HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.")
    first = queued[0]
    assert first.rule == "hsa-invalid-isa" and [d.rule for d in queued[1:]] == ["hsa-queue-inactivated"]
    assert first.details["causes"][-1]["id"] == "unknown-isa-handle"
    assert "not this paste's" in first.details["causes"][-1]["cause"]
    # INVALID_CODE_OBJECT and ISA_NAME are other statuses, not this answer
    assert explain_line("HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid.").rule == \
        "hsa-invalid-code-object"
    name = explain_line("HSA_STATUS_ERROR_INVALID_ISA_NAME: The instruction set architecture name is invalid.")
    assert name is None or name.rule != "hsa-invalid-isa"


def test_hips_0x100f_queue_status_is_the_registers_not_another_gpus_code():
    d = explain_line(":0:rocdevice.cpp            :2303: 768423197593 us: Device::callbackQueue aborting with status: 0x100f")
    assert d.rule == "hip-callback-queue-status"
    assert [c["id"] for c in d.details["causes"]] == ["work-group-registers", "code-for-another-gpu"]
    assert "__launch_bounds__" in d.fix


def test_a_cause_without_its_check_is_caught(monkeypatch):
    isa = catalogue.by_id()["hsa-invalid-isa"]
    broken = tuple(dataclasses.replace(e, causes=(e.causes[0], {"id": "x", "cause": "y", "check": ""}))
                   if e is isa else e for e in ENTRIES)
    monkeypatch.setattr(catalogue, "entries", lambda: broken)
    assert any("hsa-invalid-isa: a cause needs" in p for p in problems())


def test_the_present_state_error_and_the_hostcall_line_that_explains_it():
    text = ("Pcie atomics not enabled, hostcall not supported\n"
            "HIP error: the operation cannot be performed in the present state\n")
    found = explain_text(text)
    assert [d.rule for d in found] == ["hip-hostcall-no-pcie-atomics", "hip-illegal-state"]
    assert found[1].details["explained_by"] == {"rule": "hip-hostcall-no-pcie-atomics", "line": 1}
    alone = explain_line("hipErrorIllegalState")
    assert [c["id"] for c in alone.details["causes"]] == ["hostcall-without-pcie-atomics", "group-memory-too-large",
                                                          "stream-capture-order"]


def test_dkms_is_answered_only_where_it_names_the_amdgpu_module():
    ours = explain_line("Consult /var/lib/dkms/amdgpu/6.10.5-2084815.24.04/build/make.log for more information.")
    assert ours.rule == "dkms-amdgpu-build-failed" and "--no-dkms" in ours.fix
    for line in ("Consult /var/lib/dkms/nvidia/550.54.14/build/make.log for more information.",
                 "Error! Bad return status for module build on kernel: 6.8.0-45-generic (x86_64)"):
        assert explain_line(line) is None


# ------------------------------------------------------------------------------------------
# a paste from Windows: rocmrevive runs on Linux only, and the action says what applies there

def test_a_windows_paste_drops_rocmrevive_and_linux_steps_from_the_action():
    line = ("Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7f00. Reason: Page not present or "
            "supervisor privilege.")
    linux = explain_text(line)[0]
    assert "rocmrevive" in linux.fix and "Windows" not in linux.fix
    win = explain_text("C:\\Users\\me\\koboldcpp> koboldcpp.exe --usecublas\n" + line)[0]
    assert win.rule == linux.rule and not win.fixable_by_rocmrevive
    assert win.fix.startswith("on Windows (the paste names C:\\)") and "rocmrevive verify" not in win.fix
    assert "AMD_SERIALIZE_KERNEL=3" in win.fix and "hipinfo" in win.fix
    assert "Linux only" in win.why_not and win.details["context"]["windows"] == "C:\\"
    # a fix rocmrevive would make on Linux is not claimed on Windows
    dll = explain_text("amdhip64.dll loaded\nrocBLAS error: Cannot read C:/hip/bin/rocblas/library/TensileLibrary.dat: "
                       "No such file or directory for GPU arch : gfx906")[0]
    assert dll.rule == "rocblas-tensile-missing" and not dll.fixable_by_rocmrevive and "sudo" not in dll.fix
    # an action already written for Windows stays as it is
    both = explain_text("HIP SDK 5.7.1\nRuntimeError: No HIP GPUs are available")[0]
    assert both.rule == "torch-no-gpus" and "Windows:" in both.fix and "Linux:" in both.fix


@pytest.mark.parametrize("text,word", [
    ("Error: llama runner process has terminated: exit status 0xc0000005", "exit status 0xc0000005"),  # Go, Windows
    ("Error: llama runner process has terminated: exit status 0xc0000409", "exit status 0xc0000409"),
    ("Process finished with exit code -1073741819 (0xC0000005)", "exit code -1073741819 (0xC0000005)"),
    ("worker exited, exit code: 0xC0000135", "exit code: 0xC0000135"),
    ("llama-server process has terminated: exit status 0xffffffff: NTSTATUS 0xffffffff", "exit status 0xffffffff"),
    # Linux: an exit status of 0-255, a signal, and a hex number that is no exit status (an address) are not Windows'
    ("Error: llama runner process has terminated: exit status 2", None),
    ("Error: llama runner process has terminated: signal: segmentation fault (core dumped)", None),
    ("Process finished with exit code 139", None),
    ("Memory access fault by GPU node-1 (Agent handle: 0xc0000005) on address 0xc0000005. Reason: Unknown.", None),
])
def test_an_exit_status_only_windows_gives_marks_the_paste_as_windows(text, word):
    assert context_of(text).windows == word
    d = explain_text(text)  # where the line is a message the catalogue answers, the answer follows the context
    if d:
        assert d[0].details.get("context", {}).get("windows") == word
        assert ("Windows" in d[0].fix and not d[0].fixable_by_rocmrevive) if word else "Windows" not in d[0].fix


def test_ollamas_runner_on_windows_gets_the_windows_action_and_on_linux_the_linux_one():
    win = explain_text("Error: llama runner process has terminated: exit status 0xc0000005")[0]
    linux = explain_text("Error: llama runner process has terminated: exit status 2")[0]
    assert win.rule == linux.rule == "ollama-runner-terminated"
    assert win.fix.startswith("on Windows:") and "%LOCALAPPDATA%\\Ollama\\server.log" in win.fix
    assert "journalctl" not in win.fix and "rocmrevive" not in win.fix
    assert linux.fix == catalogue.by_id()["ollama-runner-terminated"].action and "journalctl" in linux.fix


def test_the_command_says_the_causes_and_the_windows_action():
    text = ("### HCC STATUS_CHECK Error: HSA_STATUS_ERROR_INVALID_ISA (0x100f) at file:mcwamp_hsa.cpp line:1192\n"
            "Queue error state in GPU agent: AMD gfx906\n")
    r = _run("--json", "explain", stdin=text)
    assert r.returncode == 0
    d = json.loads(r.stdout)["diagnoses"][0]
    assert d["rule"] == "hsa-invalid-isa" and d["details"]["causes"][0]["id"] == "work-group-registers"
    r = _run("explain", stdin=text)
    assert r.returncode == 0 and r.stdout.count("check: ") == 3
    r = _run("--json", "explain", stdin="C:\\ROCm\\bin\\hipinfo.exe\nno ROCm-capable device is detected")
    d = json.loads(r.stdout)["diagnoses"][0]
    assert d["rule"] == "hip-no-device" and d["fixable_by_rocmrevive"] is False and "Windows" in d["fix"]


# ------------------------------------------------------------------------------------------
# rocminfo's 'Unable to open /dev/kfd read-write: <strerror>': the errno tells the causes apart

@pytest.mark.parametrize("reason,rule", [
    ("Permission denied", "rocminfo-kfd-open"), ("Operation not permitted", "rocminfo-kfd-open"),
    ("Cannot allocate memory", "rocminfo-kfd-open-nomem"),
    ("No such file or directory", "rocminfo-kfd-open-missing"), ("No such device", "rocminfo-kfd-open-missing"),
    ("Invalid argument", "rocminfo-kfd-open-other"), ("Resource temporarily unavailable", "rocminfo-kfd-open-other"),
])
def test_dev_kfd_refused_is_answered_by_its_errno(reason, rule):
    d = explain_line(f"Unable to open /dev/kfd read-write: {reason}")
    assert d.rule == rule and d.details["reason"] == reason
    # the permission answer (the groups) only for EACCES and EPERM
    assert ("usermod" in d.fix) == (rule == "rocminfo-kfd-open")


def test_enomem_on_dev_kfd_names_its_causes_and_explains_the_out_of_resources_after_it():
    text = ("ROCk module is loaded\n"
            "Unable to open /dev/kfd read-write: Cannot allocate memory\n"
            "alice is member of render group\n"
            "hsa api call failure at: /src/rocminfo/rocminfo.cc:1142\n"
            "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.")
    found = explain_text(text)
    assert found[0].rule == "rocminfo-kfd-open-nomem" and "no permission problem" in found[0].cause
    causes = {c["id"]: c for c in found[0].details["causes"]}
    assert list(causes) == ["no-kfd-device", "kernel-allocation"]
    assert "added device" in causes["no-kfd-device"]["check"] and "kfd_pasid" in causes["no-kfd-device"]["cause"]
    out = next(d for d in found if d.rule == "hsa-out-of-resources")
    assert out.details["explained_by"]["rule"] == "rocminfo-kfd-open-nomem"
    assert "Cannot allocate memory is no permission problem" in out.cause


def test_invalid_isas_register_size_exception_dates_from_rocm_4_5():
    isa = catalogue.by_id()["hsa-invalid-isa"]
    assert "every release" not in isa.meaning + isa.versions
    assert "exception since ROCm 4.5" in isa.meaning and "exception since ROCm 4.5" in isa.versions


def test_the_sriov_mailbox_loop_explains_the_driver_that_never_goes_live():
    paste = ("amdgpu 0000:08:00.0: amdgpu: trn=2 ACK should not assert! wait again !\n"
             "ROCk module is NOT live, possibly no GPU devices\n"
             "ERROR:root:Driver not initialized (amdgpu not found in modules)\n")
    found = explain_text(paste)
    assert [d.rule for d in found] == ["amdgpu-sriov-mailbox-ack", "rocminfo-rock-not-live", "rsmi-driver-not-initialized"]
    assert [d.details.get("explained_by", {}).get("rule") for d in found[1:]] == ["amdgpu-sriov-mailbox-ack"] * 2
    # without the module at all rocminfo says NOT loaded, another entry
    assert explain_text("ROCk module is NOT loaded, possibly no GPU devices")[0].rule == "rocminfo-rock-not-loaded"


@pytest.mark.parametrize("line,lib", [
    ("ImportError: libamdhip64.so.6: cannot open shared object file: No such file or directory", "libamdhip64.so.6"),
    ("./llama-cli: error while loading shared libraries: librocblas.so.5: cannot open shared object file: No such file "
     "or directory", "librocblas.so.5"),
])
def test_a_rocm_soname_the_loader_cannot_find(line, lib):
    d = explain_text(line)[0]
    assert d.rule == "rocm-library-not-found"
    # a library outside ROCm is not this entry's
    assert not any(x.rule == "rocm-library-not-found"
                   for x in explain_text("ImportError: libGL.so.1: cannot open shared object file: No such file or directory"))


def test_hip6_r0600_symbols_at_link_time_and_not_any_undefined_reference():
    d = explain_text("main.cpp:(.text+0x322): undefined reference to `hipChooseDeviceR0600'")[0]
    assert d.rule == "hip6-symbol-older-runtime" and "ROCm 5.x" in d.cause
    assert not any(x.rule == "hip6-symbol-older-runtime" for x in explain_text("undefined reference to `hipMalloc'"))


def test_the_ras_fatal_interrupt_explains_the_reset_after_it():
    paste = ("amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!\n"
             "amdgpu 0000:e3:00.0: amdgpu: GPU reset begin!\n")
    found = explain_text(paste)
    assert found[0].rule == "amdgpu-ras-uncorrectable" and found[0].severity.value == "error"
    assert found[1].details.get("explained_by", {}).get("rule") == "amdgpu-ras-uncorrectable"


def test_the_literal_key_of_a_pattern_is_text_every_match_holds():
    """explain searches an entry's (or a rule's) pattern only in lines holding its key: the longest literal run
    of the pattern's top-level sequence. A pattern that ignores case, or whose top level is an alternation, has
    none (every line is searched, as before)."""
    import re

    from rocmrevive.diagnose.catalogue import required_literal
    from rocmrevive.diagnose.explain import rules_keyed

    assert required_literal(re.compile(r"rocBLAS error: Cannot read (?P<p>\S+)")) == "rocBLAS error: Cannot read "
    assert required_literal(re.compile(r"abc(?:def)?ghijk\d+xy")) == "ghijk"
    assert required_literal(re.compile(r"(?i)invalid device function")) is None
    assert required_literal(re.compile(r"invalid device function", re.I)) is None
    assert required_literal(re.compile(r"out of memory|OOM killer")) is None
    assert required_literal(re.compile(r"ab\s+cd")) is None            # runs shorter than 4 characters: no key
    # a group matched once is opened (its literal joins the run around it); a repeated group or one with flags is not
    assert required_literal(re.compile(r"(?P<path>(?:/\w+)*/libdrm/amdgpu\.ids): (?P<r>\w+)")) == "/libdrm/amdgpu.ids: "
    assert required_literal(re.compile(r"(?:x|y)(?P<s>hip\w+R0600)\b")) == "R0600"
    assert required_literal(re.compile(r"(?:abcdef)+xy")) is None
    assert required_literal(re.compile(r"(?i:abcdef)gh")) is None
    keyed = [(e, key) for e, key in catalogue.keyed_from_data() if key]
    assert len(keyed) > 200
    for e, key in keyed:   # every entry's example line holds its key, and is answered (the tests above)
        assert key in e.filled(), (e.id, key)
        m = e.pattern.search(e.filled())
        assert m is None or key in m.group(0), e.id
    assert sum(1 for _, k in rules_keyed() if k) >= 20


def test_a_long_log_gives_the_same_answers_with_and_without_the_keys(monkeypatch):
    from rocmrevive.diagnose import explain

    lines = [f"level=INFO source=server.go:{i} msg=\"request served\"" for i in range(300)]
    lines[120] = "HIP error: invalid device function"
    lines[240] = ("rocBLAS error: Cannot read /opt/rocm-6.4.1/lib/rocblas/library/TensileLibrary.dat: No such file or "
                  "directory for GPU arch : gfx906")
    text = "\n".join(lines + [e.filled() for e in catalogue.entries()[:60]])
    assert len(text.splitlines()) >= explain.KEYS_FROM   # long enough for the keys to be read
    keyed = [(d.rule, d.lines) for d in explain.explain_text(text)]
    monkeypatch.setattr(catalogue, "keyed_from_data", catalogue.answered_from_data)
    monkeypatch.setattr(explain, "rules_keyed", lambda: explain._UNKEYED_RULES)
    assert [(d.rule, d.lines) for d in explain.explain_text(text)] == keyed
    assert len(keyed) > 20


def test_a_short_paste_does_without_the_keys():
    """Reading the keys costs about 40 ms once: a paste shorter than KEYS_FROM lines searches every line instead."""
    from rocmrevive.diagnose import explain

    catalogue.keyed_from_data.cache_clear()
    explain.rules_keyed.cache_clear()
    assert explain.explain_text("HIP error: invalid device function")[0].rule == "torch-invalid-device-function"
    assert catalogue.keyed_from_data.cache_info().currsize == 0 and explain.rules_keyed.cache_info().currsize == 0
