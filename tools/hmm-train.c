/* hmm-train -- resident multi-iteration HMM-GMM training (Baum-Welch or
 * Viterbi) as one process or R MPI ranks: the loop of
 * egs/steps/train_word_hmm.sh / train_word_hmm_viterbi.sh in one program
 * that reads the features once (drivers/train/hmm-train.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "hmm/hmm.h"
#include "train/comm.h"
#include "train/device-opts.h"
#include "train/dist-em.h"
#include "train/hmm-train.h"

/* 64-bit hash of a GMM set's and an HMM set's parameters (every rank must
 * hold the same bytes: gh_comm_check_same). */
static uint64_t models_hash(const gh_gmm_set *m, const gh_hmm_set *s) {
  uint64_t h = GH_HASH64_INIT;
  for (int32_t p = 0; p < m->num_pdfs; ++p) {
    const gh_gmm *g = &m->pdfs[p];
    int64_t G = g->num_gauss, D = g->dim, V = g->type == GH_COV_FULL ? D * (D + 1) / 2 : D;
    h = gh_hash64(&g->num_gauss, sizeof g->num_gauss, h);
    h = gh_hash64(g->gconsts, G * sizeof(float), h);
    h = gh_hash64(g->weights, G * sizeof(float), h);
    h = gh_hash64(g->means_invvars, G * D * sizeof(float), h);
    h = gh_hash64(g->inv_vars, G * V * sizeof(float), h);
  }
  for (int32_t k = 0; k < s->num_hmms; ++k) {
    const gh_hmm *x = &s->hmms[k];
    h = gh_hash64(x->init, x->num_states * sizeof(float), h);
    h = gh_hash64(x->final, x->num_states * sizeof(float), h);
    h = gh_hash64(x->arcs, x->num_arcs * sizeof(gh_hmm_arc), h);
  }
  return h;
}

/* "1 2 3 10" -> flags[it] (it < 4096) */
static uint8_t *parse_iters(const char *s, int32_t *n) {
  uint8_t *f = gh_calloc(4096, 1);
  *n = 4096;
  const char *p = s;
  while (*p) {
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

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Train an HMM set and its GMM set (one GMM per pdf) on features and transcripts, all\n"
      "iterations in one process (or one job of R MPI ranks: mpirun -np R hmm-train ...), the\n"
      "features read once: per iteration the loglikes of each utterance's pdfs, forward-backward\n"
      "(--mode=bw: Baum-Welch, transitions re-estimated) or Viterbi alignment (--mode=viterbi, on\n"
      "--realign-iters), the GMM E-step on the posteriors or the alignment, the reduction over the\n"
      "ranks, the M-step and the mix-up schedule of steps/train_word_hmm.sh.  The outputs are\n"
      "written once, after the last iteration (atomically: a failed run leaves none); --iter-models\n"
      "also writes every iteration's models, as checkpoints to resume from with --first-iter.\n"
      "Transcripts: utterance -> HMM name or word sequence (words joined, with --optional-silence),\n"
      "as hmm-bw --transcripts; without that argument the HMM set must hold one HMM, which every\n"
      "utterance uses (hmmlearn's fit(X, lengths): e.g. one ergodic HMM from hmm-init-topo).\n"
      "--tol stops once the HMM log-likelihood per frame (Baum-Welch: log P(O) of the model before\n"
      "the update, summed over the utterances, over their frames) improves by less than tol.\n"
      "Under mpirun / srun, local rank k of a host takes its GPU k mod GPUs (--device=auto or cuda) and cores / ranks threads.\n"
      "Usage:  hmm-train [options] <hmm-in> <model-in> <feats-rspecifier> [<transcripts-rspecifier>] "
      "<hmm-out> <model-out>\n"
      "e.g.:   hmm-train --mode=bw --num-iters=12 --gauss=8 0.hmm 0.mdl scp:data/feats.scp \\\n"
      "          ark,t:data/text final.hmm final.mdl\n"
      "        hmm-train --num-iters=100 --tol=1e-5 ergodic.hmm 0.mdl scp:feats.scp final.hmm final.mdl\n"
      "        mpirun -np 2 hmm-train --mode=viterbi --num-iters=16 0.hmm 0.mdl scp:feats.scp ark,t:text a.hmm a.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  gh_hmm_train_opts o;
  gh_hmm_train_opts_default(&o);
  const char *mode = "bw", *sil = "", *realign = "1 2 3 4 5 6 7 8 9 10 12 14 16 18 20 23 26 29 32 35 38";
  int32_t num_iters = 12, first_iter = 1, mixup_end = -1;
  int binary = 1;
  gh_opts_string(po, "mode", &mode, "Training: bw (Baum-Welch) or viterbi (realign on --realign-iters, GMMs on the alignment)");
  gh_opts_int(po, "num-iters", &num_iters, "Number of the last iteration (the last one at most, with --tol)");
  double tol = 0;
  gh_opts_double(po, "tol", &tol,
                 "Stop after the iteration whose HMM log-likelihood per frame (of the models before its update) "
                 "improved on the previous one's by less than this (0 = run to --num-iters); hmmlearn's tol "
                 "(monitor_: change of the total log-likelihood < tol) is this tol times the frames");
  gh_opts_int(po, "first-iter", &first_iter, "Number of the first iteration (resume from the models of iteration N-1)");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  gh_opts_string(po, "optional-silence", &sil, "Optional silence HMM between words and at the ends of the transcripts");
  gh_opts_double(po, "silence-prob", &o.silence_prob, "Probability of taking each optional silence");
  gh_opts_double(po, "edge-silence-prob", &o.edge_silence_prob,
                 "Probability of the silence at the start and at the end (1: obligatory; 0: --silence-prob)");
  gh_opts_double(po, "min-post", &o.min_post, "Baum-Welch: drop pdf posteriors below this (hmm-bw --min-post)");
  gh_opts_bool(po, "update-transitions", &o.update_transitions, "Baum-Welch: re-estimate the transitions every iteration");
  gh_opts_double(po, "transition-min-count", &o.uo.min_count, "Keep a state's transitions if its count is below this");
  gh_opts_double(po, "transition-floor", &o.uo.floor, "Floor of re-estimated transition probabilities");
  gh_opts_bool(po, "update-init", &o.uo.update_init, "Also re-estimate initial-state probabilities");
  gh_opts_string(po, "realign-iters", &realign, "Viterbi: iterations that realign (the first iteration always does)");
  gh_opts_int(po, "gauss", &o.gauss, "Mix up to this many Gaussians per pdf (1: no mix-up)");
  gh_opts_int(po, "mixup-start", &o.mixup_start, "First iteration that mixes up");
  gh_opts_int(po, "mixup-end", &mixup_end, "Iteration that reaches --gauss (-1: num-iters / 2)");
  gh_opts_double(po, "power", &o.power, "Mix-up: Gaussians per pdf proportional to occupancy^power");
  gh_opts_double(po, "min-count", &o.min_count, "Mix-up: minimum occupancy per Gaussian");
  gh_opts_double(po, "perturb-factor", &o.perturb, "Mix-up: mean perturbation in standard deviations");
  gh_opts_int(po, "seed", &o.seed, "Random seed of the mix-up perturbations (reseeded every iteration, as gmm-est)");
  gh_est_opts_register(po, &o.eo);
  gh_opts_int64(po, "block-frames", &o.block_frames,
                "Frames per fixed block (the unit of the fp32 work; the same on every rank and for every R)");
  gh_opts_int(po, "max-score-groups", &o.max_score_groups,
              "Score each utterance against its graph's pdfs only while there are at most this many distinct "
              "pdf sets (0: all pdfs)");
  const char *max_mem = "";
  gh_opts_string(po, "max-device-memory", &max_mem,
                 "Device memory for this rank's blocks of the GMM E-step, e.g. 20G or 512M (\"\" = no limit): blocks "
                 "beyond it are uploaded again every iteration from page-locked host memory while they are scored, "
                 "same result (CUDA, OpenCL)");
  gh_opts_bool(po, "binary", &binary, "Write the outputs in binary mode");
  const char *iter_models = "";
  gh_opts_string(po, "iter-models", &iter_models,
                 "Also write every iteration's models as DIR/N.hmm and DIR/N.mdl (rank 0), for resuming with --first-iter");
  gh_comm_opts co;
  gh_comm_opts_default(&co);
  gh_comm_opts_register(po, &co);
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 5 && nargs != 6) gh_opts_usage_exit(po);
  if (*max_mem && gh_parse_size(max_mem, &o.max_device_bytes) != 0)
    gh_die("--max-device-memory must be a positive size such as 20G, 512M or 1000000 (got '%s')", max_mem);
  const int k = nargs == 6; /* a transcripts argument */
  const char *hmm_rx = gh_opts_arg(po, 0), *mdl_rx = gh_opts_arg(po, 1), *feats = gh_opts_arg(po, 2),
             *trans = k ? gh_opts_arg(po, 3) : NULL, *hmm_wx = gh_opts_arg(po, 3 + k), *mdl_wx = gh_opts_arg(po, 4 + k);
  if (gh_hmm_train_mode_parse(mode, &o.mode) != 0) gh_die("--mode must be bw or viterbi (got '%s')", mode);
  if (num_iters < first_iter) gh_die("--num-iters (%d) must be >= --first-iter (%d)", num_iters, first_iter);
  if (first_iter < 1) gh_die("--first-iter must be >= 1 (got %d)", first_iter);
  if (o.gauss < 1) gh_die("--gauss must be >= 1 (got %d)", o.gauss);
  o.mixup_end = mixup_end >= 0 ? mixup_end : num_iters / 2;
  if (o.mixup_end < o.mixup_start) o.mixup_end = o.mixup_start;
  o.silence = sil;
  o.realign = parse_iters(realign, &o.num_realign);

  gh_comm *comm = gh_comm_start(&argc, &argv, &co);
  const int rank = gh_comm_rank(comm), size = gh_comm_size(comm);
  /* every option that changes the arithmetic (--block-frames, floors,
   * --precision, --min-post ...) or the schedule (--num-iters, --first-iter,
   * --realign-iters, mix-up, --seed ...) is the same on every rank, or the
   * job stops here */
  gh_comm_check_options(comm, po, (const char *const[]){"device", "max-device-memory", "iter-models", "binary", NULL});
  gh_device_opts_bind_rank(&dev, comm); /* rank k of a host: GPU k mod its GPUs */
  gh_hmm_set set;
  gh_hmm_set_read(hmm_rx, &set);
  gh_gmm_set model;
  gh_gmm_set_read(mdl_rx, &model);
  uint64_t h = models_hash(&model, &set);
  gh_comm_check_same(comm, &h, sizeof h, "the input models");
  double t0 = gh_seconds();
  gh_device_opts_begin(&dev); /* the device starts while the features are read */
  gh_backend *be = NULL;
  gh_hmm_trainer *tr = gh_hmm_trainer_new(&dev, &be, comm, &set, &model, feats, trans, &o);
  gh_host_blas_serial();
  int64_t nu, nf, ru, rf, nb, rb0, rnb;
  gh_hmm_trainer_sizes(tr, &nu, &nf, &ru, &rf, &nb, &rb0, &rnb);
  if (size > 1 || gh_verbose >= 1) /* the rank -> host -> shard table, known to every rank, logged by rank 0 */
    for (int r = 0; r < size && rank == 0; ++r) {
      char d[512];
      gh_hmm_trainer_describe_shard(tr, r, d, sizeof d);
      gh_log("rank %d on host %s: %s", r, gh_comm_host(comm, r), d);
    }
  gh_log("rank %d of %d: %lld utterances, %lld frames (%lld of the %lld blocks); all ranks: %lld utterances, "
         "%lld frames; loaded in %.3g s",
         rank, size, (long long)ru, (long long)rf, (long long)rnb, (long long)nb, (long long)nu, (long long)nf,
         gh_seconds() - t0);
  gh_hmm_train_iter_stats st;
  gh_em_monitor mon;
  gh_em_monitor_init(&mon, tol);
  for (int32_t it = first_iter; it <= num_iters; ++it) {
    gh_hmm_trainer_iter(tr, it, &st);
    h = models_hash(&model, &set);
    gh_comm_check_same(comm, &h, sizeof h, "the models after an iteration");
    if (rank == 0 && *iter_models) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%d.hmm", iter_models, it);
      gh_hmm_set_write(path, binary, &set);
      snprintf(path, sizeof path, "%s/%d.mdl", iter_models, it);
      gh_gmm_set_write(path, binary, &model);
      gh_commit_outputs(); /* a checkpoint: on disk now (a resumed run starts from it), not at exit */
    }
    if (rank == 0)
      gh_log("iteration %d: avg loglike per frame %.6f over %.0f frames; HMM %s log-likelihood per frame %.10g "
           "over %.0f utterances (%.0f failed)%s; %lld Gaussians; %.3g s (E-step %.3g s, reduction %.3g s, "
           "GMM M-step %.3g s on the %s)",
           it, st.gmm_frames > 0 ? st.gmm_loglike / st.gmm_frames : 0.0, st.gmm_frames,
           o.mode == GH_HMM_TRAIN_BW ? "total" : "best-path", st.hmm_frames > 0 ? st.hmm_loglike / st.hmm_frames : 0.0,
           st.num_utts, st.num_failed,
           o.mode == GH_HMM_TRAIN_VITERBI ? (st.aligned ? ", realigned" : ", alignment kept") : "",
           (long long)st.num_gauss, st.seconds, st.estep_seconds, st.reduce_seconds, st.mstep_seconds,
           st.mstep_on_device ? "device" : "host");
    gh_vlog(1, "rank %d, iteration %d: E-step parts: graphs %.3g s, model uploads %.3g s, loglikes %.3g s, %s %.3g s, "
            "(frame, pdf) pairs %.3g s, GMM accumulation %.3g s (pairs to the device %.3g s, then accumulate + acc_commit)",
            rank, it,
            st.graphs_seconds, st.upload_seconds, st.loglike_seconds, o.mode == GH_HMM_TRAIN_BW ? "forward-backward" : "Viterbi",
            st.hmm_seconds, st.pairs_seconds, st.accumulate_seconds, st.setpairs_seconds);
    /* reduced totals, the same on every rank: all ranks stop together */
    if (gh_em_monitor_report(&mon, st.hmm_frames > 0 ? st.hmm_loglike / st.hmm_frames : 0.0)) break;
  }
  if (rank == 0) {
    char conv[192];
    gh_em_monitor_describe(&mon, conv, sizeof conv);
    gh_log("%s", conv);
  }
  /* the final models once, after the last iteration: committed together at exit
   * status 0 (a failed run leaves none behind; "-" gets one model) */
  if (rank == 0) {
    gh_hmm_set_write(hmm_wx, binary, &set);
    gh_gmm_set_write(mdl_wx, binary, &model);
  }
  if (rank == 0)
    gh_log("wrote %s and %s: %d pdfs, %lld Gaussians after %d iterations (%.3g s)", hmm_wx, mdl_wx, model.num_pdfs,
         (long long)gh_gmm_set_total_gauss(&model), mon.iters, gh_seconds() - t0);
  gh_hmm_trainer_free(tr);
  gh_backend_free(be);
  gh_comm_finalize(comm);
  gh_gmm_set_free(&model);
  gh_hmm_set_free(&set);
  free((void *)o.realign);
  gh_opts_free(po);
  return 0;
}
