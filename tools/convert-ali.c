/* convert-ali -- convert alignments from one model and tree to another
 * (Kaldi bin/convert-ali.cc, ConvertAlignment in hmm/hmm-utils.cc; here
 * lib/hmm/hmm-utils.c): same topologies, no frame subsampling.  With the
 * same tree and model the alignments come out unchanged.  --phone-map
 * (Kaldi's ReadPhoneMap format) maps each phone before its window is formed;
 * a phone the map lacks is an error, as in Kaldi. */
#include <stdlib.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/hmm-utils.h"
#include "hmm/transition.h"
#include "hmm/tree-accu.h"
#include "io/table.h"
#include "tree/context-dep.h"

static const char *usage =
    "Convert alignments from one decision-tree/model to another\n"
    "Usage:  convert-ali  [options] <old-model> <new-model> <new-tree> "
    "<old-alignments-rspecifier> <new-alignments-wspecifier>\n"
    "e.g.: \n"
    " convert-ali old/final.mdl new/0.mdl new/tree ark:old/ali.1 ark:new/ali.1\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int32_t subsample = 1;
  int reorder = 1, repeat_frames = 0;
  const char *phone_map = "";
  gh_opts *po = gh_opts_new(usage);
  gh_opts_string(po, "phone-map", &phone_map,
                 "File name containing old->new phone mapping (each line is: old-integer-id new-integer-id)");
  gh_opts_bool(po, "reorder", &reorder,
               "True if you want the converted alignments to be 'reordered' versus the way they appear in the "
               "HmmTopology object");
  gh_opts_bool(po, "repeat-frames", &repeat_frames,
               "Only relevant when frame-subsampling-factor != 1 (not supported)");
  gh_opts_int(po, "frame-subsampling-factor", &subsample,
              "Can be used in converting alignments to reduced frame rates (only 1 is supported)");
  if (gh_opts_parse(po, argc, argv) != 5) gh_opts_usage_exit(po);
  if (subsample != 1) gh_die("--frame-subsampling-factor=%d is not supported (only 1)", subsample);
  const char *old_rx = gh_opts_arg(po, 0), *new_rx = gh_opts_arg(po, 1), *tree_rx = gh_opts_arg(po, 2);
  const char *rspec = gh_opts_arg(po, 3), *wspec = gh_opts_arg(po, 4);
  int32_t *map = NULL, map_size = 0;
  if (*phone_map) map = gh_read_phone_map(phone_map, &map_size);
  gh_transition_model *old_tm = gh_transition_read_file(old_rx), *new_tm = gh_transition_read_file(new_rx);
  gh_ctx_dep *ctx = gh_ctx_dep_read(tree_rx);
  if (gh_ctx_dep_num_pdfs(ctx) != new_tm->num_pdfs)
    gh_die("the tree %s has %d pdfs but the model %s uses %d: the tree does not belong to the model", tree_rx,
           gh_ctx_dep_num_pdfs(ctx), new_rx, new_tm->num_pdfs);
  gh_seq_reader *r = gh_seq_reader_open(rspec, GH_OBJ_INT32_VECTOR);
  gh_writer *w = gh_writer_open(wspec);
  gh_ivector out = {0, NULL};
  int64_t num_ok = 0, num_fail = 0;
  char err[512];
  for (; !gh_seq_reader_done(r); gh_seq_reader_next(r)) {
    const char *key = gh_seq_reader_key(r);
    const gh_ivector *ali = gh_seq_reader_value(r);
    gh_transition_check_alignment(old_tm, ali->data, ali->dim, rspec, key, old_rx);
    for (int32_t t = 0; map && t < ali->dim; ++t) {
      int32_t ph = gh_transition_tid2phone(old_tm, ali->data[t]);
      if (gh_map_phone(map, map_size, ph) < 0)
        gh_die("%s: the phone map has no entry for phone %d (in the alignment of %s in %s)", phone_map, ph, key,
               rspec);
    }
    gh_ivector_resize(&out, ali->dim);
    if (!gh_convert_alignment_map(old_tm, new_tm, ctx, map, map_size, ali->data, ali->dim, reorder, out.data, err,
                                  sizeof err)) {
      gh_warn("Could not convert alignment for key %s (%s: %s)", key, rspec, err);
      num_fail++;
      continue;
    }
    gh_writer_write(w, key, GH_OBJ_INT32_VECTOR, &out);
    num_ok++;
  }
  gh_seq_reader_close(r);
  gh_writer_close(w);
  gh_log("Succeeded converting alignments for %lld files, failed for %lld", (long long)num_ok, (long long)num_fail);
  gh_ivector_free(&out);
  free(map);
  gh_ctx_dep_free(ctx);
  gh_transition_free(old_tm);
  gh_transition_free(new_tm);
  gh_opts_free(po);
  return num_ok != 0 ? 0 : 1;
}
