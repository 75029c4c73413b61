/* lang.c -- the lang directory of Kaldi's utils/prepare_lang.sh (see lang.h).  Each
 * step names the script line or helper whose output it reproduces. */
#include "lang/lang.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "base/strmap.h"
#include "io/fst.h"
#include "io/kaldi-io.h"

void gh_lang_opts_default(gh_lang_opts *o) {
  o->position_dependent_phones = 1;
  o->num_sil_states = 5;
  o->num_nonsil_states = 3;
  o->share_silence_phones = 0;
  o->sil_prob = 0.5;
  o->phone_symbol_table = NULL;
}

/* ---------------- small containers ---------------- */
typedef struct { char **v; int n, cap; } strlist;
static void sl_push(strlist *l, const char *s) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 8;
    l->v = gh_realloc(l->v, (size_t)l->cap * sizeof *l->v);
  }
  l->v[l->n++] = gh_strdup(s);
}
static void sl_free(strlist *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}
static char *sl_join(const strlist *l, int from) { /* tokens from `from`, joined by " " */
  size_t len = 1;
  for (int i = from; i < l->n; i++) len += strlen(l->v[i]) + 1;
  char *s = gh_malloc(len), *p = s;
  *p = '\0';
  for (int i = from; i < l->n; i++) p += sprintf(p, "%s%s", i > from ? " " : "", l->v[i]);
  return s;
}
static void split_ws(const char *line, strlist *out) { /* perl's split(" ", $_) */
  const char *p = line;
  char buf[4096];
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\f' || *p == '\v') p++;
    if (!*p) break;
    size_t n = 0;
    while (*p && !(*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\f' || *p == '\v')) {
      if (n + 1 >= sizeof buf) gh_die("a token longer than %zu bytes", sizeof buf - 1);
      buf[n++] = *p++;
    }
    buf[n] = '\0';
    sl_push(out, buf);
  }
}

/* A text file's lines (newline dropped). */
typedef struct { strlist lines; char *path; } textfile;
static int read_lines(const char *path, textfile *t, int required) {
  memset(t, 0, sizeof *t);
  t->path = gh_strdup(path);
  FILE *fp = fopen(path, "r");
  if (!fp) {
    if (required || errno != ENOENT) gh_die("%s: cannot open: %s", path, strerror(errno));
    return 0;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, fp)) >= 0) {
    if (n && line[n - 1] == '\n') line[n - 1] = '\0';
    sl_push(&t->lines, line);
  }
  if (ferror(fp)) gh_die("%s: read error: %s", path, strerror(errno));
  free(line);
  fclose(fp);
  return 1;
}
static void tf_free(textfile *t) { sl_free(&t->lines); free(t->path); }

static char *path_join(const char *dir, const char *name) {
  char *p = gh_malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

/* Output files: gh_ostream (temporary file, committed when the tool succeeds). */
typedef struct { gh_ostream *s; FILE *fp; } out_t;
static out_t out_open(const char *dir, const char *name) {
  char *p = path_join(dir, name);
  out_t o;
  o.s = gh_ostream_open(p);
  o.fp = gh_ostream_fp(o.s);
  free(p);
  return o;
}
static void out_close(out_t *o) { gh_ostream_close(o->s); }

/* ---------------- the lexicon ---------------- */
typedef struct {
  char *word, *prob_str;      /* prob_str: the probability as written ("1.0" for lexicon.txt) */
  double prob;
  strlist pron;                /* word-position phones when position dependent */
  strlist dpron;               /* pron + the disambiguation symbol, if any */
} lexentry;

typedef struct {
  const gh_lang_opts *o;
  strlist sil, nonsil;         /* base phones in file order */
  strlist sil_lines_joined;    /* one string per silence_phones.txt line */
  textfile silf, nonsilf;
  gh_strmap base;              /* base phone -> 1 (sil) / 2 (nonsil) */
  strlist silv, nonsilv;       /* all variants (silence.txt / nonsilence.txt) */
  gh_strmap phones;            /* phones.txt */
  gh_strmap words;             /* words.txt */
  strlist disambig;            /* #0 .. #n */
  lexentry *lex;
  int nlex;
  int ndisambig;
  char *silphone;
} lang_t;

/* The word-position variants of base phone p (prepare_lang.sh's phone_map.txt). */
static void variants(const lang_t *L, const char *p, int is_sil, strlist *out) {
  static const char *sfx[] = {"_B", "_E", "_I", "_S"};
  char buf[4200];
  if (!L->o->position_dependent_phones) { sl_push(out, p); return; }
  if (is_sil) sl_push(out, p);
  for (int i = 0; i < 4; i++) {
    snprintf(buf, sizeof buf, "%s%s", p, sfx[i]);
    sl_push(out, buf);
  }
}

/* apply_map.pl with phone_map.txt: a line of base phones -> their variants. */
static char *map_line(lang_t *L, const char *line, const char *file, int lineno) {
  strlist t = {0}, v = {0};
  split_ws(line, &t);
  for (int i = 0; i < t.n; i++) {
    int kind = gh_strmap_get(&L->base, t.v[i]);
    if (kind < 0) gh_die("%s, line %d: phone '%s' is in neither silence_phones.txt nor nonsilence_phones.txt", file, lineno, t.v[i]);
    variants(L, t.v[i], kind == 1, &v);
  }
  char *s = sl_join(&v, 0);
  sl_free(&t);
  sl_free(&v);
  return s;
}

static void read_phone_list(lang_t *L, const char *dict, const char *name, textfile *tf,
                            strlist *out, int kind) {
  char *p = path_join(dict, name);
  read_lines(p, tf, 1);
  free(p);
  for (int i = 0; i < tf->lines.n; i++) {
    strlist t = {0};
    split_ws(tf->lines.v[i], &t);
    for (int j = 0; j < t.n; j++) {
      if (!gh_strmap_put(&L->base, t.v[j], kind))
        gh_die("%s, line %d: phone '%s' is listed twice", tf->path, i + 1, t.v[j]);
      if (t.v[j][0] == '#') gh_die("%s, line %d: phone '%s' begins with '#' (reserved for disambiguation symbols)", tf->path, i + 1, t.v[j]);
      sl_push(out, t.v[j]);
    }
    sl_free(&t);
  }
  if (out->n == 0) gh_die("%s: no phones", tf->path);
}

static void read_lexicon(lang_t *L, const char *dict) {
  char *pp = path_join(dict, "lexiconp.txt"), *p = path_join(dict, "lexicon.txt");
  textfile tf;
  int probs = read_lines(pp, &tf, 0);
  if (!probs) { tf_free(&tf); read_lines(p, &tf, 1); }
  free(pp);
  free(p);
  L->lex = gh_calloc(tf.lines.n ? (size_t)tf.lines.n : 1, sizeof *L->lex);
  for (int i = 0; i < tf.lines.n; i++) {
    strlist t = {0};
    split_ws(tf.lines.v[i], &t);
    if (t.n == 0) gh_die("%s, line %d: empty line", tf.path, i + 1);
    lexentry *e = &L->lex[L->nlex++];
    e->word = gh_strdup(t.v[0]);
    if (!strcmp(e->word, "<eps>") || !strcmp(e->word, "<s>") || !strcmp(e->word, "</s>"))
      gh_die("%s, line %d: '%s' is reserved and cannot be a word", tf.path, i + 1, e->word);
    if (e->word[0] == '#' && e->word[1] == '0' && !e->word[2])
      gh_die("%s, line %d: '#0' is reserved (disambiguation symbol) and cannot be a word", tf.path, i + 1);
    int first = 1;
    if (probs) {
      if (t.n < 2) gh_die("%s, line %d: word '%s' has no probability and no pronunciation", tf.path, i + 1, e->word);
      char *end;
      e->prob = strtod(t.v[1], &end);
      if (*end || end == t.v[1] || !(e->prob > 0.0 && e->prob <= 1.0))
        gh_die("%s, line %d: bad pronunciation probability '%s' for word '%s' (expected 0 < p <= 1)", tf.path, i + 1, t.v[1], e->word);
      e->prob_str = gh_strdup(t.v[1]);
      first = 2;
    } else {
      e->prob = 1.0;
      e->prob_str = gh_strdup("1.0");
    }
    if (t.n <= first) gh_die("%s, line %d: word '%s' has no pronunciation", tf.path, i + 1, e->word);
    int np = t.n - first;
    for (int j = first; j < t.n; j++) {
      if (gh_strmap_get(&L->base, t.v[j]) < 0)
        gh_die("%s, line %d: phone '%s' of word '%s' is in neither silence_phones.txt nor nonsilence_phones.txt", tf.path, i + 1, t.v[j], e->word);
      if (!L->o->position_dependent_phones) { sl_push(&e->pron, t.v[j]); continue; }
      const char *sfx = np == 1 ? "_S" : j == first ? "_B" : j == t.n - 1 ? "_E" : "_I";
      char buf[4200];
      snprintf(buf, sizeof buf, "%s%s", t.v[j], sfx);
      sl_push(&e->pron, buf);
    }
    sl_free(&t);
  }
  if (L->nlex == 0) gh_die("%s: the lexicon is empty", tf.path);
  tf_free(&tf);
}

/* add_lex_disambig.pl: #1, #2 ... after prons that are prefixes of others or repeated.
 * Returns the largest symbol used (0 if none). */
static int add_disambig(lang_t *L) {
  gh_strmap idx = {0}, subseq = {0};
  int *cnt = gh_calloc((size_t)L->nlex, sizeof *cnt), *lastused = gh_calloc((size_t)L->nlex, sizeof *lastused);
  int *of = gh_malloc((size_t)L->nlex * sizeof *of), n = 0;
  for (int i = 0; i < L->nlex; i++) {
    char *s = sl_join(&L->lex[i].pron, 0);
    int k = gh_strmap_get(&idx, s);
    if (k < 0) gh_strmap_put(&idx, s, k = n++);
    of[i] = k;
    cnt[k]++;
    free(s);
    strlist cut = L->lex[i].pron;
    for (cut.n = L->lex[i].pron.n - 1; cut.n >= 0; cut.n--) {
      char *ps = sl_join(&cut, 0);
      gh_strmap_put(&subseq, ps, 1);
      free(ps);
    }
  }
  int max_disambig = 0;
  for (int i = 0; i < L->nlex; i++) {
    lexentry *e = &L->lex[i];
    for (int j = 0; j < e->pron.n; j++) sl_push(&e->dpron, e->pron.v[j]);
    char *s = sl_join(&e->pron, 0);
    int k = of[i];
    if (gh_strmap_get(&subseq, s) >= 0 || cnt[k] > 1) {
      int cur = ++lastused[k];
      if (cur > max_disambig) max_disambig = cur;
      char sym[32];
      snprintf(sym, sizeof sym, "#%d", cur);
      sl_push(&e->dpron, sym);
    }
    free(s);
  }
  gh_strmap_free(&idx);
  gh_strmap_free(&subseq);
  free(cnt);
  free(lastused);
  free(of);
  return max_disambig;
}

/* sym2int.pl: the id of a symbol, or a one-line error naming the table's file. */
static int32_t sym(const gh_strmap *m, const char *table, const char *s, const char *what) {
  int32_t id = gh_strmap_get(m, s);
  if (id < 0) gh_die("%s: symbol '%s' (%s) is not in %s", table, s, what, table);
  return id;
}

/* A list file (one symbol a line) as .txt, .int and .csl. */
static void write_list(lang_t *L, const char *lang, const char *name, const strlist *l) {
  char buf[256];
  snprintf(buf, sizeof buf, "phones/%s.txt", name);
  out_t t = out_open(lang, buf);
  snprintf(buf, sizeof buf, "phones/%s.int", name);
  out_t n = out_open(lang, buf);
  snprintf(buf, sizeof buf, "phones/%s.csl", name);
  out_t c = out_open(lang, buf);
  for (int i = 0; i < l->n; i++) {
    int32_t id = sym(&L->phones, "phones.txt", l->v[i], name);
    fprintf(t.fp, "%s\n", l->v[i]);
    fprintf(n.fp, "%d\n", id);
    fprintf(c.fp, "%s%d", i ? ":" : "", id);
  }
  fputc('\n', c.fp);
  out_close(&t);
  out_close(&n);
  out_close(&c);
}

/* sym2int.pl of a line of phone symbols (fields from `from` on). */
static void write_int_line(lang_t *L, FILE *fp, const char *line, int from, const char *file) {
  strlist t = {0};
  split_ws(line, &t);
  for (int i = 0; i < t.n; i++) {
    if (i) fputc(' ', fp);
    if (i < from) fputs(t.v[i], fp);
    else fprintf(fp, "%d", sym(&L->phones, "phones.txt", t.v[i], file));
  }
  fputc('\n', fp);
  sl_free(&t);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* make_lexicon_fst.py (+ fstcompile): the lexicon FST, with the pronunciations
 * `disambig` ? dpron : pron; sil_disambig is the phone id of the silence
 * disambiguation symbol or 0. */
static void make_lexicon_fst(lang_t *L, int disambig, int32_t sil_disambig, gh_fst *f) {
  gh_fst_init(f);
  gh_fst_compiler *c = gh_fst_compiler_new(f);
  double sil_prob = L->o->sil_prob;
  int64_t next;
  if (sil_prob == 0.0) {
    int64_t loop = 0;
    next = 1;
    for (int i = 0; i < L->nlex; i++) {
      lexentry *e = &L->lex[i];
      const strlist *pr = disambig ? &e->dpron : &e->pron;
      double cost = -log(e->prob);
      int32_t w = sym(&L->words, "words.txt", e->word, "word");
      int64_t cur = loop;
      for (int j = 0; j < pr->n - 1; j++) {
        gh_fst_compile_arc(c, cur, next, sym(&L->phones, "phones.txt", pr->v[j], "phone"),
                           j == 0 ? w : 0, (float)(j == 0 ? cost : 0.0));
        cur = next++;
      }
      int j = pr->n - 1;
      gh_fst_compile_arc(c, cur, loop, sym(&L->phones, "phones.txt", pr->v[j], "phone"),
                         j <= 0 ? w : 0, (float)(j <= 0 ? cost : 0.0));
    }
    gh_fst_compile_final(c, loop, 0.0f);
  } else {
    double sil_cost = -log(sil_prob), no_sil_cost = -log(1.0 - sil_prob);
    int64_t start = 0, loop = 1, silst = 2;
    int32_t silp = sym(&L->phones, "phones.txt", L->silphone, "optional silence");
    next = 3;
    gh_fst_compile_arc(c, start, loop, 0, 0, (float)no_sil_cost);
    gh_fst_compile_arc(c, start, silst, 0, 0, (float)sil_cost);
    if (!sil_disambig) gh_fst_compile_arc(c, silst, loop, silp, 0, 0.0f);
    else {
      int64_t sd = next++;
      gh_fst_compile_arc(c, silst, sd, silp, 0, 0.0f);
      gh_fst_compile_arc(c, sd, loop, sil_disambig, 0, 0.0f);
    }
    for (int i = 0; i < L->nlex; i++) {
      lexentry *e = &L->lex[i];
      const strlist *pr = disambig ? &e->dpron : &e->pron;
      double pron_cost = -log(e->prob);
      int32_t w = sym(&L->words, "words.txt", e->word, "word");
      int64_t cur = loop;
      for (int j = 0; j < pr->n - 1; j++) {
        gh_fst_compile_arc(c, cur, next, sym(&L->phones, "phones.txt", pr->v[j], "phone"),
                           j == 0 ? w : 0, (float)(j == 0 ? pron_cost : 0.0));
        cur = next++;
      }
      int j = pr->n - 1;
      int32_t ph = sym(&L->phones, "phones.txt", pr->v[j], "phone"), ol = j <= 0 ? w : 0;
      double extra = j <= 0 ? pron_cost : 0.0;
      gh_fst_compile_arc(c, cur, loop, ph, ol, (float)(no_sil_cost + extra));
      gh_fst_compile_arc(c, cur, silst, ph, ol, (float)(sil_cost + extra));
    }
    gh_fst_compile_final(c, loop, 0.0f);
  }
  gh_fst_compiler_free(c);
}

/* Kaldi's fstaddselfloops: a self-loop in:out on every final state and every state
 * with an arc whose output is not epsilon. */
static void add_self_loops(gh_fst *f, int32_t in, int32_t out) {
  for (int32_t s = 0; s < f->nstates; s++) {
    int need = f->states[s].final != GH_FST_ZERO;
    for (int32_t a = 0; a < f->states[s].narcs && !need; a++)
      if (f->states[s].arcs[a].olabel != 0) need = 1;
    if (need) gh_fst_add_arc(f, s, in, out, GH_FST_ONE, s);
  }
}

/* gen_topo.pl */
static void write_topo(lang_t *L, const char *lang, const char *nonsil_csl, const char *sil_csl) {
  int nn = L->o->num_nonsil_states, ns = L->o->num_sil_states;
  out_t o = out_open(lang, "topo");
  FILE *fp = o.fp;
  char *nonsil = gh_strdup(nonsil_csl), *sil = gh_strdup(sil_csl);
  for (char *p = nonsil; *p; p++) if (*p == ':') *p = ' ';
  for (char *p = sil; *p; p++) if (*p == ':') *p = ' ';
  fprintf(fp, "<Topology>\n<TopologyEntry>\n<ForPhones>\n%s\n</ForPhones>\n", nonsil);
  for (int s = 0; s < nn; s++)
    fprintf(fp, "<State> %d <PdfClass> %d <Transition> %d 0.75 <Transition> %d 0.25 </State>\n", s, s, s, s + 1);
  fprintf(fp, "<State> %d </State>\n</TopologyEntry>\n", nn);
  fprintf(fp, "<TopologyEntry>\n<ForPhones>\n%s\n</ForPhones>\n", sil);
  if (ns > 1) {
    char tp[64];
    snprintf(tp, sizeof tp, "%.15g", 1.0 / (ns - 1)); /* perl's number format */
    fprintf(fp, "<State> 0 <PdfClass> 0 ");
    for (int t = 0; t < ns - 1; t++) fprintf(fp, "<Transition> %d %s ", t, tp);
    fprintf(fp, "</State>\n");
    for (int s = 1; s < ns - 1; s++) {
      fprintf(fp, "<State> %d <PdfClass> %d ", s, s);
      for (int t = 1; t < ns; t++) fprintf(fp, "<Transition> %d %s ", t, tp);
      fprintf(fp, "</State>\n");
    }
    fprintf(fp, "<State> %d <PdfClass> %d <Transition> %d 0.75 <Transition> %d 0.25 </State>\n", ns - 1, ns - 1, ns - 1, ns);
  } else {
    fprintf(fp, "<State> 0 <PdfClass> 0 <Transition> 0 0.75 <Transition> 1 0.25 </State>\n");
  }
  fprintf(fp, "<State> %d </State>\n</TopologyEntry>\n</Topology>\n", ns);
  free(nonsil);
  free(sil);
  out_close(&o);
}

static char *csl_of(lang_t *L, const strlist *l) {
  char *s = gh_malloc((size_t)l->n * 12 + 1), *p = s;
  *p = '\0';
  for (int i = 0; i < l->n; i++) p += sprintf(p, "%s%d", i ? ":" : "", sym(&L->phones, "phones.txt", l->v[i], "phone"));
  return s;
}

static void write_fst(const char *lang, const char *name, const gh_fst *f) {
  char *p = path_join(lang, name);
  gh_fst_write_file(p, f);
  free(p);
}

/* --phone-symbol-table: phones.txt with the ids of an existing table (the script's
 * sanity checks, then "<eps>" and the phones sorted by their ids, then #0 ... #n numbered
 * from the table's #0). */
typedef struct { const char *sym; int32_t id; } symid;
static int cmp_symid(const void *a, const void *b) {
  const symid *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return strcmp(x->sym, y->sym);
}
static void write_phones_from_table(lang_t *L, const char *lang, const char *table) {
  textfile tf;
  read_lines(table, &tf, 1);
  gh_strmap ids = {0}, names = {0}, bases = {0};
  int32_t start = -1;
  for (int i = 0; i < tf.lines.n; i++) {
    strlist t = {0};
    split_ws(tf.lines.v[i], &t);
    if (t.n == 0) { sl_free(&t); continue; }
    char *end;
    long v = t.n == 2 ? strtol(t.v[1], &end, 10) : -1;
    if (t.n != 2 || *end || v < 0 || v > INT32_MAX)
      gh_die("%s, line %d: expected \"symbol integer-id\"", table, i + 1);
    gh_strmap_put(&ids, t.v[0], (int32_t)v);
    if (!strcmp(t.v[0], "#0")) start = (int32_t)v;
    int disambig = t.v[0][0] == '#' && t.v[0][1] >= '0' && t.v[0][1] <= '9' && strspn(t.v[0] + 1, "0123456789") == strlen(t.v[0] + 1);
    if (!disambig) {
      gh_strmap_put(&names, t.v[0], 1);
      size_t n = strlen(t.v[0]);
      char *b = gh_strdup(t.v[0]);
      if (n >= 2 && b[n - 2] == '_' && strchr("BIES", b[n - 1])) b[n - 2] = '\0';
      gh_strmap_put(&bases, b, 1);
      free(b);
    }
    sl_free(&t);
  }
  int pos = L->o->position_dependent_phones;
  if (pos && names.n == bases.n)
    gh_die("%s: position-dependent phones requested, but the table has none", table);
  if (!pos && names.n != bases.n)
    gh_die("%s: position-dependent phones not requested, but the table has them", table);
  if (start < 0) gh_die("%s: no symbol #0", table);
  int n = 1 + L->silv.n + L->nonsilv.n;
  symid *v = gh_malloc((size_t)n * sizeof *v);
  v[0].sym = "<eps>";
  for (int k = 0, j = 1; k < 2; k++) {
    const strlist *l = k ? &L->nonsilv : &L->silv;
    for (int i = 0; i < l->n; i++, j++) v[j].sym = l->v[i];
  }
  for (int j = 0; j < n; j++) {
    v[j].id = gh_strmap_get(&ids, v[j].sym);
    if (v[j].id < 0) gh_die("%s: phone '%s' of the dictionary is not in the table", table, v[j].sym);
  }
  qsort(v, (size_t)n, sizeof *v, cmp_symid); /* sort -k2 -g */
  out_t ph = out_open(lang, "phones.txt");
  for (int j = 0; j < n; j++) {
    fprintf(ph.fp, "%s %d\n", v[j].sym, v[j].id);
    gh_strmap_put(&L->phones, v[j].sym, v[j].id);
  }
  for (int i = 0; i < L->disambig.n; i++) {
    fprintf(ph.fp, "%s %d\n", L->disambig.v[i], start + i);
    gh_strmap_put(&L->phones, L->disambig.v[i], start + i);
  }
  out_close(&ph);
  free(v);
  gh_strmap_free(&ids); gh_strmap_free(&names); gh_strmap_free(&bases);
  tf_free(&tf);
}

void gh_prepare_lang(const gh_lang_opts *o, const char *dict, const char *oov_word,
                     const char *tmp, const char *lang) {
  if (o->num_nonsil_states < 1 || o->num_nonsil_states > 100)
    gh_die("--num-nonsil-states=%d: expected 1 to 100", o->num_nonsil_states);
  if (!(o->num_sil_states == 1 || o->num_sil_states >= 3) || o->num_sil_states > 100)
    gh_die("--num-sil-states=%d: expected 1 or 3 to 100", o->num_sil_states);
  if (!(o->sil_prob >= 0.0 && o->sil_prob < 1.0)) gh_die("--sil-prob=%g: expected 0 <= p < 1", o->sil_prob);
  lang_t Lv, *L = &Lv;
  memset(L, 0, sizeof *L);
  L->o = o;
  char *sp = path_join(dict, "lexiconp_silprob.txt");
  FILE *spf = fopen(sp, "r");
  if (spf) { fclose(spf); gh_die("%s: silence probabilities in the lexicon are not supported", sp); }
  free(sp);
  read_phone_list(L, dict, "silence_phones.txt", &L->silf, &L->sil, 1);
  read_phone_list(L, dict, "nonsilence_phones.txt", &L->nonsilf, &L->nonsil, 2);
  textfile optf, eqf;
  char *optp = path_join(dict, "optional_silence.txt");
  read_lines(optp, &optf, 1);
  {
    strlist t = {0};
    for (int i = 0; i < optf.lines.n; i++) split_ws(optf.lines.v[i], &t);
    if (t.n != 1) gh_die("%s: expected one phone, found %d", optp, t.n);
    if (gh_strmap_get(&L->base, t.v[0]) != 1) gh_die("%s, line 1: optional silence phone '%s' is not in silence_phones.txt", optp, t.v[0]);
    L->silphone = gh_strdup(t.v[0]);
    sl_free(&t);
  }
  char *eqp = path_join(dict, "extra_questions.txt");
  read_lines(eqp, &eqf, 0);
  read_lexicon(L, dict);
  int max_disambig = add_disambig(L);
  L->ndisambig = max_disambig + 1; /* + one for the optional silence */

  /* phone lists */
  for (int i = 0; i < L->sil.n; i++) variants(L, L->sil.v[i], 1, &L->silv);
  for (int i = 0; i < L->nonsil.n; i++) variants(L, L->nonsil.v[i], 0, &L->nonsilv);
  for (int i = 0; i <= L->ndisambig; i++) {
    char b[32];
    snprintf(b, sizeof b, "#%d", i);
    sl_push(&L->disambig, b);
  }
  if (o->phone_symbol_table) write_phones_from_table(L, lang, o->phone_symbol_table);
  else {
    out_t ph = out_open(lang, "phones.txt");
    int32_t id = 0;
    fprintf(ph.fp, "<eps> %d\n", id);
    gh_strmap_put(&L->phones, "<eps>", id++);
    const strlist *lists[3] = {&L->silv, &L->nonsilv, &L->disambig};
    for (int k = 0; k < 3; k++)
      for (int i = 0; i < lists[k]->n; i++) {
        if (!gh_strmap_put(&L->phones, lists[k]->v[i], id))
          gh_die("phones.txt: phone '%s' occurs twice (a base phone clashes with a word-position variant)", lists[k]->v[i]);
        fprintf(ph.fp, "%s %d\n", lists[k]->v[i], id++);
      }
    out_close(&ph);
  }

  /* words.txt: sorted unique words, then #0 <s> </s> */
  char **ws = gh_malloc((size_t)L->nlex * sizeof *ws);
  for (int i = 0; i < L->nlex; i++) ws[i] = L->lex[i].word;
  qsort(ws, (size_t)L->nlex, sizeof *ws, cmp_str);
  out_t wo = out_open(lang, "words.txt");
  fprintf(wo.fp, "<eps> 0\n");
  gh_strmap_put(&L->words, "<eps>", 0);
  int32_t nw = 0;
  for (int i = 0; i < L->nlex; i++)
    if (i == 0 || strcmp(ws[i], ws[i - 1])) {
      fprintf(wo.fp, "%s %d\n", ws[i], ++nw);
      gh_strmap_put(&L->words, ws[i], nw);
    }
  fprintf(wo.fp, "#0 %d\n<s> %d\n</s> %d\n", nw + 1, nw + 2, nw + 3);
  gh_strmap_put(&L->words, "#0", nw + 1);
  gh_strmap_put(&L->words, "<s>", nw + 2);
  gh_strmap_put(&L->words, "</s>", nw + 3);
  out_close(&wo);
  free(ws);

  /* sets, roots, extra questions */
  out_t sets = out_open(lang, "phones/sets.txt"), roots = out_open(lang, "phones/roots.txt");
  out_t setsi = out_open(lang, "phones/sets.int"), rootsi = out_open(lang, "phones/roots.int");
  int first_nonsil_line = 0;
  if (o->share_silence_phones) {
    strlist all = {0};
    for (int i = 0; i < L->sil.n; i++) variants(L, L->sil.v[i], 1, &all);
    char *s = sl_join(&all, 0);
    fprintf(sets.fp, "%s\n", s);
    fprintf(roots.fp, "not-shared not-split %s\n", s);
    write_int_line(L, setsi.fp, s, 0, "sets.txt");
    fputs("not-shared not-split ", rootsi.fp);
    write_int_line(L, rootsi.fp, s, 0, "roots.txt");
    free(s);
    sl_free(&all);
    first_nonsil_line = 1;
  }
  for (int f = first_nonsil_line; f < 2; f++) {
    textfile *tf = f == 0 ? &L->silf : &L->nonsilf;
    for (int i = 0; i < tf->lines.n; i++) {
      char *m = map_line(L, tf->lines.v[i], tf->path, i + 1);
      fprintf(sets.fp, "%s\n", m);
      fprintf(roots.fp, "shared split %s\n", m);
      write_int_line(L, setsi.fp, m, 0, "sets.txt");
      fputs("shared split ", rootsi.fp);
      write_int_line(L, rootsi.fp, m, 0, "roots.txt");
      free(m);
    }
  }
  out_close(&sets); out_close(&roots); out_close(&setsi); out_close(&rootsi);

  out_t eq = out_open(lang, "phones/extra_questions.txt"), eqi = out_open(lang, "phones/extra_questions.int");
  for (int i = 0; i < eqf.lines.n; i++) {
    char *m = map_line(L, eqf.lines.v[i], eqp, i + 1);
    fprintf(eq.fp, "%s\n", m);
    write_int_line(L, eqi.fp, m, 0, "extra_questions.txt");
    free(m);
  }
  if (o->position_dependent_phones) {
    static const char *ns_sfx[] = {"_B", "_E", "_I", "_S"}, *s_sfx[] = {"", "_B", "_E", "_I", "_S"};
    for (int k = 0; k < 9; k++) {
      const strlist *base = k < 4 ? &L->nonsil : &L->sil;
      const char *sfx = k < 4 ? ns_sfx[k] : s_sfx[k - 4];
      strlist line = {0};
      char buf[4200];
      for (int i = 0; i < base->n; i++) {
        snprintf(buf, sizeof buf, "%s%s", base->v[i], sfx);
        fprintf(eq.fp, "%s ", buf); /* the script's echo -n "$x$suffix " */
        sl_push(&line, buf);
      }
      fputc('\n', eq.fp);
      char *s = sl_join(&line, 0);
      write_int_line(L, eqi.fp, s, 0, "extra_questions.txt");
      free(s);
      sl_free(&line);
    }
  }
  out_close(&eq); out_close(&eqi);

  /* silence, nonsilence, optional_silence, context_indep, disambig */
  write_list(L, lang, "silence", &L->silv);
  write_list(L, lang, "nonsilence", &L->nonsilv);
  {
    strlist os = {0};
    sl_push(&os, L->silphone);
    write_list(L, lang, "optional_silence", &os);
    sl_free(&os);
  }
  write_list(L, lang, "context_indep", &L->silv);
  write_list(L, lang, "disambig", &L->disambig);

  /* word_boundary */
  if (o->position_dependent_phones) {
    out_t wb = out_open(lang, "phones/word_boundary.txt"), wbi = out_open(lang, "phones/word_boundary.int");
    for (int k = 0; k < 2; k++) {
      const strlist *l = k ? &L->nonsilv : &L->silv;
      for (int i = 0; i < l->n; i++) {
        const char *p = l->v[i];
        size_t n = strlen(p);
        const char *cat = "nonword";
        if (n >= 2 && p[n - 2] == '_') {
          switch (p[n - 1]) {
            case 'I': cat = "internal"; break;
            case 'B': cat = "begin"; break;
            case 'S': cat = "singleton"; break;
            case 'E': cat = "end"; break;
          }
        }
        fprintf(wb.fp, "%s %s\n", p, cat);
        fprintf(wbi.fp, "%d %s\n", sym(&L->phones, "phones.txt", p, "word_boundary"), cat);
      }
    }
    out_close(&wb); out_close(&wbi);
  }

  /* align_lexicon: "word word phones", sorted, unique, with "<eps> <eps> SIL" */
  {
    char **al = gh_malloc((size_t)(L->nlex + 1) * sizeof *al);
    int na = 0;
    for (int i = 0; i < L->nlex; i++) {
      char *p = sl_join(&L->lex[i].pron, 0);
      al[na] = gh_malloc(2 * strlen(L->lex[i].word) + strlen(p) + 3);
      sprintf(al[na++], "%s %s %s", L->lex[i].word, L->lex[i].word, p);
      free(p);
    }
    al[na] = gh_malloc(strlen(L->silphone) + 16);
    sprintf(al[na++], "<eps> <eps> %s", L->silphone);
    qsort(al, (size_t)na, sizeof *al, cmp_str);
    out_t a = out_open(lang, "phones/align_lexicon.txt"), ai = out_open(lang, "phones/align_lexicon.int");
    out_t ta = out_open(tmp, "align_lexicon.txt");
    for (int i = 0; i < L->nlex; i++) {
      char *p = sl_join(&L->lex[i].pron, 0);
      fprintf(ta.fp, "%s %s\n", L->lex[i].word, p);
      free(p);
    }
    fprintf(ta.fp, "<eps> %s\n", L->silphone);
    out_close(&ta);
    for (int i = 0; i < na; i++) {
      if (i && !strcmp(al[i], al[i - 1])) continue;
      fprintf(a.fp, "%s\n", al[i]);
      strlist t = {0};
      split_ws(al[i], &t);
      fprintf(ai.fp, "%d %d", sym(&L->words, "words.txt", t.v[0], "word"), sym(&L->words, "words.txt", t.v[1], "word"));
      for (int j = 2; j < t.n; j++) fprintf(ai.fp, " %d", sym(&L->phones, "phones.txt", t.v[j], "phone"));
      fputc('\n', ai.fp);
      sl_free(&t);
    }
    for (int i = 0; i < na; i++) free(al[i]);
    free(al);
    out_close(&a); out_close(&ai);
  }

  /* the script's scratch files */
  {
    out_t lp = out_open(tmp, "lexiconp.txt"), ld = out_open(tmp, "lexiconp_disambig.txt");
    out_t pm = out_open(tmp, "phone_map.txt"), nd = out_open(tmp, "lex_ndisambig");
    for (int i = 0; i < L->nlex; i++) {
      lexentry *e = &L->lex[i];
      char *p = sl_join(&e->pron, 0), *d = sl_join(&e->dpron, 0);
      fprintf(lp.fp, "%s %s %s\n", e->word, e->prob_str, p);
      fprintf(ld.fp, "%s\t%s\t%s\n", e->word, e->prob_str, d);
      free(p);
      free(d);
    }
    for (int k = 0; k < 2; k++) {
      const strlist *b = k ? &L->nonsil : &L->sil;
      for (int i = 0; i < b->n; i++) {
        strlist v = {0};
        variants(L, b->v[i], k == 0, &v);
        if (o->position_dependent_phones) {
          fprintf(pm.fp, "%s ", b->v[i]);
          for (int j = 0; j < v.n; j++) fprintf(pm.fp, "%s ", v.v[j]);
        } else fprintf(pm.fp, "%s %s", b->v[i], b->v[i]);
        fputc('\n', pm.fp);
        sl_free(&v);
      }
    }
    fprintf(nd.fp, "%d\n", L->ndisambig);
    out_close(&lp); out_close(&ld); out_close(&pm); out_close(&nd);
  }

  /* oov, wdisambig */
  {
    out_t ot = out_open(lang, "oov.txt"), oi = out_open(lang, "oov.int");
    fprintf(ot.fp, "%s\n", oov_word);
    int32_t w = gh_strmap_get(&L->words, oov_word);
    if (w < 0) gh_die("the OOV word '%s' is not in the lexicon (words.txt)", oov_word);
    fprintf(oi.fp, "%d\n", w);
    out_close(&ot); out_close(&oi);
    out_t wd = out_open(lang, "phones/wdisambig.txt"), wp = out_open(lang, "phones/wdisambig_phones.int");
    out_t ww = out_open(lang, "phones/wdisambig_words.int");
    fprintf(wd.fp, "#0\n");
    fprintf(wp.fp, "%d\n", sym(&L->phones, "phones.txt", "#0", "disambiguation"));
    fprintf(ww.fp, "%d\n", sym(&L->words, "words.txt", "#0", "disambiguation"));
    out_close(&wd); out_close(&wp); out_close(&ww);
  }

  /* topo */
  char *nonsil_csl = csl_of(L, &L->nonsilv), *sil_csl = csl_of(L, &L->silv);
  write_topo(L, lang, nonsil_csl, sil_csl);
  free(nonsil_csl);
  free(sil_csl);

  /* L.fst and L_disambig.fst */
  gh_fst f;
  make_lexicon_fst(L, 0, 0, &f);
  gh_fst_arcsort(&f, GH_FST_SORT_OLABEL);
  write_fst(lang, "L.fst", &f);
  gh_fst_free(&f);
  char sd[32];
  snprintf(sd, sizeof sd, "#%d", L->ndisambig);
  make_lexicon_fst(L, 1, sym(&L->phones, "phones.txt", sd, "silence disambiguation"), &f);
  add_self_loops(&f, sym(&L->phones, "phones.txt", "#0", "#0"), sym(&L->words, "words.txt", "#0", "#0"));
  gh_fst_arcsort(&f, GH_FST_SORT_OLABEL);
  write_fst(lang, "L_disambig.fst", &f);
  gh_fst_free(&f);

  gh_log("%d phones (%d silence, %d non-silence), %d words, %d pronunciations, "
         "%d disambiguation symbols", L->silv.n + L->nonsilv.n, L->silv.n, L->nonsilv.n, nw, L->nlex,
         L->ndisambig + 1);
  /* cleanup */
  for (int i = 0; i < L->nlex; i++) {
    lexentry *e = &L->lex[i];
    free(e->word); free(e->prob_str);
    sl_free(&e->pron); sl_free(&e->dpron);
  }
  free(L->lex);
  sl_free(&L->sil); sl_free(&L->nonsil); sl_free(&L->silv); sl_free(&L->nonsilv); sl_free(&L->disambig);
  tf_free(&L->silf); tf_free(&L->nonsilf); tf_free(&optf); tf_free(&eqf);
  gh_strmap_free(&L->base); gh_strmap_free(&L->phones); gh_strmap_free(&L->words);
  free(L->silphone); free(optp); free(eqp);
}
