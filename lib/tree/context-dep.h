/* context-dep.h -- Kaldi's ContextDependency (tree/context-dep.{h,cc}): a
 * phonetic-context window of N phones with the central phone at position P
 * (monophone: N = 1, P = 0; triphone: N = 3, P = 1) and the EventMap that
 * maps (phone window, pdf-class) to a pdf-id.  This is the "tree" file of a
 * Kaldi recipe.
 *
 * On disk (Kaldi ContextDependency::Write):
 *   ContextDependency <N int32> <P int32> ToPdf <EventMap> EndContextDependency
 * (tokens without angle brackets; an older "ToLength <EventMap>" before ToPdf
 * is accepted on read and dropped, as Kaldi does).  Binary files start with
 * "\0B".  Read/write round trips are byte-identical.
 *
 * Typical use (a graph compiler or aligner):
 *   gh_ctx_dep *c = gh_ctx_dep_read("exp/mono/tree");
 *   int32_t window[3] = {left, phone, right};   // [N], 0 = no phone (edge)
 *   int32_t pdf;
 *   if (!gh_ctx_dep_compute(c, window, pdf_class, &pdf)) ... no pdf: error
 */
#ifndef GH_CONTEXT_DEP_H
#define GH_CONTEXT_DEP_H
#include <stdint.h>
#include "tree/event-map.h"

typedef struct {
  int32_t N;              /* context width, >= 1 */
  int32_t P;              /* central position, 0 <= P < N */
  gh_event_map *to_pdf;   /* owned */
} gh_ctx_dep;

/* Read a tree file (rxfilename as gh_istream_open: file, "-", "cmd |", .gz).
 * Dies with one line naming the file, the byte offset and what was wrong
 * (cannot open, wrong token, N/P out of range (N in [1, 100], 0 <= P < N),
 * malformed EventMap, no pdfs).  Warns about trailing data. */
gh_ctx_dep *gh_ctx_dep_read(const char *rxfilename);
/* Read from an open stream (after the binary marker). */
gh_ctx_dep *gh_ctx_dep_read_stream(gh_istream *in, int binary);
/* Write atomically ("\0B" marker if binary; gh_ostream_open: temp + rename;
 * "-" = stdout).  Dies on write errors. */
void gh_ctx_dep_write(const char *wxfilename, int binary, const gh_ctx_dep *c);
void gh_ctx_dep_write_stream(gh_ostream *out, int binary, const gh_ctx_dep *c);
void gh_ctx_dep_free(gh_ctx_dep *c);

/* Number of pdfs: 1 + the largest pdf-id in the tree (Kaldi NumPdfs). */
int32_t gh_ctx_dep_num_pdfs(const gh_ctx_dep *c);

/* Kaldi ContextDependency::Compute: window[N] phone ids (window[P] the
 * central phone, > 0; others >= 0, 0 = utterance edge), pdf_class >= 0.
 * Returns 1 and sets *pdf, or 0 when the tree gives no pdf for this context
 * (a phone or pdf-class the tree does not know). */
int gh_ctx_dep_compute(const gh_ctx_dep *c, const int32_t *window, int32_t pdf_class, int32_t *pdf);

/* Kaldi ContextDependency::GetPdfInfo (the HMM form): for every pdf the
 * sorted, unique list of (phone, pdf-class) pairs that can map to it when
 * the context phones take any value.  phones[num_phones] sorted;
 * num_pdf_classes indexed by phone id (size max phone + 1).  Returns an
 * array [gh_ctx_dep_num_pdfs(c)] of lists; each list is pairs[2 * len]
 * (phone, pdf_class interleaved) with its length in lens[pdf].  Warns (as
 * Kaldi) when a (phone, pdf-class) maps to no pdf.  Free with
 * gh_ctx_dep_pdf_info_free. */
typedef struct {
  int32_t num_pdfs;
  int32_t *lens;     /* [num_pdfs] */
  int32_t **pairs;   /* [num_pdfs][2 * lens[pdf]] */
} gh_pdf_info;
void gh_ctx_dep_pdf_info(const gh_ctx_dep *c, const int32_t *phones, int32_t num_phones,
                         const int32_t *num_pdf_classes, gh_pdf_info *info);
void gh_ctx_dep_pdf_info_free(gh_pdf_info *info);

/* The monophone tree of Kaldi's gmm-init-mono: MonophoneContextDependency
 * (each phone its own set) or MonophoneContextDependencyShared (phones of a
 * set share pdfs; sets as in lang/phones/sets.int) -- Kaldi's initial map (build-tree-utils.cc)
 * with unshared roots: one pdf per (set, pdf-class), numbered in set order.
 * sets[i][set_sizes[i]] sorted, unique, phones in no other set;
 * phone2num_pdf_classes indexed by phone (size max_phone + 1, > 0 for every
 * phone in a set).  N = 1, P = 0.  Dies (naming "what") on an empty set list,
 * an empty or unsorted set, a repeated phone or a phone with no pdf-classes. */
gh_ctx_dep *gh_ctx_dep_monophone(int32_t num_sets, int32_t *const *sets, const int32_t *set_sizes,
                                 const int32_t *phone2num_pdf_classes, int32_t max_phone, const char *what);

#endif
