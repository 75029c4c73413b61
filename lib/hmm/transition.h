/* transition.h -- Kaldi's TransitionModel (hmm/transition-model.cc) and its
 * HmmTopology (hmm/hmm-topology.cc), parsed so that a Kaldi .mdl can be read,
 * queried (transition-id -> pdf / phone / HMM state) and written back byte
 * for byte, in binary or text.
 *
 * On-disk layout (binary; every token is followed by one space):
 *   <TransitionModel> <Topology> phones(int vector) phone2idx(int vector)
 *   [int32 -1 if any state has self_loop_pdf_class != forward_pdf_class]
 *   int32 num_entries, per entry int32 num_states, per state int32
 *   forward_pdf_class [int32 self_loop_pdf_class], int32 num_transitions,
 *   per transition int32 dst + float prob; </Topology>
 *   <Triples> int32 n, n x (phone, hmm_state, pdf) </Triples>   (old, or "HMM")
 *   | <Tuples> int32 n, n x (phone, hmm_state, fwd_pdf, self_loop_pdf) </Tuples>
 *   <LogProbs> FV (num_transition_ids + 1 floats, [0] unused) </LogProbs>
 *   </TransitionModel>
 * Text uses the human-readable topology (<TopologyEntry> <ForPhones> ...
 * <State> i <PdfClass> c <Transition> d p </State>) and the same tokens.
 * Transition-ids are 1-based, grouped by transition-state (= tuple index + 1)
 * in the order of the state's transitions in its topology entry.
 */
#ifndef GH_TRANSITION_H
#define GH_TRANSITION_H
/* Largest phone id accepted in a topology (the phone -> entry table is
 * indexed by phone id, as in Kaldi): 2^20, far above any phone set. */
#define GH_MAX_PHONE (1 << 20)
#include <stdint.h>
#include "io/kaldi-io.h"
#include "io/model-write.h"
#include "tree/context-dep.h"

/* The same typedef as gmm/gmm.h's (a GMM set holds the .mdl's transition model). */
typedef struct gh_transition_model gh_transition_model;

typedef struct {
  int32_t forward_pdf_class;   /* -1: non-emitting */
  int32_t self_loop_pdf_class; /* == forward_pdf_class for plain HMMs */
  int32_t num_trans;
  int32_t *dst;                /* [num_trans] destination HMM state */
  float *prob;                 /* [num_trans] transition probability (not log) */
} gh_hmm_state;

typedef struct {
  int32_t num_states;
  gh_hmm_state *states;
} gh_topo_entry;

typedef struct {
  int32_t phone, hmm_state, forward_pdf, self_loop_pdf;
} gh_trans_tuple;

struct gh_transition_model {
  /* Topology (HmmTopology). */
  int32_t num_phones;  int32_t *phones;     /* sorted phone ids */
  int32_t num_phone2idx; int32_t *phone2idx; /* phone -> entry index or -1 */
  int32_t num_entries; gh_topo_entry *entries;
  /* Tuples (one per transition-state). */
  int32_t num_tuples;  gh_trans_tuple *tuples;
  /* LogProbs, natural log, indexed by transition-id ([0] unused). */
  int32_t num_log_probs; float *log_probs;
  /* Derived (Kaldi ComputeDerived): */
  int32_t num_tids;    /* number of transition-ids */
  int32_t num_pdfs;    /* 1 + largest pdf id in the tuples */
  int32_t *state2id;   /* [num_tuples + 2]: first tid of each transition-state */
  int32_t *id2state;   /* [num_tids + 1] */
  int32_t *id2pdf;     /* [num_tids + 1], [0] = -1 */
};

/* Read a TransitionModel (the next token must be <TransitionModel>) from an
 * open stream; dies via gh_istream_fail (file name + offset) on malformed
 * input or a topology that fails Kaldi's HmmTopology::Check essentials. */
gh_transition_model *gh_transition_read(gh_istream *in, int binary);
/* Write exactly as Kaldi TransitionModel::Write (binary or text). */
void gh_transition_write(gh_ostream *out, int binary, const gh_transition_model *tm);
gh_transition_model *gh_transition_copy(const gh_transition_model *tm);
void gh_transition_free(gh_transition_model *tm);

/* 1 if every state has self_loop_pdf_class == forward_pdf_class (Kaldi
 * HmmTopology::IsHmm; decides <Triples> vs <Tuples> on write). */
int gh_transition_is_hmm(const gh_transition_model *tm);
/* Queries; tid in [1, num_tids] (dies otherwise). */
int32_t gh_transition_tid2pdf(const gh_transition_model *tm, int32_t tid);
int32_t gh_transition_tid2phone(const gh_transition_model *tm, int32_t tid);
int32_t gh_transition_tid2hmm_state(const gh_transition_model *tm, int32_t tid);
int gh_transition_is_self_loop(const gh_transition_model *tm, int32_t tid);
/* Natural-log transition probability of tid. */
float gh_transition_log_prob(const gh_transition_model *tm, int32_t tid);


/* Read a standalone HmmTopology (a lang's "topo" file, Kaldi
 * HmmTopology::Read: text "<Topology> <TopologyEntry> ... </Topology>" or
 * binary).  Returns a model holding only the topology (num_tuples = 0, no
 * log-probs), for gh_transition_init and gh_topology_num_pdf_classes.  Dies
 * naming the file and offset on malformed input or a topology that fails
 * the checks of gh_transition_read. */
gh_transition_model *gh_topology_read(const char *rxfilename);
/* Kaldi HmmTopology::NumPdfClasses: 1 + the largest pdf-class of the phone's
 * entry.  Dies if the phone is not in the topology. */
int32_t gh_topology_num_pdf_classes(const gh_transition_model *topo, int32_t phone);
/* Kaldi TransitionModel(ctx_dep, topo): tuples (phone, HMM state, pdf) for
 * every (phone, pdf-class) the tree can map (GetPdfInfo), sorted; log-probs
 * = log of the topology's transition probabilities.  Dies naming "what" if
 * the topology has separate self-loop pdf-classes (not supported) or the
 * tree and topology disagree. */
gh_transition_model *gh_transition_init(const gh_transition_model *topo, const gh_ctx_dep *ctx, const char *what);
/* Read only the TransitionModel at the start of a .mdl (Kaldi
 * ReadKaldiObject(file, &trans_model)); dies naming the file and offset if
 * it does not start with <TransitionModel> or is malformed. */
gh_transition_model *gh_transition_read_file(const char *rxfilename);
/* Queries on tid in [1, num_tids] (die otherwise): its transition-state
 * (1-based tuple index), whether it goes to the final state of its phone's
 * HMM (Kaldi IsFinal), its index among its state's transitions. */
int32_t gh_transition_tid2tstate(const gh_transition_model *tm, int32_t tid);
int gh_transition_is_final(const gh_transition_model *tm, int32_t tid);
int32_t gh_transition_tid2index(const gh_transition_model *tm, int32_t tid);
/* Kaldi TupleToTransitionState: the transition-state (1-based) of
 * (phone, HMM state, forward pdf, self-loop pdf; for HMM topologies the two
 * pdfs are equal), or 0 if the model has no such tuple (binary search: the
 * tuples are sorted). */
int32_t gh_transition_tuple_to_tstate(const gh_transition_model *tm, int32_t phone, int32_t hmm_state,
                                      int32_t forward_pdf, int32_t self_loop_pdf);
/* Kaldi PairToTransitionId: the transition-id of the index-th transition
 * (order of the topology entry's <Transition> lines) of transition-state
 * tstate.  Dies if either is out of range.  With gh_ctx_dep_compute (the
 * pdf of a phone window and pdf-class) this gives a graph compiler the
 * transition-id of every arc of a phone's HMM. */
int32_t gh_transition_pair_to_tid(const gh_transition_model *tm, int32_t tstate, int32_t index);
/* Topology entry of a phone; dies if the phone has none. */
const gh_topo_entry *gh_transition_entry(const gh_transition_model *tm, int32_t phone);
/* Dies with one line naming spec, key, frame and model if an alignment
 * holds a transition-id outside [1, num_tids]. */
void gh_transition_check_alignment(const gh_transition_model *tm, const int32_t *ali, int32_t n, const char *spec,
                                   const char *key, const char *model);
/* Kaldi TransitionModel::MleUpdate (no sharing across pdfs): for each
 * transition-state with more than one transition and at least min_count
 * counts (Kaldi --transition-min-count, default 5), probabilities :=
 * counts / total, then three rounds of renormalise + floor at `floor`
 * (--transition-floor, default 0.01); others keep theirs.  stats[num_stats]
 * indexed by transition-id ([0] unused; num_stats must be num_tids + 1,
 * dies otherwise).  Outputs (any may be NULL): total auxiliary-function
 * change (natural log, counts x log-prob change), total count, probabilities
 * floored, transition-states skipped.  Arithmetic in Kaldi's float. */
void gh_transition_mle_update(gh_transition_model *tm, const double *stats, int32_t num_stats, float floor,
                              float min_count, double *objf_impr, double *count, int32_t *num_floored,
                              int32_t *num_skipped);

/* Kaldi's TransitionModel::GetScaledTransitionLogProb for every transition-id:
 * returns out[num_tids + 1] (out[0] = 0; the caller frees), natural log,
 * per transition, in Kaldi's float arithmetic: self-loops self_loop_scale x
 * log-prob; the others transition_scale x (log-prob - log(1 - self-loop
 * prob)) + self_loop_scale x log(1 - self-loop prob) (1e-10 for a
 * non-positive 1 - p); log-prob x scale when the two scales are equal.  The
 * graph weights of gmm-align-compiled and of the resident trainer's
 * realignment (Kaldi's AddTransitionProbs). */
float *gh_transition_scaled_log_probs(const gh_transition_model *tm, float transition_scale, float self_loop_scale);

#endif
