"""Recognise known ROCm failure messages by their structure and say what they mean.

Each ``Rule`` is a regular expression over one line (paths, versions, arches and PCI
addresses are captured, never spelled out) and a function that turns the match into a
``Diagnosis``: which library, which GPU target, the cause in plain words, and the command that
fixes it, or why nothing (in rocmrevive) can. The texts come from real reports
(``captures/error_strings.txt``).

    for d in explain_text(open("llama.log").read()):
        print(d.line_numbers, d.library, d.arch, d.cause, d.fix)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from rocmrevive.diagnose.catalogue import (
    EPILOGUE,
    by_rule,
    explained_by,
    layer_of,
    match_entry,
    required_literal,
    sharpen,
)
from rocmrevive.diagnose.diagnosis import (
    HIP_ERRORS,
    Context,
    Diagnosis,
    Rule,
    Said,
    Severity,
    arch_of,
    dir_of,
    norm_arch,
    processor,
    tree_opt,
)
from rocmrevive.diagnose.families import check_command, explain_family, features, hipblaslt_files
from rocmrevive.diagnose.libraries import library_for_text


def _tensile_advice(rule: str, m: re.Match, ctx: Context, cause: str, libdir: str | None,
                    severity: Severity = Severity.ERROR, extra_fix: str = "") -> Diagnosis:
    arch = arch_of(m, ctx)
    proc = processor(arch)
    details = {"library_dir": libdir} if libdir else {}
    if proc is None or proc in ctx.fixable_processors:
        fix = (f"sudo rocmrevive install{tree_opt(libdir)}, then rocmrevive verify{tree_opt(libdir)}"
               + extra_fix)
        return Diagnosis(rule, severity, "rocBLAS (Tensile)", arch, cause, fix, True,
                         None if proc else "the text names no GPU target; install adds gfx906 files",
                         details)
    return Diagnosis(rule, severity, "rocBLAS (Tensile)", arch, cause,
                     f"install a rocBLAS built for {proc}" + extra_fix, False,
                     f"rocmrevive has Tensile files for {', '.join(ctx.fixable_processors)} only", details)


# ------------------------------------------------------------------------------------------
# the rules, most specific first

def _r_tensile_cannot_read(m, ctx):
    path = m.group("path")
    libdir = dir_of(path)
    arch = arch_of(m, ctx)
    cause = (f"rocBLAS found no Tensile library for {arch or 'this GPU'} in {libdir or 'its library folder'}: "
             "the lazy index (TensileLibrary_lazy_<arch>.dat) is missing, so it fell back to the "
             "old single-file name. AMD's ROCm 6.4+ packages no longer ship gfx906 Tensile files.")
    return _tensile_advice("rocblas-tensile-missing", m, ctx, cause, libdir)


def _r_tensile_list(m, ctx):
    cause = ("rocBLAS lists the Tensile libraries it did find after failing to find one for the GPU; "
             "none of them is for this GPU's target")
    return _tensile_advice("rocblas-tensile-list", m, ctx, cause, None, severity=Severity.CONTEXT)


def _r_tensile_init(m, ctx):
    cause = ("rocBLAS could not load any Tensile library for the GPU (files missing, unreadable, or "
             "for other targets), so every GEMM fails")
    return _tensile_advice("rocblas-tensile-init", m, ctx, cause, None)


def _r_tensile_no_paths(m, ctx):
    pattern = m.group("path")
    libdir = dir_of(pattern)
    arch = arch_of(m, ctx)
    cause = (f"rocBLAS looked for {arch or 'the GPU'}'s Tensile code objects in {libdir} and found none: "
             "either that rocBLAS has no files for this GPU, or ROCBLAS_TENSILE_LIBPATH points at "
             "the wrong folder")
    # the folder searched is often the wrong one, so the fix names no --tree
    d = _tensile_advice("rocblas-tensile-no-paths", m, ctx, cause, None,
                        extra_fix="; if ROCBLAS_TENSILE_LIBPATH is set, point it at the rocblas/library "
                                  "folder that has the files (or unset it)")
    d.details["searched"] = pattern
    return d


def _r_kernel_not_found(m, ctx):
    kernel = m.groupdict().get("kernel")
    arch = arch_of(m, ctx)
    cause = ("the Tensile library is inconsistent: a .dat names a kernel whose code object is missing, "
             "damaged, built for another GPU, or refused by the runtime (code object v6 needs ROCm 6.3+)")
    d = Diagnosis("rocblas-kernel-not-found", Severity.ERROR, "rocBLAS (Tensile)", arch, cause,
                  "rocmrevive verify (names the file and the kernel), then sudo rocmrevive install to "
                  "repair the copy", True)
    if kernel:
        d.details["kernel"] = kernel
    return d


def _host_lib_advice(rule, library, arch, cause, severity=Severity.ERROR):
    return Diagnosis(rule, severity, library, arch, cause,
                     "rocmrevive audit (shows which library lacks code for the GPU and what to use instead)",
                     False, "Tensile files fix GEMMs only; this code lives in a host library "
                            "(its .hip_fatbin), which must be a build that includes the GPU")


def _r_rocblas_idf(m, ctx):
    arch = arch_of(m, ctx)
    cause = ("librocblas.so itself has no code for this GPU: rocBLAS functions outside Tensile "
             "(TRSM, TRMM, GEMV, level-1/2) fail, while GEMMs may work. AMD's 6.4+/7.x builds "
             "leave gfx906 out of the host library.")
    return _host_lib_advice("rocblas-invalid-device-function", "rocBLAS (host library)", arch, cause)


def _r_ggml_op_failed(m, ctx):
    op = m.group("op")
    arch = arch_of(m, ctx)
    if op == "SOLVE_TRI":
        cause = ("llama.cpp's SOLVE_TRI runs a triangular solve through rocBLAS TRSM; it fails when "
                 "librocblas.so has no code for this GPU (Tensile files do not cover TRSM)")
        d = _host_lib_advice("llamacpp-op-failed", "llama.cpp → rocBLAS", arch, cause)
    else:
        cause = (f"llama.cpp's GPU operation {op} failed; the next lines say why (most often "
                 "'invalid device function': llama.cpp or a ROCm library has no code for this GPU)")
        d = Diagnosis("llamacpp-op-failed", Severity.ERROR, "llama.cpp (ggml-hip)", arch, cause,
                      "rocmrevive explain on the whole log, and rocmrevive audit", False,
                      "the operation's own error follows this line")
    d.details["operation"] = op
    return d


def _r_ggml_idf(m, ctx):
    arch = arch_of(m, ctx)
    return Diagnosis(
        "llamacpp-invalid-device-function", Severity.ERROR, "llama.cpp (ggml-hip)", arch,
        "a GPU kernel has no code for this GPU: llama.cpp was built without this target "
        "(AMDGPU_TARGETS/GPU_TARGETS), or a ROCm library it calls (rocBLAS, hipBLAS) lacks it",
        "rebuild llama.cpp with -DGGML_HIP=ON -DAMDGPU_TARGETS=" + (processor(arch) or "gfx906")
        + " (GPU_TARGETS on newer versions); rocmrevive audit for the ROCm libraries", False,
        "rocmrevive does not rebuild applications")


_r_torch_idf = Said(
    Severity.ERROR, "PyTorch (HIP)",
    cause="a kernel has no code for this GPU: the PyTorch build does not list it "
          "(torch.cuda.get_arch_list()), or a ROCm library it loads lacks it",
    fix="rocmrevive audit --tree <site-packages>/torch/lib (shows which library lacks the target); "
        "use a PyTorch build that includes it",
    why_not="rocmrevive does not rebuild PyTorch")


def _workaround(lib, arch: str | None) -> str:
    """The library's workaround, naming a package only when it declares the card's processor."""
    return lib.workaround_for(arch.split(":")[0]) if arch else lib.workaround


def _r_hip_idf(m, ctx):
    arch = arch_of(m, ctx)
    lib = library_for_text(m.string)
    if lib is not None:
        return Diagnosis("hip-invalid-device-function", Severity.ERROR, lib.name, arch,
                         f"{lib.name} has no code for this GPU: {lib.breaks}",
                         "rocmrevive audit", False, _workaround(lib, arch))
    return _host_lib_advice("hip-invalid-device-function", "HIP runtime", arch,
                            "a kernel was launched that has no code for this GPU")


def _r_no_binary(m, ctx):
    arch = arch_of(m, ctx, "isas")
    isas = (m.groupdict().get("isas") or "").strip()
    d = Diagnosis(
        "hip-no-binary-for-gpu", Severity.ERROR, "HIP runtime", arch,
        "a program or one of its libraries carries no code object for a GPU in the machine, and "
        "HIP refuses to load it (hipErrorNoBinaryForGpu)",
        "rocmrevive audit (every library × GPU target); rebuild or replace what lacks the target; "
        "HIP_VISIBLE_DEVICES can hide a GPU nothing was built for", False,
        "the missing code is in a compiled program or library, not in rocBLAS's Tensile files")
    if isas:
        d.details["isas"] = isas
    named = check_command(features(m.string)["path"])
    if named and named.startswith("rocmrevive inspect"):
        # the line names the program or library: check that one first
        d.fix = f"{named} (which GPU targets it carries); then " + (d.fix or "")
        d.details["path"] = named.split(" ", 2)[2]
    return d


def _r_cannot_find_co(m, ctx):
    path = m.group("path")
    arch = arch_of(m, ctx)
    lib = library_for_text(path)
    name = lib.name if lib else path.rsplit("/", 1)[-1]
    d = Diagnosis(
        "hip-cannot-find-co", Severity.ERROR, name, arch,
        f"{name} ({path}) carries no code object for {arch or 'this GPU'}"
        + (f": {lib.breaks}" if lib and lib.breaks else ""),
        "rocmrevive audit", False,
        (_workaround(lib, arch) if lib and lib.workaround else "use a build of this library that includes the GPU"),
        {"path": path})
    return d


def _r_static_function(m, ctx):
    code = int(m.group("code"))
    name = HIP_ERRORS.get(code, f"HIP error {code}")
    arch = arch_of(m, ctx)
    if code == 218:
        cause = ("HIP could not load a library's kernels at start-up (hipErrorInvalidKernelFile): the "
                 "code object is damaged, or is a code object version this runtime cannot load "
                 "(v6 needs ROCm 6.3+)")
    elif code in (98, 209):
        cause = f"a library's kernels have no code for this GPU ({name}), found when HIP registered them at start-up"
    else:
        cause = f"HIP could not register a library's kernels at start-up ({name})"
    return Diagnosis("hip-static-function", Severity.ERROR, "HIP runtime", arch, cause,
                     "rocmrevive audit (libraries × targets); HIP_ENABLE_DEFERRED_LOADING=1 (the default) "
                     "postpones this to the first launch", False,
                     "the failing code object is in a host library or program",
                     {"hip_error": code, "hip_error_name": name})


def _r_invalid_argument(m, ctx):
    return Diagnosis(
        "hip-invalid-argument", Severity.ERROR, "PyTorch (HIP)" if "RuntimeError" in m.string else "HIP runtime",
        arch_of(m, ctx),
        "a HIP call got an argument the runtime rejects; this is not specific to missing code. On "
        "multi-GPU gfx906 machines it most often comes from peer-to-peer copies the PCIe path does "
        "not allow, or from a size the device cannot hold",
        "rerun with AMD_SERIALIZE_KERNEL=3 to find the call; rocmrevive rccl (peer-to-peer "
        "readiness); try NCCL_P2P_DISABLE=1", False, "the message does not say which call failed")


_r_async_note = Said(
    Severity.CONTEXT, "PyTorch (HIP)", arch="log",
    cause="PyTorch's note after a HIP error: the stack trace may point at a later call than the one "
          "that failed",
    fix="rerun with AMD_SERIALIZE_KERNEL=3 (and HIP_LAUNCH_BLOCKING=1) to get the "
        "failing call",
    why_not="the error itself is on the line before")


def _r_hipblaslt(m, ctx):
    warning = bool(m.group("override")) or m.string.lstrip().lower().startswith("warning")
    arch = arch_of(m, ctx)
    if warning:
        cause = ("PyTorch tried hipBLASLt, which does not support this GPU, and fell back to "
                 "hipBLAS/rocBLAS: GEMMs still work")
        sev = Severity.WARNING
    else:
        cause = ("PyTorch was told to use hipBLASLt (TORCH_BLAS_PREFER_HIPBLASLT=1 or "
                 "torch.backends.cuda.preferred_blas_library), which does not support this GPU")
        sev = Severity.ERROR
    return Diagnosis("torch-hipblaslt-unsupported", sev, "PyTorch → hipBLASLt", arch, cause,
                     "export TORCH_BLAS_PREFER_HIPBLASLT=0", False,
                     "hipBLASLt has never had gfx906 kernels; the environment variable is the fix")


_r_out_of_resources = Said(
    Severity.ERROR, "ROCr (HSA runtime)",
    cause="the HSA runtime could not open the GPU: usually the user cannot open /dev/kfd and "
          "/dev/dri/renderD* (not in the render and video groups, or a container started without "
          "--device=/dev/kfd --device=/dev/dri), sometimes too many processes hold GPU queues; the thunk "
          "reports every failed open of /dev/kfd so, and only rocminfo's 'Unable to open /dev/kfd read-write: "
          "<reason>' says which (Cannot allocate memory is no permission problem)",
    fix="rocminfo (its 'Unable to open /dev/kfd' line names the reason); for Permission denied: "
        "sudo usermod -aG render,video $USER and log in again (containers: --device=/dev/kfd "
        "--device=/dev/dri --group-add render); rocmrevive doctor checks the device nodes",
    why_not="it is a permission or environment problem, not missing files")


_r_no_device = Said(
    Severity.ERROR, "HIP runtime",
    cause="HIP sees no GPU (hipErrorNoDevice): the amdgpu/KFD driver is not loaded, /dev/kfd is not "
          "accessible, or HIP_VISIBLE_DEVICES/ROCR_VISIBLE_DEVICES hide every GPU",
    fix="rocmrevive detect (what the kernel sees) and rocmrevive doctor",
    why_not="a driver, permission or environment problem")


_r_rccl_failure = Said(
    Severity.ERROR, "RCCL",
    cause="a HIP call inside RCCL failed. With gfx906 on ROCm 6.4+/7.x the usual causes are an RCCL "
          "built without gfx906 (Debian's and AMD's 7.x builds leave it out) and peer-to-peer "
          "access the PCIe topology refuses",
    fix="rocmrevive audit (RCCL row) and rocmrevive rccl; rerun with NCCL_DEBUG=INFO; "
        "NCCL_P2P_DISABLE=1 if peer-to-peer is the problem",
    why_not="RCCL's device code is in librccl.so: it needs a build that includes gfx906")


_r_iommu = Said(
    Severity.WARNING, "RCCL", arch="log",
    cause="RCCL recommends the IOMMU in pass-through mode; without it multi-GPU transfers can hang",
    fix="add iommu=pt to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, reboot",
    why_not="a kernel command-line setting")


_r_fine_grain = Said(
    Severity.WARNING, "RCCL", arch="log",
    cause="RCCL recommends fine-grained PCIe memory for cards that talk over PCIe",
    fix="export HSA_FORCE_FINE_GRAIN_PCIE=1",
    why_not="an environment setting")


_r_no_supported_gpus = Said(
    Severity.ERROR, "application's bundled ROCm",
    cause="the application's own ROCm runtime or llama.cpp build does not list this GPU (bundles for "
          "ROCm 6.4+/7.x leave gfx906 out)",
    fix="rocmrevive audit --tree <the application's lib folder>; use its Vulkan backend, or a "
        "build with gfx906",
    why_not="rocmrevive does not patch applications' private bundles")


def _r_hip_too_old(m, ctx):
    ver = m.group("ver")
    return Diagnosis(
        "hip-version-too-old", Severity.ERROR, "build (HIP version check)", arch_of(m, ctx),
        f"the build found a HIP older than {ver} (often a distribution's ROCm 5.x, e.g. Ubuntu's "
        "hipcc 5.7.1); llama.cpp's HIP backend requires 6.1",
        f"install ROCm {ver} or newer (6.4 with rocmrevive install for gfx906) and point the build "
        "at it (ROCM_PATH, HIP_PATH)", False, "the installed ROCm is too old for the program",
        {"required": ver})


def _r_bar_small(m, ctx):
    pci = m.group("pci")
    return Diagnosis(
        "pci-bar-too-small", Severity.WARNING, "amdgpu-install (GPU auto-detection)", ctx.arch,
        f"the installer could not read the GPU at {pci} through its PCI BAR, which is smaller than "
        "the card's memory (Above 4G Decoding / Resizable BAR off, or an MI50 vBIOS with a "
        "partial BAR); it then installs the generic packages, which is harmless",
        "enable Above 4G Decoding and Resizable BAR in the firmware setup; rocmrevive detect shows "
        "BAR and VRAM sizes (a full BAR also matters for peer-to-peer)", False,
        "a firmware setting", {"pci": pci})


_r_ip_discovery = Said(
    Severity.WARNING, "amdgpu-install (GPU auto-detection)", arch="log",
    cause="the installer's auto-detection could not read any GPU's IP discovery table (after a "
          "'Bar size smaller than needed' warning); it falls back to the generic ROCm packages, "
          "and the GPU itself is not affected",
    fix="enable Above 4G Decoding / Resizable BAR to silence it; otherwise ignore it",
    why_not="nothing is broken")


def _r_glibcxx(m, ctx):
    what = m.group("ver")
    return Diagnosis(
        "toolchain-newer-runtime", Severity.ERROR, "linker", None,
        f"something was built against a newer C/C++ runtime ({what}) than this system has: "
        "packages or prebuilt libraries for a newer distribution release",
        "use packages built for this distribution release, or build from source here", False,
        "not a GPU problem: the system libraries are older than the binaries", {"version": what})


def _r_apt_hipcc(m, ctx):
    pkg, want, got = m.group("pkg"), m.group("want"), m.group("got")
    rocm = None
    mm = re.search(r"\.([0-9])0([0-9])0([0-9])-", want)
    if mm:
        rocm = f"{mm.group(1)}.{mm.group(2)}.{mm.group(3)}"
    return Diagnosis(
        "apt-hipcc-conflict", Severity.ERROR, "apt (AMD repository vs distribution)", None,
        f"apt prefers the distribution's {pkg} {got} over AMD's {want}"
        + (f" (ROCm {rocm})" if rocm else "") + ", so AMD's packages cannot be installed",
        "pin AMD's repository: /etc/apt/preferences.d/rocm-pin-600 with 'Package: *', "
        "'Pin: release o=repo.radeon.com', 'Pin-Priority: 600'; then apt-get update", False,
        "a package-manager setting", {"package": pkg, "wanted": want, "candidate": got, "rocm": rocm})


_r_aborted = Said(
    Severity.CONTEXT, "the program", arch="log",
    cause="the program stopped on a fatal error; the cause is in the lines before this one",
    fix="rocmrevive explain on the whole log (or the lines before this one)",
    why_not="this line only says that the program stopped")


_r_rccl_system_error = Said(
    Severity.ERROR, "RCCL",
    cause="a system call inside RCCL failed (ncclSystemError): most often too little shared memory "
          "for its buffers (a container's default 64 MB /dev/shm), a peer-to-peer or IPC mapping the "
          "PCIe topology or the IOMMU refuses, or a network interface it cannot use",
    fix="rerun with NCCL_DEBUG=INFO to see the failing call; containers: --shm-size=16g (or --ipc=host); "
        "rocmrevive detect shows the GPU pairs and whether peer-to-peer can work; NCCL_P2P_DISABLE=1 "
        "if it cannot",
    why_not="an environment or topology problem, not missing files")


def _r_memory_access_fault(m, ctx):
    node, reason = m.group("node"), (m.group("reason") or "").strip().rstrip(".")
    return Diagnosis(
        "hsa-memory-access-fault", Severity.ERROR, "ROCr (HSA runtime)", arch_of(m, ctx),
        f"a GPU kernel on KFD node {node} touched memory it may not ({reason or 'no reason given'}): "
        "a bug in the kernel or its library, code built for another GPU forced onto this one "
        "(HSA_OVERRIDE_GFX_VERSION), or a kernel stack too small for gfx906 (RCCL raised it in 2024)",
        "unset HSA_OVERRIDE_GFX_VERSION if it is set; rocmrevive verify (the libraries carry real "
        "gfx906 code); AMD_SERIALIZE_KERNEL=3 names the kernel; rocmrevive detect maps KFD node "
        f"{node} to its GPU", False,
        "the faulting code is in the program or a library; rocmrevive can only check that the "
        "right code objects are installed", {"node": int(node), "address": m.group("addr"), "reason": reason})


_r_aperture = Said(
    Severity.ERROR, "ROCr (HSA runtime)",
    cause="a GPU kernel accessed memory beyond the largest legal address (HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, "
          "code 0x29; MEMORY_FAULT 0x2b is its sibling): an out-of-bounds access in a kernel (a bug in the program "
          "or a library, e.g. a gfx906 fork of llama.cpp), code built for another GPU forced onto this one "
          "(HSA_OVERRIDE_GFX_VERSION), or a faulty card when it happens with every program",
    fix="unset HSA_OVERRIDE_GFX_VERSION if set; rerun with AMD_SERIALIZE_KERNEL=3 to name the kernel; try the "
        "upstream build of the program; rocmrevive verify checks the installed gfx906 code",
    why_not="the faulting access is in the program or a library; rocmrevive can only check the installed code")


_r_illegal_address = Said(
    Severity.ERROR, "HIP runtime",
    cause="a GPU kernel read or wrote an address outside its buffers (hipErrorIllegalAddress); the "
          "report is asynchronous, so the Python line shown may not be the one that launched it",
    fix="rerun with AMD_SERIALIZE_KERNEL=3 (and HIP_LAUNCH_BLOCKING=1) to find the kernel; unset "
        "HSA_OVERRIDE_GFX_VERSION; rocmrevive verify checks the installed gfx906 code",
    why_not="a bug in the kernel or a library built for another GPU, not a missing file")


def _r_hip_oom(m, ctx):
    want = m.groupdict().get("want")
    return Diagnosis(
        "gpu-out-of-memory", Severity.ERROR, "PyTorch / llama.cpp (GPU memory)", arch_of(m, ctx),
        "the GPU ran out of memory" + (f" asking for {want}" if want else "")
        + ": the model, context or batch does not fit in VRAM (or another process holds it)",
        "use fewer GPU layers (llama.cpp -ngl), a smaller context or batch, a smaller quantisation, "
        "or split across GPUs; PyTorch: PYTORCH_HIP_ALLOC_CONF=expandable_segments:True against "
        "fragmentation", False, "a memory limit, not a missing file", {"requested": want} if want else {})


def _r_ollama_unsupported(m, ctx):
    arch = norm_arch(m.group("arch")) or ctx.arch
    proc = processor(arch)
    fixable = proc in ctx.fixable_processors
    return Diagnosis(
        "ollama-gpu-not-supported", Severity.ERROR, "Ollama (bundled ROCm)", arch,
        f"Ollama's bundled ROCm libraries list no {proc or 'code for this GPU'} (supported: "
        f"{m.group('types').strip()}), so it runs on the CPU",
        ("sudo rocmrevive install (it patches the rocBLAS inside Ollama's bundle too, so Ollama's own check "
         "passes), then rocmrevive audit: Ollama's libggml-hip itself may have no gfx906 code, and audit names "
         "a build that has it; or use Ollama's Vulkan backend") if fixable else
        "use a build or backend (Vulkan) that supports this GPU", fixable,
        None if fixable else "rocmrevive has files for gfx906 only", {"supported": m.group("types").split()})


_r_gpu_reset = Said(
    Severity.ERROR, "kernel (amdgpu)", arch="log",
    cause="the amdgpu driver reset the GPU (a hang, a job timeout or a hardware error); every program "
          "using it lost its context",
    fix="read the kernel log lines before it (dmesg); check cooling and power (MI50s are passively "
        "cooled and need forced airflow); rocmrevive doctor; rerun the program",
    why_not="a driver, firmware or hardware event")


def _r_job_timeout(m, ctx):
    return Diagnosis(
        "amdgpu-ring-timeout", Severity.ERROR, "kernel (amdgpu)", ctx.arch,
        f"a GPU job on ring {m.group('ring')} did not finish in time (the driver then tries a "
        "soft recovery or a GPU reset)",
        "read dmesg around it; check cooling and power; a kernel or firmware update often fixes "
        "recurring timeouts", False, "a driver, firmware or hardware event")


def _r_amdgpu_probe(m, ctx):
    err = m.groupdict().get("err")
    enomem = err == "-12"
    return Diagnosis(
        "amdgpu-init-failed", Severity.ERROR, "kernel (amdgpu)", ctx.arch,
        "the amdgpu driver could not initialise the GPU"
        + (" (error -12: no room to map its memory BARs: Above 4G Decoding / Resizable BAR off)" if enomem else ""),
        "enable Above 4G Decoding (and Resizable BAR) in the firmware setup; rocmrevive detect shows "
        "the BAR sizes; then read dmesg for the first amdgpu error", False, "a firmware or driver setting",
        {"error": int(err)} if err else {})


_FIRMWARE_PACKAGE = ("install the distribution's firmware package (Debian: firmware-amd-graphics; Ubuntu/Fedora: "
                     "linux-firmware) and update the initramfs (update-initramfs -u, or dracut -f), then reboot")


def _r_firmware_optional(m, ctx):
    """A Vega 20 firmware file the driver can do without (drivers/gpu/drm/amd/amdgpu: gfx_v9_0.c ignores a
    failed vega20_mec2.bin; psp_v11_0.c went on without vega20_ta.bin up to Linux 6.2, and returns the
    error from 6.3, when the paste then shows the card failing)."""
    fw, err = m.group("fw"), m.group("err")
    details = {"firmware": fw, "error": int(err)}
    if fw.endswith("_ta.bin") and ctx.gpu_init_failed:
        return Diagnosis(
            "amdgpu-firmware-missing", Severity.ERROR, "kernel (firmware loader)", ctx.arch,
            f"the amdgpu driver could not load {fw} (the PSP's trusted applications: XGMI and RAS), and this "
            "paste shows the GPU failing to initialise: since Linux 6.3 psp_v11_0.c returns the error of that "
            "request, so on these kernels the file is required and the card does not initialise",
            _FIRMWARE_PACKAGE, False, "a distribution firmware package", details)
    if fw.endswith("_ta.bin"):
        cause = (f"{fw} holds the PSP's trusted applications (XGMI for MI50/MI60 hives joined by Infinity Fabric "
                 "links, RAS error reporting); kernels up to 6.2 treat it as optional and go on without it "
                 "(psp_v11_0.c then notes 'psp v11.0: Failed to load firmware'), and ROCm runs on the card")
        fix = ("nothing, for ROCm: the card works without it. Install the distribution's firmware package only for "
               "an XGMI hive or RAS reporting, or when dmesg also shows 'Fatal error during GPU init' (from "
               "Linux 6.3 the driver needs the file)")
    else:
        cause = (f"{fw} is the second compute micro-engine's firmware; the gfx v9 driver ignores a failure to "
                 "load it (gfx_v9_0.c) and the card initialises and runs ROCm without it")
        fix = ("nothing: the driver goes on without it; installing the distribution's firmware package "
               "(linux-firmware ships it) only silences the line")
    return Diagnosis("amdgpu-firmware-optional", Severity.HARMLESS, "kernel (firmware loader)", ctx.arch, cause,
                     fix, False, "a distribution firmware package, not a ROCm file", details)


# a row's third item: a function of the match, or the text of a rule that never changes (Said)
RULES: tuple[Rule, ...] = tuple(Rule(i, re.compile(p), f.builder(i) if isinstance(f, Said) else f) for i, p, f in (
    ("rocblas-tensile-missing",
     r"rocBLAS error: Cannot read (?P<path>\S*TensileLibrary\S*?\.(?:dat|yaml))\s*:"
     r"(?:.*?for GPU arch\s*:\s*(?P<arch>\S+))?", _r_tensile_cannot_read),
    ("rocblas-tensile-list", r"^\s*List of available TensileLibrary Files\s*:", _r_tensile_list),
    ("rocblas-tensile-init", r"rocBLAS error: Could not initialize Tensile host", _r_tensile_init),
    ("rocblas-tensile-no-paths",
     r"rocBLAS warning: No paths matched (?P<path>\S+?)\.? Make sure that ROCBLAS_TENSILE_LIBPATH",
     _r_tensile_no_paths),
    ("rocblas-kernel-not-found",
     r"(?:Tensile solution found, but kernel not found in any loaded module"
     r"|Kernel (?P<kernel>\S+) not found in any loaded module)", _r_kernel_not_found),
    ("rocblas-invalid-device-function",
     r"rocBLAS error from hip error code:\s*'?hipErrorInvalidDeviceFunction'?", _r_rocblas_idf),
    ("llamacpp-op-failed", r"ggml_cuda_compute_forward:\s*(?P<op>[A-Z][A-Z0-9_]*) failed",
     _r_ggml_op_failed),
    ("llamacpp-invalid-device-function", r"\b(?:ROCm|CUDA) error:\s*invalid device function",
     _r_ggml_idf),
    ("torch-invalid-device-function", r"\bHIP error:\s*invalid device function", _r_torch_idf),
    ("hip-cannot-find-co",
     r"Cannot find CO in the bundle (?P<path>\S+?)\s+for ISA:\s*(?P<arch>\S+)", _r_cannot_find_co),
    ("hip-no-binary-for-gpu",
     r"(?:hipErrorNoBinaryForGpu:\s*Unable to find code object"
     r"|Returned hipErrorNoBinaryForGpu"
     r"|Missing CO for these ISAs\s*-\s*(?P<isas>.*)$)", _r_no_binary),
    ("hip-static-function", r"Cannot (?:retrieve|register) Static function, error:\s*(?P<code>\d+)",
     _r_static_function),
    ("hip-invalid-device-function", r"\bhipErrorInvalidDeviceFunction\b", _r_hip_idf),
    ("hip-invalid-argument", r"\bHIP error:\s*invalid argument\b", _r_invalid_argument),
    ("torch-async-error-note", r"HIP kernel errors might be asynchronously reported", _r_async_note),
    ("torch-hipblaslt-unsupported",
     r"Attempting to use hipBLASLt on an? unsupported architecture!?"
     r"(?P<override>\s*Overriding blas backend to hipblas)?", _r_hipblaslt),
    ("hsa-out-of-resources", r"\bHSA_STATUS_ERROR_OUT_OF_RESOURCES\b", _r_out_of_resources),
    ("hsa-memory-aperture-violation",
     r"\bHSA_STATUS_ERROR_MEMORY_(?:APERTURE_VIOLATION|FAULT)\b|aborting with (?:error|status)\b.*\b0x(?:29|2b)\b",
     _r_aperture),
    ("hipblaslt-no-files",
     r"\brocblaslt (?:warning|error): (?:No paths matched (?P<path>\S+?)\.?(?:\s|$)|Cannot read|Could not load)",
     lambda m, ctx: hipblaslt_files(m.string, arch_of(m, ctx), m.groupdict().get("path"),
                                    used=ctx.holds(BLAS_STATUS_FAILED))),
    ("hip-no-device", r"no ROCm-capable device is detected|\bhipErrorNoDevice\b", _r_no_device),
    ("rccl-iommu-warning", r"NCCL WARN Missing \"iommu=pt\"", _r_iommu),
    ("rccl-fine-grain-warning", r"NCCL WARN Missing \"HSA_FORCE_FINE_GRAIN_PCIE=1\"", _r_fine_grain),
    # RCCL/NCCL: "NCCL error: unhandled system error" (vllm-project/vllm#10626, NVIDIA/nccl#1657)
    ("rccl-system-error", r"NCCL (?:error|failure)\b.*unhandled system error|\bncclSystemError\b",
     _r_rccl_system_error),
    ("rccl-failure",
     r"(?:NCCL failure\b.*'unhandled (?:cuda|hip|system) error|\bunhandled cuda error\b"
     r"|RuntimeError: NCCL error\b|\bncclUnhandledCudaError\b)", _r_rccl_failure),
    ("app-no-supported-gpus",
     r"\"status\"\s*:\s*\"No supported GPUs\"|No compatible ROCm GPUs found", _r_no_supported_gpus),
    ("hip-version-too-old", r"At least ROCM/HIP V(?P<ver>[0-9]+(?:\.[0-9]+)*) is required",
     _r_hip_too_old),
    ("pci-bar-too-small",
     r"Skipping device:\s*(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+Bar size "
     r"smaller than needed", _r_bar_small),
    ("ip-discovery-failed", r"All AMD devices failed IP discovery", _r_ip_discovery),
    ("toolchain-newer-runtime",
     r"undefined reference to [`'][^'`]+@(?P<ver>GLIBC(?:XX)?_[0-9][0-9.]*)'", _r_glibcxx),
    ("apt-hipcc-conflict",
     # AMD's package versions carry the ROCm release as 5 digits (1.1.1.60304-76~24.04)
     r"Depends:\s*(?P<pkg>[a-z0-9][a-z0-9.+-]*) \(= (?P<want>[^)]*\.[0-9]{5}-[^)]*)\) but "
     r"(?P<got>[0-9][^ ]*) is to be installed", _r_apt_hipcc),
    ("process-aborted", r"^\s*Aborted(?: \(core dumped\))?\s*$", _r_aborted),
    ("hsa-memory-access-fault",
     r"Memory access fault by GPU node-(?P<node>[0-9]+)(?: \(Agent handle: [^)]*\))? on address "
     r"(?P<addr>\S+?)\.? Reason: (?P<reason>.*)$", _r_memory_access_fault),
    ("hip-illegal-address",
     r"(?:HIP|CUDA) error: an illegal memory access was encountered|\bhipErrorIllegalAddress\b",
     _r_illegal_address),
    ("gpu-out-of-memory",
     r"HIP out of memory\. Tried to allocate (?P<want>[0-9.]+ [KMGT]iB)"
     r"|cudaMalloc failed: out of memory|\bhipErrorOutOfMemory\b|HIP_ERROR_OutOfMemory"
     r"|(?:ROCm|CUDA) error: out of memory", _r_hip_oom),
    ("ollama-gpu-not-supported",
     r"amdgpu is not supported \(supported types:\s*\[(?P<types>[^\]]*)\]\)\\?\"?\s*gpu_type=(?P<arch>\S+)",
     _r_ollama_unsupported),
    ("amdgpu-gpu-reset", r"amdgpu(?: [0-9a-f:.]+)?: (?:amdgpu: )?GPU reset begin", _r_gpu_reset),
    ("amdgpu-ring-timeout", r"amdgpu_job_timedout.*ring (?P<ring>\S+) timeout", _r_job_timeout),
    ("amdgpu-firmware-optional",
     r"Direct firmware load for amdgpu/(?P<fw>vega20_(?:ta|mec2)\.bin) failed with error (?P<err>-?[0-9]+)",
     _r_firmware_optional),
    ("amdgpu-init-failed",
     # the kernel's format is the bare text; dev_err puts "amdgpu <pci>: amdgpu: " in front
     r"(?:amdgpu [0-9a-f:.]+: (?:amdgpu: )?)?Fatal error during GPU init|amdgpu [0-9a-f:.]+: probe with driver "
     r"amdgpu failed with error (?P<err>-?[0-9]+)", _r_amdgpu_probe),
))


# ------------------------------------------------------------------------------------------

# from this many lines on, each pattern is searched only in the lines that hold its literal key: the keys cost about
# 40 ms to read once and save about 0.15 ms a line (bench/bench_explain.py), so a short paste does without them
KEYS_FROM = 300
_UNKEYED_RULES: tuple[tuple[Rule, str | None], ...] = tuple((r, None) for r in RULES)


@lru_cache(maxsize=1)
def rules_keyed() -> tuple[tuple[Rule, str | None], ...]:
    """Each rule with the literal text every match of its pattern holds (a line without it is not searched)."""
    return tuple((r, required_literal(r.pattern)) for r in RULES)


def explain_line(line: str, ctx: Context | None = None) -> Diagnosis | None:
    """The diagnosis of one line, or None when nothing recognises it: first the catalogue's messages
    answered from data (data/messages.toml), then the rules, then the failure families."""
    ctx = ctx or Context()
    d = match_entry(line, ctx)
    if d is None:
        for rule, key in rules_keyed() if ctx.long else _UNKEYED_RULES:
            if key is not None and key not in line:
                continue
            m = rule.pattern.search(line)
            if m:
                d = rule.build(m, ctx)
                break
    if d is None:
        d = explain_family(line, ctx)  # words no rule knows: the component, error and path still tell
    return sharpen(d, ctx) if d is not None else None


# the application a paste comes from, by the words its logs carry
_APPS = (("ollama", re.compile(r"\bollama\b|source=(?:amd_linux|gpu|amd_windows)\.go:", re.I)),
         ("vllm", re.compile(r"\bvllm\b", re.I)),
         ("llama.cpp", re.compile(r"llama[-_.]?cpp|\bggml_|llama-(?:server|cli)|\bllm_load_", re.I)),
         ("pytorch", re.compile(r"\btorch\b|PyTorch|site-packages/torch", re.I)))
_ROCM = re.compile(r"(?:\bROCm|\brocm)[ /_-]?v?(?P<v>[1-9][0-9]?\.[0-9]+(?:\.[0-9]+)?)\b"
                   r"|/opt/rocm-(?P<p>[0-9]+\.[0-9]+(?:\.[0-9]+)?)")


# the kernel's own words that a GPU did not initialise (amdgpu_device.c, amdgpu_kms.c, amdgpu_psp.c, dd.c)
_INIT_FAILED = re.compile(r"Fatal error during GPU init|Failed to load psp firmware|\b(?:early_init|sw_init|hw_init) "
                          r"of IP block <[^>]*> failed|probe with driver amdgpu failed|amdgpu: probe of \S+ failed")


# the words of a paste from Windows: a drive path, a DLL, the HIP SDK, Ollama's Windows discovery, and an exit status
# only Windows gives. A Linux exit status is 0-255 (wait(2)'s 8 bits) and Go's os.ProcessState prints one in hex only
# on Windows (exec_posix.go: a code of 1<<16 or more, "windows uses large hex numbers"); an NTSTATUS error value
# (0xC0000000 and up: Microsoft's ntstatus.h, [MS-ERREF] 2.3.1; 0xC0000005 is STATUS_ACCESS_VIOLATION) as a process's
# exit code or status is Windows' too. A bare 0xC0000005 elsewhere in a line may be an address, so it takes the words
# 'exit status' or 'exit code' (or the word NTSTATUS) before it. hashcat 7 prints 'Please install the AMD HIP SDK.'
# on Linux too (backend.c, where libamdhip64.so or libhiprtc.so does not load), so those words say nothing of Windows.
_WINDOWS = re.compile(r"(?<![A-Za-z])[A-Z]:\\(?=[A-Za-z_$])|\b[\w.-]+\.(?:dll|DLL)\b|\bHIP SDK\b(?<!install the AMD HIP SDK)"
                      r"|\bProgram Files\b|\bamd_windows\.go\b"
                      r"|\bexit status 0x[0-9a-fA-F]{5,8}\b"
                      r"|\bexit (?:status|code)\b[:=]?[ \t]*(?:-?[0-9]+[ \t]*\(0x[cC][0-9a-fA-F]{7}\)|0x[cC][0-9a-fA-F]{7}\b)"
                      r"|\bNTSTATUS[ \t]+0x[0-9a-fA-F]{8}\b")
# a GPU queue's asynchronous error (ROCr's queue callback, HIP's and HCC's callbackQueue, the debug agent's report)
_QUEUE_ERROR = re.compile(r"inactivated due to async error|\bcallbackQueue\b|Queue error state in GPU agent"
                          r"|\(Out of VGPRs;?\)")
# a hipBLAS or hipBLASLt call's failed status, as PyTorch's TORCH_CUDABLAS_CHECK (hipified) or an application prints it
BLAS_STATUS_FAILED = r"\bHIPBLAS_STATUS_(?!SUCCESS\b)[A-Z_]+\b"


def context_of(text: str, fixable_processors: Iterable[str] = ("gfx906",)) -> Context:
    """What the whole paste says beyond each line: the first GPU target, the application, the ROCm version,
    whether the kernel says a GPU did not initialise, whether the paste is from Windows, whether it shows a GPU
    queue's asynchronous error."""
    win = _WINDOWS.search(text)
    ctx = Context(arch=None, fixable_processors=tuple(fixable_processors),
                  gpu_init_failed=bool(_INIT_FAILED.search(text)), windows=win.group(0) if win else None,
                  queue_error=bool(_QUEUE_ERROR.search(text)), text=text)
    for ln in text.splitlines():
        ctx.arch = ctx.arch or norm_arch(ln)
        if ctx.rocm is None:
            m = _ROCM.search(ln)
            if m:
                ctx.rocm = m.group("v") or m.group("p")
        if ctx.app is None:
            ctx.app = next((name for name, rx in _APPS if rx.search(ln)), None)
        if ctx.arch and ctx.rocm and ctx.app:
            break
    return ctx


# what in an action is Linux's own: rocmrevive (Linux-only), root, Linux paths, the kernel log, groups, packages
_LINUX_ONLY = re.compile(r"\brocmrevive\b|\bsudo\b|/opt/rocm|/dev/|/etc/|\bdmesg\b|usermod|\bapt(?:-get)?\b"
                         r"|initramfs|dracut|modprobe|\bLinux:")


def on_windows(d: Diagnosis, word: str) -> None:
    """A diagnosis of a paste from Windows (it names ``word``: a drive path, a DLL, the HIP SDK): rocmrevive
    runs on Linux only, so its commands and Linux's own steps leave the action; what is left is said to apply
    there, with the HIP SDK's own check. An action written for Windows already (it says 'Windows') stays."""
    d.fixable_by_rocmrevive = False
    d.why_not = f"rocmrevive runs on Linux only, and this paste comes from Windows (it names {word})"
    fix = d.fix or ""
    if "Windows" in fix or fix.startswith("nothing"):
        return
    keep = [c for c in re.split(r";\s*", fix) if c and not _LINUX_ONLY.search(c)]
    d.fix = (f"on Windows (the paste names {word}) rocmrevive and the Linux steps do not apply"
             + (f"; what does: {'; '.join(keep)}" if keep else "")
             + "; hipinfo (the HIP SDK's bin folder) lists the GPUs HIP sees and their targets, and the HIP SDK "
               "release's notes list the cards and drivers it supports")


def says_nothing(found: list[Diagnosis]) -> bool:
    """Whether every diagnosis is of an entry that names no failure by itself (``alone = false``: the shell's
    "Aborted (core dumped)"): such a paste is not recognised (exit 3), rather than answered "the cause is in the
    lines before" about lines explain could not read; beside a recognised failure those lines follow from it."""
    entries = by_rule()
    return all(d.rule in entries and not entries[d.rule].alone for d in found)


# A line that states a failure outright, whoever printed it: a compiler's or assembler's diagnostic ("error:",
# "fatal error:", also after a file:line: location), Ollama's and Go's "Error:" and "panic:", an uncaught exception
# (Python's "XError:"/"XException:" and its Traceback, C++'s "terminate called"), a failed assertion, a crash
# ("Segmentation fault"). Not an answer: it only tells that a paste's failure is none of the lines recognised when
# those are all warnings, harmless or context lines (unexplained_failure). Log-level words (ERROR:, level=error,
# E0000) are left out: tools print them for consequences and notices as much as for the failure itself.
FAILURE_LINE = re.compile(
    r"(?:^|[\s:)\]])(?:fatal )?error: |^\s*(?:Error|panic): |^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception): "
    r"|^\s*Traceback \(most recent call last\):|^\s*terminate called after throwing|\bAssertion .+ failed"
    r"|\bSegmentation fault\b")


def unexplained_failure(text: str, found: list[Diagnosis]) -> tuple[int, str] | None:
    """The first line of ``text`` that states a failure (FAILURE_LINE) which explain did not recognise, when every
    diagnosis found is a warning, a harmless or a context line: (line number, the line). Such a paste's failure is
    not known, and answering its warnings first would read as the cause (vLLM's hipBLASLt fallback warning above
    LLVM's 'stack frame size exceeds limit' in Triton's compile). None when a failure was recognised."""
    if not found or any(d.severity == Severity.ERROR for d in found):
        return None
    known = {n for d in found for n in d.lines}
    for no, ln in enumerate(text.splitlines(), 1):
        if no not in known and FAILURE_LINE.search(ln):
            return no, ln.strip()
    return None


@dataclass
class Answer:
    """What explain answers a paste: the diagnoses (root causes first) and, where every one of them is a warning,
    harmless or context line, the first line that states a failure explain did not recognise (``unexplained``).
    ``answered``: a failure was recognised (the CLI's exit 0); otherwise exit 3."""
    found: list[Diagnosis]
    unexplained: tuple[int, str] | None = None

    @property
    def answered(self) -> bool:
        return bool(self.found) and self.unexplained is None


def answer(text: str, *, fixable_processors: Iterable[str] = ("gfx906",)) -> Answer:
    found = explain_text(text, fixable_processors=fixable_processors)
    return Answer(found, unexplained_failure(text, found))


# the order of severities in an answer: errors, then warnings, then harmless and context lines
_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.HARMLESS: 2, Severity.CONTEXT: 2}


def explain_text(text: str, *, fixable_processors: Iterable[str] = ("gfx906",)) -> list[Diagnosis]:
    """Every recognised failure in ``text``; one diagnosis per rule, library and arch, with the
    numbers of all the lines that gave it. A GPU target, application or ROCm version named anywhere in
    the text fills in for lines that name none. The root causes come first: a diagnosis another one in
    the paste explains (the catalogue's ``explains``) is listed after it, with ``details["explained_by"]``;
    the rest errors first, then warnings, then harmless and context lines, each in the order of their layer (kernel,
    runtime, library, application, epilogue), then of lines."""
    lines = text.splitlines()
    ctx = context_of(text, fixable_processors)
    ctx.long = len(lines) >= KEYS_FROM
    out: dict[tuple, Diagnosis] = {}
    for no, ln in enumerate(lines, 1):
        d = explain_line(ln, ctx)
        if d is None:
            continue
        key = (d.rule, d.library, d.arch)
        if key in out:
            out[key].lines.append(no)
            continue
        d.lines, d.text = [no], ln.strip()
        out[key] = d
    found = list(out.values())
    if says_nothing(found):
        return []
    present = {d.rule: d for d in found}
    roots = explained_by()
    for d in found:
        cause = next((present[r] for r in sorted(roots.get(d.rule, ())) if r in present and r != d.rule), None)
        if cause is not None:
            d.details["explained_by"] = {"rule": cause.rule, "line": cause.lines[0]}
    # an epilogue (an abort, a note, a location) follows from the first error before it
    errors = sorted((d for d in found if d.severity == Severity.ERROR and "explained_by" not in d.details),
                    key=lambda d: (layer_of(d.rule), d.lines[0]))
    for d in found:
        if layer_of(d.rule) == EPILOGUE and "explained_by" not in d.details:
            cause = next((e for e in errors if e.lines[0] < d.lines[0] and layer_of(e.rule) < EPILOGUE), None)
            if cause is not None:
                d.details["explained_by"] = {"rule": cause.rule, "line": cause.lines[0]}
    for d in found:
        if ctx.app or ctx.rocm or ctx.windows:
            d.details.setdefault("context", {k: v for k, v in (("app", ctx.app), ("rocm", ctx.rocm),
                                                                ("windows", ctx.windows)) if v})
        if ctx.windows:
            on_windows(d, ctx.windows)
    # a warning (works, degraded) does not by itself come before an error, nor a harmless or a context line before
    # either: the severity orders before the layer. A warning that causes an error says so with ``explains``
    # (the error is then explained_by it and sorts after)
    return sorted(found, key=lambda d: ("explained_by" in d.details, _RANK[d.severity], layer_of(d.rule), d.lines[0]))
