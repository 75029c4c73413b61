/* hmm-bw -- Baum-Welch E-step (forward-backward, Rabiner 1989 eqs. 24-27,
 * 36-38) batched over utterances on the backend (hmm_fb; Liu 2009, cuHMM):
 * per-frame pdf posteriors, transition counts, and optionally the
 * re-estimated HMM set (eqs. 40a-b). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry.h"
#include "base/gh-base.h"
#include "hmm/hmm.h"
#include "base/opts.h"
#include "io/table.h"
#include "train/device-opts.h"
#include "gmm/emissions.h"
#include "gmm/gmm.h"
#include "gmm/numerics.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Forward-backward over each utterance: writes per-frame pdf posteriors (Kaldi Posterior,\n"
      "for gmm-est-gpu --label-type=post), accumulates expected transition counts and, given\n"
      "<hmm-out>, writes the HMM set with re-estimated transition (and initial) probabilities.\n"
      "The HMM of an utterance: --hmm, its --transcripts entry (an HMM name or a word sequence:\n"
      "the concatenation of the word HMMs, with --optional-silence; counts go back to the shared\n"
      "word HMMs), or the only HMM of the set.  Emissions as in hmm-forward (loglike matrices,\n"
      "--discrete-emissions, or --gmm: features scored under the GMM set in this process).\n"
      "Usage:  hmm-bw [options] <hmm-in> <loglikes-rspecifier> <posteriors-wspecifier> [<hmm-out>]\n"
      "e.g.:   gmm-score-gpu 1.mdl ark:feats.ark ark:- | hmm-bw --transcripts=ark,t:text \\\n"
      "          --optional-silence=sil words.hmm ark:- ark:1.post words.1.hmm\n";
  gh_opts *po = gh_opts_new(usage);
  const char *hmm_name = "", *transcripts = "", *opt_sil = "", *write_accs = "";
  double edge_sil_prob = 0.0;
  double sil_prob = 0.5, min_post = 1e-6;
  int binary = 1;
  gh_hmm_update_opts uo;
  gh_hmm_update_opts_default(&uo);
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPT);
  gh_hmm_input_opts io;
  gh_hmm_input_opts_register(po, &io);
  gh_opts_string(po, "hmm", &hmm_name, "Use the HMM of this name for every utterance");
  gh_opts_string(po, "transcripts", &transcripts, "Text table: utterance -> HMM name or word sequence");
  gh_opts_string(po, "optional-silence", &opt_sil, "With --transcripts: optional silence HMM between words and at the ends");
  gh_opts_double(po, "silence-prob", &sil_prob, "Probability of taking each optional silence");
  gh_opts_double(po, "edge-silence-prob", &edge_sil_prob,
                 "Probability of the silence at the start and at the end (1: obligatory; 0: --silence-prob)");
  gh_opts_double(po, "min-post", &min_post, "Drop pdf posteriors below this from the output (not renormalised)");
  gh_opts_string(po, "write-accs", &write_accs, "Write the transition accumulators to this file (for hmm-sum-accs / hmm-est)");
  gh_opts_bool(po, "binary", &binary, "Write the HMM set and accumulators in binary mode");
  gh_opts_double(po, "transition-min-count", &uo.min_count, "Keep a state's transitions if its count is below this");
  gh_opts_double(po, "transition-floor", &uo.floor, "Floor of re-estimated transition probabilities");
  gh_opts_bool(po, "update-init", &uo.update_init, "Also re-estimate initial-state probabilities");
  const char *gmm_rx;
  gh_gmm_emissions_register(po, &gmm_rx);
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 3 && nargs != 4) gh_opts_usage_exit(po);
  const char *hmm_rx = gh_opts_arg(po, 0), *in_rspec = gh_opts_arg(po, 1), *post_wspec = gh_opts_arg(po, 2);
  const char *hmm_wx = nargs == 4 ? gh_opts_arg(po, 3) : NULL;

  gh_hmm_set set;
  gh_hmm_set_read(hmm_rx, &set);
  int32_t sil = -1, P = gh_hmm_set_num_pdfs(&set);
  if (*opt_sil && (sil = gh_hmm_set_find(&set, opt_sil)) < 0) gh_die("%s: no HMM named '%s'", hmm_rx, opt_sil);
  if (*opt_sil && !*transcripts) gh_die("--optional-silence needs --transcripts");
  if (*hmm_name && *transcripts) gh_die("give --hmm or --transcripts, not both");
  int per_utt = *transcripts != 0;
  int32_t fixed_id = 0;
  if (*hmm_name && (fixed_id = gh_hmm_set_find(&set, hmm_name)) < 0) gh_die("%s: no HMM named '%s'", hmm_rx, hmm_name);
  if (!per_utt && !*hmm_name && set.num_hmms != 1)
    gh_die("%s has %d HMMs: give --hmm or --transcripts", hmm_rx, set.num_hmms);
  gh_hmm_compiled fixed;
  memset(&fixed, 0, sizeof fixed);
  gh_gmm_set gmm = {0};
  if (*gmm_rx) {
    if (*io.discrete) gh_die("give --gmm or --discrete-emissions, not both");
    gh_gmm_set_read(gmm_rx, &gmm);
    gh_gmm_set_contract_check(&gmm, gmm_rx);
  }
  gh_backend *be = gh_device_opts_open(&dev);
  gh_gmm_emissions em = {0};
  if (*gmm_rx) gh_gmm_emissions_init(&em, be, &gmm, gmm_rx, P, io.acoustic_scale);
  const gh_ops_hmm *ops = gh_backend_hmm_ops(be);
  gh_dev_hmm *dh = NULL;
  if (!per_utt) {
    gh_hmm_compile(&set, &fixed_id, 1, -1, 0.0, &fixed);
    const gh_hmm_graph *g = &fixed.graph;
    dh = ops->hmm_upload(be, &g, 1);
  }
  gh_rand_reader *trans = per_utt ? gh_rand_reader_open(transcripts, GH_OBJ_TOKEN_VECTOR) : NULL;
  gh_hmm_accs accs;
  gh_hmm_accs_init(&accs, &set);

  /* with --gmm the input is features: D columns, scaled after scoring */
  gh_hmm_input *in = *gmm_rx ? gh_hmm_input_open_features(in_rspec, gmm.dim, gmm_rx)
                             : gh_hmm_input_open(in_rspec, io.discrete, P);
  gh_writer *w = gh_writer_open(post_wspec);
  const gh_hmm_graph **graphs = NULL;
  double *ll = NULL, *stats = NULL, *pdfsum = gh_calloc(P, sizeof(double));
  float *gamma = NULL;
  int32_t *touched = gh_malloc(P * sizeof(int32_t));
  int64_t num_done = 0, num_err = 0, gcap = 0, scap = 0;
  double t0 = gh_seconds();
  gh_posterior post;
  memset(&post, 0, sizeof post);
  gh_hmm_transcripts tr = {&set, trans, transcripts, sil, sil_prob, edge_sil_prob};
  int32_t B;
  gh_hmm_prefetch *pf = gh_hmm_prefetch_start(in, *gmm_rx ? gmm.dim : P, *gmm_rx ? 1.0f : io.acoustic_scale,
                                              io.batch_frames, (per_utt ? &tr : NULL));
  gh_hmm_batcher *bt;
  while ((bt = gh_hmm_prefetch_next(pf)) != NULL) {
    B = bt->b.num_utts;
    gh_hmm_batch gb;
    const gh_hmm_batch *eb = &bt->b;
    if (*gmm_rx) {
      gh_gmm_emissions_score(&em, &bt->b, &gb);
      eb = &gb;
    }
    gh_dev_hmm *d = dh;
    int32_t ng = 1;
    graphs = gh_realloc(graphs, B * sizeof *graphs);
    if (per_utt) {
      for (int32_t u = 0; u < B; ++u) graphs[u] = &bt->uc[u].graph;
      ng = B;
      d = ops->hmm_upload(be, graphs, B);
    } else {
      graphs[0] = &fixed.graph;
    }
    int64_t *soff = gh_malloc((B + 1) * sizeof(int64_t));
    gh_hmm_batch_state_off(eb, graphs, soff);
    if (soff[B] > gcap) gamma = gh_realloc(gamma, (gcap = soff[B]) * sizeof(float));
    int64_t ns = gh_hmm_stats_offset(graphs, ng);
    if (ns > scap) stats = gh_realloc(stats, (scap = ns) * sizeof(double));
    memset(stats, 0, ns * sizeof(double));
    ll = gh_realloc(ll, B * sizeof(double));
    ops->hmm_fb(be, d, eb, ll, gamma, stats);
    if (per_utt) ops->hmm_free(be, d);
    for (int32_t k = 0; k < ng; ++k)
      gh_hmm_accs_add_stats(&accs, per_utt ? &bt->uc[k] : &fixed, stats + gh_hmm_stats_offset(graphs, k));
    for (int32_t u = 0; u < B; ++u) {
      int64_t T = bt->frame_off[u + 1] - bt->frame_off[u];
      const gh_hmm_compiled *c = per_utt ? &bt->uc[u] : &fixed;
      int32_t S = c->graph.num_states;
      if (ll[u] == -INFINITY) {
        gh_warn("%s, key '%s': no complete path through the HMM (utterance of %lld frames); skipped", in_rspec,
                bt->keys[u], (long long)T);
        ++num_err;
        continue;
      }
      /* pdf posteriors: sum gamma over the states of each pdf, drop < min_post */
      gh_posterior_free(&post);
      post.num_frames = (int32_t)T;
      post.offsets = gh_malloc((T + 1) * sizeof(int32_t));
      int64_t pc = 64, n = 0;
      post.pdf = gh_malloc(pc * sizeof(int32_t));
      post.weight = gh_malloc(pc * sizeof(float));
      post.offsets[0] = 0;
      for (int64_t t = 0; t < T; ++t) {
        const float *gr = gamma + soff[u] + t * S;
        int32_t nt = 0;
        for (int32_t j = 0; j < S; ++j) {
          if (gr[j] <= 0) continue;
          int32_t p = c->pdf[j];
          if (pdfsum[p] == 0) touched[nt++] = p;
          pdfsum[p] += gr[j];
        }
        for (int32_t k = 0; k < nt; ++k) {
          int32_t p = touched[k];
          if (pdfsum[p] >= min_post && pdfsum[p] > 0) {
            if (n == pc) {
              pc *= 2;
              post.pdf = gh_realloc(post.pdf, pc * sizeof(int32_t));
              post.weight = gh_realloc(post.weight, pc * sizeof(float));
            }
            post.pdf[n] = p;
            post.weight[n++] = (float)pdfsum[p];
          }
          pdfsum[p] = 0;
        }
        post.offsets[t + 1] = (int32_t)n;
      }
      gh_writer_write(w, bt->keys[u], GH_OBJ_POSTERIOR, &post);
      accs.total_like += ll[u];
      accs.total_frames += T;
      accs.num_utts++;
      ++num_done;
    }
    free(soff);
  }
  num_err += gh_hmm_prefetch_finish(pf);
  gh_hmm_input_close(in);
  gh_writer_close(w);
  if (trans) gh_rand_reader_close(trans);
  double secs = gh_seconds() - t0;
  gh_log("Processed %lld utterances, %lld failed; average log-likelihood %.4f per frame over %.0f frames; "
         "%.0f frames/s", (long long)num_done, (long long)num_err,
         accs.total_frames ? accs.total_like / accs.total_frames : 0.0, accs.total_frames,
         secs > 0 ? accs.total_frames / secs : 0.0);
  if (*write_accs) gh_hmm_accs_write(write_accs, binary, &accs);
  if (hmm_wx) {
    int64_t kept = 0, done = gh_hmm_update(&set, &accs, &uo, &kept);
    gh_log("re-estimated %lld transition distributions, kept %lld (count below %g)", (long long)done,
           (long long)kept, uo.min_count);
    gh_hmm_set_write(hmm_wx, binary, &set);
  }
  if (dh) ops->hmm_free(be, dh);
  if (*gmm_rx) gh_gmm_emissions_free(&em);
  gh_backend_free(be);
  gh_gmm_set_free(&gmm);
  gh_hmm_compiled_free(&fixed);
  gh_posterior_free(&post);
  free(graphs); free(ll); free(stats); free(gamma); free(pdfsum); free(touched);
  gh_hmm_accs_free(&accs);
  gh_hmm_set_free(&set);
  gh_opts_free(po);
  return num_done ? 0 : 1;
}
