/* align-report.c -- the aligner's per-utterance failure report (align-report.h). */
#include "decoder/align-report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "io/kaldi-io.h"

static const char *const names[GH_ALIGN_NUM_REASONS] = {"no-features", "no-graph", "too-few-frames", "no-path",
                                                          "beam"};

const char *gh_align_failure_name(gh_align_failure why) {
  return why >= 0 && why < GH_ALIGN_NUM_REASONS ? names[why] : "unknown";
}

struct gh_align_report {
  gh_ostream *out;
  int64_t done, count[GH_ALIGN_NUM_REASONS];
};

gh_align_report *gh_align_report_open(const char *wx) {
  gh_align_report *r = gh_calloc(1, sizeof *r);
  if (wx && wx[0]) r->out = gh_ostream_open(wx);
  return r;
}

void gh_align_report_ok(gh_align_report *r) { r->done++; }

void gh_align_report_fail(gh_align_report *r, const char *key, gh_align_failure why, const char *fmt, ...) {
  char detail[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  for (char *p = detail; *p; ++p)
    if (*p == '\n') *p = ' ';
  const char *name = gh_align_failure_name(why);
  gh_warn("Failed to align utterance %s: %s%s%s", key, name, detail[0] ? ": " : "", detail);
  if (why >= 0 && why < GH_ALIGN_NUM_REASONS) r->count[why]++;
  if (r->out) {
    FILE *fp = gh_ostream_fp(r->out);
    fprintf(fp, "%s %s%s%s\n", key, name, detail[0] ? " " : "", detail);
    gh_ostream_check(r->out, key);
  }
}

int64_t gh_align_report_num_failed(const gh_align_report *r) {
  int64_t n = 0;
  for (int i = 0; i < GH_ALIGN_NUM_REASONS; ++i) n += r->count[i];
  return n;
}

int64_t gh_align_report_num_done(const gh_align_report *r) { return r->done; }

void gh_align_report_close(gh_align_report *r) {
  const int64_t failed = gh_align_report_num_failed(r);
  gh_log("Aligned %lld of %lld utterances; failed %lld: %s %lld, %s %lld, %s %lld, %s %lld, %s %lld",
         (long long)r->done, (long long)(r->done + failed), (long long)failed, names[0], (long long)r->count[0],
         names[1], (long long)r->count[1], names[2], (long long)r->count[2], names[3], (long long)r->count[3],
         names[4], (long long)r->count[4]);
  if (r->out) gh_ostream_close(r->out);
  free(r);
}

/* 0-1 breadth-first search: an emitting arc costs one frame, an epsilon arc none */
int32_t gh_dec_graph_min_frames(const gh_dec_graph *g) {
  if (g->start < 0 || g->num_states <= 0) return -1;
  const int64_t S = g->num_states, cap = g->num_arcs + 2;
  int32_t *dist = gh_malloc((size_t)S * sizeof(int32_t));
  unsigned char *done = gh_calloc((size_t)S, 1);
  int32_t *dq = gh_malloc((size_t)cap * sizeof(int32_t));
  for (int64_t s = 0; s < S; ++s) dist[s] = INT32_MAX;
  int64_t head = 0, size = 0;
  dist[g->start] = 0;
  dq[0] = g->start;
  size = 1;
  int32_t best = -1;
  while (size > 0) {
    const int32_t s = dq[head];
    head = (head + 1) % cap;
    size--;
    if (done[s]) continue;
    done[s] = 1;
    if (isfinite(g->final[s])) { /* popped in order of distance: the first final state is the nearest */
      best = dist[s];
      break;
    }
    for (int64_t a = g->arc_start[s]; a < g->arc_start[s + 1]; ++a) {
      const gh_dec_arc *arc = &g->arcs[a];
      if (!isfinite(arc->weight) || arc->next < 0 || arc->next >= S || done[arc->next]) continue;
      const int32_t w = arc->ilabel != 0, nd = dist[s] + w;
      if (nd >= dist[arc->next]) continue;
      dist[arc->next] = nd;
      if (w == 0) { /* front */
        head = (head - 1 + cap) % cap;
        dq[head] = arc->next;
      } else {
        dq[(head + size) % cap] = arc->next;
      }
      size++;
    }
  }
  free(dist);
  free(done);
  free(dq);
  return best;
}

gh_align_failure gh_align_diagnose(const gh_dec_graph *g, int32_t T, int exact_reached, int32_t *min) {
  const int32_t m = gh_dec_graph_min_frames(g);
  if (min) *min = m;
  if (m < 0) return GH_ALIGN_NO_PATH;
  if (T < m) return GH_ALIGN_TOO_FEW_FRAMES;
  return exact_reached ? GH_ALIGN_BEAM : GH_ALIGN_NO_PATH;
}
