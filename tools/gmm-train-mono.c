/* gmm-train-mono -- Kaldi's steps/train_mono.sh as one program (one process or
 * R MPI ranks): flat start by equal alignment, num_iters passes with
 * realignment on realign_iters, Gaussians raised to --totgauss, silence
 * boosted for alignment, beam 6 then 10; the features (CMVN + deltas, as the
 * script's pipeline), graphs and alignments stay in memory
 * (drivers/train/am-train.h).  Writes the script's outputs: dir/0.mdl,
 * dir/tree, dir/final.mdl, dir/final.occs, dir/ali.JOB.gz (one per rank),
 * dir/num_jobs, dir/cmvn_opts, dir/phones.txt and dir/log/train.log. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "base/strmap.h"
#include "decoder/lang-check.h"
#include "gmm/gmm.h"
#include "hmm/transition.h"
#include "io/fst.h"
#include "io/kaldi-io.h"
#include "tree/context-dep.h"
#include "train/am-train.h"
#include "train/comm.h"
#include "train/device-opts.h"
#include "train/dist-em.h"

static const char *usage =
    "Monophone training: Kaldi's steps/train_mono.sh in one program (or one job of R MPI ranks:\n"
    "mpirun -np R gmm-train-mono ...), the features (apply-cmvn | add-deltas of <data-dir>, as the\n"
    "script's) read once, the training graphs compiled once, features, graphs and alignments kept in\n"
    "memory (on the device for the E-step) across the passes.  The schedule is the script's: gmm-init-mono\n"
    "on the first 10 utterances, equal alignment, pass 0 with --min-gaussian-occupancy=3, then passes\n"
    "1 .. num-iters-1: realignment on --realign-iters (boost-silence, --initial-beam on pass 1, then\n"
    "--regular-beam, --retry-beam), accumulation, gmm-est with the Gaussians raised by\n"
    "(totgauss - initial) / max-iter-inc on each pass up to --max-iter-inc; --exact realigns by exact\n"
    "Viterbi on the --device (no beam: no failure for lack of one).  The script's options have\n"
    "the script's names and defaults.  Outputs (<exp-dir>, as the script's): 0.mdl, tree, final.mdl,\n"
    "final.occs, ali.JOB.gz (JOB = rank + 1), num_jobs, cmvn_opts, phones.txt, log/train.log (per pass\n"
    "the average log-likelihood per frame of the accumulation, the numbers of the script's acc logs).\n"
    "The model does not depend on the number of ranks.  Kaldi's steps/train_mono.sh runs unchanged on\n"
    "our tools too (its --cmd job layout, for clusters without MPI).  The name: the monophone stage\n"
    "of the resident GMM trainers (gmm-train, hmm-train); the triphone stage (train_deltas.sh) is the\n"
    "same trainer (drivers/train/am-train.h) with another schedule.\n"
    "Usage:  gmm-train-mono [options] <data-dir> <lang-dir> <exp-dir>\n"
    "e.g.:   gmm-train-mono --totgauss=1000 data/train data/lang exp/mono\n"
    "        mpirun -np 2 gmm-train-mono --num-iters=40 data/train data/lang exp/mono\n"
    "        gmm-train-mono --exact --device=cuda data/train data/lang exp/mono\n";

/* dir/name, or dies naming it when missing (for inputs). */
static char *path_of(const char *dir, const char *name, int must_exist, const char *what) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = gh_malloc(n);
  snprintf(p, n, "%s/%s", dir, name);
  if (must_exist && access(p, R_OK) != 0)
    gh_die("%s: cannot read %s (%s): %s", p, what, dir, strerror(errno));
  return p;
}

static void mkdir_p(const char *dir) {
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

/* Integers of a file (whitespace or ':' separated); *n of them. */
static int32_t *read_ints(const char *path, int32_t *n, const char *what) {
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
  return v;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
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

/* data/text through lang/words.txt, unknown words to the OOV (sym2int.pl --map-oov). */
static int64_t read_text(const char *text, const char *words_txt, int32_t oov, char ***keys, int32_t ***words,
                         int32_t **nw) {
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
  line = 0;
  *keys = NULL;
  *words = NULL;
  *nw = NULL;
  while (!gh_istream_eof(in)) {
    char *l = gh_read_line(in), *save = NULL;
    line++;
    char *k = strtok_r(l, " \t\r", &save);
    if (!k) continue;
    *keys = gh_realloc(*keys, sizeof(char *) * (size_t)(n + 1));
    *words = gh_realloc(*words, sizeof(int32_t *) * (size_t)(n + 1));
    *nw = gh_realloc(*nw, sizeof(int32_t) * (size_t)(n + 1));
    (*keys)[n] = gh_strdup(k);
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
    (*words)[n] = v;
    (*nw)[n++] = m;
  }
  gh_istream_close(in);
  gh_strmap_free(&w);
  if (noov) gh_log("%lld words of %s not in %s were mapped to the OOV %d", (long long)noov, text, words_txt, oov);
  return n;
}

static uint8_t *parse_iters(const char *s, int32_t *n) {
  uint8_t *f = gh_calloc(4096, 1);
  *n = 4096;
  for (const char *p = s; *p;) {
    while (*p == ' ' || *p == ',' || *p == '\t') ++p;
    if (!*p) break;
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v >= 4096) gh_die("--realign-iters: bad iteration list '%s'", s);
    f[v] = 1;
    p = end;
  }
  return f;
}

static void write_text(const char *path, const char *text) {
  gh_ostream *o = gh_ostream_open(path);
  fputs(text, gh_ostream_fp(o));
  gh_ostream_close(o);
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  gh_am_train_opts o;
  gh_am_train_opts_default(&o);
  const char *realign = "1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29 32 35 38";
  const char *cmvn_opts = "", *delta_opts = "", *feats_opt = "";
  gh_opts_int(po, "num-iters", &o.num_iters, "Number of iterations of training (the final model is num-iters.mdl)");
  gh_opts_int(po, "max-iter-inc", &o.max_iter_inc, "Last iteration to increase the number of Gaussians on");
  gh_opts_int64(po, "totgauss", &o.totgauss, "Target number of Gaussians");
  gh_opts_float(po, "boost-silence", &o.boost_silence,
                "Factor by which to boost silence likelihoods in alignment (lang/phones/optional_silence.csl)");
  gh_opts_string(po, "realign-iters", &realign, "Iterations on which to realign");
  gh_opts_double(po, "power", &o.power, "Exponent to determine the number of Gaussians from occupation counts");
  gh_opts_bool(po, "careful", &o.careful, "Careful alignment (gmm-align-compiled --careful)");
  gh_opts_float(po, "initial-beam", &o.initial_beam, "Beam used in the first realignment");
  gh_opts_float(po, "regular-beam", &o.regular_beam, "Beam used after the first realignment");
  gh_opts_float(po, "retry-beam", &o.retry_beam, "Beam of the second try of an utterance that failed to align");
  gh_opts_float(po, "transition-scale", &o.transition_scale, "Transition-probability scale of alignment (scale_opts)");
  gh_opts_float(po, "acoustic-scale", &o.acoustic_scale, "Acoustic scale of alignment (scale_opts)");
  gh_opts_float(po, "self-loop-scale", &o.self_loop_scale, "Self-loop scale of alignment (scale_opts)");
  gh_opts_string(po, "cmvn-opts", &cmvn_opts, "Options of apply-cmvn (e.g. \"--norm-vars=false\")");
  gh_opts_string(po, "delta-opts", &delta_opts, "Options of add-deltas");
  gh_opts_string(po, "feats", &feats_opt,
                 "Features rspecifier to train on instead of <data-dir>'s feats.scp + cmvn.scp through apply-cmvn "
                 "and add-deltas");
  gh_opts_int(po, "seed", &o.seed, "Seed of the mix-up perturbations (gmm-est --seed)");
  gh_opts_int64(po, "block-frames", &o.block_frames,
                "Frames per fixed block of the E-step (the same for every number of ranks)");
  int exact = 0, batch_size = 256;
  gh_opts_bool(po, "exact", &exact,
               "Realign by exact Viterbi (no pruning: the beams ignored, never a failure for lack of beam), "
               "batches of utterances on the --device (gmm-align-compiled --exact)");
  gh_opts_int(po, "batch-size", &batch_size,
              "With --exact: utterances aligned together on the device (0: lib/decoder's decoder with an "
              "infinite beam on the CPU)");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  gh_comm_opts co;
  gh_comm_opts_default(&co);
  gh_comm_opts_register(po, &co);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *data = gh_opts_arg(po, 0), *lang = gh_opts_arg(po, 1), *dir = gh_opts_arg(po, 2);
  if (o.num_iters < 1) gh_die("--num-iters must be >= 1 (got %d)", o.num_iters);
  if (o.max_iter_inc < 1) gh_die("--max-iter-inc must be >= 1 (got %d)", o.max_iter_inc);
  if (!(o.boost_silence > 0.0f)) gh_die("--boost-silence must be > 0 (got %g)", (double)o.boost_silence);
  if (!(o.initial_beam > 0) || !(o.regular_beam > 0) || o.retry_beam < 0)
    gh_die("beams must be positive (--initial-beam %g, --regular-beam %g, --retry-beam %g)", (double)o.initial_beam,
           (double)o.regular_beam, (double)o.retry_beam);
  if (o.block_frames < 1) gh_die("--block-frames must be >= 1 (got %lld)", (long long)o.block_frames);
  if (batch_size < 0) gh_die("--batch-size must be >= 0 (got %d)", batch_size);
  if (exact) { /* no pruning on every realignment pass */
    o.initial_beam = o.regular_beam = GH_DEC_EXACT;
    o.retry_beam = 0.0f;
  }
  uint8_t *realign_flags = parse_iters(realign, &o.num_realign);
  o.realign = realign_flags;

  /* the lang directory and the data directory, checked before anything starts */
  char *topo_p = path_of(lang, "topo", 1, "the HMM topology of the lang directory");
  char *sets_p = path_of(lang, "phones/sets.int", 1, "the shared phone sets of the lang directory");
  char *lex_p = path_of(lang, "L.fst", 1, "the lexicon FST of the lang directory");
  char *dis_p = path_of(lang, "phones/disambig.int", 1, "the disambiguation symbols of the lang directory");
  char *words_p = path_of(lang, "words.txt", 1, "the word list of the lang directory");
  char *oov_p = path_of(lang, "oov.int", 1, "the OOV word of the lang directory");
  char *sil_p = path_of(lang, "phones/optional_silence.csl", 1, "the optional silence of the lang directory");
  char *phones_p = path_of(lang, "phones.txt", 1, "the phone list of the lang directory");
  char *text_p = path_of(data, "text", 1, "the transcripts of the data directory");
  char *feats = NULL;
  if (*feats_opt) {
    feats = gh_strdup(feats_opt);
  } else {
    char *fs = path_of(data, "feats.scp", 1, "the features of the data directory");
    char *cs = path_of(data, "cmvn.scp", 1, "the CMVN statistics of the data directory");
    char *us = path_of(data, "utt2spk", 1, "the speakers of the data directory");
    /* our apply-cmvn and add-deltas, beside this program */
    char exe[PATH_MAX] = "";
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) slash[1] = 0;
    size_t n = strlen(fs) + strlen(cs) + strlen(us) + 2 * strlen(exe) + strlen(cmvn_opts) + strlen(delta_opts) + 200;
    feats = gh_malloc(n);
    snprintf(feats, n, "ark,s,cs:%sapply-cmvn %s --utt2spk=ark:%s scp:%s scp:%s ark:- | %sadd-deltas %s ark:- ark:- |",
             exe, cmvn_opts, us, cs, fs, exe, delta_opts);
    free(fs);
    free(cs);
    free(us);
  }

  gh_comm *comm = gh_comm_start(&argc, &argv, &co);
  const int rank = gh_comm_rank(comm), R = gh_comm_size(comm);
  gh_comm_check_options(comm, po, (const char *const[]){"device", NULL});
  gh_device_opts_bind_rank(&dev, comm);

  int32_t noov = 0, *oov = read_ints(oov_p, &noov, "the OOV word id");
  if (noov != 1) gh_die("%s: expected one word id, found %d", oov_p, noov);
  int32_t nsil = 0, *sil = read_ints(sil_p, &nsil, "silence phones");
  qsort(sil, (size_t)nsil, sizeof(int32_t), cmp_i32);
  o.silence_phones = sil;
  o.num_silence_phones = nsil;
  int32_t ndis = 0, *dis = read_ints(dis_p, &ndis, "disambiguation symbols");
  int32_t **sets, *sizes, nsets = read_sets(sets_p, &sets, &sizes);
  gh_transition_model *topo = gh_topology_read(topo_p);
  gh_fst lex;
  gh_fst_init(&lex);
  gh_fst_read_file(lex_p, &lex);
  gh_lang_check_model(topo, topo_p, &lex, lex_p, dis, ndis, dis_p, phones_p);
  char **keys;
  int32_t **words, *nw;
  const int64_t ntext = read_text(text_p, words_p, oov[0], &keys, &words, &nw);

  if (rank == 0) mkdir_p(dir);
  char *log_dir = path_of(dir, "log", 0, NULL);
  if (rank == 0) mkdir_p(log_dir);
  gh_comm_barrier(comm);
  char *tlog_p = path_of(log_dir, "train.log", 0, NULL);
  FILE *tlog = NULL;
  if (rank == 0 && !(tlog = fopen(tlog_p, "w"))) gh_die("cannot write %s: %s", tlog_p, strerror(errno));

  const double t0 = gh_seconds();
  gh_device_opts_begin(&dev);
  gh_backend *be = NULL;
  gh_gmm_set model = {0};
  gh_ctx_dep *ctx = NULL;
  gh_am_trainer *tr = gh_am_trainer_new(&dev, &be, comm, &model, &ctx, topo, nsets, sets, sizes, &lex, lex_p, dis,
                                        ndis, feats, ntext, keys, words, nw,
                                        exact && batch_size > 0 ? gh_am_aligner_exact(batch_size) : gh_am_aligner_cpu(),
                                        &o);
  int64_t nu, nf, ru, rf;
  gh_am_trainer_sizes(tr, &nu, &nf, &ru, &rf);
  const double t_load = gh_seconds() - t0;
  if (rank == 0) {
    char *p = path_of(dir, "0.mdl", 0, NULL);
    gh_gmm_set_write(p, 1, &model);
    free(p);
    p = path_of(dir, "tree", 0, NULL);
    gh_ctx_dep_write(p, 1, ctx);
    free(p);
    gh_log("%lld utterances, %lld frames (rank 0: %lld, %lld) on %d rank(s); %d pdfs, %lld Gaussians, target %lld; "
           "read, graphs and equal alignment in %.3g s",
           (long long)nu, (long long)nf, (long long)ru, (long long)rf, R, model.num_pdfs,
           (long long)gh_gmm_set_total_gauss(&model), (long long)o.totgauss, t_load);
    fprintf(tlog, "# %s\n# pass avg-like-per-frame frames num-gauss realigned ali-like-per-frame ali-failed "
                  "seconds align-s score-s estep-s mstep-s\n", feats);
  }
  double *occs = gh_malloc(sizeof(double) * (size_t)model.num_pdfs);
  double tot_align = 0, tot_estep = 0, tot_mstep = 0;
  for (int32_t x = 0; x < o.num_iters; ++x) {
    gh_am_pass_stats st;
    gh_am_trainer_pass(tr, x, &st, occs);
    uint64_t h = gh_gmm_set_hash(&model);
    gh_comm_check_same(comm, &h, sizeof h, "the model after a pass");
    tot_align += st.align_seconds;
    tot_estep += st.estep_seconds;
    tot_mstep += st.mstep_seconds;
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
    fprintf(tlog, "%d %.6f %.0f %lld %d %.6f %.0f %.4f %.4f %.4f %.4f %.4f\n", x, avg, st.frames,
            (long long)st.num_gauss, st.aligned, ali, st.ali_failed, st.seconds, st.align_seconds, st.score_seconds,
            st.estep_seconds, st.mstep_seconds);
    fflush(tlog);
  }
  {
    char job[64];
    snprintf(job, sizeof job, "ali.%d.gz", rank + 1);
    char *p = path_of(dir, job, 0, NULL);
    size_t n = strlen(p) + 32;
    char *w = gh_malloc(n);
    snprintf(w, n, "ark,t:|gzip -c >%s", p);
    gh_am_trainer_write_ali(tr, w);
    free(w);
    free(p);
  }
  if (rank == 0) {
    char *p = path_of(dir, "final.mdl", 0, NULL);
    gh_gmm_set_write(p, 1, &model);
    free(p);
    p = path_of(dir, "final.occs", 0, NULL);
    gh_ostream *os = gh_ostream_open(p);
    gh_vector v = {0};
    gh_vector_resize(&v, model.num_pdfs);
    for (int32_t q = 0; q < model.num_pdfs; ++q) v.data[q] = (float)occs[q];
    gh_write_binary_marker(os, 0);
    gh_write_vector(os, 0, &v);
    gh_ostream_close(os);
    gh_vector_free(&v);
    free(p);
    char buf[64];
    snprintf(buf, sizeof buf, "%d\n", R);
    p = path_of(dir, "num_jobs", 0, NULL);
    write_text(p, buf);
    free(p);
    p = path_of(dir, "cmvn_opts", 0, NULL);
    size_t cl = strlen(cmvn_opts) + 2;
    char *c = gh_malloc(cl);
    snprintf(c, cl, "%s\n", cmvn_opts);
    write_text(p, c);
    free(c);
    free(p);
    /* phones.txt copied, as the script's cp */
    gh_istream *in = gh_istream_open(phones_p);
    if (!in) gh_die("%s: cannot read: %s", phones_p, gh_last_error());
    p = path_of(dir, "phones.txt", 0, NULL);
    gh_ostream *po2 = gh_ostream_open(p);
    while (!gh_istream_eof(in)) fprintf(gh_ostream_fp(po2), "%s\n", gh_read_line(in));
    gh_ostream_close(po2);
    gh_istream_close(in);
    free(p);
    const double tt = gh_seconds() - t0;
    gh_log("wrote %s/final.mdl: %d pdfs, %lld Gaussians after %d passes; %.3g s in all (read + graphs + equal "
           "alignment %.3g s, alignment %.3g s, E-step %.3g s, M-step %.3g s)",
           dir, model.num_pdfs, (long long)gh_gmm_set_total_gauss(&model), o.num_iters, tt, t_load, tot_align,
           tot_estep, tot_mstep);
    fprintf(tlog, "# total %.4f s: load %.4f align %.4f estep %.4f mstep %.4f\n", tt, t_load, tot_align, tot_estep,
            tot_mstep);
    fclose(tlog);
  }
  gh_am_trainer_free(tr);
  gh_backend_free(be);
  gh_comm_finalize(comm);
  gh_ctx_dep_free(ctx);
  gh_gmm_set_free(&model);
  gh_transition_free(topo);
  for (int32_t i = 0; i < nsets; ++i) free(sets[i]);
  free(sets);
  free(sizes);
  for (int64_t i = 0; i < ntext; ++i) {
    free(keys[i]);
    free(words[i]);
  }
  free(keys);
  free(words);
  free(nw);
  free(occs);
  free(oov);
  free(sil);
  free(dis);
  free(feats);
  free(realign_flags);
  free(topo_p);
  free(sets_p);
  free(lex_p);
  free(dis_p);
  free(words_p);
  free(oov_p);
  free(sil_p);
  free(phones_p);
  free(text_p);
  free(log_dir);
  free(tlog_p);
  gh_opts_free(po);
  return 0;
}
