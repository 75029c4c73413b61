/* hmm-forward -- total log-likelihood of each utterance under each HMM of a
 * set (forward algorithm, Rabiner 1989 eqs. 19-21), batched over utterances
 * on the backend (kernels/backend.h hmm_forward; Liu 2009, cuHMM). */
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
#include "gmm/numerics.h"
#include "gmm/gmm.h"

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const char *usage =
      "Forward algorithm: per utterance a float vector with the total log-likelihood (natural\n"
      "log) log P(O | HMM) of every HMM in the set, in set order (or of --hmm only).\n"
      "Emissions: per-pdf log-likelihood matrices (frames x pdfs, e.g. from gmm-score-gpu), or\n"
      "with --discrete-emissions=B int32 symbol sequences, loglike[t][pdf] = log B[pdf][sym_t], or\n"
      "with --gmm=MODEL features scored under the GMM set in this process.\n"
      "--precision applies to the GPU products of the --scaled forward on dense HMMs (auto: tf32x3\n"
      "from 1024 states, else fp32); the log-domain forward is always double.\n"
      "Usage:  hmm-forward [options] <hmm-in> <loglikes-rspecifier> <loglik-wspecifier>\n"
      "e.g.:   gmm-score-gpu final.mdl ark:feats.ark ark:- | hmm-forward words.hmm ark:- ark,t:ll.txt\n"
      "        hmm-forward --gmm=final.mdl words.hmm scp:feats.scp ark,t:ll.txt\n";
  gh_opts *po = gh_opts_new(usage);
  const char *hmm_name = "";
  int scaled = 0;
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  gh_hmm_input_opts io;
  gh_hmm_input_opts_register(po, &io);
  gh_opts_string(po, "hmm", &hmm_name, "Score only the HMM with this name (output vectors of dimension 1)");
  gh_opts_bool(po, "scaled", &scaled, "Scaled arithmetic (per-frame normalisation, Rabiner) instead of log domain");
  const char *gmm_rx;
  gh_gmm_emissions_register(po, &gmm_rx);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *hmm_rx = gh_opts_arg(po, 0), *in_rspec = gh_opts_arg(po, 1), *out_wspec = gh_opts_arg(po, 2);

  gh_hmm_set set;
  gh_hmm_set_read(hmm_rx, &set);
  int32_t first = 0, num = set.num_hmms;
  if (*hmm_name) {
    if ((first = gh_hmm_set_find(&set, hmm_name)) < 0) gh_die("%s: no HMM named '%s'", hmm_rx, hmm_name);
    num = 1;
  }
  int32_t P = gh_hmm_set_num_pdfs(&set);
  gh_hmm_compiled *comp = gh_calloc(num, sizeof *comp);
  const gh_hmm_graph **graphs = gh_malloc(num * sizeof *graphs);
  for (int32_t k = 0; k < num; ++k) {
    int32_t id = first + k;
    gh_hmm_compile(&set, &id, 1, -1, 0.0, &comp[k]);
    graphs[k] = &comp[k].graph;
  }
  int64_t states = 0, arcs = 0;
  for (int32_t k = 0; k < num; ++k) {
    states += set.hmms[first + k].num_states;
    arcs += set.hmms[first + k].num_arcs;
  }
  gh_gmm_set gmm = {0};
  double rate = gh_cpu_rate_hmm(states, arcs);
  if (*gmm_rx) {
    if (*io.discrete) gh_die("give --gmm or --discrete-emissions, not both");
    gh_gmm_set_read(gmm_rx, &gmm);
    gh_gmm_set_contract_check(&gmm, gmm_rx);
    const double r = gh_cpu_rate_gmm(&gmm, 1);
    rate = rate > 0 && r > 0 ? 1 / (1 / rate + 1 / r) : 0;
  }
  gh_device_opts_auto_small(&dev, rate, *gmm_rx ? "scoring this model and the forward pass" : "the forward pass over these HMMs");
  gh_backend *be = gh_device_opts_open(&dev);
  const gh_ops_hmm *ops = gh_backend_hmm_ops(be);
  gh_dev_hmm *dh = ops->hmm_upload(be, graphs, num);
  gh_gmm_emissions em = {0};
  if (*gmm_rx) gh_gmm_emissions_init(&em, be, &gmm, gmm_rx, P, io.acoustic_scale);

  /* with --gmm the input is features: D columns, scaled after scoring */
  gh_hmm_input *in = *gmm_rx ? gh_hmm_input_open_features(in_rspec, gmm.dim, gmm_rx)
                             : gh_hmm_input_open(in_rspec, io.discrete, P);
  gh_writer *w = gh_writer_open(out_wspec);
  double *ll = NULL, best_sum = 0;
  int64_t num_done = 0, num_nopath = 0, frames = 0;
  gh_vector out = {num, gh_malloc(num * sizeof(float))};
  double t0 = gh_seconds();
  int32_t B;
  gh_hmm_prefetch *pf = gh_hmm_prefetch_start(in, *gmm_rx ? gmm.dim : P, *gmm_rx ? 1.0f : io.acoustic_scale,
                                              io.batch_frames, NULL);
  gh_hmm_batcher *bt;
  while ((bt = gh_hmm_prefetch_next(pf)) != NULL) {
    B = bt->b.num_utts;
    ll = gh_realloc(ll, (size_t)num * B * sizeof(double));
    gh_hmm_batch gb;
    const gh_hmm_batch *eb = &bt->b;
    if (*gmm_rx) {
      gh_gmm_emissions_score(&em, &bt->b, &gb);
      eb = &gb;
    }
    for (int32_t k = 0; k < num; ++k) {
      for (int32_t u = 0; u < B; ++u) bt->graph[u] = k;
      ops->hmm_forward(be, dh, eb, scaled ? GH_HMM_SCALED : 0, ll + (size_t)k * B, NULL);
    }
    for (int32_t u = 0; u < B; ++u) {
      double best = -INFINITY;
      for (int32_t k = 0; k < num; ++k) {
        out.data[k] = (float)ll[(size_t)k * B + u];
        if (ll[(size_t)k * B + u] > best) best = ll[(size_t)k * B + u];
      }
      if (best == -INFINITY) {
        gh_warn("%s, key '%s': no HMM has a complete path for this utterance (log-likelihood -inf)", in_rspec,
                bt->keys[u]);
        ++num_nopath;
      } else {
        best_sum += best;
        frames += bt->frame_off[u + 1] - bt->frame_off[u];
      }
      gh_writer_write(w, bt->keys[u], GH_OBJ_VECTOR, &out);
      ++num_done;
    }
  }
  gh_hmm_prefetch_finish(pf);
  gh_hmm_input_close(in);
  gh_writer_close(w);
  double secs = gh_seconds() - t0;
  gh_log("Processed %lld utterances (%lld without a path); average log-likelihood of the best HMM %.4f per "
         "frame over %lld frames; %.0f frames/s", (long long)num_done, (long long)num_nopath,
         frames ? best_sum / frames : 0.0, (long long)frames, secs > 0 ? frames / secs : 0.0);
  ops->hmm_free(be, dh);
  if (*gmm_rx) gh_gmm_emissions_free(&em);
  gh_backend_free(be);
  gh_gmm_set_free(&gmm);
  for (int32_t k = 0; k < num; ++k) gh_hmm_compiled_free(&comp[k]);
  free(comp); free(graphs); free(ll); free(out.data);
  gh_hmm_set_free(&set);
  gh_opts_free(po);
  return num_done > num_nopath ? 0 : 1;
}
