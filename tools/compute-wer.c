/* compute-wer -- word error rate of hypotheses against reference
 * transcriptions (Kaldi's compute-wer: same options, arguments and output
 * lines).  Per utterance, a Levenshtein alignment over word tokens gives
 * the insertions, deletions and substitutions; optional outputs are Kaldi's
 * alignment statistics (<stats-out>) and Kaldi's per-utterance details
 * (--per-utt, the format of steps/scoring/wer_per_utt_details.pl). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "io/kaldi-io.h"
#include "base/opts.h"
#include "io/table.h"

typedef struct { int32_t n, cap; char **tok; char *buf; } words;

/* Split s (tokens separated by single spaces, as the token-vector reader
 * gives them) into w; the strings are copied. */
static void words_set_text(words *w, const char *s) {
  free(w->buf);
  w->buf = gh_strdup(s);
  w->n = 0;
  for (char *save = NULL, *t = strtok_r(w->buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
    if (w->n == w->cap) w->tok = gh_realloc(w->tok, (w->cap = w->cap ? 2 * w->cap : 16) * sizeof(char *));
    w->tok[w->n++] = t;
  }
}

/* Integer input: the ids printed as decimal tokens. */
static void words_set_ints(words *w, const gh_ivector *v) {
  free(w->buf);
  w->buf = gh_malloc((size_t)v->dim * 12 + 1);
  w->n = 0;
  if (v->dim > w->cap) w->tok = gh_realloc(w->tok, (w->cap = v->dim) * sizeof(char *));
  char *p = w->buf;
  for (int32_t i = 0; i < v->dim; ++i) {
    w->tok[w->n++] = p;
    p += sprintf(p, "%d", (int)v->data[i]) + 1;
  }
}

static void words_free(words *w) { free(w->tok); free(w->buf); memset(w, 0, sizeof *w); }

static int words_equal(const words *a, const words *b) {
  if (a->n != b->n) return 0;
  for (int32_t i = 0; i < a->n; ++i) if (strcmp(a->tok[i], b->tok[i])) return 0;
  return 1;
}

/* One aligned pair: indices into ref and hyp, -1 for the empty side. */
typedef struct { int32_t r, h; } pair;

/* Levenshtein alignment of ref and hyp (unit costs).  Fills *al (n_al
 * pairs, in order) and the error counts; returns the edit distance.  On
 * equal cost the traceback prefers match/substitution, then deletion, then
 * insertion (Kaldi's LevenshteinAlignment). */
static int32_t align(const words *ref, const words *hyp, pair **al, int32_t *n_al, int32_t *cap_al,
                     int32_t *ins, int32_t *del, int32_t *sub) {
  const int32_t M = ref->n, N = hyp->n;
  int32_t *e = gh_malloc((size_t)(M + 1) * (N + 1) * sizeof(int32_t));
#define E(m, n) e[(size_t)(m) * (N + 1) + (n)]
  for (int32_t n = 0; n <= N; ++n) E(0, n) = n;
  for (int32_t m = 1; m <= M; ++m) {
    E(m, 0) = m;
    for (int32_t n = 1; n <= N; ++n) {
      int32_t s = E(m - 1, n - 1) + (strcmp(ref->tok[m - 1], hyp->tok[n - 1]) != 0);
      int32_t d = E(m - 1, n) + 1, i = E(m, n - 1) + 1;
      E(m, n) = s < d ? (s < i ? s : i) : (d < i ? d : i);
    }
  }
  int32_t dist = E(M, N);
  *ins = *del = *sub = 0;
  if (M + N > *cap_al) *al = gh_realloc(*al, (size_t)(*cap_al = M + N) * sizeof(pair));
  int32_t k = 0, m = M, n = N;
  while (m > 0 || n > 0) {
    pair p;
    if (m > 0 && n > 0) {
      int32_t s = E(m - 1, n - 1) + (strcmp(ref->tok[m - 1], hyp->tok[n - 1]) != 0);
      int32_t d = E(m - 1, n) + 1, i = E(m, n - 1) + 1;
      if (s <= d && s <= i) p = (pair){m - 1, n - 1};
      else if (d <= i) p = (pair){m - 1, -1};
      else p = (pair){-1, n - 1};
    } else if (m > 0) {
      p = (pair){m - 1, -1};
    } else {
      p = (pair){-1, n - 1};
    }
    if (p.r >= 0) --m;
    if (p.h >= 0) --n;
    if (p.r < 0) ++*ins;
    else if (p.h < 0) ++*del;
    else if (strcmp(ref->tok[p.r], hyp->tok[p.h])) ++*sub;
    (*al)[k++] = p;
  }
#undef E
  free(e);
  for (int32_t a = 0, b = k - 1; a < b; ++a, --b) { pair t = (*al)[a]; (*al)[a] = (*al)[b]; (*al)[b] = t; }
  *n_al = k;
  return dist;
}

/* Kaldi's per_utt lines: ref, hyp, op (C S I D) with columns padded to the
 * widest entry, and #csid (correct, substitutions, insertions, deletions). */
static void write_per_utt(FILE *fp, const char *key, const words *ref, const words *hyp, const pair *al,
                          int32_t n_al, int32_t ins, int32_t del, int32_t sub) {
  static const char *eps = "***";
  const char *rows[3] = {"ref", "hyp", " op"};
  for (int row = 0; row < 3; ++row) {
    fprintf(fp, "%s %s", key, rows[row]);
    for (int32_t k = 0; k < n_al; ++k) {
      const char *r = al[k].r >= 0 ? ref->tok[al[k].r] : eps, *h = al[k].h >= 0 ? hyp->tok[al[k].h] : eps;
      const char *op = al[k].r < 0 ? "I" : al[k].h < 0 ? "D" : strcmp(r, h) ? "S" : "C";
      int w = k + 1 < n_al ? (int)(strlen(r) > strlen(h) ? strlen(r) : strlen(h)) : 0;
      fprintf(fp, " %-*s", w, row == 0 ? r : row == 1 ? h : op);
    }
    fputc('\n', fp);
  }
  fprintf(fp, "%s #csid %d %d %d %d\n", key, (int)(n_al - ins - del - sub), (int)sub, (int)ins, (int)del);
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Compute the word error rate (WER) and sentence error rate (SER) of hypotheses against\n"
      "reference transcriptions: a Levenshtein alignment of the word tokens of each reference\n"
      "utterance with the hypothesis of the same key.  Prints Kaldi's lines on stdout:\n"
      "  %WER 12.50 [ 10 / 80, 1 ins, 2 del, 7 sub ]   ([PARTIAL] appended if hyps were missing)\n"
      "  %SER 30.00 [ 3 / 10 ]\n"
      "  Scored 10 sentences, 0 not present in hyp.\n"
      "Inputs are int32-vector tables (word ids), or with --text text tables of word tokens\n"
      "(key w1 w2 ...).  Optional <stats-out>: Kaldi's alignment statistics, one line per\n"
      "aligned pair ('correct w', 'substitution r h', 'insertion h', 'deletion r').\n"
      "Usage:  compute-wer [options] <ref-rspecifier> <hyp-rspecifier> [<stats-out>]\n"
      "e.g.:   compute-wer --text --mode=present ark:data/test/text ark:hyp.txt\n"
      "        compute-wer --text --per-utt=per_utt ark:data/test/text ark:hyp.txt - | sort | uniq -c\n";
  gh_opts *po = gh_opts_new(usage);
  const char *mode = "strict", *per_utt_wx = "";
  int text = 0;
  gh_opts_string(po, "mode", &mode,
                 "Scoring mode: present = score only the utterances that have a hypothesis; all = an "
                 "absent hypothesis is empty; strict = die if a reference key has no hypothesis");
  gh_opts_bool(po, "text", &text, "Expect strings (text token vectors), not integers, as input");
  gh_opts_string(po, "per-utt", &per_utt_wx,
                 "Write per-utterance ref/hyp/op/#csid lines (Kaldi's per_utt format) to this file");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs < 2 || nargs > 3) gh_opts_usage_exit(po);
  const char *ref_spec = gh_opts_arg(po, 0), *hyp_spec = gh_opts_arg(po, 1);
  const char *stats_wx = nargs == 3 ? gh_opts_arg(po, 2) : NULL;
  if (strcmp(mode, "strict") && strcmp(mode, "present") && strcmp(mode, "all"))
    gh_die("--mode option invalid: expected \"present\"|\"all\"|\"strict\", got \"%s\"", mode);

  gh_objtype type = text ? GH_OBJ_TOKEN_VECTOR : GH_OBJ_INT32_VECTOR;
  gh_seq_reader *ref_reader = gh_seq_reader_open(ref_spec, type);
  gh_rand_reader *hyp_reader = gh_rand_reader_open(hyp_spec, type);
  gh_ostream *stats = stats_wx ? gh_ostream_open(stats_wx) : NULL;
  gh_ostream *per_utt = *per_utt_wx ? gh_ostream_open(per_utt_wx) : NULL;

  int64_t num_words = 0, word_errs = 0, num_sent = 0, sent_errs = 0, num_ins = 0, num_del = 0, num_sub = 0,
          num_absent = 0;
  words ref = {0}, hyp = {0};
  pair *al = NULL;
  int32_t n_al = 0, cap_al = 0;
  for (; !gh_seq_reader_done(ref_reader); gh_seq_reader_next(ref_reader)) {
    const char *key = gh_seq_reader_key(ref_reader);
    void *rv = gh_seq_reader_value(ref_reader), *hv = gh_rand_reader_value(hyp_reader, key);
    if (text) words_set_text(&ref, rv); else words_set_ints(&ref, rv);
    if (!hv) {
      if (!strcmp(mode, "strict"))
      {
        char note[1200];
        snprintf(note, sizeof note, "reference %s, --mode=strict", ref_spec);
        gh_die_no_key(hyp_spec, key, "hypothesis", note);
      }
      ++num_absent;
      gh_vlog(1, "%s: no hypothesis for key '%s'%s", hyp_spec, key,
              !strcmp(mode, "present") ? ", not scored" : ", scored as empty");
      if (!strcmp(mode, "present")) continue;
      words_set_text(&hyp, "");
    } else if (text) {
      words_set_text(&hyp, hv);
    } else {
      words_set_ints(&hyp, hv);
    }
    int32_t ins, del, sub;
    int32_t errs = align(&ref, &hyp, &al, &n_al, &cap_al, &ins, &del, &sub);
    num_words += ref.n;
    word_errs += errs;
    num_ins += ins;
    num_del += del;
    num_sub += sub;
    ++num_sent;
    sent_errs += !words_equal(&ref, &hyp);
    if (stats) {
      FILE *fp = gh_ostream_fp(stats);
      for (int32_t k = 0; k < n_al; ++k) {
        if (al[k].r < 0) fprintf(fp, "insertion %s\n", hyp.tok[al[k].h]);
        else if (al[k].h < 0) fprintf(fp, "deletion %s\n", ref.tok[al[k].r]);
        else if (strcmp(ref.tok[al[k].r], hyp.tok[al[k].h]))
          fprintf(fp, "substitution %s %s\n", ref.tok[al[k].r], hyp.tok[al[k].h]);
        else fprintf(fp, "correct %s\n", ref.tok[al[k].r]);
      }
    }
    if (per_utt) write_per_utt(gh_ostream_fp(per_utt), key, &ref, &hyp, al, n_al, ins, del, sub);
  }
  gh_seq_reader_close(ref_reader);
  gh_rand_reader_close(hyp_reader);
  if (stats) gh_ostream_close(stats);
  if (per_utt) gh_ostream_close(per_utt);
  words_free(&ref);
  words_free(&hyp);
  free(al);

  /* Kaldi prints nan/inf when nothing was scored; so do we (100 * 0 / 0). */
  double wer = num_words ? 100.0 * word_errs / num_words : (word_errs ? 1.0 / 0.0 : 0.0 / 0.0);
  double ser = num_sent ? 100.0 * sent_errs / num_sent : 0.0 / 0.0;
  printf("%%WER %.2f [ %lld / %lld, %lld ins, %lld del, %lld sub ]%s\n", wer, (long long)word_errs,
         (long long)num_words, (long long)num_ins, (long long)num_del, (long long)num_sub,
         num_absent ? " [PARTIAL]" : "");
  printf("%%SER %.2f [ %lld / %lld ]\n", ser, (long long)sent_errs, (long long)num_sent);
  printf("Scored %lld sentences, %lld not present in hyp.\n", (long long)num_sent, (long long)num_absent);
  if (fflush(stdout) != 0 || ferror(stdout)) gh_die("error writing to stdout");
  gh_opts_free(po);
  return 0;
}
