/* bench-read.c -- the archive reader alone (bench/RESULTS.md B12): what
 * gmm-score-gpu's reader thread does, without the scoring and writing
 * threads: read a feature rspecifier sequentially and copy every matrix,
 * checked finite, into a batch buffer of --batch-frames rows (reused round
 * robin, as the tool's batches are).
 *   build/bench/bench-read [--obj=view|matrix|scan] [--threads=N] [--reps=5] [--batch-frames=16384] RSPECIFIER
 * --obj=view: GH_OBJ_MATRIX_VIEW + gh_matrix_view_copy_finite (the tool's
 * sequential path); --obj=matrix: GH_OBJ_MATRIX (a malloc'd matrix per
 * utterance) + the same copy; --obj=scan: the tool's parallel path for
 * plain archive files (gh_ark_scan: this thread scans keys and headers,
 * --threads=N threads (default 2) pread the payloads, jobs of about 1 MB, into
 * the buffer with gh_pread_floats_finite; --threads=0: this thread
 * preads too, the path's single-thread rate).  Prints one line per repetition:
 *   read <obj>: <s> s, <M> M frames/s, <GB/s> GB/s of matrix data
 * (scan: "read scan N threads: ...").
 */
#include "bench-args.h"
#include "base/gh-base.h"
#include "base/queue.h"
#include "io/table.h"

#include <pthread.h>
#include <stdio.h>

enum { JOB_SEGS = 32, JOB_FLOATS = 1 << 18 }; /* as gmm-score-gpu's jobs: about 1 MB, one hand-over each */
typedef struct { int64_t off; float *dst; size_t n; } seg;
typedef struct { int nseg; size_t floats; seg s[JOB_SEGS]; } job;
typedef struct { gh_queue *q; int fd; const char *spec; } pool;

static void *copier(void *arg) {
  pool *p = arg;
  job *j;
  while ((j = gh_queue_pop(p->q)) != NULL) {
    size_t bad;
    for (int i = 0; i < j->nseg; ++i)
      if (gh_pread_floats_finite(p->fd, j->s[i].off, j->s[i].dst, j->s[i].n, &bad))
        gh_die("%s: offset %lld: not finite or a short read", p->spec, (long long)j->s[i].off);
    free(j);
  }
  return NULL;
}

/* One pass of the parallel path; returns frames, *bytes the matrix bytes. */
static int64_t scan_pass(const char *rspec, int threads, float **X, int64_t *capX, int64_t batch_frames,
                         int64_t *bytes) {
  gh_ark_scan *sc = gh_ark_scan_open(rspec);
  if (!sc) gh_die("%s: not a plain binary archive file (--obj=scan)", rspec);
  pool p = {gh_queue_new(threads ? 4 * threads : 1), gh_ark_scan_fd(sc), rspec};
  pthread_t th[64];
  for (int i = 0; i < threads; ++i) pthread_create(&th[i], NULL, copier, &p);
  int64_t frames = 0, off = 0;
  job *cur = NULL;
  gh_ark_entry e;
  while (gh_ark_scan_next(sc, &e)) {
    const gh_matrix_view *v = e.offset < 0 ? gh_ark_scan_decode(sc, &e) : NULL;
    if (e.offset < 0 && !v) break;
    int64_t n = (int64_t)e.rows * e.cols;
    if (!*X || n > *capX) { /* (a bench: grown only before the first pass's jobs are queued) */
      *capX = n > 2 * batch_frames * e.cols ? n : 2 * batch_frames * e.cols;
      free(*X);
      *X = gh_malloc((size_t)*capX * sizeof(float) + 1);
      off = 0;
    }
    if (off + n > *capX) off = 0;
    size_t bad;
    if (v) gh_matrix_view_copy_finite(v, *X + off, rspec, e.key);
    else if (threads == 0) { /* inline: the path's single-thread rate, no hand-over */
      if (gh_pread_floats_finite(p.fd, e.offset, *X + off, (size_t)n, &bad))
        gh_die("%s: key %s: not finite or a short read", rspec, e.key);
    } else
      for (int64_t i = 0; i < n; i += JOB_FLOATS) {
        const size_t m = (size_t)(n - i < JOB_FLOATS ? n - i : JOB_FLOATS);
        if (!cur) { cur = gh_malloc(sizeof *cur); cur->nseg = 0; cur->floats = 0; }
        cur->s[cur->nseg++] = (seg){e.offset + 4 * i, *X + off + i, m};
        if (cur->nseg == JOB_SEGS || (cur->floats += m) >= JOB_FLOATS) { gh_queue_push(p.q, cur); cur = NULL; }
      }
    off += n;
    frames += e.rows;
    *bytes += n * (int64_t)sizeof(float);
  }
  if (cur) gh_queue_push(p.q, cur);
  for (int i = 0; i < threads; ++i) gh_queue_push(p.q, NULL);
  for (int i = 0; i < threads; ++i) pthread_join(th[i], NULL);
  gh_queue_free(p.q);
  gh_ark_scan_close(sc);
  return frames;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *obj = sarg(argc, argv, "--obj", "view"), *rspec = argc > 1 ? argv[argc - 1] : "";
  const int reps = (int)arg(argc, argv, "--reps", 5), threads = (int)arg(argc, argv, "--threads", 2);
  const int64_t batch_frames = arg(argc, argv, "--batch-frames", 16384);
  const int view = strcmp(obj, "view") == 0, scan = strcmp(obj, "scan") == 0;
  if (!gh_is_rspecifier(rspec) || (!view && !scan && strcmp(obj, "matrix") != 0) || batch_frames < 1 ||
      threads < 0 || threads > 64)
    gh_die("usage: bench-read [--obj=view|matrix|scan] [--threads=0..64] [--reps=N] [--batch-frames=N] RSPECIFIER");
  float *X = NULL;
  int64_t capX = 0;
  if (scan) { /* size the buffer once, outside the timing (the tool's batches are sized once too) */
    int64_t b = 0;
    scan_pass(rspec, threads, &X, &capX, batch_frames, &b);
  }
  for (int rep = 0; rep < reps; ++rep) {
    double t0 = gh_seconds();
    int64_t frames = 0, bytes = 0, off = 0; /* off: floats used in X */
    if (scan) frames = scan_pass(rspec, threads, &X, &capX, batch_frames, &bytes);
    else {
      gh_seq_reader *r = gh_seq_reader_open(rspec, view ? GH_OBJ_MATRIX_VIEW : GH_OBJ_MATRIX);
      for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
        gh_matrix_view v;
        if (view) v = *(const gh_matrix_view *)gh_seq_reader_value(r);
        else {
          const gh_matrix *m = gh_seq_reader_value(r);
          v = (gh_matrix_view){m->rows, m->cols, m->data};
        }
        int64_t n = (int64_t)v.rows * v.cols;
        if (!X || n > capX) { /* sized once for a batch, as the tool's page-locked batches */
          capX = n > 2 * batch_frames * v.cols ? n : 2 * batch_frames * v.cols;
          free(X);
          X = gh_malloc((size_t)capX * sizeof(float) + 1);
          off = 0;
        }
        if (off + n > capX) off = 0;
        gh_matrix_view_copy_finite(&v, X + off, rspec, gh_seq_reader_key(r));
        off += n;
        frames += v.rows;
        bytes += n * (int64_t)sizeof(float);
      }
      gh_seq_reader_close(r);
    }
    double t = gh_seconds() - t0;
    char name[64];
    if (scan) snprintf(name, sizeof name, "scan %d threads", threads);
    else snprintf(name, sizeof name, "%s", obj);
    printf("read %s: %.3f s, %.2f M frames/s, %.2f GB/s of matrix data\n", name, t, frames / t / 1e6,
           bytes / t / 1e9);
  }
  free(X);
  return 0;
}
