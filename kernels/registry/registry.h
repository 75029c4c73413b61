/* registry.h -- picking a backend by name (--device) and the CPU fallbacks
 * of the ops a backend lacks.  Above every backend folder (kernels/cpu,
 * kernels/cuda, kernels/opencl): the drivers and the tools call these; a
 * backend never does (it includes only kernels/backend.h). */
#ifndef GH_REGISTRY_H
#define GH_REGISTRY_H
#include "backend.h"

/* device: "auto" (CUDA when a GPU is present, else an OpenCL GPU, else the
 * CPU BLAS backend), "cpu" (BLAS backend), "cpu-ref" (reference), "cuda", "opencl" or "opencl:P:D" (gh_backend_opencl_new).
 * Logs the choice ("using device cuda (NVIDIA H200)").  Dies if "cuda" is
 * asked for and unavailable, or on an unknown name. */
gh_backend *gh_backend_create(const char *device);

/* Dies with gh_backend_create's message if device is not a name it accepts
 * (syntax only: cuda:N's N a number; starts nothing, looks for no device).
 * For a tool that may finish without the device (gmm-init of one Gaussian
 * per pdf and no EM iterations) but must still reject a mistyped name. */
void gh_backend_check_name(const char *device);

/* gh_backend_create on a thread of its own, so that a tool reads its input
 * while the device starts (a CUDA process pays 0.25-0.35 s for the driver,
 * the context and cuBLAS before its first kernel: bench/RESULTS.md
 * D22; an accumulation job of doc/scaling.md pays it every iteration).
 * gh_backend_create_end waits for the start and returns the backend; it
 * logs the device choice then, in the calling thread, so a tool that dies
 * on bad input meanwhile prints its one error line and nothing else.  An
 * unusable device ends the process from the start-up thread with
 * gh_backend_create's error.  An explicitly named OpenCL device, "auto"
 * where CUDA cannot start (not built in, or no driver library), or any
 * device when no thread can be started, is created in
 * gh_backend_create_end instead (registry.c says why). */
typedef struct gh_backend_start gh_backend_start;
gh_backend_start *gh_backend_create_begin(const char *device);
gh_backend *gh_backend_create_end(gh_backend_start *s);

/* align_batch of b (backend.h gh_ops_align), or the CPU reference's
 * (kernels/cpu/align.c) when b is NULL or has none: the same results. */
void gh_backend_align_batch(gh_backend *b, const gh_align_batch *batch, gh_align_out *out);

/* The k-means ops of b (backend.h kmeans_*), or the CPU implementation
 * (kernels/cpu/kmeans.c) when b is NULL or has none; the handle belongs to
 * the implementation that made it, so pass the same b to all four. */
gh_dev_kmeans *gh_backend_kmeans_upload(gh_backend *b, const double *Z, int64_t N, int32_t D);
void gh_backend_kmeans_nearest(gh_backend *b, gh_dev_kmeans *z, const double *C, int32_t k0, int32_t nk, int reset);
void gh_backend_kmeans_fetch(gh_backend *b, gh_dev_kmeans *z, double *d2, int32_t *asg);
void gh_backend_kmeans_free(gh_backend *b, gh_dev_kmeans *z);

/* The HMM sub-table to use for b: b->ops->hmm when the backend has it
 * (gh_backend_supports GH_CAP_HMM), else the CPU reference's
 * (gh_cpu_ref_hmm; logged once per backend).  The CPU HMM ops never touch
 * b->ctx, so they run with any b. */
const gh_ops_hmm *gh_backend_hmm_ops(gh_backend *b);

/* hmm_reweight of b (GH_CAP_HMM_REWEIGHT, with b's own HMM kernels), or
 * hmm_free of *h and a new hmm_upload of graphs into *h. */
void gh_backend_hmm_reweight(gh_backend *b, gh_dev_hmm **h, const gh_hmm_graph *const *graphs, int32_t num_graphs);
/* hmm_fb_pairs of b (GH_CAP_HMM_DEV, with b's own HMM kernels), or hmm_fb then
 * gh_hmm_gamma_pairs on the host (gamma in a temporary host buffer). */
void gh_backend_hmm_fb_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                             const gh_hmm_graph *const *graphs, const int32_t *col_pdf, int32_t frame_base,
                             double min_post, double *loglik, double *stats, gh_pair_buf *out);

/* The Baum-Welch E-step of one block up to its GMM E-step data (hmm-train):
 * the loglikes of each segment (gh_backend_loglikes_rows from *d's frames X
 * [rows x D], host, where b scores resident frames) into ll ([rows x
 * batch->num_pdfs] host scratch, the batch's loglikes; its columns past a
 * segment's ncols are not read by its utterances' graphs), forward-backward over
 * batch with the pdf posteriors of gh_hmm_gamma_pairs (min_post), their
 * columns mapped to pdf ids by the segments' maps, set as *d's pairs
 * (gh_backend_data_pairs: *d created when NULL).  loglik [num_utts] set,
 * stats added to (hmm_fb).  Returns the number of pairs; *wsum = their
 * total weight.  All of it on the device where b has hmm_estep_pairs and
 * its own HMM ops (GH_HMM_ESTEP=host: the host path, for tests and
 * benchmarks); else through pb (host pairs; kept until the next call; the
 * device path leaves pb empty).
 * sec[0..3] += seconds of scoring, forward-backward with the posteriors,
 * mapping the columns, setting the pairs (the device path: scoring and the
 * rest).  Dies on segments that do not tile the batch's rows.
 * op GH_HMM_ESTEP_VITERBI (Viterbi training's alignment): hmm_viterbi
 * instead of forward-backward (Rabiner 1989 eqs. 32-35), one pair per frame
 * of each utterance with a complete path, (frame, pdf of the path's state,
 * weight 1), in frame order before the sort; loglik[u] = the path's score
 * (natural log, total over the utterance), -inf without a complete path
 * (then none of its frames has a pair); min_post and stats unused (stats
 * may be NULL).  On the device the path never reaches the host. */
int64_t gh_backend_hmm_estep_pairs(gh_backend *b, gh_dev_hmm *h, const gh_hmm_batch *batch,
                                   const gh_hmm_graph *const *graphs, gh_dev_data **d, const float *X, int32_t D,
                                   int32_t rows, const gh_score_seg *segs, int32_t nseg, int op, float *ll,
                                   double min_post, double *loglik, double *stats, gh_pair_buf *pb, double *wsum,
                                   double sec[4]);

/* Shrinkage statistics on b (its acc_shrink, or the CPU reference when b
 * has none; see acc_shrink above).  Dies if a pair is out of range or a
 * pdf with pairs is diagonal. */
void gh_backend_acc_shrink(gh_backend *b, const gh_gmm_set *model, const float *X, int32_t T,
                           const gh_frame_pdf *pairs, int64_t npairs, gh_accs_set *accs);
/* The E-step over Gaussian selections on b (its acc_gselect, or the CPU
 * reference when b has none; see acc_gselect above). */
double gh_backend_acc_gselect(gh_backend *b, const gh_gmm *gmm, const float *X, int32_t T, const int32_t *sel_off,
                              const int32_t *sel, const float *w, gh_gmm_accs *accs, float *post,
                              double *frame_ll);

#endif
