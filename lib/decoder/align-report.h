/* align-report.h -- the aligner's per-utterance failure report: every
 * utterance not aligned is reported by key and reason, on standard error
 * (one warning line each) and optionally in a file of "<key> <reason>
 * <detail...>" lines, and the run ends with one summary line that counts each
 * reason.  Kaldi's gmm-align-compiled only warns "Did not successfully decode
 * file X" and counts errors; the reasons below say why, so that a user knows
 * whether to fix the transcript, the lexicon or the beam.  Kept apart from the
 * decoder so that every alignment path of gmm-align-compiled can use it. */
#ifndef GH_ALIGN_REPORT_H
#define GH_ALIGN_REPORT_H
#include <stdint.h>
#include "base/gh-base.h"
#include "decoder/faster-decoder.h"

typedef enum {
  GH_ALIGN_NO_FEATURES = 0, /* no features for the key, or zero frames */
  GH_ALIGN_NO_GRAPH,        /* no graph for the key, or an empty graph (no start state) */
  GH_ALIGN_TOO_FEW_FRAMES,  /* every path through the graph needs more frames than the utterance has */
  GH_ALIGN_NO_PATH,         /* no path of exactly T frames reaches a final state (none at all, or infinite costs) */
  GH_ALIGN_BEAM,            /* a path exists (exact search finds it) but the beam, even the retry beam, pruned it */
  GH_ALIGN_NUM_REASONS
} gh_align_failure;

/* "no-features", "no-graph", "too-few-frames", "no-path", "beam" (the
 * report file's second field). */
const char *gh_align_failure_name(gh_align_failure why);

typedef struct gh_align_report gh_align_report;

/* Opens a report; wxfilename "" or NULL: warnings and summary only, else
 * also the report file (through gh_ostream_open: written whole at the tool's
 * successful exit).  Dies if the file cannot be opened. */
gh_align_report *gh_align_report_open(const char *wxfilename);
/* Counts one aligned utterance. */
void gh_align_report_ok(gh_align_report *r);
/* Reports utterance key as failed: the warning "Failed to align utterance
 * <key>: <reason>: <detail>" and, with a file, the line "<key> <reason>
 * <detail>" (detail: printf format, one line, may be ""). */
void gh_align_report_fail(gh_align_report *r, const char *key, gh_align_failure why, const char *fmt, ...)
    GH_PRINTF(4, 5);
int64_t gh_align_report_num_failed(const gh_align_report *r);
int64_t gh_align_report_num_done(const gh_align_report *r);
/* Logs the summary ("Aligned N of M utterances; failed K: no-features a,
 * no-graph b, too-few-frames c, no-path d, beam e"), closes the file and
 * frees r. */
void gh_align_report_close(gh_align_report *r);

/* The fewest emitting arcs (ilabel != 0) on any path of g from the start to a
 * final state (arcs and final costs of +inf count as absent): the fewest
 * frames an utterance must have to be aligned to g.  -1 if no final state
 * can be reached (or g is empty).  O(states + arcs). */
int32_t gh_dec_graph_min_frames(const gh_dec_graph *g);

/* Why an utterance of T frames that reached no final state failed, given
 * whether an exact (unpruned) search over the same graph and scores reached
 * one (exact_reached): TOO_FEW_FRAMES when T < gh_dec_graph_min_frames(g),
 * NO_PATH when that is -1 or the exact search failed too, else BEAM.  *min
 * receives gh_dec_graph_min_frames(g). */
gh_align_failure gh_align_diagnose(const gh_dec_graph *g, int32_t T, int exact_reached, int32_t *min);

#endif
