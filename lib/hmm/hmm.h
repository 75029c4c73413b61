/* hmm.h -- sets of named HMMs over pdf ids: file I/O, common topologies,
 * compilation (one HMM, or the concatenation of a transcript's word HMMs with
 * optional silence) into the kernel graphs of hmm/graph.h, transition
 * accumulators and their re-estimation (Baum-Welch M-step for transitions).
 *
 * An HMM has S states; state j emits with pdf pdf[j] (a column of the
 * per-pdf log-likelihood matrices of gmm-score-gpu), has an initial
 * log-probability init[j] and an exit log-probability final[j] (taken after
 * the last frame), and a list of arcs (from, to, logp).  All probabilities
 * are natural logs; -inf = impossible.  Two exit conventions, told apart by
 * the value (doc/hmm.md):
 *  - Kaldi/HTK: 0 < exp(final[j]) < 1 and the arcs of j plus its exit sum to
 *    1 (the exit competes with the arcs);
 *  - Rabiner/hmmlearn: final[j] = 0 (probability 1, "may end here") and the
 *    arcs alone sum to 1; then P(O) = sum_j alpha_T(j).
 * States may carry word labels (word-loop HMMs) so a word sequence can be
 * read off a state path.  File format: doc/format.md, "HMM sets".
 */
#ifndef GH_HMM_H
#define GH_HMM_H
#include <stdint.h>
#include "hmm/graph.h"
#include "io/kaldi-io.h"
#include "base/opts.h"
#include "io/table.h"
#include "base/matrix.h"

typedef struct { int32_t from, to; float logp; } gh_hmm_arc;

typedef struct {
  char *name;           /* non-empty, no whitespace */
  int32_t num_states;   /* S >= 1 */
  int32_t num_arcs;     /* A >= 0 */
  int32_t *pdf;         /* [S] pdf id (>= 0) */
  float *init;          /* [S] log initial probability */
  float *final;         /* [S] log exit probability */
  gh_hmm_arc *arcs;     /* [A] in file order; no two with the same (from, to) */
  char **word;          /* NULL, or [S] word label per state (NULL = none) */
} gh_hmm;

typedef struct {
  int32_t num_hmms;
  gh_hmm *hmms;         /* [num_hmms], distinct names */
} gh_hmm_set;

/* Free one HMM / a set and zero the struct (safe on zeroed structs). */
void gh_hmm_free(gh_hmm *h);
void gh_hmm_set_free(gh_hmm_set *s);
/* Append h to s (s takes ownership of h's arrays; h is zeroed). */
void gh_hmm_set_add(gh_hmm_set *s, gh_hmm *h);
/* Index of the HMM called name, or -1. */
int32_t gh_hmm_set_find(const gh_hmm_set *s, const char *name);
/* 1 + the largest pdf id used by any HMM of s (columns the loglikes need). */
int32_t gh_hmm_set_num_pdfs(const gh_hmm_set *s);

/* Structural check of one HMM: S >= 1, pdf ids >= 0, arcs within range and
 * not duplicated, log-probs not NaN and not above 1e-3 (probability <= ~1),
 * some state with init > -inf and some with final > -inf, and every state
 * able to reach a state with a final probability (else a path through it
 * could never end), each state's outgoing mass (arcs, plus the exit when
 * -inf < final < 0; final = 0 is Rabiner's no-exit form) and the initial
 * mass at most 1 (within GH_HMM_SUM_TOL; less is allowed, e.g. a
 * word penalty).  Returns 0, or -1 with the message in gh_last_error(). */
int gh_hmm_check(const gh_hmm *h);
/* gh_hmm_check: the outgoing probabilities of every state (arcs + competing
 * exit) and the initial probabilities may sum to at most 1 + GH_HMM_SUM_TOL. */
#define GH_HMM_SUM_TOL 1e-3

/* Read an HMM set file (text or binary, detected by "\0B"; rxfilename as in
 * gh_istream_open).  Dies with one line naming the file, the byte offset,
 * the HMM and what was wrong (gh_hmm_check failures included). */
void gh_hmm_set_read(const char *rxfilename, gh_hmm_set *s);
void gh_hmm_set_read_stream(gh_istream *in, int binary, gh_hmm_set *s);
/* Write "\0B" (binary) and the set, atomically (temp file + rename). */
void gh_hmm_set_write(const char *wxfilename, int binary, const gh_hmm_set *s);

/* ---------------- topologies ---------------- */
/* h := left-to-right HMM "name" of S states with pdf ids pdfs[S]: state 0
 * initial; state k has a self-loop (self_loop), and leaves it with
 * 1 - self_loop, split into next (k -> k+1) and skip (k -> k+2, only where
 * k+2 < S) as (1 - skip, skip); the last state leaves by its exit:
 * final = log(1 - self_loop).  0 < self_loop < 1, 0 <= skip < 1. */
void gh_hmm_left_to_right(gh_hmm *h, const char *name, int32_t S, const int32_t *pdfs,
                          double self_loop, double skip);
/* h := silence HMM "name" of S >= 3 states with pdf ids pdfs[S], Kaldi's
 * silence topology (egs/wsj/s5/utils/gen_topo.pl, 5 states there): state 0
 * enters and goes to any of 0..S-2, the inner states 1..S-2 go to any of
 * 1..S-1 (so they can alternate for as long as the silence or noise lasts),
 * all with probability 1/(S-1); the last state S-1 has a self-loop
 * (self_loop, Kaldi 0.75) and exits with 1 - self_loop.  Dies on S < 3 or
 * a bad probability. */
void gh_hmm_silence(gh_hmm *h, const char *name, int32_t S, const int32_t *pdfs, double self_loop);
/* h := fully connected (ergodic) HMM "name" of S >= 1 states with pdf ids
 * pdfs[S]: every state initial with probability 1/S, every state -> every
 * state (itself included) with 1/S, and final log-probability 0 in every
 * state (Rabiner's "no exit": P(O) = sum_j alpha_T(j), the sequence may end
 * anywhere).  hmmlearn's default topology and initial startprob_/transmat_
 * (hmmlearn/base.py, _init: 1 / n_components).  Dies on S < 1. */
void gh_hmm_ergodic(gh_hmm *h, const char *name, int32_t S, const int32_t *pdfs);
/* h := word-loop HMM "name" for connected words: the states of HMMs
 * ids[0..n) of s (copied with their pdfs and inner arcs), plus those of the
 * silence HMM sil (-1: none).  Entering: init spread evenly over the n words
 * (+ silence), times each HMM's own init.  Leaving any word or the silence
 * (its final) goes, with equal shares, to the start of any word, the
 * silence, or the end of the utterance.  Word HMMs' initial states are
 * labelled with the word's name (the HMM's own labels are kept when it has
 * some); silence is unlabelled.  Dies on bad ids. */
void gh_hmm_word_loop(gh_hmm *h, const char *name, const gh_hmm_set *s, const int32_t *ids,
                      int32_t n, int32_t sil);
/* gh_hmm_word_loop with the loop's transitions out of a word set by
 * sil_prob in [0, 1] (with a silence): leaving a word goes to the silence
 * with probability sil_prob, to the start of each word and to the end of the
 * utterance with (1 - sil_prob) / (n + 1) each (sil_prob = 1: a silence
 * between any two words); leaving the silence is as in gh_hmm_word_loop.
 * sil_prob < 0 (or sil < 0): gh_hmm_word_loop's equal shares.  Dies on a
 * sil_prob above 1. */
void gh_hmm_word_loop_sil(gh_hmm *h, const char *name, const gh_hmm_set *s, const int32_t *ids,
                          int32_t n, int32_t sil, double sil_prob);

/* Make a word loop of gh_hmm_word_loop (silence last, num_sil_states
 * states) start and end in the silence only: every other state's init and
 * final become -inf, the silence's init is renormalised.  The decoding
 * counterpart of training with gh_hmm_compile_edges(edge_prob = 1). */
void gh_hmm_loop_edge_silence(gh_hmm *h, int32_t num_sil_states);

/* ---------------- compiled graphs ----------------
 * A gh_hmm_compiled is one HMM or a concatenation, in the CSR form of
 * gh_hmm_graph (arcs sorted by destination) plus what the host needs to map
 * results back: for every state, initial and final probability and arc,
 * the index of the count it ties to in gh_hmm_accs (-1: none, e.g. the
 * silence-probability arcs), and labels for reading words off a path. */
typedef struct {
  gh_hmm_graph graph;      /* views into the arrays below */
  int32_t *pdf, *in_off, *arc_src, *arc_dst;
  float *init, *final, *arc_logp;
  int32_t *tie_init;       /* [S] accs index of the state's init count, or -1 */
  int32_t *tie_final;      /* [S] accs index of its final (exit) count, or -1 */
  int32_t *tie_arc;        /* [2 A] up to two accs indices per arc (-1: none): an
                              arc joining two HMMs counts as an exit of the one
                              and an entry into the other */
  const char **word;       /* [S] word label (borrowed from the set) or NULL */
  int32_t *seg;            /* [S] segment (HMM copy) of each state */
  int32_t num_segs;
  const char **seg_name;   /* [num_segs] name to emit when a path enters the
                              segment, or NULL (silence, or an HMM that has
                              its own word labels) */
} gh_hmm_compiled;

/* Compile the concatenation of HMMs ids[0..n) of s.  sil >= 0 adds the
 * silence HMM sil optionally at both ends and between words, taken with
 * probability sil_prob (0 < sil_prob < 1) where optional.  n = 1 and sil < 0
 * gives the HMM itself (with its own init and final).  Joining A then B: an
 * exit of A's state i followed by entering B's state j is one arc with
 * log-prob final_i + init_j (+ log sil_prob or log(1 - sil_prob)).  n = 0
 * needs sil >= 0 (silence only).  Dies on bad arguments. */
void gh_hmm_compile(const gh_hmm_set *s, const int32_t *ids, int32_t n, int32_t sil, double sil_prob,
                    gh_hmm_compiled *c);
/* The same with the first and last silence (at the two ends of the
 * utterance) taken with probability edge_prob instead of sil_prob;
 * edge_prob = 1 makes them obligatory (a file that starts and ends in
 * silence, so no word HMM is trained on the leading or trailing silence).
 * 0 < edge_prob <= 1.  gh_hmm_compile is this with edge_prob = sil_prob. */
void gh_hmm_compile_edges(const gh_hmm_set *s, const int32_t *ids, int32_t n, int32_t sil, double sil_prob,
                          double edge_prob, gh_hmm_compiled *c);
/* Compile a transcript: a space-separated list of HMM names (words); unknown
 * names die naming spec and key.  See gh_hmm_compile. */
void gh_hmm_compile_transcript(const gh_hmm_set *s, const char *transcript, int32_t sil, double sil_prob,
                               gh_hmm_compiled *c, const char *spec, const char *key);
/* The same with gh_hmm_compile_edges' edge_prob. */
void gh_hmm_compile_transcript_edges(const gh_hmm_set *s, const char *transcript, int32_t sil, double sil_prob,
                                     double edge_prob, gh_hmm_compiled *c, const char *spec, const char *key);
void gh_hmm_compiled_free(gh_hmm_compiled *c);
/* The word sequence of a state path (T states of c, from hmm_viterbi), as
 * a malloc'd string of space-separated words ("" if none): a state's word
 * label is emitted when the path enters that state (t = 0 or a different
 * state at t-1); a segment's name when the path enters the segment. */
char *gh_hmm_path_words(const gh_hmm_compiled *c, const int32_t *path, int64_t T);

/* ---------------- transition accumulators ----------------
 * Per HMM h, counts[off[h] ...] holds S init counts (expected entries into
 * each state), A arc counts (expected traversals, in the HMM's arc order)
 * and S final counts (expected exits), in double; plus the total
 * log-likelihood (natural log) and frame count of the data. */
typedef struct {
  int32_t num_hmms;
  char **names;            /* [num_hmms] */
  int32_t *num_states, *num_arcs;
  int64_t *off;            /* [num_hmms + 1] */
  double *counts;          /* [off[num_hmms]] */
  double total_like, total_frames;
  int64_t num_utts;
} gh_hmm_accs;

/* Zeroed accumulators shaped like s. */
void gh_hmm_accs_init(gh_hmm_accs *a, const gh_hmm_set *s);
void gh_hmm_accs_free(gh_hmm_accs *a);
/* a += stats of one compiled graph, as returned by hmm_fb for it
 * (2 S + A doubles, backend.h), through c's ties. */
void gh_hmm_accs_add_stats(gh_hmm_accs *a, const gh_hmm_compiled *c, const double *stats);
/* a += b; dies (naming name_b) unless the shapes and names match. */
void gh_hmm_accs_add(gh_hmm_accs *a, const gh_hmm_accs *b, const char *name_b);
/* Dies (naming name) unless a matches the set's shapes and names. */
void gh_hmm_accs_check(const gh_hmm_accs *a, const gh_hmm_set *s, const char *name);
/* Accumulator file: <HmmAccs> <NumHmms> N, per HMM <Hmm> name <NumStates> S
 * <NumArcs> A <InitCounts> DV <ArcCounts> DV <FinalCounts> DV </Hmm>, then
 * <TotalLike> double <TotalFrames> double <NumUtts> int32 </HmmAccs>.
 * Read dies naming file and offset; write is atomic. */
void gh_hmm_accs_read(const char *rxfilename, gh_hmm_accs *a);
void gh_hmm_accs_write(const char *wxfilename, int binary, const gh_hmm_accs *a);

/* Transition re-estimation (Rabiner eqs. 40a-c; Kaldi's
 * MleTransitionUpdateConfig semantics for floor and min count). */
typedef struct {
  double min_count;  /* a state's distribution (or an HMM's init) with less total count keeps its old values */
  double floor;      /* re-estimated probabilities are floored at this, then renormalised */
  int update_init;   /* also re-estimate init probabilities */
} gh_hmm_update_opts;
/* Defaults: min_count 5, floor 0.01 (Kaldi's), update_init 1. */
void gh_hmm_update_opts_default(gh_hmm_update_opts *o);
/* Re-estimate s's transitions from a (shaped like s): for each state i the
 * distribution over its arcs (and its exit, when the exit competes: -inf <
 * final_i < 0) becomes counts / total; init over the states with init >
 * -inf likewise.  Returns the number of distributions updated;
 * *num_kept (if non-NULL) gets those kept for lack of counts. */
int64_t gh_hmm_update(gh_hmm_set *s, const gh_hmm_accs *a, const gh_hmm_update_opts *o, int64_t *num_kept);

/* ---------------- emissions ---------------- */
/* Discrete emissions (Liu 2009, cuHMM): read a Kaldi matrix B (pdfs x
 * symbols, probabilities, rows summing to 1; text or binary) and store
 * log B in logB.  Dies naming the file on a negative or non-finite entry. */
void gh_hmm_read_discrete(const char *rxfilename, gh_matrix *logB);
/* out := [T x P] loglikes with out[t][p] = logB[p][sym[t]] (sym an int32
 * vector of symbols, 0-based).  Dies naming spec and key on a symbol out of
 * range. */
void gh_hmm_discrete_loglikes(const gh_matrix *logB, const gh_ivector *sym, gh_matrix *out,
                              const char *spec, const char *key);

/* ---------------- tool input and batches ----------------
 * Reading the emissions of the HMM tools: either per-pdf log-likelihood
 * matrices (frames x pdfs, e.g. from gmm-score-gpu), or, with a discrete
 * emission matrix (gh_hmm_read_discrete), int32 vectors of symbols. */
typedef struct gh_hmm_input gh_hmm_input;
/* Opens rspec; discrete_rx NULL/"" for loglike matrices.  Every utterance
 * must have >= 1 frame and exactly num_pdfs columns (the HMM set's pdfs:
 * more columns means log-likelihoods of another model, an error as in
 * Kaldi's DecodableMatrixScaledMapped) and no NaN or +inf; else the tool
 * dies naming spec and key. */
gh_hmm_input *gh_hmm_input_open(const char *rspec, const char *discrete_rx, int32_t num_pdfs);
/* The same for features [T x dim] (hmm-forward --gmm: scored by the tool):
 * every utterance must have >= 1 frame, exactly dim columns and finite
 * values; else the tool dies naming spec, key and model_name. */
gh_hmm_input *gh_hmm_input_open_features(const char *rspec, int32_t dim, const char *model_name);
int gh_hmm_input_done(gh_hmm_input *in);
const char *gh_hmm_input_key(gh_hmm_input *in);
/* The current utterance's loglikes [T x P'] (P' >= num_pdfs), valid until next. */
const gh_matrix *gh_hmm_input_value(gh_hmm_input *in);
void gh_hmm_input_next(gh_hmm_input *in);
void gh_hmm_input_close(gh_hmm_input *in);
const char *gh_hmm_input_spec(const gh_hmm_input *in);

/* The emission-side options shared by hmm-forward, hmm-viterbi and hmm-bw:
 * --discrete-emissions (rxfilename of B, or ""), --batch-frames (frames
 * per batched kernel call) and --acoustic-scale (emission weight,
 * gh_hmm_batcher).  _register sets the defaults ("", 65536, 1) and
 * registers the three options on po (the tools' --device is
 * train/device-opts.h's). */
typedef struct {
  const char *discrete;
  int32_t batch_frames;
  float acoustic_scale;
} gh_hmm_input_opts;
void gh_hmm_input_opts_register(gh_opts *po, gh_hmm_input_opts *o);

/* A growing batch of utterances in the layout of gh_hmm_batch: keys, the
 * concatenated loglikes (num_pdfs columns: extra columns of the input are
 * dropped), frame offsets and per-utterance graph indices.  The loglikes are
 * multiplied by acoustic_scale on the way in (Kaldi's --acoustic-scale:
 * emissions weigh acoustic_scale times as much as log transition and initial
 * probabilities; 1 = the plain HMM; set by the tools after _init). */
typedef struct {
  gh_hmm_batch b;            /* views into the arrays below */
  int32_t num_pdfs;
  float acoustic_scale;      /* default 1 */
  char **keys;
  float *loglikes;
  int64_t *frame_off;
  int32_t *graph;
  int32_t cap;
  int64_t cap_frames;
  gh_hmm_compiled *uc;       /* [num_uc] per-utterance compiled transcripts
                                (gh_hmm_batcher_fill with transcripts): utterance
                                u uses graph u = uc[u].graph */
  int32_t num_uc, uc_cap;
} gh_hmm_batcher;
void gh_hmm_batcher_init(gh_hmm_batcher *bt, int32_t num_pdfs);
/* Append one utterance (m has >= num_pdfs columns) using graph index g. */
void gh_hmm_batcher_add(gh_hmm_batcher *bt, const char *key, const gh_matrix *m, int32_t g);
/* Number of frames held. */
static inline int64_t gh_hmm_batcher_frames(const gh_hmm_batcher *bt) { return bt->frame_off[bt->b.num_utts]; }
/* Empties the batch (keys and compiled transcripts freed; buffers kept). */
void gh_hmm_batcher_clear(gh_hmm_batcher *bt);
void gh_hmm_batcher_free(gh_hmm_batcher *bt);

/* Where --transcripts come from: a text table utterance -> transcript (an
 * HMM name or a word sequence of HMM names), compiled against set with
 * optional silence HMM sil (-1: none) taken with probability sil_prob. */
typedef struct {
  const gh_hmm_set *set;
  gh_rand_reader *reader;
  const char *spec;  /* the table's rspecifier, for messages */
  int32_t sil;
  double sil_prob;
  double edge_sil_prob;  /* first/last silence (gh_hmm_compile_edges); <= 0: sil_prob */
} gh_hmm_transcripts;

/* The batching loop shared by hmm-forward, hmm-viterbi and hmm-bw: clears bt,
 * then moves utterances from in into it until it holds at least batch_frames
 * frames or in is exhausted.  With tr == NULL every utterance gets graph
 * index 0; with transcripts, utterance u's transcript is compiled into
 * bt->uc[u] (graph index u), and an utterance without one is warned about,
 * skipped and counted in *num_err.  Returns the number of utterances in the
 * batch, 0 once the input is exhausted. */
int32_t gh_hmm_batcher_fill(gh_hmm_batcher *bt, gh_hmm_input *in, int64_t batch_frames,
                            const gh_hmm_transcripts *tr, int64_t *num_err);

/* The same loop with reading overlapped (as gmm-score-gpu's: bench/RESULTS.md B12): a
 * reader thread fills the next batch (gh_hmm_batcher_fill on a second
 * batcher) while the caller runs the kernels on the current one.
 *   pf = gh_hmm_prefetch_start(in, num_pdfs, acoustic_scale, batch_frames, tr);
 *   while ((bt = gh_hmm_prefetch_next(pf)) != NULL) { ... bt->b ... }
 *   skipped = gh_hmm_prefetch_finish(pf);   (before gh_hmm_input_close(in))
 * A batch from _next is the caller's until the next call of _next.  While
 * the prefetcher runs, `in` and the transcripts' reader belong to its thread.
 * _finish joins the thread (reading to the end of the input if the caller
 * stopped early), frees the batchers and returns the number of utterances
 * skipped for lacking a transcript.  Dies if the thread cannot be started. */
typedef struct gh_hmm_prefetch gh_hmm_prefetch;
gh_hmm_prefetch *gh_hmm_prefetch_start(gh_hmm_input *in, int32_t num_pdfs, float acoustic_scale,
                                       int64_t batch_frames, const gh_hmm_transcripts *tr);
gh_hmm_batcher *gh_hmm_prefetch_next(gh_hmm_prefetch *pf);
int64_t gh_hmm_prefetch_finish(gh_hmm_prefetch *pf);

#endif
