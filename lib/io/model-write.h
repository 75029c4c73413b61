/* model-write.h -- the writers of Kaldi model and accumulator values
 * (GMMs, transition models, accumulators): one value, vector, matrix or
 * packed symmetric matrix in Kaldi's binary or text layout. */
#ifndef GH_MODEL_WRITE_H
#define GH_MODEL_WRITE_H
#include <stdint.h>
#include "io/kaldi-io.h"

/* Writers used for model and accumulator files.  Binary: exactly
 * gh_write_vector / gh_write_matrix / gh_write_packed / gh_write_float /
 * gh_write_double.  Text: Kaldi's layout (" [ v v ]\n", " [\n  row \n  row ]\n",
 * "[\n a \n b c ]\n", "v "), each value printed as Kaldi does ("%.7g") when
 * that reads back to the same float, otherwise with the fewest extra digits
 * that do (at most 9 for float, 17 for double), so a text model converts
 * back to binary byte-identically.  Where Kaldi's own text is exact, the
 * output is identical to Kaldi's. */
void gh_model_write_float(gh_ostream *out, int binary, float v);
void gh_model_write_double(gh_ostream *out, int binary, double v);
void gh_model_write_vector(gh_ostream *out, int binary, int32_t n, const float *v);
void gh_model_write_dvector(gh_ostream *out, int binary, int32_t n, const double *v);
void gh_model_write_matrix(gh_ostream *out, int binary, int32_t rows, int32_t cols, const float *m);
void gh_model_write_packed(gh_ostream *out, int binary, int32_t n, const float *p);

#endif
