/* gmm-score-gpu -- per-frame, per-pdf log-likelihoods of features under a
 * GMM set (Kaldi's gmm-compute-likes / fgmm-global-get-frame-likes), on the
 * GPU when there is one.  Utterances are batched (--batch-frames) into one
 * call of the backend's loglikes (kernels/backend.h); reading, scoring and
 * writing overlap (three threads, below). */
#include "backend.h"
#include "gh-base.h"
#include "gmm.h"
#include "opts.h"
#include "queue.h"
#include "table.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Three stages, overlapped (doc/perf.md "I/O overlap"): a reader thread
 * parses utterances into batches of about --batch-frames frames, the main
 * thread scores one batch while the reader fills the next, and a writer
 * thread writes the previous batch's matrices.  NBATCH input batches and
 * NOUT output buffers (the backend's host buffers: page-locked on CUDA)
 * circulate through bounded queues, so memory stays bounded and the output
 * order is the input order. */
enum { NBATCH = 3, NOUT = 2 };

typedef struct { float *p; int64_t cap; } outbuf; /* [cap] floats, gh_backend_host_alloc */

typedef struct {
  char **keys;
  int32_t *rows;
  int n, cap;
  float *X;      /* [frames x D] */
  int64_t frames, capX;
  outbuf *out;   /* the output buffer lent to this batch: [frames x P] loglikes */
} batch;

typedef struct {
  /* queues: free_b -> reader -> full_b -> scorer -> done -> writer -> free_b;
   * output buffers: free_o -> scorer -> (with the batch) -> writer -> free_o */
  gh_queue *free_b, *full_b, *done, *free_o;
  gh_seq_reader *r;
  gh_backend *be;
  const char *feats_rspec;
  int32_t D, P, batch_frames;
  int64_t num_done, total_frames; /* reader's */
  gh_writer *w;
  double best_sum;                /* writer's */
  double wait_r, wait_s, wait_w;  /* seconds each thread waited on a queue (reader, scorer, writer) */
} pipeline;

/* gh_queue_pop, adding the time it blocked to *waited. */
static void *timed_pop(gh_queue *q, double *waited) {
  double t0 = gh_seconds();
  void *v = gh_queue_pop(q);
  *waited += gh_seconds() - t0;
  return v;
}

static void *reader_main(void *arg) {
  pipeline *pl = arg;
  const int32_t D = pl->D;
  batch *bt = timed_pop(pl->free_b, &pl->wait_r);
  for (; !gh_seq_reader_done(pl->r); gh_seq_reader_next(pl->r)) {
    const char *key = gh_seq_reader_key(pl->r);
    const gh_matrix_view *feats = gh_seq_reader_value(pl->r); /* in place in the reader's buffer */
    if (feats->rows > 0 && feats->cols != D)
      gh_die("feats rspecifier %s, key %s: dimension %d does not match model dimension %d",
             pl->feats_rspec, key, feats->cols, D);
    if (bt->n == bt->cap) {
      bt->cap = bt->cap ? 2 * bt->cap : 64;
      bt->keys = gh_realloc(bt->keys, bt->cap * sizeof(char *));
      bt->rows = gh_realloc(bt->rows, bt->cap * sizeof(int32_t));
    }
    if ((bt->frames + feats->rows) * D > bt->capX) { /* page-locked where the backend has it: DMA uploads */
      bt->capX = 2 * (bt->frames + feats->rows) * D;
      float *X = gh_backend_host_alloc(pl->be, bt->capX * sizeof(float));
      if (bt->frames) memcpy(X, bt->X, (size_t)bt->frames * D * sizeof(float));
      gh_backend_host_free(pl->be, bt->X);
      bt->X = X;
    }
    gh_matrix_view_copy_finite(feats, bt->X + bt->frames * D, pl->feats_rspec, key); /* the one copy */
    bt->keys[bt->n] = gh_strdup(key);
    bt->rows[bt->n++] = feats->rows;
    bt->frames += feats->rows;
    pl->total_frames += feats->rows;
    ++pl->num_done;
    if (bt->frames >= pl->batch_frames) {
      gh_queue_push(pl->full_b, bt);
      bt = timed_pop(pl->free_b, &pl->wait_r);
    }
  }
  if (bt->n > 0) gh_queue_push(pl->full_b, bt);
  else gh_queue_push(pl->free_b, bt);
  gh_queue_push(pl->full_b, NULL);
  return NULL;
}

/* Writes one matrix per utterance of each scored batch, adds each frame's
 * best pdf log-likelihood to the total, and hands the buffers back. */
static void *writer_main(void *arg) {
  pipeline *pl = arg;
  const int32_t P = pl->P;
  batch *bt;
  while ((bt = timed_pop(pl->done, &pl->wait_w)) != NULL) {
    int64_t off = 0;
    for (int u = 0; u < bt->n; ++u) {
      gh_matrix view = {bt->rows[u], P, bt->rows[u] ? bt->out->p + off * P : NULL};
      for (int32_t t = 0; t < bt->rows[u]; ++t) {
        const float *r = gh_row(&view, t);
        float best = r[0];
        for (int32_t p = 1; p < P; ++p) if (r[p] > best) best = r[p];
        pl->best_sum += best;
      }
      gh_writer_write(pl->w, bt->keys[u], GH_OBJ_MATRIX, &view);
      off += bt->rows[u];
      free(bt->keys[u]);
    }
    bt->n = 0;
    bt->frames = 0;
    gh_queue_push(pl->free_o, bt->out);
    bt->out = NULL;
    gh_queue_push(pl->free_b, bt);
  }
  return NULL;
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

  pipeline pl;
  memset(&pl, 0, sizeof pl);
  pl.r = gh_seq_reader_open(feats_rspec, GH_OBJ_MATRIX_VIEW);
  pl.w = gh_writer_open(out_wspec);
  pl.feats_rspec = feats_rspec;
  pl.be = be;
  pl.D = D; pl.P = P; pl.batch_frames = batch_frames;
  pl.free_b = gh_queue_new(NBATCH);
  pl.full_b = gh_queue_new(NBATCH + 1);
  pl.done = gh_queue_new(NBATCH + 1);
  batch batches[NBATCH];
  memset(batches, 0, sizeof batches);
  for (int i = 0; i < NBATCH; ++i) { /* input buffers sized once (page-locked allocation is slow) */
    batches[i].capX = 2 * (int64_t)batch_frames * D;
    batches[i].X = gh_backend_host_alloc(be, (size_t)batches[i].capX * sizeof(float));
    gh_queue_push(pl.free_b, &batches[i]);
  }
  pl.free_o = gh_queue_new(NOUT);
  outbuf outs[NOUT];
  memset(outs, 0, sizeof outs);
  for (int i = 0; i < NOUT; ++i) { /* sized once too, up to 64 MB each (else as batches need) */
    if (2 * (int64_t)batch_frames * P <= (16 << 20)) {
      outs[i].cap = 2 * (int64_t)batch_frames * P;
      outs[i].p = gh_backend_host_alloc(be, (size_t)outs[i].cap * sizeof(float));
    }
    gh_queue_push(pl.free_o, &outs[i]);
  }
  double t_start = gh_seconds();
  pthread_t reader, writer;
  if (pthread_create(&reader, NULL, reader_main, &pl) || pthread_create(&writer, NULL, writer_main, &pl))
    gh_die("cannot start the reader and writer threads");
  batch *bt;
  while ((bt = timed_pop(pl.full_b, &pl.wait_s)) != NULL) {
    outbuf *ob = timed_pop(pl.free_o, &pl.wait_s);
    if (bt->frames * P > ob->cap) {
      gh_backend_host_free(be, ob->p);
      ob->cap = bt->frames * P;
      ob->p = gh_backend_host_alloc(be, (size_t)ob->cap * sizeof(float));
    }
    if (bt->frames > 0) be->ops->loglikes(be, m, bt->X, (int32_t)bt->frames, ob->p);
    bt->out = ob;
    gh_queue_push(pl.done, bt);
  }
  gh_queue_push(pl.done, NULL);
  pthread_join(reader, NULL);
  pthread_join(writer, NULL);
  gh_seq_reader_close(pl.r);
  gh_writer_close(pl.w);
  const int64_t num_done = pl.num_done, total_frames = pl.total_frames;
  const double best_sum = pl.best_sum;
  double secs = gh_seconds() - t_start;
  gh_log("Processed %lld utterances, %lld frames; average log-likelihood of the best pdf "
         "%.4f per frame; %.0f frames/s on %s (loglikes kernel alone %.0f frames/s)",
         (long long)num_done, (long long)total_frames,
         total_frames ? best_sum / total_frames : 0.0, secs > 0 ? total_frames / secs : 0.0,
         be->device_name, be->kernel_seconds > 0 ? total_frames / be->kernel_seconds : 0.0);
  /* where the time went: the thread that never waits is the bound */
  gh_vlog(1, "pipeline over %.3f s: reader waited %.3f s, scorer %.3f s (kernels %.3f s), writer %.3f s", secs,
          pl.wait_r, pl.wait_s, be->kernel_seconds, pl.wait_w);
  for (int i = 0; i < NOUT; ++i) gh_backend_host_free(be, outs[i].p);
  be->ops->model_free(be, m);
  for (int i = 0; i < NBATCH; ++i) { free(batches[i].keys); free(batches[i].rows); gh_backend_host_free(be, batches[i].X); }
  gh_backend_free(be);
  gh_gmm_set_free(&set);
  gh_queue_free(pl.free_b); gh_queue_free(pl.full_b); gh_queue_free(pl.done); gh_queue_free(pl.free_o);
  gh_opts_free(po);
  return num_done ? 0 : 1;
}
