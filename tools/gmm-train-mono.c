/* gmm-train-mono -- Kaldi's steps/train_mono.sh as one program (one process or
 * R MPI ranks): flat start by equal alignment, num_iters passes with
 * realignment on realign_iters, Gaussians raised to --totgauss, silence
 * boosted for alignment, beam 6 then 10; the features (CMVN + deltas, as the
 * script's pipeline), graphs and alignments stay in memory
 * (drivers/train/am-train.h).  Writes the script's outputs: dir/0.mdl,
 * dir/tree, dir/final.mdl, dir/final.occs, dir/ali.JOB.gz (one per rank),
 * dir/num_jobs, dir/cmvn_opts, dir/phones.txt and dir/log/train.log. */
#include <stdio.h>
#include <stdlib.h>

#include "base/gh-base.h"
#include "base/opts.h"
#include "decoder/lang-check.h"
#include "gmm/gmm.h"
#include "io/fst.h"
#include "tree/context-dep.h"
#include "train/am-dir.h"
#include "train/am-train.h"
#include "train/comm.h"
#include "train/device-opts.h"

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

/* gmm-train-mono's own options, at their places in the shared list. */
typedef struct {
  gh_am_train_opts *am;
  int exact;
  int32_t batch_size;
} mono_opts;

static void own_opts(gh_opts *po, gh_am_opts_slot at, void *ctx) {
  mono_opts *m = ctx;
  if (at == GH_AM_OPTS_AT_SCHEDULE) {
    gh_opts_int64(po, "totgauss", &m->am->totgauss, "Target number of Gaussians");
  } else if (at == GH_AM_OPTS_AT_BEAMS) {
    gh_opts_float(po, "initial-beam", &m->am->initial_beam, "Beam used in the first realignment");
    gh_opts_float(po, "regular-beam", &m->am->regular_beam, "Beam used after the first realignment");
  } else if (at == GH_AM_OPTS_AT_BLOCK) {
    gh_opts_bool(po, "exact", &m->exact,
                 "Realign by exact Viterbi (no pruning: the beams ignored, never a failure for lack of beam), "
                 "batches of utterances on the --device (gmm-align-compiled --exact)");
    gh_opts_int(po, "batch-size", &m->batch_size,
                "With --exact: utterances aligned together on the device (0: lib/decoder's decoder with an "
                "infinite beam on the CPU)");
  }
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  gh_am_tool_opts to;
  gh_am_tool_opts_default(&to, GH_AM_STAGE_MONO);
  gh_am_train_opts *o = &to.am;
  mono_opts mono = {o, 0, 256};
  gh_am_tool_opts_register(po, &to, own_opts, &mono);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *data = gh_opts_arg(po, 0), *lang = gh_opts_arg(po, 1), *dir = gh_opts_arg(po, 2);
  gh_am_tool_opts_check(&to, 1);
  if (!(o->initial_beam > 0) || !(o->regular_beam > 0) || o->retry_beam < 0)
    gh_die("beams must be positive (--initial-beam %g, --regular-beam %g, --retry-beam %g)", (double)o->initial_beam,
           (double)o->regular_beam, (double)o->retry_beam);
  if (mono.batch_size < 0) gh_die("--batch-size must be >= 0 (got %d)", mono.batch_size);
  if (mono.exact) { /* no pruning on every realignment pass */
    o->initial_beam = o->regular_beam = GH_DEC_EXACT;
    o->retry_beam = 0.0f;
  }

  /* the lang directory and the data directory, checked before anything starts */
  gh_am_lang lg;
  gh_am_lang_open(&lg, lang);
  char *text_p = gh_am_path(data, "text", 1, "the transcripts of the data directory");
  char *feats = gh_am_feats_rspec(data, to.feats, to.cmvn_opts, to.delta_opts);

  gh_comm *comm = gh_comm_start(&argc, &argv, &to.comm);
  const int rank = gh_comm_rank(comm), R = gh_comm_size(comm);
  gh_comm_check_options(comm, po, (const char *const[]){"device", NULL});
  gh_device_opts_bind_rank(&to.dev, comm);

  gh_am_lang_read(&lg);
  o->silence_phones = lg.silence;
  o->num_silence_phones = lg.num_silence;
  gh_fst lex;
  gh_fst_init(&lex);
  gh_fst_read_file(lg.lex_path, &lex);
  gh_lang_check_model(lg.topo, lg.topo_path, &lex, lg.lex_path, lg.disambig, lg.num_disambig, lg.disambig_path,
                      lg.phones_path);
  gh_am_text tx;
  gh_am_text_read(&tx, text_p, lg.words_path, lg.oov);
  FILE *tlog = gh_am_exp_dir_begin(dir, comm);

  const double t0 = gh_seconds();
  gh_device_opts_begin(&to.dev);
  gh_backend *be = NULL;
  gh_gmm_set model = {0};
  gh_ctx_dep *ctx = NULL;
  gh_am_trainer *tr = gh_am_trainer_new(
      &to.dev, &be, comm, &model, &ctx, lg.topo, lg.nsets, lg.sets, lg.set_sizes, &lex, lg.lex_path, lg.disambig,
      lg.num_disambig, feats, tx.n, tx.keys, tx.words, tx.num_words,
      mono.exact && mono.batch_size > 0 ? gh_am_aligner_exact(mono.batch_size) : gh_am_aligner_cpu(), o);
  int64_t nu, nf, ru, rf;
  gh_am_trainer_sizes(tr, &nu, &nf, &ru, &rf);
  const double t_load = gh_seconds() - t0;
  if (rank == 0) {
    gh_am_write_model_tree(dir, "0.mdl", &model, ctx);
    gh_log("%lld utterances, %lld frames (rank 0: %lld, %lld) on %d rank(s); %d pdfs, %lld Gaussians, target %lld; "
           "read, graphs and equal alignment in %.3g s",
           (long long)nu, (long long)nf, (long long)ru, (long long)rf, R, model.num_pdfs,
           (long long)gh_gmm_set_total_gauss(&model), (long long)o->totgauss, t_load);
    fprintf(tlog, "# %s\n# pass avg-like-per-frame frames num-gauss realigned ali-like-per-frame ali-failed "
                  "seconds align-s score-s estep-s mstep-s\n", feats);
  }
  double *occs = gh_malloc(sizeof(double) * (size_t)model.num_pdfs);
  double tot_align = 0, tot_estep = 0, tot_mstep = 0;
  gh_am_run_passes(tr, comm, &model, 0, o->num_iters, occs, tlog, &tot_align, &tot_estep, &tot_mstep);
  gh_am_write_final(tr, comm, dir, &model, occs, to.cmvn_opts, lg.phones_path);
  if (rank == 0) {
    const double tt = gh_seconds() - t0;
    gh_log("wrote %s/final.mdl: %d pdfs, %lld Gaussians after %d passes; %.3g s in all (read + graphs + equal "
           "alignment %.3g s, alignment %.3g s, E-step %.3g s, M-step %.3g s)",
           dir, model.num_pdfs, (long long)gh_gmm_set_total_gauss(&model), o->num_iters, tt, t_load, tot_align,
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
  gh_am_lang_free(&lg);
  gh_am_text_free(&tx);
  free(occs);
  free(feats);
  free(text_p);
  gh_am_tool_opts_free(&to);
  gh_opts_free(po);
  return 0;
}
