/* kaldi-io.h -- Kaldi's basic binary/text object encoding (io-funcs.h,
 * kaldi-matrix.cc, kaldi-vector.cc, compressed-matrix.cc), on top of one
 * input-stream type and one output-stream type.
 *
 * Input streams are zlib gzFile handles: plain files, gzip'd files, pipes and
 * stdin are all read through them (gzip decompression is transparent).
 * Output streams are stdio FILE*s (file via gh_tmpfile, stdout, or popen).
 *
 * Every reader dies (gh_die) on malformed input, with a message that names
 * the stream (its name, and the current key when the stream is read by a
 * table reader) and the byte offset.  See doc/format.md for the byte layouts.
 */
#ifndef GH_KALDI_IO_H
#define GH_KALDI_IO_H

#include <stdint.h>
#include <stdio.h>
#include "base/gh-base.h"
#include "base/matrix.h"

/* ---------------- input stream ---------------- */
typedef struct gh_istream gh_istream;

/* Open for reading.  rxfilename forms (Kaldi's): "-" or "" = stdin,
 * "cmd |" = popen(cmd), "file" = a file (gzip'd or plain), "file:123" is NOT
 * interpreted here (see gh_istream_open_offset).  Returns NULL and sets
 * gh_last_error() if it cannot be opened. */
gh_istream *gh_istream_open(const char *rxfilename);
/* For fuzzing harnesses: when set, every gh_istream_open / gh_ostream_open
 * first calls filter(name) and refuses the name (gh_istream_open: NULL with
 * "refused by the input filter"; gh_ostream_open: dies) when it returns 0,
 * so a fuzzed scp line cannot run "cmd |" or read stdin.  NULL = allow all. */
void gh_io_set_filter(int (*filter)(const char *name));
/* Open a file and seek to byte offset (for scp "file.ark:offset"). */
gh_istream *gh_istream_open_offset(const char *filename, int64_t offset);
/* Move to absolute byte offset (uncompressed bytes for gzip input); cheap
 * when the target is inside the read-ahead buffer.  Returns 0 on failure
 * (pipes and stdin cannot seek backwards beyond the buffer). */
int gh_istream_seek(gh_istream *s, int64_t offset);
/* Input pipes ("cmd |"): when the command's output ends, the command is
 * reaped at once and a non-zero exit is an ERROR naming the stream and the
 * cause ("the input command exited with status 3", "was killed by signal
 * 9"), before any parse error of the truncated data; with the permissive
 * flag (Kaldi's "p" rspecifier option, set by the table readers) it is a
 * warning.  A command that does not exist exits 127 ("command not found").
 * Files: a read error, or gzip data that is corrupt (CRC) or truncated, is
 * an ERROR with the cause.  "-" when standard input was closed at start
 * (gh_std_closed) cannot be opened ("standard input is closed"). */
void gh_istream_set_permissive(gh_istream *s, int permissive);
/* Close.  A pipe whose output was not read to its end is read one more
 * buffer to see whether it ended (then its exit status counts as above);
 * a command still writing is stopped by SIGPIPE, which is not an error (the
 * reader stopped early: random access, or a tool that needs one object). */
void gh_istream_close(gh_istream *s);
/* Name used in error messages, and the current key (may be NULL). */
const char *gh_istream_name(const gh_istream *s);
void gh_istream_set_key(gh_istream *s, const char *key);
void gh_istream_set_name(gh_istream *s, const char *name); /* replaces the name */
/* Low-level byte access. peek returns next byte or -1 at EOF. */
int gh_istream_peek(gh_istream *s);
int gh_istream_getc(gh_istream *s);
/* Read exactly n bytes or die ("unexpected end of file"). */
void gh_istream_read(gh_istream *s, void *buf, size_t n);
/* Consumes the next n bytes and returns them in place, in the stream's own
 * buffer (no copy; not aligned; NULL when n is 0): valid until the next call
 * on s.  Dies at end of file.  The buffer grows to n when n is larger, so
 * callers bound n first (gh_istream_need). */
const void *gh_istream_view(gh_istream *s, size_t n);
int64_t gh_istream_tell(gh_istream *s);
/* Allocation budget: every reader calls this before allocating for a size
 * read from the input (count items of at least bytes_each bytes on disk,
 * e.g. rows*cols x 4 for "FM", n x 5 for a binary int32 vector), so a few
 * corrupt header bytes can never ask for more memory than the input holds.
 * Regular files: compared with the bytes left in the file; gzip'd input and
 * pipes: the bytes are read ahead (the memory used is bounded by the data
 * that really exists).  Dies with "<name>[, key 'k'], offset N: <what> needs
 * <nbytes> bytes, but only M are left in the file". */
void gh_istream_need(gh_istream *s, uint64_t count, uint64_t bytes_each, const char *what);
int gh_istream_eof(gh_istream *s);
/* Die with "<name>[, key 'k'], offset N: <msg>". */
void gh_istream_fail(gh_istream *s, const char *fmt, ...) GH_PRINTF(2, 3) GH_NORETURN;

/* Kaldi InitKaldiInputStream: consumes "\0B" if present; returns 1 if binary. */
int gh_read_binary_marker(gh_istream *s);
/* Reads the rest of the current line (the newline and a trailing CR are
 * dropped) into a buffer owned by the stream, valid until the next call on
 * that stream or its close; dies at end of file when nothing is left. */
char *gh_read_line(gh_istream *s);
/* Skips whitespace (text mode). */
void gh_skip_ws(gh_istream *s);

/* ---------------- basic types (io-funcs.h) ----------------
 * Binary: a size byte then the little-endian value (int32: 0x04 + 4 bytes,
 * float: 0x04 + 4 bytes, double: 0x08 + 8 bytes).  Text: the value as text
 * followed by a space.  Binary float readers accept a double on disk and vice
 * versa (as Kaldi does). */
int32_t gh_read_int32(gh_istream *s, int binary);
float gh_read_float(gh_istream *s, int binary);
double gh_read_double(gh_istream *s, int binary);
/* Tokens: a run of non-space chars followed by one space (binary) or
 * whitespace (text).  gh_read_token returns a static buffer (valid until the
 * next call).  gh_expect_token dies if the next token differs. */
const char *gh_read_token(gh_istream *s, int binary);
const char *gh_peek_token(gh_istream *s, int binary); /* does not consume */
void gh_expect_token(gh_istream *s, int binary, const char *tok);
/* A token read from a possibly corrupt file, made safe for a one-line error
 * message: non-printable bytes as \xNN, at most 40 characters ("..." after).
 * Returns a static buffer, valid until the next call. */
const char *gh_printable_token(const char *t);

/* A file of another kind than the one expected, in the one wording every
 * reader uses (tests pin it: test/bats/messages.bats):
 *   "<name>, offset N: not <want>: expected <tokens>, got '<tok>' (<is>)"
 * want: "a GMM model", "an HMM set", ...; tokens: what may start one
 * ("<HmmSet>"); tok: the token found.  <is> says what tok starts, when it
 * is a kind this toolkit reads ("that is GMM accumulators", "that is an
 * HMM set", "that is a GMM model", ...), or, for text that is no token at
 * all, "an archive or scp list? <want> is the first argument, e.g.
 * <example>" (example may be NULL: then no such hint).  Never returns. */
void gh_istream_fail_type(gh_istream *s, const char *want, const char *tokens, const char *tok,
                          const char *example) GH_NORETURN;

/* For an error opening a model or other single file (an rxfilename): if
 * `rx` looks like a table specifier ("ark:...", "scp:...", "ark,t:..."),
 * a hint that the arguments are probably swapped (the model comes first),
 * beginning with a space; else "".  The text lives in a static buffer. */
const char *gh_rspecifier_hint(const char *rx);
/* Kaldi ReadIntegerVector (one size byte, int32 count, raw int32s; text
 * "[ 1 2 3 ]").  Returns malloc'd array, *n = count. */
int32_t *gh_read_int32_vector_basic(gh_istream *s, int binary, int32_t *n);

/* ---------------- objects ----------------
 * Matrices (row-major): "FM "/"DM " (binary) or "[ rows ]" (text); also
 * reads compressed "CM ", "CM2 ", "CM3 " (binary only) and "FV"/"DV"-free
 * text.  gh_read_matrix gives float (double on disk is rounded),
 * gh_read_dmatrix double.  Readers do not check for NaN/Inf (tools call
 * gh_check_finite_matrix from table.h); they die (gh_istream_fail) on a bad
 * token, a negative size or a premature end of file. */
void gh_read_matrix(gh_istream *s, int binary, gh_matrix *m);
void gh_read_dmatrix(gh_istream *s, int binary, gh_dmatrix *m);
/* A float matrix without a copy, for readers that copy it elsewhere anyway
 * (gmm-score-gpu's batches): binary "FM" gives a view of the stream's buffer
 * (gh_istream_view: valid until the next call on s); every other encoding is
 * decoded into *scratch (freed first) and the view points at it. */
void gh_read_matrix_view(gh_istream *s, int binary, gh_matrix_view *v, gh_matrix *scratch);
void gh_read_vector(gh_istream *s, int binary, gh_vector *v);
void gh_read_dvector(gh_istream *s, int binary, gh_dvector *v);
/* Kaldi packed symmetric matrix (SpMatrix): "FP "/"DP " + size + n(n+1)/2
 * values, lower triangle row by row; text "[ a \n b c \n ... ]". */
void gh_read_packed(gh_istream *s, int binary, int32_t *n, float **data);
void gh_read_dpacked(gh_istream *s, int binary, int32_t *n, double **data);
/* Table-entry int32 vector (alignments): binary 0x04 + int32 n, then n x
 * (0x04 + int32); text "1 2 3" up to end of line. */
void gh_read_int32_vector(gh_istream *s, int binary, gh_ivector *v);
/* Posterior (vector<vector<pair<int32,float>>>): binary int32 T, per frame
 * int32 count then (int32 pdf, float weight) pairs with size bytes; text
 * "[ 3 1.0 ] [ 4 0.5 5 0.5 ]".  Returned as a flat CSR structure. */
void gh_read_posterior(gh_istream *s, int binary, gh_posterior *p);
/* vector<vector<int32>> (Kaldi BasicVectorVectorHolder, e.g. gselect lists):
 * binary int32 outer size, then per inner vector int32 size and its int32s
 * (each with its size byte); text one line "1 2 3 ; 4 5 ; " (";" ends an
 * inner vector). */
void gh_read_int32_vector_vector(gh_istream *s, int binary, gh_ivecvec *v);

/* ---------------- output stream ---------------- */
typedef struct gh_ostream gh_ostream;
/* wxfilename: "-" = stdout, "| cmd" = popen, else a file written through
 * gh_tmpfile (finished by gh_ostream_close, renamed into place with the
 * tool's other outputs at its successful exit: gh_commit_outputs).  Dies on
 * failure; "-" when standard output was closed at start is an error. */
gh_ostream *gh_ostream_open(const char *wxfilename);
/* Flush, close, check errors (and pipe exit status: "output pipe '| cmd':
 * the command exited with status 1"); finishes temp files (gh_tmpfile_commit).
 * Dies on any write error, with strerror ("No space left on device"). */
void gh_ostream_close(gh_ostream *s);
FILE *gh_ostream_fp(gh_ostream *s);
/* Dies if a write to s has failed (ferror): "<what>: error writing '<name>':
 * <strerror>" (e.g. "No space left on device"); what names the table and key. */
void gh_ostream_check(gh_ostream *s, const char *what);
const char *gh_ostream_name(const gh_ostream *s);

void gh_write_binary_marker(gh_ostream *s, int binary); /* "\0B" if binary */
void gh_write_int32(gh_ostream *s, int binary, int32_t v);
void gh_write_float(gh_ostream *s, int binary, float v);
void gh_write_double(gh_ostream *s, int binary, double v);
void gh_write_token(gh_ostream *s, int binary, const char *tok);
void gh_write_int32_vector_basic(gh_ostream *s, int binary, const int32_t *v, int32_t n);
/* Writers produce exactly Kaldi's bytes (binary) and Kaldi's text layout
 * (values printed with %g-style 7 significant digits as Kaldi does). */
void gh_write_matrix(gh_ostream *s, int binary, const gh_matrix *m);
void gh_write_dmatrix(gh_ostream *s, int binary, const gh_dmatrix *m);
void gh_write_vector(gh_ostream *s, int binary, const gh_vector *v);
void gh_write_dvector(gh_ostream *s, int binary, const gh_dvector *v);
void gh_write_packed(gh_ostream *s, int binary, int32_t n, const float *data);
void gh_write_dpacked(gh_ostream *s, int binary, int32_t n, const double *data);
void gh_write_int32_vector(gh_ostream *s, int binary, const gh_ivector *v);
void gh_write_posterior(gh_ostream *s, int binary, const gh_posterior *p);
void gh_write_int32_vector_vector(gh_ostream *s, int binary, const gh_ivecvec *v);

#endif
