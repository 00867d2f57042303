// Stand-in for librocblas.so: a real x86-64 shared library whose .hip_fatbin section holds a
// real offload bundle with one device code object per --offload-arch, the way the real
// librocblas.so carries the device code of its non-Tensile routines (docs/formats.md §4).
// Function names are prefixed so that nothing mistakes this for rocBLAS's API.
#include "hip_decls.h"

#ifndef MINIROCBLAS_VERSION
#define MINIROCBLAS_VERSION "0.0.0"
#endif

__global__ void minirocblas_sscal_kernel(float *x, float alpha, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] *= alpha;
}

__global__ void minirocblas_daxpy_kernel(double *y, const double *x, double alpha, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();
  if (i < n) y[i] += alpha * x[i];
}

extern "C" int minirocblas_sscal(int n, float alpha, float *x) {
  minirocblas_sscal_kernel<<<dim3((n + 255) / 256), dim3(256)>>>(x, alpha, n);
  return 0;
}

extern "C" int minirocblas_daxpy(int n, double alpha, const double *x, double *y) {
  minirocblas_daxpy_kernel<<<dim3((n + 255) / 256), dim3(256)>>>(y, x, alpha, n);
  return 0;
}

extern "C" const char *minirocblas_version(void) { return MINIROCBLAS_VERSION; }
