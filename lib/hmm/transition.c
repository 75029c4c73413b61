/* transition.c -- Kaldi TransitionModel + HmmTopology read/write (see
 * transition.h; Kaldi hmm/transition-model.cc Read/Write/ComputeDerived,
 * hmm/hmm-topology.cc Read/Write/IsHmm). */
#include "hmm/transition.h"
#include "tree/context-dep.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int32_t *dup_i32(const int32_t *p, int64_t n) {
  if (!p || n <= 0) return NULL;
  int32_t *q = gh_malloc((size_t)n * sizeof(int32_t));
  memcpy(q, p, (size_t)n * sizeof(int32_t));
  return q;
}

void gh_transition_free(gh_transition_model *tm) {
  if (!tm) return;
  free(tm->phones);
  free(tm->phone2idx);
  for (int32_t e = 0; e < tm->num_entries; ++e) {
    gh_topo_entry *en = &tm->entries[e];
    for (int32_t s = 0; s < en->num_states; ++s) {
      free(en->states[s].dst);
      free(en->states[s].prob);
    }
    free(en->states);
  }
  free(tm->entries);
  free(tm->tuples);
  free(tm->log_probs);
  free(tm->state2id);
  free(tm->id2state);
  free(tm->id2pdf);
  free(tm);
}

gh_transition_model *gh_transition_copy(const gh_transition_model *src) {
  if (!src) return NULL;
  gh_transition_model *tm = gh_calloc(1, sizeof(*tm));
  *tm = *src;
  tm->phones = dup_i32(src->phones, src->num_phones);
  tm->phone2idx = dup_i32(src->phone2idx, src->num_phone2idx);
  tm->entries = gh_calloc((size_t)(src->num_entries ? src->num_entries : 1), sizeof(gh_topo_entry));
  for (int32_t e = 0; e < src->num_entries; ++e) {
    const gh_topo_entry *se = &src->entries[e];
    gh_topo_entry *de = &tm->entries[e];
    de->num_states = se->num_states;
    de->states = gh_calloc((size_t)(se->num_states ? se->num_states : 1), sizeof(gh_hmm_state));
    for (int32_t s = 0; s < se->num_states; ++s) {
      de->states[s] = se->states[s];
      de->states[s].dst = dup_i32(se->states[s].dst, se->states[s].num_trans);
      if (se->states[s].num_trans > 0) {
        de->states[s].prob = gh_malloc((size_t)se->states[s].num_trans * sizeof(float));
        memcpy(de->states[s].prob, se->states[s].prob, (size_t)se->states[s].num_trans * sizeof(float));
      } else {
        de->states[s].prob = NULL;
      }
    }
  }
  tm->tuples = gh_malloc((size_t)(src->num_tuples ? src->num_tuples : 1) * sizeof(gh_trans_tuple));
  if (src->num_tuples) memcpy(tm->tuples, src->tuples, (size_t)src->num_tuples * sizeof(gh_trans_tuple));
  tm->log_probs = gh_malloc((size_t)(src->num_log_probs ? src->num_log_probs : 1) * sizeof(float));
  if (src->num_log_probs) memcpy(tm->log_probs, src->log_probs, (size_t)src->num_log_probs * sizeof(float));
  tm->state2id = dup_i32(src->state2id, (int64_t)src->num_tuples + 2);
  tm->id2state = dup_i32(src->id2state, (int64_t)src->num_tids + 1);
  tm->id2pdf = dup_i32(src->id2pdf, (int64_t)src->num_tids + 1);
  return tm;
}

/* Copy of the topology part only (no tuples, no probabilities). */
static gh_transition_model *gh_transition_copy_topology(const gh_transition_model *src) {
  gh_transition_model tmp = *src;
  tmp.num_tuples = 0;
  tmp.num_tids = 0;
  tmp.num_log_probs = 0;
  tmp.tuples = NULL;
  tmp.log_probs = NULL;
  tmp.state2id = tmp.id2state = tmp.id2pdf = NULL;
  gh_transition_model *tm = gh_transition_copy(&tmp);
  free(tm->tuples);
  free(tm->log_probs);
  free(tm->state2id);
  free(tm->id2state);
  free(tm->id2pdf);
  tm->tuples = NULL;
  tm->log_probs = NULL;
  tm->state2id = tm->id2state = tm->id2pdf = NULL;
  tm->num_pdfs = 0;
  return tm;
}

int gh_transition_is_hmm(const gh_transition_model *tm) {
  for (int32_t e = 0; e < tm->num_entries; ++e)
    for (int32_t s = 0; s < tm->entries[e].num_states; ++s)
      if (tm->entries[e].states[s].forward_pdf_class != tm->entries[e].states[s].self_loop_pdf_class)
        return 0;
  return 1;
}

/* Entry for a phone, or NULL if the phone is not covered. */
static const gh_topo_entry *entry_for_phone(const gh_transition_model *tm, int32_t phone) {
  if (phone < 0 || phone >= tm->num_phone2idx) return NULL;
  int32_t idx = tm->phone2idx[phone];
  if (idx < 0 || idx >= tm->num_entries) return NULL;
  return &tm->entries[idx];
}

/* ---------------- topology ---------------- */

static int32_t parse_int(gh_istream *in, const char *s, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *s == '\0' || *end != '\0' || v < INT32_MIN || v > INT32_MAX)
    gh_istream_fail(in, "reading HmmTopology: expected an integer (%s), got '%s'", what, gh_printable_token(s));
  return (int32_t)v;
}

static void push_i32(int32_t **arr, int32_t *n, int32_t *cap, int32_t v) {
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 8;
    *arr = gh_realloc(*arr, (size_t)*cap * sizeof(int32_t));
  }
  (*arr)[(*n)++] = v;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

static void read_topology_text(gh_istream *in, gh_transition_model *tm) {
  int32_t phones_cap = 0, entries_cap = 0;
  tm->num_phones = 0;
  tm->num_phone2idx = 0;
  tm->num_entries = 0;
  for (;;) {
    const char *tok = gh_read_token(in, 0);
    if (!strcmp(tok, "</Topology>")) break;
    if (strcmp(tok, "<TopologyEntry>"))
      gh_istream_fail(in, "reading HmmTopology: expected </Topology> or <TopologyEntry>, got '%s'", gh_printable_token(tok));
    gh_expect_token(in, 0, "<ForPhones>");
    int32_t *ph = NULL, nph = 0, cph = 0;
    for (;;) {
      tok = gh_read_token(in, 0);
      if (!strcmp(tok, "</ForPhones>")) break;
      push_i32(&ph, &nph, &cph, parse_int(in, tok, "phone"));
    }
    /* states */
    gh_topo_entry en = {0, NULL};
    int32_t states_cap = 0;
    tok = gh_read_token(in, 0);
    while (strcmp(tok, "</TopologyEntry>")) {
      if (strcmp(tok, "<State>"))
        gh_istream_fail(in, "reading HmmTopology: expected </TopologyEntry> or <State>, got '%s'", gh_printable_token(tok));
      int32_t state = gh_read_int32(in, 0);
      if (state != en.num_states)
        gh_istream_fail(in, "reading HmmTopology: states must be numbered from 0 in order, expected %d, got %d",
                        en.num_states, state);
      if (en.num_states == states_cap) {
        states_cap = states_cap ? 2 * states_cap : 8;
        en.states = gh_realloc(en.states, (size_t)states_cap * sizeof(gh_hmm_state));
      }
      gh_hmm_state *st = &en.states[en.num_states++];
      memset(st, 0, sizeof(*st));
      st->forward_pdf_class = st->self_loop_pdf_class = -1;
      tok = gh_read_token(in, 0);
      if (!strcmp(tok, "<PdfClass>")) {
        st->forward_pdf_class = st->self_loop_pdf_class = gh_read_int32(in, 0);
        tok = gh_read_token(in, 0);
        if (!strcmp(tok, "<SelfLoopPdfClass>"))
          gh_istream_fail(in, "reading HmmTopology: pdf classes are given by <PdfClass> or by a "
                              "<ForwardPdfClass>/<SelfLoopPdfClass> pair, not both");
      } else if (!strcmp(tok, "<ForwardPdfClass>")) {
        st->forward_pdf_class = gh_read_int32(in, 0);
        gh_expect_token(in, 0, "<SelfLoopPdfClass>");
        st->self_loop_pdf_class = gh_read_int32(in, 0);
        tok = gh_read_token(in, 0);
      }
      int32_t tcap = 0;
      while (!strcmp(tok, "<Transition>")) {
        int32_t d = gh_read_int32(in, 0);
        float p = gh_read_float(in, 0);
        if (st->num_trans == tcap) {
          tcap = tcap ? 2 * tcap : 4;
          st->dst = gh_realloc(st->dst, (size_t)tcap * sizeof(int32_t));
          st->prob = gh_realloc(st->prob, (size_t)tcap * sizeof(float));
        }
        st->dst[st->num_trans] = d;
        st->prob[st->num_trans] = p;
        st->num_trans++;
        tok = gh_read_token(in, 0);
      }
      if (!strcmp(tok, "<Final>"))
        gh_istream_fail(in, "reading HmmTopology: old-format topology (<Final>) is not supported");
      if (strcmp(tok, "</State>"))
        gh_istream_fail(in, "reading HmmTopology: expected </State>, got '%s'", gh_printable_token(tok));
      tok = gh_read_token(in, 0);
    }
    int32_t my_index = tm->num_entries;
    if (tm->num_entries == entries_cap) {
      entries_cap = entries_cap ? 2 * entries_cap : 4;
      tm->entries = gh_realloc(tm->entries, (size_t)entries_cap * sizeof(gh_topo_entry));
    }
    tm->entries[tm->num_entries++] = en;
    for (int32_t i = 0; i < nph; ++i) {
      int32_t phone = ph[i];
      if (phone <= 0) gh_istream_fail(in, "reading HmmTopology: phone %d must be > 0", phone);
      /* phone2idx is a table indexed by phone id (Kaldi's layout): bound it. */
      if (phone > GH_MAX_PHONE)
        gh_istream_fail(in, "reading HmmTopology: phone %d is larger than the largest phone id supported (%d)",
                        phone, GH_MAX_PHONE);
      if (phone >= tm->num_phone2idx) {
        tm->phone2idx = gh_realloc(tm->phone2idx, (size_t)(phone + 1) * sizeof(int32_t));
        for (int32_t j = tm->num_phone2idx; j <= phone; ++j) tm->phone2idx[j] = -1;
        tm->num_phone2idx = phone + 1;
      }
      if (tm->phone2idx[phone] != -1)
        gh_istream_fail(in, "reading HmmTopology: phone %d appears in several topology entries", phone);
      tm->phone2idx[phone] = my_index;
      push_i32(&tm->phones, &tm->num_phones, &phones_cap, phone);
    }
    free(ph);
  }
  if (tm->num_phones > 1) qsort(tm->phones, (size_t)tm->num_phones, sizeof(int32_t), cmp_i32);
}

static void read_topology_binary(gh_istream *in, gh_transition_model *tm) {
  tm->phones = gh_read_int32_vector_basic(in, 1, &tm->num_phones);
  tm->phone2idx = gh_read_int32_vector_basic(in, 1, &tm->num_phone2idx);
  int32_t sz = gh_read_int32(in, 1);
  int is_hmm = 1;
  if (sz == -1) {
    is_hmm = 0;
    sz = gh_read_int32(in, 1);
  }
  if (sz < 0 || sz > 1000000)
    gh_istream_fail(in, "reading HmmTopology: bad number of topology entries %d", sz);
  tm->num_entries = sz;
  gh_istream_need(in, (uint64_t)sz, 5, "topology entries");
  tm->entries = gh_calloc((size_t)(sz ? sz : 1), sizeof(gh_topo_entry));
  for (int32_t i = 0; i < sz; ++i) {
    int32_t ns = gh_read_int32(in, 1);
    if (ns < 0 || ns > 100000)
      gh_istream_fail(in, "reading HmmTopology: bad number of states %d in entry %d", ns, i);
    gh_topo_entry *en = &tm->entries[i];
    en->num_states = ns;
    gh_istream_need(in, (uint64_t)ns, 10, "topology states");
    en->states = gh_calloc((size_t)(ns ? ns : 1), sizeof(gh_hmm_state));
    for (int32_t j = 0; j < ns; ++j) {
      gh_hmm_state *st = &en->states[j];
      st->forward_pdf_class = gh_read_int32(in, 1);
      st->self_loop_pdf_class = is_hmm ? st->forward_pdf_class : gh_read_int32(in, 1);
      int32_t nt = gh_read_int32(in, 1);
      if (nt < 0 || nt > 100000)
        gh_istream_fail(in, "reading HmmTopology: bad number of transitions %d (entry %d, state %d)", nt, i, j);
      st->num_trans = nt;
      gh_istream_need(in, (uint64_t)nt, 10, "topology transitions");
      st->dst = nt ? gh_malloc((size_t)nt * sizeof(int32_t)) : NULL;
      st->prob = nt ? gh_malloc((size_t)nt * sizeof(float)) : NULL;
      for (int32_t k = 0; k < nt; ++k) {
        st->dst[k] = gh_read_int32(in, 1);
        st->prob[k] = gh_read_float(in, 1);
      }
    }
  }
  gh_expect_token(in, 1, "</Topology>");
}

/* The parts of Kaldi's HmmTopology::Check that the rest of the code relies
 * on (valid indices); probability sums are not re-checked. */
static void check_topology(gh_istream *in, const gh_transition_model *tm) {
  if (tm->num_entries == 0 || tm->num_phones == 0 || tm->num_phone2idx == 0)
    gh_istream_fail(in, "HmmTopology: empty topology");
  for (int32_t i = 0; i < tm->num_phones; ++i)
    if (!entry_for_phone(tm, tm->phones[i]))
      gh_istream_fail(in, "HmmTopology: phone %d has no valid topology entry", tm->phones[i]);
  /* Kaldi HmmTopology::Check: the phone list is sorted and unique and is
   * exactly the set of phones phone2idx maps (a binary file holds both). */
  for (int32_t i = 1; i < tm->num_phones; ++i)
    if (tm->phones[i] <= tm->phones[i - 1])
      gh_istream_fail(in, "HmmTopology: phone list not sorted and unique (%d after %d)", tm->phones[i],
                      tm->phones[i - 1]);
  {
    int32_t mapped = 0;
    for (int32_t j = 0; j < tm->num_phone2idx; ++j) mapped += tm->phone2idx[j] != -1;
    if (mapped != tm->num_phones)
      gh_istream_fail(in, "HmmTopology: %d phones listed but %d mapped to topology entries", tm->num_phones, mapped);
  }
  for (int32_t e = 0; e < tm->num_entries; ++e) {
    const gh_topo_entry *en = &tm->entries[e];
    if (en->num_states <= 1)
      gh_istream_fail(in, "HmmTopology: entry %d has %d states (need an emitting state and a final state)",
                      e, en->num_states);
    if (en->states[en->num_states - 1].num_trans != 0)
      gh_istream_fail(in, "HmmTopology: entry %d: the last state must have no transitions", e);
    for (int32_t s = 0; s < en->num_states; ++s)
      for (int32_t k = 0; k < en->states[s].num_trans; ++k) {
        int32_t d = en->states[s].dst[k];
        float pr = en->states[s].prob[k];
        if (!(pr >= 0.0f && pr <= 1.0f))
          gh_istream_fail(in, "HmmTopology: entry %d, state %d: transition probability %g is not in [0, 1]", e, s,
                          (double)pr);
        if (d < 0 || d >= en->num_states)
          gh_istream_fail(in, "HmmTopology: entry %d, state %d: invalid destination state %d", e, s, d);
        if (!(en->states[s].prob[k] > 0.0f))
          gh_istream_fail(in, "HmmTopology: entry %d, state %d: transition probability %g is not positive", e,
                          s, (double)en->states[s].prob[k]);
      }
  }
}

/* Failure while deriving tables: through the stream (file + offset) when
 * reading, else one gh_die line naming "what". */
static void GH_PRINTF(3, 4) GH_NORETURN derive_fail(gh_istream *in, const char *what, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (in) gh_istream_fail(in, "%s", buf);
  gh_die("%s: %s", what, buf);
}

/* Kaldi TransitionModel::ComputeDerived. */
static void compute_derived(gh_istream *in, const char *what, gh_transition_model *tm) {
  int32_t nt = tm->num_tuples;
  tm->state2id = gh_malloc((size_t)(nt + 2) * sizeof(int32_t));
  tm->state2id[0] = 0;
  int64_t cur = 1;
  tm->num_pdfs = 0;
  for (int32_t ts = 1; ts <= nt + 1; ++ts) {
    tm->state2id[ts] = (int32_t)cur;
    if (ts <= nt) {
      const gh_trans_tuple *t = &tm->tuples[ts - 1];
      const gh_topo_entry *en = entry_for_phone(tm, t->phone);
      if (!en) derive_fail(in, what, "TransitionModel: tuple %d has phone %d not in the topology", ts - 1, t->phone);
      if (t->hmm_state < 0 || t->hmm_state >= en->num_states)
        derive_fail(in, what, "TransitionModel: tuple %d has HMM state %d out of range for phone %d", ts - 1,
                        t->hmm_state, t->phone);
      if (t->forward_pdf < 0 || t->self_loop_pdf < 0)
        derive_fail(in, what, "TransitionModel: tuple %d has a negative pdf id", ts - 1);
      if (t->forward_pdf + 1 > tm->num_pdfs) tm->num_pdfs = t->forward_pdf + 1;
      if (t->self_loop_pdf + 1 > tm->num_pdfs) tm->num_pdfs = t->self_loop_pdf + 1;
      cur += en->states[t->hmm_state].num_trans;
      if (cur > INT32_MAX) derive_fail(in, what, "TransitionModel: too many transition-ids");
    }
  }
  tm->num_tids = (int32_t)(cur - 1);
  tm->id2state = gh_malloc((size_t)cur * sizeof(int32_t));
  tm->id2pdf = gh_malloc((size_t)cur * sizeof(int32_t));
  tm->id2state[0] = 0;
  tm->id2pdf[0] = -1;
  for (int32_t ts = 1; ts <= nt; ++ts) {
    const gh_trans_tuple *t = &tm->tuples[ts - 1];
    const gh_topo_entry *en = entry_for_phone(tm, t->phone);
    const gh_hmm_state *st = &en->states[t->hmm_state];
    for (int32_t tid = tm->state2id[ts]; tid < tm->state2id[ts + 1]; ++tid) {
      tm->id2state[tid] = ts;
      int self = st->dst[tid - tm->state2id[ts]] == t->hmm_state;
      tm->id2pdf[tid] = self ? t->self_loop_pdf : t->forward_pdf;
    }
  }
}

gh_transition_model *gh_transition_read(gh_istream *in, int binary) {
  gh_transition_model *tm = gh_calloc(1, sizeof(*tm));
  gh_expect_token(in, binary, "<TransitionModel>");
  gh_expect_token(in, binary, "<Topology>");
  if (binary)
    read_topology_binary(in, tm);
  else
    read_topology_text(in, tm);
  check_topology(in, tm);
  const char *tok = gh_read_token(in, binary);
  int tuples;
  if (!strcmp(tok, "<Triples>"))
    tuples = 0;
  else if (!strcmp(tok, "<Tuples>"))
    tuples = 1;
  else
    gh_istream_fail(in, "reading TransitionModel: expected <Triples> or <Tuples>, got '%s'", gh_printable_token(tok));
  int32_t n = gh_read_int32(in, binary);
  if (n < 0 || n > 100000000) gh_istream_fail(in, "reading TransitionModel: bad number of tuples %d", n);
  tm->num_tuples = n;
  gh_istream_need(in, (uint64_t)n, binary ? 15 : 8, "transition tuples");
  tm->tuples = gh_malloc((size_t)(n ? n : 1) * sizeof(gh_trans_tuple));
  for (int32_t i = 0; i < n; ++i) {
    gh_trans_tuple *t = &tm->tuples[i];
    t->phone = gh_read_int32(in, binary);
    t->hmm_state = gh_read_int32(in, binary);
    t->forward_pdf = gh_read_int32(in, binary);
    t->self_loop_pdf = tuples ? gh_read_int32(in, binary) : t->forward_pdf;
  }
  tok = gh_read_token(in, binary);
  if (strcmp(tok, "</Triples>") && strcmp(tok, "</Tuples>"))
    gh_istream_fail(in, "reading TransitionModel: expected </Triples> or </Tuples>, got '%s'", gh_printable_token(tok));
  compute_derived(in, NULL, tm);
  gh_expect_token(in, binary, "<LogProbs>");
  gh_vector lp = {0, NULL};
  gh_read_vector(in, binary, &lp);
  tm->num_log_probs = lp.dim;
  tm->log_probs = lp.data;
  gh_expect_token(in, binary, "</LogProbs>");
  gh_expect_token(in, binary, "</TransitionModel>");
  if (tm->num_log_probs != tm->num_tids + 1)
    gh_istream_fail(in, "TransitionModel: <LogProbs> has %d values, expected %d (number of transition-ids + 1)",
                    tm->num_log_probs, tm->num_tids + 1);
  for (int32_t i = 0; i < tm->num_log_probs; ++i) /* log-probabilities: not NaN, probability <= 1 */
    if (isnan(tm->log_probs[i]) || tm->log_probs[i] > 1e-3f)
      gh_istream_fail(in, "TransitionModel: <LogProbs> value %d is %g (must be a log-probability <= 0)", i,
                      (double)tm->log_probs[i]);
  return tm;
}

void gh_transition_write(gh_ostream *out, int binary, const gh_transition_model *tm) {
  FILE *fp = gh_ostream_fp(out);
  int is_hmm = gh_transition_is_hmm(tm);
  gh_write_token(out, binary, "<TransitionModel>");
  if (!binary) fputs("\n", fp);
  /* HmmTopology::Write */
  gh_write_token(out, binary, "<Topology>");
  if (!binary) {
    fputs("\n", fp);
    for (int32_t i = 0; i < tm->num_entries; ++i) {
      gh_write_token(out, 0, "<TopologyEntry>");
      fputs("\n", fp);
      gh_write_token(out, 0, "<ForPhones>");
      fputs("\n", fp);
      for (int32_t j = 0; j < tm->num_phone2idx; ++j)
        if (tm->phone2idx[j] == i) fprintf(fp, "%d ", j);
      fputs("\n", fp);
      gh_write_token(out, 0, "</ForPhones>");
      fputs("\n", fp);
      const gh_topo_entry *en = &tm->entries[i];
      for (int32_t j = 0; j < en->num_states; ++j) {
        const gh_hmm_state *st = &en->states[j];
        gh_write_token(out, 0, "<State>");
        gh_write_int32(out, 0, j);
        if (st->forward_pdf_class != -1) {
          if (is_hmm) {
            gh_write_token(out, 0, "<PdfClass>");
            gh_write_int32(out, 0, st->forward_pdf_class);
          } else {
            gh_write_token(out, 0, "<ForwardPdfClass>");
            gh_write_int32(out, 0, st->forward_pdf_class);
            gh_write_token(out, 0, "<SelfLoopPdfClass>");
            gh_write_int32(out, 0, st->self_loop_pdf_class);
          }
        }
        for (int32_t k = 0; k < st->num_trans; ++k) {
          gh_write_token(out, 0, "<Transition>");
          gh_write_int32(out, 0, st->dst[k]);
          gh_model_write_float(out, 0, st->prob[k]);
        }
        gh_write_token(out, 0, "</State>");
        fputs("\n", fp);
      }
      gh_write_token(out, 0, "</TopologyEntry>");
      fputs("\n", fp);
    }
  } else {
    gh_write_int32_vector_basic(out, 1, tm->phones, tm->num_phones);
    gh_write_int32_vector_basic(out, 1, tm->phone2idx, tm->num_phone2idx);
    if (!is_hmm) gh_write_int32(out, 1, -1);
    gh_write_int32(out, 1, tm->num_entries);
    for (int32_t i = 0; i < tm->num_entries; ++i) {
      const gh_topo_entry *en = &tm->entries[i];
      gh_write_int32(out, 1, en->num_states);
      for (int32_t j = 0; j < en->num_states; ++j) {
        const gh_hmm_state *st = &en->states[j];
        gh_write_int32(out, 1, st->forward_pdf_class);
        if (!is_hmm) gh_write_int32(out, 1, st->self_loop_pdf_class);
        gh_write_int32(out, 1, st->num_trans);
        for (int32_t k = 0; k < st->num_trans; ++k) {
          gh_write_int32(out, 1, st->dst[k]);
          gh_write_float(out, 1, st->prob[k]);
        }
      }
    }
  }
  gh_write_token(out, binary, "</Topology>");
  if (!binary) fputs("\n", fp);
  /* tuples */
  gh_write_token(out, binary, is_hmm ? "<Triples>" : "<Tuples>");
  gh_write_int32(out, binary, tm->num_tuples);
  if (!binary) fputs("\n", fp);
  for (int32_t i = 0; i < tm->num_tuples; ++i) {
    const gh_trans_tuple *t = &tm->tuples[i];
    gh_write_int32(out, binary, t->phone);
    gh_write_int32(out, binary, t->hmm_state);
    gh_write_int32(out, binary, t->forward_pdf);
    if (!is_hmm) gh_write_int32(out, binary, t->self_loop_pdf);
    if (!binary) fputs("\n", fp);
  }
  gh_write_token(out, binary, is_hmm ? "</Triples>" : "</Tuples>");
  if (!binary) fputs("\n", fp);
  gh_write_token(out, binary, "<LogProbs>");
  if (!binary) fputs("\n", fp);
  gh_model_write_vector(out, binary, tm->num_log_probs, tm->log_probs);
  gh_write_token(out, binary, "</LogProbs>");
  if (!binary) fputs("\n", fp);
  gh_write_token(out, binary, "</TransitionModel>");
  if (!binary) fputs("\n", fp);
}

static void check_tid(const gh_transition_model *tm, int32_t tid) {
  if (tid < 1 || tid > tm->num_tids)
    gh_die("transition-id %d out of range [1, %d]", tid, tm->num_tids);
}

int32_t gh_transition_tid2pdf(const gh_transition_model *tm, int32_t tid) {
  check_tid(tm, tid);
  return tm->id2pdf[tid];
}

int32_t gh_transition_tid2phone(const gh_transition_model *tm, int32_t tid) {
  check_tid(tm, tid);
  return tm->tuples[tm->id2state[tid] - 1].phone;
}

int32_t gh_transition_tid2hmm_state(const gh_transition_model *tm, int32_t tid) {
  check_tid(tm, tid);
  return tm->tuples[tm->id2state[tid] - 1].hmm_state;
}

int gh_transition_is_self_loop(const gh_transition_model *tm, int32_t tid) {
  check_tid(tm, tid);
  int32_t ts = tm->id2state[tid];
  const gh_trans_tuple *t = &tm->tuples[ts - 1];
  const gh_topo_entry *en = entry_for_phone(tm, t->phone);
  return en->states[t->hmm_state].dst[tid - tm->state2id[ts]] == t->hmm_state;
}

float gh_transition_log_prob(const gh_transition_model *tm, int32_t tid) {
  check_tid(tm, tid);
  return tm->log_probs[tid];
}

/* ---------------- topology files and construction ---------------- */

gh_transition_model *gh_topology_read(const char *rxfilename) {
  gh_istream *in = gh_istream_open(rxfilename);
  if (!in) gh_die("reading topology: %s%s", gh_last_error(), gh_rspecifier_hint(rxfilename));
  int binary = gh_read_binary_marker(in);
  gh_transition_model *tm = gh_calloc(1, sizeof(*tm));
  gh_expect_token(in, binary, "<Topology>");
  if (binary)
    read_topology_binary(in, tm);
  else
    read_topology_text(in, tm);
  check_topology(in, tm);
  gh_istream_close(in);
  return tm;
}

int32_t gh_topology_num_pdf_classes(const gh_transition_model *tm, int32_t phone) {
  const gh_topo_entry *en = entry_for_phone(tm, phone);
  if (!en) gh_die("phone %d is not in the topology", phone);
  int32_t mx = -1;
  for (int32_t s = 0; s < en->num_states; ++s) {
    if (en->states[s].forward_pdf_class > mx) mx = en->states[s].forward_pdf_class;
    if (en->states[s].self_loop_pdf_class > mx) mx = en->states[s].self_loop_pdf_class;
  }
  return mx + 1;
}

static int cmp_tuple(const void *a, const void *b) {
  const gh_trans_tuple *x = a, *y = b;
  if (x->phone != y->phone) return x->phone < y->phone ? -1 : 1;
  if (x->hmm_state != y->hmm_state) return x->hmm_state < y->hmm_state ? -1 : 1;
  if (x->forward_pdf != y->forward_pdf) return x->forward_pdf < y->forward_pdf ? -1 : 1;
  return x->self_loop_pdf < y->self_loop_pdf ? -1 : x->self_loop_pdf > y->self_loop_pdf;
}

gh_transition_model *gh_transition_init(const gh_transition_model *topo, const gh_ctx_dep *ctx, const char *what) {
  if (!gh_transition_is_hmm(topo))
    gh_die("%s: topologies with separate self-loop pdf-classes are not supported", what);
  gh_transition_model *tm = gh_transition_copy_topology(topo);
  int32_t max_phone = tm->phones[tm->num_phones - 1];
  int32_t *ncls = gh_calloc((size_t)max_phone + 1, sizeof(int32_t));
  for (int32_t i = 0; i < tm->num_phones; ++i) ncls[tm->phones[i]] = gh_topology_num_pdf_classes(tm, tm->phones[i]);
  gh_pdf_info info;
  gh_ctx_dep_pdf_info(ctx, tm->phones, tm->num_phones, ncls, &info);
  int32_t cap = 0;
  for (int32_t pdf = 0; pdf < info.num_pdfs; ++pdf)
    for (int32_t j = 0; j < info.lens[pdf]; ++j) {
      int32_t phone = info.pairs[pdf][2 * j], cls = info.pairs[pdf][2 * j + 1];
      const gh_topo_entry *en = entry_for_phone(tm, phone);
      int any = 0;
      for (int32_t s = 0; s < en->num_states; ++s) {
        if (en->states[s].forward_pdf_class != cls) continue;
        if (tm->num_tuples == cap) {
          cap = cap ? 2 * cap : 64;
          tm->tuples = gh_realloc(tm->tuples, (size_t)cap * sizeof(gh_trans_tuple));
        }
        tm->tuples[tm->num_tuples++] = (gh_trans_tuple){phone, s, pdf, pdf};
        any = 1;
      }
      if (!any) gh_die("%s: the tree maps phone %d, pdf-class %d, which its topology does not have", what, phone, cls);
    }
  gh_ctx_dep_pdf_info_free(&info);
  free(ncls);
  if (tm->num_tuples == 0) gh_die("%s: the tree gives no pdf for any phone of the topology", what);
  qsort(tm->tuples, (size_t)tm->num_tuples, sizeof(gh_trans_tuple), cmp_tuple);
  compute_derived(NULL, what, tm);
  tm->num_log_probs = tm->num_tids + 1;
  tm->log_probs = gh_calloc((size_t)tm->num_log_probs, sizeof(float));
  for (int32_t tid = 1; tid <= tm->num_tids; ++tid) {
    int32_t ts = tm->id2state[tid];
    const gh_trans_tuple *t = &tm->tuples[ts - 1];
    float p = entry_for_phone(tm, t->phone)->states[t->hmm_state].prob[tid - tm->state2id[ts]];
    tm->log_probs[tid] = logf(p);
  }
  return tm;
}

gh_transition_model *gh_transition_read_file(const char *rxfilename) {
  gh_istream *in = gh_istream_open(rxfilename);
  if (!in) gh_die("reading model: %s%s", gh_last_error(), gh_rspecifier_hint(rxfilename));
  int binary = gh_read_binary_marker(in);
  if (strcmp(gh_peek_token(in, binary), "<TransitionModel>"))
    gh_istream_fail(in, "expected a Kaldi model starting with <TransitionModel>, got '%s'",
                    gh_printable_token(gh_peek_token(in, binary)));
  gh_transition_model *tm = gh_transition_read(in, binary);
  gh_istream_close(in);
  return tm;
}

int32_t gh_transition_tid2tstate(const gh_transition_model *tm, int32_t tid) {
  check_tid(tm, tid);
  return tm->id2state[tid];
}

int gh_transition_is_final(const gh_transition_model *tm, int32_t tid) {
  check_tid(tm, tid);
  int32_t ts = tm->id2state[tid];
  const gh_trans_tuple *t = &tm->tuples[ts - 1];
  const gh_topo_entry *en = entry_for_phone(tm, t->phone);
  return en->states[t->hmm_state].dst[tid - tm->state2id[ts]] == en->num_states - 1;
}

int32_t gh_transition_tid2index(const gh_transition_model *tm, int32_t tid) {
  check_tid(tm, tid);
  return tid - tm->state2id[tm->id2state[tid]];
}

const gh_topo_entry *gh_transition_entry(const gh_transition_model *tm, int32_t phone) {
  const gh_topo_entry *en = entry_for_phone(tm, phone);
  if (!en) gh_die("phone %d is not in the topology", phone);
  return en;
}

void gh_transition_check_alignment(const gh_transition_model *tm, const int32_t *ali, int32_t n, const char *spec,
                                   const char *key, const char *model) {
  for (int32_t t = 0; t < n; ++t)
    if (ali[t] < 1 || ali[t] > tm->num_tids)
      gh_die("%s, key '%s': transition-id %d at frame %d is out of range [1, %d] for the model %s", spec, key, ali[t],
             t, tm->num_tids, model);
}

void gh_transition_mle_update(gh_transition_model *tm, const double *stats, int32_t num_stats, float floor,
                              float min_count, double *objf_impr, double *count, int32_t *num_floored,
                              int32_t *num_skipped) {
  if (num_stats != tm->num_tids + 1)
    gh_die("transition statistics have %d entries, the model has %d transition-ids (+1)", num_stats, tm->num_tids);
  float count_sum = 0.0f, impr_sum = 0.0f;
  int32_t nfl = 0, nsk = 0;
  for (int32_t ts = 1; ts <= tm->num_tuples; ++ts) {
    int32_t first = tm->state2id[ts], n = tm->state2id[ts + 1] - first;
    if (n <= 1) continue;
    double tot = 0;
    for (int32_t i = 0; i < n; ++i) tot += stats[first + i];
    count_sum += (float)tot;
    if (tot < min_count) {
      nsk++;
      continue;
    }
    float newp[n], oldp[n];
    for (int32_t i = 0; i < n; ++i) {
      oldp[i] = expf(tm->log_probs[first + i]);
      newp[i] = (float)(stats[first + i] / tot);
    }
    for (int it = 0; it < 3; ++it) { /* floor and renormalise three times (Kaldi) */
      double s = 0;
      for (int32_t i = 0; i < n; ++i) s += newp[i];
      float scale = (float)(1.0 / s);
      for (int32_t i = 0; i < n; ++i) newp[i] *= scale;
      for (int32_t i = 0; i < n; ++i)
        if (newp[i] < floor) newp[i] = floor;
    }
    for (int32_t i = 0; i < n; ++i) {
      if (newp[i] == floor) nfl++;
      impr_sum += (float)(stats[first + i] * (double)(logf(newp[i]) - logf(oldp[i])));
    }
    for (int32_t i = 0; i < n; ++i) {
      tm->log_probs[first + i] = logf(newp[i]);
      if (!isfinite(tm->log_probs[first + i]))
        gh_die("transition update: log-probability of transition-id %d is not finite (bad statistics?)", first + i);
    }
  }
  if (objf_impr) *objf_impr = impr_sum;
  if (count) *count = count_sum;
  if (num_floored) *num_floored = nfl;
  if (num_skipped) *num_skipped = nsk;
}

int32_t gh_transition_tuple_to_tstate(const gh_transition_model *tm, int32_t phone, int32_t hmm_state,
                                      int32_t forward_pdf, int32_t self_loop_pdf) {
  gh_trans_tuple key = {phone, hmm_state, forward_pdf, self_loop_pdf};
  int32_t lo = 0, hi = tm->num_tuples;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    const gh_trans_tuple *t = &tm->tuples[mid];
    int less = t->phone != key.phone             ? t->phone < key.phone
               : t->hmm_state != key.hmm_state   ? t->hmm_state < key.hmm_state
               : t->forward_pdf != key.forward_pdf ? t->forward_pdf < key.forward_pdf
                                                   : t->self_loop_pdf < key.self_loop_pdf;
    if (less)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < tm->num_tuples && !memcmp(&tm->tuples[lo], &key, sizeof key)) return lo + 1;
  return 0;
}

int32_t gh_transition_pair_to_tid(const gh_transition_model *tm, int32_t tstate, int32_t index) {
  if (tstate < 1 || tstate > tm->num_tuples)
    gh_die("transition-state %d out of range [1, %d]", tstate, tm->num_tuples);
  if (index < 0 || index >= tm->state2id[tstate + 1] - tm->state2id[tstate])
    gh_die("transition index %d out of range for transition-state %d (%d transitions)", index, tstate,
           tm->state2id[tstate + 1] - tm->state2id[tstate]);
  return tm->state2id[tstate] + index;
}

float *gh_transition_scaled_log_probs(const gh_transition_model *tm, float transition_scale, float self_loop_scale) {
  float *out = gh_calloc((size_t)tm->num_tids + 1, sizeof(float));
  float *nsl = gh_calloc((size_t)tm->num_tuples + 1, sizeof(float)); /* per transition-state */
  for (int32_t ts = 1; ts <= tm->num_tuples; ++ts) {
    nsl[ts] = 0.0f;
    for (int32_t tid = tm->state2id[ts]; tid < tm->state2id[ts + 1]; ++tid)
      if (gh_transition_is_self_loop(tm, tid)) {
        const float p = expf(gh_transition_log_prob(tm, tid));
        float q = (float)(1.0 - (double)p);
        if (q <= 0.0f) q = 1.0e-10f;
        nsl[ts] = logf(q);
      }
  }
  for (int32_t tid = 1; tid <= tm->num_tids; ++tid) {
    const float lp = gh_transition_log_prob(tm, tid);
    if (transition_scale == self_loop_scale) {
      out[tid] = lp * transition_scale;
    } else if (gh_transition_is_self_loop(tm, tid)) {
      out[tid] = self_loop_scale * lp;
    } else {
      const float n = nsl[gh_transition_tid2tstate(tm, tid)];
      const float a = self_loop_scale * n, b = lp - n;
      const float c = transition_scale * b;
      out[tid] = a + c;
    }
  }
  free(nsl);
  return out;
}
