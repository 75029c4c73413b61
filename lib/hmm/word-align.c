/* word-align.c -- word boundaries from a phone alignment and the transcript
 * (word-align.h). */
#include "hmm/word-align.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "hmm/hmm-utils.h"
#include "io/kaldi-io.h"

enum { WB_NONE = 0, WB_NONWORD, WB_BEGIN, WB_END, WB_INTERNAL, WB_SINGLETON };
static const char *const wb_names[] = {"", "nonword", "begin", "end", "internal", "singleton"};

struct gh_word_info {
  char *name;
  int boundary;
  /* lexicon: entries e = 0 .. nent-1, phones ph[off[e] .. off[e+1]) of word ent_word[e];
   * per word w <= max_word the entries head[w] .. chained through next[e] */
  int32_t nent, max_word, *ent_word, *next, *head, *tail;
  int64_t *off;
  int32_t *ph;
  /* word_boundary: kind[p] for p < nkind */
  int32_t nkind;
  unsigned char *kind;
};

static long parse_id(const char *tok, const char *rx, int line_no) {
  char *end = NULL;
  long v = strtol(tok, &end, 10);
  if (*end || v < 0 || v > 0x7fffffff) gh_die("%s: line %d: \"%s\" is not a non-negative integer id", rx, line_no, tok);
  return v;
}

gh_word_info *gh_word_info_read(const char *rx) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("Could not open word information %s: %s", rx, gh_last_error());
  gh_word_info *wi = gh_calloc(1, sizeof *wi);
  wi->name = gh_strdup(rx);
  wi->boundary = -1;
  int64_t nph = 0, capph = 0;
  int32_t capent = 0;
  int line_no = 0;
  while (!gh_istream_eof(in)) {
    char *line = gh_read_line(in), *save = NULL;
    line_no++;
    char *t0 = strtok_r(line, " \t\r", &save);
    if (!t0) continue;
    char *t1 = strtok_r(NULL, " \t\r", &save);
    if (!t1) gh_die("%s: line %d has one field (align_lexicon.int: \"word word phone ...\"; word_boundary.int: "
                    "\"phone position\")", rx, line_no);
    if (wi->boundary < 0) {
      wi->boundary = 0;
      for (int k = 1; k <= WB_SINGLETON; ++k)
        if (!strcmp(t1, wb_names[k])) wi->boundary = 1;
    }
    if (wi->boundary) {
      long p = parse_id(t0, rx, line_no);
      int k = 0;
      for (int c = 1; c <= WB_SINGLETON; ++c)
        if (!strcmp(t1, wb_names[c])) k = c;
      if (!k) gh_die("%s: line %d: unknown word position \"%s\" (begin, end, internal, singleton, nonword)", rx, line_no, t1);
      if (strtok_r(NULL, " \t\r", &save)) gh_die("%s: line %d is not \"phone position\"", rx, line_no);
      if (p >= wi->nkind) {
        int32_t nk = wi->nkind ? wi->nkind : 64;
        while (nk <= p) nk *= 2;
        wi->kind = gh_realloc(wi->kind, (size_t)nk);
        memset(wi->kind + wi->nkind, 0, (size_t)(nk - wi->nkind));
        wi->nkind = nk;
      }
      wi->kind[p] = (unsigned char)k;
      continue;
    }
    long w = parse_id(t0, rx, line_no), w2 = parse_id(t1, rx, line_no);
    if (w != w2) gh_die("%s: line %d: the first two fields differ (%ld, %ld): not align_lexicon.int", rx, line_no, w, w2);
    if (wi->nent + 1 >= capent) {
      capent = capent ? 2 * capent : 1024;
      wi->ent_word = gh_realloc(wi->ent_word, (size_t)capent * sizeof(int32_t));
      wi->off = gh_realloc(wi->off, ((size_t)capent + 1) * sizeof(int64_t));
    }
    wi->off[wi->nent] = nph;
    int32_t k = 0;
    for (char *t; (t = strtok_r(NULL, " \t\r", &save)); ++k) {
      long p = parse_id(t, rx, line_no);
      if (p == 0) gh_die("%s: line %d: phone 0 (<eps>) in a pronunciation", rx, line_no);
      if (nph >= capph) {
        capph = capph ? 2 * capph : 4096;
        wi->ph = gh_realloc(wi->ph, (size_t)capph * sizeof(int32_t));
      }
      wi->ph[nph++] = (int32_t)p;
    }
    if (k == 0) gh_die("%s: line %d: word %ld has no phones", rx, line_no, w);
    wi->ent_word[wi->nent++] = (int32_t)w;
    wi->off[wi->nent] = nph;
    if (w > wi->max_word) wi->max_word = (int32_t)w;
  }
  gh_istream_close(in);
  if (wi->boundary < 0) gh_die("%s: empty word information (no lines)", rx);
  if (!wi->boundary) {
    wi->head = gh_malloc(((size_t)wi->max_word + 1) * sizeof(int32_t));
    wi->tail = gh_malloc(((size_t)wi->max_word + 1) * sizeof(int32_t));
    wi->next = gh_malloc(((size_t)wi->nent + 1) * sizeof(int32_t));
    for (int32_t w = 0; w <= wi->max_word; ++w) wi->head[w] = wi->tail[w] = -1;
    for (int32_t e = 0; e < wi->nent; ++e) {
      const int32_t w = wi->ent_word[e];
      wi->next[e] = -1;
      if (wi->tail[w] < 0) wi->head[w] = e;
      else wi->next[wi->tail[w]] = e;
      wi->tail[w] = e;
    }
  }
  return wi;
}

void gh_word_info_free(gh_word_info *wi) {
  if (!wi) return;
  free(wi->name);
  free(wi->ent_word);
  free(wi->next);
  free(wi->head);
  free(wi->tail);
  free(wi->off);
  free(wi->ph);
  free(wi->kind);
  free(wi);
}

int gh_word_info_is_boundary(const gh_word_info *wi) { return wi->boundary; }

static int tm_has_phone(const gh_transition_model *tm, int32_t p) {
  for (int32_t i = 0; i < tm->num_phones; ++i)
    if (tm->phones[i] == p) return 1;
  return 0;
}

void gh_word_info_check(const gh_word_info *wi, const gh_transition_model *tm, const char *what, const char *model) {
  if (wi->boundary) {
    for (int32_t i = 0; i < tm->num_phones; ++i) {
      const int32_t p = tm->phones[i];
      if (p >= wi->nkind || !wi->kind[p])
        gh_die("%s: phone %d of the model %s has no word position (word_boundary.int of another lang directory?)",
               what, p, model);
    }
    return;
  }
  for (int32_t e = 0; e < wi->nent; ++e)
    for (int64_t k = wi->off[e]; k < wi->off[e + 1]; ++k)
      if (!tm_has_phone(tm, wi->ph[k]))
        gh_die("%s: word %d uses phone %d, which the model %s does not have (a lexicon of another lang directory?)",
               what, wi->ent_word[e], wi->ph[k], model);
}

static void push_seg(gh_word_seg **segs, int32_t *nseg, int32_t *cap, int32_t word, int32_t start, int32_t end) {
  if (*nseg >= *cap) {
    *cap = *cap ? 2 * *cap : 64;
    *segs = gh_realloc(*segs, (size_t)*cap * sizeof(gh_word_seg));
  }
  (*segs)[*nseg] = (gh_word_seg){word, start, end - start};
  (*nseg)++;
}

/* Word-position marks: lattice-align-words' reading of a linear alignment. */
static int align_boundary(const gh_word_info *wi, const int32_t *phones, const int32_t *ends, int32_t P,
                          const int32_t *words, int32_t nwords, gh_word_seg **segs, int32_t *nseg, char *err,
                          size_t errlen) {
  int32_t cap = 0, j = 0, wstart = -1;
  for (int32_t i = 0; i < P; ++i) {
    const int32_t p = phones[i], b = i ? ends[i - 1] : 0;
    const int k = p < wi->nkind ? wi->kind[p] : WB_NONE;
    if (k == WB_NONE) {
      snprintf(err, errlen, "phone %d has no word position in %s", p, wi->name);
      return 0;
    }
    const int inside = wstart >= 0;
    if ((k == WB_NONWORD || k == WB_SINGLETON || k == WB_BEGIN) && inside) {
      snprintf(err, errlen, "phone %d (%s) at frame %d inside a word that began at frame %d", p, wb_names[k], b,
               wstart - 1);
      return 0;
    }
    if ((k == WB_INTERNAL || k == WB_END) && !inside) {
      snprintf(err, errlen, "phone %d (%s) at frame %d outside a word", p, wb_names[k], b);
      return 0;
    }
    if (k == WB_NONWORD) {
      push_seg(segs, nseg, &cap, 0, b, ends[i]);
    } else if (k == WB_BEGIN) {
      wstart = b + 1; /* +1: 0 means "not inside" */
    } else if (k == WB_SINGLETON || k == WB_END) {
      if (j >= nwords) {
        snprintf(err, errlen, "the alignment has more words than the transcript's %d", nwords);
        return 0;
      }
      push_seg(segs, nseg, &cap, words[j++], k == WB_SINGLETON ? b : wstart - 1, ends[i]);
      wstart = -1;
    }
  }
  if (wstart >= 0) {
    snprintf(err, errlen, "the alignment ends inside a word");
    return 0;
  }
  if (j != nwords) {
    snprintf(err, errlen, "the alignment has %d words, the transcript %d", j, nwords);
    return 0;
  }
  return 1;
}

typedef struct {
  int32_t i, j, parent, entry; /* at phone i having matched j words; reached from node parent by entry */
} wa_node;

static int align_lexicon(const gh_word_info *wi, const int32_t *phones, const int32_t *ends, int32_t P,
                         const int32_t *words, int32_t nwords, gh_word_seg **segs, int32_t *nseg, char *err,
                         size_t errlen) {
  for (int32_t j = 0; j < nwords; ++j)
    if (words[j] <= 0 || words[j] > wi->max_word || wi->head[words[j]] < 0) {
      snprintf(err, errlen, "word %d (position %d of the transcript) is not in %s", words[j], j + 1, wi->name);
      return 0;
    }
  /* nodes grouped by phone position: first[i] .. chained by nxt */
  int32_t cap = 1024, nn = 0;
  wa_node *nd = gh_malloc((size_t)cap * sizeof(wa_node));
  int32_t *nxt = gh_malloc((size_t)cap * sizeof(int32_t));
  int32_t *first = gh_malloc(((size_t)P + 1) * sizeof(int32_t)), *last = gh_malloc(((size_t)P + 1) * sizeof(int32_t));
  for (int32_t i = 0; i <= P; ++i) first[i] = last[i] = -1;
  nd[0] = (wa_node){0, 0, -1, -1};
  nxt[0] = -1;
  first[0] = last[0] = 0;
  nn = 1;
  int32_t goal = -1, deepest = 0;
  for (int32_t i = 0; i <= P && goal < 0; ++i) {
    for (int32_t x = first[i]; x >= 0 && goal < 0; x = nxt[x]) {
      const int32_t j = nd[x].j;
      if (i > deepest) deepest = i;
      if (i == P) {
        if (j == nwords) goal = x;
        continue;
      }
      for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1 && j >= nwords) break;
        const int32_t w = pass == 0 ? 0 : words[j];
        if (w > wi->max_word) continue;
        for (int32_t e = wi->head[w]; e >= 0; e = wi->next[e]) {
          const int64_t len = wi->off[e + 1] - wi->off[e];
          if (i + len > P || memcmp(phones + i, wi->ph + wi->off[e], (size_t)len * sizeof(int32_t))) continue;
          const int32_t ni = i + (int32_t)len, nj = j + (pass == 1);
          int dup = 0;
          for (int32_t y = first[ni]; y >= 0 && !dup; y = nxt[y]) dup = nd[y].j == nj;
          if (dup) continue;
          if (nn >= cap) {
            cap *= 2;
            nd = gh_realloc(nd, (size_t)cap * sizeof(wa_node));
            nxt = gh_realloc(nxt, (size_t)cap * sizeof(int32_t));
          }
          nd[nn] = (wa_node){ni, nj, x, e};
          nxt[nn] = -1;
          if (last[ni] < 0) first[ni] = nn;
          else nxt[last[ni]] = nn;
          last[ni] = nn++;
        }
      }
    }
  }
  int ok = goal >= 0;
  if (!ok) {
    int32_t bj = 0;
    for (int32_t y = first[deepest]; y >= 0; y = nxt[y])
      if (nd[y].j > bj) bj = nd[y].j;
    snprintf(err, errlen, "the phones are not a pronunciation of the transcript in %s (parsed %d of %d phones, %d of "
             "%d words)", wi->name, deepest, P, bj, nwords);
  } else {
    int32_t count = 0, c = 0;
    for (int32_t x = goal; nd[x].parent >= 0; x = nd[x].parent) count++;
    int32_t *path = gh_malloc(((size_t)count + 1) * sizeof(int32_t));
    for (int32_t x = goal; nd[x].parent >= 0; x = nd[x].parent) path[count - 1 - c++] = x;
    int32_t capseg = 0;
    for (int32_t k = 0; k < count; ++k) {
      const wa_node *a = &nd[path[k]];
      const int32_t pi = nd[a->parent].i, w = wi->ent_word[a->entry];
      if (w == 0) { /* silence: one segment per phone */
        for (int32_t q = pi; q < a->i; ++q) push_seg(segs, nseg, &capseg, 0, q ? ends[q - 1] : 0, ends[q]);
      } else {
        push_seg(segs, nseg, &capseg, w, pi ? ends[pi - 1] : 0, ends[a->i - 1]);
      }
    }
    free(path);
  }
  free(nd);
  free(nxt);
  free(first);
  free(last);
  return ok;
}

int gh_word_align(const gh_word_info *wi, const gh_transition_model *tm, const int32_t *ali, int32_t n,
                  const int32_t *words, int32_t nwords, gh_word_seg **segs, int32_t *nseg, char *err, size_t errlen) {
  *nseg = 0;
  int32_t *ends = NULL, P = 0;
  if (!gh_split_to_phones(tm, ali, n, &ends, &P)) {
    free(ends);
    snprintf(err, errlen, "the alignment does not split into phones");
    return 0;
  }
  int32_t *phones = gh_malloc(((size_t)P + 1) * sizeof(int32_t));
  for (int32_t i = 0; i < P; ++i) phones[i] = gh_transition_tid2phone(tm, ali[i ? ends[i - 1] : 0]);
  const int ok = wi->boundary ? align_boundary(wi, phones, ends, P, words, nwords, segs, nseg, err, errlen)
                              : align_lexicon(wi, phones, ends, P, words, nwords, segs, nseg, err, errlen);
  if (!ok) *nseg = 0;
  free(phones);
  free(ends);
  return ok;
}
