/* fst.h -- an in-memory weighted transducer over the tropical semiring (OpenFst's
 * VectorFst<StdArc>), read and written in OpenFst's binary "vector" format byte for
 * byte, in Kaldi's FST table entries (fstext/kaldi-fst-io), and printed as fstprint.
 *
 * Shapes and units.  States are numbered 0 .. nstates-1 (int32); an arc is (ilabel,
 * olabel: int32, 0 = epsilon; weight: float, a cost = negated natural log of a
 * probability; nextstate: int32).  A state's final weight is a cost too:
 * GH_FST_ZERO (+infinity) means "not final", GH_FST_ONE (0) a final state of cost 0.
 * start is -1 while no start state is set.
 *
 * Properties.  props holds OpenFst's 64-bit property word (fst/properties.h) as
 * OpenFst's VectorFst keeps it: the known bits are updated by each call exactly as
 * OpenFst's AddState / AddArc / SetFinal / SetStart / ArcSort update them, so that
 * gh_fst_write writes the header OpenFst itself would write after the same calls
 * (fstcompile's call order is gh_fst_compile_*).  A read FST keeps the properties of
 * its header (so read-then-write is byte-identical).
 *
 * File format (OpenFst 1.7 VectorFst::Write, little-endian): header = int32 magic
 * 2125659606, string "vector", string "standard" (a string = int32 length + bytes),
 * int32 version 2, int32 flags 0, uint64 properties, int64 start, int64 numstates,
 * int64 numarcs (0); then per state: float final weight, int64 narcs, narcs x
 * (int32 ilabel, int32 olabel, float weight, int32 nextstate).
 *
 * Use, e.g. a training graph per utterance (compile-train-graphs):
 *   gh_fst f; gh_fst_init(&f);
 *   int32_t s0 = gh_fst_add_state(&f), s1 = gh_fst_add_state(&f);
 *   gh_fst_set_start(&f, s0);
 *   gh_fst_add_arc(&f, s0, tid, word, cost, s1);      // labels int32, cost = -log p
 *   gh_fst_set_final(&f, s1, GH_FST_ONE);
 *   gh_fst_arcsort(&f, GH_FST_SORT_ILABEL);             // if the consumer wants it
 *   gh_writer_write(w, key, GH_OBJ_FST, &f);            // io/table.h: "ark:|gzip -c > fsts.1.gz"
 *   gh_fst_free(&f);
 * and back: gh_seq_reader_open(rspec, GH_OBJ_FST), gh_seq_reader_value() is a gh_fst *
 * owned by the reader (valid until the next call on it).
 *
 * Errors: readers die (gh_istream_fail: stream name, key, offset) on a bad magic, a
 * type other than vector/standard, symbol tables in the header, sizes beyond what
 * the input holds (checked with gh_istream_need before any allocation), a state id
 * out of range, or a truncated file.  Builders die (gh_die) on a state id out of
 * range (a caller bug).  Nothing here aborts.
 */
#ifndef GH_FST_H
#define GH_FST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include "io/kaldi-io.h"

#define GH_FST_ZERO INFINITY /* tropical Zero: no path / not final */
#define GH_FST_ONE 0.0f      /* tropical One: cost 0 */

/* OpenFst property bits used here (fst/properties.h). */
#define GH_FST_EXPANDED 0x1ULL
#define GH_FST_MUTABLE 0x2ULL
#define GH_FST_ACCEPTOR 0x10000ULL
#define GH_FST_ILABEL_SORTED 0x10000000ULL
#define GH_FST_OLABEL_SORTED 0x40000000ULL

typedef struct {
  int32_t ilabel, olabel;
  float weight;
  int32_t nextstate;
} gh_fst_arc;

typedef struct {
  float final;      /* GH_FST_ZERO if not final */
  int32_t narcs, cap;
  gh_fst_arc *arcs; /* [narcs] */
} gh_fst_state;

typedef struct {
  int32_t start;          /* -1: none */
  int32_t nstates, cap;
  gh_fst_state *states;   /* [nstates] */
  uint64_t props;         /* OpenFst property word (see above) */
} gh_fst;

/* An empty FST (no states, start -1, OpenFst's properties of a new VectorFst). */
void gh_fst_init(gh_fst *f);
void gh_fst_free(gh_fst *f); /* frees and re-initializes */
/* Adds a state (not final, no arcs); returns its id. */
int32_t gh_fst_add_state(gh_fst *f);
/* Sets the start state (s in [0, nstates)). */
void gh_fst_set_start(gh_fst *f, int32_t s);
/* Sets state s's final weight (a cost; GH_FST_ZERO makes it non-final). */
void gh_fst_set_final(gh_fst *f, int32_t s, float weight);
/* Appends an arc to state s.  nextstate may be a state not added yet (as in OpenFst:
 * the caller adds it before writing); gh_fst_write dies on one that never was. */
void gh_fst_add_arc(gh_fst *f, int32_t s, int32_t ilabel, int32_t olabel, float weight,
                    int32_t nextstate);
int64_t gh_fst_num_arcs(const gh_fst *f); /* total over all states */

/* Sorts every state's arcs as OpenFst's ArcSort (fstarcsort) does: by (ilabel,
 * olabel) for GH_FST_SORT_ILABEL, by (olabel, ilabel) for GH_FST_SORT_OLABEL, in the
 * same order libstdc++'s std::sort leaves arcs whose two labels are equal (so the
 * bytes match fstarcsort's), and sets the sorted property. */
typedef enum { GH_FST_SORT_ILABEL, GH_FST_SORT_OLABEL } gh_fst_sort_type;
void gh_fst_arcsort(gh_fst *f, gh_fst_sort_type type);

/* fstcompile's text reading, for builders that produce fstprint-style lines: state
 * ids as written are renumbered densely in order of first appearance (source, then
 * destination), the first line's source is the start state, and states are added in
 * fstcompile's order, so the result (and its properties) is what
 * "... | fstcompile" makes of the same lines.  A compiler holds the id map. */
typedef struct gh_fst_compiler gh_fst_compiler;
gh_fst_compiler *gh_fst_compiler_new(gh_fst *f); /* f: initialized, empty */
/* The line "src dst ilabel olabel weight" (weight: a cost). */
void gh_fst_compile_arc(gh_fst_compiler *c, int64_t src, int64_t dst, int32_t ilabel,
                        int32_t olabel, float weight);
/* The line "s weight" (final state). */
void gh_fst_compile_final(gh_fst_compiler *c, int64_t s, float weight);
void gh_fst_compiler_free(gh_fst_compiler *c);

/* Binary OpenFst "vector" file: reads into f (freed first).  See the errors above. */
void gh_fst_read(gh_istream *s, gh_fst *f);
/* Writes f as OpenFst writes it (properties & OpenFst's kCopyProperties, plus
 * expanded and mutable).  Dies on an arc to a state that does not exist. */
void gh_fst_write(gh_ostream *s, const gh_fst *f);
/* Whole files: rxfilename / wxfilename forms of kaldi-io.h ("-", "cmd |", gzip'd
 * input).  gh_fst_read_file dies with the file's name if it cannot be opened. */
void gh_fst_read_file(const char *rxfilename, gh_fst *f);
void gh_fst_write_file(const char *wxfilename, const gh_fst *f);

/* Kaldi's FST table entry (VectorFstHolder), after the key and its space: binary =
 * the OpenFst file above with no "\0B" marker; text = "\n", the fstprint lines
 * (weights with 6 significant digits, as Kaldi's WriteFstKaldi), then an empty line.
 * The reader looks at the next byte: whitespace = text, else binary (as Kaldi). */
void gh_fst_read_holder(gh_istream *s, gh_fst *f);
void gh_fst_write_holder(gh_ostream *s, int binary, const gh_fst *f);

/* Prints f as fstprint does (no symbol tables): the start state first, then the
 * others in order; per state its arcs "src\tdst\tilabel\tolabel[\tweight]" and, if
 * final (or without arcs), "s[\tweight]"; weights other than 0 printed with
 * `precision` significant digits (fstprint: 9; Kaldi's text tables: 6), +infinity
 * as "Infinity".  Nothing is printed for an FST without a start state. */
void gh_fst_print(FILE *fp, const gh_fst *f, int precision);

#endif
