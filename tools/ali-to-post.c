/* ali-to-post -- alignments to posteriors, each frame (index, 1.0)
 * (Kaldi's bin/ali-to-post.cc). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/table.h"

static const char *usage =
    "Convert alignments to posteriors.  This is simply a format change\n"
    "from integer vectors to Posteriors, which are vectors of lists of\n"
    "pairs (int, float) where the float represents the posterior.  The\n"
    "floats would all be 1.0 in this case.\n"
    "The posteriors will still be in terms of whatever integer index\n"
    "the input contained, which will be transition-ids if they came\n"
    "directly from decoding, or pdf-ids if they were processed by\n"
    "ali-to-pdf.\n"
    "Usage:  ali-to-post  [options] <alignments-rspecifier> <posteriors-wspecifier>\n"
    "e.g.:\n"
    " ali-to-post ark:1.ali ark:1.post\n"
    "See also: ali-to-pdf, copy-post\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_opts *po = gh_opts_new(usage);
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);
  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_INT32_VECTOR);
  gh_writer *writer = gh_writer_open(wspec);
  gh_posterior post = {0, NULL, NULL, NULL};
  int64_t num_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader), num_done++) {
    const gh_ivector *ali = gh_seq_reader_value(reader);
    gh_posterior_free(&post);
    int32_t T = ali->dim;
    post.num_frames = T;
    post.offsets = gh_malloc(((size_t)T + 1) * sizeof(int32_t));
    post.pdf = gh_malloc(((size_t)T + 1) * sizeof(int32_t));
    post.weight = gh_malloc(((size_t)T + 1) * sizeof(float));
    for (int32_t t = 0; t < T; ++t) {
      post.offsets[t] = t;
      post.pdf[t] = ali->data[t];
      post.weight[t] = 1.0f;
    }
    post.offsets[T] = T;
    gh_writer_write(writer, gh_seq_reader_key(reader), GH_OBJ_POSTERIOR, &post);
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_posterior_free(&post);
  gh_log("Converted %lld alignments.", (long long)num_done);
  gh_opts_free(po);
  return 0;
}
