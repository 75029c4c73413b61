/* gmm-train-tri -- Kaldi's steps/train_deltas.sh as one program (one process or
 * R MPI ranks): tree statistics from the monophone alignments on the resident
 * features, questions, the tree, the model from the tree, the alignments
 * converted to it, the triphone training graphs, then num_iters - 1 passes
 * with realignment on realign_iters and the Gaussians raised to <tot-gauss>
 * (drivers/train/am-train.h, the triphone stage).  Writes the script's
 * outputs: dir/tree, dir/questions.int, dir/questions.qst, dir/1.mdl,
 * dir/1.occs, dir/final.mdl, dir/final.occs, dir/ali.JOB.gz (one per rank),
 * dir/num_jobs, dir/cmvn_opts, dir/phones.txt and dir/log/train.log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "decoder/lang-check.h"
#include "decoder/training-graph.h"
#include "gmm/gmm.h"
#include "io/fst.h"
#include "tree/context-dep.h"
#include "tree/questions.h"
#include "tree/tree-stats.h"
#include "train/am-dir.h"
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

/* gmm-train-tri's own options, at their places in the shared list. */
typedef struct {
  gh_am_tri_opts *tri;
  float beam;
  int mono;
  gh_am_tool_opts mo; /* --mono's stage: gmm-train-mono's defaults */
} tri_cli;

static void own_opts(gh_opts *po, gh_am_opts_slot at, void *ctx) {
  tri_cli *c = ctx;
  if (at == GH_AM_OPTS_AT_POWER) {
    gh_opts_float(po, "cluster-thresh", &c->tri->cluster_thresh,
                  "build-tree --cluster-thresh: threshold of the final bottom-up clustering of leaves (-1: the last "
                  "split's gain)");
  } else if (at == GH_AM_OPTS_AT_BEAMS) {
    gh_opts_float(po, "beam", &c->beam, "Beam of the realignments");
  } else if (at == GH_AM_OPTS_AT_SCALES) {
    gh_opts_int(po, "context-width", &c->tri->context_width, "Context window size (the script's context_opts)");
    gh_opts_int(po, "central-position", &c->tri->central_position,
                "Central position of the context window (context_opts)");
  } else if (at == GH_AM_OPTS_AT_SEED) {
    gh_am_train_opts *mo = &c->mo.am;
    gh_opts_bool(po, "mono", &c->mono,
                 "Train the monophone stage first in this process (gmm-train-mono's schedule), writing <ali-dir>");
    gh_opts_int(po, "mono-num-iters", &mo->num_iters,
                "--mono: passes of the monophone stage (train_mono.sh's num_iters)");
    gh_opts_int(po, "mono-max-iter-inc", &mo->max_iter_inc, "--mono: last monophone pass that raises the Gaussians");
    gh_opts_int64(po, "mono-totgauss", &mo->totgauss, "--mono: target Gaussians of the monophone stage");
    gh_opts_string(po, "mono-realign-iters", &c->mo.realign_iters, "--mono: monophone passes that realign");
  }
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  gh_am_tool_opts topt;
  gh_am_tool_opts_default(&topt, GH_AM_STAGE_TRI);
  gh_am_train_opts *o = &topt.am;
  gh_am_tri_opts to;
  gh_am_tri_opts_default(&to);
  tri_cli cli = {.tri = &to, .beam = 10.0f, .mono = 0};
  gh_am_tool_opts_default(&cli.mo, GH_AM_STAGE_MONO);
  gh_am_train_opts *mo = &cli.mo.am;
  gh_am_tool_opts_register(po, &topt, own_opts, &cli);
  if (gh_opts_parse(po, argc, argv) != 6) gh_opts_usage_exit(po);
  const char *leaves_s = gh_opts_arg(po, 0), *gauss_s = gh_opts_arg(po, 1), *data = gh_opts_arg(po, 2);
  const char *lang = gh_opts_arg(po, 3), *alidir = gh_opts_arg(po, 4), *dir = gh_opts_arg(po, 5);
  const int mono = cli.mono;
  {
    char *e1, *e2;
    long nl = strtol(leaves_s, &e1, 10);
    long long tg = strtoll(gauss_s, &e2, 10);
    if (*e1 || nl < 1 || nl > INT32_MAX) gh_die("<num-leaves>: '%s' is not a positive integer", leaves_s);
    if (*e2 || tg < nl) gh_die("<tot-gauss>: '%s' is not an integer >= <num-leaves> (%ld)", gauss_s, nl);
    to.num_leaves = (int32_t)nl;
    o->totgauss = tg;
    o->numgauss0 = nl;
  }
  gh_am_tool_opts_check(&topt, 2);
  if (!(cli.beam > 0) || o->retry_beam < 0)
    gh_die("beams must be positive (--beam %g, --retry-beam %g)", (double)cli.beam, (double)o->retry_beam);
  if (to.context_width < 1 || to.central_position < 0 || to.central_position >= to.context_width)
    gh_die("Invalid options: --central-position=%d, --context-width=%d", to.central_position, to.context_width);
  if (!gh_tgc_supports_context(to.context_width, to.central_position))
    gh_die("--context-width=%d --central-position=%d: gmm-train-tri's training graphs support context width at most 3 "
           "with at most one phone on each side (monophone, biphone and triphone trees)",
           to.context_width, to.central_position);
  o->initial_beam = o->regular_beam = cli.beam;
  if (mono && (mo->num_iters < 1 || mo->max_iter_inc < 1))
    gh_die("--mono-num-iters and --mono-max-iter-inc must be >= 1 (got %d, %d)", mo->num_iters, mo->max_iter_inc);
  cli.mo.realign_flags = gh_am_parse_iters(cli.mo.realign_iters, "--mono-realign-iters", &mo->num_realign);
  mo->realign = cli.mo.realign_flags;
  mo->boost_silence = o->boost_silence;
  mo->careful = o->careful;
  mo->retry_beam = o->retry_beam;
  mo->transition_scale = o->transition_scale;
  mo->acoustic_scale = o->acoustic_scale;
  mo->self_loop_scale = o->self_loop_scale;
  mo->seed = o->seed;
  mo->block_frames = o->block_frames;

  /* inputs, checked before anything starts */
  gh_am_lang lg;
  gh_am_lang_open(&lg, lang);
  char *roots_p = gh_am_path(lang, "phones/roots.int", 1, "the tree roots of the lang directory");
  char *extra_p = gh_am_path(lang, "phones/extra_questions.int", 1, "the extra questions of the lang directory");
  char *ci_p = gh_am_path(lang, "phones/context_indep.csl", 1, "the context-independent phones of the lang directory");
  char *text_p = gh_am_path(data, "text", 1, "the transcripts of the data directory");
  char *amdl_p = gh_am_path(alidir, "final.mdl", !mono, "the model of the alignment directory");
  char *atree_p = gh_am_path(alidir, "tree", 0, NULL); /* optional, as for the script */
  char *anj_p = gh_am_path(alidir, "num_jobs", !mono, "the number of jobs of the alignment directory");
  char *feats = gh_am_feats_rspec(data, topt.feats, topt.cmvn_opts, topt.delta_opts);
  int32_t nj = 0;
  if (!mono) {
    int32_t *njv = gh_am_read_ints(anj_p, &nj, "the number of jobs", 0);
    if (nj != 1) gh_die("%s: expected one number of jobs, found %d numbers", anj_p, nj);
    nj = njv[0];
    free(njv);
  }
  char **ali_rs = gh_malloc(sizeof(char *) * (size_t)nj);
  for (int32_t j = 0; j < nj; ++j) {
    char name[64];
    snprintf(name, sizeof name, "ali.%d.gz", j + 1);
    char *p = gh_am_path(alidir, name, !mono, "an alignment job of the alignment directory");
    size_t n = strlen(p) + 32;
    ali_rs[j] = gh_malloc(n);
    snprintf(ali_rs[j], n, "ark:gunzip -c %s|", p);
    free(p);
  }

  gh_comm *comm = gh_comm_start(&argc, &argv, &topt.comm);
  const int rank = gh_comm_rank(comm), R = gh_comm_size(comm);
  gh_comm_check_options(comm, po, (const char *const[]){"device", NULL});
  gh_device_opts_bind_rank(&topt.dev, comm);

  gh_am_lang_read(&lg);
  const gh_transition_model *topo = lg.topo;
  o->silence_phones = mo->silence_phones = lg.silence;
  o->num_silence_phones = mo->num_silence_phones = lg.num_silence;
  int32_t nci = 0, *ci = gh_am_read_ints(ci_p, &nci, "context-independent phones", 1);
  to.ci_phones = ci;
  to.num_ci_phones = nci;
  gh_intlists sets, extra; /* build-tree's: sets.int as the file has it */
  gh_intlists_read(lg.sets_path, &sets);
  gh_intlists_read(extra_p, &extra);
  gh_roots roots;
  gh_roots_read(roots_p, &roots);
  gh_gmm_set model = {0};
  gh_ctx_dep *ctx = NULL;
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
      gh_die("%s: phone %d is not in the topology %s", ci_p, ci[i], lg.topo_path);
  gh_fst lex;
  gh_fst_init(&lex);
  gh_fst_read_file(lg.lex_path, &lex);
  /* the lang's topology and the alignment directory's model belong to the lang (phone ids of two langs overlap) */
  gh_lang_check_model(lg.topo, lg.topo_path, &lex, lg.lex_path, lg.disambig, lg.num_disambig, lg.disambig_path,
                      lg.phones_path);
  if (!mono) {
    gh_lang_check_model(model.trans, amdl_p, &lex, lg.lex_path, lg.disambig, lg.num_disambig, lg.disambig_path,
                        lg.phones_path);
    char *aph = gh_am_path(alidir, "phones.txt", 0, NULL);
    if (access(aph, R_OK) == 0) gh_phones_check_compatible(lg.phones_path, aph); /* as check_phones_compatible.sh */
    free(aph);
  }
  gh_am_text tx;
  gh_am_text_read(&tx, text_p, lg.words_path, lg.oov);

  if (rank == 0 && mono) gh_am_mkdir_p(alidir);
  FILE *tlog = gh_am_exp_dir_begin(dir, comm);

  const double t0 = gh_seconds();
  gh_device_opts_begin(&topt.dev);
  gh_backend *be = NULL;
  gh_am_trainer *tr = gh_am_trainer_new(&topt.dev, &be, comm, &model, &ctx, topo, lg.nsets, lg.sets, lg.set_sizes,
                                        &lex, lg.lex_path, lg.disambig, lg.num_disambig, feats, tx.n, tx.keys,
                                        tx.words, tx.num_words, gh_am_aligner_cpu(), mono ? mo : o);
  int64_t nu, nf, ru, rf;
  gh_am_trainer_sizes(tr, &nu, &nf, &ru, &rf);
  double t_mono = 0;
  if (mono) { /* gmm-train-mono's passes and outputs, then the triphone schedule on the same trainer */
    const double tm0 = gh_seconds();
    if (rank == 0) gh_am_write_model_tree(alidir, "0.mdl", &model, ctx);
    double *mocc = gh_malloc(sizeof(double) * (size_t)model.num_pdfs);
    for (int32_t x = 0; x < mo->num_iters; ++x) {
      gh_am_pass_stats st;
      gh_am_trainer_pass(tr, x, &st, mocc);
      uint64_t h = gh_gmm_set_hash(&model);
      gh_comm_check_same(comm, &h, sizeof h, "the model after a pass");
      if (rank == 0)
        gh_log("mono pass %d: Overall avg like per frame (Gaussian only) = %g over %.0f frames; %lld Gaussians; "
               "%.3g s", x, st.frames > 0 ? st.like / st.frames : 0.0, st.frames, (long long)st.num_gauss,
               st.seconds);
    }
    gh_am_write_final(tr, comm, alidir, &model, mocc, topt.cmvn_opts, lg.phones_path);
    free(mocc);
    gh_am_trainer_set_opts(tr, o);
    t_mono = gh_seconds() - tm0;
    if (rank == 0) gh_log("monophone stage: %d passes in %.3g s; %s written", mo->num_iters, t_mono, alidir);
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
  gh_am_build_tri(&stats, topo, &sets, &extra, &roots, &to, "the tree statistics", &qs, &qst, &tri_ctx, &tri, &occs1);
  const double t_tree = gh_seconds() - t1 - t_stats;
  if (rank == 0) {
    char *p = gh_am_path(dir, "questions.int", 0, NULL);
    gh_intlists_write(p, &qs);
    free(p);
    p = gh_am_path(dir, "questions.qst", 0, NULL);
    gh_questions_write(p, 1, &qst);
    free(p);
    gh_am_write_model_tree(dir, "1.mdl", &tri, tri_ctx);
    p = gh_am_path(dir, "1.occs", 0, NULL);
    gh_am_write_occs(p, 1, NULL, occs1, tri.num_pdfs);
    free(p);
  }
  gh_fst lex2;
  gh_fst_init(&lex2);
  gh_fst_read_file(lg.lex_path, &lex2);
  gh_am_trainer_retree(tr, &tri, tri_ctx, &lex2, lg.lex_path, lg.disambig, lg.num_disambig);
  const double t_retree = gh_seconds() - t1 - t_stats - t_tree;
  if (rank == 0) {
    gh_log("%lld utterances, %lld frames (rank 0: %lld, %lld) on %d rank(s); tree statistics %.3g s, questions + "
           "tree + model %.3g s, convert-ali + graphs %.3g s; %d pdfs, %lld Gaussians, target %lld",
           (long long)nu, (long long)nf, (long long)ru, (long long)rf, R, t_stats, t_tree, t_retree, model.num_pdfs,
           (long long)gh_gmm_set_total_gauss(&model), (long long)o->totgauss);
    fprintf(tlog, "# %s\n# tree: %d pdfs; read %.4f s, tree stats %.4f s, tree + model %.4f s, convert + graphs %.4f s\n"
                  "# pass avg-like-per-frame frames num-gauss realigned ali-like-per-frame ali-failed "
                  "seconds align-s score-s estep-s mstep-s\n",
            feats, model.num_pdfs, t_load, t_stats, t_tree, t_retree);
  }
  double *occs = gh_malloc(sizeof(double) * (size_t)model.num_pdfs);
  double tot_align = 0, tot_estep = 0, tot_mstep = 0;
  gh_am_run_passes(tr, comm, &model, 1, o->num_iters, occs, tlog, &tot_align, &tot_estep, &tot_mstep);
  gh_am_write_final(tr, comm, dir, &model, occs, topt.cmvn_opts, lg.phones_path);
  if (rank == 0) {
    const double tt = gh_seconds() - t0;
    gh_log("wrote %s/final.mdl: %d pdfs, %lld Gaussians after %d passes; %.3g s in all (read %.3g s, tree %.3g s, "
           "alignment %.3g s, E-step %.3g s, M-step %.3g s)",
           dir, model.num_pdfs, (long long)gh_gmm_set_total_gauss(&model), o->num_iters, tt, t_load,
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
  gh_tree_stats_free(&stats);
  gh_intlists_free(&qs);
  gh_questions_free(&qst);
  gh_intlists_free(&sets);
  gh_intlists_free(&extra);
  gh_roots_free(&roots);
  free(occs1);
  for (int32_t j = 0; j < nj; ++j) free(ali_rs[j]);
  free(ali_rs);
  gh_am_lang_free(&lg);
  gh_am_text_free(&tx);
  free(occs);
  free(ci);
  free(feats);
  free(roots_p);
  free(extra_p);
  free(ci_p);
  free(text_p);
  free(amdl_p);
  free(atree_p);
  free(anj_p);
  gh_am_tool_opts_free(&cli.mo);
  gh_am_tool_opts_free(&topt);
  gh_opts_free(po);
  return 0;
}
