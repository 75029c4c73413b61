/* subset-feats -- copy the first n feature matrices, or those whose keys a
 * list includes or excludes (Kaldi's featbin/subset-feats.cc). */
#include <stdlib.h>
#include <string.h>
#include "base/gh-base.h"
#include "base/opts.h"
#include "io/kaldi-io.h"
#include "io/table.h"

static const char *usage =
    "Copy a subset of features (by default, the first n feature files)\n"
    "Usually used where only a small amount of data is needed\n"
    "Note: if you want a specific subset, it's usually best to\n"
    "filter the original .scp file with utils/filter_scp.pl\n"
    "(possibly with the --exclude option).  The --include and --exclude\n"
    "options are mutually exclusive, and both cause --n to be ignored.\n"
    "Usage: subset-feats [options] <in-rspecifier> <out-wspecifier>\n"
    "e.g.: subset-feats --n=10 ark:- ark:-\n"
    "or:  subset-feats --include=include_uttlist ark:- ark:-\n"
    "or:  subset-feats --exclude=exclude_uttlist ark:- ark:-\n"
    "See also select-feats, subsample-feats\n";

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The first field of every line of a text file, sorted (for bsearch). */
static char **read_key_list(const char *rx, size_t *n) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("%s", gh_last_error());
  char **keys = NULL;
  size_t cap = 0;
  *n = 0;
  int64_t line_no = 0;
  while (!gh_istream_eof(in)) {
    char *line = gh_read_line(in);
    line_no++;
    char *save = NULL, *tok = strtok_r(line, " \t\r", &save);
    if (!tok) gh_die("%s: line %lld is empty (expected an utterance id)", rx, (long long)line_no);
    if (*n == cap) keys = gh_realloc(keys, (cap = cap ? 2 * cap : 64) * sizeof *keys);
    keys[(*n)++] = gh_strdup(tok);
  }
  gh_istream_close(in);
  if (*n) qsort(keys, *n, sizeof *keys, cmp_str);
  return keys;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int32_t n = 10;
  const char *include_rx = "", *exclude_rx = "";
  gh_opts *po = gh_opts_new(usage);
  gh_opts_int(po, "n", &n, "If nonnegative, copy the first n feature files.");
  gh_opts_string(po, "include", &include_rx,
                 "Text file, the first field of each line being interpreted as an utterance-id whose features "
                 "will be included");
  gh_opts_string(po, "exclude", &exclude_rx,
                 "Text file, the first field of each line being interpreted as an utterance-id whose features "
                 "will be excluded");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);
  int use_list = *include_rx || *exclude_rx;
  if (*include_rx && *exclude_rx) gh_die("should not have both --exclude and --include option");
  if (use_list && n != 10) gh_die("should not have both --%s and --n option", *include_rx ? "include" : "exclude");
  if (!use_list && n <= 0) gh_die("invalid option --n=%d (should be at least 1)", n);

  size_t num_keys = 0;
  char **keys = use_list ? read_key_list(*include_rx ? include_rx : exclude_rx, &num_keys) : NULL;
  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open(wspec);
  int64_t num_total = 0, num_done = 0;
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader), num_total++) {
    if (!use_list && num_done >= n) break;
    const char *key = gh_seq_reader_key(reader);
    if (use_list) {
      int listed = num_keys && bsearch(&key, keys, num_keys, sizeof *keys, cmp_str) != NULL;
      if (listed != (*include_rx != '\0')) continue;
    }
    gh_writer_write(writer, key, GH_OBJ_MATRIX, gh_seq_reader_value(reader));
    num_done++;
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  for (size_t i = 0; i < num_keys; ++i) free(keys[i]);
  free(keys);
  if (use_list) gh_log("Wrote %lld out of %lld utterances.", (long long)num_done, (long long)num_total);
  else gh_log("Copied the first %lld feature matrices.", (long long)num_done);
  gh_opts_free(po);
  return use_list && num_done == 0 ? 1 : 0;
}
