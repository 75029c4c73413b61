/* comm.h -- the communicator of the distributed trainers (gmm-train,
 * doc/scaling.md): R ranks, one per GPU (or per CPU socket), each with its
 * shard of the data (drivers/train/shard.h), that end every EM iteration with
 * the same model bytes.  One verb set hides how the ranks talk:
 *   "none"  a plain single process (R = 1): never calls MPI_Init and needs
 *           no MPI library at run time; every collective is the identity;
 *   "mpi"   MPI (Open MPI: `mpirun -np R`, or `srun --mpi=pmix|pmi2` under
 *           Slurm); reductions of host double buffers;
 *   "nccl"  MPI for the bootstrap and the host collectives, NCCL (loaded at
 *           run time with dlopen, as cuBLAS is) for reductions of device
 *           buffers (gh_comm_sum_f64_device), after gh_comm_nccl_start.
 * "auto" picks "mpi" when the process was started by a launcher (the
 * environment names a world: OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK,
 * or SLURM_NTASKS inside an srun step, SLURM_STEP_ID), else "none"; the
 * trainer asks for NCCL on top with gh_comm_nccl_start when its backend is
 * CUDA and libnccl loads.
 *
 * Determinism: gh_comm_sum_f64 is a sum whose order is ours, not
 * the library's (MPI and NCCL choose theirs by algorithm, message size,
 * rank count and version): the buffer is cut into R contiguous slices,
 * rank r owns slice r, receives every rank's part of it (all-to-all), adds
 * the parts in rank order 0..R-1 in double, and the slices are gathered
 * back, so every rank ends with the same bytes.
 *
 * Failure: in "mpi"/"nccl" mode gh_die is routed through
 * gh_set_die_hook: the failing rank prints its one ERROR line followed by
 * "[rank R of N on host H, <context>]" (gh_comm_set_context: the shard) and
 * calls MPI_Abort(…, 1), which ends every rank with a non-zero exit.
 * Before every collective each rank tells every other one that it arrived
 * (8 bytes to each) and waits for theirs up to the timeout
 * (gh_comm_set_timeout): a rank that died or hangs is named by every
 * waiting rank, with the ranks that did arrive, and the job is aborted the
 * same way; a watchdog thread aborts it too when a collective that every
 * rank entered has not finished after the timeout, so no rank waits for a
 * dead peer for ever.
 */
#ifndef GH_COMM_H
#define GH_COMM_H
#include <stddef.h>
#include <stdint.h>

#include "base/gh-base.h"
#include "base/dd.h"

typedef struct gh_comm gh_comm;
struct gh_opts;
struct gh_backend;

/* The options every distributed tool takes (gh_comm_opts_register):
 * --comm=auto|none|mpi|nccl, --comm-timeout=SECONDS. */
typedef struct {
  const char *kind;     /* "auto" (default) */
  double timeout;       /* seconds a collective may take before the job is aborted (600) */
} gh_comm_opts;
void gh_comm_opts_default(gh_comm_opts *o);
void gh_comm_opts_register(struct gh_opts *po, gh_comm_opts *o);

/* Starts the communicator.  kind: "auto" | "none" | "mpi" | "nccl" (see
 * top; "nccl" starts MPI here and NCCL in gh_comm_nccl_start).  argc/argv
 * are handed to MPI_Init (may be NULL).  Dies with one line for an unknown
 * kind, "mpi"/"nccl" in a build without MPI, or a launcher's environment
 * (R > 1 ranks) in a build without MPI.  In MPI mode also installs the die
 * hook and starts the watchdog (timeout 600 s until gh_comm_set_timeout). */
gh_comm *gh_comm_init(int *argc, char ***argv, const char *kind);
/* The communicator "none" of a tool that is one process by design
 * (gmm-est-gpu, gmm-global-init-from-feats: gh_dist_em as one rank): R = 1
 * whatever the environment says (no launcher check, no MPI, no die hook).
 * Free with gh_comm_finalize. */
gh_comm *gh_comm_single(void);
/* gh_comm_init(kind o->kind) and gh_comm_set_timeout(o->timeout). */
gh_comm *gh_comm_start(int *argc, char ***argv, const gh_comm_opts *o);
/* Ends the communicator (MPI_Finalize after a barrier in MPI mode; the
 * NCCL communicator is destroyed) and frees c (NULL is fine). */
void gh_comm_finalize(gh_comm *c);

int gh_comm_rank(const gh_comm *c);        /* 0 .. R-1 */
int gh_comm_size(const gh_comm *c);        /* R */
int gh_comm_local_rank(const gh_comm *c);  /* rank among the ranks of this host: the GPU to bind */
int gh_comm_local_size(const gh_comm *c);  /* ranks on this host */
/* "none", "mpi" or "nccl" (the latter once gh_comm_nccl_start succeeded). */
const char *gh_comm_kind(const gh_comm *c);
/* Host name of rank r (every rank knows the whole table). */
const char *gh_comm_host(const gh_comm *c, int r);
/* Seconds a collective may take before the watchdog aborts the job
 * (<= 0: no watchdog). */
void gh_comm_set_timeout(gh_comm *c, double seconds);
/* What this rank is working on, appended to its error lines, e.g.
 * "shard 1 (utterances 40..79 of 120, blocks 3..5)". */
void gh_comm_set_context(gh_comm *c, const char *fmt, ...) GH_PRINTF(2, 3);

/* ---- collectives (every rank must call them in the same order) ---- */
/* buf[bytes] of rank root copied to every rank. */
void gh_comm_bcast(gh_comm *c, void *buf, size_t bytes, int root);
/* mine[bytes] of every rank -> all[R x bytes], rank order. */
void gh_comm_allgather(gh_comm *c, const void *mine, size_t bytes, void *all);
void gh_comm_barrier(gh_comm *c);
/* Deterministic element-wise sum of buf[n] over the ranks, in place (see
 * top): result[i] = ((buf_0[i] + buf_1[i]) + ...) + buf_{R-1}[i] in double,
 * identical bytes on every rank, independent of the MPI library's
 * algorithms.  n must be the same on every rank (checked: dies otherwise). */
void gh_comm_sum_f64(gh_comm *c, double *buf, size_t n);
/* The double-double version (lib/base/dd.h), for sums that must not
 * depend on R at all: every rank brings hi[n], lo[n] (its own
 * double-double partial sums); the owner of each slice adds the R pairs in
 * rank order with gh_dd_add_dd, starting from rank 0's, rounds each to
 * double (hi + lo) and the rounded slices are gathered, so out[n] holds
 * the same bytes on every rank.  out may be hi (not lo).  With R = 1 (or
 * no MPI) out[i] = hi[i] + lo[i].  n must be the same on every rank
 * (checked: dies otherwise).  Costs two all-to-alls of n doubles and one
 * all-gather. */
void gh_comm_sum_dd(gh_comm *c, const double *hi, const double *lo, size_t n, double *out);
/* The sum over the ranks of c (rank order, gh_comm_sum_dd) rounded to
 * double: out[a->n] (the caller's memory; may be a->hi; a->lo is not
 * changed).  c may be NULL: this process alone (out[i] = hi[i] + lo[i]). */
void gh_dd_acc_reduce(const gh_dd_acc *a, gh_comm *c, double *out);
/* Dies on every rank ("ranks differ in <what>: ...", printed by rank 0,
 * naming the ranks whose value differs from rank 0's) unless bytes[n] is
 * the same on every rank (compared by a 64-bit hash and the length). */
void gh_comm_check_same(gh_comm *c, const void *bytes, size_t n, const char *what);
/* The start-up agreement on options: dies on every rank unless every rank
 * runs with the same values of po's options (opts.h gh_opts_values; the
 * options that change the arithmetic or the schedule: all but those named
 * in skip, a NULL-terminated list of names without "--", and --verbose,
 * --config, --help, --comm, --comm-timeout, which never do).  Rank 0
 * prints one line naming the first option that differs and both values,
 * "ranks differ in option --block-frames: rank 0 (host H) has 500, rank 1
 * (host H) has 3000" (the first rank that differs from rank 0).  Compared
 * by a 64-bit hash and the length; the texts are gathered only when they
 * differ.  Returns at once with one rank. */
void gh_comm_check_options(gh_comm *c, const struct gh_opts *po, const char *const *skip);
/* gh_comm_check_same on the running executable's bytes (/proc/self/exe):
 * ranks of different builds refuse to start together. */
void gh_comm_check_build(gh_comm *c);
/* Prints "<prog>: ERROR: <msg> [rank R of N on host H, <context>]" and ends
 * the whole job with exit status 1 (MPI_Abort; a plain exit when R = 1). */
void gh_comm_abort(gh_comm *c, const char *msg) GH_NORETURN;

/* ---- device reductions (NCCL) ---- */
/* Starts NCCL on the CUDA device the calling thread uses (call after the
 * backend bound device gh_comm_local_rank): rank 0's ncclGetUniqueId,
 * MPI_Bcast, ncclCommInitRank.  libnccl.so.2 is found through $GH_NCCL_LIB
 * (a file or a directory), else the loader's path, else python's
 * site-packages nvidia/nccl/lib.  Sets NCCL_NVLS_ENABLE=0 unless set.
 * Returns 0, or -1 with the reason in gh_last_error() (no CUDA in this
 * build, no MPI, libnccl not found, init failed); the same answer on every
 * rank (the outcome is agreed through MPI). */
int gh_comm_nccl_start(gh_comm *c);
/* The trainers' NCCL policy, after the backend be is open: NCCL is asked
 * for with --comm=nccl (o->kind "nccl"), or with "auto" when R > 1 and be
 * reports GH_CAP_NCCL (gh_backend_supports(b, GH_CAP_NCCL): its buffers are
 * CUDA device memory); then be's device is made the calling thread's and
 * gh_comm_nccl_start runs.  Returns 1 if NCCL is in use, 0 if not (with
 * "auto" a failed start is logged once: the sums go through MPI on the
 * host).  Dies with one line on --comm=nccl with a backend without the
 * capability, or when NCCL does not start (rank 0 says it, every rank
 * exits non-zero).  Every rank must call it. */
int gh_comm_use_nccl(gh_comm *c, const gh_comm_opts *o, struct gh_backend *be);
/* 1 after a successful gh_comm_nccl_start. */
int gh_comm_has_nccl(const gh_comm *c);
/* gh_comm_sum_f64 on a CUDA device buffer dbuf[n] (double), same order and
 * bytes: grouped ncclSend/ncclRecv of the slices to their owners, a kernel
 * adds the R parts in rank order, ncclAllGather.  Needs gh_comm_has_nccl. */
void gh_comm_sum_f64_device(gh_comm *c, double *dbuf, size_t n);
/* gh_comm_sum_dd on CUDA device buffers dhi[n], dlo[n] (double-double
 * partial sums; not changed), same order and bytes: the rounded sums go to
 * the device buffer dout[n] on every rank (may alias neither dhi nor dlo).
 * Needs gh_comm_has_nccl. */
void gh_comm_sum_dd_device(gh_comm *c, const double *dhi, const double *dlo, double *dout, size_t n);

#endif
