/* device.cu -- choosing the CUDA device of this process (--device=cuda:N):
 * gh_backend_cuda_new() builds its backend on the current device, so
 * backend.c calls this first. */
#include <cuda_runtime.h>

extern "C" {
#include "backend.h"
#include "base/gh-base.h"
}

extern "C" int gh_cuda_set_device(int device) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) {
    gh_set_error("cudaSetDevice(%d): %s", device, cudaGetErrorString(e));
    cudaGetLastError();
    return -1;
  }
  return 0;
}
