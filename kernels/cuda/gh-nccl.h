/* gh-nccl.h -- NCCL for drivers/train/comm.c's device reductions
 * (gh_comm_sum_f64_device), loaded at run time with dlopen (NCCL is not
 * part of the CUDA toolkit; NVIDIA's nvidia-nccl wheel puts libnccl.so.2
 * under python's site-packages nvidia/nccl/lib).  Built with CUDA only
 * (kernels/cuda/nccl.cu); comm.c calls these under GH_HAVE_CUDA. */
#ifndef GH_NCCL_H
#define GH_NCCL_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

#define GH_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) */

/* Loads libnccl.so.2 ($GH_NCCL_LIB: the library or its directory; then
 * the loader's path; then python's site-packages nvidia/nccl/lib) once.
 * Returns 0, or -1 with the reason in gh_last_error(). */
int gh_nccl_load(void);
/* ncclGetUniqueId into id[GH_NCCL_ID_BYTES]; 0 or -1 (gh_last_error). */
int gh_nccl_get_id(void *id);
/* ncclCommInitRank on the calling thread's current CUDA device; returns the
 * communicator (with its own stream and scratch), or NULL (gh_last_error). */
void *gh_nccl_init(int nranks, const void *id, int rank);
/* The deterministic sum of comm.h gh_comm_sum_f64 on dbuf[n] (device
 * doubles): grouped ncclSend/ncclRecv of slice j to rank j, a kernel adds
 * the R parts of this rank's slice in rank order, ncclAllGather of the
 * slices (padded to equal length), copied back into dbuf.  Synchronous.
 * Dies naming the NCCL or CUDA error. */
void gh_nccl_sum_f64(void *comm, double *dbuf, size_t n);
/* comm.h gh_comm_sum_dd_device: the double-double partial sums dhi[n],
 * dlo[n] of every rank added in rank order (lib/base/dd.h
 * gh_dd_add_dd), rounded once, into dout[n] on every rank. */
void gh_nccl_sum_dd(void *comm, const double *dhi, const double *dlo, double *dout, size_t n);
/* ncclCommAbort (the watchdog; safe from another thread). */
void gh_nccl_abort(void *comm);
/* ncclCommDestroy and the scratch. */
void gh_nccl_free(void *comm);

#ifdef __cplusplus
}
#endif
#endif
