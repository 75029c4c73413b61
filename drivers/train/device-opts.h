/* device-opts.h -- the --device and --precision options of every tool that
 * computes on a backend (kernels/backend.h), registered, checked and turned
 * into a backend in one place, and the trainers' rank -> device policy.
 *
 * A tool registers them with gh_device_opts_register (one help text for
 * each option, the same in every tool), and opens the backend with
 * gh_device_opts_open, or with gh_device_opts_begin / _end to start the
 * device on a thread while it reads its input (gh_backend_create_begin).
 * A bad value ends the tool at option parsing, before any input is read,
 * with one error line naming the value ("unknown --device=gpu (expected
 * ...)", "--precision must be ... (got 'fp16')"; gh_opts_check).  Every backend takes every tool: none is
 * restricted.
 *
 * The distributed trainers (gmm-train, hmm-train) call
 * gh_device_opts_bind_rank after starting their communicator, so rank k of
 * a host takes GPU k mod the host's GPUs, and gh_comm_use_nccl
 * (train/comm.h) once the backend is open. */
#ifndef GH_DEVICE_OPTS_H
#define GH_DEVICE_OPTS_H
#include "backend.h"
#include "registry/registry.h"

struct gh_opts;
struct gh_comm;

/* What gh_device_opts_register registers (bits). */
#define GH_DEVICE_OPT 1u    /* --device */
#define GH_PRECISION_OPT 2u /* --precision (tools with GEMM-shaped GPU paths) */
#define GH_DEVICE_OPTS_BOTH (GH_DEVICE_OPT | GH_PRECISION_OPT)

typedef struct gh_device_opts {
  const char *device;    /* --device, default "auto"; see gh_device_help */
  const char *precision; /* --precision, default "auto"; see gh_precision_help */
  unsigned what;         /* GH_DEVICE_OPT / GH_PRECISION_OPT: the options registered */
  int prec;              /* gh_precision of `precision`, set by the check */
  char rank_device[32];  /* gh_device_opts_bind_rank's "cuda:N" (device points here then) */
  gh_backend_start *start; /* between gh_device_opts_begin and _end, else NULL */
} gh_device_opts;

/* The help texts, written once: every tool shows these words. */
extern const char gh_device_help[];
extern const char gh_precision_help[];

/* Sets d's defaults ("auto", "auto"), registers the options named by what
 * (GH_DEVICE_OPT, GH_PRECISION_OPT or both; the other keeps its default)
 * on po and a validator (gh_opts_check) that runs gh_device_opts_check
 * when po is parsed.  d must outlive the parse. */
void gh_device_opts_register(struct gh_opts *po, gh_device_opts *d, unsigned what);

/* Checks the syntax of d->device (auto, cpu, cpu-ref, cuda, cuda:N with N
 * a number 0..1024, opencl, opencl:P:D with P and D numbers) and
 * d->precision (auto, fp32, tf32x3, tf32), sets d->prec.  Looks for no
 * device.  Dies with one line naming the bad value and what was expected:
 * "unknown --device=gpu (expected auto, cpu, ...)", "--device=cuda:x:
 * expected cuda:N with N a device number (0, 1, ...)", "--device=opencl:1:
 * expected opencl:P:D ...", "--precision must be auto, fp32, tf32x3 or tf32
 * (got 'fp16')".  An empty --device means auto. */
void gh_device_opts_check(gh_device_opts *d);

/* Checks d (as above), creates the backend of d->device
 * (gh_backend_create: logs "using device ..."; dies with one line if the
 * device is not there, e.g. "--device=cuda: no usable CUDA device (...)")
 * and sets its precision.  Free with gh_backend_free. */
gh_backend *gh_device_opts_open(gh_device_opts *d);

/* The same in two halves, so that the device starts while the tool reads
 * its input: _begin checks d and starts the device on a thread
 * (gh_backend_create_begin; the start is kept in d->start), _end waits for
 * it, logs the choice and sets the precision.  Every _begin needs its _end
 * (the tool's, or a library loop's that takes d: gh_global_acc,
 * gh_hmm_trainer_new). */
void gh_device_opts_begin(gh_device_opts *d);
gh_backend *gh_device_opts_end(gh_device_opts *d);

/* The rank -> device policy of the distributed trainers.  With L > 1 ranks
 * on this host (gh_comm_local_size; c may be NULL: one process, nothing
 * changes): d->device "auto" or "cuda" becomes "cuda:K" with K = local
 * rank mod G, G = gh_cuda_device_count(), when G > 0 (any other spelling,
 * and "auto" without a CUDA GPU, is kept: every rank opens that device);
 * and the OpenMP threads of this rank (CPU backends, host M-step) are set
 * to max(1, online cores / L).  Returns d->device. */
const char *gh_device_opts_bind_rank(gh_device_opts *d, const struct gh_comm *c);

#endif
