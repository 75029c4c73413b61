/* compressed-matrix.h -- Kaldi's CompressedMatrix (matrix/compressed-matrix.cc):
 * lossy 1- or 2-byte storage of float matrices, written byte for byte as
 * Kaldi writes it ("CM", "CM2", "CM3"; doc/format.md).  Reading is in
 * kaldi-io.c (gh_read_matrix decodes all three).
 *
 * Formats (after the token, all little-endian): a 16-byte global header
 * {float min_value, float range, int32 num_rows, int32 num_cols}, then
 *  - CM  (format 1, speech features): per column 4 uint16 percentiles
 *    (0, 25, 75, 100) on the global [min, min + range] scale, then the
 *    column-major uint8 codes (0..64, 64..192, 192..255 interpolate
 *    piecewise-linearly between the percentiles);
 *  - CM2 (format 2): row-major uint16 codes, value = min + range * code / 65535;
 *  - CM3 (format 3): row-major uint8 codes, value = min + range * code / 255.
 * An empty matrix is written as "CM " and a zero header.
 */
#ifndef GH_COMPRESSED_MATRIX_H
#define GH_COMPRESSED_MATRIX_H
#include <stddef.h>
#include <stdint.h>
#include "base/matrix.h"
#include "io/kaldi-io.h"

/* Kaldi's CompressionMethod (copy-feats --compression-method): */
enum {
  GH_COMPRESS_AUTO = 1,             /* kAutomaticMethod: speech-feature (CM) if rows > 8, else two-byte auto (CM2) */
  GH_COMPRESS_SPEECH_FEATURE = 2,   /* kSpeechFeature: CM */
  GH_COMPRESS_TWO_BYTE_AUTO = 3,    /* kTwoByteAuto: CM2, range from the matrix's min and max */
  GH_COMPRESS_TWO_BYTE_SIGNED = 4,  /* kTwoByteSignedInteger: CM2, min -32768, range 65535 */
  GH_COMPRESS_ONE_BYTE_AUTO = 5,    /* kOneByteAuto: CM3, range from min and max */
  GH_COMPRESS_ONE_BYTE_UNSIGNED = 6,/* kOneByteUnsignedInteger: CM3, min 0, range 255 */
  GH_COMPRESS_ONE_BYTE_ZERO_ONE = 7 /* kOneByteZeroOne: CM3, min 0, range 1 */
};

/* A compressed matrix as stored: format 1 (CM), 2 (CM2) or 3 (CM3), the
 * global header, and the bytes that follow it on disk (nbytes of data:
 * CM: cols*8 + rows*cols, CM2: 2*rows*cols, CM3: rows*cols).  rows == 0
 * means the empty matrix (data NULL). */
typedef struct {
  int32_t format;
  float min_value, range;
  int32_t rows, cols;
  uint8_t *data;
  size_t nbytes;
} gh_cmatrix;

/* Compresses m with method (1..7) into c (previous contents freed) with
 * Kaldi's arithmetic (float, Kaldi's rounding constants and percentile
 * clamps), so the bytes equal Kaldi's.  Returns 0 with gh_last_error() set
 * for an unknown method or a matrix holding a NaN or an infinity (Kaldi
 * asserts); values outside an integer method's fixed range are clamped, as
 * in Kaldi. */
int gh_cmatrix_compress(const gh_matrix *m, int method, gh_cmatrix *c);
/* Decompresses (Kaldi's CopyToMat) into m, resized to rows x cols. */
void gh_cmatrix_decompress(const gh_cmatrix *c, gh_matrix *m);
void gh_cmatrix_free(gh_cmatrix *c);
/* Token on disk: "CM", "CM2" or "CM3". */
const char *gh_cmatrix_token(const gh_cmatrix *c);

/* Kaldi's CompressedMatrix::Write: binary: the token, the 16-byte header and
 * the data; text: the decompressed matrix as a text FM matrix (Kaldi writes
 * compressed matrices uncompressed in text mode).  The binary marker is the
 * caller's (gh_write_binary_marker), as for the other writers. */
void gh_write_cmatrix(gh_ostream *s, int binary, const gh_cmatrix *c);

#endif
