/* cuda-pool.h -- a cache of device allocations for model buffers
 * (internal to kernels/cuda/; kernels/cuda/cuda-pool.cu).
 *
 * The resident trainers upload the model and one sub-model per score group
 * at every iteration and free the last iteration's: about 25 buffers a
 * model, each a cudaMalloc, and each cudaFree a synchronisation of the
 * device.  Model buffers come from here instead: a freed buffer is kept
 * and handed out again for a request of its size or up to half of it
 * (best fit), so an iteration whose models have the sizes of the last
 * one's allocates nothing.  At most 256 MB and 1,024
 * buffers are kept; the oldest go back to CUDA first.  One pool per
 * process (one device per process, as the backend); thread-safe.
 * Errors: gh_die on a CUDA failure, as CK. */
#ifndef GH_CUDA_POOL_H
#define GH_CUDA_POOL_H
#include <stddef.h>

/* A device buffer of at least bytes (a kept one or cudaMalloc's). */
void *gh_cuda_pool_alloc(size_t bytes);
/* Gives p (from gh_cuda_pool_alloc, or NULL) back to the pool; the device
 * must be done with it (the caller has synchronised: cudaFree did that
 * implicitly).  A pointer the pool did not hand out is cudaFree'd. */
void gh_cuda_pool_free(void *p);
/* cudaFree of every kept buffer (backend free). */
void gh_cuda_pool_trim(void);

#endif
