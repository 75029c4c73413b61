/* device.cu -- choosing the CUDA device of this process (--device=cuda:N):
 * gh_backend_cuda_new() builds its backend on the current device, so
 * backend.c calls this first. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>

extern "C" {
#include "backend.h"
#include "base/gh-base.h"
}

/* cudaGetErrorString, except where the runtime's word misleads: with no
 * NVIDIA driver at all the (static) runtime says "CUDA driver version is
 * insufficient for CUDA runtime version"; then the driver library is looked
 * for and, missing, named.  Returns a static buffer. */
extern "C" const char *gh_cuda_error_text(int err) {
  static char buf[512];
  const cudaError_t e = (cudaError_t)err;
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *why = dlerror();
      snprintf(buf, sizeof buf, "no NVIDIA driver found (libcuda.so.1 not loadable: %s)", why ? why : "not found");
      return buf;
    }
    dlclose(h);
    if (e == cudaErrorInsufficientDriver) {
      snprintf(buf, sizeof buf, "the NVIDIA driver is older than this build's CUDA runtime (%s)", cudaGetErrorString(e));
      return buf;
    }
  }
  return cudaGetErrorString(e);
}

extern "C" int gh_cuda_set_device(int device) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) {
    gh_set_error("cudaSetDevice(%d): %s", device, gh_cuda_error_text(e));
    cudaGetLastError();
    return -1;
  }
  return 0;
}
