/* backend.c -- picking a compute backend (--device=auto|cpu|cuda).
 *
 * The caller asks once, by name; everything after that goes through the
 * gh_backend_ops table (see backend.h).  When the toolkit is built without
 * CUDA (no nvcc: GH_HAVE_CUDA undefined) the CUDA constructor is a stub that
 * returns NULL and gh_cuda_device_count() is 0, so "auto" picks the CPU.
 */
#include "backend.h"
#include "gh-base.h"

#include <string.h>

gh_backend *gh_backend_create(const char *device) {
  if (!device || !*device) device = "auto";
  gh_backend *b = NULL;
  if (!strcmp(device, "cpu")) {
    b = gh_backend_cpu_new();
  } else if (!strcmp(device, "cuda")) {
    if (gh_cuda_device_count() <= 0)
      gh_die("--device=cuda: no usable CUDA device (%s)",
             *gh_last_error() ? gh_last_error() : "built without CUDA or no GPU present");
    b = gh_backend_cuda_new();
    if (!b) gh_die("--device=cuda: cannot start the CUDA backend: %s", gh_last_error());
  } else if (!strcmp(device, "auto")) {
    if (gh_cuda_device_count() > 0) b = gh_backend_cuda_new();
    if (!b) b = gh_backend_cpu_new();
  } else {
    gh_die("unknown --device=%s (expected auto, cpu or cuda)", device);
  }
  if (!b) gh_die("cannot create the %s backend: %s", device, gh_last_error());
  gh_log("using device %s", b->device_name);
  return b;
}

void gh_backend_free(gh_backend *b) {
  if (b) b->ops->free(b);
}

#ifndef GH_HAVE_CUDA
gh_backend *gh_backend_cuda_new(void) {
  gh_set_error("this build of gmmhmm has no CUDA support (nvcc was not found at build time)");
  return NULL;
}
int gh_cuda_device_count(void) {
  gh_set_error("this build of gmmhmm has no CUDA support");
  return 0;
}
#endif
