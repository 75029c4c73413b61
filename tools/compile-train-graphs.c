/* compile-train-graphs -- per-utterance training graphs (Kaldi's
 * bin/compile-train-graphs.cc): transition-ids in, words out, from the tree,
 * the model's topology and transition probabilities and the lexicon FST
 * (lib/decoder/training-graph.h says how they are built and what the weights
 * are).  Kaldi's defaults: no transition probabilities in the graphs
 * (--transition-scale=0 --self-loop-scale=0), gmm-align-compiled adds them. */
#include <stdlib.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "decoder/lang-check.h"
#include "decoder/training-graph.h"
#include "io/fst.h"
#include "hmm/transition.h"
#include "io/kaldi-io.h"
#include "io/table.h"
#include "tree/context-dep.h"

static const char *usage =
    "Creates training graphs (without transition-probabilities, by default)\n"
    "\n"
    "Usage:   compile-train-graphs [options] <tree-in> <model-in> <lexicon-fst-in> "
    "<transcriptions-rspecifier> <graphs-wspecifier>\n"
    "e.g.: \n"
    " compile-train-graphs tree 1.mdl lex.fst 'ark:sym2int.pl -f 2- words.txt text|' ark:graphs.fsts\n";

/* lang/phones/disambig.int: one integer a line (Kaldi ReadIntegerVectorSimple). */
static int32_t *read_int_list(const char *rx, int32_t *n) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("fstcomposecontext: Could not read disambiguation symbols from %s", rx);
  int32_t *v = NULL, cap = 0;
  *n = 0;
  char *line;
  long lineno = 0;
  while (gh_istream_peek(in) != EOF) {
    line = gh_read_line(in);
    lineno++;
    char *p = line, *end;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p || *p == '\n') {
      continue;
    }
    long x = strtol(p, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
    if (end == p || *end || x <= 0 || x > INT32_MAX)
      gh_die("%s line %ld: expected one positive integer (a disambiguation symbol)", rx, lineno);
    if (*n == cap) v = gh_realloc(v, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *v);
    v[(*n)++] = (int32_t)x;
  }
  gh_istream_close(in);
  return v;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int32_t batch_size = 250;
  float transition_scale = 0.0f, self_loop_scale = 0.0f;
  int reorder = 1, rm_eps = 0;
  const char *disambig_rx = "";
  gh_opts *po = gh_opts_new(usage);
  gh_opts_float(po, "transition-scale", &transition_scale, "Scale of transition probabilities (excluding self-loops)");
  gh_opts_float(po, "self-loop-scale", &self_loop_scale, "Scale of self-loop vs. non-self-loop probability mass ");
  gh_opts_bool(po, "reorder", &reorder,
               "Reorder transition ids for greater decoding efficiency (only true is supported).");
  gh_opts_bool(po, "rm-eps", &rm_eps,
               "Remove [most] epsilons before minimization (only applicable if disambig symbols present); "
               "no effect here: the graphs have no epsilons");
  gh_opts_int(po, "batch-size", &batch_size,
              "Number of FSTs to compile at a time (more -> faster but uses more memory.  E.g. 500); no effect "
              "here: each graph is compiled and written in turn");
  gh_opts_string(po, "read-disambig-syms", &disambig_rx,
                 "File containing list of disambiguation symbols in phone symbol table");
  if (gh_opts_parse(po, argc, argv) != 5) gh_opts_usage_exit(po);
  if (!reorder) gh_die("--reorder=false is not supported");
  if (batch_size < 1) gh_die("--batch-size must be >= 1 (got %d)", batch_size);
  if (!(transition_scale >= 0) || !(self_loop_scale >= 0))
    gh_die("--transition-scale and --self-loop-scale must be >= 0 (got %g, %g)", transition_scale, self_loop_scale);
  const char *tree_rx = gh_opts_arg(po, 0), *mdl_rx = gh_opts_arg(po, 1), *lex_rx = gh_opts_arg(po, 2);
  const char *rspec = gh_opts_arg(po, 3), *wspec = gh_opts_arg(po, 4);
  if (!gh_is_rspecifier(rspec)) gh_die("'%s' is not an rspecifier (expected ark:... or scp:...)", rspec);
  if (!gh_is_wspecifier(wspec)) gh_die("'%s' is not a wspecifier (expected ark:...)", wspec);
  gh_ctx_dep *ctx = gh_ctx_dep_read(tree_rx);
  if (!gh_tgc_supports_context(ctx->N, ctx->P))
    gh_die("the tree %s has context width %d (central position %d): compile-train-graphs supports context width "
           "at most 3 with at most one phone on each side (monophone, biphone and triphone trees)",
           tree_rx, ctx->N, ctx->P);
  gh_transition_model *tm = gh_transition_read_file(mdl_rx);
  if (gh_ctx_dep_num_pdfs(ctx) != tm->num_pdfs)
    gh_die("the tree %s has %d pdfs but the model %s uses %d: the tree does not belong to the model", tree_rx,
           gh_ctx_dep_num_pdfs(ctx), mdl_rx, tm->num_pdfs);
  gh_fst lex;
  gh_fst_init(&lex);
  gh_fst_read_file(lex_rx, &lex);
  int32_t ndis = 0, *dis = *disambig_rx ? read_int_list(disambig_rx, &ndis) : NULL;
  /* a model of another lang: phone ids overlap, the disambiguation symbols tell */
  gh_lang_check_model(tm, mdl_rx, &lex, lex_rx, dis, ndis, disambig_rx, NULL);
  gh_tgc *gc = gh_tgc_new(tm, ctx, &lex, dis, ndis, transition_scale, self_loop_scale, lex_rx);
  gh_seq_reader *r = gh_seq_reader_open(rspec, GH_OBJ_INT32_VECTOR);
  gh_writer *w = gh_writer_open(wspec);
  gh_fst g;
  gh_fst_init(&g);
  long num_ok = 0, num_fail = 0;
  char err[512];
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
    const char *key = gh_seq_reader_key(r);
    const gh_ivector *words = gh_seq_reader_value(r);
    if (!gh_tgc_compile(gc, words->data, words->dim, &g, err, sizeof err)) {
      gh_warn("Empty decoding graph for utterance %s (%s: %s); skipped", key, rspec, err);
      num_fail++;
      continue;
    }
    gh_writer_write(w, key, GH_OBJ_FST, &g);
    num_ok++;
  }
  gh_seq_reader_close(r);
  gh_writer_close(w);
  gh_log("compile-train-graphs: succeeded for %ld graphs, failed for %ld", num_ok, num_fail);
  gh_fst_free(&g);
  gh_tgc_free(gc);
  free(dis);
  gh_transition_free(tm);
  gh_ctx_dep_free(ctx);
  gh_opts_free(po);
  return num_ok != 0 ? 0 : 1;
}
