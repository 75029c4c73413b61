/* frame-pdf.h -- the GMM E-step's input (kernels/backend.h data_upload,
 * acc_shrink, hmm_fb_pairs): weighted (frame, pdf) pairs, built by the
 * drivers (train/gmm-data.h) from alignments, posteriors or HMM
 * forward-backward, and read by every backend. */
#ifndef GH_FRAME_PDF_H
#define GH_FRAME_PDF_H
#include <stdint.h>

/* One weighted frame-to-pdf assignment for the E-step: frame index into the
 * feature block passed to accumulate(), pdf id, weight (posterior, or 1 for
 * an alignment / a global GMM). */
typedef struct { int32_t frame; int32_t pdf; float weight; } gh_frame_pdf;
/* A growable host array of pairs (hmm_fb_pairs appends to it): v[0 .. n),
 * room for cap.  Zero-initialise; free(v) when done. */
typedef struct { gh_frame_pdf *v; int64_t n, cap; } gh_pair_buf;
/* Room for `more` pairs after p->n (gh_realloc, doubling; dies when out of memory). */
void gh_pair_buf_reserve(gh_pair_buf *p, int64_t more);

#endif
