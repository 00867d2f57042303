"""Failure families: what a ROCm message means when no rule knows its exact words. A line is read
for the features every such message is made of: the component that reports it (rocBLAS,
hipBLASLt, MIOpen, RCCL, the HSA runtime, HIP), the error code or status it names
(``HSA_STATUS_ERROR_*``, ``hipError*``, ``HIP error: ...``, ``code: 0x29``), the GPU target, and
the file or folder it names. The family of the error (code for another GPU, memory out of bounds,
out of memory, a missing library file) gives the cause; a named file or folder gives the
rocmrevive command that checks it (``inspect`` for a program or library, ``verify --tree`` for a
rocBLAS library folder).

    d = explain_family("hipModuleLoad failed: Kernels.so-000-gfx906.hsaco", Context())
    d.rule, d.fix      # "family-code-object", "rocmrevive inspect ..."
"""
from __future__ import annotations

import re

from rocmrevive.diagnose.diagnosis import HIP_ERRORS, Context, Diagnosis, Severity, norm_arch
from rocmrevive.invocation import shell_command

# HSA status codes as the runtime prints them in hex (hsa.h, hsa_ext_amd.h)
HSA_CODES = {0x29: "MEMORY_APERTURE_VIOLATION", 0x2b: "MEMORY_FAULT", 0x1008: "OUT_OF_RESOURCES",
             0x100f: "INVALID_ISA", 0x1010: "INVALID_CODE_OBJECT", 0x1016: "EXCEPTION", 0x2c: "ILLEGAL_INSTRUCTION"}

# the family of each error word (HSA status name, hipError name, or "HIP error:" text)
FAMILY_OF = {
    "memory": ("MEMORY_APERTURE_VIOLATION", "MEMORY_FAULT", "IllegalAddress", "illegal memory access",
               "Memory access fault"),
    # an illegal instruction is code for another GPU far more often than a memory fault (issue 38)
    "code-object": ("ILLEGAL_INSTRUCTION", "INVALID_ISA", "INVALID_CODE_OBJECT", "NoBinaryForGpu", "SharedObjectInitFailed",
                    "shared object initialization failed", "InvalidImage", "InvalidKernelFile",
                    "no kernel image", "InvalidDeviceFunction", "invalid device function", "hipModuleLoad failed",
                    "Cannot find CO", "Missing CO", "code object"),
    "out-of-memory": ("OutOfMemory", "out of memory", "OUT_OF_RESOURCES"),
    "library-files": ("No paths matched", "Cannot read", "Could not load", "Unable to load file", "not found"),
}

_CODE = re.compile(r"\bHSA_STATUS_ERROR_(?P<hsa>[A-Z_]+)|\bhipError(?P<hip>[A-Za-z]+)|\bHIP error:\s*(?P<text>[^.;\n]+)"
                   r"|(?:status|code):\s*0x(?P<hex>[0-9a-fA-F]+)|\berror (?P<num>[0-9]{1,3})\b")
_COMPONENT = (("hipBLASLt", re.compile(r"\brocblaslt\b|hipblaslt", re.I)),
              ("rocBLAS (Tensile)", re.compile(r"\brocBLAS\b|rocblas/library|TensileLibrary", re.I)),
              ("MIOpen", re.compile(r"\bMIOpen\b", re.I)),
              ("RCCL", re.compile(r"\b(?:RCCL|NCCL)\b")),
              ("ROCr (HSA runtime)", re.compile(r"\bHSA_STATUS|rocdevice\.cpp|callbackQueue")),
              ("HIP runtime", re.compile(r"\bhip[A-Z][A-Za-z]+|\bHIP error\b|hipModuleLoad")))
# a failure, not a line that merely mentions a library
_FAILING = re.compile(r"\b(?:error|errors|failed|failure|abort(?:ed|ing)?|fault|violation|cannot|could not|unable"
                      r"|no paths matched|warning)\b", re.I)
_PATH = re.compile(r"(?<![\w/.])(/(?:[\w.+@-]+/)*[\w.*+@-]+)")
_FILE = re.compile(r"\b([\w.+-]+\.(?:so(?:\.[0-9]+)*|hsaco|co|dat|kpack))\b")


def features(line: str) -> dict:
    """The parts a family is recognised by: component, error word, family, arch, named path."""
    comp = next((name for name, rx in _COMPONENT if rx.search(line)), None)
    word = None
    for m in _CODE.finditer(line):
        if m.group("hsa"):
            word = m.group("hsa")
        elif m.group("hip"):
            word = m.group("hip")
        elif m.group("text"):
            word = m.group("text").strip()
        elif m.group("hex"):
            word = HSA_CODES.get(int(m.group("hex"), 16), word)
        elif m.group("num") and comp == "HIP runtime":
            word = HIP_ERRORS.get(int(m.group("num")), word)
        if word:
            break
    family = _family(word or "") or _family(line)
    paths = [p for p in _PATH.findall(line) if p.count("/") >= 2] or _FILE.findall(line)
    return {"component": comp, "error": word, "family": family, "arch": norm_arch(line),
            "path": paths[0].rstrip(".:,") if paths else None}


def _family(text: str) -> str | None:
    low = text.lower()
    return next((fam for fam, words in FAMILY_OF.items() if any(w.lower() in low for w in words)), None)


def check_command(path: str | None) -> str | None:
    """The rocmrevive command that checks the file or folder a message names."""
    if not path:
        return None
    if re.search(r"/(?:rocblas|hipblaslt)/library(?:/|$)", path) or path.endswith("/library"):
        folder = path.split("/library", 1)[0] + "/library"
        return shell_command(["verify", "--tree", folder]) if "*" not in folder else None
    if "*" in path:
        return None
    return shell_command(["inspect", path])


def explain_family(line: str, ctx: Context) -> Diagnosis | None:
    """A diagnosis by family for a failure line no rule knows, or None (not a ROCm failure)."""
    f = features(line)
    # a named error code is a failure by itself; otherwise the line must say it failed
    if not f["component"] or not f["family"] or not (f["error"] or _FAILING.search(line)):
        return None
    arch = f["arch"] or ctx.arch
    check = check_command(f["path"])
    cause, fix = _FAMILY_TEXT[f["family"]]
    if f["family"] == "library-files" and f["component"] == "hipBLASLt":
        return hipblaslt_files(line, arch, f["path"])
    fix = f"{check} (what it carries, for which GPU); {fix}" if check else fix
    return Diagnosis(f"family-{f['family']}", Severity.ERROR, f["component"], arch,
                     cause + (f" ({f['error']})" if f["error"] else ""), fix, False,
                     "recognised by its family, not by its exact words: the line names the component and the error",
                     {k: v for k, v in (("error", f["error"]), ("path", f["path"])) if v})


_FAMILY_TEXT = {
    "memory": ("a GPU kernel touched memory outside what it may use: a bug in the kernel or its library, code "
               "built for another GPU forced onto this one (HSA_OVERRIDE_GFX_VERSION), or a library mismatched "
               "with the runtime",
               "unset HSA_OVERRIDE_GFX_VERSION if set; rerun with AMD_SERIALIZE_KERNEL=3 to name the kernel; "
               "rocmrevive verify checks the installed gfx906 code"),
    "code-object": ("the runtime found no usable code for this GPU in a program or library: built for other "
                    "targets, or a code object version this ROCm cannot load",
                    "rocmrevive audit (every library by GPU target); rebuild or replace what lacks the target"),
    "out-of-memory": ("the GPU ran out of memory (or of queues/scratch for a kernel)",
                      "smaller batch or model, fewer layers on the GPU, or split across GPUs"),
    "library-files": ("a ROCm library could not find or read its own kernel files for this GPU",
                      "sudo rocmrevive install adds the gfx906 files rocBLAS lacks; rocmrevive verify checks them"),
}


def hipblaslt_files(line: str, arch: str | None, path: str | None, used: bool = False) -> Diagnosis:
    """hipBLASLt looked for its kernel files for this GPU and found none. AMD builds hipBLASLt for
    gfx90a, gfx94x, gfx11/12 only: on gfx906 this is expected, PyTorch falls back to rocBLAS
    (hipBLAS), and it matters only when hipBLASLt is used anyway. On a gfx906 the line alone is harmless
    (hipBLASLt never had gfx906 kernels), so it never takes the root-cause place from an error in the same
    paste; where the paste shows a hipBLAS/hipBLASLt call's failed status (``used``: PyTorch's
    ``HIPBLAS_STATUS_...``), hipBLASLt was called on a GPU it has no kernels for, and this is that error's cause.
    rocBLAS's own "No hipBLASLt solution found" (ROCBLAS_USE_HIPBLASLT) is answered by its own entry."""
    searched = {"searched": path} if path else {}
    why_not = "no hipBLASLt source has gfx906 kernels; rocBLAS, which does, is what rocmrevive installs"
    if used:
        return Diagnosis(
            "hipblaslt-no-files", Severity.ERROR, "hipBLASLt", arch,
            "hipBLASLt has no kernel files for this GPU (AMD builds it for gfx90a, gfx94x and gfx11/12 only), and "
            "the hipBLAS status error in the same paste shows it was called anyway: its GEMM has no kernel to run, "
            "so the call fails",
            "keep PyTorch off hipBLASLt: export TORCH_BLAS_PREFER_HIPBLASLT=0 DISABLE_ADDMM_HIP_LT=1 and unset "
            "ROCBLAS_USE_HIPBLASLT (a PyTorch ROCm build that checks the GPU first, with its 'Attempting to use "
            "hipBLASLt on an unsupported architecture' fallback, does this itself); rocmrevive verify checks the "
            "rocBLAS files the GEMMs use then", False, why_not, searched)
    severity = Severity.HARMLESS if (arch or "").split(":", 1)[0] == "gfx906" else Severity.WARNING
    return Diagnosis(
        "hipblaslt-no-files", severity, "hipBLASLt", arch,
        "hipBLASLt has no kernel files for this GPU (AMD builds it for gfx90a, gfx94x and gfx11/12 only): "
        "on gfx906 this line is expected, and GEMMs go through rocBLAS (hipBLAS) instead",
        "nothing, unless hipBLASLt is forced: unset ROCBLAS_USE_HIPBLASLT and TORCH_BLAS_PREFER_HIPBLASLT "
        "(or set them to 0); rocmrevive verify checks the rocBLAS files the GEMMs use", False, why_not, searched)
