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
#include "gmm/gmm.h"

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

/* --device=auto and work too small for a GPU.  A GPU process pays its
 * context before its first kernel (0.25-0.35 s on an H100/H200: driver,
 * context, cuBLAS; bench/RESULTS.md D22), which a recipe of many small
 * tool runs pays again in every run.  When d->device is "auto" (or empty)
 * and this host's online cores are estimated to process at least 1e6
 * frames/s of the tool's work on the CPU (cores x frames_per_core_s), the
 * device becomes "cpu", with one LOG line naming `what`: a GPU could then
 * win only on jobs of more than ~300,000 frames, and there the CPU costs at
 * most ~1 s per million frames more.  Nothing changes for any other
 * --device, nor after gh_device_opts_bind_rank.  Call before
 * gh_device_opts_open / _begin.  frames_per_core_s: gh_cpu_rate_gmm or
 * gh_cpu_rate_hmm (<= 0: no estimate, nothing changes). */
void gh_device_opts_auto_small(gh_device_opts *d, double frames_per_core_s, const char *what);

/* The CPU backend's estimated frames per second on one core (the cost
 * model of gh_device_opts_auto_small) for scoring the GMM set: per frame
 * 0.5 us of input and output plus its flops at 1e10 flops/s, 3D flops a
 * diagonal and D(D+1) a full Gaussian; times `passes` (1 for scoring, 2
 * for an E-step: likelihoods, then statistics).  Measured on one core of a
 * 2-core VM, gmm-score-gpu --device=cpu, input and output included: the
 * Arabic recipe's 80 x 8 diagonal Gaussians of D = 39, 2.1e5 frames/s
 * (model: 1.3e5); its 10 x 4 full Gaussians of D = 13, 6.5e5 (model:
 * 8.1e5). */
double gh_cpu_rate_gmm(const gh_gmm_set *s, double passes);
/* The same for the forward or Viterbi pass over HMM graphs of `states`
 * states and `arcs` arcs in all (every graph's states and arcs per frame):
 * 1e8 state-or-arc updates per second (measured: the Arabic recipe's 10
 * word HMMs of 8 states, 290 states and arcs, 3.9e5 frames/s on one core,
 * hmm-forward --device=cpu in the log domain; model: 3.4e5). */
double gh_cpu_rate_hmm(int64_t states, int64_t arcs);

/* The rank -> device policy of the distributed trainers.  With L > 1 ranks
 * on this host (gh_comm_local_size; c may be NULL: one process, nothing
 * changes): d->device "auto" or "cuda" becomes "cuda:K" with K = local
 * rank mod G, G = gh_cuda_device_count(), when G > 0 (any other spelling,
 * and "auto" without a CUDA GPU, is kept: every rank opens that device);
 * and the OpenMP threads of this rank (CPU backends, host M-step) are set
 * to max(1, online cores / L).  Returns d->device. */
const char *gh_device_opts_bind_rank(gh_device_opts *d, const struct gh_comm *c);

#endif
