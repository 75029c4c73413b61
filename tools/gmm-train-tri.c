/* gmm-train-tri -- Kaldi's steps/train_deltas.sh as one program (one process or
 * R MPI ranks): tree statistics from the monophone alignments on the resident
 * features, questions, the tree, the model from the tree, the alignments
 * converted to it, the triphone training graphs, then num_iters - 1 passes
 * with realignment on realign_iters and the Gaussians raised to <tot-gauss>
 * (drivers/train/am-train.h, the triphone stage).  Writes the script's
 * outputs: dir/tree, dir/questions.int, dir/questions.qst, dir/1.mdl,
 * dir/1.occs, dir/final.mdl, dir/final.occs, dir/ali.JOB.gz (one per rank),
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
#include "hmm/tree-accu.h"
#include "io/fst.h"
#include "io/kaldi-io.h"
#include "tree/context-dep.h"
#include "tree/questions.h"
#include "tree/tree-stats.h"
#include "train/am-train.h"
#include "train/comm.h"
#include "train/device-opts.h"
#include "train/dist-em.h"

static const char *usage =
    "Triphone training: Kaldi's steps/train_deltas.sh in one program (or one job of R MPI ranks:\n"
    "mpirun -np R gmm-train-tri ...), with the script's arguments, options and outputs.  The features\n"
    "(apply-cmvn | add-deltas of <data-dir>, as the script's) are read once and stay resident with\n"
    "the alignments and graphs; the stages are library calls, not processes: acc-tree-stats on\n"
    "<ali-dir>'s ali.*.gz (the monophone alignments of <ali-dir>/final.mdl), cluster-phones,\n"
    "compile-questions with lang/phones/extra_questions.int, build-tree --max-leaves=<num-leaves>\n"
    "with lang/phones/roots.int, gmm-init-model, gmm-mixup --mix-up=<num-leaves>, convert-ali, the\n"
    "triphone training graphs; then passes 1 .. num-iters-1: realignment on --realign-iters (beam\n"
    "--beam, --retry-beam, boost-silence), accumulation, gmm-est with Kaldi's mix-up, the Gaussians\n"
    "raised by (tot-gauss - num-leaves) / max-iter-inc on each pass up to --max-iter-inc.\n"
    "Why a second program rather than a stage list in gmm-train-mono: the script's interface (an\n"
    "alignment directory in, so any monophone run -- train_mono.sh, gmm-train-mono, or another\n"
    "aligner's -- can feed it) is kept; both run the same resident trainer (drivers/train/am-train.h).\n"
    "--mono=true runs both stages in this one process: <ali-dir> is then an output, the monophone\n"
    "stage (gmm-train-mono's schedule and defaults: --mono-num-iters, --mono-max-iter-inc,\n"
    "--mono-totgauss, --mono-realign-iters) trains on the same resident features first and writes\n"
    "<ali-dir> (0.mdl, tree, final.mdl, final.occs, ali.JOB.gz, num_jobs, cmvn_opts, phones.txt) as\n"
    "gmm-train-mono does, and the triphone stage goes on from its alignments in memory (the same\n"
    "models as the two programs).\n"
    "The model does not depend on the number of ranks.  Outputs (<exp-dir>): tree, questions.int,\n"
    "questions.qst, 1.mdl, 1.occs, final.mdl, final.occs, ali.JOB.gz (JOB = rank + 1), num_jobs,\n"
    "cmvn_opts, phones.txt, log/train.log (per pass the average log-likelihood per frame).\n"
    "Usage:  gmm-train-tri [options] <num-leaves> <tot-gauss> <data-dir> <lang-dir> <ali-dir> <exp-dir>\n"
    "e.g.:   gmm-train-tri 2000 10000 data/train data/lang exp/mono_ali exp/tri1\n"
    "        mpirun -np 2 gmm-train-tri --num-iters=35 2000 10000 data/train data/lang exp/mono exp/tri1\n"
    "        gmm-train-tri --mono=true --mono-totgauss=1000 2000 10000 data/train data/lang exp/mono exp/tri1\n";

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

/* The occupancies as gmm-est --write-occs / gmm-init-model --write-occs write them. */
static void write_occs(const char *path, int binary, const double *d, const float *f, int32_t n) {
  gh_ostream *os = gh_ostream_open(path);
  gh_vector v = {0};
  gh_vector_resize(&v, n);
  for (int32_t q = 0; q < n; ++q) v.data[q] = d ? (float)d[q] : f[q];
  gh_write_binary_marker(os, binary);
  gh_write_vector(os, binary, &v);
  gh_ostream_close(os);
  gh_vector_free(&v);
}

static void copy_file(const char *from, const char *to) {
  gh_istream *in = gh_istream_open(from);
  if (!in) gh_die("%s: cannot read: %s", from, gh_last_error());
  gh_ostream *o = gh_ostream_open(to);
  while (!gh_istream_eof(in)) fprintf(gh_ostream_fp(o), "%s\n", gh_read_line(in));
  gh_ostream_close(o);
  gh_istream_close(in);
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  gh_am_train_opts o;
  gh_am_train_opts_default(&o);
  o.stage = GH_AM_STAGE_TRI;
  o.num_iters = 35;
  o.max_iter_inc = 25;
  o.kaldi_mixup = 1;
  gh_am_tri_opts to;
  gh_am_tri_opts_default(&to);
  float beam = 10.0f;
  const char *realign = "10 20 30";
  const char *cmvn_opts = "", *delta_opts = "", *feats_opt = "";
  gh_opts_int(po, "num-iters", &o.num_iters, "Number of iterations of training (the final model is num-iters.mdl)");
  gh_opts_int(po, "max-iter-inc", &o.max_iter_inc, "Last iteration to increase the number of Gaussians on");
  gh_opts_float(po, "boost-silence", &o.boost_silence,
                "Factor by which to boost silence likelihoods in alignment (lang/phones/optional_silence.csl)");
  gh_opts_string(po, "realign-iters", &realign, "Iterations on which to realign");
  gh_opts_double(po, "power", &o.power, "Exponent for the number of Gaussians according to occurrence counts");
  gh_opts_float(po, "cluster-thresh", &to.cluster_thresh,
                "build-tree --cluster-thresh: threshold of the final bottom-up clustering of leaves (-1: the last "
                "split's gain)");
  gh_opts_bool(po, "careful", &o.careful, "Careful alignment (gmm-align-compiled --careful)");
  gh_opts_float(po, "beam", &beam, "Beam of the realignments");
  gh_opts_float(po, "retry-beam", &o.retry_beam, "Beam of the second try of an utterance that failed to align");
  gh_opts_float(po, "transition-scale", &o.transition_scale, "Transition-probability scale of alignment (scale_opts)");
  gh_opts_float(po, "acoustic-scale", &o.acoustic_scale, "Acoustic scale of alignment (scale_opts)");
  gh_opts_float(po, "self-loop-scale", &o.self_loop_scale, "Self-loop scale of alignment (scale_opts)");
  gh_opts_int(po, "context-width", &to.context_width, "Context window size (the script's context_opts)");
  gh_opts_int(po, "central-position", &to.central_position, "Central position of the context window (context_opts)");
  gh_opts_string(po, "cmvn-opts", &cmvn_opts, "Options of apply-cmvn (e.g. \"--norm-vars=false\")");
  gh_opts_string(po, "delta-opts", &delta_opts, "Options of add-deltas");
  gh_opts_string(po, "feats", &feats_opt,
                 "Features rspecifier to train on instead of <data-dir>'s feats.scp + cmvn.scp through apply-cmvn "
                 "and add-deltas");
  gh_opts_int(po, "seed", &o.seed, "Seed of the mix-up perturbations (gmm-est --seed)");
  int mono = 0;
  gh_am_train_opts mo;
  gh_am_train_opts_default(&mo);
  const char *mono_realign = "1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29 32 35 38";
  gh_opts_bool(po, "mono", &mono,
               "Train the monophone stage first in this process (gmm-train-mono's schedule), writing <ali-dir>");
  gh_opts_int(po, "mono-num-iters", &mo.num_iters, "--mono: passes of the monophone stage (train_mono.sh's num_iters)");
  gh_opts_int(po, "mono-max-iter-inc", &mo.max_iter_inc, "--mono: last monophone pass that raises the Gaussians");
  gh_opts_int64(po, "mono-totgauss", &mo.totgauss, "--mono: target Gaussians of the monophone stage");
  gh_opts_string(po, "mono-realign-iters", &mono_realign, "--mono: monophone passes that realign");
  gh_opts_int64(po, "block-frames", &o.block_frames,
                "Frames per fixed block of the E-step and the tree statistics (the same for every number of ranks)");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  gh_comm_opts co;
  gh_comm_opts_default(&co);
  gh_comm_opts_register(po, &co);
  if (gh_opts_parse(po, argc, argv) != 6) gh_opts_usage_exit(po);
  const char *leaves_s = gh_opts_arg(po, 0), *gauss_s = gh_opts_arg(po, 1), *data = gh_opts_arg(po, 2);
  const char *lang = gh_opts_arg(po, 3), *alidir = gh_opts_arg(po, 4), *dir = gh_opts_arg(po, 5);
  {
    char *e1, *e2;
    long nl = strtol(leaves_s, &e1, 10);
    long long tg = strtoll(gauss_s, &e2, 10);
    if (*e1 || nl < 1 || nl > INT32_MAX) gh_die("<num-leaves>: '%s' is not a positive integer", leaves_s);
    if (*e2 || tg < nl) gh_die("<tot-gauss>: '%s' is not an integer >= <num-leaves> (%ld)", gauss_s, nl);
    to.num_leaves = (int32_t)nl;
    o.totgauss = tg;
    o.numgauss0 = nl;
  }
  if (o.num_iters < 2) gh_die("--num-iters must be >= 2 (got %d)", o.num_iters);
  if (o.max_iter_inc < 1) gh_die("--max-iter-inc must be >= 1 (got %d)", o.max_iter_inc);
  if (!(o.boost_silence > 0.0f)) gh_die("--boost-silence must be > 0 (got %g)", (double)o.boost_silence);
  if (!(beam > 0) || o.retry_beam < 0)
    gh_die("beams must be positive (--beam %g, --retry-beam %g)", (double)beam, (double)o.retry_beam);
  if (to.context_width < 1 || to.central_position < 0 || to.central_position >= to.context_width)
    gh_die("Invalid options: --central-position=%d, --context-width=%d", to.central_position, to.context_width);
  if (o.block_frames < 1) gh_die("--block-frames must be >= 1 (got %lld)", (long long)o.block_frames);
  o.initial_beam = o.regular_beam = beam;
  uint8_t *realign_flags = parse_iters(realign, &o.num_realign);
  o.realign = realign_flags;
  if (mono && (mo.num_iters < 1 || mo.max_iter_inc < 1))
    gh_die("--mono-num-iters and --mono-max-iter-inc must be >= 1 (got %d, %d)", mo.num_iters, mo.max_iter_inc);
  uint8_t *mono_flags = parse_iters(mono_realign, &mo.num_realign);
  mo.realign = mono_flags;
  mo.boost_silence = o.boost_silence;
  mo.careful = o.careful;
  mo.retry_beam = o.retry_beam;
  mo.transition_scale = o.transition_scale;
  mo.acoustic_scale = o.acoustic_scale;
  mo.self_loop_scale = o.self_loop_scale;
  mo.seed = o.seed;
  mo.block_frames = o.block_frames;

  /* inputs, checked before anything starts */
  char *topo_p = path_of(lang, "topo", 1, "the HMM topology of the lang directory");
  char *sets_p = path_of(lang, "phones/sets.int", 1, "the shared phone sets of the lang directory");
  char *roots_p = path_of(lang, "phones/roots.int", 1, "the tree roots of the lang directory");
  char *extra_p = path_of(lang, "phones/extra_questions.int", 1, "the extra questions of the lang directory");
  char *ci_p = path_of(lang, "phones/context_indep.csl", 1, "the context-independent phones of the lang directory");
  char *lex_p = path_of(lang, "L.fst", 1, "the lexicon FST of the lang directory");
  char *dis_p = path_of(lang, "phones/disambig.int", 1, "the disambiguation symbols of the lang directory");
  char *words_p = path_of(lang, "words.txt", 1, "the word list of the lang directory");
  char *oov_p = path_of(lang, "oov.int", 1, "the OOV word of the lang directory");
  char *sil_p = path_of(lang, "phones/optional_silence.csl", 1, "the optional silence of the lang directory");
  char *phones_p = path_of(lang, "phones.txt", 1, "the phone list of the lang directory");
  char *text_p = path_of(data, "text", 1, "the transcripts of the data directory");
  char *amdl_p = path_of(alidir, "final.mdl", !mono, "the model of the alignment directory");
  char *atree_p = path_of(alidir, "tree", 0, NULL); /* optional, as for the script */
  char *anj_p = path_of(alidir, "num_jobs", !mono, "the number of jobs of the alignment directory");
  char *feats = NULL;
  if (*feats_opt) {
    feats = gh_strdup(feats_opt);
  } else {
    char *fs = path_of(data, "feats.scp", 1, "the features of the data directory");
    char *cs = path_of(data, "cmvn.scp", 1, "the CMVN statistics of the data directory");
    char *us = path_of(data, "utt2spk", 1, "the speakers of the data directory");
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
  int32_t nj = 0;
  if (!mono) {
    int32_t *njv = read_ints(anj_p, &nj, "the number of jobs");
    if (nj != 1) gh_die("%s: expected one number of jobs, found %d numbers", anj_p, nj);
    nj = njv[0];
    free(njv);
  }
  char **ali_rs = gh_malloc(sizeof(char *) * (size_t)nj);
  for (int32_t j = 0; j < nj; ++j) {
    char name[64];
    snprintf(name, sizeof name, "ali.%d.gz", j + 1);
    char *p = path_of(alidir, name, !mono, "an alignment job of the alignment directory");
    size_t n = strlen(p) + 32;
    ali_rs[j] = gh_malloc(n);
    snprintf(ali_rs[j], n, "ark:gunzip -c %s|", p);
    free(p);
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
  mo.silence_phones = sil;
  mo.num_silence_phones = nsil;
  int32_t nci = 0, *ci = read_ints(ci_p, &nci, "context-independent phones");
  qsort(ci, (size_t)nci, sizeof(int32_t), cmp_i32);
  to.ci_phones = ci;
  to.num_ci_phones = nci;
  int32_t ndis = 0, *dis = read_ints(dis_p, &ndis, "disambiguation symbols");
  gh_intlists sets, extra;
  gh_intlists_read(sets_p, &sets);
  gh_intlists_read(extra_p, &extra);
  gh_roots roots;
  gh_roots_read(roots_p, &roots);
  gh_transition_model *topo = gh_topology_read(topo_p);
  gh_gmm_set model = {0};
  gh_ctx_dep *ctx = NULL;
  /* --mono: gmm-init-mono's shared phone sets (sorted) */
  const int32_t nmsets = sets.n; /* gh_intlists_free below resets sets.n */
  int32_t **msets = gh_malloc(sizeof(int32_t *) * (size_t)(sets.n + 1)), *msizes = gh_malloc(sizeof(int32_t) * (size_t)(sets.n + 1));
  for (int32_t i = 0; i < sets.n; ++i) {
    msizes[i] = sets.lists[i].len;
    msets[i] = gh_malloc(sizeof(int32_t) * (size_t)(sets.lists[i].len + 1));
    if (sets.lists[i].len == 0) gh_die("%s: line %d of the shared phones list is empty", sets_p, i + 1);
    memcpy(msets[i], sets.lists[i].v, sizeof(int32_t) * (size_t)sets.lists[i].len);
    qsort(msets[i], (size_t)msizes[i], sizeof(int32_t), cmp_i32);
  }
  if (!mono) {
    gh_gmm_set_read(amdl_p, &model);
    if (!model.trans) gh_die("%s is not a Kaldi acoustic model (.mdl with a transition model)", amdl_p);
    ctx = access(atree_p, R_OK) == 0 ? gh_ctx_dep_read(atree_p) : NULL;
    if (ctx && gh_ctx_dep_num_pdfs(ctx) != model.num_pdfs)
      gh_die("%s has %d pdfs but %s has %d: they do not belong together", atree_p, gh_ctx_dep_num_pdfs(ctx), amdl_p,
             model.num_pdfs);
  }
  for (int32_t i = 0; i < nci; ++i)
    if (ci[i] >= topo->num_phone2idx || topo->phone2idx[ci[i]] < 0)
      gh_die("%s: phone %d is not in the topology %s", ci_p, ci[i], topo_p);
  gh_fst lex;
  gh_fst_init(&lex);
  gh_fst_read_file(lex_p, &lex);
  /* the lang's topology and the alignment directory's model belong to the lang (phone ids of two langs overlap) */
  gh_lang_check_model(topo, topo_p, &lex, lex_p, dis, ndis, dis_p, phones_p);
  if (!mono) {
    gh_lang_check_model(model.trans, amdl_p, &lex, lex_p, dis, ndis, dis_p, phones_p);
    char *aph = path_of(alidir, "phones.txt", 0, NULL);
    if (access(aph, R_OK) == 0) gh_phones_check_compatible(phones_p, aph); /* as the script's check_phones_compatible.sh */
    free(aph);
  }
  char **keys;
  int32_t **words, *nw;
  const int64_t ntext = read_text(text_p, words_p, oov[0], &keys, &words, &nw);

  if (rank == 0) mkdir_p(dir);
  if (rank == 0 && mono) mkdir_p(alidir);
  char *log_dir = path_of(dir, "log", 0, NULL);
  if (rank == 0) mkdir_p(log_dir);
  gh_comm_barrier(comm);
  char *tlog_p = path_of(log_dir, "train.log", 0, NULL);
  FILE *tlog = NULL;
  if (rank == 0 && !(tlog = fopen(tlog_p, "w"))) gh_die("cannot write %s: %s", tlog_p, strerror(errno));

  const double t0 = gh_seconds();
  gh_device_opts_begin(&dev);
  gh_backend *be = NULL;
  gh_am_trainer *tr = gh_am_trainer_new(&dev, &be, comm, &model, &ctx, topo, sets.n, msets, msizes, &lex, lex_p,
                                        dis, ndis, feats, ntext, keys, words, nw, gh_am_aligner_cpu(), mono ? &mo : &o);
  int64_t nu, nf, ru, rf;
  gh_am_trainer_sizes(tr, &nu, &nf, &ru, &rf);
  double t_mono = 0;
  if (mono) { /* gmm-train-mono's passes and outputs, then the triphone schedule on the same trainer */
    const double tm0 = gh_seconds();
    char *p;
    if (rank == 0) {
      p = path_of(alidir, "0.mdl", 0, NULL);
      gh_gmm_set_write(p, 1, &model);
      free(p);
      p = path_of(alidir, "tree", 0, NULL);
      gh_ctx_dep_write(p, 1, ctx);
      free(p);
    }
    double *mocc = gh_malloc(sizeof(double) * (size_t)model.num_pdfs);
    for (int32_t x = 0; x < mo.num_iters; ++x) {
      gh_am_pass_stats st;
      gh_am_trainer_pass(tr, x, &st, mocc);
      uint64_t h = gh_gmm_set_hash(&model);
      gh_comm_check_same(comm, &h, sizeof h, "the model after a pass");
      if (rank == 0)
        gh_log("mono pass %d: Overall avg like per frame (Gaussian only) = %g over %.0f frames; %lld Gaussians; "
               "%.3g s", x, st.frames > 0 ? st.like / st.frames : 0.0, st.frames, (long long)st.num_gauss,
               st.seconds);
    }
    char job[64];
    snprintf(job, sizeof job, "ali.%d.gz", rank + 1);
    p = path_of(alidir, job, 0, NULL);
    size_t n = strlen(p) + 32;
    char *w = gh_malloc(n);
    snprintf(w, n, "ark,t:|gzip -c >%s", p);
    gh_am_trainer_write_ali(tr, w);
    free(w);
    free(p);
    if (rank == 0) {
      p = path_of(alidir, "final.mdl", 0, NULL);
      gh_gmm_set_write(p, 1, &model);
      free(p);
      p = path_of(alidir, "final.occs", 0, NULL);
      write_occs(p, 0, mocc, NULL, model.num_pdfs);
      free(p);
      char buf[64];
      snprintf(buf, sizeof buf, "%d\n", R);
      p = path_of(alidir, "num_jobs", 0, NULL);
      write_text(p, buf);
      free(p);
      p = path_of(alidir, "phones.txt", 0, NULL);
      copy_file(phones_p, p);
      free(p);
      p = path_of(alidir, "cmvn_opts", 0, NULL);
      size_t cl = strlen(cmvn_opts) + 2;
      char *c = gh_malloc(cl);
      snprintf(c, cl, "%s\n", cmvn_opts);
      write_text(p, c);
      free(c);
      free(p);
    }
    free(mocc);
    gh_am_trainer_set_opts(tr, &o);
    t_mono = gh_seconds() - tm0;
    if (rank == 0) gh_log("monophone stage: %d passes in %.3g s; %s written", mo.num_iters, t_mono, alidir);
  } else {
    const int64_t no_ali = gh_am_trainer_read_ali(tr, ali_rs, nj);
    if (no_ali) gh_warn("rank %d: %lld utterances have no alignment in %s/ali.*.gz and are not trained on until the "
                        "first realignment", rank, (long long)no_ali, alidir);
  }
  for (int32_t i = 0; i < nci; ++i)
    if (ci[i] >= model.trans->num_phone2idx || model.trans->phone2idx[ci[i]] < 0)
      gh_die("%s: phone %d is not in the model %s", ci_p, ci[i], amdl_p);
  const double t_load = gh_seconds() - t0 - t_mono;
  /* the tree */
  const double t1 = gh_seconds();
  gh_tree_stats stats;
  gh_am_trainer_tree_stats(tr, &to, dir, &stats);
  const double t_stats = gh_seconds() - t1;
  gh_intlists qs = {0, NULL};
  gh_questions qst;
  gh_ctx_dep *tri_ctx = NULL;
  gh_gmm_set tri = {0};
  float *occs1 = NULL;
  char *treeacc_name = gh_strdup("the tree statistics");
  gh_am_build_tri(&stats, topo, &sets, &extra, &roots, &to, treeacc_name, &qs, &qst, &tri_ctx, &tri, &occs1);
  const double t_tree = gh_seconds() - t1 - t_stats;
  if (rank == 0) {
    char *p = path_of(dir, "questions.int", 0, NULL);
    gh_intlists_write(p, &qs);
    free(p);
    p = path_of(dir, "questions.qst", 0, NULL);
    gh_questions_write(p, 1, &qst);
    free(p);
    p = path_of(dir, "tree", 0, NULL);
    gh_ctx_dep_write(p, 1, tri_ctx);
    free(p);
    p = path_of(dir, "1.mdl", 0, NULL);
    gh_gmm_set_write(p, 1, &tri);
    free(p);
    p = path_of(dir, "1.occs", 0, NULL);
    write_occs(p, 1, NULL, occs1, tri.num_pdfs);
    free(p);
  }
  gh_fst lex2;
  gh_fst_init(&lex2);
  gh_fst_read_file(lex_p, &lex2);
  gh_am_trainer_retree(tr, &tri, tri_ctx, &lex2, lex_p, dis, ndis);
  const double t_retree = gh_seconds() - t1 - t_stats - t_tree;
  if (rank == 0) {
    gh_log("%lld utterances, %lld frames (rank 0: %lld, %lld) on %d rank(s); tree statistics %.3g s, questions + "
           "tree + model %.3g s, convert-ali + graphs %.3g s; %d pdfs, %lld Gaussians, target %lld",
           (long long)nu, (long long)nf, (long long)ru, (long long)rf, R, t_stats, t_tree, t_retree, model.num_pdfs,
           (long long)gh_gmm_set_total_gauss(&model), (long long)o.totgauss);
    fprintf(tlog, "# %s\n# tree: %d pdfs; read %.4f s, tree stats %.4f s, tree + model %.4f s, convert + graphs %.4f s\n"
                  "# pass avg-like-per-frame frames num-gauss realigned ali-like-per-frame ali-failed "
                  "seconds align-s score-s estep-s mstep-s\n",
            feats, model.num_pdfs, t_load, t_stats, t_tree, t_retree);
  }
  double *occs = gh_malloc(sizeof(double) * (size_t)model.num_pdfs);
  double tot_align = 0, tot_estep = 0, tot_mstep = 0;
  for (int32_t x = 1; x < o.num_iters; ++x) {
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
    write_occs(p, 0, occs, NULL, model.num_pdfs);
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
    p = path_of(dir, "phones.txt", 0, NULL);
    copy_file(phones_p, p);
    free(p);
    const double tt = gh_seconds() - t0;
    gh_log("wrote %s/final.mdl: %d pdfs, %lld Gaussians after %d passes; %.3g s in all (read %.3g s, tree %.3g s, "
           "alignment %.3g s, E-step %.3g s, M-step %.3g s)",
           dir, model.num_pdfs, (long long)gh_gmm_set_total_gauss(&model), o.num_iters, tt, t_load,
           t_stats + t_tree + t_retree, tot_align, tot_estep, tot_mstep);
    fprintf(tlog, "# total %.4f s: load %.4f mono %.4f tree %.4f align %.4f estep %.4f mstep %.4f\n", tt, t_load,
            t_mono, t_stats + t_tree + t_retree, tot_align, tot_estep, tot_mstep);
    fclose(tlog);
  }
  gh_am_trainer_free(tr);
  gh_backend_free(be);
  gh_comm_finalize(comm);
  gh_ctx_dep_free(ctx);
  gh_gmm_set_free(&model);
  gh_gmm_set_free(&tri);
  gh_transition_free(topo);
  gh_tree_stats_free(&stats);
  gh_intlists_free(&qs);
  gh_questions_free(&qst);
  gh_intlists_free(&sets);
  gh_intlists_free(&extra);
  gh_roots_free(&roots);
  free(occs1);
  free(treeacc_name);
  for (int32_t j = 0; j < nj; ++j) free(ali_rs[j]);
  free(ali_rs);
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
  free(ci);
  free(dis);
  free(feats);
  free(realign_flags);
  free(mono_flags);
  for (int32_t i = 0; i < nmsets; ++i) free(msets[i]);
  free(msets);
  free(msizes);
  free(topo_p);
  free(sets_p);
  free(roots_p);
  free(extra_p);
  free(ci_p);
  free(lex_p);
  free(dis_p);
  free(words_p);
  free(oov_p);
  free(sil_p);
  free(phones_p);
  free(text_p);
  free(amdl_p);
  free(atree_p);
  free(anj_p);
  free(log_dir);
  free(tlog_p);
  gh_opts_free(po);
  return 0;
}
