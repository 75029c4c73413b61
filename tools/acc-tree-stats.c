/* acc-tree-stats -- accumulate the statistics of phonetic-context tree
 * building (Kaldi bin/acc-tree-stats.cc, hmm/tree-accu.cc): for every
 * (phone window, pdf-class) event of the aligned frames, count, sum of x and
 * sum of x squared (Kaldi's GaussClusterable), written as Kaldi's treeacc
 * file.  By default (--exact=true) frames are added in archive order on the
 * host (lib/hmm/tree-accu.c), so the sums are Kaldi's bit for bit and the
 * binary file is byte-identical to Kaldi's.  With --exact=false the events
 * are still found on the host, and the sums come from the --device
 * backend's E-step (kernels/backend.h accumulate): every distinct event is
 * a pdf of one Gaussian, each frame a (frame, event) pair of weight 1, so
 * the Gaussian's posterior is 1 and its occupancy, first- and second-order
 * accumulators are the event's count, sum of x and sum of x squared; the
 * backend sorts the pairs by event and sums each event's frames together
 * (double accumulators; fp32 products on GPUs).  The events are the same;
 * the sums agree with the exact ones within 1e-6 relative
 * (test/bats/tree.bats checks the CPU and OpenCL backends).  --phone-map
 * maps every phone before the events are formed, as Kaldi's
 * AccumulateTreeStats (--ci-phones then name mapped phones). */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/transition.h"
#include "hmm/tree-accu.h"
#include "io/table.h"
#include "gmm/gmm.h"
#include "train/device-opts.h"
#include "train/gmm-data.h"
#include "tree/tree-stats.h"

static const char *usage =
    "Accumulate statistics for phonetic-context tree building.\n"
    "Usage:  acc-tree-stats [options] <model-in> <features-rspecifier> <alignments-rspecifier> <tree-accs-out>\n"
    "e.g.: \n"
    " acc-tree-stats 1.mdl scp:train.scp ark:1.ali 1.tacc\n";

/* Appends an utterance's frames and (frame, event) pairs to d. */
static void add_frames(gh_data *d, int64_t *cap, const gh_matrix *m, const int32_t *ev) {
  if (d->dim <= 0) d->dim = m->cols;
  int64_t need = (int64_t)d->num_frames + m->rows;
  if (need > INT32_MAX) gh_die("acc-tree-stats --exact=false: more than 2^31 frames");
  if (need > *cap) {
    *cap = need > 2 * *cap ? need : 2 * *cap;
    d->feats = gh_realloc(d->feats, (size_t)*cap * (size_t)d->dim * sizeof(float));
    d->pairs = gh_realloc(d->pairs, (size_t)*cap * sizeof(gh_frame_pdf));
  }
  memcpy(d->feats + (int64_t)d->num_frames * d->dim, m->data, (size_t)m->rows * (size_t)m->cols * sizeof(float));
  for (int32_t t = 0; t < m->rows; ++t) {
    gh_frame_pdf *p = &d->pairs[d->num_pairs++];
    p->frame = d->num_frames + t;
    p->pdf = ev[t];
    p->weight = 1.0f;
    if (ev[t] > d->max_pdf) d->max_pdf = ev[t];
  }
  d->num_frames += m->rows;
  d->num_utts++;
  d->total_weight += m->rows;
}

/* The sums of every event from one E-step on backend be: a model of one
 * Gaussian (mean 0, variance 1) per event, so each frame's posterior is 1. */
static void device_sums(gh_backend *be, gh_tree_accu *acc, const gh_data *d) {
  int32_t ne = gh_tree_accu_num_events(acc), dim = d->dim;
  gh_gmm_set model = {dim, ne, gh_calloc((size_t)ne, sizeof(gh_gmm)), GH_SET_AM, NULL};
  for (int32_t e = 0; e < ne; ++e) {
    gh_gmm *g = &model.pdfs[e];
    gh_gmm_init(g, GH_COV_DIAG, 1, dim);
    g->weights[0] = 1.0f;
    for (int32_t k = 0; k < dim; ++k) g->inv_vars[k] = 1.0f;
    gh_gmm_compute_gconsts(g);
  }
  gh_accs_set accs;
  gh_data_estep(be, &model, d, &accs, NULL);
  for (int32_t e = 0; e < ne; ++e) {
    gh_gclust *c = gh_tree_accu_stats(acc, e);
    const gh_gmm_accs *a = &accs.pdfs[e];
    c->count = a->occupancy[0];
    memcpy(c->x, a->mean_accs, (size_t)dim * sizeof(double));
    memcpy(c->x2, a->var_accs, (size_t)dim * sizeof(double));
  }
  gh_accs_free(&accs);
  gh_gmm_set_free(&model);
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  float var_floor = 0.01f;
  const char *ci_str = "";
  int32_t context_width = 3, central_position = 1;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_float(po, "var-floor", &var_floor, "Variance floor for tree clustering.");
  gh_opts_string(po, "ci-phones", &ci_str,
                 "Colon-separated list of integer indices of context-independent phones.");
  const char *phone_map_rx = "";
  gh_opts_string(po, "phone-map", &phone_map_rx,
                 "File name containing old->new phone mapping (each line is: old-integer-id new-integer-id)");
  gh_opts_int(po, "context-width", &context_width, "Context window size.");
  gh_opts_int(po, "central-position", &central_position, "Central context-window position (zero-based)");
  int exact = 1;
  gh_opts_bool(po, "exact", &exact,
               "Accumulate on the host in archive order, bit for bit as Kaldi (false: the sums on the --device "
               "backend, events sorted by key, within 1e-6 relative)");
  gh_device_opts dev;
  gh_device_opts_register(po, &dev, GH_DEVICE_OPT);
  dev.precision = "fp32"; /* the E-step's GEMMs in full float precision on GPUs */
  if (gh_opts_parse(po, argc, argv) != 4) gh_opts_usage_exit(po);
  const char *model_rx = gh_opts_arg(po, 0), *feats_rspec = gh_opts_arg(po, 1);
  const char *ali_rspec = gh_opts_arg(po, 2), *accs_wx = gh_opts_arg(po, 3);

  gh_tree_accu_opts o = {context_width, central_position, var_floor, NULL, 0, NULL, 0, NULL};
  int32_t *ci = gh_parse_ci_phones(ci_str, &o.num_ci_phones);
  o.ci_phones = ci;
  int32_t *phone_map = NULL;
  if (*phone_map_rx) {
    phone_map = gh_read_phone_map(phone_map_rx, &o.phone_map_size);
    o.phone_map = phone_map;
    o.phone_map_name = phone_map_rx;
  }
  gh_transition_model *tm = gh_transition_read_file(model_rx);
  for (int32_t i = 0; i < o.num_ci_phones; ++i) {
    int in_model = ci[i] < tm->num_phone2idx && tm->phone2idx[ci[i]] >= 0, in_map = 0;
    for (int32_t k = 0; phone_map && k < o.phone_map_size && !in_map; ++k) in_map = phone_map[k] == ci[i];
    if (!in_model && !in_map)
      gh_die("--ci-phones=%s: phone %d is not in the model %s%s", ci_str, ci[i], model_rx,
             phone_map ? " nor among the phone map's new phones" : "");
  }

  gh_seq_reader *fr = gh_seq_reader_open(feats_rspec, GH_OBJ_MATRIX);
  gh_rand_reader *ar = gh_rand_reader_open(ali_rspec, GH_OBJ_INT32_VECTOR);
  gh_tree_accu *acc = NULL;
  int32_t dim = -1;
  gh_data dd; /* --exact=false: the frames and their (frame, event) pairs */
  gh_data_init(&dd, -1);
  int64_t frames_cap = 0;
  int32_t *evidx = NULL;
  int32_t evcap = 0;
  if (!exact) gh_device_opts_begin(&dev);
  int64_t num_done = 0, num_no_ali = 0, num_other = 0;
  for (; !gh_seq_reader_done(fr); gh_seq_reader_next(fr)) {
    const char *key = gh_seq_reader_key(fr);
    const gh_matrix *m = gh_seq_reader_value(fr);
    const gh_ivector *ali = gh_rand_reader_value(ar, key);
    if (!ali) {
      num_no_ali++;
      continue;
    }
    if (ali->dim != m->rows) {
      gh_warn("Alignments has wrong size %d vs. %d (utterance %s)", ali->dim, m->rows, key);
      num_other++;
      continue;
    }
    gh_check_finite_matrix(m, feats_rspec, key);
    if (!acc) {
      dim = m->cols;
      acc = gh_tree_accu_new(&o, dim);
    } else if (m->cols != dim) {
      gh_die_dim(feats_rspec, key, "features", m->cols, dim, "the earlier utterances");
    }
    gh_transition_check_alignment(tm, ali->data, ali->dim, ali_rspec, key, model_rx);
    int32_t unmapped = acc ? gh_tree_accu_unmapped_phone(acc, tm, ali->data, ali->dim) : 0;
    if (unmapped)
      gh_die("%s: the phone map has no entry for phone %d (in the alignment of %s in %s)", phone_map_rx, unmapped,
             key, ali_rspec);
    int ok;
    if (exact) {
      ok = gh_tree_accu_utterance(acc, tm, ali->data, ali->dim, m->data, m->cols);
    } else {
      if (m->rows > evcap) evidx = gh_realloc(evidx, (size_t)(evcap = m->rows) * sizeof(int32_t));
      ok = gh_tree_accu_events(acc, tm, ali->data, ali->dim, evidx);
      if (ok) add_frames(&dd, &frames_cap, m, evidx);
    }
    if (!ok) gh_warn("AccumulateTreeStats: alignment appears to be bad, not using it (utterance %s)", key);
    num_done++;
    if (num_done % 1000 == 0) gh_log("Processed %lld utterances.", (long long)num_done);
  }
  gh_seq_reader_close(fr);
  gh_rand_reader_close(ar);

  if (!exact) {
    gh_backend *be = gh_device_opts_end(&dev);
    if (acc && dd.num_frames > 0) device_sums(be, acc, &dd);
    gh_backend_free(be);
  }
  gh_data_free(&dd);
  free(evidx);
  gh_tree_stats stats;
  gh_tree_stats_init(&stats);
  if (acc) gh_tree_accu_take(acc, &stats);
  gh_log("Accumulated stats for %lld files, %lld failed due to no alignment, %lld failed for other reasons.",
         (long long)num_done, (long long)num_no_ali, (long long)num_other);
  gh_log("Number of separate stats (context-dependent states) is %d", stats.num);
  if (num_done == 0) gh_die("no utterance of %s had an alignment in %s", feats_rspec, ali_rspec);
  gh_tree_stats_write(accs_wx, binary, &stats);
  gh_tree_stats_free(&stats);
  gh_tree_accu_free(acc);
  gh_transition_free(tm);
  free(ci);
  free(phone_map);
  gh_opts_free(po);
  return 0;
}
