/* graph.h -- the HMM kernels' input (kernels/backend.h hmm_* ops): an HMM
 * compiled into a graph of states and arcs, and a batch of utterances'
 * emission log-likelihoods.  Host data, built by hmm/hmm.c
 * (gh_hmm_compile*) and the drivers; read by every backend. */
#ifndef GH_HMM_GRAPH_H
#define GH_HMM_GRAPH_H
#include <stdint.h>

/* An HMM graph is an HMM (hmm/hmm.h) compiled for the kernels: S states,
 * each with a pdf id (column of the loglike matrices), initial and final
 * log-probabilities, and A arcs stored by DESTINATION in CSR form: the arcs
 * entering state j are in_off[j] .. in_off[j+1]-1, arc a goes from
 * arc_src[a] to arc_dst[a] (= j) with log-probability arc_logp[a].  Every
 * per-state step of forward / Viterbi is then a log-sum-exp / max over the
 * incoming arcs of one state (cuHMM's "one thread per state").  Log-probs are
 * natural logs; -inf means impossible.  Self-loops are ordinary arcs.
 * Model (Rabiner 1989, eqs. 19-21, with explicit exits):
 *   alpha_0(j)   = init[j] + ll_0(pdf[j])
 *   alpha_t(j)   = logsumexp_{a in in(j)} (alpha_{t-1}(src a) + logp a) + ll_t(pdf[j])
 *   log P(O)     = logsumexp_j (alpha_{T-1}(j) + final[j])
 * so final[] = 0 everywhere gives Rabiner's P(O) = sum_j alpha_T(j). */
typedef struct gh_hmm_graph {
  int32_t num_states, num_arcs;  /* S, A */
  int32_t num_pdfs;              /* 1 + max pdf id used (loglike columns needed) */
  const int32_t *pdf;            /* [S] pdf id of each state */
  const float *init;             /* [S] log initial probabilities */
  const float *final;            /* [S] log exit probabilities at the last frame */
  const int32_t *in_off;         /* [S + 1] CSR offsets of the incoming arcs */
  const int32_t *arc_src;        /* [A] source state of each arc */
  const int32_t *arc_dst;        /* [A] destination state (non-decreasing) */
  const float *arc_logp;         /* [A] log transition probability */
} gh_hmm_graph;

/* Flag of hmm_forward: scaled (Rabiner eqs. 91-92) instead of log domain. */
#define GH_HMM_SCALED 1

/* A batch of B utterances for the HMM kernels.  loglikes is one host float
 * matrix of sum_u T_u rows and num_pdfs columns, row-major: utterance u owns
 * rows frame_off[u] .. frame_off[u+1]-1 (frame_off[0] = 0, lengths may
 * differ; T_u = 0 is allowed and gives loglik -inf).  num_pdfs must be >=
 * every used graph's num_pdfs.  graph[u] is the index (into the uploaded
 * set) of utterance u's graph, or graph == NULL: graph 0 for all.
 * Per-state outputs (alpha, gamma) use the same row offsets: utterance u's
 * block starts at element state_off[u] = sum_{v<u} T_v S_g(v) and is
 * T_u x S_g(u) row-major (gh_hmm_batch_state_off computes these). */
typedef struct {
  int32_t num_utts;          /* B */
  int32_t num_pdfs;          /* columns of loglikes */
  const float *loglikes;     /* [frame_off[B] x num_pdfs] */
  const int64_t *frame_off;  /* [B + 1] */
  const int32_t *graph;      /* [B] or NULL */
} gh_hmm_batch;

/* Size of the stats block of one graph in hmm_fb: 2 S + A doubles. */
static inline int64_t gh_hmm_graph_stats_size(const gh_hmm_graph *g) {
  return 2 * (int64_t)g->num_states + g->num_arcs;
}

#endif
