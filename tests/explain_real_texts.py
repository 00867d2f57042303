"""Real ROCm failure lines from public trackers, each with where it was reported (repo#number) and
the diagnoses that fit it (any one of them counts). Two sets:

RULES_FROM: the texts the family rules (rocmrevive/diagnose/families.py) and the rules added with
  them were written from.
HELD_OUT: collected after those rules were written, from other searches, and never used to change
  them: the test of whether the families generalise (tests/test_explain_families.py reports the rate).

Since the message catalogue (rocmrevive/data/messages.toml, issue 38) some of these texts are answered by
a catalogue entry read from the emitting code instead of a family; where so, the entry's id was added to
the fitting diagnoses (the family's answer still counts). These texts were seen while the catalogue was
written, so they are no held-out set for it: that is tests/explain_heldout.py.
"""
from __future__ import annotations

RULES_FROM = [
    ("ROCm/hipBLASLt#251", "rocblaslt warning: No paths matched /opt/hipBLASLt/build/release/library/../Tensile/"
     "library/*gfx906*co. Make sure that HIPBLASLT_TENSILE_LIBPATH is set correctly.", {"hipblaslt-no-files"}),
    ("ROCm/TheRock#6175", 'rocblaslt error: Cannot read "TensileLibrary_lazy_gfx906.dat" (or .zlib variant): '
     "No such file or directory", {"hipblaslt-no-files"}),
    ("ROCm/TheRock#6175", "hipModuleLoad failed: Kernels.so-000-gfx906.hsaco", {"family-code-object"}),
    ("iacopPBK/llama.cpp-gfx906#17", ":0:rocdevice.cpp            :2992: 4026031038 us:  Callback: Queue "
     "0x7d8018200000 aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to "
     "access memory beyond the largest legal address. code: 0x29", {"hsa-memory-aperture-violation"}),
    ("ROCm/legacy-rocm-build#2153", ":0:rocdevice.cpp :2672: 0696142325 us: 5999 : [tid:0x7f676e4c7640] "
     "Device::callbackQueue aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted "
     "to access memory beyond the largest legal address. code: 0x29", {"hsa-memory-aperture-violation"}),
    ("ggml-org/whisper.cpp#3576", "rocdevice.cpp Callback: Queue 0x7fc220400000 aborting with error : "
     "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal "
     "address. code: 0x29", {"hsa-memory-aperture-violation"}),
    ("doktor83/SRBMiner-Multi#206", ":0:rocdevice.cpp            :2614: 102457364470 us: 6856 : "
     "[tid:0x7fe7bb747700] Device::callbackQueue aborting with error : HSA_STATUS_ERROR_MEMORY_FAULT: Agent "
     "attempted to access an inaccessible address. code: 0x2b", {"hsa-memory-aperture-violation"}),
    ("ROCm/hip#2245", ":0:rocdevice.cpp            :2180: 19701820608 us: Device::callbackQueue aborting with "
     "status: 0x100f", {"family-code-object", "hip-callback-queue-status"}),
    ("ROCm/legacy-rocm-build#1393", ":0:rocdevice.cpp            :2303: 768423197593 us: Device::callbackQueue "
     "aborting with status: 0x100f", {"family-code-object", "hip-callback-queue-status"}),
    ("pytorch/pytorch#111601", "RuntimeError: HIP error: shared object initialization failed",
     {"family-code-object", "torch-shared-object-init"}),
    ("ROCm/legacy-rocm-build#2061", "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
     {"hip-no-binary-for-gpu"}),
    ("ROCm/hip#2187", '/src/external/hip-on-vdi/rocclr/hip_code_object.cpp:120: guarantee(false && '
     '"hipErrorNoBinaryForGpu: Coudn\'t find binary for current devices!")', {"family-code-object"}),
    ("ROCm/legacy-rocm-build#46", "### HCC STATUS_CHECK Error: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008) at "
     "file:/home/scchan/code/github/radeonopencompute/hcc.1.3/hcc/lib/hsa/mcwamp_hsa.cpp line:2721",
     {"hsa-out-of-resources"}),
]

HELD_OUT = [
    ("ROCm/tensorflow-upstream#1959", "Memory access fault by GPU node-2 (Agent handle: 0x38b6960) on address "
     "0x1000. Reason: Page not present or supervisor privilege.", {"hsa-memory-access-fault"}),
    ("ROCm/legacy-rocm-build#1535", "Memory access fault by GPU node-2 (Agent handle: 0x55fea5592860) on address "
     "0x7fc133800000. Reason: Page not present or supervisor privilege.", {"hsa-memory-access-fault"}),
    ("ROCm/rocBLAS#1339", "rocBLAS error: Cannot read /opt/rocm-5.4.0/lib/rocblas/library/TensileLibrary.dat: "
     "Illegal seek", {"rocblas-tensile-missing", "family-library-files"}),
    ("ROCm/rocBLAS#1299", "rocBLAS error: Cannot read /home/chen/.local/lib/python3.8/site-packages/torch/lib/"
     "rocblas/library/TensileLibrary.dat", {"rocblas-tensile-missing", "family-library-files"}),
    ("mkiol/dsnote#107", "rocBLAS error: Cannot read /app/extensions/amd/rocm/lib/rocblas/library/TensileLibrary.dat: "
     "No such file or directory", {"rocblas-tensile-missing", "family-library-files"}),
    ("brknsoul/ROCmLibs#4", "rocBLAS error: Cannot read C:\\Program Files\\AMD\\ROCm\\6.1\\bin\\/rocblas/library/"
     "TensileLibrary.dat: No such file or directory for GPU arch : gfx1103",
     {"rocblas-tensile-missing", "family-library-files"}),
    ("ggml-org/llama.cpp#22013", "ROCm error: invalid device function", {"llamacpp-invalid-device-function"}),
    ("ggml-org/llama.cpp#8504", "CUDA error: invalid device function", {"llamacpp-invalid-device-function"}),
    ("ggml-org/llama.cpp#3320", "CUDA error 98 at /code/llama.cpp/ggml-cuda.cu:6246: invalid device function",
     {"llamacpp-invalid-device-function", "family-code-object"}),
    ("ROCm/legacy-rocm-build#4728", "RuntimeError: HIP error: no kernel image is available for execution on the "
     "device", {"family-code-object", "torch-no-kernel-image"}),
    ("ROCm/legacy-rocm-build#3894", "HIP error: no kernel image is available for execution on the device",
     {"family-code-object", "torch-no-kernel-image"}),
    ("ROCm/legacy-rocm-build#6120", "rocBLAS error from hip error code: 'hipErrorInvalidDeviceFunction':98",
     {"rocblas-invalid-device-function"}),
    ("ollama/ollama#11975", "ROCm error: invalid device function", {"llamacpp-invalid-device-function"}),
    ("ROCm/rocBLAS#1514", 'rocBLAS error: Tensile solution found, but exception thrown for { a_type: "f16_r", '
     'b_type: "f16_r", c_type: "f16_r", d_type: "f16_r", compute_type: "f16_r", transA: \'N\', transB: \'N\', '
     "M: 256, N: 256, K: 64 }", {"rocblas-kernel-not-found", "family-code-object"}),
    ("ROCm/MIOpen#1204", "MIOpen Error: /MIOpen/src/hipoc/hipoc_program.cpp:286: Code object build failed. Source: "
     "MIOpenIm2d2Col.cl", {"family-code-object", "miopen-code-object-build-failed"}),
    ("ROCm/TheRock#5018", "MIOpen(HIP): Error [C:/home/runner/_work/TheRock/TheRock/rocm-libraries/projects/miopen/"
     "src/include\\miopen/conv/heuristics/ai_heuristics.hpp:62] Unable to load file: gfx908_metadata.tn.model",
     {"family-library-files", "miopen-ai-heuristics"}),
    ("pytorch/pytorch#119637", "HIP error: shared object initialization failed",
     {"family-code-object", "torch-shared-object-init"}),
    ("Dao-AILab/flash-attention#1652", "RuntimeError: HIP Function Failed (/home/chi/flash-attention/csrc/"
     "composable_kernel/include/ck_tile/host/kernel_launch_hip.hpp,51) shared object initialization failed",
     {"family-code-object"}),
    ("nod-ai/AMD-SHARK-Studio#1938", "rocm driver error 'hipErrorSharedObjectInitFailed' (303): shared object "
     "initialization failed", {"family-code-object"}),
    ("ROCm/MIOpen#101", "MIOpen(OpenCL): Warning [FindRecordUnsafe] File is unreadable: /opt/rocm/miopen/share/"
     "miopen/db/gfx906+sram-ecc_60.cd.pdb.txt", {"family-library-files", "miopen-file-unreadable"}),
]
