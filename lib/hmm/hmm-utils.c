/* hmm-utils.c -- see hmm-utils.h (Kaldi hmm/hmm-utils.cc SplitToPhones). */
#include "hmm/hmm-utils.h"

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
