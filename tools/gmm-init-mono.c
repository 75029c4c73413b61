/* gmm-init-mono -- initialise a monophone model and its tree (Kaldi
 * gmmbin/gmm-init-mono.cc): one single-Gaussian pdf per (phone set,
 * pdf-class), every pdf a copy of the global mean and variance of the
 * training features (or mean 1, variance 1 without --train-feats); the tree
 * is Kaldi's monophone tree (lib/tree/context-dep.c), the transition
 * model comes from the topology (lib/hmm/transition.c).  With Kaldi's inputs
 * the model and tree are byte-identical to Kaldi's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "gmm/kaldi-gconst.h"
#include "hmm/transition.h"
#include "io/table.h"
#include "tree/context-dep.h"

static const char *usage =
    "Initialize monophone GMM.\n"
    "Usage:  gmm-init-mono <topology-in> <dim> <model-out> <tree-out> \n"
    "e.g.: \n"
    " gmm-init-mono topo 39 mono.mdl mono.tree\n";

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

/* Kaldi ReadSharedPhonesList: one set of phone ids per line, sorted. */
static int32_t read_sets(const char *rx, int32_t ***sets_out, int32_t **sizes_out) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("reading shared phones list: %s", gh_last_error());
  int32_t **sets = NULL, *sizes = NULL, n = 0, cap = 0;
  while (!gh_istream_eof(in)) {
    char *line = gh_read_line(in), *save = NULL;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      sets = gh_realloc(sets, (size_t)cap * sizeof(*sets));
      sizes = gh_realloc(sizes, (size_t)cap * sizeof(*sizes));
    }
    int32_t *s = NULL, k = 0, kcap = 0;
    for (char *tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
      char *end;
      long v = strtol(tok, &end, 10);
      if (*end || v <= 0 || v > GH_MAX_PHONE)
        gh_die("%s: bad line %d in shared phones list: '%s' is not a phone id", rx, n + 1, gh_printable_token(tok));
      if (k == kcap) s = gh_realloc(s, (size_t)(kcap = kcap ? 2 * kcap : 16) * sizeof(int32_t));
      s[k++] = (int32_t)v;
    }
    if (k == 0) gh_die("%s: line %d of the shared phones list is empty", rx, n + 1);
    qsort(s, (size_t)k, sizeof(int32_t), cmp_i32);
    for (int32_t i = 1; i < k; ++i)
      if (s[i] == s[i - 1]) gh_die("%s: bad line %d in shared phones list (repeated phone %d)", rx, n + 1, s[i]);
    sets[n] = s;
    sizes[n++] = k;
  }
  gh_istream_close(in);
  *sets_out = sets;
  *sizes_out = sizes;
  return n;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  const char *train_feats = "", *shared_rx = "";
  float perturb = 0.0f;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_string(po, "train-feats", &train_feats, "rspecifier for training features [used to set mean and variance]");
  gh_opts_string(po, "shared-phones", &shared_rx,
                 "rxfilename containing, on each line, a list of phones whose pdfs should be shared.");
  gh_opts_float(po, "perturb-factor", &perturb, "Perturb the means using this fraction of standard deviation.");
  if (gh_opts_parse(po, argc, argv) != 4) gh_opts_usage_exit(po);
  const char *topo_rx = gh_opts_arg(po, 0), *dim_s = gh_opts_arg(po, 1);
  const char *model_wx = gh_opts_arg(po, 2), *tree_wx = gh_opts_arg(po, 3);
  char *end;
  long dim = strtol(dim_s, &end, 10);
  if (*end || dim <= 0 || dim >= 10000) gh_die("bad feature dimension '%s' (expected 1..9999)", dim_s);
  if (perturb != 0.0f) gh_die("--perturb-factor is not supported (Kaldi's random perturbation)");

  float *inv_var = gh_malloc((size_t)dim * sizeof(float)), *mean = gh_malloc((size_t)dim * sizeof(float));
  for (long d = 0; d < dim; ++d) inv_var[d] = mean[d] = 1.0f;
  if (*train_feats) {
    /* Kaldi: double statistics, scaled by 1/count, var = E[x^2] - mean^2. */
    double count = 0, *ss = gh_calloc((size_t)dim, sizeof(double)), *s = gh_calloc((size_t)dim, sizeof(double));
    gh_seq_reader *r = gh_seq_reader_open(train_feats, GH_OBJ_MATRIX);
    for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
      const gh_matrix *m = gh_seq_reader_value(r);
      if (m->cols != dim)
        gh_die("%s, key '%s': features have dimension %d, expected %ld", train_feats, gh_seq_reader_key(r), m->cols,
               dim);
      for (int32_t t = 0; t < m->rows; ++t) {
        const float *x = m->data + (int64_t)t * m->cols;
        count += 1.0;
        for (long d = 0; d < dim; ++d) ss[d] += (double)x[d] * (double)x[d];
        for (long d = 0; d < dim; ++d) s[d] += (double)x[d];
      }
    }
    gh_seq_reader_close(r);
    if (count == 0) gh_die("%s: no features were seen.", train_feats);
    double scale = 1.0 / count;
    for (long d = 0; d < dim; ++d) {
      ss[d] *= scale;
      s[d] *= scale;
    }
    for (long d = 0; d < dim; ++d) ss[d] += -1.0 * s[d] * s[d];
    for (long d = 0; d < dim; ++d)
      if (ss[d] <= 0.0) gh_die("%s: bad variance %g in dimension %ld", train_feats, ss[d], d);
    for (long d = 0; d < dim; ++d) {
      inv_var[d] = (float)(1.0 / ss[d]);
      mean[d] = (float)s[d];
    }
    free(ss);
    free(s);
  }

  gh_transition_model *topo = gh_topology_read(topo_rx);
  int32_t max_phone = topo->phones[topo->num_phones - 1];
  int32_t *ncls = gh_calloc((size_t)max_phone + 1, sizeof(int32_t));
  for (int32_t i = 0; i < topo->num_phones; ++i)
    ncls[topo->phones[i]] = gh_topology_num_pdf_classes(topo, topo->phones[i]);
  int32_t **sets, *sizes, nsets;
  if (*shared_rx) {
    nsets = read_sets(shared_rx, &sets, &sizes);
  } else { /* each phone its own set */
    nsets = topo->num_phones;
    sets = gh_malloc((size_t)nsets * sizeof(*sets));
    sizes = gh_malloc((size_t)nsets * sizeof(*sizes));
    for (int32_t i = 0; i < nsets; ++i) {
      sets[i] = gh_malloc(sizeof(int32_t));
      sets[i][0] = topo->phones[i];
      sizes[i] = 1;
    }
  }
  gh_ctx_dep *ctx = gh_ctx_dep_monophone(nsets, sets, sizes, ncls, max_phone, *shared_rx ? shared_rx : topo_rx);
  int32_t num_pdfs = gh_ctx_dep_num_pdfs(ctx);

  /* One Gaussian (Kaldi DiagGmm::SetInvVarsAndMeans + ComputeGconsts). */
  gh_gmm g = {0};
  gh_gmm_init(&g, GH_COV_DIAG, 1, (int32_t)dim);
  g.weights[0] = 1.0f;
  for (long d = 0; d < dim; ++d) {
    g.inv_vars[d] = inv_var[d];
    g.means_invvars[d] = mean[d] * inv_var[d];
  }
  gh_gmm_kaldi_gconsts(&g, topo_rx);
  gh_gmm_set set = {0};
  set.dim = (int32_t)dim;
  set.num_pdfs = num_pdfs;
  set.form = GH_SET_AM;
  set.pdfs = gh_calloc((size_t)num_pdfs, sizeof(gh_gmm));
  for (int32_t p = 0; p < num_pdfs; ++p) gh_gmm_copy(&set.pdfs[p], &g);
  set.trans = gh_transition_init(topo, ctx, tree_wx);

  gh_gmm_set_write(model_wx, binary, &set);
  gh_ctx_dep_write(tree_wx, binary, ctx);
  gh_log("Initialized monophone model %s with %d pdfs, %d transition-ids; tree %s", model_wx, num_pdfs,
         set.trans->num_tids, tree_wx);

  gh_gmm_free(&g);
  gh_gmm_set_free(&set);
  gh_ctx_dep_free(ctx);
  gh_transition_free(topo);
  for (int32_t i = 0; i < nsets; ++i) free(sets[i]);
  free(sets);
  free(sizes);
  free(ncls);
  free(inv_var);
  free(mean);
  gh_opts_free(po);
  return 0;
}
