/* hmm.c -- HMM sets: I/O, topologies, compilation to kernel graphs,
 * transition accumulators and re-estimation.  See hmm.h, doc/hmm.md and
 * doc/format.md ("HMM sets"). */
#include "hmm/hmm.h"
#include "base/queue.h"
#include "base/gh-base.h"
#include "io/model-write.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- basics ---------------- */

void gh_hmm_free(gh_hmm *h) {
  if (!h) return;
  if (h->word)
    for (int32_t j = 0; j < h->num_states; ++j) free(h->word[j]);
  free(h->word);
  free(h->name); free(h->pdf); free(h->init); free(h->final); free(h->arcs);
  memset(h, 0, sizeof *h);
}

void gh_hmm_set_free(gh_hmm_set *s) {
  if (!s) return;
  for (int32_t i = 0; i < s->num_hmms; ++i) gh_hmm_free(&s->hmms[i]);
  free(s->hmms);
  memset(s, 0, sizeof *s);
}

void gh_hmm_set_add(gh_hmm_set *s, gh_hmm *h) {
  s->hmms = gh_realloc(s->hmms, (s->num_hmms + 1) * sizeof(gh_hmm));
  s->hmms[s->num_hmms++] = *h;
  memset(h, 0, sizeof *h);
}

int32_t gh_hmm_set_find(const gh_hmm_set *s, const char *name) {
  for (int32_t i = 0; i < s->num_hmms; ++i)
    if (!strcmp(s->hmms[i].name, name)) return i;
  return -1;
}

int32_t gh_hmm_set_num_pdfs(const gh_hmm_set *s) {
  int32_t m = -1;
  for (int32_t i = 0; i < s->num_hmms; ++i)
    for (int32_t j = 0; j < s->hmms[i].num_states; ++j)
      if (s->hmms[i].pdf[j] > m) m = s->hmms[i].pdf[j];
  return m + 1;
}

static void hmm_alloc(gh_hmm *h, const char *name, int32_t S, int32_t A) {
  memset(h, 0, sizeof *h);
  h->name = gh_strdup(name);
  h->num_states = S;
  h->num_arcs = A;
  h->pdf = gh_calloc(S > 0 ? S : 1, sizeof(int32_t));
  h->init = gh_malloc((S > 0 ? S : 1) * sizeof(float));
  h->final = gh_malloc((S > 0 ? S : 1) * sizeof(float));
  for (int32_t j = 0; j < S; ++j) h->init[j] = h->final[j] = -INFINITY;
  h->arcs = gh_calloc(A > 0 ? A : 1, sizeof(gh_hmm_arc));
}

static int cmp64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

static int bad_logp(float v) { return isnan(v) || v > 1e-3f; }

int gh_hmm_check(const gh_hmm *h) {
  int32_t S = h->num_states, A = h->num_arcs;
  if (S < 1) { gh_set_error("has %d states (need >= 1)", S); return -1; }
  if (A < 0) { gh_set_error("has %d arcs", A); return -1; }
  int any_init = 0, any_final = 0;
  for (int32_t j = 0; j < S; ++j) {
    if (h->pdf[j] < 0) { gh_set_error("state %d has pdf id %d (must be >= 0)", j, h->pdf[j]); return -1; }
    if (bad_logp(h->init[j])) { gh_set_error("state %d: bad initial log-probability %g", j, h->init[j]); return -1; }
    if (bad_logp(h->final[j])) { gh_set_error("state %d: bad final log-probability %g", j, h->final[j]); return -1; }
    any_init |= h->init[j] > -INFINITY;
    any_final |= h->final[j] > -INFINITY;
  }
  if (!any_init) { gh_set_error("no state has an initial probability"); return -1; }
  if (!any_final) { gh_set_error("no state has a final probability"); return -1; }
  /* arcs: range, values, duplicates (sort a copy by (from, to)) */
  int64_t *key = gh_malloc((A > 0 ? A : 1) * sizeof(int64_t));
  for (int32_t a = 0; a < A; ++a) {
    const gh_hmm_arc *r = &h->arcs[a];
    if (r->from < 0 || r->from >= S || r->to < 0 || r->to >= S) {
      gh_set_error("arc %d (%d -> %d) refers to a state outside 0..%d", a, r->from, r->to, S - 1);
      free(key);
      return -1;
    }
    if (bad_logp(r->logp)) {
      gh_set_error("arc %d (%d -> %d): bad log-probability %g", a, r->from, r->to, r->logp);
      free(key);
      return -1;
    }
    key[a] = (int64_t)r->from * S + r->to;
  }
  /* Probability mass: out of every state (arcs + a competing exit), and into the HMM
   * (initial), at most 1 within GH_HMM_SUM_TOL (float log-probabilities
   * round); less than 1 is allowed (word penalties, pruned arcs). */
  {
    double *out = gh_calloc(S, sizeof(double)), init_sum = 0;
    /* f_j = 0 is Rabiner's "no exit" (doc/hmm.md): only -inf < f_j < 0 competes with the arcs. */
    for (int32_t j = 0; j < S; ++j) {
      out[j] = h->final[j] < 0 ? exp((double)h->final[j]) : 0.0;
      init_sum += exp((double)h->init[j]);
    }
    for (int32_t a = 0; a < A; ++a) out[h->arcs[a].from] += exp((double)h->arcs[a].logp);
    for (int32_t j = 0; j < S; ++j)
      if (out[j] > 1.0 + GH_HMM_SUM_TOL) {
        gh_set_error("state %d: outgoing probabilities (arcs + exit) sum to %.6g, more than 1", j, out[j]);
        free(out);
        free(key);
        return -1;
      }
    free(out);
    if (init_sum > 1.0 + GH_HMM_SUM_TOL) {
      gh_set_error("initial probabilities sum to %.6g, more than 1", init_sum);
      free(key);
      return -1;
    }
  }
  qsort(key, A, sizeof(int64_t), cmp64);
  for (int32_t a = 1; a < A; ++a)
    if (key[a] == key[a - 1]) {
      gh_set_error("duplicate arc %d -> %d", (int)(key[a] / S), (int)(key[a] % S));
      free(key);
      return -1;
    }
  free(key);
  /* co-accessibility: states that can reach a final state, by backward
   * fixpoint over the arcs (with probability > 0). */
  char *ok = gh_calloc(S, 1);
  for (int32_t j = 0; j < S; ++j) ok[j] = h->final[j] > -INFINITY;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int32_t a = 0; a < A; ++a)
      if (!ok[h->arcs[a].from] && ok[h->arcs[a].to] && h->arcs[a].logp > -INFINITY) {
        ok[h->arcs[a].from] = 1;
        changed = 1;
      }
  }
  for (int32_t j = 0; j < S; ++j)
    if (!ok[j]) {
      gh_set_error("state %d cannot reach the end (no path from it to a state with a final probability)", j);
      free(ok);
      return -1;
    }
  free(ok);
  return 0;
}

/* ---------------- file I/O ---------------- */

static gh_hmm read_hmm(gh_istream *in, int binary) {
  gh_hmm h;
  gh_expect_token(in, binary, "<Hmm>");
  char *name = gh_strdup(gh_read_token(in, binary));
  if (name[0] == '<') gh_istream_fail(in, "expected an HMM name after <Hmm>, got '%s'", gh_printable_token(name));
  gh_expect_token(in, binary, "<NumStates>");
  int32_t S = gh_read_int32(in, binary);
  if (S < 1 || S > 100000000) gh_istream_fail(in, "HMM '%s': bad <NumStates> %d", name, S);
  gh_expect_token(in, binary, "<PdfIds>");
  int32_t n = 0;
  int32_t *pdf = gh_read_int32_vector_basic(in, binary, &n);
  if (n != S) gh_istream_fail(in, "HMM '%s': <PdfIds> has %d entries, expected %d", name, n, S);
  gh_expect_token(in, binary, "<InitLogProbs>");
  gh_vector v = {0, NULL};
  gh_read_vector(in, binary, &v);
  if (v.dim != S) gh_istream_fail(in, "HMM '%s': <InitLogProbs> has %d entries, expected %d", name, v.dim, S);
  gh_expect_token(in, binary, "<Arcs>");
  int32_t A = gh_read_int32(in, binary);
  if (A < 0 || A > 1000000000) gh_istream_fail(in, "HMM '%s': bad arc count %d", name, A);
  gh_istream_need(in, (uint64_t)A, binary ? 15 : 6, "<Arcs>");
  hmm_alloc(&h, name, S, A);
  free(name);
  memcpy(h.pdf, pdf, S * sizeof(int32_t));
  free(pdf);
  memcpy(h.init, v.data, S * sizeof(float));
  for (int32_t a = 0; a < A; ++a) {
    h.arcs[a].from = gh_read_int32(in, binary);
    h.arcs[a].to = gh_read_int32(in, binary);
    h.arcs[a].logp = gh_read_float(in, binary);
  }
  gh_expect_token(in, binary, "<FinalLogProbs>");
  gh_read_vector(in, binary, &v);
  if (v.dim != S) gh_istream_fail(in, "HMM '%s': <FinalLogProbs> has %d entries, expected %d", h.name, v.dim, S);
  memcpy(h.final, v.data, S * sizeof(float));
  gh_vector_free(&v);
  const char *tok = gh_read_token(in, binary);
  if (!strcmp(tok, "<Words>")) {
    h.word = gh_calloc(S, sizeof(char *));
    for (int32_t j = 0; j < S; ++j) {
      tok = gh_read_token(in, binary);
      if (strcmp(tok, "<eps>")) h.word[j] = gh_strdup(tok);
    }
    tok = gh_read_token(in, binary);
  }
  if (strcmp(tok, "</Hmm>")) gh_istream_fail(in, "HMM '%s': expected </Hmm>, got '%s'", h.name, gh_printable_token(tok));
  if (gh_hmm_check(&h) != 0) gh_istream_fail(in, "HMM '%s': %s", h.name, gh_last_error());
  return h;
}

void gh_hmm_set_read_stream(gh_istream *in, int binary, gh_hmm_set *s) {
  memset(s, 0, sizeof *s);
  const char *tok = gh_read_token(in, binary);
  if (strcmp(tok, "<HmmSet>"))
    gh_istream_fail_type(in, "an HMM set", "<HmmSet>", tok, "hmm-viterbi words.hmm ark:loglikes.ark ark:ali.ark");
  gh_expect_token(in, binary, "<NumHmms>");
  int32_t N = gh_read_int32(in, binary);
  if (N < 1 || N > 10000000) gh_istream_fail(in, "bad <NumHmms> %d", N);
  for (int32_t i = 0; i < N; ++i) {
    gh_hmm h = read_hmm(in, binary);
    if (gh_hmm_set_find(s, h.name) >= 0) gh_istream_fail(in, "duplicate HMM name '%s'", h.name);
    gh_hmm_set_add(s, &h);
  }
  gh_expect_token(in, binary, "</HmmSet>");
}

void gh_hmm_set_read(const char *rx, gh_hmm_set *s) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("cannot open HMM file %s: %s%s", rx, gh_last_error(), gh_rspecifier_hint(rx));
  int binary = gh_read_binary_marker(in);
  gh_hmm_set_read_stream(in, binary, s);
  gh_skip_ws(in);
  if (gh_istream_peek(in) >= 0) gh_warn("%s: trailing data after </HmmSet> ignored", rx);
  gh_istream_close(in);
}

static void nl(gh_ostream *out, int binary) {
  if (!binary) fputc('\n', gh_ostream_fp(out));
}

void gh_hmm_set_write(const char *wx, int binary, const gh_hmm_set *s) {
  gh_ostream *out = gh_ostream_open(wx);
  gh_write_binary_marker(out, binary);
  gh_write_token(out, binary, "<HmmSet>");
  gh_write_token(out, binary, "<NumHmms>");
  gh_write_int32(out, binary, s->num_hmms);
  nl(out, binary);
  for (int32_t i = 0; i < s->num_hmms; ++i) {
    const gh_hmm *h = &s->hmms[i];
    gh_write_token(out, binary, "<Hmm>");
    gh_write_token(out, binary, h->name);
    gh_write_token(out, binary, "<NumStates>");
    gh_write_int32(out, binary, h->num_states);
    nl(out, binary);
    gh_write_token(out, binary, "<PdfIds>");
    gh_write_int32_vector_basic(out, binary, h->pdf, h->num_states);
    gh_write_token(out, binary, "<InitLogProbs>");
    gh_model_write_vector(out, binary, h->num_states, h->init);
    gh_write_token(out, binary, "<Arcs>");
    gh_write_int32(out, binary, h->num_arcs);
    nl(out, binary);
    for (int32_t a = 0; a < h->num_arcs; ++a) {
      gh_write_int32(out, binary, h->arcs[a].from);
      gh_write_int32(out, binary, h->arcs[a].to);
      gh_model_write_float(out, binary, h->arcs[a].logp);
      nl(out, binary);
    }
    gh_write_token(out, binary, "<FinalLogProbs>");
    gh_model_write_vector(out, binary, h->num_states, h->final);
    if (h->word) {
      gh_write_token(out, binary, "<Words>");
      for (int32_t j = 0; j < h->num_states; ++j) gh_write_token(out, binary, h->word[j] ? h->word[j] : "<eps>");
      nl(out, binary);
    }
    gh_write_token(out, binary, "</Hmm>");
    nl(out, binary);
  }
  gh_write_token(out, binary, "</HmmSet>");
  nl(out, binary);
  gh_ostream_close(out);
}

/* ---------------- topologies ---------------- */

void gh_hmm_left_to_right(gh_hmm *h, const char *name, int32_t S, const int32_t *pdfs, double self_loop,
                          double skip) {
  if (S < 1) gh_die("left-to-right HMM '%s': %d states", name, S);
  if (!(self_loop > 0 && self_loop < 1)) gh_die("self-loop probability must be in (0, 1), got %g", self_loop);
  if (!(skip >= 0 && skip < 1)) gh_die("skip probability must be in [0, 1), got %g", skip);
  int32_t A = 0;
  for (int32_t k = 0; k < S; ++k) A += 1 + (k + 1 < S) + (skip > 0 && k + 2 < S);
  hmm_alloc(h, name, S, A);
  memcpy(h->pdf, pdfs, S * sizeof(int32_t));
  h->init[0] = 0.0f;
  int32_t a = 0;
  for (int32_t k = 0; k < S; ++k) {
    double out = 1.0 - self_loop, sk = (skip > 0 && k + 2 < S) ? skip : 0.0;
    h->arcs[a++] = (gh_hmm_arc){k, k, (float)log(self_loop)};
    if (k + 1 < S) h->arcs[a++] = (gh_hmm_arc){k, k + 1, (float)log(out * (1 - sk))};
    if (sk > 0) h->arcs[a++] = (gh_hmm_arc){k, k + 2, (float)log(out * sk)};
  }
  h->final[S - 1] = (float)log(1.0 - self_loop);
}

void gh_hmm_ergodic(gh_hmm *h, const char *name, int32_t S, const int32_t *pdfs) {
  if (S < 1 || S > 46340) gh_die("ergodic HMM '%s': %d states (need 1..46340)", name, S);
  hmm_alloc(h, name, S, S * S);
  memcpy(h->pdf, pdfs, S * sizeof(int32_t));
  float u = (float)-log((double)S);
  int32_t a = 0;
  for (int32_t i = 0; i < S; ++i) {
    h->init[i] = u;
    h->final[i] = 0.0f;
    for (int32_t j = 0; j < S; ++j) h->arcs[a++] = (gh_hmm_arc){i, j, u};
  }
}

void gh_hmm_silence(gh_hmm *h, const char *name, int32_t S, const int32_t *pdfs, double self_loop) {
  if (S < 3) gh_die("silence HMM '%s': the ergodic silence topology needs >= 3 states, got %d", name, S);
  if (!(self_loop > 0 && self_loop < 1)) gh_die("self-loop probability must be in (0, 1), got %g", self_loop);
  /* state 0 -> 0..S-2, inner states 1..S-2 -> 1..S-1, last -> itself + exit */
  int32_t A = (S - 1) + (S - 2) * (S - 1) + 1;
  hmm_alloc(h, name, S, A);
  memcpy(h->pdf, pdfs, S * sizeof(int32_t));
  h->init[0] = 0.0f;
  float u = (float)-log((double)(S - 1));
  int32_t a = 0;
  for (int32_t j = 0; j <= S - 2; ++j) h->arcs[a++] = (gh_hmm_arc){0, j, u};
  for (int32_t i = 1; i <= S - 2; ++i)
    for (int32_t j = 1; j <= S - 1; ++j) h->arcs[a++] = (gh_hmm_arc){i, j, u};
  h->arcs[a++] = (gh_hmm_arc){S - 1, S - 1, (float)log(self_loop)};
  h->final[S - 1] = (float)log(1.0 - self_loop);
}

void gh_hmm_word_loop(gh_hmm *h, const char *name, const gh_hmm_set *s, const int32_t *ids, int32_t n,
                      int32_t sil) {
  gh_hmm_word_loop_sil(h, name, s, ids, n, sil, -1.0);
}

void gh_hmm_word_loop_sil(gh_hmm *h, const char *name, const gh_hmm_set *s, const int32_t *ids, int32_t n,
                          int32_t sil, double sil_prob) {
  if (sil_prob >= 0 && !(sil_prob <= 1)) gh_die("word loop '%s': silence probability %g is not in [0, 1]", name, sil_prob);
  if (sil < 0) sil_prob = -1.0;
  int32_t m = n + (sil >= 0), S = 0, A = 0;
  int32_t *hid = gh_malloc((m > 0 ? m : 1) * sizeof(int32_t)), *off = gh_malloc((m + 1) * sizeof(int32_t));
  for (int32_t k = 0; k < n; ++k) hid[k] = ids[k];
  if (sil >= 0) hid[n] = sil;
  if (m < 1) gh_die("word loop '%s': no words", name);
  for (int32_t k = 0; k < m; ++k) {
    if (hid[k] < 0 || hid[k] >= s->num_hmms) gh_die("word loop '%s': bad HMM index %d", name, hid[k]);
    off[k] = S;
    S += s->hmms[hid[k]].num_states;
    A += s->hmms[hid[k]].num_arcs;
  }
  off[m] = S;
  /* loop-back arcs: every exiting state to every entry state */
  int32_t nexit = 0, nentry = 0;
  for (int32_t k = 0; k < m; ++k) {
    const gh_hmm *w = &s->hmms[hid[k]];
    for (int32_t j = 0; j < w->num_states; ++j) {
      nexit += w->final[j] > -INFINITY;
      nentry += w->init[j] > -INFINITY;
    }
  }
  A += nexit * nentry;
  hmm_alloc(h, name, S, A);
  h->word = gh_calloc(S, sizeof(char *));
  double share = -log((double)m), endshare = -log((double)m + 1);
  /* sil_prob >= 0: leaving a word goes to the silence with sil_prob, to
   * each word and to the end with (1 - sil_prob) / (n + 1). */
  double to_sil = sil_prob >= 0 ? log(sil_prob) : endshare;
  double to_other = sil_prob >= 0 ? log1p(-sil_prob) - log((double)n + 1) : endshare;
  int32_t a = 0;
  for (int32_t k = 0; k < m; ++k) {
    const gh_hmm *w = &s->hmms[hid[k]];
    int is_sil = k == n;
    for (int32_t j = 0; j < w->num_states; ++j) {
      int32_t q = off[k] + j;
      h->pdf[q] = w->pdf[j];
      h->init[q] = (float)(w->init[j] + share);
      h->final[q] = (float)(w->final[j] + (is_sil ? endshare : to_other));
      if (w->word) h->word[q] = w->word[j] ? gh_strdup(w->word[j]) : NULL;
      else if (!is_sil && w->init[j] > -INFINITY) h->word[q] = gh_strdup(w->name);
    }
    for (int32_t r = 0; r < w->num_arcs; ++r)
      h->arcs[a++] = (gh_hmm_arc){off[k] + w->arcs[r].from, off[k] + w->arcs[r].to, w->arcs[r].logp};
  }
  for (int32_t k = 0; k < m; ++k) {
    const gh_hmm *w = &s->hmms[hid[k]];
    for (int32_t i = 0; i < w->num_states; ++i) {
      if (w->final[i] == -INFINITY) continue;
      for (int32_t k2 = 0; k2 < m; ++k2) {
        const gh_hmm *v = &s->hmms[hid[k2]];
        for (int32_t j = 0; j < v->num_states; ++j)
          if (v->init[j] > -INFINITY) {
            /* an arc that already exists (a word's own arc from an exit to an
             * initial state) gets the loop-back probability added */
            int32_t from = off[k] + i, to = off[k2] + j, r = 0;
            double lpv = (double)w->final[i] + v->init[j] + (k == n ? endshare : k2 == n ? to_sil : to_other);
            if (lpv == -INFINITY) continue;
            while (r < a && !(h->arcs[r].from == from && h->arcs[r].to == to)) ++r;
            if (r < a) {
              double x = h->arcs[r].logp, mx = x > lpv ? x : lpv;
              h->arcs[r].logp = (float)(mx + log(exp(x - mx) + exp(lpv - mx)));
            } else {
              h->arcs[a++] = (gh_hmm_arc){from, to, (float)lpv};
            }
          }
      }
    }
  }
  h->num_arcs = a;
  free(hid);
  free(off);
  if (gh_hmm_check(h) != 0) gh_die("word loop '%s': %s", name, gh_last_error());
}

void gh_hmm_loop_edge_silence(gh_hmm *h, int32_t num_sil_states) {
  int32_t S = h->num_states, first = S - num_sil_states;
  if (num_sil_states < 1 || first < 0) gh_die("word loop '%s': bad silence size %d", h->name, num_sil_states);
  double mx = -INFINITY;
  for (int32_t j = 0; j < S; ++j) {
    if (j < first) h->init[j] = h->final[j] = -INFINITY;
    else if (h->init[j] > mx) mx = h->init[j];
  }
  if (mx == -INFINITY) gh_die("word loop '%s': the silence has no initial state", h->name);
  double sum = 0;
  for (int32_t j = first; j < S; ++j) sum += exp(h->init[j] - mx);
  for (int32_t j = first; j < S; ++j)
    if (h->init[j] > -INFINITY) h->init[j] = (float)(h->init[j] - mx - log(sum));
  if (gh_hmm_check(h) != 0) gh_die("word loop '%s': %s", h->name, gh_last_error());
}

/* ---------------- compilation ---------------- */

typedef struct { int32_t src, dst, tie0, tie1; float logp; } tmp_arc;

static int cmp_arc_dst(const void *x, const void *y) {
  const tmp_arc *a = x, *b = y;
  if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
  return a->src < b->src ? -1 : a->src > b->src;
}

/* accs layout offsets of HMM h: [S init][A arcs][S final] */
static int64_t accs_base(const gh_hmm_set *s, int32_t h) {
  int64_t off = 0;
  for (int32_t i = 0; i < h; ++i) off += 2 * (int64_t)s->hmms[i].num_states + s->hmms[i].num_arcs;
  return off;
}

void gh_hmm_compile(const gh_hmm_set *s, const int32_t *ids, int32_t n, int32_t sil, double sil_prob,
                    gh_hmm_compiled *c) {
  gh_hmm_compile_edges(s, ids, n, sil, sil_prob, sil_prob, c);
}

void gh_hmm_compile_edges(const gh_hmm_set *s, const int32_t *ids, int32_t n, int32_t sil, double sil_prob,
                          double edge_prob, gh_hmm_compiled *c) {
  memset(c, 0, sizeof *c);
  if (n < 0 || (n == 0 && sil < 0)) gh_die("cannot compile an empty HMM sequence without a silence HMM");
  if (sil >= 0 && !(sil_prob > 0 && sil_prob < 1)) gh_die("silence probability must be in (0, 1), got %g", sil_prob);
  if (sil >= 0 && !(edge_prob > 0 && edge_prob <= 1))
    gh_die("edge silence probability must be in (0, 1], got %g", edge_prob);
  /* segments: [Z0] W1 [Z1] W2 ... Wn [Zn]; silences optional */
  int32_t m = sil >= 0 ? 2 * n + 1 : n;
  int32_t *hid = gh_malloc(m * sizeof(int32_t)), *opt = gh_calloc(m, sizeof(int32_t));
  for (int32_t k = 0; k < m; ++k) {
    if (sil >= 0) { hid[k] = (k % 2 == 0) ? sil : ids[k / 2]; opt[k] = k % 2 == 0 && n > 0; }
    else hid[k] = ids[k];
    if (hid[k] < 0 || hid[k] >= s->num_hmms) gh_die("compile: bad HMM index %d", hid[k]);
  }
  int32_t *off = gh_malloc((m + 1) * sizeof(int32_t));
  int64_t *base = gh_malloc(m * sizeof(int64_t));
  int32_t S = 0;
  for (int32_t k = 0; k < m; ++k) {
    off[k] = S;
    S += s->hmms[hid[k]].num_states;
    base[k] = accs_base(s, hid[k]);
  }
  off[m] = S;
  c->pdf = gh_malloc(S * sizeof(int32_t));
  c->init = gh_malloc(S * sizeof(float));
  c->final = gh_malloc(S * sizeof(float));
  c->tie_init = gh_malloc(S * sizeof(int32_t));
  c->tie_final = gh_malloc(S * sizeof(int32_t));
  c->word = gh_calloc(S, sizeof(char *));
  c->seg = gh_malloc(S * sizeof(int32_t));
  c->num_segs = m;
  c->seg_name = gh_calloc(m, sizeof(char *));
  /* log-probabilities of taking (LP) / skipping (LQ) optional segment k: the
   * first and last silence use edge_prob (1: obligatory, never skipped) */
  double lp0 = sil >= 0 ? log(sil_prob) : 0.0, lq0 = sil >= 0 ? log1p(-sil_prob) : 0.0;
  double lpe = sil >= 0 ? log(edge_prob) : 0.0, lqe = sil >= 0 && edge_prob < 1 ? log1p(-edge_prob) : -INFINITY;
#define LP(k_) (((k_) == 0 || (k_) == m - 1) ? lpe : lp0)
#define LQ(k_) (((k_) == 0 || (k_) == m - 1) ? lqe : lq0)
  for (int32_t k = 0; k < m; ++k) {
    const gh_hmm *w = &s->hmms[hid[k]];
    if (!(sil >= 0 && hid[k] == sil && k % 2 == 0) && !w->word) c->seg_name[k] = w->name;
    for (int32_t j = 0; j < w->num_states; ++j) {
      int32_t q = off[k] + j;
      c->pdf[q] = w->pdf[j];
      c->init[q] = c->final[q] = -INFINITY;
      c->tie_init[q] = c->tie_final[q] = -1;
      c->word[q] = w->word ? w->word[j] : NULL;
      c->seg[q] = k;
    }
  }
  /* Which segments can be entered first, and which can end: with optional
   * silences, [Z0 | W1] first and [Wn | Zn] last. */
  int64_t acap = 64, na = 0;
  tmp_arc *ta = gh_malloc(acap * sizeof(tmp_arc));
#define PUSH(S_, D_, L_, T0_, T1_) do { if (na == acap) { acap *= 2; ta = gh_realloc(ta, acap * sizeof(tmp_arc)); } \
    ta[na++] = (tmp_arc){(S_), (D_), (T0_), (T1_), (float)(L_)}; } while (0)
  for (int32_t k = 0; k < m; ++k) {
    const gh_hmm *w = &s->hmms[hid[k]];
    int32_t SA = w->num_states;
    for (int32_t r = 0; r < w->num_arcs; ++r)
      PUSH(off[k] + w->arcs[r].from, off[k] + w->arcs[r].to, w->arcs[r].logp, (int32_t)(base[k] + SA + r), -1);
  }
  /* entry weights: segment k is a possible start with log weight e */
  for (int32_t k = 0; k < m; ++k) {
    double e;
    if (k == 0) e = opt[0] ? LP(0) : 0.0;
    else if (k == 1 && opt[0]) e = LQ(0);
    else continue;
    if (e == -INFINITY) continue;
    const gh_hmm *w = &s->hmms[hid[k]];
    for (int32_t j = 0; j < w->num_states; ++j)
      if (w->init[j] > -INFINITY) {
        c->init[off[k] + j] = (float)(e + w->init[j]);
        c->tie_init[off[k] + j] = (int32_t)(base[k] + j);
      }
  }
  /* exits: from segment k to k+1 (and k+2 skipping an optional silence), or the end */
  for (int32_t k = 0; k < m; ++k) {
    const gh_hmm *w = &s->hmms[hid[k]];
    int32_t SA = w->num_states, AA = w->num_arcs;
    for (int32_t i = 0; i < SA; ++i) {
      if (w->final[i] == -INFINITY) continue;
      int32_t src = off[k] + i;
      int32_t tf = (int32_t)(base[k] + SA + AA + i);
      for (int32_t step = 1; step <= 2; ++step) {
        int32_t k2 = k + step;
        double e;
        if (step == 1) e = (k2 < m && opt[k2]) ? LP(k2) : 0.0;
        else { if (!(k + 1 < m && opt[k + 1])) continue; e = LQ(k + 1); }
        if (e == -INFINITY) continue;
        if (k2 < m) {
          const gh_hmm *v = &s->hmms[hid[k2]];
          for (int32_t j = 0; j < v->num_states; ++j)
            if (v->init[j] > -INFINITY)
              PUSH(src, off[k2] + j, w->final[i] + e + v->init[j], tf, (int32_t)(base[k2] + j));
        } else if (k2 == m) {  /* the end of the utterance */
          c->final[src] = (float)(w->final[i] + e);
          c->tie_final[src] = tf;
        }
      }
    }
  }
#undef PUSH
#undef LP
#undef LQ
  qsort(ta, na, sizeof(tmp_arc), cmp_arc_dst);
  int32_t A = (int32_t)na;
  c->in_off = gh_calloc(S + 1, sizeof(int32_t));
  c->arc_src = gh_malloc((A ? A : 1) * sizeof(int32_t));
  c->arc_dst = gh_malloc((A ? A : 1) * sizeof(int32_t));
  c->arc_logp = gh_malloc((A ? A : 1) * sizeof(float));
  c->tie_arc = gh_malloc((A ? 2 * A : 1) * sizeof(int32_t));
  for (int32_t a = 0; a < A; ++a) {
    c->arc_src[a] = ta[a].src;
    c->arc_dst[a] = ta[a].dst;
    c->arc_logp[a] = ta[a].logp;
    c->tie_arc[2 * a] = ta[a].tie0;
    c->tie_arc[2 * a + 1] = ta[a].tie1;
    c->in_off[ta[a].dst + 1]++;
  }
  for (int32_t j = 0; j < S; ++j) c->in_off[j + 1] += c->in_off[j];
  free(ta); free(hid); free(opt); free(off); free(base);
  int32_t P = 0;
  for (int32_t j = 0; j < S; ++j) if (c->pdf[j] + 1 > P) P = c->pdf[j] + 1;
  c->graph = (gh_hmm_graph){S, A, P, c->pdf, c->init, c->final, c->in_off, c->arc_src, c->arc_dst, c->arc_logp};
}

void gh_hmm_compile_transcript(const gh_hmm_set *s, const char *transcript, int32_t sil, double sil_prob,
                               gh_hmm_compiled *c, const char *spec, const char *key) {
  gh_hmm_compile_transcript_edges(s, transcript, sil, sil_prob, sil_prob, c, spec, key);
}

void gh_hmm_compile_transcript_edges(const gh_hmm_set *s, const char *transcript, int32_t sil, double sil_prob,
                                     double edge_prob, gh_hmm_compiled *c, const char *spec, const char *key) {
  char *buf = gh_strdup(transcript), *save = NULL;
  int32_t n = 0, cap = 16, *ids = gh_malloc(cap * sizeof(int32_t));
  for (char *tok = strtok_r(buf, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
    int32_t id = gh_hmm_set_find(s, tok);
    if (id < 0) gh_die("%s, key '%s': transcript word '%s' is not an HMM of the set", spec, key, tok);
    if (n == cap) ids = gh_realloc(ids, (cap *= 2) * sizeof(int32_t));
    ids[n++] = id;
  }
  if (n == 0 && sil < 0) gh_die("%s, key '%s': empty transcript", spec, key);
  gh_hmm_compile_edges(s, ids, n, sil, sil_prob, edge_prob, c);
  free(ids);
  free(buf);
}

void gh_hmm_compiled_free(gh_hmm_compiled *c) {
  if (!c) return;
  free(c->pdf); free(c->in_off); free(c->arc_src); free(c->arc_dst); free(c->init); free(c->final);
  free(c->arc_logp); free(c->tie_init); free(c->tie_final); free(c->tie_arc); free(c->word);
  free(c->seg); free(c->seg_name);
  memset(c, 0, sizeof *c);
}

char *gh_hmm_path_words(const gh_hmm_compiled *c, const int32_t *path, int64_t T) {
  size_t cap = 64, len = 0;
  char *out = gh_malloc(cap);
  out[0] = 0;
  for (int64_t t = 0; t < T; ++t) {
    int32_t q = path[t];
    if (q < 0) continue;
    const char *w = NULL;
    int entered = t == 0 || path[t - 1] != q;
    if (entered && c->word[q]) w = c->word[q];
    else if ((t == 0 || path[t - 1] < 0 || c->seg[path[t - 1]] != c->seg[q]) && c->seg_name[c->seg[q]])
      w = c->seg_name[c->seg[q]];
    if (!w) continue;
    size_t l = strlen(w);
    while (len + l + 2 > cap) out = gh_realloc(out, cap *= 2);
    if (len) out[len++] = ' ';
    memcpy(out + len, w, l + 1);
    len += l;
  }
  return out;
}

/* ---------------- accumulators ---------------- */

void gh_hmm_accs_init(gh_hmm_accs *a, const gh_hmm_set *s) {
  memset(a, 0, sizeof *a);
  a->num_hmms = s->num_hmms;
  a->names = gh_malloc(s->num_hmms * sizeof(char *));
  a->num_states = gh_malloc(s->num_hmms * sizeof(int32_t));
  a->num_arcs = gh_malloc(s->num_hmms * sizeof(int32_t));
  a->off = gh_malloc((s->num_hmms + 1) * sizeof(int64_t));
  a->off[0] = 0;
  for (int32_t i = 0; i < s->num_hmms; ++i) {
    a->names[i] = gh_strdup(s->hmms[i].name);
    a->num_states[i] = s->hmms[i].num_states;
    a->num_arcs[i] = s->hmms[i].num_arcs;
    a->off[i + 1] = a->off[i] + 2 * (int64_t)a->num_states[i] + a->num_arcs[i];
  }
  a->counts = gh_calloc(a->off[s->num_hmms] > 0 ? a->off[s->num_hmms] : 1, sizeof(double));
}

void gh_hmm_accs_free(gh_hmm_accs *a) {
  if (!a) return;
  for (int32_t i = 0; i < a->num_hmms; ++i) free(a->names[i]);
  free(a->names); free(a->num_states); free(a->num_arcs); free(a->off); free(a->counts);
  memset(a, 0, sizeof *a);
}

void gh_hmm_accs_add_stats(gh_hmm_accs *a, const gh_hmm_compiled *c, const double *st) {
  int32_t S = c->graph.num_states, A = c->graph.num_arcs;
  for (int32_t j = 0; j < S; ++j) {
    if (c->tie_init[j] >= 0) a->counts[c->tie_init[j]] += st[j];
    if (c->tie_final[j] >= 0) a->counts[c->tie_final[j]] += st[S + A + j];
  }
  for (int32_t r = 0; r < A; ++r)
    for (int k = 0; k < 2; ++k)
      if (c->tie_arc[2 * r + k] >= 0) a->counts[c->tie_arc[2 * r + k]] += st[S + r];
}

static void accs_match(const gh_hmm_accs *a, const char *const *names, const int32_t *S, const int32_t *A,
                       int32_t n, const char *what) {
  if (a->num_hmms != n) gh_die("%s: %d HMMs, expected %d", what, n, a->num_hmms);
  for (int32_t i = 0; i < n; ++i)
    if (strcmp(a->names[i], names[i]) || a->num_states[i] != S[i] || a->num_arcs[i] != A[i])
      gh_die("%s: HMM %d is '%s' with %d states and %d arcs, expected '%s' with %d states and %d arcs", what, i,
             names[i], S[i], A[i], a->names[i], a->num_states[i], a->num_arcs[i]);
}

void gh_hmm_accs_add(gh_hmm_accs *a, const gh_hmm_accs *b, const char *name_b) {
  accs_match(a, (const char *const *)b->names, b->num_states, b->num_arcs, b->num_hmms, name_b);
  for (int64_t i = 0; i < a->off[a->num_hmms]; ++i) a->counts[i] += b->counts[i];
  a->total_like += b->total_like;
  a->total_frames += b->total_frames;
  a->num_utts += b->num_utts;
}

void gh_hmm_accs_check(const gh_hmm_accs *a, const gh_hmm_set *s, const char *name) {
  gh_hmm_accs t;
  gh_hmm_accs_init(&t, s);
  accs_match(&t, (const char *const *)a->names, a->num_states, a->num_arcs, a->num_hmms, name);
  gh_hmm_accs_free(&t);
}

void gh_hmm_accs_read(const char *rx, gh_hmm_accs *a) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("cannot open HMM accumulators %s: %s", rx, gh_last_error());
  int binary = gh_read_binary_marker(in);
  memset(a, 0, sizeof *a);
  const char *tok = gh_read_token(in, binary);
  if (strcmp(tok, "<HmmAccs>")) gh_istream_fail_type(in, "HMM accumulators", "<HmmAccs>", tok, NULL);
  gh_expect_token(in, binary, "<NumHmms>");
  int32_t N = gh_read_int32(in, binary);
  if (N < 1 || N > 10000000) gh_istream_fail(in, "bad <NumHmms> %d", N);
  gh_istream_need(in, (uint64_t)N, 20, "<NumHmms> HMMs");
  a->num_hmms = N;
  a->names = gh_calloc(N, sizeof(char *));
  a->num_states = gh_malloc(N * sizeof(int32_t));
  a->num_arcs = gh_malloc(N * sizeof(int32_t));
  a->off = gh_malloc((N + 1) * sizeof(int64_t));
  a->off[0] = 0;
  gh_dvector v[3];
  memset(v, 0, sizeof v);
  double **parts = gh_malloc(N * sizeof(double *));
  for (int32_t i = 0; i < N; ++i) {
    gh_expect_token(in, binary, "<Hmm>");
    a->names[i] = gh_strdup(gh_read_token(in, binary));
    gh_expect_token(in, binary, "<NumStates>");
    int32_t S = a->num_states[i] = gh_read_int32(in, binary);
    gh_expect_token(in, binary, "<NumArcs>");
    int32_t A = a->num_arcs[i] = gh_read_int32(in, binary);
    if (S < 1 || A < 0) gh_istream_fail(in, "HMM '%s': bad sizes %d states, %d arcs", a->names[i], S, A);
    const char *tok[3] = {"<InitCounts>", "<ArcCounts>", "<FinalCounts>"};
    int32_t want[3] = {S, A, S};
    a->off[i + 1] = a->off[i] + 2 * (int64_t)S + A;
    gh_istream_need(in, 2 * (uint64_t)S + (uint64_t)A, binary ? 4 : 2, "HMM accumulator counts");
    parts[i] = gh_malloc((2 * (size_t)S + A + 1) * sizeof(double));
    int64_t o = 0;
    for (int k = 0; k < 3; ++k) {
      gh_expect_token(in, binary, tok[k]);
      gh_read_dvector(in, binary, &v[k]);
      if (v[k].dim != want[k]) gh_istream_fail(in, "HMM '%s': %s has %d entries, expected %d", a->names[i], tok[k], v[k].dim, want[k]);
      for (int32_t j = 0; j < want[k]; ++j) {
        if (!isfinite(v[k].data[j]) || v[k].data[j] < -1e-6)
          gh_istream_fail(in, "HMM '%s': %s entry %d is %g", a->names[i], tok[k], j, v[k].data[j]);
        parts[i][o++] = v[k].data[j];
      }
    }
    gh_expect_token(in, binary, "</Hmm>");
  }
  a->counts = gh_malloc((a->off[N] > 0 ? a->off[N] : 1) * sizeof(double));
  for (int32_t i = 0; i < N; ++i) {
    memcpy(a->counts + a->off[i], parts[i], (a->off[i + 1] - a->off[i]) * sizeof(double));
    free(parts[i]);
  }
  free(parts);
  for (int k = 0; k < 3; ++k) gh_dvector_free(&v[k]);
  gh_expect_token(in, binary, "<TotalLike>");
  a->total_like = gh_read_double(in, binary);
  gh_expect_token(in, binary, "<TotalFrames>");
  a->total_frames = gh_read_double(in, binary);
  gh_expect_token(in, binary, "<NumUtts>");
  a->num_utts = gh_read_int32(in, binary);
  gh_expect_token(in, binary, "</HmmAccs>");
  gh_istream_close(in);
}

void gh_hmm_accs_write(const char *wx, int binary, const gh_hmm_accs *a) {
  gh_ostream *out = gh_ostream_open(wx);
  gh_write_binary_marker(out, binary);
  gh_write_token(out, binary, "<HmmAccs>");
  gh_write_token(out, binary, "<NumHmms>");
  gh_write_int32(out, binary, a->num_hmms);
  nl(out, binary);
  for (int32_t i = 0; i < a->num_hmms; ++i) {
    int32_t S = a->num_states[i], A = a->num_arcs[i];
    const double *c = a->counts + a->off[i];
    gh_write_token(out, binary, "<Hmm>");
    gh_write_token(out, binary, a->names[i]);
    gh_write_token(out, binary, "<NumStates>");
    gh_write_int32(out, binary, S);
    gh_write_token(out, binary, "<NumArcs>");
    gh_write_int32(out, binary, A);
    nl(out, binary);
    gh_write_token(out, binary, "<InitCounts>");
    gh_model_write_dvector(out, binary, S, c);
    gh_write_token(out, binary, "<ArcCounts>");
    gh_model_write_dvector(out, binary, A, c + S);
    gh_write_token(out, binary, "<FinalCounts>");
    gh_model_write_dvector(out, binary, S, c + S + A);
    gh_write_token(out, binary, "</Hmm>");
    nl(out, binary);
  }
  gh_write_token(out, binary, "<TotalLike>");
  gh_model_write_double(out, binary, a->total_like);
  gh_write_token(out, binary, "<TotalFrames>");
  gh_model_write_double(out, binary, a->total_frames);
  gh_write_token(out, binary, "<NumUtts>");
  gh_write_int32(out, binary, (int32_t)a->num_utts);
  gh_write_token(out, binary, "</HmmAccs>");
  nl(out, binary);
  gh_ostream_close(out);
}

/* ---------------- re-estimation ---------------- */

void gh_hmm_update_opts_default(gh_hmm_update_opts *o) {
  o->min_count = 5.0;
  o->floor = 0.01;
  o->update_init = 1;
}

/* Normalise counts c[n] into log-probs out[n] (Kaldi MleUpdate: p = c/tot,
 * floored, renormalised).  Returns 0 if kept (tot < min_count). */
static int normalise(const double *c, int32_t n, const gh_hmm_update_opts *o, double *p) {
  double tot = 0;
  for (int32_t k = 0; k < n; ++k) tot += c[k];
  if (n == 0 || tot <= 0 || tot < o->min_count) return 0;
  double sum = 0;
  for (int32_t k = 0; k < n; ++k) {
    p[k] = c[k] / tot;
    if (p[k] < o->floor) p[k] = o->floor;
    sum += p[k];
  }
  for (int32_t k = 0; k < n; ++k) p[k] /= sum;
  return 1;
}

int64_t gh_hmm_update(gh_hmm_set *s, const gh_hmm_accs *a, const gh_hmm_update_opts *o, int64_t *num_kept) {
  int64_t done = 0, kept = 0;
  for (int32_t h = 0; h < s->num_hmms; ++h) {
    gh_hmm *w = &s->hmms[h];
    int32_t S = w->num_states, A = w->num_arcs;
    const double *ci = a->counts + a->off[h], *ca = ci + S, *cf = ca + A;
    double *c = gh_malloc((A + S + 1) * sizeof(double)), *p = gh_malloc((A + S + 1) * sizeof(double));
    int32_t *idx = gh_malloc((A + S + 1) * sizeof(int32_t));
    if (o->update_init) {
      int32_t n = 0;
      for (int32_t j = 0; j < S; ++j)
        if (w->init[j] > -INFINITY) { idx[n] = j; c[n++] = ci[j]; }
      if (n > 1) {
        if (normalise(c, n, o, p)) { for (int32_t k = 0; k < n; ++k) w->init[idx[k]] = (float)log(p[k]); ++done; }
        else ++kept;
      }
    }
    for (int32_t i = 0; i < S; ++i) {
      int32_t n = 0;
      for (int32_t r = 0; r < A; ++r)
        if (w->arcs[r].from == i) { idx[n] = r; c[n++] = ca[r]; }
      int compete = w->final[i] > -INFINITY && w->final[i] < 0;
      if (compete) { idx[n] = -1; c[n++] = cf[i]; }
      if (n < 2) continue;  /* nothing to choose between */
      if (!normalise(c, n, o, p)) { ++kept; continue; }
      ++done;
      for (int32_t k = 0; k < n; ++k) {
        float lpv = (float)log(p[k]);
        if (idx[k] >= 0) w->arcs[idx[k]].logp = lpv;
        else w->final[i] = lpv;
      }
    }
    free(c); free(p); free(idx);
  }
  if (num_kept) *num_kept = kept;
  return done;
}

/* ---------------- emissions ---------------- */

void gh_hmm_read_discrete(const char *rx, gh_matrix *logB) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("cannot open emission matrix %s: %s", rx, gh_last_error());
  int binary = gh_read_binary_marker(in);
  memset(logB, 0, sizeof *logB);
  gh_read_matrix(in, binary, logB);
  gh_istream_close(in);
  if (logB->rows < 1 || logB->cols < 1) gh_die("%s: emission matrix is empty (%d x %d)", rx, logB->rows, logB->cols);
  for (int64_t i = 0; i < (int64_t)logB->rows * logB->cols; ++i) {
    float v = logB->data[i];
    if (!(v >= 0) || !isfinite(v))
      gh_die("%s: emission probability %g at row %d, col %d (must be finite and >= 0)", rx, v,
             (int)(i / logB->cols), (int)(i % logB->cols));
    logB->data[i] = (float)log((double)v);
  }
}

void gh_hmm_discrete_loglikes(const gh_matrix *logB, const gh_ivector *sym, gh_matrix *out, const char *spec,
                              const char *key) {
  gh_matrix_resize(out, sym->dim, logB->rows);
  for (int32_t t = 0; t < sym->dim; ++t) {
    int32_t o = sym->data[t];
    if (o < 0 || o >= logB->cols)
      gh_die("%s, key '%s': symbol %d at frame %d is outside 0..%d", spec, key, o, t, logB->cols - 1);
    for (int32_t p = 0; p < logB->rows; ++p) out->data[(int64_t)t * logB->rows + p] = logB->data[(int64_t)p * logB->cols + o];
  }
}

/* ---------------- tool input and batches ---------------- */

#include "io/table.h"

struct gh_hmm_input {
  gh_seq_reader *r;
  gh_matrix logB, cur;
  int discrete;
  int32_t num_pdfs;     /* columns: pdfs, or the feature dimension (features) */
  char *spec;
  char *features_of;    /* non-NULL: the input is features of this model (gh_hmm_input_open_features) */
};

static void input_load(gh_hmm_input *in) {
  if (gh_seq_reader_done(in->r)) return;
  const char *key = gh_seq_reader_key(in->r);
  const gh_matrix *m;
  if (in->discrete) {
    gh_hmm_discrete_loglikes(&in->logB, gh_seq_reader_value(in->r), &in->cur, in->spec, key);
    m = &in->cur;
  } else {
    m = gh_seq_reader_value(in->r);
  }
  if (m->rows == 0) gh_die("%s, key '%s': empty utterance (no frames)", in->spec, key);
  if (in->features_of) {
    if (m->cols != in->num_pdfs) gh_die_dim(in->spec, key, "features", m->cols, in->num_pdfs, in->features_of);
    for (int64_t i = 0; i < (int64_t)m->rows * m->cols; ++i)
      if (!isfinite(m->data[i]))
        gh_die("%s, key '%s': %s at row %d, col %d", in->spec, key, isnan(m->data[i]) ? "NaN" : "infinity",
               (int)(i / m->cols), (int)(i % m->cols));
    return;
  }
  if (m->cols != in->num_pdfs) { /* as Kaldi's DecodableMatrixScaledMapped: more columns is the wrong model too */
    char against[160];
    snprintf(against, sizeof against, "the HMMs use pdfs 0..%d: log-likelihoods of another model?", in->num_pdfs - 1);
    gh_die_dim(in->spec, key, "loglikes", m->cols, in->num_pdfs, against);
  }
  for (int64_t i = 0; i < (int64_t)m->rows * m->cols; ++i)
    if (isnan(m->data[i]) || m->data[i] == INFINITY)
      gh_die("%s, key '%s': %s at row %d, col %d", in->spec, key, isnan(m->data[i]) ? "NaN" : "+inf",
             (int)(i / m->cols), (int)(i % m->cols));
}

gh_hmm_input *gh_hmm_input_open(const char *rspec, const char *discrete_rx, int32_t num_pdfs) {
  gh_hmm_input *in = gh_calloc(1, sizeof *in);
  in->discrete = discrete_rx && *discrete_rx;
  in->num_pdfs = num_pdfs;
  in->spec = gh_strdup(rspec);
  if (in->discrete) {
    gh_hmm_read_discrete(discrete_rx, &in->logB);
    if (in->logB.rows < num_pdfs)
      gh_die("%s: emission matrix has %d rows (pdfs) but the HMMs use %d", discrete_rx, in->logB.rows, num_pdfs);
  }
  in->r = gh_seq_reader_open(rspec, in->discrete ? GH_OBJ_INT32_VECTOR : GH_OBJ_MATRIX);
  input_load(in);
  return in;
}
gh_hmm_input *gh_hmm_input_open_features(const char *rspec, int32_t dim, const char *model_name) {
  gh_hmm_input *in = gh_calloc(1, sizeof *in);
  in->num_pdfs = dim;
  in->spec = gh_strdup(rspec);
  in->features_of = gh_strdup(model_name);
  in->r = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  input_load(in);
  return in;
}
int gh_hmm_input_done(gh_hmm_input *in) { return gh_seq_reader_done(in->r); }
const char *gh_hmm_input_key(gh_hmm_input *in) { return gh_seq_reader_key(in->r); }
const gh_matrix *gh_hmm_input_value(gh_hmm_input *in) {
  return in->discrete ? &in->cur : (const gh_matrix *)gh_seq_reader_value(in->r);
}
void gh_hmm_input_next(gh_hmm_input *in) {
  gh_seq_reader_next(in->r);
  input_load(in);
}
void gh_hmm_input_close(gh_hmm_input *in) {
  gh_seq_reader_close(in->r);
  gh_matrix_free(&in->logB);
  gh_matrix_free(&in->cur);
  free(in->spec);
  free(in->features_of);
  free(in);
}
const char *gh_hmm_input_spec(const gh_hmm_input *in) { return in->spec; }

void gh_hmm_batcher_init(gh_hmm_batcher *bt, int32_t num_pdfs) {
  memset(bt, 0, sizeof *bt);
  bt->num_pdfs = num_pdfs;
  bt->acoustic_scale = 1.0f;
  bt->frame_off = gh_calloc(1, sizeof(int64_t));
  bt->b.num_pdfs = num_pdfs;
  bt->b.frame_off = bt->frame_off;
}

void gh_hmm_batcher_add(gh_hmm_batcher *bt, const char *key, const gh_matrix *m, int32_t g) {
  int32_t n = bt->b.num_utts;
  if (n == bt->cap) {
    bt->cap = bt->cap ? 2 * bt->cap : 64;
    bt->keys = gh_realloc(bt->keys, bt->cap * sizeof(char *));
    bt->graph = gh_realloc(bt->graph, bt->cap * sizeof(int32_t));
    bt->frame_off = gh_realloc(bt->frame_off, (bt->cap + 1) * sizeof(int64_t));
  }
  int64_t F = bt->frame_off[n], P = bt->num_pdfs;
  if (F + m->rows > bt->cap_frames) {
    bt->cap_frames = 2 * (F + m->rows);
    bt->loglikes = gh_realloc(bt->loglikes, bt->cap_frames * P * sizeof(float));
  }
  const float sc = bt->acoustic_scale;
  for (int32_t t = 0; t < m->rows; ++t) {
    float *dst = bt->loglikes + (F + t) * P;
    const float *src = gh_row(m, t);
    if (sc == 1.0f) memcpy(dst, src, P * sizeof(float));
    else for (int64_t j = 0; j < P; ++j) dst[j] = sc * src[j];
  }
  bt->keys[n] = gh_strdup(key);
  bt->graph[n] = g;
  bt->frame_off[n + 1] = F + m->rows;
  bt->b.num_utts = n + 1;
  bt->b.loglikes = bt->loglikes;
  bt->b.frame_off = bt->frame_off;
  bt->b.graph = bt->graph;
}

void gh_hmm_batcher_clear(gh_hmm_batcher *bt) {
  for (int32_t u = 0; u < bt->b.num_utts; ++u) free(bt->keys[u]);
  for (int32_t u = 0; u < bt->num_uc; ++u) gh_hmm_compiled_free(&bt->uc[u]);
  bt->b.num_utts = 0;
  bt->num_uc = 0;
}

void gh_hmm_batcher_free(gh_hmm_batcher *bt) {
  gh_hmm_batcher_clear(bt);
  free(bt->keys); free(bt->loglikes); free(bt->frame_off); free(bt->graph); free(bt->uc);
  memset(bt, 0, sizeof *bt);
}

int32_t gh_hmm_batcher_fill(gh_hmm_batcher *bt, gh_hmm_input *in, int64_t batch_frames,
                            const gh_hmm_transcripts *tr, int64_t *num_err) {
  gh_hmm_batcher_clear(bt);
  while (!gh_hmm_input_done(in) && gh_hmm_batcher_frames(bt) < batch_frames) {
    const char *key = gh_hmm_input_key(in);
    int32_t g = 0;
    if (tr) {
      const char *text = gh_rand_reader_value(tr->reader, key);
      if (!text) {
        gh_warn_no_key(tr->spec, key, "transcript", "utterance skipped");
        if (num_err) ++*num_err;
        gh_hmm_input_next(in);
        continue;
      }
      g = bt->b.num_utts;
      if (g == bt->uc_cap) {
        bt->uc_cap = bt->uc_cap ? 2 * bt->uc_cap : 64;
        bt->uc = gh_realloc(bt->uc, bt->uc_cap * sizeof *bt->uc);
      }
      gh_hmm_compile_transcript_edges(tr->set, text, tr->sil, tr->sil_prob,
                                      tr->edge_sil_prob > 0 ? tr->edge_sil_prob : tr->sil_prob, &bt->uc[g],
                                      tr->spec, key);
      bt->num_uc = g + 1;
    }
    gh_hmm_batcher_add(bt, key, gh_hmm_input_value(in), g);
    gh_hmm_input_next(in);
  }
  return bt->b.num_utts;
}

struct gh_hmm_prefetch {
  gh_hmm_batcher bt[2];
  gh_queue *free_q, *full_q;  /* free_q -> reader (fill) -> full_q -> caller -> free_q */
  gh_hmm_input *in;
  int64_t batch_frames;
  const gh_hmm_transcripts *tr;
  int64_t num_err;            /* the reader's */
  gh_hmm_batcher *cur;        /* the caller's batch */
  int done;                   /* the end (NULL) has been taken from full_q */
  pthread_t thread;
};

static void *prefetch_main(void *arg) {
  gh_hmm_prefetch *pf = arg;
  for (;;) {
    gh_hmm_batcher *bt = gh_queue_pop(pf->free_q);
    if (gh_hmm_batcher_fill(bt, pf->in, pf->batch_frames, pf->tr, &pf->num_err) == 0) {
      gh_queue_push(pf->full_q, NULL);
      return NULL;
    }
    gh_queue_push(pf->full_q, bt);
  }
}

gh_hmm_prefetch *gh_hmm_prefetch_start(gh_hmm_input *in, int32_t num_pdfs, float acoustic_scale,
                                       int64_t batch_frames, const gh_hmm_transcripts *tr) {
  gh_hmm_prefetch *pf = gh_calloc(1, sizeof *pf);
  pf->in = in;
  pf->batch_frames = batch_frames;
  pf->tr = tr;
  pf->free_q = gh_queue_new(2);
  pf->full_q = gh_queue_new(3);
  for (int i = 0; i < 2; ++i) {
    gh_hmm_batcher_init(&pf->bt[i], num_pdfs);
    pf->bt[i].acoustic_scale = acoustic_scale;
    gh_queue_push(pf->free_q, &pf->bt[i]);
  }
  if (pthread_create(&pf->thread, NULL, prefetch_main, pf)) gh_die("cannot start the HMM input reader thread");
  return pf;
}

gh_hmm_batcher *gh_hmm_prefetch_next(gh_hmm_prefetch *pf) {
  if (pf->done) return NULL;
  if (pf->cur) gh_queue_push(pf->free_q, pf->cur);
  pf->cur = gh_queue_pop(pf->full_q);
  if (!pf->cur) pf->done = 1;
  return pf->cur;
}

int64_t gh_hmm_prefetch_finish(gh_hmm_prefetch *pf) {
  while (gh_hmm_prefetch_next(pf) != NULL) {
  }
  pthread_join(pf->thread, NULL);
  const int64_t num_err = pf->num_err;
  for (int i = 0; i < 2; ++i) gh_hmm_batcher_free(&pf->bt[i]);
  gh_queue_free(pf->free_q);
  gh_queue_free(pf->full_q);
  free(pf);
  return num_err;
}

void gh_hmm_input_opts_register(gh_opts *po, gh_hmm_input_opts *o) {
  o->discrete = "";
  o->batch_frames = 65536;
  o->acoustic_scale = 1.0f;
  gh_opts_string(po, "discrete-emissions", &o->discrete,
                 "Kaldi matrix B (pdfs x symbols, probabilities): input is int32 symbol vectors");
  gh_opts_int(po, "batch-frames", &o->batch_frames, "Process utterances in batches of about this many frames");
  gh_opts_float(po, "acoustic-scale", &o->acoustic_scale,
                "Scale of the emission log-likelihoods relative to transition log-probabilities (Kaldi's --acoustic-scale)");
}
