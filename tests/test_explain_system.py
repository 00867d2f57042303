"""``rocmrevive explain`` on what the system around the runtimes prints on a gfx906 machine (the catalogue's ninth pass
for the system: amd-smi's CLI and Python interface, Docker's device requests, ROCm's Kubernetes device plugin, dpkg's
file conflicts between ROCm packages, TheRock's rocm Python packages, ONNX Runtime's ROCm providers). Each answered
text is the tool's own line as its source prints it, with the prefixes a log puts before it; each near miss is a text
those entries must NOT answer (another device, another package, another status: a wrong answer is worse than none)."""
from __future__ import annotations

import pytest

from rocmrevive.diagnose.explain import explain_text
from tests.explain_checks import answered_alone, cause_ids, explain_cli

SYSTEM = ("amdsmi-driver-not-initialized", "amdsmi-no-gpu-devices", "amdsmi-no-cpu-devices", "amdsmi-cli-not-supported",
          "amdsmi-status-not-supported", "amdsmi-library-not-found", "docker-device-not-found", "docker-gpus-no-driver",
          "docker-group-not-in-image",
          "k8s-amdgpu-driver-unavailable", "k8s-partition-file-missing", "dpkg-rocm-file-conflict",
          "rocm-sdk-target-family-unavailable", "rocm-sdk-missing-libraries", "rocm-sdk-libraries-tests-skipped",
          "rocm-sdk-version-mismatch", "rocm-sdk-devel-missing", "onnxruntime-provider-unavailable")

AMDSMI_NO_DRIVER = (
    "ERROR:root:Unable to get devices, driver not initialized (amdgpu not found in modules)\n"
    "ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)\n"
    "ERROR:root:Unable to detect any CPU devices, check amd_hsmp version and module status (sudo modprobe amd_hsmp)\n")

# variants an owner pastes: the logger's prefixes, other paths, versions, packages and the other forms a pattern takes
ANSWERED = [
    ("ERROR: Unable to get devices, driver not initialized (amdgpu not found in modules)", "amdsmi-driver-not-initialized"),
    ("ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)",
     "amdsmi-no-gpu-devices"),
    ("ERROR: Unable to detect any GPU devices, check amdgpu version and module status", "amdsmi-no-gpu-devices"),  # before 2024-09
    ("ERROR: Unable to detect any CPU devices, check amd_hsmp version and module status (sudo modprobe amd_hsmp)",
     "amdsmi-no-cpu-devices"),
    ("ERROR:root:Unable to detect any CPU devices, check amd_hsmp (or) hsmp_acpi version and module status",
     "amdsmi-no-cpu-devices"),
    ("AMDSMI has returned error '-1002' - 'Command not supported' Error code: -1002", "amdsmi-cli-not-supported"),
    ('{"error": "AMDSMI has returned error \'-1002\' - \'Command not supported\'", "code": -1002}',
     "amdsmi-cli-not-supported"),
    ("\t2 | AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported", "amdsmi-status-not-supported"),
    ("Unable to find amdsmi library try installing amd-smi-lib from your package manager", "amdsmi-library-not-found"),
    ('docker: Error response from daemon: error gathering device information while adding custom device "/dev/kfd": '
     "no such file or directory.", "docker-device-not-found"),
    ('Error response from daemon: error gathering device information while adding custom device "/dev/dri": no such '
     "file or directory", "docker-device-not-found"),
    ('Error: error gathering device information while adding custom device "/dev/dri/renderD128": no such file or '
     "directory", "docker-device-not-found"),
    ('docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
     "docker-gpus-no-driver"),
    ('Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]]',
     "docker-gpus-no-driver"),
    ("docker: Error response from daemon: unable to find group render: no matching entries in group file.",
     "docker-group-not-in-image"),
    ("Error response from daemon: unable to find group video: no matching entries in group file", "docker-group-not-in-image"),
    ("F1207 09:12:03.482113       1 amdgpu.go:159] amdgpu driver unavailable. exiting with exit code 2. error: stat "
     "/sys/module/amdgpu/drivers/: no such file or directory", "k8s-amdgpu-driver-unavailable"),
    ("W1207 09:12:03.482113       1 amdgpu.go:186] Failed to read 'current_compute_partition' file at "
     "/sys/module/amdgpu/drivers/pci:amdgpu/0000:43:00.0/current_compute_partition: open "
     "/sys/module/amdgpu/drivers/pci:amdgpu/0000:43:00.0/current_compute_partition: no such file or directory",
     "k8s-partition-file-missing"),
    ("W1207 09:12:03.482200       1 amdgpu.go:193] Failed to read 'current_memory_partition' file at "
     "/sys/module/amdgpu/drivers/pci:amdgpu/0000:43:00.0/current_memory_partition: open "
     "/sys/module/amdgpu/drivers/pci:amdgpu/0000:43:00.0/current_memory_partition: no such file or directory",
     "k8s-partition-file-missing"),
    (" trying to overwrite '/opt/rocm-6.3.1/lib/llvm/bin/clang-offload-bundler', which is also in package "
     "rocm-llvm6.3.1 18.0.0.24491.60301-48~22.04", "dpkg-rocm-file-conflict"),  # dpkg before 1.22.12
    ("trying to overwrite '/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.7.31921', which is also in package "
     "libamdhip64-5 (5.7.1-3)", "dpkg-rocm-file-conflict"),  # dpkg 1.22.12+: the version in parentheses; a ROCm package as owner
    ("ValueError: Requested ROCM_SDK_TARGET_FAMILY=gfx906 is not available in the distribution (available: "
     "gfx110X-all, gfx94X-dcgpu)", "rocm-sdk-target-family-unavailable"),
    ("ModuleNotFoundError: Missing required rocm libraries. Please refer to Python setup instructions, reinstall your "
     "virtual environment, or attempt to install manually via `pip install rocm[libraries,devel]`",
     "rocm-sdk-missing-libraries"),
    ("NOTE: Skipping libraries tests (not installed for this arch)", "rocm-sdk-libraries-tests-skipped"),
    ("UserWarning: The program was compiled against a ROCm version matching '7\\.10\\.0.*' but the installed ROCm "
     "version in this Python environment is 7.9.0rc20251008. This incompatibility may result in unexpected behavior",
     "rocm-sdk-version-mismatch"),
    ("RuntimeError: The program was compiled against a ROCm version matching '7\\.2\\..*' but the installed ROCm "
     "version in this Python environment is 7.10.0a20251120.", "rocm-sdk-version-mismatch"),
    ("ERROR: Could not load the `rocm[devel]` package, which is required to access runtime tools and development "
     "files. Please install it with your package manager (pip, uv, etc)", "rocm-sdk-devel-missing"),
    ("/home/me/venv/lib/python3.12/site-packages/onnxruntime/capi/onnxruntime_inference_collection.py:121: UserWarning: "
     "Specified provider 'ROCMExecutionProvider' is not in available provider names.Available providers: "
     "'AzureExecutionProvider, CPUExecutionProvider'", "onnxruntime-provider-unavailable"),
    ("UserWarning: Specified provider 'MIGraphXExecutionProvider' is not in available provider names.It may be an "
     "external provider load from shared library. Available providers: 'CPUExecutionProvider'",
     "onnxruntime-provider-unavailable"),
]


@pytest.mark.parametrize("text,rule", ANSWERED)
def test_the_systems_lines_are_answered_by_their_entries(text, rule):
    d = answered_alone(text, rule)
    if d.severity.value == "harmless":
        assert d.fix.startswith("nothing")


# near misses: other devices, other packages, other statuses and providers, the lines beside the answered ones
NEAR_MISSES = [
    'docker: Error response from daemon: error gathering device information while adding custom device "/dev/kvm": '
    "no such file or directory.",  # another device: not this card's
    'error gathering device information while adding custom device "/dev/ttyUSB0": no such file or directory',
    'error gathering device information while adding custom device "/dev/dri": not a device node',  # not a missing node
    'could not select device driver "" with capabilities: [[compute utility]]',
    "docker: Error response from daemon: unknown or invalid runtime name: nvidia.",
    "docker: Error response from daemon: unable to find group docker: no matching entries in group file.",
    "unable to find user rocm: no matching entries in passwd file",
    " trying to overwrite '/usr/share/xsessions/enlightenment.desktop', which is also in package enlightenment-data",
    " trying to overwrite '/usr/lib/python3/dist-packages/ship/__init__.py', which is also in package python3-ship 1.0-1",
    "trying to overwrite directory '/opt/rocm-6.3.1/lib' in package hip-runtime-amd 6.3.1 with nondirectory",
    "AMDSMI has returned error '-1010' - 'Permission Denied' Error code: -1010",  # not answered: its cause not read
    "AMDSMI has returned error '-1032' - 'Device not initialized' Error code: -1032",
    "\t10 | AMDSMI_STATUS_NO_PERM - Permission Denied",
    "ERROR: Driver not loaded (amdgpu not found in modules)",  # amdgpu live and the library's init failing: not read
    "No GPUs on machine",
    "Unable to get CORE devices, amd_hsmp driver not loaded (sudo modprobe amd_hsmp)",
    "amdgpu driver unavailable: stat /sys/module/amdgpu/drivers/: no such file or directory",  # the tests' form only
    "Failed to read 'current_compute_partition' file at /sys/x/current_compute_partition: permission denied",
    "Failed to read 'numa_node' file at /sys/module/amdgpu/drivers/pci:amdgpu/0000:43:00.0/numa_node: EOF",
    "NOTE: Skipping profiler tests (not installed)",
    "[rocm_sdk] offload-arch not found",
    "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: "
    "'AzureExecutionProvider, CPUExecutionProvider'",  # the application asked for NVIDIA's provider
    "Specified provider 'ROCMExecutionProvider' is unavailable. Available providers: 'CPUExecutionProvider'",
    "GPU[0]          : Not supported on the given system",  # rocm-smi's, not amd-smi's
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_answered_by_the_system_entries(text):
    assert not {d.rule for d in explain_text(text)} & set(SYSTEM)


def test_amd_smi_without_a_live_driver_is_answered_by_its_first_line():
    found = explain_text(AMDSMI_NO_DRIVER)
    assert [d.rule for d in found] == ["amdsmi-driver-not-initialized", "amdsmi-no-gpu-devices", "amdsmi-no-cpu-devices"]
    assert [d.details.get("explained_by", {}).get("rule") for d in found[1:]] == ["amdsmi-driver-not-initialized"] * 2
    causes = found[0].details["causes"]
    assert [c["id"] for c in causes] == ["amdgpu-not-loaded", "amdgpu-built-in", "amdgpu-probe-unfinished"]
    assert all(c["check"] for c in causes) and "initstate" in causes[1]["check"]
    assert found[2].severity.value == "harmless"


def test_several_causes_each_with_its_check():
    for text, ids in (
            ("Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)",
             ["amdgpu-not-live", "no-gpu-bound"]),
            ('error gathering device information while adding custom device "/dev/kfd": no such file or directory',
             ["no-device-on-host", "daemon-in-a-vm"]),
            ("trying to overwrite '/opt/rocm-6.4.1/lib/libamdhip64.so.6', which is also in package hip-runtime-amd "
             "6.4.43483.60401-83~24.04", ["two-rocm-releases", "third-party-rocm-package"])):
        assert cause_ids(text) == ids


def test_a_harmless_line_never_takes_the_root_cause_place():
    paste = ("ERROR: Unable to detect any CPU devices, check amd_hsmp version and module status (sudo modprobe amd_hsmp)\n"
             "AMDSMI has returned error '-1002' - 'Command not supported' Error code: -1002\n"
             "dpkg: error processing archive /var/cache/apt/archives/rocm-llvm_19.0.0.25133.60401-83~24.04_amd64.deb "
             "(--unpack):\n"
             " trying to overwrite '/opt/rocm-6.4.1/lib/llvm/bin/amdgpu-arch', which is also in package "
             "rocm-llvm6.4.0 19.0.0.25104.60400-47~24.04\n")
    found = explain_text(paste)
    assert found[0].rule == "dpkg-rocm-file-conflict" and found[0].lines == [4]
    assert {d.severity.value for d in found[1:]} == {"harmless"}


def test_the_device_plugins_partition_notes_stay_behind_a_refused_kfd():
    paste = ("W1207 09:12:03.482113 1 amdgpu.go:186] Failed to read 'current_compute_partition' file at "
             "/sys/module/amdgpu/drivers/pci:amdgpu/0000:43:00.0/current_compute_partition: open "
             "/sys/module/amdgpu/drivers/pci:amdgpu/0000:43:00.0/current_compute_partition: no such file or directory\n"
             "Unable to open /dev/kfd read-write: Permission denied\n")
    found = explain_text(paste)
    assert [d.rule for d in found] == ["rocminfo-kfd-open", "k8s-partition-file-missing"]


def test_docker_gpus_answer_gives_the_device_flags_not_gpus():
    d = explain_text('docker: Error response from daemon: could not select device driver "" with capabilities: '
                     "[[gpu]].")[0]
    assert "--device=/dev/kfd" in d.fix and "--device=/dev/dri" in d.fix and "render" in d.fix
    assert "--gpus" in d.cause


def test_docker_desktop_on_windows_keeps_only_what_applies_there():
    paste = ("PS C:\\Users\\me> docker run --device=/dev/kfd --device=/dev/dri rocm/pytorch\n"
             'docker: Error response from daemon: error gathering device information while adding custom device '
             '"/dev/kfd": no such file or directory.\n')
    d = explain_text(paste)[0]
    assert d.rule == "docker-device-not-found" and not d.fixable_by_rocmrevive
    assert d.fix.startswith("on Windows") and "native Docker Engine" in d.fix and "rocmrevive" not in d.fix
    linux = explain_text(paste.replace("PS C:\\Users\\me> ", "$ "))[0]
    assert "rocmrevive doctor" in linux.fix and "lsmod" in linux.fix


def test_a_group_missing_in_the_image_is_answered_with_the_hosts_numeric_ids():
    d = explain_text("docker: Error response from daemon: unable to find group render: no matching entries in group "
                     "file.")[0]
    assert "getent group render" in d.fix and "image" in d.cause and "host's group ids" in d.cause


def test_therock_answers_name_the_gfx906_device_extra():
    for text in ("Requested ROCM_SDK_TARGET_FAMILY=gfx906 is not available in the distribution (available: gfx1151)",
                 "NOTE: Skipping libraries tests (not installed for this arch)",
                 "ERROR: Could not load the `rocm[devel]` package, which is required to access runtime tools and "
                 "development files."):
        assert "device-gfx906" in explain_text(text)[0].fix


def test_the_cli_answers_with_json_and_exit_code():
    code, out = explain_cli(AMDSMI_NO_DRIVER)
    assert code == 0 and out, out
    assert out["recognised"] == 3
    first = out["diagnoses"][0]
    assert first["rule"] == "amdsmi-driver-not-initialized" and first["fixable_by_rocmrevive"] is False
    assert [c["id"] for c in first["details"]["causes"]][:1] == ["amdgpu-not-loaded"]
    assert out["diagnoses"][2]["severity"] == "harmless"
    assert explain_cli("No GPUs on machine")[0] == 3
    code, harmless = explain_cli("AMDSMI has returned error '-1002' - 'Command not supported' Error code: -1002")
    assert code == 0 and harmless and harmless["diagnoses"][0]["fix"].startswith("nothing")


# ------------------------------------------------------------------------------------------
# libdrm's amdgpu.ids table (amdgpu_asic_id.c: fopen's failure, "%s: %s" with the path libdrm was built with)

@pytest.mark.parametrize("line", [
    "/usr/share/libdrm/amdgpu.ids: No such file or directory",
    "/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory",
    "[rank0]: /tmp/build/share/libdrm/amdgpu.ids: Permission denied",
])
def test_a_missing_amdgpu_ids_table_is_harmless_and_says_why(line):
    d = answered_alone(line, "libdrm-amdgpu-ids-missing")
    assert d.severity.value == "harmless" and d.fix.startswith("nothing") and "marketing name" in d.cause


def test_a_missing_amdgpu_ids_table_is_never_the_root_cause_of_a_failure():
    paste = ("/usr/share/libdrm/amdgpu.ids: No such file or directory\n"
             "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
             "Aborted (core dumped)\n")
    found = explain_text(paste)
    # the failure first, the harmless line after it (the abort follows from the failure: listed last)
    assert [d.rule for d in found] == ["hip-no-binary-for-gpu", "libdrm-amdgpu-ids-missing", "process-aborted"]
    code, out = explain_cli(paste, stdin=True)
    assert code == 0 and out and out["diagnoses"][0]["rule"] == "hip-no-binary-for-gpu"


@pytest.mark.parametrize("text", [
    "cp: cannot stat '/usr/share/libdrm/amdgpu.ids': No such file or directory",  # a copy that failed, not libdrm
    "/usr/share/hwdata/pci.ids: No such file or directory",                       # another table
    "/usr/share/libdrm/amdgpu.ids: line 3: Invalid format",                       # not fopen's strerror
])
def test_other_words_about_ids_files_are_not_libdrms(text):
    assert explain_text(text) == []
