/* score-pipeline.c -- the scoring pipeline of score-pipeline.h: reader,
 * copy, scorer and writer threads over bounded queues. */
#include "gmm/score-pipeline.h"
#include "base/gh-base.h"
#include "base/queue.h"
#include "gmm/numerics.h"
#include "io/table.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Three stages, overlapped (bench/RESULTS.md B12): a reader thread
 * parses utterances into batches of about --batch-frames frames, the main
 * thread scores batches while the reader fills the next, and a writer
 * thread writes the scored batches' matrices.  The scorer keeps two batches
 * in the backend at a time (gh_backend_loglikes_begin / _end: on CUDA the
 * next batch's upload overlaps the kernels of the one before).  NBATCH
 * input batches and NOUT output buffers (the backend's host buffers:
 * page-locked on CUDA) circulate through bounded queues, so memory stays
 * bounded and the output order is the input order. */
enum { NBATCH = 4, NOUT = 3 };

typedef struct { float *p; int64_t cap; } outbuf; /* [cap] floats, gh_backend_host_alloc */

typedef struct {
  char **keys;
  int32_t *rows;
  int n, cap;
  float *X;      /* [frames x D] */
  int64_t frames, capX;
  outbuf *out;   /* the output buffer lent to this batch: [frames x P] loglikes */
  /* parallel reader (reader_par_main): copy jobs not yet done (+1 while the
   * scanning thread still adds to the batch), the first failed utterance
   * and its error line; under pipeline.mu */
  int pending, err_u;
  char err[1024];
  int32_t model; /* the index of the model its utterances are scored under (gh_score_models) */
  /* seconds from the pipeline's start (--verbose=2): the reader took the
   * batch, laid out its last utterance, the batch was read whole, handed to
   * the backend */
  double t_taken, t_laid, t_full, t_begun;
} batch;

typedef struct {
  /* queues: free_b -> reader -> full_b -> scorer -> done -> writer -> free_b;
   * output buffers: free_o -> scorer -> (with the batch) -> writer -> free_o */
  gh_queue *free_b, *full_b, *done, *free_o;
  gh_seq_reader *r;
  gh_backend *be;
  const gh_score_models *sm;      /* the models; model_of NULL: models[0] for every utterance */
  const char *feats_rspec;
  int32_t D, P, batch_frames;
  int32_t target;                 /* the batch being filled goes at this many frames (reader's) */
  double t_start;                 /* gh_seconds() at the pipeline's start */
  int64_t num_done, total_frames; /* reader's */
  gh_writer *w;
  double best_sum;                /* writer's */
  int far_warned;                 /* writer's: gh_loglikes_check warned about a frame outside the contract */
  double wait_r, wait_s, wait_w;  /* seconds each thread waited on a queue (reader, scorer, writer) */
  double t_begin, t_end;          /* scorer's seconds in gh_backend_loglikes_begin (enqueueing) and _end (waiting) */
  /* parallel reader: one thread scans the archive (sc), io_threads copy
   * the payloads (jobs); batches go to full_b in scan order (order[]) */
  gh_ark_scan *sc;
  int io_threads;
  gh_queue *jobs;
  pthread_mutex_t mu;
  pthread_cond_t cv;               /* a batch's pending reached 1 (the scanner waits to grow it) */
  batch *order[NBATCH + 1];        /* batches being filled, oldest first */
  int norder;
  int eof_after;                   /* push NULL to full_b once order[] is empty */
} pipeline;

/* gh_queue_pop, adding the time it blocked after the pipeline's start to
 * *waited (the threads start before it, during the set-up; every queue's
 * first item comes after pl->t_start is set). */
static void *timed_pop(const pipeline *pl, gh_queue *q, double *waited) {
  const double t0 = gh_seconds();
  void *v = gh_queue_pop(q);
  *waited += gh_seconds() - (t0 > pl->t_start ? t0 : pl->t_start);
  return v;
}

/* A free batch for the reader to fill. */
static batch *take_batch(pipeline *pl) {
  batch *bt = timed_pop(pl, pl->free_b, &pl->wait_r);
  bt->t_taken = bt->t_laid = gh_seconds() - pl->t_start;
  return bt;
}

/* A batch read whole goes to the scorer. */
static void push_full(pipeline *pl, batch *bt) {
  bt->t_full = gh_seconds() - pl->t_start;
  gh_queue_push(pl->full_b, bt);
}

/* Dies unless an utterance of rows x cols matches the model dimension. */
static void check_dim(const pipeline *pl, const char *key, int32_t rows, int32_t cols) {
  if (rows > 0 && cols != pl->D)
    gh_die_dim(pl->feats_rspec, key, "features", cols, pl->D, "the model");
}

/* 1 when bt's frame buffer holds `rows` more frames without growing. */
static int batch_fits(const pipeline *pl, const batch *bt, int32_t rows) {
  return (bt->frames + rows) * pl->D <= bt->capX;
}

/* Appends utterance key of `rows` frames to bt (growing its key/row arrays
 * and, copying the frames so far, its page-locked frame buffer: DMA
 * uploads where the backend has them) and returns where its frames go;
 * bt->frames is not advanced. */
static float *batch_add(pipeline *pl, batch *bt, const char *key, int32_t rows) {
  const int32_t D = pl->D;
  if (bt->n == bt->cap) {
    bt->cap = bt->cap ? 2 * bt->cap : 64;
    bt->keys = gh_realloc(bt->keys, bt->cap * sizeof(char *));
    bt->rows = gh_realloc(bt->rows, bt->cap * sizeof(int32_t));
  }
  if (!batch_fits(pl, bt, rows)) {
    bt->capX = 2 * (bt->frames + rows) * D;
    float *X = gh_backend_host_alloc(pl->be, bt->capX * sizeof(float));
    if (bt->frames) memcpy(X, bt->X, (size_t)bt->frames * D * sizeof(float));
    gh_backend_host_free(pl->be, bt->X);
    bt->X = X;
  }
  bt->keys[bt->n] = gh_strdup(key);
  bt->rows[bt->n++] = rows;
  return bt->X + bt->frames * D;
}

/* Batches start at an eighth of --batch-frames (at least 4096 frames) and
 * grow by half, so that the scorer starts on a small first batch instead of
 * waiting for a whole one; each batch is read while the one before, two
 * thirds its size, is scored (the tool's own path alone runs at ~1.2x the
 * UBM diag kernel's rate: bench/RESULTS.md D13). */
static int32_t first_target(int32_t batch_frames) { return batch_frames / 8 > 4096 ? batch_frames / 8 : batch_frames < 4096 ? batch_frames : 4096; }
static void next_target(pipeline *pl) {
  const int64_t t = (int64_t)pl->target * 3 / 2;
  pl->target = t < pl->batch_frames ? (int32_t)t : pl->batch_frames;
}
/* Near the end of a plain archive file (the parallel reader knows how many
 * bytes are left: at most remaining / 4D frames) the batches shrink by half,
 * down to the first batch's size, so that what the scorer has left to do
 * after the last read is a small batch, not a whole one: with whole batches
 * the last 32 MB batch's kernels (~1.9 ms of a 1M-frame UBM diag run on an
 * H200) came after everything else (bench/RESULTS.md D20). */
static void tail_target(pipeline *pl, int64_t remaining_bytes) {
  const int64_t left = remaining_bytes / (4 * (int64_t)(pl->D > 0 ? pl->D : 1)), low = first_target(pl->batch_frames);
  if (left >= 2 * (int64_t)pl->target) return;
  const int64_t t = left / 2 > low ? left / 2 : low;
  if (t < pl->target) pl->target = (int32_t)t;
}

/* The model of utterance key (0 with one model). */
static int32_t model_of(const pipeline *pl, const char *key) {
  if (!pl->sm->model_of) return 0;
  const int32_t i = pl->sm->model_of(pl->sm->ctx, key);
  if (i < 0 || i >= pl->sm->num_models)
    gh_die("internal: model index %d of utterance '%s' outside [0, %d)", i, key, pl->sm->num_models);
  return i;
}

static void *reader_main(void *arg) {
  pipeline *pl = arg;
  batch *bt = take_batch(pl);
  for (; !gh_seq_reader_done(pl->r); gh_seq_reader_next(pl->r)) {
    const char *key = gh_seq_reader_key(pl->r);
    const gh_matrix_view *feats = gh_seq_reader_value(pl->r); /* in place in the reader's buffer */
    check_dim(pl, key, feats->rows, feats->cols);
    const int32_t mi = model_of(pl, key);
    if (bt->n > 0 && bt->model != mi) { /* a batch holds one model's utterances */
      bt->t_laid = gh_seconds() - pl->t_start;
      push_full(pl, bt);
      bt = take_batch(pl);
    }
    bt->model = mi;
    float *dst = batch_add(pl, bt, key, feats->rows);
    gh_matrix_view_copy_finite(feats, dst, pl->feats_rspec, key); /* the one copy */
    bt->frames += feats->rows;
    pl->total_frames += feats->rows;
    ++pl->num_done;
    if (bt->frames >= pl->target) {
      next_target(pl);
      bt->t_laid = gh_seconds() - pl->t_start;
      push_full(pl, bt);
      bt = take_batch(pl);
    }
  }
  bt->t_laid = gh_seconds() - pl->t_start;
  if (bt->n > 0) push_full(pl, bt);
  else gh_queue_push(pl->free_b, bt);
  gh_queue_push(pl->full_b, NULL);
  return NULL;
}

/* ---- the parallel reader: plain binary archives (gh_ark_scan, table.h) ----
 * The reader thread scans keys and headers (no payload copy) and lays each
 * utterance out in the batch exactly as reader_main does; io_threads
 * workers pread the payloads straight into the batch, checked finite in the
 * same pass (gh_pread_floats_finite).  Payloads go out in jobs of about
 * 1 MB (several utterances, or a part of a long one): one hand-over per job,
 * not per utterance (a hand-over costs a thread wake-up).  A batch goes to
 * the scorer when its last job is done and every older batch has gone; the
 * first error in archive order is the one reported (the scanner waits for
 * the copies before it at a bad entry; workers record theirs in the batch). */
enum { JOB_SEGS = 32, JOB_FLOATS = 1 << 18 };
typedef struct {
  int u;             /* utterance index in the batch */
  const char *key;   /* bt->keys[u] (stable: the array may move, the string does not) */
  int64_t off, r0;   /* file offset of row r0; r0 for error messages */
  int32_t cols;
  size_t n;          /* floats */
  float *dst;
} copy_seg;
typedef struct {
  batch *bt;
  int nseg;
  size_t floats;
  copy_seg s[JOB_SEGS];
} copy_job;

/* With pl->mu held: pass every finished batch at the head of the order on
 * to the scorer, dying on the first one that failed. */
static void flush_order(pipeline *pl) {
  while (pl->norder > 0 && pl->order[0]->pending == 0) {
    batch *bt = pl->order[0];
    memmove(pl->order, pl->order + 1, --pl->norder * sizeof *pl->order);
    if (bt->err_u >= 0) gh_die("%s", bt->err);
    if (bt->n > 0) push_full(pl, bt);
    else gh_queue_push(pl->free_b, bt);
  }
  if (pl->norder == 0 && pl->eof_after) { pl->eof_after = 0; gh_queue_push(pl->full_b, NULL); }
}

/* One job (or the scanner's hold) of bt is done; err: its error line or NULL. */
static void batch_release(pipeline *pl, batch *bt, int u, const char *err) {
  pthread_mutex_lock(&pl->mu);
  if (err && (bt->err_u < 0 || u < bt->err_u)) {
    bt->err_u = u;
    snprintf(bt->err, sizeof bt->err, "%s", err);
  }
  if (--bt->pending == 0) flush_order(pl);
  if (bt->pending <= 1) pthread_cond_broadcast(&pl->cv);
  pthread_mutex_unlock(&pl->mu);
}

static void *copy_main(void *arg) {
  pipeline *pl = arg;
  const int fd = gh_ark_scan_fd(pl->sc);
  copy_job *j;
  while ((j = gh_queue_pop(pl->jobs)) != NULL) {
    char err[1024];
    int bad_u = -1;
    for (int i = 0; i < j->nseg && bad_u < 0; ++i) { /* the first error in the job is its earliest */
      const copy_seg *g = &j->s[i];
      size_t bad = 0;
      int rc = gh_pread_floats_finite(fd, g->off, g->dst, g->n, &bad);
      if (rc > 0) {
        float x = g->dst[bad];
        snprintf(err, sizeof err, "%s, key '%s': %s at row %lld, col %lld", pl->feats_rspec, g->key,
                 x != x ? "NaN" : "infinity", (long long)(g->r0 + (int64_t)(bad / g->cols)),
                 (long long)(bad % g->cols));
      } else if (rc < 0) {
        snprintf(err, sizeof err, "%s, key '%s', offset %lld: %s", pl->feats_rspec, g->key, (long long)g->off,
                 errno ? strerror(errno) : "unexpected end of file (the file shrank while it was read)");
      }
      if (rc) bad_u = g->u;
    }
    batch_release(pl, j->bt, bad_u, bad_u >= 0 ? err : NULL);
    free(j);
  }
  return NULL;
}

/* The scanner's job being filled (*cur) goes to the workers. */
static void job_submit(pipeline *pl, copy_job **cur) {
  if (!*cur) return;
  pthread_mutex_lock(&pl->mu);
  ++(*cur)->bt->pending;
  pthread_mutex_unlock(&pl->mu);
  gh_queue_push(pl->jobs, *cur);
  *cur = NULL;
}

/* The scanner waits until every copy before its next entry is done, and
 * dies with the first of their errors if there was one. */
static void drain(pipeline *pl, batch *bt, copy_job **cur) {
  job_submit(pl, cur);
  pthread_mutex_lock(&pl->mu);
  while (pl->norder > 1 || bt->pending > 1) pthread_cond_wait(&pl->cv, &pl->mu);
  if (bt->err_u >= 0) gh_die("%s", bt->err);
  pthread_mutex_unlock(&pl->mu);
}

/* A new batch joins the order, held by the scanner until it is full. */
static batch *batch_begin(pipeline *pl) {
  batch *bt = take_batch(pl);
  pthread_mutex_lock(&pl->mu);
  bt->pending = 1;
  bt->err_u = -1;
  pl->order[pl->norder++] = bt;
  pthread_mutex_unlock(&pl->mu);
  return bt;
}

static void *reader_par_main(void *arg) {
  pipeline *pl = arg;
  batch *bt = batch_begin(pl);
  copy_job *cur = NULL;
  gh_ark_entry e;
  while (gh_ark_scan_next(pl->sc, &e)) {
    const gh_matrix_view *v = NULL;
    if (e.offset < 0) { /* not a plain FM matrix, or a bad header: the sequential reader's code */
      drain(pl, bt, &cur);
      if (!(v = gh_ark_scan_decode(pl->sc, &e))) break;
    }
    if (e.rows > 0 && e.cols != pl->D) {
      drain(pl, bt, &cur); /* an earlier copy's error comes first */
      check_dim(pl, e.key, e.rows, e.cols);
    }
    const int32_t mi = model_of(pl, e.key);
    if (bt->n > 0 && bt->model != mi) { /* a batch holds one model's utterances */
      job_submit(pl, &cur);
      bt->t_laid = gh_seconds() - pl->t_start;
      batch_release(pl, bt, 0, NULL);
      bt = batch_begin(pl);
    }
    bt->model = mi;
    if (!batch_fits(pl, bt, e.rows)) drain(pl, bt, &cur); /* the copies into the old buffer, before it moves */
    const int u = bt->n;
    float *dst = batch_add(pl, bt, e.key, e.rows);
    if (v) gh_matrix_view_copy_finite(v, dst, pl->feats_rspec, e.key);
    else {
      const int64_t step = e.cols ? (JOB_FLOATS + e.cols - 1) / e.cols : 1; /* rows per segment */
      for (int64_t r0 = 0; r0 < e.rows; r0 += step) {
        const int64_t nr = e.rows - r0 < step ? e.rows - r0 : step;
        if (!cur) {
          cur = gh_malloc(sizeof *cur);
          cur->bt = bt;
          cur->nseg = 0;
          cur->floats = 0;
        }
        cur->s[cur->nseg++] = (copy_seg){u, bt->keys[u], e.offset + 4 * r0 * e.cols, r0, e.cols,
                                         (size_t)(nr * e.cols), dst + r0 * e.cols};
        cur->floats += (size_t)(nr * e.cols);
        if (cur->nseg == JOB_SEGS || cur->floats >= JOB_FLOATS) job_submit(pl, &cur);
      }
    }
    bt->frames += e.rows;
    pl->total_frames += e.rows;
    ++pl->num_done;
    if (bt->frames >= pl->target) {
      next_target(pl);
      tail_target(pl, gh_ark_scan_remaining(pl->sc));
      job_submit(pl, &cur);
      bt->t_laid = gh_seconds() - pl->t_start;
      batch_release(pl, bt, 0, NULL);
      bt = batch_begin(pl);
    }
  }
  job_submit(pl, &cur);
  bt->t_laid = gh_seconds() - pl->t_start;
  pthread_mutex_lock(&pl->mu);
  pl->eof_after = 1;
  pthread_mutex_unlock(&pl->mu);
  batch_release(pl, bt, 0, NULL); /* the last batch (an empty one goes back to free_b), then NULL */
  for (int i = 0; i < pl->io_threads; ++i) gh_queue_push(pl->jobs, NULL);
  return NULL;
}

/* The largest of r[0 .. n-1] (n >= 1); rows of >= 16 in eight independent
 * lanes (one compare chain ran at a fraction of the memory rate for
 * 5,000-pdf rows), shorter rows (a UBM's one column) in one. */
static float row_max(const float *r, int32_t n) {
  float best = r[0];
  int32_t p = 1;
  if (n >= 16) {
    float m[8];
    for (int k = 0; k < 8; ++k) m[k] = r[k];
    for (p = 8; p + 8 <= n; p += 8)
      for (int k = 0; k < 8; ++k) m[k] = r[p + k] > m[k] ? r[p + k] : m[k];
    for (int k = 0; k < 8; ++k) best = m[k] > best ? m[k] : best;
  }
  for (; p < n; ++p) best = r[p] > best ? r[p] : best;
  return best;
}

/* Writes one matrix per utterance of each scored batch, adds each frame's
 * best pdf log-likelihood to the total, and hands the buffers back. */
static void *writer_main(void *arg) {
  pipeline *pl = arg;
  const int32_t P = pl->P;
  batch *bt;
  float *best = NULL; /* [frames] each frame's largest loglike */
  int64_t cap = 0;
  while ((bt = timed_pop(pl, pl->done, &pl->wait_w)) != NULL) {
    const int64_t T = bt->frames;
    float *out = bt->out->p;
    if (T > cap) { cap = T; best = gh_realloc(best, (size_t)cap * sizeof(float)); }
    /* the maxima in parallel when there is much to read (2 GB for 100,000
     * frames x 5000 pdfs), summed in frame order: the same total every run */
#pragma omp parallel for schedule(static) if (T * P >= (1 << 22))
    for (int64_t t = 0; t < T; ++t) best[t] = row_max(out + t * P, P);
    for (int64_t t = 0; t < T; ++t) pl->best_sum += best[t];
    int64_t off = 0;
    for (int u = 0; u < bt->n; ++u) {
      gh_matrix view = {bt->rows[u], P, bt->rows[u] ? out + off * P : NULL};
      gh_loglikes_check(pl->feats_rspec, bt->keys[u], out + off * P, bt->rows[u], P, &pl->far_warned);
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
  free(best);
  return NULL;
}

/* The scorer waits for the oldest batch begun (the backend's loglikes_end),
 * passes it to the writer and, at --verbose=2, logs when it was read whole,
 * begun and ended (ms from the pipeline's start; a batch begun well after it
 * was read waited on the backend, one begun at once waited on the reader). */
static void end_batch(pipeline *pl, batch *bt, int64_t i) {
  const double t0 = gh_seconds();
  gh_backend_loglikes_end(pl->be);
  const double t1 = gh_seconds();
  pl->t_end += t1 - t0;
  gh_vlog(2, "batch %lld: %lld frames, taken at %.3f ms, laid out at %.3f, read at %.3f, begun at %.3f, ended at %.3f",
          (long long)i, (long long)bt->frames, 1e3 * bt->t_taken, 1e3 * bt->t_laid, 1e3 * bt->t_full,
          1e3 * bt->t_begun, 1e3 * (t1 - pl->t_start));
  gh_queue_push(pl->done, bt);
}


void gh_score_opts_default(gh_score_opts *o) {
  o->batch_frames = 0;
  o->io_threads = -1;
}

int64_t gh_score_pipeline_run(gh_backend *be, const gh_gmm_set *set, const char *feats_rspec,
                              const char *loglikes_wspec, const gh_score_opts *o, gh_score_stats *st) {
  const gh_score_models one = {1, set, NULL, NULL};
  return gh_score_pipeline_run_models(be, &one, feats_rspec, loglikes_wspec, o, st);
}

/* The models on the backend: two slots, one for the batch in flight and one
 * for the batch being begun (a third model waits for the older slot). */
typedef struct {
  int32_t idx[2];       /* model index, -1: empty */
  gh_dev_model *m[2];
} model_slots;

/* The device model of batch bt's model; busy: the model of the batch still
 * in flight (-1: none), whose slot stays. */
static gh_dev_model *slot_model(gh_backend *be, const gh_score_models *sm, model_slots *ms, int32_t want,
                                int32_t busy) {
  for (int i = 0; i < 2; ++i)
    if (ms->idx[i] == want) return ms->m[i];
  const int i = ms->idx[0] == busy ? 1 : 0;
  if (ms->m[i]) be->ops->gmm->model_free(be, ms->m[i]);
  ms->m[i] = be->ops->gmm->model_upload(be, &sm->models[want]);
  ms->idx[i] = want;
  return ms->m[i];
}

int64_t gh_score_pipeline_run_models(gh_backend *be, const gh_score_models *sm, const char *feats_rspec,
                                     const char *loglikes_wspec, const gh_score_opts *o, gh_score_stats *st) {
  if (sm->num_models < 1) gh_die("gh_score_pipeline_run_models: no models");
  const gh_gmm_set *set = &sm->models[0];
  const int32_t D = set->dim, P = set->num_pdfs;
  if (P <= 0) gh_die("gh_score_pipeline_run: model has no pdfs");
  for (int32_t i = 1; i < sm->num_models; ++i)
    if (sm->models[i].dim != D || sm->models[i].num_pdfs != P)
      gh_die("model %d has dimension %d and %d pdfs, model 0 has %d and %d: the models must be of one shape", i,
             sm->models[i].dim, sm->models[i].num_pdfs, D, P);
  int32_t batch_frames = o->batch_frames, io_threads = o->io_threads;
  if (batch_frames < 0) gh_die("--batch-frames must be >= 0 (got %d)", batch_frames);
  if (batch_frames == 0) {
    /* Few pdfs: input batches of ~32 MB (16384 to 262144 frames).  Many
     * pdfs: output batches of ~32 MB (1024 to 16384 frames), so that the
     * page-locked output buffers are few and small: page-locking runs at
     * ~3 GB/s (three 410 MB buffers took ~400 ms of a 0.65 s run at 5000
     * pdfs, bench/RESULTS.md D14), and a call of 1,677 frames x
     * 80,000 Gaussians still fills the GPU. */
    const int64_t in = (8 << 20) / (D > 0 ? D : 1), out = (8 << 20) / P;
    batch_frames = P <= 64 ? (in > 262144 ? 262144 : in < 16384 ? 16384 : (int32_t)in)
                           : (out > 16384 ? 16384 : out < 1024 ? 1024 : (int32_t)out);
  }
  model_slots ms = {{0, -1}, {NULL, NULL}};
  ms.m[0] = be->ops->gmm->model_upload(be, set);
  gh_dev_model *m = ms.m[0];

  pipeline pl;
  memset(&pl, 0, sizeof pl);
  if (io_threads < 0) {
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    io_threads = nc / 2 < 2 ? 2 : nc / 2 > 8 ? 8 : (int32_t)(nc / 2);
  }
  if (io_threads > 0) pl.sc = gh_ark_scan_open(feats_rspec); /* NULL: not a plain archive file */
  if (!pl.sc) pl.r = gh_seq_reader_open(feats_rspec, GH_OBJ_MATRIX_VIEW);
  pl.w = gh_writer_open(loglikes_wspec);
  pl.feats_rspec = feats_rspec;
  pl.be = be;
  pl.sm = sm;
  pl.D = D; pl.P = P; pl.batch_frames = batch_frames; pl.target = first_target(batch_frames);
  pl.free_b = gh_queue_new(NBATCH);
  pl.full_b = gh_queue_new(NBATCH + 1);
  pl.done = gh_queue_new(NBATCH + 1);
  batch batches[NBATCH];
  memset(batches, 0, sizeof batches);
  for (int i = 0; i < NBATCH; ++i) { /* input buffers sized once (page-locked allocation is slow) */
    batches[i].capX = 2 * (int64_t)batch_frames * D;
    batches[i].X = gh_backend_host_alloc(be, (size_t)batches[i].capX * sizeof(float));
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
  pthread_t reader, writer, copiers[64];
  if (pl.sc) {
    pl.io_threads = io_threads > 64 ? 64 : io_threads;
    pl.jobs = gh_queue_new(4 * pl.io_threads);
    if (pthread_mutex_init(&pl.mu, NULL) || pthread_cond_init(&pl.cv, NULL)) gh_die("cannot create a mutex");
  }
  /* The threads start before the set-up below and wait for the batches,
   * which go to free_b when the pipeline starts: started with it, the reader
   * took its first batch 0.6-1 ms into a 12 ms pipeline on the H200 host
   * (bench/RESULTS.md D20).  The reader first, then the copy threads. */
  if (pthread_create(&reader, NULL, pl.sc ? reader_par_main : reader_main, &pl))
    gh_die("cannot start the reader thread");
  for (int i = 0; i < pl.io_threads; ++i)
    if (pthread_create(&copiers[i], NULL, copy_main, &pl)) gh_die("cannot start the copy threads");
  if (pthread_create(&writer, NULL, writer_main, &pl)) gh_die("cannot start the writer thread");
  /* The backend's one-time set-up (CUDA: the cuBLAS context, the loading
   * of the scoring kernels at their first launch) on one zero frame before
   * the pipeline starts, logged apart: frames/s is the streaming rate */
  double t_setup = gh_seconds();
  {
    float *x0 = gh_calloc((size_t)D > 0 ? (size_t)D : 1, sizeof(float)), *o0 = gh_malloc((size_t)P * sizeof(float));
    be->ops->gmm->loglikes(be, m, x0, 1, o0);
    free(x0);
    free(o0);
    be->kernel_seconds = be->upload_seconds = 0;
  }
  t_setup = gh_seconds() - t_setup;
  const double t_start = pl.t_start = gh_seconds();
  for (int i = 0; i < NBATCH; ++i) gh_queue_push(pl.free_b, &batches[i]); /* the reader starts */

  batch *bt, *prev = NULL; /* prev: begun, not ended */
  int64_t nb = 0;          /* batches ended */
  while ((bt = timed_pop(&pl, pl.full_b, &pl.wait_s)) != NULL) {
    outbuf *ob = timed_pop(&pl, pl.free_o, &pl.wait_s);
    if (bt->frames * P > ob->cap) { /* once, to a full batch: page-locking hundreds of MB takes tens of ms */
      const int64_t full = (int64_t)batch_frames + batch_frames / 4;
      gh_backend_host_free(be, ob->p);
      ob->cap = (bt->frames > full ? bt->frames : full) * P;
      ob->p = gh_backend_host_alloc(be, (size_t)ob->cap * sizeof(float));
    }
    double t0 = gh_seconds();
    bt->t_begun = t0 - t_start;
    gh_dev_model *bm = slot_model(be, sm, &ms, bt->model, prev ? prev->model : -1);
    gh_backend_loglikes_begin(be, bm, bt->X, (int32_t)bt->frames, ob->p);
    pl.t_begin += gh_seconds() - t0;
    bt->out = ob;
    if (prev) end_batch(&pl, prev, nb++);
    prev = bt;
  }
  if (prev) end_batch(&pl, prev, nb++);
  gh_queue_push(pl.done, NULL);
  pthread_join(reader, NULL);
  pthread_join(writer, NULL);
  for (int i = 0; i < pl.io_threads; ++i) pthread_join(copiers[i], NULL);
  if (pl.sc) {
    gh_ark_scan_close(pl.sc);
    gh_queue_free(pl.jobs);
    pthread_mutex_destroy(&pl.mu);
    pthread_cond_destroy(&pl.cv);
  }
  gh_seq_reader_close(pl.r);
  gh_writer_close(pl.w);
  const double secs = gh_seconds() - t_start;
  if (st) {
    st->num_done = pl.num_done;
    st->total_frames = pl.total_frames;
    st->best_sum = pl.best_sum;
    st->seconds = secs;
    st->setup_seconds = t_setup;
    st->parallel_reader = pl.sc != NULL;
    st->io_threads = pl.io_threads;
    st->wait_reader = pl.wait_r;
    st->wait_scorer = pl.wait_s;
    st->wait_writer = pl.wait_w;
    st->t_begin = pl.t_begin;
    st->t_end = pl.t_end;
  }
  for (int i = 0; i < NOUT; ++i) gh_backend_host_free(be, outs[i].p);
  for (int i = 0; i < 2; ++i)
    if (ms.m[i]) be->ops->gmm->model_free(be, ms.m[i]);
  for (int i = 0; i < NBATCH; ++i) { free(batches[i].keys); free(batches[i].rows); gh_backend_host_free(be, batches[i].X); }
  gh_queue_free(pl.free_b); gh_queue_free(pl.full_b); gh_queue_free(pl.done); gh_queue_free(pl.free_o);
  return pl.num_done;
}
