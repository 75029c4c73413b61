/* ali-to-pdf -- map alignments of transition-ids to (zero-based) pdf-ids
 * through a Kaldi transition model (Kaldi's bin/ali-to-pdf.cc; the model is
 * read by lib/hmm/transition.c). */
#include <string.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "hmm/transition.h"
#include "io/kaldi-io.h"
#include "io/table.h"

static const char *usage =
    "Converts alignments (containing transition-ids) to pdf-ids, zero-based.\n"
    "The model is a Kaldi model file that starts with a <TransitionModel>\n"
    "(e.g. final.mdl of a Kaldi recipe).\n"
    "Usage:  ali-to-pdf  [options] <model> <alignments-rspecifier> <pdfs-wspecifier>\n"
    "e.g.:\n"
    " ali-to-pdf 1.mdl ark:1.ali ark,t:-\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 3) gh_opts_usage_exit(po);
  const char *model_rx = gh_opts_arg(po, 0), *rspec = gh_opts_arg(po, 1), *wspec = gh_opts_arg(po, 2);

  gh_istream *ms = gh_istream_open(model_rx);
  if (!ms) gh_die("%s", gh_last_error());
  int binary = gh_read_binary_marker(ms);
  if (strcmp(gh_peek_token(ms, binary), "<TransitionModel>"))
    gh_istream_fail(ms, "expected a Kaldi model starting with <TransitionModel>, got '%s'",
                    gh_printable_token(gh_peek_token(ms, binary)));
  gh_transition_model *tm = gh_transition_read(ms, binary);
  gh_istream_close(ms);

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_INT32_VECTOR);
  gh_writer *writer = gh_writer_open(wspec);
  gh_ivector pdfs = {0, NULL};
  int64_t num_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader), num_done++) {
    const char *key = gh_seq_reader_key(reader);
    const gh_ivector *ali = gh_seq_reader_value(reader);
    gh_ivector_resize(&pdfs, ali->dim);
    for (int32_t t = 0; t < ali->dim; ++t) {
      int32_t tid = ali->data[t];
      if (tid < 1 || tid > tm->num_tids)
        gh_die("%s, key '%s': transition-id %d at frame %d is out of range [1, %d] for the model %s", rspec, key,
               tid, t, tm->num_tids, model_rx);
      pdfs.data[t] = tm->id2pdf[tid];
    }
    gh_writer_write(writer, key, GH_OBJ_INT32_VECTOR, &pdfs);
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_ivector_free(&pdfs);
  gh_transition_free(tm);
  gh_log("Converted %lld alignments to pdf sequences.", (long long)num_done);
  gh_opts_free(po);
  return 0;
}
