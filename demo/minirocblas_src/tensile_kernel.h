// A small GEMM-shaped GPU kernel, instantiated once per Tensile solution name.
//
// minirocblas.py writes a one-line translation unit per code object, e.g.
//   #include "tensile_kernel.h"
//   MINIROCBLAS_KERNEL(Cijk_Alik_Bljk_SB_MT64x64x8_SE_..._WGM8, float, float)
// and compiles it with clang for amdgcn-amd-amdhsa. The function name IS the solution name
// from the .dat file, so the code object's `<name>.kd` kernel descriptor and its metadata
// `.name` are what rocBLAS looks up (docs/formats.md §5.3). Plain C, no headers, no device
// library: `-nogpulib` works because only clang builtins are used.
//
// Protected visibility, as Debian's rocBLAS code objects have it (llvm-readelf --dyn-syms).
#ifndef MINIROCBLAS_TENSILE_KERNEL_H
#define MINIROCBLAS_TENSILE_KERNEL_H

#define MINIROCBLAS_KERNEL(NAME, TI, TC)                                                    \
  __attribute__((amdgpu_kernel, visibility("protected"))) void NAME(                      \
      TC *d, const TC *c, const TI *a, const TI *b, TC alpha, TC beta, unsigned m,         \
      unsigned n, unsigned k, unsigned lda, unsigned ldb, unsigned ldc) {                  \
    unsigned i = __builtin_amdgcn_workgroup_id_x() * 256u + __builtin_amdgcn_workitem_id_x(); \
    unsigned row = i % m, col = i / m;                                                     \
    if (col >= n) return;                                                                  \
    TC acc = 0;                                                                            \
    for (unsigned l = 0; l < k; ++l)                                                       \
      acc += (TC)a[row + l * lda] * (TC)b[l + col * ldb];                                  \
    d[row + col * ldc] = alpha * acc + beta * c[row + col * ldc];                          \
  }

#endif
