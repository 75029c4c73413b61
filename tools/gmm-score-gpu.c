/* gmm-score-gpu -- per-frame, per-pdf log-likelihoods of features under a
 * GMM set (Kaldi's gmm-compute-likes / fgmm-global-get-frame-likes), on the
 * GPU when there is one.  Utterances are batched (--batch-frames) into one
 * call of the fused likelihood kernel (kernels/backend.h). */
#include "backend.h"
#include "gh-base.h"
#include "gmm.h"
#include "opts.h"
#include "table.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  char **keys;
  int32_t *rows;
  int n, cap;
  float *X;      /* [frames x D] */
  int64_t frames, capX;
  float *out;    /* [frames x P] */
  int64_t capOut;
} batch;

/* Scores the batch, writes one matrix per utterance, updates the totals. */
static void flush(batch *bt, gh_backend *be, gh_dev_model *m, int32_t D, int32_t P, gh_writer *w,
                  double *best_sum) {
  if (bt->n == 0) return;
  if (bt->frames * P > bt->capOut) {
    bt->capOut = bt->frames * P;
    bt->out = gh_realloc(bt->out, bt->capOut * sizeof(float));
  }
  if (bt->frames > 0) be->ops->loglikes(be, m, bt->X, (int32_t)bt->frames, bt->out);
  int64_t off = 0;
  for (int u = 0; u < bt->n; ++u) {
    gh_matrix view = {bt->rows[u], P, bt->rows[u] ? bt->out + off * P : NULL};
    for (int32_t t = 0; t < bt->rows[u]; ++t) {
      const float *r = gh_row(&view, t);
      float best = r[0];
      for (int32_t p = 1; p < P; ++p) if (r[p] > best) best = r[p];
      *best_sum += best;
    }
    gh_writer_write(w, bt->keys[u], GH_OBJ_MATRIX, &view);
    off += bt->rows[u];
    free(bt->keys[u]);
  }
  bt->n = 0;
  bt->frames = 0;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Compute per-frame log-likelihoods of every pdf of a GMM set (natural log), one\n"
      "matrix (frames x pdfs) per utterance, as Kaldi's gmm-compute-likes writes them.\n"
      "The model may be a GMM set, a Kaldi .mdl, or a Kaldi global <DiagGMM>/<FullGMM>\n"
      "(one pdf: column 0 is then the per-frame log-likelihood).\n"
      "Usage: gmm-score-gpu [options] <model-in> <feats-rspecifier> <loglikes-wspecifier>\n"
      " e.g.: gmm-score-gpu --device=cuda final.mdl scp:feats.scp ark:loglikes.ark";
  gh_opts *po = gh_opts_new(usage);
  const char *device = "auto";
  int32_t batch_frames = 16384;
  gh_opts_string(po, "device", &device, "Compute device: auto (CUDA if a GPU is present, else an OpenCL GPU, else cpu), cpu (BLAS, all cores), cpu-ref (plain-loop reference), cuda, cuda:N, opencl or opencl:P:D (platform P, device D)");
  const char *precision = "auto";
  gh_opts_string(po, "precision", &precision,
                 "GPU GEMM arithmetic: auto (fastest within fp32-level error, doc/kernels.md), fp32, "
                 "tf32x3 (split-precision tensor cores) or tf32 (fast, ~1e-3 relative error)");
  gh_opts_int(po, "batch-frames", &batch_frames,
              "Score utterances in batches of about this many frames (one kernel call each)");
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *model_rx = gh_opts_arg(po, 0), *feats_rspec = gh_opts_arg(po, 1),
             *out_wspec = gh_opts_arg(po, 2);
  if (batch_frames < 1) gh_die("--batch-frames must be >= 1 (got %d)", batch_frames);

  gh_gmm_set set;
  gh_gmm_set_read(model_rx, &set);
  const int32_t D = set.dim, P = set.num_pdfs;
  if (P <= 0) gh_die("%s: model has no pdfs", model_rx);
  int prec = 0;
  if (gh_precision_parse(precision, &prec) != 0)
    gh_die("--precision must be auto, fp32, tf32x3 or tf32 (got '%s')", precision);
  gh_backend *be = gh_backend_create(device);
  be->precision = prec;
  gh_dev_model *m = be->ops->model_upload(be, &set);

  gh_seq_reader *r = gh_seq_reader_open(feats_rspec, GH_OBJ_MATRIX);
  gh_writer *w = gh_writer_open(out_wspec);
  batch bt;
  memset(&bt, 0, sizeof bt);
  int64_t num_done = 0, total_frames = 0;
  double best_sum = 0.0, t_start = gh_seconds();
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
    const char *key = gh_seq_reader_key(r);
    const gh_matrix *feats = gh_seq_reader_value(r);
    if (feats->rows > 0 && feats->cols != D)
      gh_die("feats rspecifier %s, key %s: dimension %d does not match model dimension %d",
             feats_rspec, key, feats->cols, D);
    gh_check_finite_matrix(feats, feats_rspec, key);
    if (bt.n == bt.cap) {
      bt.cap = bt.cap ? 2 * bt.cap : 64;
      bt.keys = gh_realloc(bt.keys, bt.cap * sizeof(char *));
      bt.rows = gh_realloc(bt.rows, bt.cap * sizeof(int32_t));
    }
    if ((bt.frames + feats->rows) * D > bt.capX) {
      bt.capX = 2 * (bt.frames + feats->rows) * D;
      bt.X = gh_realloc(bt.X, bt.capX * sizeof(float));
    }
    if (feats->rows > 0)
      memcpy(bt.X + bt.frames * D, feats->data, (size_t)feats->rows * D * sizeof(float));
    bt.keys[bt.n] = gh_strdup(key);
    bt.rows[bt.n++] = feats->rows;
    bt.frames += feats->rows;
    total_frames += feats->rows;
    ++num_done;
    if (bt.frames >= batch_frames) flush(&bt, be, m, D, P, w, &best_sum);
  }
  flush(&bt, be, m, D, P, w, &best_sum);
  gh_seq_reader_close(r);
  gh_writer_close(w);
  double secs = gh_seconds() - t_start;
  gh_log("Processed %lld utterances, %lld frames; average log-likelihood of the best pdf "
         "%.4f per frame; %.0f frames/s on %s",
         (long long)num_done, (long long)total_frames,
         total_frames ? best_sum / total_frames : 0.0, secs > 0 ? total_frames / secs : 0.0,
         be->device_name);
  be->ops->model_free(be, m);
  gh_backend_free(be);
  gh_gmm_set_free(&set);
  free(bt.keys); free(bt.rows); free(bt.X); free(bt.out);
  gh_opts_free(po);
  return num_done ? 0 : 1;
}
