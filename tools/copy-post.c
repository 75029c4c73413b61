/* copy-post -- copy archives of posteriors, with optional scaling (Kaldi's
 * bin/copy-post.cc). */
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/table.h"

static const char *usage =
    "Copy archives of posteriors, with optional scaling\n"
    "\n"
    "Usage: copy-post <post-rspecifier> <post-wspecifier>\n"
    "e.g.: copy-post --scale=0.5 ark:1.post ark,t:-\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1;
  float scale = 1.0f;
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Write in binary mode (for a table wspecifier without ',t'/',b')");
  gh_opts_float(po, "scale", &scale, "If supplied, scale posteriors by this value");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);

  gh_seq_reader *reader = gh_seq_reader_open(gh_opts_arg(po, 0), GH_OBJ_POSTERIOR);
  gh_writer *writer = gh_writer_open_binary(gh_opts_arg(po, 1), binary);
  int64_t num_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader), num_done++) {
    gh_posterior *p = gh_seq_reader_value(reader);
    if (scale != 1.0f)
      for (int32_t i = 0; i < p->offsets[p->num_frames]; i++) p->weight[i] *= scale;
    gh_writer_write(writer, gh_seq_reader_key(reader), GH_OBJ_POSTERIOR, p);
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_log("Done copying %lld posteriors.", (long long)num_done);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
