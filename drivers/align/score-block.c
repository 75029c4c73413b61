/* score-block.c -- see score-block.h. */
#include "align/score-block.h"

#include <stdlib.h>
#include <string.h>

#include "base/gh-base.h"
#include "registry/registry.h"

void gh_block_scorer_init(gh_block_scorer *s, gh_backend *b, gh_dev_model *m, int32_t D, int32_t P,
                          int64_t block_frames) {
  memset(s, 0, sizeof *s);
  s->b = b;
  s->m = m;
  s->D = D;
  s->P = P;
  s->max_rows = GH_SCORE_BLOCK_FLOATS / (P > 0 ? P : 1);
  if (block_frames > 0 && block_frames < s->max_rows) s->max_rows = block_frames;
  if (s->max_rows < 1) s->max_rows = 1;
}

void gh_block_scorer_free(gh_block_scorer *s) {
  free(s->X);
  free(s->LL);
  s->X = s->LL = NULL;
  s->rows = s->capx = s->capl = 0;
}

int gh_block_scorer_fits(const gh_block_scorer *s, int64_t T) { return s->rows == 0 || s->rows + T <= s->max_rows; }

int64_t gh_block_scorer_stage(gh_block_scorer *s, const float *X, int32_t T) {
  const int64_t need = (s->rows + T) * s->D;
  if (need > s->capx) {
    s->capx = need > 2 * s->capx ? need : 2 * s->capx;
    s->X = gh_realloc(s->X, (size_t)s->capx * sizeof(float));
  }
  memcpy(s->X + s->rows * s->D, X, (size_t)T * s->D * sizeof(float));
  const int64_t row = s->rows;
  s->rows += T;
  return row;
}

static float *ll_buffer(gh_block_scorer *s, int64_t rows) {
  const int64_t need = rows * s->P;
  if (need > s->capl) {
    s->capl = need;
    s->LL = gh_realloc(s->LL, (size_t)(need ? need : 1) * sizeof(float));
  }
  return s->LL;
}

const float *gh_block_scorer_rows(gh_block_scorer *s, gh_dev_data *dd, const float *X, int32_t row0, int64_t rows) {
  if (rows > INT32_MAX) gh_die("internal: %lld rows scored in one call", (long long)rows);
  float *LL = ll_buffer(s, rows);
  const double t0 = gh_seconds();
  if (rows > 0) gh_backend_loglikes_rows(s->b, s->m, dd, X, s->D, row0, (int32_t)rows, LL, s->P, s->P);
  s->seconds += gh_seconds() - t0;
  return LL;
}

const float *gh_block_scorer_score_staged(gh_block_scorer *s, int64_t *rows) {
  const int64_t n = s->rows;
  const float *LL = gh_block_scorer_rows(s, NULL, s->X, 0, n);
  s->rows = 0;
  if (rows) *rows = n;
  return LL;
}
