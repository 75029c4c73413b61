/* table.h -- Kaldi Table readers and writers (util/kaldi-table.h).
 *
 * rspecifier: "[ark|scp][,opts]:rxfilename", opts from {t? no: b,t ignored on
 * read, s (sorted), cs (called sorted), p (permissive), o (once), bg
 * (ignored)}; the rxfilename may be "-" (stdin), "cmd |" (pipe) or a file,
 * gzip'd or not.  scp lines are "key rxfilename" where rxfilename may end in
 * ":offset" (byte offset of the object within an archive file).
 * wspecifier: "ark[,t|,b][,f|,nf][,p]:wxfilename", "scp:..." (not supported
 * for writing objects without archive: dies), "ark,scp[,t]:ark_wx,scp_wx"
 * (writes the archive and an scp that indexes it by byte offset).
 * wxfilename: "-" = stdout, "| cmd" = pipe, else file (temp + rename).
 *
 * Objects are passed as void* pointing at the struct named by gh_objtype
 * (int32_t for GH_OBJ_INT32; for GH_OBJ_TOKEN_VECTOR the void* is the char*
 * string itself, tokens separated by single spaces).
 * A reader owns the objects it returns; they stay valid until the next call
 * on that reader.  Readers die (gh_die) on malformed data, naming the
 * specifier, the file, the key and the offset.  Random-access lookups of a
 * missing key return NULL (the caller decides whether that is an error).
 */
#ifndef GH_TABLE_H
#define GH_TABLE_H
#include "io/kaldi-io.h"
#include "base/matrix.h"

typedef enum {
  GH_OBJ_MATRIX = 0,   /* gh_matrix: reads FM, DM, CM, CM2, CM3, text */
  GH_OBJ_DMATRIX,      /* gh_dmatrix */
  GH_OBJ_VECTOR,       /* gh_vector */
  GH_OBJ_DVECTOR,      /* gh_dvector */
  GH_OBJ_INT32_VECTOR, /* gh_ivector (alignments) */
  GH_OBJ_POSTERIOR,    /* gh_posterior */
  GH_OBJ_INT32,        /* int32_t (e.g. per-utterance pdf label) */
  GH_OBJ_TOKEN_VECTOR, /* text only: rest of line as a string (char*) */
  GH_OBJ_INT32_VECTOR_VECTOR, /* gh_ivecvec (Kaldi Int32VectorVector, gselect lists) */
  GH_OBJ_FLOAT,        /* float (Kaldi BaseFloat table, e.g. per-utterance averages) */
  GH_OBJ_MATRIX_VIEW,  /* gh_matrix_view (matrix.h), sequential readers only: a
                          binary FM matrix in place in the reader's input buffer
                          (no copy, no allocation), any other matrix decoded;
                          read-only, valid until the next call on the reader */
  GH_OBJ_CMATRIX,      /* gh_cmatrix (io/compressed-matrix.h), writers only: CM, CM2
                          or CM3 in binary; the decompressed FM matrix in text, as Kaldi */
  GH_OBJ_FST,          /* gh_fst (fst/fst.h): Kaldi's VectorFstHolder (training graphs,
                          fsts.JOB.gz): OpenFst binary without the "\0B" marker, or text */
  GH_OBJ_INT32_PAIR_VECTOR /* writers only: Kaldi Int32PairVector (ali-to-phones
                               --write-lengths) held as a gh_ivector of 2n ints,
                               pairs interleaved; text "a b ; c d \n" */
} gh_objtype;

/* ---- sequential reader ---- */
typedef struct gh_seq_reader gh_seq_reader;
/* Dies if the specifier is malformed or the file cannot be opened. */
gh_seq_reader *gh_seq_reader_open(const char *rspecifier, gh_objtype type);
int gh_seq_reader_done(gh_seq_reader *r);         /* 1 when no more entries */
const char *gh_seq_reader_key(gh_seq_reader *r);
void *gh_seq_reader_value(gh_seq_reader *r);      /* object of current entry */
void gh_seq_reader_next(gh_seq_reader *r);
void gh_seq_reader_close(gh_seq_reader *r);
const char *gh_seq_reader_spec(const gh_seq_reader *r);

/* ---- random-access reader ---- */
typedef struct gh_rand_reader gh_rand_reader;
gh_rand_reader *gh_rand_reader_open(const char *rspecifier, gh_objtype type);
int gh_rand_reader_has_key(gh_rand_reader *r, const char *key);
/* An archive (not scp) table: reads its remaining entries into memory now,
 * as the lookup of an absent key would, so that the lookups that follow
 * only search (hmm-train reads its transcripts on a thread of their own
 * while the feature index is read).  Dies as the lookups would (a duplicate
 * key, a read error).  No-op for scp tables (their values load per key). */
void gh_rand_reader_load_all(gh_rand_reader *r);
/* The same opening in the background: gh_rand_reader_open and
 * gh_rand_reader_load_all on a thread of their own, while the caller reads
 * something else (the trainers' transcripts or labels beside the feature
 * index, lib/train); gh_rand_reader_open_wait joins it and returns the
 * reader (*seconds, if not NULL: the thread's wall time).  Errors die from
 * that thread, one line (gh_die); where no thread can be made, the opening
 * is done at once. */
typedef struct gh_rand_reader_opening gh_rand_reader_opening;
gh_rand_reader_opening *gh_rand_reader_open_bg(const char *rspecifier, gh_objtype type);
gh_rand_reader *gh_rand_reader_open_wait(gh_rand_reader_opening *op, double *seconds);
/* NULL if the key is absent. */
void *gh_rand_reader_value(gh_rand_reader *r, const char *key);
/* A key twice in a table is an error naming the key and the table, as in
 * Kaldi's random-access readers: an scp list's keys are all checked when it
 * is opened; an archive's as it is read, and an archive file's entries after
 * the last key looked up are read (and dropped) by gh_rand_reader_close,
 * which dies on a duplicate there (stdin and "cmd |" are not read on: a
 * command may write forever, as Kaldi's readers allow).  Close the reader
 * before the tool's outputs commit. */
void gh_rand_reader_close(gh_rand_reader *r);
const char *gh_rand_reader_spec(const gh_rand_reader *r);

/* ---- writer ---- */
typedef struct gh_writer gh_writer;
gh_writer *gh_writer_open(const char *wspecifier);
/* Like gh_writer_open, but the encoding when the wspecifier has neither ",t"
 * nor ",b" is binary_default (1 binary, 0 text); for tools' --binary. */
gh_writer *gh_writer_open_binary(const char *wspecifier, int binary_default);
/* Dies on a key with whitespace or an empty key, or on a write error. */
void gh_writer_write(gh_writer *w, const char *key, gh_objtype type, const void *obj);
/* Flushes and commits (temp files renamed into place). */
void gh_writer_close(gh_writer *w);

/* Classify specifiers (for tools that accept either a table or a file). */
int gh_is_rspecifier(const char *s); /* starts with "ark" / "scp" + [,opts] + ':' */
int gh_is_wspecifier(const char *s);

/* Die with "<spec>, key '<key>': <what> at row r, col c" if m holds a NaN or
 * infinity.  Tools call this on every feature matrix they read. */
void gh_check_finite_matrix(const gh_matrix *m, const char *spec, const char *key);
/* Copies v's rows x cols floats into dst (aligned, [rows * cols]) and, in
 * the same pass, dies as gh_check_finite_matrix does if one is a NaN or an
 * infinity. */
void gh_matrix_view_copy_finite(const gh_matrix_view *v, float *dst, const char *spec, const char *key);

/* ---- archive index scan: parallel reading of plain binary archives ----
 * For readers that copy every float matrix somewhere else anyway
 * (gmm-score-gpu's batches) with several threads: one thread scans the
 * archive's keys and headers (small reads, the payloads skipped by offset),
 * other threads pread(2) the payloads where they belong
 * (gh_pread_floats_finite).  Only "ark[,opts]:FILE" where FILE is a regular,
 * uncompressed file; gh_ark_scan_open returns NULL for anything else (stdin,
 * pipes, gzip, scp) and the caller uses gh_seq_reader.  An entry that is not
 * a well-formed binary FM matrix whose payload lies inside the file (CM, DM,
 * text, a long key, a bad or truncated header) comes back with offset -1:
 * gh_ark_scan_decode reads it with the sequential reader's code, which
 * decodes it or dies with its usual message. */
typedef struct gh_ark_scan gh_ark_scan;
typedef struct {
  const char *key;  /* valid until the next call on the scan; NULL when offset is -1 */
  int64_t offset;   /* byte offset of the rows * cols floats in the file, or -1 (decode it) */
  int32_t rows, cols;
} gh_ark_entry;
gh_ark_scan *gh_ark_scan_open(const char *rspecifier); /* NULL: not a plain archive file */
int gh_ark_scan_fd(const gh_ark_scan *sc);              /* for pread; valid until close */
/* Bytes of the file after the entries scanned so far (file size at open:
 * a bound on what is left to read, for batch sizing). */
int64_t gh_ark_scan_remaining(const gh_ark_scan *sc);
const char *gh_ark_scan_spec(const gh_ark_scan *sc);
/* The next entry; 0 at the end of the archive. */
int gh_ark_scan_next(gh_ark_scan *sc, gh_ark_entry *e);
/* For an entry with offset -1: reads it as gh_seq_reader does (GH_OBJ_MATRIX_VIEW;
 * dies on malformed input), sets e->key and returns the matrix (valid until
 * the next call), or NULL when only whitespace was left. */
const gh_matrix_view *gh_ark_scan_decode(gh_ark_scan *sc, gh_ark_entry *e);
void gh_ark_scan_close(gh_ark_scan *sc);
/* Reads n floats at byte offset off of fd into dst (aligned) and checks them
 * finite in the same pass (256 KB at a time, checked while in cache).
 * Returns 0 when all are read and finite; 1 when one is not finite (*bad:
 * its index); -1 when the file ends first (errno 0) or a read fails. */
int gh_pread_floats_finite(int fd, int64_t off, float *dst, size_t n, size_t *bad);

/* An index of an "scp:" table of matrices whose entries are all binary FM
 * matrices ("\0BFM ", int32 rows and cols, rows*cols floats) at offsets
 * inside regular, uncompressed files: per entry its key, the file's
 * descriptor and the payload's offset and shape, read with one 15-byte
 * pread per entry (the payloads are not read), so that a caller can size
 * its buffer once and pread the payloads in parallel
 * (gh_pread_floats_finite).  gh_scp_index_open returns NULL -- and the
 * caller reads the table with gh_seq_reader, which decodes the entry or
 * dies with its usual message -- for anything else: not "scp:" of a regular
 * file (not stdin or a pipe: the fallback reads the list again), an entry
 * without an offset, a pipe, gzip, more than 256 files, a header of another
 * kind (CM, DM, text) or a payload past the end of its file.  A malformed
 * scp line dies as in gh_seq_reader. */
typedef struct {
  char *key;
  int fd;          /* shared among the entries of one file; closed by gh_scp_index_free */
  int64_t offset;  /* of the rows * cols floats */
  int32_t rows, cols;
} gh_scp_entry;
typedef struct {
  gh_scp_entry *e;
  int64_t n;
  int nfiles;
  int last_file;   /* the file of the last entry parsed (gh_scp_index_open looks there first) */
  char **paths;
  int *fds;
  int64_t *sizes;
} gh_scp_index;
gh_scp_index *gh_scp_index_open(const char *rspecifier);
void gh_scp_index_free(gh_scp_index *x);

#endif
