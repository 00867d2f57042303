"""The ROCm (and ROCm-using) libraries rocmrevive knows: how to recognise their files, whether
they are expected to carry device code, what breaks for a user when a GPU target is missing
from them, and what can be done about it.

    lib = library_for_file("librocsolver.so.0.5")
    lib.name, lib.breaks            # 'rocSOLVER', 'LAPACK on the GPU: ...'

The remedies here are the ones that need nothing from rocmrevive's sources; when a manifest
provides a gfx906 build of a library, the caller says so and that comes first.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from rocmrevive.codeobj.targetid import TargetId


@dataclass(frozen=True)
class RemedyPackage:
    """A distribution package that is a build of a library for many targets, with the targets it
    declares (Debian's ``X-Rocm-Gpu-Architecture`` field, or where a package has none, the
    processors its device code was read to embed). Named as a remedy only for a processor it lists.

        LIBGGML_HIP.serves("gfx906")   # True; LIBRCCL1_724.serves("gfx906") is False
    """

    name: str            # "Debian's librocblas4 6.4.4-4"
    targets: tuple[str, ...]
    basis: str = "its X-Rocm-Gpu-Architecture field"

    def serves(self, processor: str) -> bool:
        return any(TargetId.parse(t).covers_processor(processor) for t in self.targets)

    def sentence(self, processor: str) -> str:
        return f"{self.name} is such a build ({self.basis} lists {processor})"


_DEBIAN_64 = ("gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx1010", "gfx1030", "gfx1100", "gfx1101", "gfx1102")
LIBROCBLAS4 = RemedyPackage("Debian's librocblas4 6.4.4-4", _DEBIAN_64)
LIBROCBLAS5 = RemedyPackage("Debian's librocblas5 7.2.4-1~exp1", _DEBIAN_64 + ("gfx942", "gfx1151", "gfx1200", "gfx1201"))
LIBRCCL1_543 = RemedyPackage("Debian's librccl1 5.4.3-3+b1", _DEBIAN_64,
                             "the device code it was read to embed; the package declares no field")
LIBRCCL1_724 = RemedyPackage("Debian's librccl1 7.2.4-1~exp3", ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030",
                                                                "gfx1100", "gfx1101", "gfx1200", "gfx1201"))
LIBGGML_HIP = RemedyPackage("Debian's libggml0-backend-hip 0.27.0-1", _DEBIAN_64)


def remedy_packages(packages: tuple[RemedyPackage, ...], processors: list[str]) -> str:
    """The sentence naming the packages that declare every one of ``processors`` ("" for none)."""
    fit = [p for p in packages if processors and all(p.serves(x) for x in processors)]
    if not fit:
        return ""
    what = ", ".join(processors)
    return "; " + "; ".join(f"{p.name} is such a build ({p.basis} lists {what})" for p in fit)


@dataclass(frozen=True)
class KnownLibrary:
    key: str            # stable id used in JSON and by manifests ("rocblas", "rccl", ...)
    name: str           # how ROCm spells it
    pattern: str        # regex on the file name (symlinks and versions included)
    device_code: bool   # True when the library normally embeds GPU kernels in .hip_fatbin
    breaks: str         # what fails on a GPU whose target it lacks, in plain words
    workaround: str     # what the user can do without a rocmrevive source
    packages: tuple[RemedyPackage, ...] = ()   # builds to name, each only for a target it declares

    def matches(self, filename: str) -> bool:
        return re.match(self.pattern, filename) is not None

    def workaround_for(self, processor: str) -> str:
        """The workaround for a card of ``processor``, naming only the packages that declare it."""
        return self.workaround + remedy_packages(self.packages, [processor]) if self.workaround else ""


_SO = r"\.so(\.[0-9][0-9.]*)?$"

# rocBLAS's other half: the Tensile library folder (GEMM kernels), not a shared library.
ROCBLAS_TENSILE = KnownLibrary(
    "rocblas-tensile", "rocBLAS Tensile library", r"^$", True,
    "every rocBLAS/hipBLAS GEMM (PyTorch matmul, llama.cpp prompt processing) fails with "
    "'Cannot read …/TensileLibrary.dat … for GPU arch'",
    "copy the target's Tensile files from a rocBLAS of the same version built for it (ROCm 6.3.x "
    "for 4.3), or point ROCBLAS_TENSILE_LIBPATH at such a folder", (LIBROCBLAS4, LIBROCBLAS5))

KNOWN_LIBRARIES: tuple[KnownLibrary, ...] = (
    KnownLibrary(
        "rocblas", "rocBLAS", r"^librocblas" + _SO, True,
        "BLAS routines that are not Tensile GEMMs (TRSM, TRMM, GEMV, level-1/2, batched helpers) "
        "fail with hipErrorInvalidDeviceFunction; rocSOLVER, PyTorch's linear algebra and "
        "llama.cpp's SOLVE_TRI use them",
        "use a rocBLAS built for this GPU (ROCm 6.3.x for gfx906) in place of this librocblas.so; "
        "copying Tensile files does not fix it", (LIBROCBLAS4, LIBROCBLAS5)),
    KnownLibrary(
        "rocsolver", "rocSOLVER", r"^librocsolver" + _SO, True,
        "LAPACK on the GPU (torch.linalg solve/inv/cholesky/qr/svd/eigh, llama.cpp and SciPy-like "
        "solvers) fails with 'Cannot find CO in the bundle … for ISA' or invalid device function",
        "use a rocSOLVER built for this GPU (ROCm 6.3.x or a distribution build listing it), or run "
        "those operations on the CPU"),
    KnownLibrary(
        "rocsparse", "rocSPARSE", r"^librocsparse" + _SO, True,
        "sparse matrix operations (torch.sparse, SpMV/SpMM, sparse solvers) fail",
        "use a rocSPARSE built for this GPU (ROCm 6.3.x or a distribution build), or keep sparse "
        "work on the CPU"),
    KnownLibrary(
        "rocfft", "rocFFT", r"^librocfft" + _SO, True,
        "FFTs whose kernels are pre-built (torch.fft, hipFFT users) fail; sizes rocFFT compiles at "
        "run time may still work",
        "use a rocFFT built for this GPU, or run FFTs on the CPU"),
    KnownLibrary(
        "rocrand", "rocRAND", r"^librocrand" + _SO, True,
        "GPU random number generation through rocRAND/hipRAND fails",
        "use a rocRAND built for this GPU, or generate random numbers on the CPU"),
    KnownLibrary(
        "hipblaslt", "hipBLASLt", r"^libhipblaslt" + _SO, True,
        "PyTorch's preferred GEMM path; PyTorch falls back to hipBLAS with a warning, or raises "
        "'Attempting to use hipBLASLt on a unsupported architecture!'",
        "export TORCH_BLAS_PREFER_HIPBLASLT=0 (hipBLASLt has never supported gfx906; GEMMs then go "
        "through hipBLAS/rocBLAS)"),
    KnownLibrary(
        "hipsparselt", "hipSPARSELt", r"^libhipsparselt" + _SO, True,
        "structured-sparsity GEMMs fail (only newer Instinct GPUs are supported at all)",
        "nothing to do: do not use 2:4 sparse GEMMs on this GPU"),
    KnownLibrary(
        "miopen", "MIOpen", r"^libMIOpen" + _SO, True,
        "pre-built MIOpen kernels (parts of convolutions, batch norm, RNN in PyTorch) fail; kernels "
        "MIOpen compiles at run time are not affected",
        "use an MIOpen built for this GPU; or set torch.backends.cudnn.enabled = False to use "
        "PyTorch's own (slower) kernels"),
    KnownLibrary(
        "rccl", "RCCL", r"^librccl" + _SO, True,
        "multi-GPU collectives (torch.distributed with the nccl backend, vLLM tensor parallel, "
        "rccl-tests) fail with 'unhandled cuda error' or 'NCCL error'",
        "use an RCCL built for this GPU; `rocmrevive rccl` shows what each RCCL on the machine carries",
        (LIBRCCL1_543, LIBRCCL1_724)),
    KnownLibrary(
        "hiptensor", "hipTensor", r"^libhiptensor" + _SO, True,
        "tensor contractions through hipTensor fail (it supports only newer GPUs)",
        "nothing to do on this GPU: use another contraction path"),
    KnownLibrary(
        "rocalution", "rocALUTION", r"^librocalution(_hip)?" + _SO, True,
        "iterative sparse solvers on the GPU fail",
        "use rocALUTION's host backend or a build for this GPU"),
    KnownLibrary(
        "migraphx", "MIGraphX", r"^libmigraphx(_gpu|_device)?" + _SO, True,
        "MIGraphX GPU inference (ONNX Runtime's MIGraphX provider) fails",
        "use ONNX Runtime's ROCm or CPU provider, or a MIGraphX built for this GPU"),
    KnownLibrary(
        "torch_hip", "PyTorch (HIP kernels)", r"^libtorch_hip" + _SO, True,
        "every PyTorch GPU operation fails with 'HIP error: invalid device function'",
        "install a PyTorch build that lists this GPU (torch.cuda.get_arch_list()), or build "
        "PyTorch with PYTORCH_ROCM_ARCH=gfx906"),
    KnownLibrary(
        "ggml_hip", "llama.cpp ggml-hip", r"^libggml-(hip|cuda)" + _SO, True,
        "llama.cpp / Ollama GPU offload fails with 'ROCm error: invalid device function'",
        "rebuild llama.cpp with -DGGML_HIP=ON -DAMDGPU_TARGETS=<the card's target> (GPU_TARGETS on newer "
        "versions)", (LIBGGML_HIP,)),
    # Libraries that normally carry no device code of their own: shown so that a user sees
    # they were looked at.
    KnownLibrary("amdhip64", "HIP runtime", r"^libamdhip64" + _SO, False, "", ""),
    KnownLibrary("hsa_runtime", "ROCr (HSA runtime)", r"^libhsa-runtime64" + _SO, False, "", ""),
    KnownLibrary("hipblas", "hipBLAS", r"^libhipblas" + _SO, False, "", ""),
    KnownLibrary("hipsolver", "hipSOLVER", r"^libhipsolver" + _SO, False, "", ""),
    KnownLibrary("hipsparse", "hipSPARSE", r"^libhipsparse" + _SO, False, "", ""),
    KnownLibrary("hipfft", "hipFFT", r"^libhipfft" + _SO, False, "", ""),
    KnownLibrary("hiprand", "hipRAND", r"^libhiprand" + _SO, False, "", ""),
    KnownLibrary("amd_comgr", "COMGR", r"^libamd_comgr" + _SO, False, "", ""),
    KnownLibrary("hiprtc", "hipRTC", r"^libhiprtc" + _SO, False, "", ""),
    KnownLibrary("roctx", "rocTX", r"^libroctx64" + _SO, False, "", ""),
    KnownLibrary("rocm_smi", "ROCm SMI", r"^librocm_smi64" + _SO, False, "", ""),
    KnownLibrary("amd_smi", "AMD SMI", r"^libamd_smi" + _SO, False, "", ""),
    KnownLibrary("rocprofiler", "rocprofiler", r"^librocprofiler" + _SO, False, "", ""),
)

GENERIC_BREAKS = "every GPU kernel of this library fails on this GPU (invalid device function)"
GENERIC_WORKAROUND = "use a build of this library that includes the GPU's target"


def library_for_file(filename: str) -> KnownLibrary | None:
    """The known library a file name belongs to (``librccl.so.1.0`` -> RCCL), or None."""
    for lib in KNOWN_LIBRARIES:
        if lib.matches(filename):
            return lib
    return None


def library_by_key(key: str) -> KnownLibrary | None:
    for lib in (*KNOWN_LIBRARIES, ROCBLAS_TENSILE):
        if lib.key == key:
            return lib
    return None


def library_for_text(text: str) -> KnownLibrary | None:
    """The known library named in a path or message (``…/librocsolver.so.0`` -> rocSOLVER)."""
    for m in re.finditer(r"lib[A-Za-z0-9_+\-]+\.so(?:\.[0-9.]*[0-9])?", text):
        lib = library_for_file(m.group(0))
        if lib is not None:
            return lib
    return None
