/* am-dir.c -- the trainers' lang, data and experiment directories; see am-dir.h. */
#include "train/am-dir.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/gh-base.h"
#include "base/strmap.h"
#include "io/kaldi-io.h"
#include "train/dist-em.h"

char *gh_am_path(const char *dir, const char *name, int must_exist, const char *what) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = gh_malloc(n);
  snprintf(p, n, "%s/%s", dir, name);
  if (must_exist && access(p, R_OK) != 0)
    gh_die("%s: cannot read %s (%s): %s", p, what, dir, strerror(errno));
  return p;
}

void gh_am_mkdir_p(const char *dir) {
  char *p = gh_strdup(dir);
  for (char *s = p + 1; *s; ++s)
    if (*s == '/') {
      *s = 0;
      if (mkdir(p, 0777) != 0 && errno != EEXIST) gh_die("cannot create directory %s: %s", p, strerror(errno));
      *s = '/';
    }
  if (mkdir(p, 0777) != 0 && errno != EEXIST) gh_die("cannot create directory %s: %s", p, strerror(errno));
  free(p);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

int32_t *gh_am_read_ints(const char *path, int32_t *n, const char *what, int sorted) {
  gh_istream *in = gh_istream_open(path);
  if (!in) gh_die("%s: cannot read %s: %s", path, what, gh_last_error());
  int32_t *v = NULL, cap = 0;
  *n = 0;
  long line = 0;
  while (!gh_istream_eof(in)) {
    char *l = gh_read_line(in), *save = NULL;
    line++;
    for (char *tok = strtok_r(l, " \t\r:", &save); tok; tok = strtok_r(NULL, " \t\r:", &save)) {
      char *end;
      long x = strtol(tok, &end, 10);
      if (*end || x <= 0 || x > INT32_MAX)
        gh_die("%s line %ld: '%s' is not a positive integer (%s)", path, line, gh_printable_token(tok), what);
      if (*n == cap) v = gh_realloc(v, sizeof(int32_t) * (size_t)(cap = cap ? 2 * cap : 64));
      v[(*n)++] = (int32_t)x;
    }
  }
  gh_istream_close(in);
  if (sorted && *n > 1) qsort(v, (size_t)*n, sizeof(int32_t), cmp_i32);
  return v;
}

/* lang/phones/sets.int: one set of phones a line, sorted (Kaldi ReadSharedPhonesList). */
static int32_t read_sets(const char *path, int32_t ***sets_out, int32_t **sizes_out) {
  gh_istream *in = gh_istream_open(path);
  if (!in) gh_die("%s: cannot read the shared phones list: %s", path, gh_last_error());
  int32_t **sets = NULL, *sizes = NULL, n = 0;
  while (!gh_istream_eof(in)) {
    char *line = gh_read_line(in), *save = NULL;
    sets = gh_realloc(sets, sizeof(*sets) * (size_t)(n + 1));
    sizes = gh_realloc(sizes, sizeof(*sizes) * (size_t)(n + 1));
    int32_t *s = NULL, k = 0;
    for (char *tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
      char *end;
      long v = strtol(tok, &end, 10);
      if (*end || v <= 0 || v > GH_MAX_PHONE)
        gh_die("%s: bad line %d in shared phones list: '%s' is not a phone id", path, n + 1, gh_printable_token(tok));
      s = gh_realloc(s, sizeof(int32_t) * (size_t)(k + 1));
      s[k++] = (int32_t)v;
    }
    if (k == 0) gh_die("%s: line %d of the shared phones list is empty", path, n + 1);
    qsort(s, (size_t)k, sizeof(int32_t), cmp_i32);
    sets[n] = s;
    sizes[n++] = k;
  }
  gh_istream_close(in);
  *sets_out = sets;
  *sizes_out = sizes;
  return n;
}

void gh_am_lang_open(gh_am_lang *l, const char *lang) {
  memset(l, 0, sizeof *l);
  l->topo_path = gh_am_path(lang, "topo", 1, "the HMM topology of the lang directory");
  l->sets_path = gh_am_path(lang, "phones/sets.int", 1, "the shared phone sets of the lang directory");
  l->lex_path = gh_am_path(lang, "L.fst", 1, "the lexicon FST of the lang directory");
  l->disambig_path = gh_am_path(lang, "phones/disambig.int", 1, "the disambiguation symbols of the lang directory");
  l->words_path = gh_am_path(lang, "words.txt", 1, "the word list of the lang directory");
  l->oov_path = gh_am_path(lang, "oov.int", 1, "the OOV word of the lang directory");
  l->silence_path = gh_am_path(lang, "phones/optional_silence.csl", 1, "the optional silence of the lang directory");
  l->phones_path = gh_am_path(lang, "phones.txt", 1, "the phone list of the lang directory");
}

void gh_am_lang_read(gh_am_lang *l) {
  int32_t noov = 0, *oov = gh_am_read_ints(l->oov_path, &noov, "the OOV word id", 0);
  if (noov != 1) gh_die("%s: expected one word id, found %d", l->oov_path, noov);
  l->oov = oov[0];
  free(oov);
  l->silence = gh_am_read_ints(l->silence_path, &l->num_silence, "silence phones", 1);
  l->disambig = gh_am_read_ints(l->disambig_path, &l->num_disambig, "disambiguation symbols", 0);
  l->nsets = read_sets(l->sets_path, &l->sets, &l->set_sizes);
  l->topo = gh_topology_read(l->topo_path);
}

void gh_am_lang_free(gh_am_lang *l) {
  for (int32_t i = 0; i < l->nsets; ++i) free(l->sets[i]);
  free(l->sets);
  free(l->set_sizes);
  free(l->silence);
  free(l->disambig);
  if (l->topo) gh_transition_free(l->topo);
  free(l->topo_path);
  free(l->sets_path);
  free(l->lex_path);
  free(l->disambig_path);
  free(l->words_path);
  free(l->oov_path);
  free(l->silence_path);
  free(l->phones_path);
  memset(l, 0, sizeof *l);
}

void gh_am_text_read(gh_am_text *t, const char *text, const char *words_txt, int32_t oov) {
  gh_strmap w = {0};
  gh_istream *in = gh_istream_open(words_txt);
  if (!in) gh_die("%s: cannot read the word list: %s", words_txt, gh_last_error());
  long line = 0;
  while (!gh_istream_eof(in)) {
    char *l = gh_read_line(in), *save = NULL;
    line++;
    char *a = strtok_r(l, " \t\r", &save), *b = strtok_r(NULL, " \t\r", &save), *end = NULL;
    long id = b ? strtol(b, &end, 10) : -1;
    if (!a || !b || *end || id < 0 || id > INT32_MAX) gh_die("%s line %ld: expected '<word> <id>'", words_txt, line);
    gh_strmap_put(&w, a, (int32_t)id);
  }
  gh_istream_close(in);
  in = gh_istream_open(text);
  if (!in) gh_die("%s: cannot read the transcripts: %s", text, gh_last_error());
  int64_t n = 0, noov = 0;
  memset(t, 0, sizeof *t);
  while (!gh_istream_eof(in)) {
    char *l = gh_read_line(in), *save = NULL;
    char *k = strtok_r(l, " \t\r", &save);
    if (!k) continue;
    t->keys = gh_realloc(t->keys, sizeof(char *) * (size_t)(n + 1));
    t->words = gh_realloc(t->words, sizeof(int32_t *) * (size_t)(n + 1));
    t->num_words = gh_realloc(t->num_words, sizeof(int32_t) * (size_t)(n + 1));
    t->keys[n] = gh_strdup(k);
    int32_t *v = NULL, m = 0;
    for (char *tok = strtok_r(NULL, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
      int32_t id = gh_strmap_get(&w, tok);
      if (id < 0) {
        id = oov;
        noov++;
      }
      v = gh_realloc(v, sizeof(int32_t) * (size_t)(m + 1));
      v[m++] = id;
    }
    t->words[n] = v;
    t->num_words[n++] = m;
  }
  t->n = n;
  gh_istream_close(in);
  gh_strmap_free(&w);
  if (noov) gh_log("%lld words of %s not in %s were mapped to the OOV %d", (long long)noov, text, words_txt, oov);
}

void gh_am_text_free(gh_am_text *t) {
  for (int64_t i = 0; i < t->n; ++i) {
    free(t->keys[i]);
    free(t->words[i]);
  }
  free(t->keys);
  free(t->words);
  free(t->num_words);
  memset(t, 0, sizeof *t);
}

char *gh_am_feats_rspec(const char *data, const char *feats_opt, const char *cmvn_opts, const char *delta_opts) {
  if (*feats_opt) return gh_strdup(feats_opt);
  char *fs = gh_am_path(data, "feats.scp", 1, "the features of the data directory");
  char *cs = gh_am_path(data, "cmvn.scp", 1, "the CMVN statistics of the data directory");
  char *us = gh_am_path(data, "utt2spk", 1, "the speakers of the data directory");
  /* our apply-cmvn and add-deltas, beside this program */
  char exe[PATH_MAX] = "";
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[len > 0 ? len : 0] = 0;
  char *slash = strrchr(exe, '/');
  if (slash) slash[1] = 0;
  size_t n = strlen(fs) + strlen(cs) + strlen(us) + 2 * strlen(exe) + strlen(cmvn_opts) + strlen(delta_opts) + 200;
  char *feats = gh_malloc(n);
  snprintf(feats, n, "ark,s,cs:%sapply-cmvn %s --utt2spk=ark:%s scp:%s scp:%s ark:- | %sadd-deltas %s ark:- ark:- |",
           exe, cmvn_opts, us, cs, fs, exe, delta_opts);
  free(fs);
  free(cs);
  free(us);
  return feats;
}

FILE *gh_am_exp_dir_begin(const char *dir, gh_comm *comm) {
  const int rank = gh_comm_rank(comm);
  if (rank == 0) gh_am_mkdir_p(dir);
  char *log_dir = gh_am_path(dir, "log", 0, NULL);
  if (rank == 0) gh_am_mkdir_p(log_dir);
  gh_comm_barrier(comm);
  char *tlog_p = gh_am_path(log_dir, "train.log", 0, NULL);
  FILE *tlog = NULL;
  if (rank == 0 && !(tlog = fopen(tlog_p, "w"))) gh_die("cannot write %s: %s", tlog_p, strerror(errno));
  free(log_dir);
  free(tlog_p);
  return tlog;
}

void gh_am_write_model_tree(const char *dir, const char *mdl_name, const gh_gmm_set *model, const gh_ctx_dep *ctx) {
  char *p = gh_am_path(dir, mdl_name, 0, NULL);
  gh_gmm_set_write(p, 1, model);
  free(p);
  p = gh_am_path(dir, "tree", 0, NULL);
  gh_ctx_dep_write(p, 1, ctx);
  free(p);
}

void gh_am_write_occs(const char *path, int binary, const double *d, const float *f, int32_t n) {
  gh_ostream *os = gh_ostream_open(path);
  gh_vector v = {0};
  gh_vector_resize(&v, n);
  for (int32_t q = 0; q < n; ++q) v.data[q] = d ? (float)d[q] : f[q];
  gh_write_binary_marker(os, binary);
  gh_write_vector(os, binary, &v);
  gh_ostream_close(os);
  gh_vector_free(&v);
}

void gh_am_run_passes(gh_am_trainer *tr, gh_comm *comm, const gh_gmm_set *model, int32_t from, int32_t to,
                      double *occs, FILE *tlog, double *align_s, double *estep_s, double *mstep_s) {
  const int rank = gh_comm_rank(comm);
  for (int32_t x = from; x < to; ++x) {
    gh_am_pass_stats st;
    gh_am_trainer_pass(tr, x, &st, occs);
    uint64_t h = gh_gmm_set_hash(model);
    gh_comm_check_same(comm, &h, sizeof h, "the model after a pass");
    *align_s += st.align_seconds;
    *estep_s += st.estep_seconds;
    *mstep_s += st.mstep_seconds;
    if (rank != 0) continue;
    const double avg = st.frames > 0 ? st.like / st.frames : 0.0;
    const double ali = st.ali_frames > 0 ? st.ali_like / st.ali_frames : 0.0;
    if (st.aligned)
      gh_log("pass %d: aligned %.0f utterances (%.0f failed, %.0f retried), log-likelihood per frame %g over %.0f "
             "frames", x, st.ali_utts, st.ali_failed, st.ali_retried, ali, st.ali_frames);
    gh_log("pass %d: Overall avg like per frame (Gaussian only) = %g over %.0f frames; %lld Gaussians; %.3g s "
           "(alignment %.3g s of which GMM scoring %.3g s, E-step %.3g s, M-step %.3g s)",
           x, avg, st.frames, (long long)st.num_gauss, st.seconds, st.align_seconds, st.score_seconds,
           st.estep_seconds, st.mstep_seconds);
    if (!tlog) continue;
    fprintf(tlog, "%d %.6f %.0f %lld %d %.6f %.0f %.4f %.4f %.4f %.4f %.4f\n", x, avg, st.frames,
            (long long)st.num_gauss, st.aligned, ali, st.ali_failed, st.seconds, st.align_seconds, st.score_seconds,
            st.estep_seconds, st.mstep_seconds);
    fflush(tlog);
  }
}

static void write_text(const char *dir, const char *name, const char *text) {
  char *p = gh_am_path(dir, name, 0, NULL);
  gh_ostream *o = gh_ostream_open(p);
  fputs(text, gh_ostream_fp(o));
  gh_ostream_close(o);
  free(p);
}

/* phones.txt copied line by line, as the scripts' cp */
static void copy_file(const char *from, const char *to) {
  gh_istream *in = gh_istream_open(from);
  if (!in) gh_die("%s: cannot read: %s", from, gh_last_error());
  gh_ostream *o = gh_ostream_open(to);
  while (!gh_istream_eof(in)) fprintf(gh_ostream_fp(o), "%s\n", gh_read_line(in));
  gh_ostream_close(o);
  gh_istream_close(in);
}

void gh_am_write_final(gh_am_trainer *tr, gh_comm *comm, const char *dir, const gh_gmm_set *model,
                       const double *occs, const char *cmvn_opts, const char *phones_txt) {
  const int rank = gh_comm_rank(comm);
  char job[64];
  snprintf(job, sizeof job, "ali.%d.gz", rank + 1);
  char *p = gh_am_path(dir, job, 0, NULL);
  size_t n = strlen(p) + 32;
  char *w = gh_malloc(n);
  snprintf(w, n, "ark,t:|gzip -c >%s", p);
  gh_am_trainer_write_ali(tr, w);
  free(w);
  free(p);
  if (rank != 0) return;
  p = gh_am_path(dir, "final.mdl", 0, NULL);
  gh_gmm_set_write(p, 1, model);
  free(p);
  p = gh_am_path(dir, "final.occs", 0, NULL);
  gh_am_write_occs(p, 0, occs, NULL, model->num_pdfs);
  free(p);
  char buf[64];
  snprintf(buf, sizeof buf, "%d\n", gh_comm_size(comm));
  write_text(dir, "num_jobs", buf);
  size_t cl = strlen(cmvn_opts) + 2;
  char *c = gh_malloc(cl);
  snprintf(c, cl, "%s\n", cmvn_opts);
  write_text(dir, "cmvn_opts", c);
  free(c);
  p = gh_am_path(dir, "phones.txt", 0, NULL);
  copy_file(phones_txt, p);
  free(p);
}
