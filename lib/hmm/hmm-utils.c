/* hmm-utils.c -- see hmm-utils.h (Kaldi hmm/hmm-utils.cc SplitToPhones). */
#include "hmm/hmm-utils.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"

/* Kaldi IsReordered: whether self-loops come after the forward transition. */
static int is_reordered(const gh_transition_model *tm, const int32_t *ali, int32_t n) {
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (tm->id2state[ali[i]] != tm->id2state[ali[i + 1]]) {
      int loop1 = gh_transition_is_self_loop(tm, ali[i]), loop2 = gh_transition_is_self_loop(tm, ali[i + 1]);
      if (loop1) return 1;
      if (loop2) return 0;
    }
  }
  if (n == 0) return 0;
  if (gh_transition_is_self_loop(tm, ali[0])) return 0;
  return gh_transition_is_self_loop(tm, ali[n - 1]);
}

int gh_split_to_phones(const gh_transition_model *tm, const int32_t *ali, int32_t n, int32_t **ends, int32_t *num) {
  *num = 0;
  if (n == 0) return 1;
  int reordered = is_reordered(tm, ali, n), ok = 1;
  int32_t cap = 0;
#define PUSH(v)                                                                   \
  do {                                                                            \
    if (*num == cap) *ends = gh_realloc(*ends, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(int32_t)); \
    (*ends)[(*num)++] = (v);                                                      \
  } while (0)
  for (int32_t i = 0; i < n; ++i) {
    if (gh_transition_is_final(tm, ali[i])) {
      if (reordered)
        while (i + 1 < n && gh_transition_is_self_loop(tm, ali[i + 1]) && tm->id2state[ali[i + 1]] == tm->id2state[ali[i]])
          ++i;
      PUSH(i + 1);
    } else if (i + 1 == n) {
      ok = 0;
      PUSH(i + 1);
    } else {
      int32_t s1 = tm->id2state[ali[i]], s2 = tm->id2state[ali[i + 1]];
      if (s1 != s2 && tm->tuples[s1 - 1].phone != tm->tuples[s2 - 1].phone) {
        ok = 0;
        PUSH(i + 1);
      }
    }
  }
#undef PUSH
  int32_t start = 0;
  for (int32_t k = 0; k < *num; ++k) {
    const gh_trans_tuple *t = &tm->tuples[tm->id2state[ali[start]] - 1];
    if (gh_transition_entry(tm, t->phone)->states[0].forward_pdf_class != -1 && t->hmm_state != 0) ok = 0;
    start = (*ends)[k];
  }
  return ok;
}

/* Kaldi ChangeReorderingOfAlignment: within each run of one
 * transition-state, swap the first and last transition-ids so that the
 * self-loops move from after the forward transition to before it or back. */
static void change_reordering(const gh_transition_model *tm, int32_t *ali, int32_t n) {
  int32_t start = 0;
  while (start != n) {
    int32_t ts = tm->id2state[ali[start]];
    int start_not_loop = !gh_transition_is_self_loop(tm, ali[start]);
    int32_t end = start + 1;
    while (end != n && tm->id2state[ali[end]] == ts) {
      if (!gh_transition_is_self_loop(tm, ali[end])) {
        if (!start_not_loop) break;
        end++;
        break;
      }
      end++;
    }
    int32_t tmp = ali[start];
    ali[start] = ali[end - 1];
    ali[end - 1] = tmp;
    start = end;
  }
}

static int same_entry(const gh_topo_entry *a, const gh_topo_entry *b) {
  if (a->num_states != b->num_states) return 0;
  for (int32_t s = 0; s < a->num_states; ++s) {
    const gh_hmm_state *x = &a->states[s], *y = &b->states[s];
    if (x->forward_pdf_class != y->forward_pdf_class || x->self_loop_pdf_class != y->self_loop_pdf_class ||
        x->num_trans != y->num_trans)
      return 0;
    for (int32_t k = 0; k < x->num_trans; ++k)
      if (x->dst[k] != y->dst[k] || x->prob[k] != y->prob[k]) return 0;
  }
  return 1;
}

int gh_convert_alignment(const gh_transition_model *old_tm, const gh_transition_model *new_tm, const gh_ctx_dep *ctx,
                         const int32_t *ali, int32_t n, int reorder, int32_t *out, char *err, size_t errlen) {
  return gh_convert_alignment_map(old_tm, new_tm, ctx, NULL, 0, ali, n, reorder, out, err, errlen);
}

int gh_convert_alignment_map(const gh_transition_model *old_tm, const gh_transition_model *new_tm,
                             const gh_ctx_dep *ctx, const int32_t *phone_map, int32_t phone_map_size,
                             const int32_t *ali, int32_t n, int reorder, int32_t *out, char *err, size_t errlen) {
  int old_reordered = is_reordered(old_tm, ali, n);
  int32_t *ends = NULL, nph = 0;
  if (!gh_split_to_phones(old_tm, ali, n, &ends, &nph)) {
    free(ends);
    snprintf(err, errlen, "the alignment does not split into phones (not an alignment of the old model?)");
    return 0;
  }
  int32_t *phones = gh_malloc((size_t)(nph ? nph : 1) * sizeof(int32_t));
  int ok = 1;
  for (int32_t i = 0, b = 0; i < nph; b = ends[i], ++i) {
    int32_t old_phone = old_tm->tuples[old_tm->id2state[ali[b]] - 1].phone;
    phones[i] = phone_map ? (old_phone < phone_map_size ? phone_map[old_phone] : -1) : old_phone;
    if (phones[i] <= 0 && ok) {
      snprintf(err, errlen, "could not map phone %d (not in the phone map)", old_phone);
      ok = 0;
    }
  }
  int32_t N = ctx->N, P = ctx->P, win[101];
  for (int32_t i = 0, b = 0; i < nph && ok; b = ends[i], ++i) {
    int32_t phone = phones[i], old_phone = old_tm->tuples[old_tm->id2state[ali[b]] - 1].phone;
    if (phone >= new_tm->num_phone2idx || new_tm->phone2idx[phone] < 0) {
      snprintf(err, errlen, "phone %d is not in the new model's topology", phone);
      ok = 0;
      break;
    }
    if (!same_entry(gh_transition_entry(old_tm, old_phone), gh_transition_entry(new_tm, phone))) {
      if (phone == old_phone)
        snprintf(err, errlen, "phone %d has different topologies in the two models (not supported)", phone);
      else
        snprintf(err, errlen, "phone %d, mapped to %d, has a different topology there (not supported)", old_phone,
                 phone);
      ok = 0;
      break;
    }
    for (int32_t k = 0; k < N; ++k) {
      int32_t j = i - P + k;
      win[k] = j >= 0 && j < nph ? phones[j] : 0;
    }
    for (int32_t t = b; t < ends[i]; ++t) {
      const gh_trans_tuple *ot = &old_tm->tuples[old_tm->id2state[ali[t]] - 1];
      const gh_hmm_state *st = &gh_transition_entry(old_tm, old_phone)->states[ot->hmm_state];
      int32_t fwd, loop;
      if (!gh_ctx_dep_compute(ctx, win, st->forward_pdf_class, &fwd) ||
          !gh_ctx_dep_compute(ctx, win, st->self_loop_pdf_class, &loop)) {
        snprintf(err, errlen, "the tree gives no pdf for phone %d (pdf-class %d) in its context", phone,
                 st->forward_pdf_class);
        ok = 0;
        break;
      }
      gh_trans_tuple key = {phone, ot->hmm_state, fwd, loop};
      int32_t ts = gh_transition_tuple_to_tstate(new_tm, key.phone, key.hmm_state, key.forward_pdf, key.self_loop_pdf);
      if (!ts) {
        snprintf(err, errlen, "(phone %d, HMM state %d, pdf %d) is not in the new model (tree and model disagree?)",
                 phone, ot->hmm_state, fwd);
        ok = 0;
        break;
      }
      out[t] = gh_transition_pair_to_tid(new_tm, ts, ali[t] - old_tm->state2id[old_tm->id2state[ali[t]]]);
    }
    if (ok && reorder != old_reordered) change_reordering(new_tm, out + b, ends[i] - b);
  }
  free(ends);
  free(phones);
  return ok;
}

char **gh_phone_names_read(const char *rx, int32_t *n) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("Could not read symbol table from file %s: %s", rx, gh_last_error());
  char **names = NULL;
  int32_t cap = 0, line_no = 0;
  *n = 0;
  while (!gh_istream_eof(in)) {
    char *line = gh_read_line(in), *save = NULL;
    line_no++;
    char *sym = strtok_r(line, " \t", &save), *id_s = strtok_r(NULL, " \t", &save);
    if (!sym) continue;
    char *end = NULL;
    long id = id_s ? strtol(id_s, &end, 10) : -1;
    if (!id_s || *end || id < 0 || id > 100000000 || strtok_r(NULL, " \t", &save))
      gh_die("%s: line %d is not \"symbol id\"", rx, line_no);
    if (id >= cap) {
      int32_t nc = cap ? cap : 64;
      while (nc <= id) nc *= 2;
      names = gh_realloc(names, (size_t)nc * sizeof(char *));
      memset(names + cap, 0, (size_t)(nc - cap) * sizeof(char *));
      cap = nc;
    }
    free(names[id]);
    names[id] = gh_strdup(sym);
    if (id + 1 > *n) *n = (int32_t)id + 1;
  }
  gh_istream_close(in);
  return names;
}

