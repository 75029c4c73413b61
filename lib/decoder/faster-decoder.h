/* faster-decoder.h -- a Viterbi token-passing decoder over one utterance's graph,
 * with the semantics of Kaldi's FasterDecoder (decoder/faster-decoder.cc) as
 * AlignUtteranceWrapper (decoder/decoder-wrappers.cc) drives it: beam pruning
 * with Kaldi's cutoffs (min-active 20, max-active unbounded, beam delta 0.5), the
 * best token kept per graph state, ties kept by the first token, tokens visited
 * in the order of Kaldi's hash list (so that ties and the running cutoff come out
 * as Kaldi's do), epsilon (ilabel 0) arcs expanded after every frame.  With an
 * infinite beam (GH_DEC_EXACT) nothing is pruned: the result is the exact best
 * path, which never fails for lack of beam.
 *
 * Graph layout (gh_dec_graph): a flat arc array in CSR order, the arcs of state s
 * at arcs[arc_start[s] .. arc_start[s+1]), in the FST's order; one final cost per
 * state.  Plain arrays with no pointers inside, so that a batched GPU aligner can
 * upload them as they are.
 *
 * Units.  Costs are tropical (negated natural log, float on arcs, double on
 * tokens as in Kaldi).  The acoustic cost of frame t on an arc with ilabel i is
 * -(acoustic_scale * loglikes[t * ld + col[i]]) in float (Kaldi's
 * DecodableAmDiagGmmScaled with col = transition-id -> pdf).
 *
 * Errors: a graph ilabel outside [0, num_labels] dies (gh_die, naming `what`).
 */
#ifndef GH_FASTER_DECODER_H
#define GH_FASTER_DECODER_H
#include <math.h>
#include <stdint.h>
#include "io/fst.h"

#define GH_DEC_EXACT INFINITY /* a beam that prunes nothing */

typedef struct {
  int32_t ilabel, olabel; /* 0 = epsilon; ilabel 0 = non-emitting arc */
  float weight;           /* cost */
  int32_t next;           /* destination state */
} gh_dec_arc;

typedef struct {
  int32_t num_states, start; /* start -1: empty graph */
  int64_t num_arcs;
  int64_t *arc_start;        /* [num_states + 1] */
  gh_dec_arc *arcs;          /* [num_arcs] */
  float *final;              /* [num_states], GH_FST_ZERO (+inf) = not final */
} gh_dec_graph;

/* Copies f into g's CSR layout (g need not be initialized; free with
 * gh_dec_graph_free).  careful != 0 applies Kaldi's
 * ModifyGraphForCarefulAlignment: g = f followed by a copy of f without its
 * final weights, joined by an epsilon arc (cost = the final weight) from each
 * final state to a new state "pre-initial", which is the only final state (cost
 * 0) and has an epsilon arc to the copy's start.  States: 2 n + 1 then.  Dies
 * (gh_die) on an arc to a state that does not exist. */
void gh_dec_graph_from_fst(gh_dec_graph *g, const gh_fst *f, int careful);
void gh_dec_graph_free(gh_dec_graph *g);

typedef struct {
  float beam;         /* Kaldi --beam; GH_DEC_EXACT (or <= 0 given to the tool) = no pruning */
  int32_t min_active; /* Kaldi FasterDecoderOptions: 20 */
  int32_t max_active; /* INT32_MAX */
  float beam_delta;   /* 0.5 */
  float hash_ratio;   /* 2.0 */
} gh_dec_opts;
void gh_dec_opts_default(gh_dec_opts *o); /* Kaldi's defaults with beam 16 */

typedef struct gh_decoder gh_decoder;
gh_decoder *gh_decoder_new(void);
void gh_decoder_free(gh_decoder *d);
/* Starts a new utterance (Kaldi constructs a FasterDecoder per utterance: the
 * hash list's size goes back to 1000, which decides the visiting order). */
void gh_decoder_reset(gh_decoder *d);

/* Decodes T frames (T >= 0) over g (g->start >= 0).  loglikes: [T x ld] floats
 * (natural log); col[i] for i in [1, num_labels] is the column of ilabel i
 * (0 <= col[i] < ld).  Returns 1 if a token reached a final state with finite
 * cost after the last frame (Kaldi ReachedFinal), else 0.  The tokens stay
 * for gh_decoder_best_path until the next decode. */
int gh_decoder_decode(gh_decoder *d, const gh_dec_graph *g, const gh_dec_opts *o, const float *loglikes,
                      int32_t T, int32_t ld, const int32_t *col, int32_t num_labels, float acoustic_scale,
                      const char *what);

/* The best path of the last decode (Kaldi GetBestPath + GetLinearSymbolSequence
 * + GetPerFrameAcousticCosts): if a final state was reached, the best token by
 * cost + final cost, else the best token.  Fills, as malloc'd arrays the caller
 * frees: ilabels[num_ilabels] (the non-zero ilabels in order: one per frame for
 * a graph without ilabel-0 self-loops), words[num_words] (non-zero olabels),
 * frame_ac[num_frame_ac] (per emitting arc its acoustic cost, the epsilon arcs'
 * acoustic part added to the previous one as Kaldi does; float, scaled), and
 * graph_cost / ac_cost (float sums in path order, the final cost included in
 * graph_cost when reached_final).  Returns 0 if there is no token (nothing set). */
typedef struct {
  int32_t num_ilabels, num_words, num_frame_ac;
  int32_t *ilabels, *words;
  float *frame_ac;
  float graph_cost, ac_cost;
  int reached_final;
} gh_dec_path;
int gh_decoder_best_path(gh_decoder *d, gh_dec_path *p);
void gh_dec_path_free(gh_dec_path *p);

/* The gh_decoder_best_path outputs (reached_final = 1) of a path given as
 * its arc indices arcs[n] into g (from g->start, T emitting arcs, ending in
 * a final state; the batched aligner's result, backend.h align_batch): the
 * token costs are summed along it in the decoder's double arithmetic, so
 * the same path gives the decoder's bits.  loglikes, ld, col and
 * acoustic_scale as gh_decoder_decode.  Dies on an arc that does not leave
 * the state the path is in, a wrong number of emitting arcs or a last state
 * that is not final. */
void gh_dec_path_from_arcs(const gh_dec_graph *g, const int32_t *arcs, int32_t n, const float *loglikes,
                           int32_t T, int32_t ld, const int32_t *col, float acoustic_scale, gh_dec_path *p);

/* Tokens created in the last decode (for tests and speed figures). */
int64_t gh_decoder_num_tokens(const gh_decoder *d);

#endif
