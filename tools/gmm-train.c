/* gmm-train -- multi-iteration EM training of a GMM set as one job of R
 * ranks (mpirun -np R / srun; or one plain process), each with its shard of
 * the data resident on its device (drivers/train/dist-em.h, shard.h, comm.h).
 * The result does not depend on R, bit for bit (lib/base/dd.h); only rank 0
 * writes.  Test hooks (environment): GH_TEST_KILL=RANK:ITER makes rank RANK
 * kill itself (SIGKILL) after its E-step of iteration ITER; GH_TEST_HANG=RANK:ITER
 * makes it stop there for ever (the other ranks' watchdog ends the job);
 * GH_TRAIN_DUMP_ACCS=FILE makes rank 0 write the last iteration's reduced
 * accumulators as raw little-endian doubles (gh_accs_flatten's layout). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm-est.h"
#include "gmm/gmm.h"
#include "gmm/shrink.h"
#include "train/comm.h"
#include "train/device-opts.h"
#include "train/dist-em.h"
#include "train/shard.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "EM training of a GMM set (diagonal or full covariance) for --num-iters iterations (or until\n"
      "--tol) as one job:\n"
      "a plain process, or R ranks started by mpirun / srun (one per GPU), each keeping its shard of\n"
      "the data on its device; blocks are combined in double-double and summed over the ranks in\n"
      "rank order, so the model does not depend on R (bit for bit).  Options as gmm-est-gpu; without a\n"
      "label argument every frame trains pdf 0 (the model must have 1 pdf); --label-type says\n"
      "what the labels hold: ali (per-frame pdf ids), utt (one pdf id per utterance), post\n"
      "(posteriors).  Rank 0 logs each iteration and writes the models.  Under mpirun / srun, local\n"
      "rank k of a host takes its GPU k mod GPUs (--device=auto or cuda) and cores / ranks threads.\n"
      "Usage:  gmm-train [options] <model-in> <feats-rspecifier> [<labels-rspecifier>] <model-out>\n"
      "e.g.:   gmm-train --num-iters=20 ubm.0 scp:data/train/feats.scp ubm.final\n"
      "        mpirun -np 2 gmm-train --num-iters=20 --iter-models=exp/ubm ubm.0 scp:feats.scp ubm.20\n"
      "        srun --kill-on-bad-exit=1 --mpi=pmix -n 8 gmm-train --label-type=post 1.mdl scp:feats.scp \\\n"
      "          ark:1.post 2.mdl\n";
  gh_opts *po = gh_opts_new(usage);
  int binary = 1;
  int32_t num_iters = 1, first_iter = 1;
  int64_t block_frames = 65536;
  const char *label_type = "ali", *write_accs = "", *iter_models = "";
  gh_est_opts eo;
  gh_est_opts_default(&eo);
  gh_comm_opts co;
  gh_comm_opts_default(&co);
  gh_opts_bool(po, "binary", &binary, "Write the output model in binary mode");
  gh_opts_int(po, "num-iters", &num_iters, "Number of EM iterations (the maximum with --tol)");
  gh_opts_int(po, "first-iter", &first_iter,
              "Number of the first iteration (resuming from <dir>/N.mdl: --first-iter=N+1); mix-up happens "
              "only after iteration 1");
  gh_opts_string(po, "iter-models", &iter_models,
                 "Directory: rank 0 also writes the model after iteration N as DIR/N.mdl (atomically), so a "
                 "failed job resumes from the last complete iteration");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  gh_opts_string(po, "label-type", &label_type, "What the labels argument holds: ali, utt or post");
  gh_em_tool_opts eto;
  gh_em_tool_opts_register(po, &eto);
  gh_opts_string(po, "write-accs", &write_accs, "Write the accumulators of the last E-step (summed over the ranks) to this file");
  gh_opts_int64(po, "block-frames", &block_frames,
                "Frames per block of the E-step (utterances in key order, cut at utterance boundaries); "
                "the blocks, not R, decide the arithmetic, so keep it when comparing runs");
  const char *max_mem = "";
  gh_opts_string(po, "max-device-memory", &max_mem,
                 "Device memory for this rank's frames, e.g. 20G or 512M (\"\" = no limit): blocks beyond it are "
                 "streamed from page-locked host memory every iteration, overlapped with the E-step, same result "
                 "(CUDA, OpenCL)");
  gh_comm_opts_register(po, &co);
  gh_est_opts_register(po, &eo);
  gh_mstep_shrink ms;
  gh_mstep_shrink_register(po, &ms);
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 3 && nargs != 4) gh_opts_usage_exit(po);
  const char *model_in = gh_opts_arg(po, 0), *feats_rspec = gh_opts_arg(po, 1);
  const char *labels_rspec = nargs == 4 ? gh_opts_arg(po, 2) : NULL, *model_out = gh_opts_arg(po, nargs - 1);
  if (num_iters < 1) gh_die("--num-iters must be >= 1 (got %d)", num_iters);
  if (first_iter < 1) gh_die("--first-iter must be >= 1 (got %d)", first_iter);
  if (block_frames < 1) gh_die("--block-frames must be >= 1 (got %lld)", (long long)block_frames);
  gh_mstep_shrink_parse(&ms);
  int64_t max_device_bytes = 0;
  if (*max_mem && gh_parse_size(max_mem, &max_device_bytes) != 0)
    gh_die("--max-device-memory must be a positive size such as 20G, 512M or 1000000 (got '%s')", max_mem);
  gh_label_type lt = GH_LABELS_NONE;
  if (labels_rspec && (gh_label_type_parse(label_type, &lt) != 0 || lt == GH_LABELS_NONE))
    gh_die("--label-type must be ali, utt or post (got '%s')", label_type);

  /* the ranks */
  gh_comm *comm = gh_comm_start(&argc, &argv, &co);
  const int R = gh_comm_size(comm), rank = gh_comm_rank(comm);
  if (rank > 0) gh_verbose = gh_verbose > -1 ? -1 : gh_verbose; /* rank 0 logs; warnings stay */
  gh_comm_check_build(comm);
  /* every option that changes the arithmetic (--block-frames, floors,
   * --precision, shrinkage ...) or the schedule (--num-iters, --first-iter,
   * --mix-up, --seed ...) is the same on every rank, or the job stops here */
  gh_comm_check_options(comm, po,
                        (const char *const[]){"device", "max-device-memory", "iter-models", "write-accs", "binary", NULL});
  if (rank == 0 && *iter_models) { /* only rank 0 writes there */
    struct stat st;
    if (stat(iter_models, &st) != 0 || !S_ISDIR(st.st_mode))
      gh_die("--iter-models=%s: not a directory", iter_models);
  }

  gh_gmm_set model;
  gh_gmm_set_read(model_in, &model);
  {
    const uint64_t h = gh_gmm_set_hash(&model);
    gh_comm_check_same(comm, &h, sizeof h, "the initial model (started with different models)");
  }
  gh_mstep_shrink_attach(&ms, &model, model_in, write_accs, &eo);
  if (!labels_rspec && model.num_pdfs != 1)
    gh_die("%s has %d pdfs: a labels argument is needed", model_in, model.num_pdfs);

  gh_device_opts_bind_rank(&dev, comm); /* rank k of a host: GPU k mod its GPUs */
  gh_device_opts_begin(&dev); /* the device starts while we read */

  /* the data: every rank reads the table, keeps its shard */
  const double t_load = gh_seconds();
  gh_data_opts dopt = {feats_rspec, labels_rspec, labels_rspec ? lt : GH_LABELS_NONE, model.num_pdfs, model.dim,
                       model_in};
  gh_shard_data sd;
  gh_comm_set_context(comm, "reading %s", feats_rspec);
  gh_shard_data_load(&sd, &dopt, block_frames, R, rank, comm);
  const double t_read = gh_seconds() - t_load;
  {
    uint64_t h = GH_HASH64_INIT;
    for (int64_t u = 0; u < sd.plan.num_utts; ++u) {
      h = gh_hash64(sd.plan.keys[u], strlen(sd.plan.keys[u]) + 1, h);
      h = gh_hash64(&sd.plan.frames[u], sizeof(int32_t), h);
    }
    gh_comm_check_same(comm, &h, sizeof h, "the data's keys and frame counts (ranks read different data)");
  }
  gh_log("%lld utterances, %lld frames of dimension %d in %d blocks of <= %lld frames, %d rank%s",
         (long long)sd.plan.num_utts, (long long)sd.plan.frame_off[sd.plan.num_utts], model.dim, sd.plan.num_blocks,
         (long long)block_frames, R, R > 1 ? "s" : "");
  if (rank == 0) gh_shard_data_warn(&sd, &dopt); /* every rank counts them: rank 0 says it */
  if (R > 1 || gh_verbose >= 1) {
    /* the rank -> host -> shard table, known to every rank, logged by rank 0 */
    for (int r = 0; r < R; ++r) {
      char d[512];
      gh_shard_describe(&sd.plan, r, d, sizeof d);
      gh_log("rank %d on host %s: %s", r, gh_comm_host(comm, r), d);
    }
  }

  gh_backend *be = gh_device_opts_end(&dev);
  const double t_ready = gh_seconds() - t_load;
  gh_host_blas_serial();
  gh_dist_em em;
  gh_dist_em_init(&em, comm, be, &model, &sd, max_device_bytes);
  gh_comm_use_nccl(comm, &co, be);
  gh_log("loaded and uploaded in %.3f s (read %.3f s; device ready at %.3f s: its start overlaps the read); device %s, "
         "communicator %s", gh_seconds() - t_load, t_read, t_ready, be->device_name, gh_comm_kind(comm));

  const char *kill_hook = getenv("GH_TEST_KILL"), *dump = getenv("GH_TRAIN_DUMP_ACCS");
  const char *hang_hook = getenv("GH_TEST_HANG");
  int kill_rank = -1, kill_iter = -1, hang_rank = -1, hang_iter = -1;
  if (kill_hook && sscanf(kill_hook, "%d:%d", &kill_rank, &kill_iter) != 2) kill_rank = -1;
  if (hang_hook && sscanf(hang_hook, "%d:%d", &hang_rank, &hang_iter) != 2) hang_rank = -1;

  gh_rng rng;
  gh_rng_seed(&rng, (uint64_t)eto.seed);
  gh_accs_set accs;
  memset(&accs, 0, sizeof accs);
  double avg = 0;
  gh_em_monitor mon;
  gh_em_monitor_init(&mon, eto.tol);
  const int32_t last_iter = first_iter + num_iters - 1;
  for (int32_t it = first_iter; it <= last_iter; ++it) {
    const double t_it = gh_seconds();
    /* with --tol any iteration may be the last: the accumulators of each
     * E-step come to the host when the last one's are to be written */
    const int may_be_last = it == last_iter || eto.tol > 0;
    const int want_accs = ms.so.method != GH_SHRINK_NONE || (it == 1 && eto.mix_up > 0) ||
                          (may_be_last && (*write_accs || (dump && *dump)));
    avg = gh_dist_em_estep(&em, want_accs ? &accs : NULL);
    /* the reduced value, the same bytes on every rank: all ranks stop together */
    const int last = gh_em_monitor_report(&mon, avg) || it == last_iter;
    if (rank == kill_rank && it == kill_iter) raise(SIGKILL);
    if (rank == hang_rank && it == hang_iter)
      for (;;) pause();
    if (gh_shrink_needs_stats(ms.so.method) || (ms.shrinkage_stats && last && *write_accs)) {
      gh_accs_shrink_init(&accs, &model); /* second pass, centres = this E-step model's means */
      gh_dist_em_acc_shrink(&em, &accs);
    }
    gh_est_stats st;
    memset(&st, 0, sizeof st);
    gh_shrink_stats_init(&ms.sst);
    gh_dist_em_mstep(&em, &eo, want_accs ? &accs : NULL, &st);
    if (ms.so.method != GH_SHRINK_NONE) gh_shrink_stats_log(&ms.so, &ms.sst);
    if (it == 1 && eto.mix_up > 0) gh_dist_em_mixup(&em, &eto, &accs, &rng);
    /* every rank holds the same model bytes (hashed on the device after a
     * device M-step: no fetch per iteration) */
    if (R > 1) {
      char what[96];
      snprintf(what, sizeof what, "the model after iteration %d", it);
      const uint64_t h = gh_dist_em_model_hash(&em);
      gh_comm_check_same(comm, &h, sizeof h, what);
    }
    if (rank == 0 && *iter_models) {
      gh_dist_em_sync(&em);
      char path[4096];
      snprintf(path, sizeof path, "%s/%d.mdl", iter_models, it);
      gh_gmm_set_write(path, binary, &model);
      gh_commit_outputs(); /* a checkpoint: on disk now (a resumed run starts from it), not at exit */
    }
    gh_log("iteration %d: avg loglike per frame %.6f over %.0f frames; E-step %.4f s, reduce %.4f s (%s), "
           "M-step %.4f s (%s), wall %.4f s; auxf change per frame %.6f",
           it, avg, em.total_weight, em.estep_seconds, em.reduce_seconds, em.reduce_path, em.mstep_seconds,
           em.mstep_on_device ? "device" : "host", gh_seconds() - t_it, st.count > 0 ? st.objf_change / st.count : 0.0);
    if (want_accs && !last) gh_accs_free(&accs);
    if (last) break;
  }
  {
    char conv[192];
    gh_em_monitor_describe(&mon, conv, sizeof conv);
    gh_log("%s", conv);
  }
  if (rank == 0 && accs.pdfs) {
    if (*write_accs) gh_accs_write(write_accs, binary, &accs);
    if (dump && *dump) {
      const size_t n = gh_accs_flat_size(&accs, 0);
      double *flat = gh_malloc(sizeof(double) * n);
      gh_accs_flatten(&accs, 0, flat);
      gh_tmpfile *tf = gh_tmpfile_open(dump);
      if (fwrite(flat, sizeof(double), n, gh_tmpfile_fp(tf)) != n) gh_die("%s: write error", dump);
      gh_tmpfile_commit(tf);
      free(flat);
    }
  }
  if (accs.pdfs) gh_accs_free(&accs);
  gh_dist_em_sync(&em);
  if (rank == 0) {
    gh_gmm_set_write(model_out, binary, &model);
    gh_log("wrote %s: %d pdfs, %lld Gaussians; last avg loglike per frame %.6f over %.0f frames", model_out,
           model.num_pdfs, (long long)gh_gmm_set_total_gauss(&model), avg, em.total_weight);
  }
  char paths[256];
  gh_backend_paths_describe(be, paths, sizeof paths);
  gh_vlog(1, "rank %d: %s", rank, paths);
  gh_dist_em_free(&em);
  gh_backend_free(be);
  gh_shard_data_free(&sd);
  gh_gmm_set_free(&model);
  gh_comm_finalize(comm);
  gh_opts_free(po);
  return 0;
}
