/* hmm-viterbi -- best state path per utterance (Viterbi, Rabiner 1989 eqs.
 * 30-35), batched over utterances on the backend (hmm_viterbi; Liu
 * 2009, cuHMM), written as Kaldi int32-vector alignments. */
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
      "Viterbi alignment: the best state path of each utterance, written as an int32 vector of\n"
      "pdf ids per frame (--write-states: state indices of the HMM, or of the compiled\n"
      "transcript graph).  The HMM is --hmm, or the utterance's --transcripts entry (one HMM\n"
      "name, or a word sequence: the concatenation of the word HMMs, with --optional-silence\n"
      "between words and at both ends), or the only HMM of the set; with several HMMs and\n"
      "neither option, every HMM is tried and the best path wins (isolated-word recognition).\n"
      "--words-wspecifier writes the recognised words as text (key w1 w2 ...): word labels of\n"
      "the states entered (word-loop HMMs), else the names of the HMMs on the path.\n"
      "Emissions as in hmm-forward (loglike matrices, --discrete-emissions, or --gmm).\n"
      "Usage:  hmm-viterbi [options] <hmm-in> <loglikes-rspecifier> <alignment-wspecifier>\n"
      "e.g.:   gmm-score-gpu final.mdl ark:feats.ark ark:- | hmm-viterbi --hmm=loop \\\n"
      "          --words-wspecifier=ark,t:words.txt words.hmm ark:- ark:ali.ark\n";
  gh_opts *po = gh_opts_new(usage);
  const char *hmm_name = "", *transcripts = "", *opt_sil = "";
  const char *ll_wspec = "", *words_wspec = "";
  int write_states = 0;
  double edge_sil_prob = 0.0;
  double sil_prob = 0.5;
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPT);
  gh_hmm_input_opts io;
  gh_hmm_input_opts_register(po, &io);
  gh_opts_string(po, "hmm", &hmm_name, "Align every utterance with the HMM of this name");
  gh_opts_string(po, "transcripts", &transcripts,
                 "Text table: utterance -> HMM name or word sequence (HMM names) to align with");
  gh_opts_string(po, "optional-silence", &opt_sil, "With --transcripts: optional silence HMM between words and at the ends");
  gh_opts_double(po, "silence-prob", &sil_prob, "Probability of taking each optional silence");
  gh_opts_double(po, "edge-silence-prob", &edge_sil_prob,
                 "Probability of the silence at the start and at the end (1: obligatory; 0: --silence-prob)");
  gh_opts_bool(po, "write-states", &write_states, "Write state indices instead of pdf ids");
  gh_opts_string(po, "loglikes-wspecifier", &ll_wspec,
                 "Write the best path's log-probability (natural log) as a float vector of dimension 1");
  gh_opts_string(po, "words-wspecifier", &words_wspec, "Write the word sequence of each path (text, token vectors)");
  const char *gmm_rx;
  gh_gmm_emissions_register(po, &gmm_rx);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *hmm_rx = gh_opts_arg(po, 0), *in_rspec = gh_opts_arg(po, 1), *ali_wspec = gh_opts_arg(po, 2);

  gh_hmm_set set;
  gh_hmm_set_read(hmm_rx, &set);
  int32_t sil = -1, P = gh_hmm_set_num_pdfs(&set);
  if (*opt_sil && (sil = gh_hmm_set_find(&set, opt_sil)) < 0) gh_die("%s: no HMM named '%s'", hmm_rx, opt_sil);
  if (*opt_sil && !*transcripts) gh_die("--optional-silence needs --transcripts");
  if (*hmm_name && *transcripts) gh_die("give --hmm or --transcripts, not both");
  int per_utt = *transcripts != 0;
  /* Fixed graphs: --hmm, or every HMM of the set (best path wins). */
  int32_t first = 0, num = per_utt ? 0 : set.num_hmms;
  if (*hmm_name) {
    if ((first = gh_hmm_set_find(&set, hmm_name)) < 0) gh_die("%s: no HMM named '%s'", hmm_rx, hmm_name);
    num = 1;
  }
  gh_hmm_compiled *fixed = gh_calloc(num ? num : 1, sizeof *fixed);
  const gh_hmm_graph **graphs = gh_malloc((num ? num : 1) * sizeof *graphs);
  for (int32_t k = 0; k < num; ++k) {
    int32_t id = first + k;
    gh_hmm_compile(&set, &id, 1, -1, 0.0, &fixed[k]);
    graphs[k] = &fixed[k].graph;
  }
  gh_gmm_set gmm = {0};
  if (*gmm_rx) {
    if (*io.discrete) gh_die("give --gmm or --discrete-emissions, not both");
    gh_gmm_set_read(gmm_rx, &gmm);
    gh_gmm_set_contract_check(&gmm, gmm_rx);
  }
  if (num > 0) { /* fixed graphs: their size is the work per frame (transcripts' graphs are not known yet) */
    int64_t states = 0, arcs = 0;
    for (int32_t k = 0; k < num; ++k) {
      states += set.hmms[first + k].num_states;
      arcs += set.hmms[first + k].num_arcs;
    }
    double rate = gh_cpu_rate_hmm(states, arcs);
    if (*gmm_rx) {
      const double r = gh_cpu_rate_gmm(&gmm, 1);
      rate = rate > 0 && r > 0 ? 1 / (1 / rate + 1 / r) : 0;
    }
    gh_device_opts_auto_small(&dev, rate, *gmm_rx ? "scoring this model and the Viterbi pass" : "the Viterbi pass over these HMMs");
  }
  gh_backend *be = gh_device_opts_open(&dev);
  const gh_ops_hmm *ops = gh_backend_hmm_ops(be);
  gh_dev_hmm *dh = num ? ops->hmm_upload(be, graphs, num) : NULL;
  gh_rand_reader *trans = per_utt ? gh_rand_reader_open(transcripts, GH_OBJ_TOKEN_VECTOR) : NULL;

  gh_gmm_emissions em = {0};
  if (*gmm_rx) gh_gmm_emissions_init(&em, be, &gmm, gmm_rx, P, io.acoustic_scale);
  /* with --gmm the input is features: D columns, scaled after scoring */
  gh_hmm_input *in = *gmm_rx ? gh_hmm_input_open_features(in_rspec, gmm.dim, gmm_rx)
                             : gh_hmm_input_open(in_rspec, io.discrete, P);
  gh_writer *w = gh_writer_open(ali_wspec);
  gh_writer *wl = *ll_wspec ? gh_writer_open(ll_wspec) : NULL;
  gh_writer *ww = *words_wspec ? gh_writer_open(words_wspec) : NULL;
  int32_t *path = NULL, *best_path = NULL, *best_k = NULL;
  double *score = NULL, *best = NULL, tot = 0;
  int64_t num_done = 0, num_err = 0, frames = 0, cap = 0;
  double t0 = gh_seconds();
  gh_hmm_transcripts tr = {&set, trans, transcripts, sil, sil_prob, edge_sil_prob};
  int32_t B;
  gh_hmm_prefetch *pf = gh_hmm_prefetch_start(in, *gmm_rx ? gmm.dim : P, *gmm_rx ? 1.0f : io.acoustic_scale,
                                              io.batch_frames, (per_utt ? &tr : NULL));
  gh_hmm_batcher *bt;
  while ((bt = gh_hmm_prefetch_next(pf)) != NULL) {
    B = bt->b.num_utts;
    int64_t F = gh_hmm_batcher_frames(bt);
    if (F > cap) {
      cap = F;
      path = gh_realloc(path, cap * sizeof(int32_t));
      best_path = gh_realloc(best_path, cap * sizeof(int32_t));
    }
    score = gh_realloc(score, B * sizeof(double));
    best = gh_realloc(best, B * sizeof(double));
    best_k = gh_realloc(best_k, B * sizeof(int32_t));
    gh_hmm_batch gb;
    const gh_hmm_batch *eb = &bt->b;
    if (*gmm_rx) {
      gh_gmm_emissions_score(&em, &bt->b, &gb);
      eb = &gb;
    }
    if (per_utt) {
      graphs = gh_realloc(graphs, B * sizeof *graphs);
      for (int32_t u = 0; u < B; ++u) graphs[u] = &bt->uc[u].graph;
      gh_dev_hmm *d = ops->hmm_upload(be, graphs, B);
      ops->hmm_viterbi(be, d, eb, best_path, best);
      ops->hmm_free(be, d);
      for (int32_t u = 0; u < B; ++u) best_k[u] = u;
    } else {
      for (int32_t k = 0; k < num; ++k) {
        for (int32_t u = 0; u < B; ++u) bt->graph[u] = k;
        ops->hmm_viterbi(be, dh, eb, path, score);
        for (int32_t u = 0; u < B; ++u)
          if (k == 0 || score[u] > best[u]) {
            best[u] = score[u];
            best_k[u] = k;
            memcpy(best_path + bt->frame_off[u], path + bt->frame_off[u],
                   (bt->frame_off[u + 1] - bt->frame_off[u]) * sizeof(int32_t));
          }
      }
    }
    for (int32_t u = 0; u < B; ++u) {
      int64_t T = bt->frame_off[u + 1] - bt->frame_off[u];
      int32_t *pu = best_path + bt->frame_off[u];
      const gh_hmm_compiled *c = per_utt ? &bt->uc[u] : &fixed[best_k[u]];
      if (best[u] == -INFINITY) {
        gh_warn("%s, key '%s': no complete path through the HMM (utterance of %lld frames); skipped", in_rspec,
                bt->keys[u], (long long)T);
        ++num_err;
        continue;
      }
      gh_ivector ali = {(int32_t)T, gh_malloc((T ? T : 1) * sizeof(int32_t))};
      for (int64_t t = 0; t < T; ++t) ali.data[t] = write_states ? pu[t] : c->pdf[pu[t]];
      gh_writer_write(w, bt->keys[u], GH_OBJ_INT32_VECTOR, &ali);
      gh_ivector_free(&ali);
      if (wl) {
        float v = (float)best[u];
        gh_vector lv = {1, &v};
        gh_writer_write(wl, bt->keys[u], GH_OBJ_VECTOR, &lv);
      }
      if (ww) {
        char *words = gh_hmm_path_words(c, pu, T);
        gh_writer_write(ww, bt->keys[u], GH_OBJ_TOKEN_VECTOR, words);
        free(words);
      }
      tot += best[u];
      frames += T;
      ++num_done;
    }
  }
  num_err += gh_hmm_prefetch_finish(pf);
  gh_hmm_input_close(in);
  gh_writer_close(w);
  if (wl) gh_writer_close(wl);
  if (ww) gh_writer_close(ww);
  if (trans) gh_rand_reader_close(trans);
  double secs = gh_seconds() - t0;
  gh_log("Aligned %lld utterances, %lld failed; average best-path log-likelihood %.4f per frame over %lld "
         "frames; %.0f frames/s", (long long)num_done, (long long)num_err, frames ? tot / frames : 0.0,
         (long long)frames, secs > 0 ? frames / secs : 0.0);
  if (dh) ops->hmm_free(be, dh);
  if (*gmm_rx) gh_gmm_emissions_free(&em);
  gh_backend_free(be);
  gh_gmm_set_free(&gmm);
  for (int32_t k = 0; k < num; ++k) gh_hmm_compiled_free(&fixed[k]);
  free(fixed); free(graphs); free(path); free(best_path); free(best_k); free(score); free(best);
  gh_hmm_set_free(&set);
  gh_opts_free(po);
  return num_done ? 0 : 1;
}
