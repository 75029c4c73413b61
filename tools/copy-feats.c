/* copy-feats -- copy feature matrices, possibly changing the format
 * (Kaldi's featbin/copy-feats.cc).  Compressed input (CM, CM2, CM3) and
 * double (DM) input are written as float matrices (FM); --compress=true
 * writes Kaldi's compressed matrices (lib/io/compressed-matrix.c), byte for
 * byte as Kaldi's copy-feats writes them. */
#include "base/gh-base.h"
#include "io/kaldi-io.h"
#include "base/opts.h"
#include "io/table.h"
#include "io/compressed-matrix.h"

static const char *usage =
    "Copy features [and possibly change format]\n"
    "Usage: copy-feats [options] <feature-rspecifier> <feature-wspecifier>\n"
    "or:   copy-feats [options] <feats-rxfilename> <feats-wxfilename>\n"
    "e.g.: copy-feats ark:- ark,scp:foo.ark,foo.scp\n"
    " or: copy-feats ark:foo.ark ark,t:txt.ark\n";

/* Non-table mode: one matrix from a file to a file. */
static void copy_one(const char *rx, const char *wx, int binary) {
  gh_istream *in = gh_istream_open(rx);
  if (!in) gh_die("%s", gh_last_error());
  gh_matrix m = {0, 0, NULL};
  gh_read_matrix(in, gh_read_binary_marker(in), &m);
  gh_check_finite_matrix(&m, rx, "");
  gh_istream_close(in);
  gh_ostream *out = gh_ostream_open(wx);
  gh_write_binary_marker(out, binary);
  gh_write_matrix(out, binary, &m);
  gh_ostream_close(out);
  gh_matrix_free(&m);
  gh_log("Copied features from %s to %s", rx, wx);
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  int binary = 1, compress = 0;
  int32_t compression_method = GH_COMPRESS_AUTO;
  const char *num_frames_wspecifier = "";
  gh_opts *po = gh_opts_new(usage);
  gh_opts_bool(po, "binary", &binary, "Binary-mode output (for a table wspecifier without ',t'/',b')");
  gh_opts_bool(po, "compress", &compress,
               "If true, write output in compressed form (only supported for tables: archive/script output)");
  gh_opts_int(po, "compression-method", &compression_method,
              "Only relevant if --compress=true; the method (1 through 7) to compress the matrix: 1 automatic "
              "(CM if more than 8 rows, else CM2), 2 speech feature (CM), 3 two-byte auto (CM2), 4 two-byte "
              "signed integer, 5 one-byte auto (CM3), 6 one-byte unsigned integer, 7 one-byte 0..1");
  gh_opts_string(po, "write-num-frames", &num_frames_wspecifier,
                 "Wspecifier to write length in frames of each utterance, e.g. 'ark,t:utt2num_frames'");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  if (compression_method < GH_COMPRESS_AUTO || compression_method > GH_COMPRESS_ONE_BYTE_ZERO_ONE)
    gh_die("--compression-method=%d is not a compression method (1 through 7)", compression_method);
  const char *rspec = gh_opts_arg(po, 0), *wspec = gh_opts_arg(po, 1);

  int in_table = gh_is_rspecifier(rspec), out_table = gh_is_wspecifier(wspec);
  if (in_table != out_table) gh_die("cannot mix archives and regular files (%s, %s)", rspec, wspec);
  if (!in_table) {
    if (compress) gh_die("--compress=true is only supported when writing tables (archive/script), not %s", wspec);
    if (*num_frames_wspecifier) gh_die("--write-num-frames is only supported when copying tables");
    copy_one(rspec, wspec, binary);
    gh_opts_free(po);
    return 0;
  }

  gh_seq_reader *reader = gh_seq_reader_open(rspec, GH_OBJ_MATRIX);
  gh_writer *writer = gh_writer_open_binary(wspec, binary);
  gh_writer *nf_writer = *num_frames_wspecifier ? gh_writer_open(num_frames_wspecifier) : NULL;
  int64_t num_done = 0;
  gh_cmatrix cm = {0};
  for (; !gh_seq_reader_done(reader); gh_seq_reader_next(reader)) {
    const char *key = gh_seq_reader_key(reader);
    const gh_matrix *m = gh_seq_reader_value(reader);
    gh_check_finite_matrix(m, rspec, key);
    if (compress) {
      if (!gh_cmatrix_compress(m, compression_method, &cm)) gh_die("%s, key '%s': %s", rspec, key, gh_last_error());
      gh_writer_write(writer, key, GH_OBJ_CMATRIX, &cm);
    } else {
      gh_writer_write(writer, key, GH_OBJ_MATRIX, m);
    }
    if (nf_writer) gh_writer_write(nf_writer, key, GH_OBJ_INT32, &m->rows);
    num_done++;
  }
  gh_seq_reader_close(reader);
  gh_writer_close(writer);
  gh_writer_close(nf_writer);
  gh_cmatrix_free(&cm);
  gh_log("Copied %lld feature matrices.", (long long)num_done);
  gh_opts_free(po);
  return num_done != 0 ? 0 : 1;
}
