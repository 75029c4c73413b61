/* gmm-align-compiled -- forced alignment of features to compiled training graphs
 * with a Kaldi .mdl (Kaldi gmmbin/gmm-align-compiled.cc with AlignUtteranceWrapper,
 * decoder/decoder-wrappers.cc).  Per utterance: the graph (transition-ids in,
 * words out) gets the model's transition log-probabilities added as Kaldi's
 * AddTransitionProbs does (--transition-scale, --self-loop-scale), --careful
 * appends Kaldi's loop back to the start, the per-frame per-pdf GMM
 * log-likelihoods come from the backend (--device, the scoring path of
 * gmm-score-gpu) for a block of consecutive utterances in one call
 * (--block-frames, drivers/align/score-block.h; the values are the
 * per-utterance ones), and lib/decoder's FasterDecoder finds the best path
 * (--beam, then --retry-beam once if no final state was reached; the block's
 * utterances on the OpenMP threads, the outputs in their order); --exact or --beam=0: no pruning, by the batched exact aligner on
 * the --device (drivers/align/align-batch.h; --batch-size=0: lib/decoder's
 * decoder with an infinite beam).  Log lines as Kaldi's: the retry
 * warning, "Did not successfully decode file X, len = N", "Overall
 * log-likelihood per frame is Y over N frames.", "Retried M out of U
 * utterances.", "Done N, errors on M"; per utterance "Log-like per frame for
 * utterance X is Y over N frames." (Kaldi's decoders' line). */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "align/align-batch.h"
#include "align/score-block.h"
#include "backend.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "decoder/align-report.h"
#include "decoder/faster-decoder.h"
#include "io/fst.h"
#include "gmm/gmm.h"
#include "gmm/numerics.h"
#include "hmm/transition.h"
#include "io/table.h"
#include "train/device-opts.h"

static const char *usage =
    "Align features given [GMM-based] models.\n"
    "Usage:   gmm-align-compiled [options] <model-in> <graphs-rspecifier> "
    "<feature-rspecifier> <alignments-wspecifier> [scores-wspecifier]\n"
    "e.g.: \n"
    " gmm-align-compiled --beam=10 --retry-beam=40 1.mdl ark:graphs.fsts scp:train.scp ark:1.ali\n"
    "or:\n"
    " compile-train-graphs tree 1.mdl lex.fst 'ark:sym2int.pl -f 2- words.txt text|' \\\n"
    "   ark:- | gmm-align-compiled 1.mdl ark:- scp:train.scp t, ark:1.ali\n"
    "or:\n"
    " gmm-align-compiled --exact --device=cuda final.mdl ark:fsts.1 scp:feats.scp ark:ali.1\n"
    "\n"
    "--exact (or --beam=0) decodes without pruning: the exact best path, never a\n"
    "failure for lack of beam; batches of utterances are aligned together on the\n"
    "--device, long files with checkpointed back-pointers (--batch-size=0: the\n"
    "one-utterance decoder on the CPU).  The beam mode scores on the --device and\n"
    "searches on the CPU.\n"
    "Utterances not aligned are reported by key and reason (--failure-report writes them to a file).\n";

/* The outputs of one utterance (shared by the beam decoder and the batched
 * exact aligner's callback). */
typedef struct {
  gh_writer *aw, *sw, *pw;
  gh_align_report *report;
  float acoustic_scale;
  int64_t num_done, num_err, frame_count;
  double tot_like;
} results;

static void write_result(void *user, const char *utt, int32_t T, const gh_dec_path *cp) {
  results *r = user;
  if (!cp) { /* the exact search found no path (too few frames were refused before the search) */
    gh_warn("Did not successfully decode file %s, len = %d", utt, T);
    gh_align_report_fail(r->report, utt, GH_ALIGN_NO_PATH, "no path of %d frames through the graph has a finite cost",
                         T);
    r->num_err++;
    return;
  }
  gh_dec_path *p = (gh_dec_path *)cp;
  const float cost = p->graph_cost + p->ac_cost;
  const float like = -cost / r->acoustic_scale;
  r->num_done++;
  gh_align_report_ok(r->report);
  r->tot_like += like;
  r->frame_count += T;
  gh_log("Log-like per frame for utterance %s is %g over %d frames.", utt, (double)like / T, T);
  gh_ivector ali = {p->num_ilabels, p->ilabels};
  gh_writer_write(r->aw, utt, GH_OBJ_INT32_VECTOR, &ali);
  if (r->sw) {
    const float score = -cost;
    gh_writer_write(r->sw, utt, GH_OBJ_FLOAT, &score);
  }
  if (r->pw) {
    const float s = -1 / r->acoustic_scale;
    float *v = gh_malloc((size_t)(p->num_frame_ac ? p->num_frame_ac : 1) * sizeof(float));
    for (int32_t i = 0; i < p->num_frame_ac; ++i) v[i] = p->frame_ac[i] * s;
    gh_vector vec = {p->num_frame_ac, v};
    gh_writer_write(r->pw, utt, GH_OBJ_VECTOR, &vec);
    free(v);
  }
}

/* What lib/decoder's decoder found for one utterance (the searches run on
 * the OpenMP threads; the logs, the report and the outputs follow in the
 * utterances' order). */
typedef struct {
  int ok, retried, exact_ok, has_path;
  int64_t tokens;
  gh_dec_path p;
} outcome;

/* An utterance read and checked, waiting for its block's scores. */
typedef struct {
  char *key;
  gh_dec_graph g;
  int32_t T;
  int64_t row; /* its first row in the block */
} pending;

/* The search of every mode and the block of utterances before it. */
typedef struct {
  results *res;
  gh_block_scorer sc;
  pending *q;
  int32_t n, cap;
  gh_aligner *al; /* the batched exact aligner, or NULL: the one-utterance decoder */
  gh_decoder **dec; /* one per OpenMP thread */
  int32_t ndec;
  outcome *out;   /* [cap_out] the block's decoder results */
  int32_t cap_out;
  gh_dec_opts dopts;
  int exact;
  float beam, retry_beam, acoustic_scale;
  int32_t P, num_tids;
  const int32_t *id2pdf;
  gh_align_report *report;
  int64_t num_retry, num_tokens;
  double t_decode;
} search;

/* The searches of one utterance on its loglikes LL [T x P] with decoder dec:
 * --beam, then --retry-beam; on failure an exact search over the same scores
 * tells "beam" from "no path". */
static void decode_one(const search *s, gh_decoder *dec, const gh_dec_graph *g, const float *LL, int32_t T,
                       const char *utt, outcome *o) {
  gh_dec_opts dopts = s->dopts;
  memset(o, 0, sizeof *o);
  gh_decoder_reset(dec);
  dopts.beam = s->exact ? GH_DEC_EXACT : s->beam;
  o->ok = gh_decoder_decode(dec, g, &dopts, LL, T, s->P, s->id2pdf, s->num_tids, s->acoustic_scale, utt);
  if (!o->ok && !s->exact && s->retry_beam != 0.0f) {
    o->retried = 1;
    dopts.beam = s->retry_beam;
    o->ok = gh_decoder_decode(dec, g, &dopts, LL, T, s->P, s->id2pdf, s->num_tids, s->acoustic_scale, utt);
  }
  o->tokens = gh_decoder_num_tokens(dec);
  if (!o->ok) {
    if (!s->exact) {
      gh_decoder_reset(dec);
      dopts.beam = GH_DEC_EXACT;
      o->exact_ok = gh_decoder_decode(dec, g, &dopts, LL, T, s->P, s->id2pdf, s->num_tids, s->acoustic_scale, utt);
    }
    return;
  }
  o->has_path = gh_decoder_best_path(dec, &o->p);
}

/* Kaldi's lines, the report and the outputs of one decoded utterance. */
static void finish_one(search *s, const char *utt, const gh_dec_graph *g, int32_t T, outcome *o) {
  results *res = s->res;
  s->num_tokens += o->tokens;
  if (o->retried) {
    s->num_retry++;
    gh_warn("Retrying utterance %s with beam %g", utt, s->retry_beam);
  }
  if (!o->ok) {
    gh_warn("Did not successfully decode file %s, len = %d", utt, T);
    int32_t min_frames = -1;
    const gh_align_failure why = gh_align_diagnose(g, T, o->exact_ok, &min_frames);
    gh_align_report *report = s->report;
    if (why == GH_ALIGN_TOO_FEW_FRAMES)
      gh_align_report_fail(report, utt, why, "the transcript needs at least %d frames, the features have %d",
                           min_frames, T);
    else if (why == GH_ALIGN_BEAM && s->retry_beam != 0.0f)
      gh_align_report_fail(report, utt, why, "no final state within beam %g (retry beam %g); --exact aligns it",
                           s->beam, s->retry_beam);
    else if (why == GH_ALIGN_BEAM)
      gh_align_report_fail(report, utt, why, "no final state within beam %g (no --retry-beam); --exact aligns it",
                           s->beam);
    else if (min_frames < 0)
      gh_align_report_fail(report, utt, why, "no final state can be reached from the graph's start");
    else
      gh_align_report_fail(report, utt, why, "no path of %d frames through the graph has a finite cost", T);
    res->num_err++;
    return;
  }
  if (!o->has_path) {
    gh_warn("Error getting best path from decoder (likely a bug)");
    gh_align_report_fail(s->report, utt, GH_ALIGN_NO_PATH, "no best path");
    res->num_err++;
    return;
  }
  write_result(res, utt, T, &o->p);
  gh_dec_path_free(&o->p);
}

/* Scores the block's utterances in one backend call, then searches each in
 * order (the batched exact aligner queues them: its results come back
 * through write_result in the same order). */
static void flush_block(search *s) {
  if (s->n == 0) return;
  const float *LL = gh_block_scorer_score_staged(&s->sc, NULL);
  const int32_t n = s->n;
  if (!s->al) { /* one decoder per thread; every utterance's result is its own, whatever the threads */
    if (n > s->cap_out) {
      s->cap_out = n;
      s->out = gh_realloc(s->out, (size_t)n * sizeof *s->out);
    }
    const double t0 = gh_seconds();
#pragma omp parallel for schedule(dynamic, 1) num_threads(s->ndec)
    for (int32_t i = 0; i < n; ++i)
      decode_one(s, s->dec[omp_get_thread_num()], &s->q[i].g, LL + s->q[i].row * s->P, s->q[i].T, s->q[i].key,
                 &s->out[i]);
    s->t_decode += gh_seconds() - t0;
  }
  for (int32_t i = 0; i < n; ++i) {
    pending *x = &s->q[i];
    if (s->al)
      gh_aligner_add(s->al, x->key, &x->g, LL + x->row * s->P, x->T);
    else
      finish_one(s, x->key, &x->g, x->T, &s->out[i]);
    gh_dec_graph_free(&x->g);
    free(x->key);
  }
  s->n = 0;
}

/* Queues an utterance (graph moved, frames X [T x D] copied), scoring the
 * block first when it would not fit. */
static void queue_utt(search *s, const char *utt, gh_dec_graph *g, const float *X, int32_t T) {
  if (!gh_block_scorer_fits(&s->sc, T)) flush_block(s);
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 64;
    s->q = gh_realloc(s->q, (size_t)s->cap * sizeof *s->q);
  }
  pending *x = &s->q[s->n++];
  x->key = gh_strdup(utt);
  x->g = *g;
  memset(g, 0, sizeof *g);
  g->start = -1;
  x->T = T;
  x->row = gh_block_scorer_stage(&s->sc, X, T);
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  float beam = 200.0f, retry_beam = 0.0f, acoustic_scale = 1.0f, transition_scale = 1.0f, self_loop_scale = 1.0f;
  int careful = 0, binary = 1, exact = 0, batch_size = 256, ckpt_interval = 0, fail_on_error = 0;
  float max_bp_mb = 1024.0f;
  int64_t block_frames = 65536;
  const char *per_frame_wspec = "", *report_wx = "";
  gh_opts *po = gh_opts_new(usage);
  gh_opts_float(po, "beam", &beam, "Decoding beam used in alignment (0: no pruning, as --exact)");
  gh_opts_float(po, "retry-beam", &retry_beam, "Decoding beam for second try at alignment");
  gh_opts_bool(po, "careful", &careful,
               "If true, do 'careful' alignment, which is better at detecting alignment failure (involves "
               "loop to start of decoding graph).");
  gh_opts_bool(po, "exact", &exact,
               "Exact Viterbi: no pruning (--beam and --retry-beam ignored); never fails for lack of beam");
  gh_opts_int(po, "batch-size", &batch_size,
              "Exact mode: utterances aligned together on the device (0: one at a time by lib/decoder's "
              "decoder on the CPU)");
  gh_opts_float(po, "max-bp-memory", &max_bp_mb,
                "Exact mode: MB of back-pointers per utterance before the aligner keeps checkpoints every "
                "K frames instead (memory O(sqrt(T) states); 0: no limit)");
  gh_opts_int(po, "checkpoint-interval", &ckpt_interval,
              "Exact mode: checkpoint every this many frames whatever the memory (0: by --max-bp-memory)");
  gh_opts_int64(po, "block-frames", &block_frames,
                "Frames of consecutive utterances whose GMM log-likelihoods are computed in one backend call "
                "(memory: this many frames' features and log-likelihoods; a longer utterance goes alone)");
  gh_opts_float(po, "transition-scale", &transition_scale, "Transition-probability scale [relative to acoustics]");
  gh_opts_float(po, "acoustic-scale", &acoustic_scale, "Scaling factor for acoustic likelihoods");
  gh_opts_float(po, "self-loop-scale", &self_loop_scale,
                "Scale of self-loop versus non-self-loop log probs [relative to acoustics]");
  gh_opts_string(po, "write-per-frame-acoustic-loglikes", &per_frame_wspec,
                 "Wspecifier for table of vectors containing the acoustic log-likelihoods per frame for each "
                 "utterance. E.g. ark:foo/per_frame_logprobs.1.ark");
  gh_opts_string(po, "failure-report", &report_wx,
                 "File of the utterances not aligned, one \"<key> <reason> <detail>\" line each (reasons: "
                 "no-features, no-graph, too-few-frames, no-path, beam)");
  gh_opts_bool(po, "fail-on-error", &fail_on_error,
               "Exit with status 1 if any utterance was not aligned (default: skip and count, as Kaldi)");
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode (tables without ,t or ,b)");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPTS_BOTH);
  const int nargs = gh_opts_parse(po, argc, argv);
  if (nargs < 4 || nargs > 5) gh_opts_usage_exit(po);
  const char *model_rx = gh_opts_arg(po, 0), *fst_rspec = gh_opts_arg(po, 1), *feats_rspec = gh_opts_arg(po, 2),
             *ali_wspec = gh_opts_arg(po, 3), *scores_wspec = nargs == 5 ? gh_opts_arg(po, 4) : "";
  if (beam < 0.0f || retry_beam < 0.0f) gh_die("Beams do not make sense: beam %g, retry-beam %g", beam, retry_beam);
  if (beam == 0.0f) exact = 1;
  if (!exact && retry_beam != 0.0f && retry_beam <= beam)
    gh_die("Beams do not make sense: beam %g, retry-beam %g", beam, retry_beam);
  if (!(acoustic_scale > 0.0f)) gh_die("--acoustic-scale must be > 0 (got %g)", acoustic_scale);
  if (block_frames < 1) gh_die("--block-frames must be >= 1 (got %lld)", (long long)block_frames);
  if (batch_size < 0 || ckpt_interval < 0 || !(max_bp_mb >= 0.0f))
    gh_die("--batch-size, --checkpoint-interval and --max-bp-memory must be >= 0 (got %d, %d, %g)", batch_size,
           ckpt_interval, max_bp_mb);

  gh_gmm_set model;
  gh_gmm_set_read(model_rx, &model);
  if (!model.trans) gh_die("%s: not a Kaldi .mdl (no TransitionModel before the GMMs)", model_rx);
  gh_gmm_set_contract_check(&model, model_rx);
  const gh_transition_model *tm = model.trans;
  if (tm->num_pdfs > model.num_pdfs)
    gh_die("%s: the TransitionModel uses %d pdfs but the model has %d GMMs", model_rx, tm->num_pdfs, model.num_pdfs);
  gh_device_opts_begin(&dev);

  float *tlp = gh_transition_scaled_log_probs(tm, transition_scale, self_loop_scale);
  const int add_tprobs = !(transition_scale == 0.0f && self_loop_scale == 0.0f);
  gh_seq_reader *fr = gh_seq_reader_open(fst_rspec, GH_OBJ_FST);
  gh_rand_reader *feats = gh_rand_reader_open(feats_rspec, GH_OBJ_MATRIX);
  gh_writer *aw = gh_writer_open_binary(ali_wspec, binary);
  gh_writer *sw = scores_wspec[0] ? gh_writer_open_binary(scores_wspec, binary) : NULL;
  gh_writer *pw = per_frame_wspec[0] ? gh_writer_open_binary(per_frame_wspec, binary) : NULL;
  gh_align_report *report = gh_align_report_open(report_wx);
  gh_backend *be = gh_device_opts_end(&dev);
  gh_dev_model *dm = be->ops->gmm->model_upload(be, &model);

  gh_dec_opts dopts;
  gh_dec_opts_default(&dopts);
  results res = {aw, sw, pw, report, acoustic_scale, 0, 0, 0, 0.0};
  gh_aligner *al = NULL;
  if (exact && batch_size > 0) {
    const gh_aligner_opts ao = {batch_size, (int64_t)1 << 28, ckpt_interval, (int64_t)(max_bp_mb * 1048576.0)};
    al = gh_aligner_new(be, &ao, model.num_pdfs, tm->id2pdf, tm->num_tids, acoustic_scale, write_result, &res);
  }
  search srch = {0};
  srch.res = &res;
  gh_block_scorer_init(&srch.sc, be, dm, model.dim, model.num_pdfs, block_frames);
  srch.al = al;
  srch.ndec = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
  srch.dec = gh_malloc(sizeof(gh_decoder *) * (size_t)srch.ndec);
  for (int32_t k = 0; k < srch.ndec; ++k) srch.dec[k] = gh_decoder_new();
  srch.dopts = dopts;
  srch.exact = exact;
  srch.beam = beam;
  srch.retry_beam = retry_beam;
  srch.acoustic_scale = acoustic_scale;
  srch.P = model.num_pdfs;
  srch.num_tids = tm->num_tids;
  srch.id2pdf = tm->id2pdf;
  srch.report = report;
  double t_decode = 0.0;
  const double t_start = gh_seconds();
  for (; !gh_seq_reader_done(fr); gh_seq_reader_next(fr)) {
    const char *utt = gh_seq_reader_key(fr);
    const gh_matrix *m = gh_rand_reader_value(feats, utt);
    if (!m) {
      flush_block(&srch); /* the log and the report in the utterances' order */
      res.num_err++;
      gh_warn("No features for utterance %s", utt);
      gh_align_report_fail(report, utt, GH_ALIGN_NO_FEATURES, "no entry in %s", feats_rspec);
      continue;
    }
    const gh_fst *f = gh_seq_reader_value(fr);
    if (m->rows == 0) {
      flush_block(&srch);
      gh_warn("Zero-length utterance: %s", utt);
      gh_align_report_fail(report, utt, GH_ALIGN_NO_FEATURES, "zero frames in %s", feats_rspec);
      res.num_err++;
      continue;
    }
    if (m->cols != model.dim)
      gh_die("%s: utterance %s has features of dimension %d, the model %s wants %d", feats_rspec, utt, m->cols,
             model_rx, model.dim);
    gh_check_finite_matrix(m, feats_rspec, utt);
    if (f->start < 0) {
      flush_block(&srch);
      gh_warn("Empty decoding graph for %s", utt);
      gh_align_report_fail(report, utt, GH_ALIGN_NO_GRAPH, "empty graph (no start state) in %s", fst_rspec);
      res.num_err++;
      continue;
    }
    gh_dec_graph g;
    gh_dec_graph_from_fst(&g, f, careful);
    for (int64_t a = 0; a < g.num_arcs; ++a) {
      const int32_t l = g.arcs[a].ilabel;
      if (l >= 1 && l <= tm->num_tids) {
        if (add_tprobs) g.arcs[a].weight = g.arcs[a].weight + -tlp[l];
      } else if (l != 0) {
        gh_die("%s: graph of utterance %s: invalid symbol %d on the graph's input side (transition-ids of %s "
               "are 1 .. %d)", fst_rspec, utt, l, model_rx, tm->num_tids);
      }
    }
    const int32_t T = m->rows;
    if (al) { /* the exact search fails only for want of frames or of a path: both known before it */
      const int32_t min_frames = gh_dec_graph_min_frames(&g);
      if (min_frames < 0 || T < min_frames) {
        flush_block(&srch);
        gh_warn("Did not successfully decode file %s, len = %d", utt, T);
        if (min_frames < 0)
          gh_align_report_fail(report, utt, GH_ALIGN_NO_PATH, "no final state can be reached from the graph's start");
        else
          gh_align_report_fail(report, utt, GH_ALIGN_TOO_FEW_FRAMES,
                               "the transcript needs at least %d frames, the features have %d", min_frames, T);
        res.num_err++;
        gh_dec_graph_free(&g);
        continue;
      }
    }
    queue_utt(&srch, utt, &g, m->data, T);
  }
  flush_block(&srch);
  const double t_score = srch.sc.seconds;
  int64_t num_tokens = srch.num_tokens;
  const int64_t num_retry = srch.num_retry;
  t_decode = srch.t_decode;
  if (al) {
    gh_aligner_free(al, &t_decode);
    num_tokens = -1;
  }
  const int64_t num_done = res.num_done, num_err = res.num_err, frame_count = res.frame_count;
  gh_log("Overall log-likelihood per frame is %g over %lld frames.", res.tot_like / (double)frame_count,
         (long long)frame_count);
  gh_log("Retried %lld out of %lld utterances.", (long long)num_retry, (long long)(num_done + num_err));
  gh_log("Done %lld, errors on %lld", (long long)num_done, (long long)num_err);
  gh_align_report_close(report);
  const double t_all = gh_seconds() - t_start;
  gh_vlog(1, "%lld frames in %.2f s (%.0f frames/s): GMM log-likelihoods %.2f s on %s, decoding %.2f s (%.0f "
          "frames/s, %s, %lld tokens)", (long long)frame_count, t_all, t_all > 0 ? frame_count / t_all : 0.0,
          t_score, be->device_name, t_decode, t_decode > 0 ? frame_count / t_decode : 0.0,
          al ? "exact, batched" : exact ? "exact" : "beam", (long long)num_tokens);
  gh_writer_close(aw);
  if (sw) gh_writer_close(sw);
  if (pw) gh_writer_close(pw);
  gh_seq_reader_close(fr);
  gh_rand_reader_close(feats);
  for (int32_t k = 0; k < srch.ndec; ++k) gh_decoder_free(srch.dec[k]);
  free(srch.dec);
  free(srch.out);
  be->ops->gmm->model_free(be, dm);
  gh_backend_free(be);
  free(tlp);
  free(srch.q);
  gh_block_scorer_free(&srch.sc);
  gh_gmm_set_free(&model);
  gh_opts_free(po);
  if ((fail_on_error || num_done == 0) && num_err != 0) { /* the alignments and the report are kept */
    gh_commit_outputs();
    if (num_done == 0) gh_die("no utterance was aligned (%lld failed; outputs written)", (long long)num_err);
    gh_die("%lld of %lld utterances were not aligned (--fail-on-error; outputs written)", (long long)num_err,
           (long long)(num_done + num_err));
  }
  return num_done != 0 ? 0 : 1;
}
