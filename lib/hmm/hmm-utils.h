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

#endif
