/* hmm-utils.h -- alignment helpers on a Kaldi TransitionModel (Kaldi
 * hmm/hmm-utils.cc). */
#ifndef GH_HMM_UTILS_H
#define GH_HMM_UTILS_H
#include <stdint.h>
#include "hmm/transition.h"

/* Kaldi SplitToPhones: cuts an alignment of transition-ids ali[n] (each in
 * [1, num_tids]: check first with gh_transition_check_alignment) into phone
 * instances.  ends[*num] receives one past the last frame of each phone
 * (realloc'd; ends[i-1] or 0 is where phone i starts), *num their count.
 * Handles both orders of self-loops (Kaldi's "reordered" alignments).
 * Returns 1, or 0 when the alignment looks implausible (does not end in a
 * final transition, a phone changes without a final transition, or a phone
 * does not start in HMM state 0), as Kaldi's return value; the split is
 * still filled in. */
int gh_split_to_phones(const gh_transition_model *tm, const int32_t *ali, int32_t n, int32_t **ends, int32_t *num);

/* Kaldi ConvertAlignment (same topology, no subsampling, no phone map):
 * maps alignment ali[n] of old_tm to out[n] of new_tm, whose tree is ctx:
 * each phone instance's window of N phones (0 beyond the edges) gives the
 * new pdfs, each transition keeps its HMM state and transition index;
 * self-loops are put after the forward transition if reorder, before it
 * otherwise (Kaldi --reorder).  With identical trees and models the output
 * equals the input.  Returns 1, or 0 with a message in err[errlen] (the
 * alignment does not split into phones, a phone is missing from the new
 * topology or has another topology there, the tree gives no pdf, or the
 * new model lacks the tuple). */
int gh_convert_alignment(const gh_transition_model *old_tm, const gh_transition_model *new_tm, const gh_ctx_dep *ctx,
                         const int32_t *ali, int32_t n, int reorder, int32_t *out, char *err, size_t errlen);
/* The same with Kaldi's --phone-map (phone_map[phone_map_size]: new phone
 * or -1, as gh_read_phone_map in hmm/tree-accu.h; NULL: none): each phone
 * instance's phone is mapped before the window is formed and the new
 * model's transition-ids are chosen, and the mapped phone's topology must
 * be the old phone's.  Also returns 0 (err) for a phone the map lacks. */
int gh_convert_alignment_map(const gh_transition_model *old_tm, const gh_transition_model *new_tm,
                             const gh_ctx_dep *ctx, const int32_t *phone_map, int32_t phone_map_size,
                             const int32_t *ali, int32_t n, int reorder, int32_t *out, char *err, size_t errlen);

/* A text symbol table (phones.txt: "symbol id" per line, as OpenFst's
 * SymbolTable::ReadText) as names[id] (NULL where an id is unused; *n = 1 +
 * the largest id).  Dies naming the file and line on a malformed line.
 * Free each names[i] and names. */
char **gh_phone_names_read(const char *rx, int32_t *n);

#endif
