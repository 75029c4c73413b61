/* gmm-init-model -- a model from a decision tree and its statistics (Kaldi
 * gmmbin/gmm-init-model.cc): the transition model from the tree and the
 * topology, one Gaussian per pdf from the tree statistics the tree maps to
 * it (lib/gmm/init-model.c), or, with an old tree and model, each pdf a copy
 * of the old pdf that shares most of its data.  With Kaldi's inputs the
 * model and the occupancies are byte-identical to Kaldi's. */
#include <stdint.h>
#include <stdlib.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "gmm/gmm.h"
#include "gmm/init-model.h"
#include "hmm/transition.h"
#include "io/kaldi-io.h"
#include "tree/context-dep.h"
#include "tree/tree-stats.h"

static const char *usage =
    "Initialize GMM from decision tree and tree stats\n"
    "Usage:  gmm-init-model [options] <tree-in> <tree-stats-in> <topo-file> <model-out> [<old-tree> <old-model>]\n"
    "e.g.: \n"
    "  gmm-init-model tree treeacc topo 1.mdl\n"
    "or (initializing GMMs with old model):\n"
    "  gmm-init-model tree treeacc topo 1.mdl prev/tree prev/30.mdl\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  double var_floor = 0.01;
  const char *occs_wx = "";
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write output in binary mode");
  gh_opts_string(po, "write-occs", &occs_wx, "File to write state occupancies to.");
  gh_opts_double(po, "var-floor", &var_floor, "Variance floor used while initializing Gaussians");
  int nargs = gh_opts_parse(po, argc, argv);
  if (nargs != 4 && nargs != 6) gh_opts_usage_exit(po);
  if (!(var_floor > 0)) gh_die("--var-floor=%g: must be positive", var_floor);
  const char *tree_rx = gh_opts_arg(po, 0), *stats_rx = gh_opts_arg(po, 1), *topo_rx = gh_opts_arg(po, 2);
  const char *model_wx = gh_opts_arg(po, 3);

  gh_ctx_dep *ctx = gh_ctx_dep_read(tree_rx);
  gh_tree_stats st;
  gh_tree_stats_read(stats_rx, &st);
  gh_log("Number of separate statistics is %d", st.num);
  if (st.num == 0 || st.dim < 0) gh_die("%s: no tree statistics", stats_rx);
  gh_transition_model *topo = gh_topology_read(topo_rx);
  gh_transition_model *tm = gh_transition_init(topo, ctx, tree_rx);
  {
    /* every pdf of the tree must belong to a phone of the topology: a tree
     * of another lang has pdfs of phones this one lacks */
    int32_t np = gh_ctx_dep_num_pdfs(ctx), unused = 0, first = -1;
    uint8_t *used = gh_calloc((size_t)np, 1);
    for (int32_t i = 0; i < tm->num_tuples; ++i) {
      if (tm->tuples[i].forward_pdf >= 0 && tm->tuples[i].forward_pdf < np) used[tm->tuples[i].forward_pdf] = 1;
      if (tm->tuples[i].self_loop_pdf >= 0 && tm->tuples[i].self_loop_pdf < np) used[tm->tuples[i].self_loop_pdf] = 1;
    }
    for (int32_t p = 0; p < np; ++p)
      if (!used[p]) unused++, first = first < 0 ? p : first;
    free(used);
    if (unused)
      gh_die("%d of the %d pdfs of the tree %s (the first: pdf %d) belong to no phone of the topology %s: the tree "
             "is of another lang",
             unused, np, tree_rx, first, topo_rx);
  }
  gh_gmm_set set;
  if (nargs == 4) {
    gh_init_am_from_tree_stats(&st, ctx, tm, (float)var_floor, stats_rx, &set);
  } else {
    const char *old_tree_rx = gh_opts_arg(po, 4), *old_model_rx = gh_opts_arg(po, 5);
    gh_ctx_dep *old_ctx = gh_ctx_dep_read(old_tree_rx);
    gh_gmm_set old;
    gh_gmm_set_read(old_model_rx, &old);
    if (gh_ctx_dep_num_pdfs(old_ctx) != old.num_pdfs)
      gh_die("the old tree %s has %d pdfs but the old model %s has %d: they do not belong together", old_tree_rx,
             gh_ctx_dep_num_pdfs(old_ctx), old_model_rx, old.num_pdfs);
    gh_init_am_from_old(&st, ctx, old_ctx, &old, (float)var_floor, stats_rx, &set);
    gh_gmm_set_free(&old);
    gh_ctx_dep_free(old_ctx);
  }
  set.trans = tm;
  /* both outputs are committed together at the end (gh_ostream_open: temp + rename) */
  gh_ostream *occ_out = NULL;
  if (*occs_wx) {
    gh_vector v = {0};
    gh_vector_resize(&v, set.num_pdfs);
    gh_tree_stats_pdf_occs(&st, ctx, stats_rx, v.data);
    occ_out = gh_ostream_open(occs_wx);
    gh_write_binary_marker(occ_out, binary);
    gh_write_vector(occ_out, binary, &v);
    gh_vector_free(&v);
  }
  gh_gmm_set_write(model_wx, binary, &set);
  if (occ_out) gh_ostream_close(occ_out);
  gh_log("Wrote model.");
  gh_gmm_set_free(&set);
  gh_transition_free(topo);
  gh_tree_stats_free(&st);
  gh_ctx_dep_free(ctx);
  gh_opts_free(po);
  return 0;
}
