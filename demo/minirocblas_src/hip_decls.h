// Just enough of HIP for `clang -x hip -nogpuinc` to emit a kernel and its host launch stub
// without the HIP headers: the <<<>>> syntax needs dim3, hipLaunchKernel and the two
// call-configuration hooks (clang's CodeGen calls them by name). Nothing here ever runs.
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
typedef struct ihipStream_t *hipStream_t;
typedef int hipError_t;
extern "C" hipError_t hipLaunchKernel(const void *f, dim3 grid, dim3 block, void **args,
                                      unsigned long shmem, hipStream_t stream);
extern "C" unsigned __hipPushCallConfiguration(dim3 grid, dim3 block, unsigned long shmem = 0,
                                               hipStream_t stream = 0);
extern "C" hipError_t __hipPopCallConfiguration(dim3 *grid, dim3 *block, unsigned long *shmem,
                                                hipStream_t *stream);
