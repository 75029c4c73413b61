/* matrix.h -- the plain containers every part of gmmhmm shares.
 * All matrices are dense, row-major, with stride == cols.  A zero-sized
 * object has data == NULL.  Free with the matching gh_*_free (which leaves the
 * struct zeroed and may be called on a zeroed struct). */
#ifndef GH_MATRIX_H
#define GH_MATRIX_H
#include <stdint.h>

typedef struct { int32_t rows, cols; float *data; } gh_matrix;   /* float32 */
typedef struct { int32_t rows, cols; double *data; } gh_dmatrix; /* float64 */
/* rows x cols float32s, row-major, little-endian, at bytes (read-only, not
 * necessarily 4-byte aligned: copy with memcpy); NULL when empty.  A borrowed
 * view of a matrix as stored (gh_read_matrix_view). */
typedef struct { int32_t rows, cols; const void *bytes; } gh_matrix_view;
typedef struct { int32_t dim; float *data; } gh_vector;
typedef struct { int32_t dim; double *data; } gh_dvector;
typedef struct { int32_t dim; int32_t *data; } gh_ivector;

/* Posteriors of one utterance in CSR form: frame t owns entries
 * [offsets[t], offsets[t+1]) of pdf[] / weight[]; offsets has num_frames+1
 * elements.  This is Kaldi's Posterior (vector<vector<pair<int32,BaseFloat>>>). */
typedef struct {
  int32_t num_frames;
  int32_t *offsets;
  int32_t *pdf;
  float *weight;
} gh_posterior;

/* A vector of int32 vectors in CSR form: vector i owns data[offsets[i] ..
 * offsets[i+1]), offsets has num_vecs+1 elements.  Kaldi's
 * vector<vector<int32>> table entry (Int32VectorVectorWriter), e.g. the
 * Gaussian-selection lists of gmm-gselect (one list per frame). */
typedef struct {
  int32_t num_vecs;
  int32_t *offsets;
  int32_t *data;
} gh_ivecvec;

void gh_matrix_resize(gh_matrix *m, int32_t rows, int32_t cols);   /* zero-filled */
void gh_dmatrix_resize(gh_dmatrix *m, int32_t rows, int32_t cols); /* zero-filled */
void gh_vector_resize(gh_vector *v, int32_t dim);
void gh_dvector_resize(gh_dvector *v, int32_t dim);
void gh_ivector_resize(gh_ivector *v, int32_t dim);
void gh_matrix_free(gh_matrix *m);
void gh_dmatrix_free(gh_dmatrix *m);
void gh_vector_free(gh_vector *v);
void gh_dvector_free(gh_dvector *v);
void gh_ivector_free(gh_ivector *v);
void gh_posterior_free(gh_posterior *p);
void gh_ivecvec_free(gh_ivecvec *v);
/* Row pointer helpers. */
static inline float *gh_row(const gh_matrix *m, int32_t r) { return m->data + (int64_t)r * m->cols; }
static inline double *gh_drow(const gh_dmatrix *m, int32_t r) { return m->data + (int64_t)r * m->cols; }

/* Packed symmetric (Kaldi SpMatrix) indexing: lower triangle row by row,
 * element (i,j) with j <= i at i*(i+1)/2 + j. */
static inline int64_t gh_packed_index(int32_t i, int32_t j) {
  return i >= j ? (int64_t)i * ((int64_t)i + 1) / 2 + j : (int64_t)j * ((int64_t)j + 1) / 2 + i;
}
/* (in 64 bits throughout: a file's header may say n = 2^31 - 1, found by fuzz_models) */
static inline int64_t gh_packed_size(int32_t n) { return (int64_t)n * ((int64_t)n + 1) / 2; }

#endif
