"""Set L (draft): held-out texts for `rocmrevive explain` (issue 38), gathered on 2026-12-07 by an independent
gatherer (branch gather-l) who saw none of the catalogue: no text was run through `rocmrevive explain` or its
functions, rocmrevive/data/messages.toml and rocmrevive/diagnose/ were not read, and the catalogue was not grepped
for these texts' messages. `want` is NOT set here: each entry carries the thread's cause and action in words, to be
turned into `want` by someone reading the catalogue afterwards (as set K's want-k branch did).

How: the `search` tool, corpora 'issues' and 'pages' (pages again gave no owner text), queries no earlier set used
(checked against the query lists of sets A-K in tests/explain_heldout.py), widened to words and places sets A-K did
not try: 'Instinct MI50 16GB', 'Vega20', 'AMD Instinct MI60', 'Radeon Pro VII', InvokeAI, DeepSpeed, OpenMM, TVM,
MIGraphX/onnxruntime, immich, Krita, Proxmox LXC, OBS/AMF, miners' Linux trackers, Julia (AMDGPU.jl,
KernelAbstractions.jl), LLVM OpenMP offload (llvm-project, aomp), ROCgdb, Kokkos CI, forum pages. Kept: threads whose
poster runs a gfx906 card (the thread names Radeon VII / Radeon Pro VII / MI50 / MI60 / Vega 20, or the runtime's own
output names gfx906 as the device), with an error/warning text as printed (no paraphrase, no screenshot), not in the
repo (grep -rF of a distinctive substring in tests/: none found) and not a thread sets A-K used or left out; a paste
keeps its lines, trimmed to those around the failure (lines left out of the middle of a long trace are noted in the
cause); a near-copy (another text differing only in a number, path or product name) left out. Texts were taken as
the results gave them, no kind of message preferred or avoided. Windows owners are marked 'Windows' in the label.

Ten texts after 97 issue queries and 5 page queries: the issues corpus's gfx906 threads with an error text are
almost all used by sets A-K (most results of every query were threads already used or left out, or other GPUs).

"""
from __future__ import annotations

# Queries, in the order run (Q = issues, P = pages), with what each gave and the threads left out there:
#   Q1 issues "Instinct MI50 16GB error rocm" -> 0 (legacy#1062,#1552,#4017,lmstudio#352,amdgpu#157,#1886 used)
#   Q2 issues "Vega20 gfx906 crash HIP error" -> 0 (other GPUs; legacy#1399 card not named)
#   Q3 issues "AMD Instinct MI60 error log failed" -> 0 (rocm_sdk_builder#180 used; other GPUs)
#   Q4 issues "Radeon VII 16GB rocm crash output" -> 0 (justxi#72: Lucretia's card is a gfx701 Hawaii; legacy#2908 labelled Radeon VII but a Vega 64 display crash; tf-upstream#1388, rocm_sdk_builder#175, gpuowl#63 used)
#   Q5 issues "justxi rocm My machine status Lucretia Radeon VII clinfo segfault libhsa-runtime64" -> 0 (gfx701; justxi#89 same poster)
#   Q6 issues "HIP example errors dshm gfx906 no-retry page fault python" -> 0 (legacy#1399: card not named)
#   Q7 issues "gfx906:sramecc+:xnack- llama-server error abort" -> 0 (no owner text)
#   Q8 issues "MI50 32GB vllm tensor parallel error Traceback" -> 0 (other GPUs)
#   Q9 issues "Radeon Pro VII pytorch rocm RuntimeError" -> 1 (legacy#2156); legacy#2235, A1111#13131, rocm_sdk_builder#175 used
#   Q10 issues "Problems with Radeon VII in certain PCIe slot tensor with all NaNs chipset x4 resolution" -> 0 more (legacy#2055: xuhuisheng's MI50 comment prose only)
#   Q11 issues "nadvornik Radeon VII second PCIe slot chipset PCIe atomics NaN pytorch closed" -> 0 more (legacy#2314: prose)
#   Q12 issues "Radeon VII InvokeAI ROCm HIP error" -> 0 (other GPUs; legacy#4358 used)
#   Q13 issues "MI50 deepspeed rocm gfx906 error build" -> 0 (other GPUs)
#   Q14 issues "gfx906 openmm HIP platform error MI50" -> 0 (other GPUs; openmm#2736 a developer's PR comment, card not named in it)
#   Q15 issues "Vega 20 Radeon VII rocm_smi error fan pp_table" -> 0 (ROC-smi#65, #55 used; ROC-smi#68 no error text; others other GPUs)
#   Q16 issues "MI50 ollama docker rocm error msg=\"llama runner\" gfx906" -> 0 (ollama-for-amd#79, btbtyler09#2 used; other GPUs)
#   Q17 issues "Radeon VII Blender HIP kernel compile error hiprt gfx906" -> 0 (gentoo#27552, rocm-arch#583, hip#3353 used/left out; other GPUs)
#   P1 pages "MI50 32GB llama.cpp ROCm error reddit" -> 0 (ai-manual.ru MI50 article = set G's; others other GPUs)
#   P2 pages "Radeon VII ROCm forum error output phoronix" -> 0 (wikis, articles about other GPUs)
#   Q18 issues "MI60 gfx906 koboldcpp error hipblas" -> 0 (rocm_sdk_builder#180 used; other GPUs)
#   Q19 issues "TheRock gfx906 MI50 build failure error" -> 0 (TheRock#1844, rocm_sdk_builder#180 used; other GPUs)
#   Q20 issues "rocm-libraries gfx906 Radeon VII test failure" -> 0 (rocFFT#369, legacy#843 used; Device-Libs#86/#109, hip#3292 other GPUs/left out)
#   Q21 issues "jax rocm MI50 gfx906 XlaRuntimeError" -> 0 (jax#27600, rocm-jax#360 left out by I; others other GPUs)
#   Q22 issues "xuhuisheng rocm-build gfx906 error MI50" -> 0 (MIOpen#101, rocm_sdk_builder#180, lmstudio#352, beellama#55, AlphaMine#5 used)
#   Q23 issues "Radeon VII llama.cpp hipBLAS GGML_ASSERT crash" -> 0 (llama.cpp#5712, #12878, #24824 used; other GPUs)
#   Q24 issues "ComfyUI Radeon VII MIOpen error" -> 0 (other GPUs)
#   Q25 issues "Radeon Instinct MI50 tensorflow-rocm error" -> 0 (composable_kernel#1140, legacy#1552, #3999 used; other GPUs)
#   Q26 issues "gfx906 MIGraphX onnxruntime error Radeon VII" -> 0 (other GPUs)
#   Q27 issues "tvm rocm gfx906 error LLVM" -> 0 (tvm#13544: gfx906 target, card not named; tvm#3058 card not named)
#   Q28 issues "ghostplant TVM for ROCm 2.x is currently not working gfx906 Radeon" -> 0 (legacy#6138 left out by J; guinmoon#2 used)
#   Q29 issues "immich machine learning rocm MI50 gfx906 error" -> 0 (other GPUs)
#   Q30 issues "Krita AI diffusion Radeon VII ROCm error" -> 0 (other GPUs)
#   Q31 issues "Proxmox LXC MI50 rocm container error /dev/kfd gfx906" -> 0 (nlzy#47 used; other GPUs)
#   Q32 issues "\"gfx906\" is not supported error message architecture" -> 0 (tinygrad#7704 = set H's text; legacy#6138, AlphaMine#5 used; other GPUs)
#   Q33 issues "Radeon VII windows HIP SDK error amdhip64 gfx906" -> 0 (TheRock#1300, legacy#3133 (gfx90c), llama.cpp#5712, ollama#4780, guinmoon#2 used)
#   Q34 issues "MI50 stable-diffusion.cpp hipblas error" -> 0 (other GPUs)
#   P3 pages "servethehome forum MI50 ROCm error" -> 0 (articles about other GPUs)
#   P4 pages "stackoverflow Radeon VII tensorflow rocm error" -> 0
#   P5 pages "discourse nixos MI50 rocm error" -> 0 (a NixOS build thread, no gfx906 owner)
#   Q35 issues "Vega 20 amdgpu BACO reset failed dmesg compute hang" -> 0 (vendor-reset#5 = set K's; other GPUs)
#   Q36 issues "Radeon Pro VII OpenCL error clinfo ROCm" -> 1 (legacy#1091); legacy#843, #778, #745, #1082, radeon_gpu_profiler#22, futhark#731 used/left out; legacy#1063, #1040 card not named (1063's commenter a Vega Mobile)
#   Q37 issues "MI60 pytorch training NaN loss gfx906 rocm" -> 0 (pytorch#103973 used; pytorch#110532 card not named; other GPUs)
#   Q38 issues "robinchrist rocminfo works but clinfo does not clGetDeviceIDs(-1) Radeon VII" -> 1 (teamredminer#57)
#   Q39 issues "teamredminer Failed to initialize device idx 0 (-30) Radeon VII amdgpu-pro 19.10 PAL resolution" -> 0 more (teamredminer#391 left out by K; #403 a Vega 56; #38 Vega 64)
#   Q40 issues "Radeon VII xmr-stak OR SRBMiner OR nbminer error linux ROCm" -> 1 (SRBMiner-Multi#42 via next query; xmr-stak#2523 left out by K; SRBMiner#133 excerpt cut before the failure; others other GPUs)
#   Q41 issues "MI50 hipMemcpy peer to peer error two GPUs HIP samples" -> 0 (MI100 / developers' PRs)
#   Q42 issues "Radeon VII Mesa rusticl clover OpenCL error Vega 20" -> 0 (nixpkgs#128078 left out by K; radeon_gpu_profiler#22, legacy#843 used; fah-client-bastet#239 screenshots only)
#   Q43 issues "SRBMiner-Multi Radeon VII Ubuntu 20.04 No worker devices found gfx906 AMDGPU 21.50" -> 1 (SRBMiner-Multi#42: Vega 56 + Radeon VII); nanominer#178 used
#   Q44 issues "blackmennewstyle SRBMiner cryptonight_gpu Radeon VII No worker devices found doktor83 answer" -> 0 more (#133 still cut)
#   Q45 issues "llama-cpp-python hipblas MI50 gfx906 build error" -> 0 (other GPUs; beellama#55 used)
#   Q46 issues "PRPLL gpuowl Radeon VII ROCm 6 error exception" -> 0 (gpuowl#63, #109 used, #178 near-copy left out by K; legacy#873 left out by K; gpuowl#268 timings only)
#   Q47 issues "gfx906 causal-conv1d mamba apex build hip error MI50" -> 0 (dphnAI/sonar#1291 found: excerpt cut before the failure; others used or other GPUs)
#   Q48 issues "aphrodite-engine Install v0.6.6 on amd gpu gfx906 error failed build gengchaogit" -> 0 (sonar#1291 and #774 cut before the failure)
#   Q49 issues "Said-Akbar AMD MI60 gfx906 installation errors ROCm 6.1 6.2 aphrodite error: compiling failed" -> 0
#   Q50 issues "sonar aphrodite gfx906 HIP object build error cache_kernels.hip error generated when compiling for gfx906" -> 0 (sonar#774 excerpt shows only warnings)
#   Q51 issues "omniperf rocprofiler-compute gfx906 MI50 error not supported" -> 0 (rocprofiler-compute#51: MI50 question, no error text; others other GPUs)
#   Q52 issues "Radeon VII Fedora rocm hip error gfx906 package" -> 1 (legacy#3035); legacy#754 prose, rocm-arch#583, guinmoon#2, legacy#6138 used/left out
#   Q53 issues "MI50 ollama Vulkan backend error gfx906 vk" -> 0 (ollama#12600: no error text in the excerpt; ollama#12915, rocm_sdk_builder#180, AlphaMine#5 used)
#   Q54 issues "hipfc not found, but that is OK rocm 6.1 install warning fixed" -> 0 more (legacy#5037: card not named)
#   Q55 issues "MI50 amdgpu IO_PAGE_FAULT AMD-Vi IOMMU rocm hang iommu=pt" -> 0 (amdgpu#157, legacy#1552 used; other GPUs)
#   Q56 issues "Radeon VII modprobe amdgpu Key was rejected by service secure boot rocm dkms" -> 0 (legacy#2948: Radeon VII, prose only; legacy#1850: MI50, its text 'ROCk module is NOT loaded, possibly no GPU devices' is in the repo's tests; legacy#774, #815 used/left out)
#   Q57 issues "MI50 not enough PCI address space BAR resize above 4G decoding amdgpu" -> 0 (other GPUs)
#   (legacy#1091 re-checked: both its lines are in the repo already: 'Number of platforms 0' in test_explain_apps.py, 'ERROR: clGetPlatformIDs(-1001)' in set K -> left out)
#   Q58 issues "Radeon VII OBS AMF encoder error Vega 20 VCE" -> 1 (obs-amd-encoder#393, Windows); #371 prose only; others other GPUs
#   Q59 issues "Radeon VII Windows Adrenalin driver timeout crash compute error log" -> 0 (wildrig-multi#278 and teamredminer#391 left out by K; other GPUs)
#   Q60 issues "MI50 Radeon VII onnxruntime ROCMExecutionProvider error" -> 0 (other GPUs or card not named)
#   Q61 issues "AMF Speed test errors out on AMD Radeon VII Xaymar invalid" -> 0 more (obs#393's answer read; amdmemorytweak#57 left out by K)
#   Q62 issues "Radeon VII ffmpeg vaapi h264 encode error vega20 mesa" -> 0 (other GPUs)
#   Q63 issues "Radeon VII Vulkan game crash VK_ERROR_DEVICE_LOST dxvk Vega 20 log" -> 0 (other GPUs)
#   Q64 issues "MI50 32GB MI60 llama.cpp rpc server error gfx906" -> 0 (iacopPBK#15, rocm_sdk_builder#180, lmstudio#352 used/left out)
#   Q65 issues "Radeon VII rocm 6 pytorch hipblaslt warning Attempting to use hipBLASLt gfx906 torch.compile inductor error" -> 0 (pytorch#103973 used; other GPUs)
#   Q66 issues "gfx906 faiss OR cupy OR numba rocm error MI50 Radeon VII hip" -> 0 (numba#6196: Vega 20, log cut before the error; cupy#4216 = K's; cupy#4868, #4877, #5961 left out by K)
#   Q67 issues "Radeon VII Luxmark OR Blender OpenCL kernel compilation failed Linux amdgpu-pro Vega 20" -> 0 (LuxCore#458 left out by K; BlendLuxCore#579 prose; nixpkgs#128078 left out by K; other GPUs)
#   Q68 issues "MI50 gpu passthrough ESXi Proxmox rocminfo hsa error guest Vega 20 MxGPU" -> 0 (legacy#4017 left out; legacy#1752 a Vega FE; amdgpu#76 a WX 8100)
#   Q69 issues "Radeon VII rocm 3.x HIP program hangs hipDeviceSynchronize error output Vega 20 Ubuntu" -> 1 (legacy#4670, Radeon Pro VII); hip#2266's MI50 comment prose only
#   Q70 issues "hipEventSynchronize hipErrorCapturedEvent operation not permitted on an event last recorded in a capturing stream Radeon Pro VII fixed ROCm" -> 0 more (clr#157: the same poster's follow-up, read for the cause)
#   Q71 issues "Radeon Pro VII kokkos HIP error CI ROCm 6 test failure" -> 0 (clr#41 = set I's text; kokkos#6968 left out by K; others MI100/MI210)
#   Q72 issues "Radeon Pro VII ROCm 6.3 error aborting with error HIP runtime" -> 1 (KernelAbstractions.jl#261, 2x Radeon VII); legacy#2153 used
#   Q73 issues "MI50 trilinos OR petsc OR ginkgo OR amrex HIP gfx906 test failure error" -> 0 (MI100/MI210/MI250X)
#   Q74 issues "Cvikli ROCKernels run doesn't work Radeon VII free(): invalid pointer hipStreamSynchronize AMDGPU.jl resolution" -> 1 (AMDGPU.jl#68, same owner, another text); AMDGPU.jl#216 a Steam Deck
#   Q75 issues "Stress_printf_ComplexKernelMultStream failed on Radeon VII littlewu2508 cjatin answer" -> 0 (clr#41 used; wildrig#278 left out by K)
#   Q76 issues "AMDGPU.jl InexactError trunc(UInt16, 1048576) KernelDispatchPacket groupsize Radeon VII Cvikli jpsamaroo" -> 0 more (no answer in the excerpt)
#   Q77 issues "KernelAbstractions ROCKernels Radeon VII free(): invalid pointer answer fixed AMDGPU version" -> 0 more (legacy#1478 left out by K)
#   Q78 issues "Vega 20 julia AMDGPU error ROCArray HSA Radeon VII MI50 exception" -> 0 more (AMDGPU.jl#371, #239, #303 other GPUs)
#   Q79 issues "MI50 chipStar OR hipSYCL OR oneAPI plugin HIP gfx906 error" -> 0 (AdaptiveCpp#201: the Radeon VII run passed; intel/llvm#8158 an MI100; others other GPUs)
#   Q80 issues "Radeon VII OpenMP offload amdgcn gfx906 error libomptarget" -> 0 kept directly (llvm#51450: gfx906 target, see near-copy below; aomp#91: -march=gfx906 but the card not named; aomp#49 a gfx900)
#   Q81 issues "OpenMP offload reduction on complex type on AMD GPU ye-luo fixed amdgcn gfx906 complex_reduction" -> 1 (llvm-project#52706, MI50); llvm#51450 near-copy of #52706's text (same two lines, other address/node); llvm#62532 wrong value, no error text; others nvptx/gfx90a
#   Q82 issues "aomp Libomptarget fatal error 1: default offloading policy must be switched to mandatory or disabled vmulsum zjin-lcf answer" -> 1 (llvm-project#60221, Env gfx906:sramecc+:xnack-); aomp#91 card not named
#   Q83 issues "ye-luo MI50 OR Radeon VII openmp offload gfx906 error llvm AMDGPU" -> 0 (CodeXL#246 left out by K; others other GPUs)
#   Q84 issues "jdenny offloading to a gfx906 error libomptarget AMDGPU plugin" -> 0 more (llvm#60221 again; aomp#49 a gfx900)
#   Q85 issues "llvm AMDGPU backend crash gfx906 LLVM ERROR Cannot select Radeon VII MI50 clang" -> 0 (other GPUs or no card)
#   Q86 issues "QMCPACK OR miniqmc gfx906 MI50 HIP error rocm test" -> 0 (PRs, MI60/MI50 named only as test systems, no error text)
#   Q87 issues "Radeon VII rocm-gdb OR rocgdb error gfx906 debug agent" -> 1 (ROCgdb#11, Radeon VII); CodeXL#246 left out by K; others other GPUs
#   Q88 issues "Rocgdb Could not attach to process rc=-2 Radeon VII drtpotter t-tye log-level kernel dkms resolution" -> 0 more (ROCgdb#6 read for the cause; ROCgdb#3 card not named; rocm-arch#269 left out by K)
#   Q89 issues "aomp gfx906 Radeon VII error offload failure" -> 0 (ollama#4780, lmstudio#352, gpuowl#63 used; aomp#49 a gfx900)
#   Q90 issues "llvm-project AMDGPU gfx906 MI50 miscompile crash backend error report" -> 0 (gfx90a/MI250 or no card)
#   Q91 issues "comgr gfx906 error compile Radeon VII ROCm-CompilerSupport" -> 0 (ROCm-OpenCL-Driver#80 card unknown; others used or other GPUs)
#   Q92 issues "Radeon VII amdgpu powerplay Failed to dmesg vega20_hwmgr error" -> 0 (gpu-utils#8 = set K's; legacy#1038 left out by J; others other GPUs)
#   Q93 issues "MI50 rocm-smi setpoweroverdrive OR setperfdeterminism unable to set error gfx906" -> 0 (rocm_smi_lib#153 used; ROC-smi#66: KeyError 'power1_cap', the card not named in that thread (its poster's ROC-smi#65 is a Radeon VII); others other GPUs)
#   Q94 issues "DaVinci Resolve Radeon VII Linux GPU error OpenCL ROCm unsupported GPU processing mode" -> 0 (legacy#6138 left out by J; legacy#768 card not named; others other GPUs)
#   Q95 issues "taichi OR arrayfire OR vkfft Radeon VII gfx906 error" -> 0 (VkFFT#13: Radeon VII benchmarks, no error; others other GPUs)
#   Q96 issues "mxnet OR paddle OR chainer rocm gfx906 MI50 error" -> 0 (legacy#1572: the poster's Radeon VII works, the error is his Vega 56's; others used or other GPUs)
#   Q97 issues "rocRAND hipRAND rocThrust Radeon VII error test crash" -> 0 (rocFFT#369, tf-upstream#1388 used; others MI25/Carrizo/CI)
#
# Kept (10): legacy-rocm-build#2156, SRBMiner-Multi#42, legacy-rocm-build#3035, obs-amd-encoder#393 (Windows),
# legacy-rocm-build#4670, KernelAbstractions.jl#261, AMDGPU.jl#68, llvm-project#52706, llvm-project#60221, ROCgdb#11.
# Left out, grouped:
# - in the repo already: legacy-rocm-build#1850 (its only text 'ROCk module is NOT loaded, possibly no GPU devices' is in
#   tests/test_explain_catalogue.py), legacy-rocm-build#1091 ('Number of platforms 0' is in tests/test_explain_apps.py and
#   'ERROR: clGetPlatformIDs(-1001)' is set K's legacy#778 text), tinygrad#7704 (set H), clr#41 (set I);
# - near-copies: teamredminer#57 ('Failed to initialize device idx 0 (-30)', differs from set K's teamredminer#384 only in
#   the number), llvm-project#51450 (same two lines as llvm-project#52706, other address and node);
# - threads sets A-K used or left out: legacy#1062, #1552, #4017, #1886, #843, #2235, #815, #774, #745, #1082, #1478, #873,
#   #6138, #3133, #2153, #754; lmstudio-bug-tracker#352; amdgpu#157; rocm_sdk_builder#180 and #175; tensorflow-upstream#1388
#   and #449; gpuowl#63, #109, #178; A1111#13131; pytorch#103973; ollama-for-amd#79; btbtyler09#2; ROC-smi#55, #65;
#   jax#27600; rocm-jax#360; TheRock#1844, #1300; guinmoon#2; beellama#55; AlphaMine#5; llama.cpp#5712, #12878, #24824;
#   iacopPBK#15; ollama#4780, #12915; nlzy#47; rocm-arch#583, #269; gentoo#27552; hip#3353; composable_kernel#1140;
#   MIOpen#101; nanominer#178; xmr-stak#2523; wildrig-multi#278; teamredminer#391; nixpkgs#128078; LuxCore#458;
#   amdmemorytweak#57; radeon_gpu_profiler#22; futhark#731; CodeXL#246; cupy#4216, #4868, #4877, #5961; kokkos#6968;
#   vendor-reset#5; rocFFT#369;
# - excerpt cut before the failure or log only attached: SRBMiner-Multi#133, dphnAI/sonar#1291 and #774 (aphrodite-engine
#   builds on gfx906/MI60), numba#6196;
# - no error text (prose, timings, questions, wrong values only): legacy#2055 (xuhuisheng's MI50 comment), legacy#2314,
#   legacy#2948, ROC-smi#68, ollama#12600, rocprofiler-compute#51, hip#2266 (an MI50 'same problem' comment),
#   obs-amd-encoder#371, BlendLuxCore#579, gpuowl#268, llvm-project#62532, VkFFT#13, fah-client-bastet#239 (screenshots);
# - the error is another card's: legacy#1572 (the poster's Radeon VII works; the MIOpen error is his Vega 56's);
# - the card not named (or not gfx906): justxi/rocm#72 and #89 (a gfx701), legacy#2908 (a Vega 64 under a Radeon VII
#   label), legacy#1399, legacy#1063, legacy#1040, legacy#5037, tvm#3058, tvm#13544 (gfx906 target, card not named),
#   openmm#2736 (a developer's PR comment), aomp#91 (builds for gfx906, card not named), ROCgdb#3, pytorch#110532,
#   ROC-smi#66 (card not named there; its poster's ROC-smi#65 is a Radeon VII), legacy#768, ROCm-OpenCL-Driver#80;
# - other GPUs: most results of every query.
# (label, text as posted, the thread's cause and action in words)
HELDOUT_L_DRAFT = [('ROCm/legacy-rocm-build#2156 (Radeon VII in the chipset-attached x4 slot of an X570 board, ROCm 5.4/5.5, torch 2.0.1+rocm5.4.2, openSUSE Leap '
  '15.4)',
  'A tensor with all NaNs was produced in Unet',
  'partly settled by the poster: the same card and software work in the CPU-attached x16 slot and fail (tensors read back as NaN) in the x4 slot '
  "behind the X570 chipset; the poster links legacy-rocm-build#2055 (the PyTorch 2 / ROCm >= 5.3 'data turns to NaN on upload' reports that the "
  'maintainers in pytorch#103973 tie to missing PCIe atomics). Action: put the card in a CPU-attached slot (one that passes PCIe atomics), or use a '
  'torch build for ROCm 5.2; no maintainer answer in what the corpus shows'),
 ('doktor83/SRBMiner-Multi#42 (Radeon VII beside an RX Vega 56, Ubuntu 20.04.2, amdgpu-pro 20.50, SRBMiner-MULTI 0.7.5)',
  'Detecting OpenCL devices...\n'
  '\n'
  'GPU0 : vega_10_xl/xt__radeon_rx_vega_56/64_  [gfx900       ][MEM:  8176 MB][CU: 64][BUS: 03]\n'
  'GPU1 : vega_20__radeon_vii_                  [gfx906       ][MEM: 16368 MB][CU: 60][BUS: 06]\n'
  '\n'
  'Algorithm/s         : autolykos2 [2.00% fee]\n'
  'Gpu mining          : enabled\n'
  'Cpu mining          : disabled\n'
  'Gpu tweaking        : enabled\n'
  'Gpu watchdog        : enabled\n'
  '\n'
  "[2021-05-18 14:15:53] If you experience crashes on 'autolykos2' algorithm, try using 1 thread per GPU ( --gpu-intensity 0 )\n"
  '[2021-05-18 14:15:55] No worker devices found',
  "(the miner's key-help banner between the device list and the settings is left out) unsettled: the miner's developer only asked 'installed driver "
  "with pal, legacy ?' (i.e. amdgpu-pro installed with --opencl=pal,legacy, the OpenCL the miner's precompiled kernels need) and the poster did not "
  'answer; an application message (the miner built no worker for either card)'),
 ('ROCm/legacy-rocm-build#3035 (Radeon VII, Ubuntu 20.04.6, apt install of rocm-hip-sdk6.1.0)',
  'Setting up rocm-hip-sdk6.1.0 (6.1.0.60100-82~20.04) ...\n/opt/rocm-6.1.0//hipfc not found, but that is OK',
  'harmless: a post-install script of the ROCm 6.1 packages looks for hipfc at the wrong path (it is installed at /opt/rocm-6.1.0/bin/hipfc) and '
  "says itself that this is OK; nothing to do (closed; legacy-rocm-build#5037 reports the same 'not found, but that is OK' lines again with 6.4.1)"),
 ('obsproject/obs-amd-encoder#393 (Radeon VII, Windows, AMF Speed Test of the OBS AMD encoder plugin)',
  'DX11 : Chosen Device 0: Device ID: 66AF [AMD Radeon VII]\n'
  'InitDX11() created HW DX11.1 device\n'
  'InitDX11() created HW DX11 device\n'
  'Start: 1 threads\n'
  '2019-12-19 00:22:30.610     2444 [AMFDeviceDX11Impl]   Error: ..\\..\\..\\..\\..\\runtime\\src\\core\\DeviceDX11KernelImpl.cpp(354):COM failed, '
  'HR = 80070057:CreateShaderResourceView() failed\n'
  '\n'
  '2019-12-19 00:22:30.610     2444 [BltRGBto420Compute]   Error: '
  '..\\..\\..\\..\\..\\runtime\\src\\components\\VideoConverter\\Kernels\\BltRGBto420Compute.cpp(84):AMF_ERROR 18 : AMF_DIRECTX_FAILED: '
  'm_pKernelRGB_NV12->SetArgPlane(index++, pSrcSurface->GetPlane(AMF_PLANE_PACKED), AMF_ARGUMENT_ACCESS_READ)\n'
  '\n'
  '2019-12-19 00:22:30.610     2444 [Blt]   Error: ..\\..\\..\\..\\..\\runtime\\src\\components\\VideoConverter\\Kernels\\Blt.cpp(103):AMF_ERROR 18 '
  ': AMF_DIRECTX_FAILED: err',
  "(the log's next, cut-off VideoConverterImpl line is left out) Windows; closed as invalid: the maintainer says the AMF Speed Test tool is "
  "unsupported and abandoned (it does not reflect real-world encoding); action: don't use the speed test, use the AMF encoder in OBS itself (a "
  'Windows AMF/DirectX tool message, nothing ROCm)'),
 ('ROCm/legacy-rocm-build#4670 (Radeon Pro VII, ROCm 6.4, Ubuntu 24.04, Kokkos HIP backend in CI)',
  "terminate called after throwing an instance of 'std::runtime_error'\n"
  '  what():  hip_instance->hip_event_synchronize_wrapper( HIPInternal::constantMemReusable[hip_device]) error( hipErrorCapturedEvent): operation '
  'not permitted on an event last recorded in a capturing stream /opt/kokkos/include/HIP/Kokkos_HIP_KernelLaunch.hpp:525\n'
  'Aborted (core dumped)',
  'settled in the thread and its follow-up ROCm/clr#157 (same poster): the application (Kokkos) calls hipEventSynchronize on an event recorded in a '
  'stream that has been destroyed meanwhile, which is illegal; HIP then fails only sporadically and with a misleading capture-related code '
  '(hipErrorCapturedEvent) although no graph capture is used. Action: keep the stream alive until its events are synchronized (fix on the Kokkos '
  'side, kokkos#8006); not a gfx906 or driver problem'),
 ('JuliaGPU/KernelAbstractions.jl#261 (2x Radeon VII, AMDGPU.jl 0.2.9, Julia 1.8-DEV, /opt/rocm HIP)',
  'free(): invalid pointer\n'
  '\n'
  'signal (6): Aborted\n'
  'in expression starting at /home/user/................../test.tmp.jl:18\n'
  'gsignal at /lib/x86_64-linux-gnu/libc.so.6 (unknown line)\n'
  'abort at /lib/x86_64-linux-gnu/libc.so.6 (unknown line)\n'
  'hipStreamSynchronize at /opt/rocm/lib/libamdhip64.so (unknown line)\n'
  'macro expansion at /home/user/.julia/packages/AMDGPU/Z6Am7/src/hip/error.jl:149 [inlined]\n'
  'hipStreamSynchronize at /home/user/.julia/packages/AMDGPU/Z6Am7/src/hip/libhip.jl:2\n'
  'wait! at /home/user/.julia/packages/AMDGPU/Z6Am7/src/sync.jl:19',
  "(seven 'unknown function (ip: ...)' frames between abort and hipStreamSynchronize are left out) unsettled (issue open, no answer shown): glibc "
  "aborts on a bad free() inside libamdhip64's hipStreamSynchronize called from AMDGPU.jl; the same abort in AMDGPU.jl#216 (a Steam Deck) is also "
  'unanswered. Likely an AMDGPU.jl / system-ROCm version mismatch, not confirmed'),
 ('JuliaGPU/AMDGPU.jl#68 (Radeon VII among several GPUs, AMDGPU.jl, February 2021)',
  'julia> wait(@roc groupsize=N vadd!(c_d, a_d, b_d))\n'
  'ERROR: InexactError: trunc(UInt16, 1048576)\n'
  'Stacktrace:\n'
  '  [1] throw_inexacterror(f::Symbol, #unused#::Type{UInt16}, val::UInt32)\n'
  '    @ Core ./boot.jl:602\n'
  '  [2] checked_trunc_uint\n'
  '    @ ./boot.jl:632 [inlined]\n'
  '  [6] KernelDispatchPacket\n'
  '    @ ~/.julia/packages/AMDGPU/XxCm7/src/hsa/libhsa_types.jl:112 [inlined]',
  '(stack frames [3]-[5], toUInt16/UInt16/convert, are left out) no answer in what the corpus shows; the text itself: groupsize=N with N=1048576 '
  "does not fit the 16-bit work-group size field of the HSA kernel dispatch packet (gfx906's work-group limit is 1024) - a user error in the launch: "
  'pass the total as gridsize and a groupsize <= 1024'),
 ("llvm/llvm-project#52706 (MI50, 'a different machine with MI50', clang OpenMP offload -march=gfx906, complex reduction)",
  '[GPU Memory Error] Addr: 0x7f0613e00000 Reason: Page not present or supervisor privilege. \n'
  'Memory access fault by GPU node-2 (Agent handle: 0x1b883b0) on address 0x7f0613e00000. Reason: Page not present or supervisor privilege.',
  "settled as a compiler bug: the OpenMP target complex reduction is miscompiled for amdgcn (the LLVM maintainer suspects the AMDGPU backend's "
  'handling of allocas promoted to pointer vectors; later LLVM main builds work, a manual unroll hides it); closed. Action: a newer LLVM/ROCm clang, '
  'not a driver/hardware fault'),
 ('llvm/llvm-project#60221 (gfx906:sramecc+:xnack- device, clang OpenMP offload, OMP_TARGET_OFFLOAD=mandatory)',
  'Target AMDGPU RTL --> Incompatible: Processor mismatch \t[Image: gfx90a]\t:\t[Env: gfx906:sramecc+:xnack-]\n'
  'Libomptarget --> Image 0x0000561fe7b34ce0 is NOT compatible with RTL !',
  'settled by the poster: the offload code was compiled for another architecture (gfx90a) than the card it runs on (gfx906); action: rebuild with '
  '--offload-arch=gfx906 (the thread led to a clearer libomptarget error, D142369)'),
 ('ROCm/ROCgdb#11 (Radeon VII, ROCm 5.0 and 5.1, openSUSE Tumbleweed, rocgdb on an OpenCL program)',
  'Starting program: \nmat_mult_badmem_gdb.exe \nCould not attach to process 107215 (rc=-2)',
  "unsettled in what the corpus shows (the maintainer asked for a 'set debug amdgpu log-level verbose' log); in ROCm/ROCgdb#6 the maintainers say "
  'rocgdb then needed the KFD debug ioctls that only the ROCm (ROCK / amdgpu-dkms) kernel driver had, and Tumbleweed runs an upstream kernel - a '
  'plausible cause, not confirmed here')]
