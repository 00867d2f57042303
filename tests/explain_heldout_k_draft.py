"""Held-out set K, DRAFT: gfx906 owners' texts gathered for issue 38, causes from the threads; `want` not written yet.

Gathered on 2026-12-07 by an independent gatherer (branch gather-k) while others extend the catalogue on their own
branches (not looked at). No text was run through `rocmrevive explain` or its functions, and the catalogue was not
grepped for these texts' messages. `want` (rule ids) is written in a second step from the frozen catalogue, read,
not run.
"""

# How it was gathered: with the `search` tool (corpora 'issues' and 'pages'; a thread read further with more searches
# where the excerpt was cut), with queries no earlier set (A-J in tests/explain_heldout.py) used, widened away from the
# ROCm/llama.cpp/ollama pool the earlier sets exhausted: Chinese/Korean/Russian/German queries, forum pages, the ROCm
# math libraries' test threads (rocFFT, rocBLAS, Tensile), HPC libraries (Kokkos, CuPy), OpenCL apps and miners (gpuowl,
# ethminer, TeamRedMiner, lolMiner, WildRig), overclocking/monitoring tools (WattmanGTK, amdgpu-utils, amdgpu-clocks,
# LACT), VM passthrough (vendor-reset), macOS (WhateverGreen). Texts were taken as the results gave them, no kind of
# message preferred or avoided. Kept: only threads whose poster runs a gfx906 card (Radeon VII, Radeon Pro VII, Instinct
# MI50/MI60, 'Vega 20'/gfx906, as the thread says), with an error/warning text as printed (not a paraphrase, not a
# screenshot), not already in the repo (checked with grep -rF of a distinctive substring in tests/ and against the
# threads sets A-J list as used or left out). A paste keeps its lines, trimmed to the lines around the failure. A text
# that differs from a repo text or a kept text only in a number, a path or a product name (a near-copy) was left out.
# The label says 'Windows' where the poster runs Windows (and 'macOS' for the one Hackintosh). `cause` is what the
# thread shows the cause and the fitting action to be (maintainers' answers, the poster's resolution), 'unsettled' where
# the thread settled nothing.
#
# The pages corpus gave no owner text at all (gitcode/CSDN articles about other GPUs, darktable manual pages, READMEs);
# nearly every GitHub result for the obvious gfx906 queries was a thread sets A-J already used or left out, so most kept
# texts come from smaller trackers and older (2019-2021) threads.
#
# Short names below: legacy#N = ROCm/legacy-rocm-build#N, tf-upstream#N = ROCm/tensorflow-upstream#N, nlzy#N =
# nlzy/vllm-gfx906#N, mixa3607#N = mixa3607/ML-gfx906#N, iacopPBK#N = iacopPBK/llama.cpp-gfx906#N, lmstudio#N =
# lmstudio-ai/lmstudio-bug-tracker#N, lms#N = lmstudio-ai/lms#N, guinmoon#N = guinmoon/rocm7_builds#N, beellama#N =
# Anbeeld/beellama.cpp#N, A1111#N = AUTOMATIC1111/stable-diffusion-webui#N; a bare #N is in the repository named just
# before it. 'used' = a thread sets A-J hold or list as left out.
#
# Queries, in the order run (corpus: "query" - how many texts kept from it - threads left out and why); 19 kept:
#   pages: "MI50 32G ollama 报错 gfx906" 0 (gitcode articles about other GPUs)
#   pages: "gfx906 rocm 报错 解决" 0 (gitcode articles, other GPUs / no owner text)
#   pages: "MI50 显卡 llama.cpp 编译 错误 rocm" 0
#   pages: "Radeon VII level1techs ROCm error" 0
#   issues: "MI50 32GB 报错 llama.cpp rocm gfx906 运行失败" 0 (llama.cpp#19975 log cut before the failure; ollama-for-amd#79
#     used; lms#228, lmstudio#352, rocm_sdk_builder#180 used)
#   issues: "koboldcpp Radeon VII ROCm crash gfx906 log" 0 (other GPUs)
#   issues: "InvokeAI Radeon VII ROCm error" 0 (A1111#10873 left out by I; pytorch#103973, A1111#13131 used)
#   issues: "text-generation-webui MI50 gfx906 error loading model" 0 (other GPUs)
#   issues: "Eval bug: MI50+ROCM7.2+Qwen3.5 can not run segfault" 0 (llama.cpp#19863: log only as attachment; #20024 log
#     cut; #17586 same crash as TheRock#2347 used)
#   issues: "MI60 Qwen3.5-35B-A3B memory access fault by GPU node Reason llama-server crash after prompts" 0
#   issues: "Segmentation fault qwen3 next rocm/hip gfx906 core dumped after few tokens" 0 (TheRock#2347 used)
#   issues: "MI50 32G Qwen3.5 llama-server segfault Segmentation fault core dumped ROCm 7.2 mmproj" 0
#   issues: "ggml-org/llama.cpp 20024 Qwen3.5-35B-A3B MI60 Memory access fault comment fixed" 0
#   issues: "tinyadam MI50 Qwen3.5 segfault llama.cpp b8179 comment resolved" 0
#   issues: "gfx906 Radeon VII Fooocus error HIP" 0 (other GPUs; llama.cpp#5712, guinmoon#2 used)
#   issues: "LocalAI MI50 gfx906 rocm error" 0 (LocalAI#9313 used by set A; others other GPUs)
#   issues: "whisper.cpp hipblas gfx906 MI50 error" 0 (other GPUs)
#   issues: "Blender Cycles HIP Radeon VII gfx906 not supported error message" 0 (gentoo#27552 left out by I; other
#     GPUs)
#   issues: "MI50 vllm 报错 HIP error gfx906 部署失败" 0 (nlzy#30 used; legacy-rocm-build#3999: its text is test_explain.py's
#     'RuntimeError: HIP error: invalid argument' and its rocminfo is a capture in tests; vllm#6565, btbtyler09#2 used)
#   pages: "Radeon VII ROCm ошибка hipErrorNoBinaryForGpu" 0
#   issues: "gpustack MI50 gfx906 worker error rocm" 0 (gpustack#3509, legacy-rocm-build#1552 used)
#   issues: "Radeon Pro VII ollama error rocm library gfx906" 0 (ollama#4780, rocm_sdk_builder#175, preda/gpuowl#63,
#     guinmoon#2 used)
#   issues: "TheRock gfx906 nightly tarball rocminfo error MI50 2026" 0 (rocm_sdk_builder#180 used; other GPUs)
#   issues: "gfx906 amdsmi error Radeon VII amd-smi metric not supported traceback" 0 (rocm-libraries#5210 found here,
#     read and kept under the query two lines below; legacy-rocm-build#3207 is a 7840U APU; ROC-smi#55 used)
#   issues: "MI50 llama.cpp build error hip gfx906 cmake undefined reference" 0 (llama.cpp#16320 log cut before the
#     failure; beellama#55 left out by G; others other GPUs)
#   issues: "[Tensile] stoi() exception in hardwaremonitor gfx906 terminate called after throwing std::invalid_argument"
#     1 kept (rocm-libraries#5210)
#   issues: "Compile bug: llama.cpp HIP Ubuntu Server 24.04 AMDGPU_TARGETS=gfx906 rocm-6.4.3 error" 0 (#16320 cut again)
#   issues: "MI50 ComfyUI ROCm 7 gfx906 KSampler error RuntimeError" 0 (other GPUs)
#   issues: "Radeon VII hashcat ROCm HIP error gfx906 kernel build failed" 0 (other GPUs)
#   issues: "BOINC Radeon VII OpenCL ROCm error gfx906 computation error" 0 (gpuowl#63, legacy#843,
#     tensorflow-upstream#1388, RandomX_OpenCL#6 used/left out; legacy#873 Radeon VII gpuOwl: all-zero residue lines, no
#     error text; legacy#1569 BOINC Vega 20: prose only in the excerpt)
#   issues: "Radeon VII amdgpu-pro OpenCL Einstein@Home crash Vega20 ROCr error log" 0 (gpuowl#63 used; others other
#     GPUs)
#   issues: "MI50 vbios flashed Radeon Pro VII amdgpu dmesg error display" 0 (legacy#1552, #1320, triton-gcn5#4 used;
#     legacy#815 Radeon VII: no text)
#   pages: "MI50 ROCm install ubuntu 24.04 amdgpu-install error gfx906 deprecated" 0
#   issues: "vllm-gfx906-mobydick error MI50 crash" 0 (ollama#12915, ollama#12481, vllm#6565, btbtyler09#2 used)
#   issues: "kyuz0 mi50-gfx906-toolboxes error llama-server" 0 (other GPUs)
#   issues: "skyne98 gfx906 llama.cpp fork issue error" 0 (mixa3607#10: no text)
#   issues: "AdaptiveCpp hipSYCL gfx906 error Radeon VII" 0 (AdaptiveCpp#201: a Radeon VII owner's success output, no
#     failure)
#   issues: "SD.Next sdnext gfx906 Radeon VII ROCm error" 0 (CodeXL#246 no text; rocm-arch#583, rocm_sdk_builder#175
#     used)
#   issues: "rocm-validation-suite rvs MI50 gfx906 test failed error" 0 (other GPUs; MIVisionX#1055 a developer's test
#     run on Vega20, not an owner's failure)
#   pages: "Radeon VII rocm 安装 报错 ubuntu" 0
#   issues: "Instinct MI50 ollama 不使用GPU rocm 日志 gfx906" 0 (ollama#11569, lmstudio#352, lms#228 used; legacy#5215,
#     mixa3607#22 no text)
#   pages: "MI50 reddit LocalLLaMA rocm 7 gfx906 error tensile" 0 (READMEs and other GPUs)
#   issues: "Attempting to use hipBLASLt on an unsupported architecture gfx906 MI50" 0 (other GPUs)
#   issues: "Bfloat16 is only supported on GPUs Radeon VII MI50 vllm ValueError" 0 (NVIDIA cards; legacy#855 Radeon VII
#     question, no error text)
#   issues: "triton OutOfResources shared memory MI50 gfx906 Required Hardware limit 65536" 0 (other GPUs)
#   issues: "Radeon VII ROCm 3.5 MIOpen error pytorch" 0 (A1111#13131, legacy#2235, rocm_sdk_builder#175,
#     tf-upstream#1388 used; legacy#1572 Vega 56 failing, Radeon VII working; legacy#879 no text)
#   issues: "Vega 20 Radeon VII tensorflow benchmark crash hipErrorLaunchFailure" 1 kept (tensorflow-upstream#534; #414
#     (the same poster, Radeon VII) left out: its Memory access fault text is a near-copy of #534's and of the repo's;
#     #302/#300/#394 other GPUs)
#   issues: "Radeon VII opencl clinfo segfault ROCm 4 libamdocl64" 0 (legacy#1082: the Radeon VII commenter pasted
#     clinfo's working output; whose segfault text is not shown as his)
#   issues: "Radeon VII memory access fault training BERT tensorflow-upstream 534 resolution" 0 (same threads)
#   issues: "clinfo Segmentation fault core dumped libtinfo5 Radeon VII ROCm 3.3" 0 (legacy#1082 strace by another
#     poster, GPU unknown; others other GPUs)
#   issues: "twuebi Radeon VII memory access fault tensorflow fixed in ROCm release comment sunway513" 0 (no resolution
#     shown)
#   issues: "Radeon VII tensorflow-upstream transpose garbage output dynamic_stitch" 0 (tensorflow-upstream#449 left out
#     by F; no text)
#   issues: "Radeon VII ROCm 2.x hipcc error Vega 20 gfx906 2019" 0 (hip#560 a developer's warning, GPU unknown;
#     hip#3183 used; beellama#55, rocm-arch#583 used)
#   issues: "Radeon VII rocBLAS test failure ROCm 3 gfx906 rocblas-test" 2 kept (rocBLAS#1202, rocFFT#369;
#     hipBLASLt#251, llama.cpp#12878, legacy#843 used)
#   issues: "rocFFT selftest fails 116 suites Radeon VII wrong order of magnitude resolution" 2 kept (rocFFT#445, #399;
#     rocFFT#439 Radeon Pro VII/MI50: only the poster's summary of counts, no printed failure; rocFFT#324 kept from the
#     next query)
#   issues: "littlewu2508 rocBLAS client tests failure Radeon VII FAILED pre_checkin gemm blas3_tensile" 0 (same thread,
#     more lines)
#   issues: "rocFFT random_real_3d vs_fftw plan execution failure Radeon VII Debian evetsso fixed" 0 (resolution cut)
#   issues: "rocfft-selftest length 14348907 CS_L1D_TRTRT Assertion false failed build_1D fix" 1 kept (rocFFT#324)
#   issues: "Radeon VII rocSPARSE rocSOLVER test failed gfx906" 0 (rocSPARSE#227: Radeon VII passing; others other GPUs)
#   issues: "MIOpen test failure Radeon VII gfx906 ctest" 0 (other GPUs)
#   issues: "rocPRIM rocRAND hipCUB test failure Radeon VII gfx906" 0 (rocPRIM#21: AMD's own pre-release Vega20 test
#     run, not an owner; cupy#4868 a developer's PR; hip#3292's excerpt shows the RX 6700 XT's failures only)
#   issues: "Gentoo dev-util/hip-5.6.0 test failures Radeon VII gfx906 tests FAILED" 0 (same)
#   issues: "rocBLAS 1350 hip 5.6 llvm-16 Gentoo test failure gfx906" 0 (rocBLAS#1350: Radeon VII logs only as
#     attachments)
#   issues: "llamafile gfx906 Radeon VII MI50 error tinyBLAS rocm" 0 (iacopPBK#12, rocm_sdk_builder#180/#175,
#     llama.cpp#12878, rocBLAS#1339 used; others other GPUs)
#   issues: "mlc-llm gfx906 Radeon VII MI50 rocm error" 0 (AlphaMine#5, lmstudio#352, iacopPBK#3 used)
#   issues: "ctranslate2 faster-whisper gfx906 MI50 rocm error" 0 (CTranslate2#2021: a Radeon VII owner's comment, the
#     crash line cut off in the corpus)
#   issues: "sheldonrong Radeon VII CTranslate2 4.7.1 core dump cub_caching test3.py error" 0 (cut again)
#   issues: "rocm-arch Radeon VII error package gfx906 hip runtime" 0 (rocm-arch#583, TheRock#1300, guinmoon#2 used;
#     rocm-arch#873 other GPU)
#   issues: "nixpkgs rocm Radeon VII gfx906 error rocmPackages" 0 (PR review logs, other GPUs)
#   issues: "justxi rocm gentoo overlay Radeon VII Vega 20 error" 0 (legacy#754 no text; legacy#1423,
#     rocm_sdk_builder#175, gpuowl#63 used; justxi#193 prose)
#   issues: "Debian bug librocblas tests fail Radeon VII gfx906 cgmb" 0 (same threads)
#   issues: "Radeon VII hipcc undefined hidden symbol ockl gfx906 link error" 0 (futhark#731: the Radeon VII owner's
#     text not in the excerpt, only the title)
#   issues: "futhark Radeon VII opencl cannot find -lOpenCL vegabook" 1 kept (ethminer#1845; nixpkgs#128078's 'HSA
#     Error:  Incompatible kernel and userspace, Device 66af disabled' is a near-copy of set D/F's Vega 20 texts (only
#     the product name differs); legacy#745 images only; radeon_gpu_profiler#22 no text)
#   issues: "ethminer radeon vii 19.2.2 driver No OpenCL platforms found No usable mining devices" 0 (same thread;
#     nanominer#178 used)
#   issues: "xmrig OpenCL Radeon VII gfx906 error linux ROCm" 0 (wildrig-multi#73, RandomX_OpenCL#6 used; xmr-stak#2523
#     Radeon VII 'invalid result' counts, no error text; others other GPUs)
#   issues: "PyOpenCL Radeon VII ROCm clGetPlatformIDs failed error" 1 kept (legacy#778; legacy#1303 and #823
#     (valeriob01): the card is not named in the excerpts; legacy#843 used)
#   issues: "Radeon Pro VII Linux ROCm error after update not detected" 0 (legacy#1310 no text in the excerpt;
#     legacy#1478 prose; legacy#1423, tf-upstream#1388 used; amdmemorytweak#61 no text)
#   issues: "ROCm 3.9.0 Ubuntu 20.04 Radeon 7 is not detected Lamarche-Perrin" 0
#   issues: "clGetPlatformIDs(-1001) unless root user symbolic link /opt/rocm Radeon VII gpuowl" 1 kept
#     (preda/gpuowl#109; gpuowl#133: card not named in the excerpt)
#   issues: "gpuowl Radeon VII ROCm 3.1 error on load blockSize 400 expected 0000000000000003" 0 (gpuowl#178: a
#     near-copy of #109's line, left out; legacy#873 no error text)
#   issues: "alexpattyn Radeon VII clGetPlatformIDs -1001 ROCm 2.4 fixed reinstall iGPU" 0 (legacy#740 left out by J)
#   issues: "gpuowl Radeon VII ROCm error OpenCL compilation failed" 0 (gpuowl#83 'OpenCL build program failure on
#     Radeon V': the card is not named beyond the cut title, left out; gpuowl#192/#132/#203 other GPUs)
#   issues: "MIOpen Radeon VII gfx906 error miopen issue" 0 (MIOpen#101, #102 used/left out; MIOpen#706's gfx906 line is
#     an AMD developer's reproduction; others other GPUs)
#   issues: "tensorflow-rocm Radeon VII error log crash 2019 rocm 2" 0 (tf-upstream#719 was E's query thread; #449 left
#     out by F; #534 kept above)
#   issues: "gpuowl OpenCL build program failure Radeon VII OpenCL >= 2.0 required found 120 ROCm 2.10" 0 (same)
#   issues: "MIOpen using wrong ISA for certain convolution operations 89Mods GPU instruction not supported
#     s_mul_hi_u32" 0 (MIOpen#117 GPU not named; #95 gfx803)
#   issues: "Instinct MI50 cluster ROCm 4 HPC application error hipMemcpy MI50 node" 0 (legacy#1627 gfx906 hang with no
#     message; legacy#3999 in the repo; cupy#4877 a developer PR; others other GPUs)
#   issues: "MI60 ROCm 3 error HIP kernel launch failure gfx906 HPC code" 0 (TheRock#1844 used; hip#3183 was J's query;
#     others other GPUs)
#   issues: "Kokkos HIP gfx906 MI50 error test failure" 1 kept (kokkos#5199; kokkos#6968's gfx906 excerpt shows only
#     passing tests; kokkos#4772's MI60 remark is a developer's, no text)
#   issues: "KokkosCore_UnitTest_HIP hip.memory_requirements MI50 rocm 4.3 not coarse-grained fix revert" 0 (same
#     thread)
#   issues: "cupy ROCm MI50 gfx906 test failure error hipErrorInvalidValue" 1 kept (cupy#4216; cupy#4868/#4877/#5501
#     developer CI PRs; cupy#5961 a gfx906 owner's show_config, error cut; legacy#3999 in the repo)
#   issues: "alpaka PIConGPU AMReX gfx906 MI50 HIP error" 0 (other GPUs)
#   issues: "magma ginkgo hypre PETSc gfx906 Radeon VII HIP build error" 0 (other GPUs)
#   issues: "cupy MI50 hip runtime compilation bug HIPRTC_ERROR_COMPILATION (6) ElementwiseKernel squared_diff answer" 0
#     (same; cupy#3866 a CuPy developer's gfx906 test log, cut)
#   pages: "MI50 ROCm 오류 gfx906" 0
#   pages: "Radeon VII ROCm Fehler Linux Forum" 0
#   pages: "askubuntu Radeon VII rocm install error dkms" 0
#   issues: "LuxCoreRender Radeon VII OpenCL ROCm error kernel compilation" 0 (LuxCore#458 Radeon VII, no error text;
#     others other GPUs)
#   issues: "Radeon Pro VII workstation ROCm 5 error hip program crash issue" 0 (legacy#3133 used; legacy#3207 an APU;
#     others other GPUs)
#   issues: "Vega 20 rocm-dkms kernel module error Radeon VII boot amdgpu failed load" 1 kept (legacy#815 comment of
#     2019-07-04 (an earlier query saw only its prose opening); legacy#774 dracut 'Possible missing firmware' list: the
#     card is not named in the excerpt; pop-os/pop#3173 Radeon VII, no error text (fixed by a BIOS update);
#     rocm-arch#269 commenters without text; others other GPUs)
#   issues: "witeko cant boot with rocm 2.5 and radeon vii kentrussell kernel 4.18 display issue" 0 (reading #815;
#     legacy#731, #1423 used; #754, #1478 prose)
#   issues: "sadsfae Errors installing rocm-dkms dracut Failed to install module amdkfd Radeon VII" 0 (reading #774: the
#     card still not named)
#   issues: "rocm 2.5 radeon vii dkms 4.15.18-041518 make.log error amdkcl build failed" 0 (reading #815; others other
#     GPUs)
#   issues: "MI50 vulkan llama.cpp ggml_vulkan error device lost gfx906" 0 (all other GPUs)
#   issues: "Radeon VII LACT CoreCtrl overdrive pp_od_clk_voltage error fan control" 0 (ROC-smi#65 used by an earlier
#     set; ROC-smi#74 no text; gpu-utils#8 read below; LACT threads other GPUs)
#   issues: "AMDGPU.jl Radeon VII gfx906 error julia" 0 (other GPUs)
#   issues: "amdgpu-utils Radeon VII amdgpu-ls error pp_od_clk_voltage parse exception glibc" 2 kept (WattmanGTK#58,
#     gpu-utils#8; amdgpu-clocks#17 Radeon VII: the script hangs, no error text; radeon-profile#273, gpu-utils#124 other
#     GPUs)
#   issues: "amdgpu-clocks Radeon VII ROCm 3.8 Committing custom states hang write error invalid argument" 0
#     (amdgpu-clocks#14 Radeon VII: only the informational 'Won't write initial state' line, the poster had misread the
#     docs; #18/#23/#28/#40 other GPUs)
#   issues: "jf3player Radeon VII amdgpu-ls HW file doesn't exist Vega 56 card1 fix release" 0 (reading gpu-utils#8;
#     gpu-utils#20 RX 570)
#   issues: "Radeon VII amdgpu ring gfx timeout dmesg game crash" 0 (other GPUs or the card not named
#     (daniel-schuermann/mesa#90))
#   issues: "radeon-profile amdgpu-fan Radeon VII error fan speed exception" 0 (display-library#5 Radeon VII on Windows:
#     'return errorcode -8' is the poster's paraphrase, not printed text; gpu-utils#8 above; others other GPUs)
#   issues: "Radeon VII Proton game crash vulkan VK_ERROR_DEVICE_LOST RADV VEGA20" 0 (other GPUs)
#   issues: "MI50 amd-smi error no GPUs detected gfx906 rocm 6" 0 (legacy#1552, rocm_sdk_builder#180, gpustack#3509,
#     lmstudio#352 used; legacy#1752 other GPU)
#   pages: "DaVinci Resolve Radeon VII Linux OpenCL error" 0 (darktable manual pages, no owner text)
#   issues: "darktable Radeon VII opencl error ROCm" 0 (legacy#846: the card is not named in the excerpt; others other
#     GPUs)
#   issues: "Folding@home FAHClient Radeon VII OpenCL error core22 linux" 0 (other GPUs)
#   issues: "0x66a1 error amdgpu probe failed MI50 kernel" 0 (amdgpu#157 used; rocm_sdk_builder#180 (lamikr's MI50
#     'Fatal error during GPU init ... error -12') a thread earlier sets used; others other GPUs)
#   issues: "66af Radeon VII unsupported device error tool" 2 kept (teamredminer#384, acidanthera/bugtracker#467;
#     lolMiner#1999 screenshots only; amdmemorytweak#57 screenshot only; CodeXL#246, amdtweak#17 no text)
#   issues: "teamredminer Radeon VII Failed to initialize device idx 0 (-13) HBCC driver 21.6" 0 (teamredminer#391
#     Radeon VII: the same line (near-copy of #384), text in a screenshot; #382/#403 Vega 56; #194/#296/#367/#371 other
#     GPUs)
#   issues: "camielverdult Radeon VII macOS CAIL_ASICSetup failed WhateverGreen hardware acceleration" 0 (reading #467;
#     acidanthera#2452 Radeon Pro VII on macOS 10.14.6: no error text, screenshots)
#   issues: "No Hardware Acceleration with Radeon VII acidanthera 467 vit9696 invalid comment" 0 (no answer in the
#     excerpt)
#   issues: "lolMiner Radeon VII error linux amdgpu-pro opencl" 1 kept (lolMiner#45; wildrig-multi#278 read below;
#     lolMiner#1999, teamredminer#163 screenshots only; ethminer#1845 kept above; others other GPUs)
#   issues: "Radeon VII VAAPI ffmpeg encode error vega20 mesa" 0 (other GPUs)
#   issues: "wildrig RADEON VII refuse to start latest drivers CL_BUILD_PROGRAM_FAILURE clBuildProgram kawpow Windows
#     11" 0 (wildrig-multi#278 Radeon VII on Windows: 'Error CL_BUILD_PROGRAM_FAILURE when calling clBuildProgram for
#     kawpow' is a near-copy of #73's line, which an earlier set holds; others other GPUs)
#   issues: "Radeon VII DirectML stable diffusion error Windows" 0 (other GPUs)
#   issues: "Radeon VII 显卡 报错 rocm" 0 (tf-upstream#1388, gpuowl#63, legacy#843, #740, #1423, rocm_sdk_builder#175 used;
#     legacy#754 prose; legacy#873 no error text)
#   issues: "\"Radeon Pro VII\" error log crash" 0 (radeon_gpu_profiler#116 Radeon Pro VII on Windows: 'capture timed
#     out' is the poster's wording, no printed text; amdmemorytweak#57 screenshot; legacy#3207 an APU; gpuowl#63,
#     tf-upstream#1388 used)
#   issues: "vendor-reset Radeon VII vega20 passthrough reset failed dmesg" 1 kept (gnif/vendor-reset#5; others other
#     GPUs)
#   issues: "MI50 proxmox passthrough VM amdgpu error gfx906 guest" 0 (legacy#4017 left out by an earlier set;
#     amdgpu#157 used; nlzy/vllm-gfx906#47 no error text; others other GPUs)
#   issues: "Instinct MI60 fails to initialize Ubuntu guest VM ESXi 8 dmesg amdgpu error haydonryan" 0 (same; others
#     other GPUs)
#   issues: "exllamav2 MI50 gfx906 error compile hip" 0 (vllm#12431, hip#3339, beellama#55 used or left out by earlier
#     sets; HIPIFY#1041 no text; others other GPUs)
#   issues: "MI60 gfx906 sglang aphrodite tabbyAPI error" 0 (unrelated results)
#   issues: "GROMACS OpenMM Radeon VII gfx906 error OpenCL HIP simulation" 0 (openmm#4623: a Radeon VII tester's report
#     relayed by an RX 460 owner, no text; others other GPUs)
#   issues: "ZLUDA Radeon VII gfx906 error Windows" 0 (ComfyUI-Zluda#278 used and #286 left out by an earlier set;
#     ollama#4780 used; vladmandic/sdnext#2906 Radeon Pro VII on Windows: garbled images, no error in the log;
#     vosen/ZLUDA#208 a developer's summary; others other GPUs)
#   issues: "ukromalybot ComfyUI-Zluda RuntimeError No CUDA GPUs are available Radeon VII MI50 Adrenalin 25.3.1" 0
#     (same; others other GPUs)
HELDOUT_K_DRAFT = [
    # the Tensile tuning client's hardware monitor: rsmi_dev_gpu_metrics_info_get() is not supported on gfx906, the empty
    # reading reaches std::stoi and throws; the poster's workaround: HardwareMonitor OFF in the yaml/ini (or a patched
    # HardwareMonitor::collectOnce); the maintainer: will improve the exception handling (moving to amd-smi). Not an install fault.
    ("ROCm/rocm-libraries#5210 (gfx906, ROCm 7.1, Tensile tuning for gfx906)",
     "Log level: Debug\n"
     "terminate called after throwing an instance of 'std::invalid_argument'\n"
     "  what():  stoi\n"
     "~/Projects/rocm/rocm7.1/Tensile/gfx906logic/tensile_gfx906_poc/1_BenchmarkProblems/Cij_Aki_Bjk_SB_00/00_Final/build/run.sh: "
     "line 5: 335465 Aborted                 (core dumped) ~/Projects/rocm/rocm7.1/Tensile/gfx906logic/tensile_gfx906_poc/"
     "0_Build/client/tensile_client --config-file ~/Projects/rocm/rocm7.1/Tensile/gfx906logic/tensile_gfx906_poc/"
     "1_BenchmarkProblems/Cij_Aki_Bjk_SB_00/00_Final/build/../source/ClientParameters.ini\n"
     "> UserWarning: ClientWriter Benchmark Process exited with code 134\n"
     "> UserWarning: BenchmarkProblems: Benchmark Process exited with code 134",
     "Tensile's benchmark client reads GPU metrics through rocm-smi's rsmi_dev_gpu_metrics_info_get, unsupported on gfx906; "
     "the empty value makes std::stoi throw. Action: turn the Tensile HardwareMonitor off (the poster's workaround); "
     "a Tensile/rocm-libraries defect, not the card or the install"),
    # BERT fine-tuning on TF 1.13.1 / ROCm 2.5 faults in 70 % of runs; the thread (labelled Under Investigation) shows no cause
    ("ROCm/tensorflow-upstream#534 (Radeon VII, ROCm 2.5, TensorFlow 1.13.1, Linux Mint)",
     "Memory access fault by GPU node-1 (Agent handle: 0x55b34b19c5b0) on address 0x7f0cc7dff000. Reason: Page not present "
     "or supervisor privilege.\n"
     "Aborted (core dumped)",
     "unsettled: a GPU page fault in a TensorFlow training kernel; the thread closed without a cause (a comment in "
     "ROCm/legacy-rocm-build#879 lists it as unresolved for months); the poster rules out temperature"),
    # rocFFT's selftest on Radeon VII: results off by orders of magnitude (the same tests pass on an RX 6700 XT)
    ("ROCm/rocFFT#369 (Radeon VII, ROCm 5.1.3, Gentoo build, rocfft-selftest)",
     "[ RUN      ] ListParamTest/BasicInterfaceDouble3DBasisTest.Inv/54\n"
     "/fast/portage/sci-libs/rocFFT-5.1.3/work/rocFFT-rocm-5.1.3/clients/selftest/test_complex.cpp:105: Failure\n"
     "Expected: (fabs(maxRefReal - maxTstReal)) <= (fabs(maxRefReal * 0.000001)), actual: 1.8e+06 vs 2.88\n"
     "/fast/portage/sci-libs/rocFFT-5.1.3/work/rocFFT-rocm-5.1.3/clients/selftest/test_complex.cpp:106: Failure\n"
     "Expected: (fabs(maxRefImag - maxTstImag)) <= (fabs(maxRefImag * 0.000001)), actual: 1.44e+06 vs 3.24\n"
     "/fast/portage/sci-libs/rocFFT-5.1.3/work/rocFFT-rocm-5.1.3/clients/selftest/test_complex.cpp:109: Failure\n"
     "Expected: (fabs(N * ref[maxRefRealIdx][0] - tst[maxRefRealIdx][0])) <= (fabs(maxRefReal * 0.000001)), actual: "
     "2.87997e+06 vs 2.88",
     "unsettled: rocFFT's own selftest gives wrong results on gfx906 (116 suites); the thread closed without a cause shown"),
    # rocFFT's plan builder finds no kernel for a factor of 3^15 (the poster traced it to function_pool::has_function)
    ("ROCm/rocFFT#324 (Radeon VII, ROCm 4.3, Gentoo build, rocfft-selftest)",
     "Failed on Node: length 14348907 (single): when attempting Scheme: CS_L1D_TRTRT\n"
     "rocfft-selftest: /tmp/portage/sci-libs/rocFFT-4.3.0/work/rocFFT-rocm-4.3.0/library/src/plan.cpp:1620: "
     "void TreeNode::build_1D(): Assertion `false' failed.",
     "a rocFFT plan-building bug (no kernel in the function pool for the 3^15 length's factor), not the card or the "
     "install; action: a newer rocFFT / report upstream"),
    # rocFFT's 3D plan assertion; the maintainer fixed it upstream (commit ffde44d)
    ("ROCm/rocFFT#399 (Radeon VII, ROCm 5.4.3 on clang 15, Gentoo, rocfft-test)",
     "rocfft-test: /fast/portage/sci-libs/rocFFT-5.4.3/work/rocFFT-rocm-5.4.3/library/src/tree_node_3D.cpp:395: virtual void "
     "BLOCKRC3DNode::AssignParams_internal(): Assertion childNodes.size() >= 3 && childNodes.size() < 6' failed.",
     "a rocFFT bug (a 3D plan node with 6 children), fixed upstream in ffde44d (the maintainer); action: a rocFFT with the fix"),
    # Debian's packaged rocFFT tests on a Radeon VII; the excerpt cuts the maintainer's answer
    ("ROCm/rocFFT#445 (Radeon VII, Debian rocFFT 1.0.21 on ROCr 5.2.3, rocfft-test)",
     "[ RUN      ] random_real_3d/random_params.vs_fftw/0\n"
     "unknown file: Failure\n"
     "C++ exception with description \"rocFFT plan execution failure\"\n"
     "he test body.\n"
     "\n"
     "[  FAILED  ] random_real_3d/random_params.vs_fftw/0, where\n"
     "= (0, 3, 1, 1, 2) (877 ms)",
     "unsettled in what the corpus shows: rocFFT fails to execute a 3D real plan on gfx906 (the thread is closed; the "
     "maintainer's reply is cut off)"),
    # rocBLAS client tests against OpenBLAS as the reference; open, no answer
    ("ROCm/rocBLAS#1202 (Radeon VII, ROCm 4.3, Gentoo build, rocblas-test)",
     "[  FAILED  ] pre_checkin/gemv.blas2/gemv_skinny_n_f32_c_T_131071_63_2_131071_2_0_2, where GetParam() = { M: 131071, "
     "N: 63, K: -1, KL: -1, KU: -1, lda: 131071, ldb: 0, ldc: 0, ldd: 0, a_type: f32_c, b_type: f32_c, c_type: f32_c, "
     "d_type: f32_c, compute_type: f32_c, incx: 2, incy: 2, incd: 0, incb: 0, alpha: 2.0, alphai: 1.5, beta: 0.0, "
     "betai: 0.5, transA: 'T', transB: '*', side: '*', uplo: '*', diag: '*', batch_count: -1, HMM: false, threads: 0, "
     "streams: 0, devices: 0, stride_a: 8257473, stride_b: 0, stride_c: 0, stride_d: 0, stride_x: 0, stride_y: 0, "
     "fortran: false, norm_check: 0, unit_check: 1, timing: 0, iters: 10, cold_iters: 2, algo: 0, solution_index: 0, "
     "flags: 0, function: \"gemv\", name: \"gemv_skinny_n\", category: \"pre_checkin\", initialization: \"rand_int\", "
     "known_bug_platforms: \"\", c_noalias_d: false, atomics_mode: atomics_allowed, user_allocated_workspace: 0 }",
     "unsettled (open): rocBLAS's client tests disagree with the poster's OpenBLAS reference build on gfx906 for skinny "
     "complex gemv; no maintainer answer"),
    # Windows 10, Adrenalin 19.2.2 (the Radeon VII launch driver) beside a Vega 64 and a Fury X; clinfo lists the card,
    # ethminer finds no OpenCL platform. The thread has no answer.
    ("ethereum-mining/ethminer#1845 (Radeon VII with Vega 64 and Fury X, Windows 10, Adrenalin 19.2.2)",
     "No OpenCL platforms found\n"
     "Error: No usable mining devices found",
     "unsettled (Windows): ethminer's OpenCL loader finds no platform although clinfo shows the card; no answer in the "
     "thread. Nothing rocmrevive (Linux) does applies"),
    # a Ryzen 5 2400G's iGPU drives the displays, the Radeon VII is for compute; rocminfo lists gfx906, clinfo finds no
    # platform. The excerpts show no answer (ROCm/legacy-rocm-build#740, the same APU + Radeon VII setup, was told to
    # disable the iGPU).
    ("ROCm/legacy-rocm-build#778 (Radeon VII beside a Ryzen 5 2400G iGPU, ROCm 2.3/2.4, Ubuntu 18.04)",
     "$ /opt/rocm/opencl/bin/x86_64/clinfo \n"
     "ERROR: clGetPlatformIDs(-1001)",
     "unsettled: the ROCm OpenCL ICD finds no platform (CL_PLATFORM_NOT_FOUND_KHR) while rocminfo sees the card; no cause "
     "shown in the thread (a Raven Ridge iGPU next to the card was the cause in the similar legacy#740)"),
    # gpuowl PRP on ROCm 3.1: the poster bisected it to a gpuowl commit (305d2b4 passes, 6d275b7 fails); a commenter: upgrade
    # ROCm. (preda/gpuowl#178, a Radeon VII owner on ROCm 3.1 with the same 'EE ... loaded' line, left out as a near-copy.)
    ("preda/gpuowl#109 (Radeon VII, ROCm 3.1)",
     "2020-02-29 16:22:41 a5de692172dc768b OpenCL compilation in 3.50 s\n"
     "2020-02-29 16:22:42 a5de692172dc768b 84682337 EE        0 loaded: blockSize 400, 0000000000000000 (expected "
     "0000000000000003)\n"
     "2020-02-29 16:22:42 a5de692172dc768b Exiting because \"**error on load**\"\n"
     "2020-02-29 16:22:42 a5de692172dc768b Bye",
     "an application-level failure: gpuowl's own self-check reads back a zero residue after a gpuowl change that misbehaves "
     "with ROCm 3.1's OpenCL compiler (bisected to a gpuowl commit; advice in the thread: a newer ROCm / gpuowl's "
     "-safeMath); not an install fault rocmrevive can fix"),
    # Sandia's nightly Kokkos CI on its MI50 node (ROCm 4.3): a Kokkos test added days earlier (the HIPManagedSpace PR)
    # started failing after the July 2 merges; closed as a Kokkos-side regression.
    ("kokkos/kokkos#5199 (MI50, ROCm 4.3, Sandia nightly CI)",
     "05:43:01 4: [ RUN      ] hip.memory_requirements\n"
     "05:43:01 4: /home/jenkins/caraway-new/workspace/Kokkos_develop_carawaymi50_rocm430_hipserial/kokkos/core/unit_test/hip/"
     "TestHIP_Memory_Requirements.cpp:80: Failure\n"
     "05:43:01 4: Value of: checkMemoryCoarseGrainedness(view)\n"
     "05:43:01 4:   Actual: false\n"
     "05:43:01 4: Expected: true\n"
     "05:43:01 4: The memory in views in Kokkos::Experimental::HIPSpace is not coarse-grained. Kokkos relies on all user "
     "facing memory being coarse-grained.\n"
     "05:43:01 4: [  FAILED  ] hip.memory_requirements (0 ms)",
     "an application's own test: Kokkos's new memory-requirements check failed after Kokkos commits of that week (the thread "
     "names them); a Kokkos regression fixed in Kokkos, not the card or the install"),
    # CuPy on MI50s: the first ElementwiseKernel fails in hiprtc; the excerpt shows no answer (CuPy's own ROCm 3.5 testing
    # on gfx906 found hiprtc not working then, cupy#3866)
    ("cupy/cupy#4216 (MI50, CuPy on ROCm, 2020)",
     "Traceback (most recent call last):\n"
     "  File \"/home/.conda/envs/cupy/lib/python3.8/site-packages/cupy/cuda/compiler.py\", line 512, in compile\n"
     "    nvrtc.compileProgram(self.ptr, options)\n"
     "  File \"cupy_backends/cuda/libs/nvrtc.pyx\", line 108, in cupy_backends.cuda.libs.nvrtc.compileProgram\n"
     "  File \"cupy_backends/cuda/libs/nvrtc.pyx\", line 122, in cupy_backends.cuda.libs.nvrtc.compileProgram\n"
     "  File \"cupy_backends/cuda/libs/nvrtc.pyx\", line 58, in cupy_backends.cuda.libs.nvrtc.check_status\n"
     "cupy_backends.cuda.libs.nvrtc.NVRTCError: HIPRTC_ERROR_COMPILATION (6)",
     "unsettled: hiprtc fails to compile CuPy's generated kernel; the thread closed without a cause in the excerpt "
     "(hiprtc of that ROCm era was broken for CuPy, cupy#3866)"),
    # the owner of two Radeon VIIs (ROCm 2.5, Ubuntu 18.04) tries a mainline 4.15.18 build because 4.18 loses the display
    # at boot; rock-dkms does not build there. The make.log excerpt ends before the error; no answer to this comment
    ("ROCm/legacy-rocm-build#815 (2x Radeon VII, ROCm 2.5, Ubuntu 18.04, mainline kernel 4.15.18)",
     "make -j24 KERNELRELEASE=4.15.18-041518-generic -j24 kdir=/lib/modules/4.15.18-041518-generic/build "
     "-C /lib/modules/4.15.18-041518-generic/build M=/var/lib/dkms/amdgpu/2.5-27/build....(bad exit status: 2)\n"
     "ERROR (dkms apport): kernel package linux-headers-4.15.18-041518-generic is not supported\n"
     "Error! Bad return status for module build on kernel: 4.15.18-041518-generic (x86_64)\n"
     "Consult /var/lib/dkms/amdgpu/2.5-27/build/make.log for more information.",
     "rock-dkms (amdgpu 2.5) fails to build against a mainline kernel's headers; the actual compile error is in make.log "
     "(cut in the thread); action: read make.log, use a distro kernel that ROCm 2.5 supports. Unsettled in the thread"),
    # WattmanGTK (an overclocking GUI) on a Radeon VII: its parser of pp_od_clk_voltage does not match Vega 20's
    # OD_SCLK/OD_VDDC_CURVE layout (other Radeon VII owners confirm and paste the file); the issue is still open
    ("BoukeHaarsma23/WattmanGTK#58 (Radeon VII, Ubuntu 18.04, 2019)",
     "Reading clock states and limits.\n"
     "Traceback (most recent call last):\n"
     "  File \"run.py\", line 23, in <module>\n"
     "    wattman.main()\n"
     "  File \"/home/vignesh/Downloads/WattmanGTK/WattmanGTK/wattman.py\", line 151, in main\n"
     "    card.get_states()\n"
     "  File \"/home/vignesh/Downloads/WattmanGTK/WattmanGTK/GPU.py\", line 70, in get_states\n"
     "    self.pstate_clock.append(int(match.group(2)))\n"
     "AttributeError: 'NoneType' object has no attribute 'group'",
     "app bug: WattmanGTK cannot parse the Vega 20 (Radeon VII) pp_od_clk_voltage format (no per-level P-state table); "
     "no fix in the thread (open); use a tool that supports Vega 20 overdrive"),
    # amdgpu-utils 2.1.0 on a Radeon VII (card0) beside a Vega 56 (card1); the author got a Radeon VII and released
    # v2.4.0 'compatible with Radeon VII' as the fix
    ("Ricks-Lab/gpu-utils#8 (Radeon VII beside a Vega 56, Ubuntu 18.04, amdgpu-pro 18.50)",
     "> ./amdgpu-ls\n"
     "AMD Wattman features enabled: 0xffffffff\n"
     "amdgpu version: 18.50-725072\n"
     "2 AMD GPUs detected\n"
     "Error: HW file doesn't exist: /sys/class/drm/card1/device/hwmon/hwmon1/power1_cap_max\n"
     "Error: HW file doesn't exist: /sys/class/drm/card1/device/hwmon/hwmon1/power1_cap\n"
     "Error: HW file doesn't exist: /sys/class/drm/card1/device/hwmon/hwmon1/power1_average\n"
     "Error: HW file doesn't exist: /sys/class/drm/card1/device/hwmon/hwmon1/temp1_input\n"
     "Error: HW file doesn't exist: /sys/class/drm/card1/device/hwmon/hwmon1/temp1_crit",
     "app bug: amdgpu-utils 2.1.0 read the sysfs/hwmon files of Radeon VII systems wrongly; fixed by the tool's "
     "v2.4.0 release (update amdgpu-utils)"),
    # TeamRedMiner 0.8.4 on a Radeon VII under Windows Adrenalin 21.6.x; the developer (in the duplicate #391, another
    # Radeon VII owner's) explains: newer AMD drivers reject the miner's precompiled GPU binaries; downgrade the driver
    # (21.5.2 works) or wait for TRM 0.8.6; a commenter (Vega 56) got it working by turning HBCC off
    ("todxx/teamredminer#384 (Radeon VII, Windows, Adrenalin 21.6.x, TeamRedMiner 0.8.4)",
     "Error: Failed to initialize device idx 0 (-13)",
     "app/driver mismatch: Adrenalin 21.6+ rejects TeamRedMiner's precompiled kernels; stay on driver 21.5.2 "
     "(or turn HBCC off) until the miner's fixed release (0.8.6)"),
    # a Radeon VII in a Hackintosh (macOS 10.14.6, WhateverGreen 1.3.1): full resolution, no acceleration; the
    # maintainers closed it as 'invalid' with no cause given in the excerpt
    ("acidanthera/bugtracker#467 (MSI Radeon VII, macOS 10.14.6 Hackintosh, WhateverGreen 1.3.1)",
     "2019-08-24 02:58:10.438855-0700 0x466      Default     0x0                  0      0    kernel: "
     "(AMDRadeonX5000) *** After calling TTL::initialize()\n"
     "2019-08-24 02:58:10.443780-0700 0x466      Default     0x0                  0      0    kernel: "
     "(AMDRadeonX5000HWLibs) AMD Error:\n"
     "2019-08-24 02:58:10.443781-0700 0x466      Default     0x0                  0      0    kernel: "
     "(AMDRadeonX5000HWLibs)   CAIL_ASICSetup() failed (CAILRESULT=1)",
     "unsettled: macOS's AMD driver fails to set up the Radeon VII ASIC in a Hackintosh; closed as invalid (not a "
     "WhateverGreen bug), no fix in the thread"),
    # lolMiner 1.0 on a Radeon VII under Windows: mining works, sensor read-out does not; the developer: ADL changed
    # between Vega 10 and Vega 20 (and Navi); fixed in lolMiner 1.02 (temperature and power)
    ("Lolliedieb/lolMiner-releases#45 (Radeon VII, Windows, lolMiner 1.0)",
     "Error in getting sensor data from AMD ADL library. Sensoring will be disabled.",
     "app limitation: lolMiner 1.0 could not read Radeon VII sensors through AMD's ADL on Windows (mining itself "
     "unaffected); fixed in lolMiner 1.02 - update the miner"),
    # a Vega 20 card (the log's AMD_VEGA20) passed to a VM with gnif's vendor-reset module; the author: Vega 20
    # support is still work in progress and does not reset correctly more than once even on his system
    ("gnif/vendor-reset#5 (Vega 20 card passed through with vfio-pci, 2020)",
     "[  183.658047] vfio-pci 0000:43:00.0: AMD_VEGA20: version 1.0\n"
     "[  183.658052] vfio-pci 0000:43:00.0: AMD_VEGA20: performing pre-reset\n"
     "[  183.658123] vfio-pci 0000:43:00.0: AMD_VEGA20: performing reset\n"
     "[  184.390719] vfio-pci 0000:43:00.0: AMD_VEGA20: psp mode1 reset failed\n"
     "[  184.390723] vfio-pci 0000:43:00.0: AMD_VEGA20: falling back to BACO reset\n"
     "[  184.603368] vfio-pci 0000:43:00.0: SMU error 0x0\n"
     "[  184.603371] vfio-pci 0000:43:00.0: Failed to send message 0x25: return 0x0\n"
     "[  184.603374] vfio-pci 0000:43:00.0: AMD_VEGA20: BACO reset successful\n"
     "[  184.603376] vfio-pci 0000:43:00.0: AMD_VEGA20: performing post-reset\n"
     "[  184.622683] vfio-pci 0000:43:00.0: Refused to change power state, currently in D0\n"
     "[  184.622687] vfio-pci 0000:43:00.0: AMD_VEGA20: reset result = 0",
     "vendor-reset's Vega 20 reset was work in progress (PSP mode1 reset fails, BACO fallback's SMU message fails but "
     "is reported as success); the module's author is fixing it; the card is not reliably reset for VM reuse"),
]
