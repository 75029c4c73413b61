/* global-tools.h -- the bodies of Kaldi's global-GMM tools that come in a
 * diagonal and a full-covariance twin (gmmbin/gmm-global-X and
 * fgmmbin/fgmm-global-X): each tool's main is its usage text and one call
 * here with its covariance type.  Options, arguments, messages and file
 * formats are Kaldi's (doc/kaldi.md). */
#ifndef GH_GLOBAL_TOOLS_H
#define GH_GLOBAL_TOOLS_H
#include "gmm/gmm.h"

/* gmm-global-acc-stats / fgmm-global-acc-stats <model-in>
 * <feature-rspecifier> <stats-out> (--binary, --update-flags, --gselect,
 * --weights, --device): the global GMM of type `type` (dies naming the
 * file otherwise), accumulated over every utterance (gh_global_acc:
 * dense E-step, or posteriors over each frame's --gselect list only), the
 * accumulator written as <GMMACCS>.  Logs the average log-likelihood per
 * (weighted) frame, natural log.  Returns the exit status (0). */
int gh_global_acc_stats_main(int argc, char **argv, gh_covtype type, const char *usage);

/* gmm-sum-accs, gmm-global-sum-accs, fgmm-global-sum-accs <stats-out>
 * <stats-in1> [<stats-in2> ...] (--binary): the sum of the accumulator
 * files (lib/gmm/accs.c gh_accs_add, which dies naming the file on a shape
 * mismatch); global_type GH_COV_DIAG / GH_COV_FULL: the first input must be
 * a global-GMM accumulator of that type (dies naming it otherwise), < 0:
 * any (gmm-sum-accs).  The output may be "-" (stdout, for the rxfilename
 * pipe "gmm-global-sum-accs - 1.*.acc |").  Returns the exit status (0). */
int gh_sum_accs_main(int argc, char **argv, int global_type, const char *usage);

/* gmm-global-copy / fgmm-global-copy (to == from), gmm-global-to-fgmm
 * (diag -> full, gh_gmm_diag_to_full: Kaldi FullGmm::CopyFromDiagGmm) and
 * fgmm-global-to-gmm (full -> diag, gh_gmm_full_to_diag: Kaldi
 * DiagGmm::CopyFromFullGmm) <model-in> <model-out> (--binary): the global
 * GMM of type `from` (dies naming the file otherwise), written as Kaldi's
 * global-GMM file of type `to`.  Returns the exit status (0). */
int gh_global_convert_main(int argc, char **argv, gh_covtype from, gh_covtype to, const char *usage);

#endif
