/* training-graph.h -- per-utterance training graphs (Kaldi's
 * decoder/training-graph-compiler.cc with hmm/hmm-utils.cc GetHTransducer and
 * AddSelfLoops), built directly from the lexicon's paths instead of by
 * composition, transition-level determinization and minimization.
 *
 * The graph of a transcript w1 .. wn (word ids) is: every path of the lexicon
 * FST L (phones in, words out: a lang's L.fst, optional silence and
 * pronunciation alternatives with their costs) whose output is w1 .. wn, each
 * phone replaced by its HMM (topology of the transition model, pdfs from the
 * tree), with
 *   ilabels  transition-ids (self-loops included, in Kaldi's "reorder" order:
 *            the forward transition out of an HMM state first, then that
 *            state's self-loops);
 *   olabels  the word, on the first arc of the word's first phone, else 0;
 *   weights  (tropical costs, -log p) the lexicon arcs' costs, plus for each
 *            forward transition t out of HMM state s
 *              transition_scale * -log(p(t) / (1 - p_self(s)))
 *            + self_loop_scale * -log(1 - p_self(s)),
 *            and self_loop_scale * -log p_self(s) per self-loop, with the
 *            model's (trained) probabilities in Kaldi's float arithmetic
 *            (GetTransitionLogProbIgnoringSelfLoops, GetNonSelfLoopLogProb).
 * The lexicon's paths are determinized in the log semiring at the phone
 * level (phone, word) before the HMMs are put in, so every transition-id
 * sequence has one path (barring a phone sequence with two word
 * segmentations) at the total weight Kaldi's graph gives it, and the graph
 * branches where Kaldi's does.  Kaldi's defaults of compile-train-graphs are
 * scales 0 (gmm-align-compiled adds the transition probabilities).  The graph
 * has no epsilon arcs; every state is accessible and coaccessible; each
 * state's arcs are in transition-id order (the order of Kaldi's determinized
 * graph), the self-loop last.  States are numbered as built (not Kaldi's
 * numbering; no minimization).
 *
 * Context: the tree's context width N and central position P, with at most
 * one phone of context on each side (monophone N = 1; triphone N = 3, P = 1;
 * the biphones N = 2).  Each HMM instance (an arc of the determinized lexicon
 * paths) is expanded by its left phone (the previous instance's phone, 0 at
 * the start) and its right phone, chosen when the instance is entered among
 * the phones of the arcs that can follow it (0 if the utterance can end
 * there): context crosses word boundaries, and at an optional silence both the
 * silence and the next word's first phone are right contexts of the word's
 * last phone, on the two paths, so that alignment chooses.  The pdfs come
 * from the tree's window (left, phone, right) and the pdf-class.  Kaldi
 * builds the same paths by composing C o L with H and determinizing; here no
 * transition-level determinization is done, so where the tree ties two right
 * contexts a state may have two arcs with one transition-id (the paths
 * differ later); Viterbi alignment is unaffected.  With a monophone tree no
 * context is kept and no instance is copied.
 */
#ifndef GH_TRAINING_GRAPH_H
#define GH_TRAINING_GRAPH_H
#include <stddef.h>
#include <stdint.h>
#include "io/fst.h"
#include "hmm/transition.h"
#include "tree/context-dep.h"

typedef struct gh_tgc gh_tgc;

/* 1 if the graphs here can be built for a tree of context width N and
 * central position P: at most one phone of context on each side (N <= 3:
 * monophone, left or right biphone, triphone), else 0.  Quinphone trees
 * (N = 5, P = 2) are not supported. */
int gh_tgc_supports_context(int32_t N, int32_t P);

/* A compiler over transition model tm and tree ctx (both borrowed, must
 * outlive it) and lexicon lex (taken over: its arcs are sorted on output
 * labels here and it is freed by gh_tgc_free).  disambig[ndisambig]: phone-
 * side disambiguation symbols of lex (lang/phones/disambig.int; treated as
 * epsilons, as Kaldi removes them), may be NULL/0.  Scales as Kaldi's
 * --transition-scale / --self-loop-scale (>= 0).  lex_name names lex in
 * messages.  Dies (one line) if the tree has more than one phone of context
 * on a side, a disambiguation symbol is also a phone, lex has no start
 * state, or a lexicon input label is neither 0, a phone of tm nor a
 * disambiguation symbol. */
gh_tgc *gh_tgc_new(const gh_transition_model *tm, const gh_ctx_dep *ctx, gh_fst *lex, const int32_t *disambig,
                   int32_t ndisambig, float transition_scale, float self_loop_scale, const char *lex_name);
void gh_tgc_free(gh_tgc *c);

/* Compiles the graph of words[n] into out (freed first).  Returns 1, or 0
 * with out empty (no start state) and a reason in err[errlen] when the
 * transcript is empty, a word id is not an output label of the lexicon, or
 * the lexicon has no path for the word sequence.  Dies (naming the lexicon)
 * on a lexicon the method cannot handle: an epsilon cycle, output labels on
 * two epsilon arcs in a row, or a phone/pdf-class the tree or model lacks. */
int gh_tgc_compile(gh_tgc *c, const int32_t *words, int32_t n, gh_fst *out, char *err, size_t errlen);

/* Kaldi's EqualAlign (fstext/fstext-utils-inl.h) on graph g with Kaldi's
 * random numbers: srand(seed), then at each state rand() % (arcs + final)
 * (no call when there is one choice), a self-loop drawn is drawn again, up to
 * 10 tries for a path with at most len input labels; then the self-loops on
 * the path are repeated (len - labels) / loops times, one more for the first
 * (len - labels) % loops of them.  seed: gh_kaldi_string_hash(key), as
 * align-equal-compiled.  Writes the len transition-ids into ali[len].
 * Returns 1, or 0 with err[errlen] (empty graph, a state that cannot reach a
 * final state, too few frames, no self-loop to lengthen the path). */
int gh_equal_align(const gh_fst *g, int32_t len, int seed, int32_t *ali, char *err, size_t errlen);
/* Kaldi's StringHasher (util/stl-utils.h) truncated to int as
 * align-equal-compiled does: h = h * 7853 + c over the key's (signed) chars,
 * modulo 2^64. */
int gh_kaldi_string_hash(const char *key);

#endif
