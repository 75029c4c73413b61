/* fst.c -- VectorFst<StdArc> in memory, OpenFst's binary "vector" format, Kaldi's FST
 * table entries and fstprint's text (see fst.h). */
#include "io/fst.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define FST_MAGIC 2125659606
#define SYMTAB_FLAGS 0x3 /* kHasISymbols | kHasOSymbols */

/* OpenFst's composite property masks (fst/properties.h, 1.7). */
#define P_ERROR 0x4ULL
#define P_ACCEPTOR 0x10000ULL
#define P_NOT_ACCEPTOR 0x20000ULL
#define P_IDET 0x40000ULL
#define P_NON_IDET 0x80000ULL
#define P_ODET 0x100000ULL
#define P_NON_ODET 0x200000ULL
#define P_EPS 0x400000ULL
#define P_NO_EPS 0x800000ULL
#define P_IEPS 0x1000000ULL
#define P_NO_IEPS 0x2000000ULL
#define P_OEPS 0x4000000ULL
#define P_NO_OEPS 0x8000000ULL
#define P_ISORT 0x10000000ULL
#define P_NOT_ISORT 0x20000000ULL
#define P_OSORT 0x40000000ULL
#define P_NOT_OSORT 0x80000000ULL
#define P_WEIGHTED 0x100000000ULL
#define P_UNWEIGHTED 0x200000000ULL
#define P_CYCLIC 0x400000000ULL
#define P_ACYCLIC 0x800000000ULL
#define P_INIT_CYCLIC 0x1000000000ULL
#define P_INIT_ACYCLIC 0x2000000000ULL
#define P_TOPSORTED 0x4000000000ULL
#define P_NOT_TOPSORTED 0x8000000000ULL
#define P_ACCESSIBLE 0x10000000000ULL
#define P_NOT_ACCESSIBLE 0x20000000000ULL
#define P_COACCESSIBLE 0x40000000000ULL
#define P_NOT_COACCESSIBLE 0x80000000000ULL
#define P_STRING 0x100000000000ULL
#define P_NOT_STRING 0x200000000000ULL
#define P_WCYCLES 0x400000000000ULL
#define P_UWCYCLES 0x800000000000ULL
#define P_STATIC (GH_FST_EXPANDED | GH_FST_MUTABLE)

#define P_NULL (P_ACCEPTOR | P_IDET | P_ODET | P_NO_EPS | P_NO_IEPS | P_NO_OEPS | P_ISORT | \
                P_OSORT | P_UNWEIGHTED | P_ACYCLIC | P_INIT_ACYCLIC | P_TOPSORTED |         \
                P_ACCESSIBLE | P_COACCESSIBLE | P_STRING | P_UWCYCLES)
/* the trinary pairs every mask below keeps, both halves */
#define P_LABEL_PAIRS (P_ACCEPTOR | P_NOT_ACCEPTOR | P_IDET | P_NON_IDET | P_ODET | P_NON_ODET | \
                       P_EPS | P_NO_EPS | P_IEPS | P_NO_IEPS | P_OEPS | P_NO_OEPS)
#define P_COPY (P_ERROR | P_LABEL_PAIRS | P_ISORT | P_NOT_ISORT | P_OSORT | P_NOT_OSORT |      \
                P_WEIGHTED | P_UNWEIGHTED | P_CYCLIC | P_ACYCLIC | P_INIT_CYCLIC |             \
                P_INIT_ACYCLIC | P_TOPSORTED | P_NOT_TOPSORTED | P_ACCESSIBLE |                \
                P_NOT_ACCESSIBLE | P_COACCESSIBLE | P_NOT_COACCESSIBLE | P_STRING |            \
                P_NOT_STRING | P_WCYCLES | P_UWCYCLES)
#define P_SET_START (P_STATIC | P_ERROR | P_LABEL_PAIRS | P_ISORT | P_NOT_ISORT | P_OSORT |   \
                     P_NOT_OSORT | P_WEIGHTED | P_UNWEIGHTED | P_CYCLIC | P_ACYCLIC |          \
                     P_TOPSORTED | P_NOT_TOPSORTED | P_COACCESSIBLE | P_NOT_COACCESSIBLE |     \
                     P_WCYCLES | P_UWCYCLES)
#define P_SET_FINAL (P_STATIC | P_ERROR | P_LABEL_PAIRS | P_ISORT | P_NOT_ISORT | P_OSORT |   \
                     P_NOT_OSORT | P_CYCLIC | P_ACYCLIC | P_INIT_CYCLIC | P_INIT_ACYCLIC |     \
                     P_TOPSORTED | P_NOT_TOPSORTED | P_ACCESSIBLE | P_NOT_ACCESSIBLE |         \
                     P_WCYCLES | P_UWCYCLES)
#define P_ADD_STATE (P_STATIC | P_ERROR | P_LABEL_PAIRS | P_ISORT | P_NOT_ISORT | P_OSORT |   \
                     P_NOT_OSORT | P_WEIGHTED | P_UNWEIGHTED | P_CYCLIC | P_ACYCLIC |          \
                     P_INIT_CYCLIC | P_INIT_ACYCLIC | P_TOPSORTED | P_NOT_TOPSORTED |          \
                     P_NOT_ACCESSIBLE | P_NOT_COACCESSIBLE | P_NOT_STRING | P_WCYCLES |        \
                     P_UWCYCLES)
#define P_ADD_ARC (P_STATIC | P_ERROR | P_NOT_ACCEPTOR | P_NON_IDET | P_NON_ODET | P_EPS |     \
                   P_IEPS | P_OEPS | P_NOT_ISORT | P_NOT_OSORT | P_WEIGHTED | P_CYCLIC |        \
                   P_INIT_CYCLIC | P_NOT_TOPSORTED | P_ACCESSIBLE | P_COACCESSIBLE | P_WCYCLES)
#define P_ARC_SORT (P_STATIC | P_ERROR | P_LABEL_PAIRS | P_WEIGHTED | P_UNWEIGHTED |          \
                    P_CYCLIC | P_ACYCLIC | P_INIT_CYCLIC | P_INIT_ACYCLIC | P_TOPSORTED |      \
                    P_NOT_TOPSORTED | P_ACCESSIBLE | P_NOT_ACCESSIBLE | P_COACCESSIBLE |       \
                    P_NOT_COACCESSIBLE | P_STRING | P_NOT_STRING | P_WCYCLES | P_UWCYCLES)

static int weight_is_plain(float w) { return w == GH_FST_ZERO || w == GH_FST_ONE; }

void gh_fst_init(gh_fst *f) {
  memset(f, 0, sizeof *f);
  f->start = -1;
  f->props = P_NULL | P_STATIC;
}

void gh_fst_free(gh_fst *f) {
  for (int32_t s = 0; s < f->nstates; s++) free(f->states[s].arcs);
  free(f->states);
  gh_fst_init(f);
}

static void check_state(const gh_fst *f, int32_t s, const char *what) {
  if (s < 0 || s >= f->nstates)
    gh_die("internal: %s: state %d out of range (the FST has %d states)", what, s, f->nstates);
}

int32_t gh_fst_add_state(gh_fst *f) {
  if (f->nstates == INT32_MAX) gh_die("FST: more than %d states", INT32_MAX);
  if (f->nstates == f->cap) {
    f->cap = f->cap ? (f->cap > INT32_MAX / 2 ? INT32_MAX : 2 * f->cap) : 16;
    f->states = gh_realloc(f->states, (size_t)f->cap * sizeof *f->states);
  }
  gh_fst_state *st = &f->states[f->nstates];
  memset(st, 0, sizeof *st);
  st->final = GH_FST_ZERO;
  f->props &= P_ADD_STATE;
  return f->nstates++;
}

void gh_fst_set_start(gh_fst *f, int32_t s) {
  check_state(f, s, "gh_fst_set_start");
  f->start = s;
  uint64_t in = f->props, out = in & P_SET_START;
  if (in & P_ACYCLIC) out |= P_INIT_ACYCLIC;
  f->props = out;
}

void gh_fst_set_final(gh_fst *f, int32_t s, float weight) {
  check_state(f, s, "gh_fst_set_final");
  float old = f->states[s].final;
  uint64_t p = f->props;
  if (!weight_is_plain(old)) p &= ~P_WEIGHTED;
  if (!weight_is_plain(weight)) { p |= P_WEIGHTED; p &= ~P_UNWEIGHTED; }
  p &= P_SET_FINAL | P_WEIGHTED | P_UNWEIGHTED;
  f->states[s].final = weight;
  f->props = p;
}

void gh_fst_add_arc(gh_fst *f, int32_t s, int32_t ilabel, int32_t olabel, float weight,
                    int32_t nextstate) {
  check_state(f, s, "gh_fst_add_arc");
  if (nextstate < 0) gh_die("internal: gh_fst_add_arc: negative next state %d", nextstate);
  gh_fst_state *st = &f->states[s];
  if (st->narcs == INT32_MAX) gh_die("FST: state %d has more than %d arcs", s, INT32_MAX);
  if (st->narcs == st->cap) {
    st->cap = st->cap ? (st->cap > INT32_MAX / 2 ? INT32_MAX : 2 * st->cap) : 4;
    st->arcs = gh_realloc(st->arcs, (size_t)st->cap * sizeof *st->arcs);
  }
  gh_fst_arc a = {ilabel, olabel, weight, nextstate};
  const gh_fst_arc *prev = st->narcs ? &st->arcs[st->narcs - 1] : NULL;
  st->arcs[st->narcs++] = a;
  /* OpenFst's AddArcProperties */
  uint64_t p = f->props;
  if (ilabel != olabel) { p |= P_NOT_ACCEPTOR; p &= ~P_ACCEPTOR; }
  if (ilabel == 0) {
    p |= P_IEPS; p &= ~P_NO_IEPS;
    if (olabel == 0) { p |= P_EPS; p &= ~P_NO_EPS; }
  }
  if (olabel == 0) { p |= P_OEPS; p &= ~P_NO_OEPS; }
  if (prev) {
    if (prev->ilabel > ilabel) { p |= P_NOT_ISORT; p &= ~P_ISORT; }
    if (prev->olabel > olabel) { p |= P_NOT_OSORT; p &= ~P_OSORT; }
  }
  if (!weight_is_plain(weight)) { p |= P_WEIGHTED; p &= ~P_UNWEIGHTED; }
  if (nextstate <= s) { p |= P_NOT_TOPSORTED; p &= ~P_TOPSORTED; }
  p &= P_ADD_ARC | P_ACCEPTOR | P_NO_EPS | P_NO_IEPS | P_NO_OEPS | P_ISORT | P_OSORT |
       P_UNWEIGHTED | P_TOPSORTED;
  if (p & P_TOPSORTED) p |= P_ACYCLIC | P_INIT_ACYCLIC;
  f->props = p;
}

int64_t gh_fst_num_arcs(const gh_fst *f) {
  int64_t n = 0;
  for (int32_t s = 0; s < f->nstates; s++) n += f->states[s].narcs;
  return n;
}

/* ---------------- arc sort: libstdc++'s std::sort, step for step ----------------
 * Arcs with equal keys keep the order libstdc++ 's introsort (median-of-three
 * unguarded partition, heap sort past the depth limit, insertion sort of runs of
 * 16) leaves them in, which is the order fstarcsort writes. */
typedef int (*arc_less)(const gh_fst_arc *a, const gh_fst_arc *b);
static int less_ilabel(const gh_fst_arc *a, const gh_fst_arc *b) {
  return a->ilabel < b->ilabel || (a->ilabel == b->ilabel && a->olabel < b->olabel);
}
static int less_olabel(const gh_fst_arc *a, const gh_fst_arc *b) {
  return a->olabel < b->olabel || (a->olabel == b->olabel && a->ilabel < b->ilabel);
}
static void arc_swap(gh_fst_arc *a, gh_fst_arc *b) { gh_fst_arc t = *a; *a = *b; *b = t; }

static void push_heap(gh_fst_arc *first, long hole, long top, gh_fst_arc value, arc_less lt) {
  long parent = (hole - 1) / 2;
  while (hole > top && lt(&first[parent], &value)) {
    first[hole] = first[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  first[hole] = value;
}
static void adjust_heap(gh_fst_arc *first, long hole, long len, gh_fst_arc value, arc_less lt) {
  long top = hole, child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (lt(&first[child], &first[child - 1])) child--;
    first[hole] = first[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    first[hole] = first[child - 1];
    hole = child - 1;
  }
  push_heap(first, hole, top, value, lt);
}
static void heap_sort(gh_fst_arc *first, gh_fst_arc *last, arc_less lt) {
  long len = last - first;
  if (len >= 2) /* make_heap */
    for (long parent = (len - 2) / 2;; parent--) {
      adjust_heap(first, parent, len, first[parent], lt);
      if (parent == 0) break;
    }
  while (last - first > 1) { /* sort_heap */
    --last;
    gh_fst_arc value = *last;
    *last = *first;
    adjust_heap(first, 0, last - first, value, lt);
  }
}
static void move_median_to_first(gh_fst_arc *result, gh_fst_arc *a, gh_fst_arc *b,
                                 gh_fst_arc *c, arc_less lt) {
  if (lt(a, b)) {
    if (lt(b, c)) arc_swap(result, b);
    else if (lt(a, c)) arc_swap(result, c);
    else arc_swap(result, a);
  } else if (lt(a, c)) arc_swap(result, a);
  else if (lt(b, c)) arc_swap(result, c);
  else arc_swap(result, b);
}
static gh_fst_arc *unguarded_partition(gh_fst_arc *first, gh_fst_arc *last, gh_fst_arc *pivot,
                                       arc_less lt) {
  for (;;) {
    while (lt(first, pivot)) ++first;
    --last;
    while (lt(pivot, last)) --last;
    if (!(first < last)) return first;
    arc_swap(first, last);
    ++first;
  }
}
static void introsort_loop(gh_fst_arc *first, gh_fst_arc *last, long depth, arc_less lt) {
  while (last - first > 16) {
    if (depth == 0) { heap_sort(first, last, lt); return; }
    --depth;
    gh_fst_arc *mid = first + (last - first) / 2;
    move_median_to_first(first, first + 1, mid, last - 1, lt);
    gh_fst_arc *cut = unguarded_partition(first + 1, last, first, lt);
    introsort_loop(cut, last, depth, lt);
    last = cut;
  }
}
static void unguarded_linear_insert(gh_fst_arc *last, arc_less lt) {
  gh_fst_arc val = *last, *next = last - 1;
  while (lt(&val, next)) { *last = *next; last = next; --next; }
  *last = val;
}
static void insertion_sort(gh_fst_arc *first, gh_fst_arc *last, arc_less lt) {
  if (first == last) return;
  for (gh_fst_arc *i = first + 1; i != last; ++i) {
    if (lt(i, first)) {
      gh_fst_arc val = *i;
      memmove(first + 1, first, (size_t)(i - first) * sizeof *first);
      *first = val;
    } else unguarded_linear_insert(i, lt);
  }
}
static void std_sort(gh_fst_arc *first, gh_fst_arc *last, arc_less lt) {
  long n = last - first;
  if (n <= 1) return;
  long lg = 0;
  while ((1L << (lg + 1)) <= n) lg++;
  introsort_loop(first, last, 2 * lg, lt);
  if (n > 16) {
    insertion_sort(first, first + 16, lt);
    for (gh_fst_arc *i = first + 16; i != last; ++i) unguarded_linear_insert(i, lt);
  } else insertion_sort(first, last, lt);
}

void gh_fst_arcsort(gh_fst *f, gh_fst_sort_type type) {
  if (f->start < 0) return; /* OpenFst's StateMap leaves an FST without start alone */
  arc_less lt = type == GH_FST_SORT_ILABEL ? less_ilabel : less_olabel;
  for (int32_t s = 0; s < f->nstates; s++)
    std_sort(f->states[s].arcs, f->states[s].arcs + f->states[s].narcs, lt);
  uint64_t in = f->props, out = in & P_ARC_SORT;
  if (type == GH_FST_SORT_ILABEL) out |= P_ISORT | (in & P_ACCEPTOR ? P_OSORT : 0);
  else out |= P_OSORT | (in & P_ACCEPTOR ? P_ISORT : 0);
  f->props = out;
}

/* ---------------- fstcompile's state numbering ---------------- */
struct gh_fst_compiler {
  gh_fst *f;
  int32_t *ids; /* text id -> dense id, for text ids 0 .. nids-1 (-1: not seen) */
  int64_t nids;
  int32_t next; /* dense ids handed out */
  int started;
};

gh_fst_compiler *gh_fst_compiler_new(gh_fst *f) {
  gh_fst_compiler *c = gh_calloc(1, sizeof *c);
  c->f = f;
  return c;
}
void gh_fst_compiler_free(gh_fst_compiler *c) {
  if (!c) return;
  free(c->ids);
  free(c);
}
/* fstcompile's StrToStateId: the dense id of a text id (new ids in order of first
 * appearance). */
static int32_t compiler_id(gh_fst_compiler *c, int64_t id) {
  if (id < 0 || id >= INT32_MAX) gh_die("internal: FST text state id %lld out of range", (long long)id);
  if (id >= c->nids) {
    int64_t n = c->nids ? c->nids : 64;
    while (n <= id) n *= 2;
    c->ids = gh_realloc(c->ids, (size_t)n * sizeof *c->ids);
    for (int64_t i = c->nids; i < n; i++) c->ids[i] = -1;
    c->nids = n;
  }
  if (c->ids[id] < 0) c->ids[id] = c->next++;
  return c->ids[id];
}
static int32_t compiler_source(gh_fst_compiler *c, int64_t id) {
  int32_t s = compiler_id(c, id);
  while (s >= c->f->nstates) gh_fst_add_state(c->f);
  if (!c->started) {
    gh_fst_set_start(c->f, s);
    c->started = 1;
  }
  return s;
}
void gh_fst_compile_arc(gh_fst_compiler *c, int64_t src, int64_t dst, int32_t ilabel,
                        int32_t olabel, float weight) {
  int32_t s = compiler_source(c, src), d = compiler_id(c, dst);
  gh_fst_add_arc(c->f, s, ilabel, olabel, weight, d);
  while (d >= c->f->nstates) gh_fst_add_state(c->f);
}
void gh_fst_compile_final(gh_fst_compiler *c, int64_t s, float weight) {
  gh_fst_set_final(c->f, compiler_source(c, s), weight);
}

/* ---------------- binary I/O ---------------- */
static int32_t rd_i32(gh_istream *s) { int32_t v; gh_istream_read(s, &v, 4); return v; }
static int64_t rd_i64(gh_istream *s) { int64_t v; gh_istream_read(s, &v, 8); return v; }
static float rd_f32(gh_istream *s) { float v; gh_istream_read(s, &v, 4); return v; }

/* An OpenFst string (int32 length + bytes), compared with `want`. */
static void expect_string(gh_istream *s, const char *want, const char *what) {
  int32_t n = rd_i32(s);
  char buf[64];
  if (n < 0 || n >= (int32_t)sizeof buf)
    gh_istream_fail(s, "OpenFst header: %s has a bad length %d (expected \"%s\")", what, n, want);
  gh_istream_read(s, buf, (size_t)n);
  buf[n] = '\0';
  if (strcmp(buf, want))
    gh_istream_fail(s, "OpenFst header: %s is \"%s\", only \"%s\" is supported", what,
                    gh_printable_token(buf), want);
}

void gh_fst_read(gh_istream *s, gh_fst *f) {
  gh_fst_free(f);
  int32_t magic = rd_i32(s);
  if (magic != FST_MAGIC)
    gh_istream_fail(s, "not an OpenFst binary FST (magic number %d, expected %d)", magic, FST_MAGIC);
  expect_string(s, "vector", "FST type");
  expect_string(s, "standard", "arc type");
  int32_t version = rd_i32(s), flags = rd_i32(s);
  if (version < 2) gh_istream_fail(s, "OpenFst vector FST version %d (2 or later expected)", version);
  if (flags & SYMTAB_FLAGS)
    gh_istream_fail(s, "the FST carries symbol tables (flags %d); write it without them "
                    "(fstcompile --keep_isymbols=false --keep_osymbols=false)", flags);
  uint64_t props;
  gh_istream_read(s, &props, 8);
  int64_t start = rd_i64(s), nstates = rd_i64(s);
  (void)rd_i64(s); /* numarcs: not used by VectorFst */
  if (nstates < 0 || nstates >= INT32_MAX)
    gh_istream_fail(s, "OpenFst header: bad number of states %lld", (long long)nstates);
  if (start < -1 || start >= nstates)
    gh_istream_fail(s, "OpenFst header: start state %lld out of range (%lld states)",
                    (long long)start, (long long)nstates);
  gh_istream_need(s, (uint64_t)nstates, 12, "the FST's states");
  f->states = gh_calloc(nstates ? (size_t)nstates : 1, sizeof *f->states);
  f->cap = (int32_t)nstates;
  for (int64_t q = 0; q < nstates; q++) {
    gh_fst_state *st = &f->states[q];
    f->nstates = (int32_t)q + 1; /* so gh_fst_free frees what was read */
    st->final = rd_f32(s);
    int64_t narcs = rd_i64(s);
    if (narcs < 0 || narcs >= INT32_MAX)
      gh_istream_fail(s, "state %lld: bad number of arcs %lld", (long long)q, (long long)narcs);
    gh_istream_need(s, (uint64_t)narcs, 16, "the state's arcs");
    st->narcs = st->cap = (int32_t)narcs;
    st->arcs = narcs ? gh_malloc((size_t)narcs * sizeof *st->arcs) : NULL;
    for (int64_t a = 0; a < narcs; a++) {
      gh_fst_arc *arc = &st->arcs[a];
      arc->ilabel = rd_i32(s);
      arc->olabel = rd_i32(s);
      arc->weight = rd_f32(s);
      arc->nextstate = rd_i32(s);
      if (arc->nextstate < 0 || arc->nextstate >= nstates)
        gh_istream_fail(s, "state %lld, arc %lld: next state %d out of range (%lld states)",
                        (long long)q, (long long)a, arc->nextstate, (long long)nstates);
    }
  }
  f->start = (int32_t)start;
  f->props = props;
}

static void wr(gh_ostream *s, const void *p, size_t n) { fwrite(p, 1, n, gh_ostream_fp(s)); }
static void wr_i32(gh_ostream *s, int32_t v) { wr(s, &v, 4); }
static void wr_i64(gh_ostream *s, int64_t v) { wr(s, &v, 8); }
static void wr_str(gh_ostream *s, const char *str) {
  wr_i32(s, (int32_t)strlen(str));
  wr(s, str, strlen(str));
}

void gh_fst_write(gh_ostream *s, const gh_fst *f) {
  for (int32_t q = 0; q < f->nstates; q++)
    for (int32_t a = 0; a < f->states[q].narcs; a++)
      if (f->states[q].arcs[a].nextstate >= f->nstates)
        gh_die("%s: state %d, arc %d: next state %d does not exist (%d states)", gh_ostream_name(s),
               q, a, f->states[q].arcs[a].nextstate, f->nstates);
  wr_i32(s, FST_MAGIC);
  wr_str(s, "vector");
  wr_str(s, "standard");
  wr_i32(s, 2); /* version */
  wr_i32(s, 0); /* flags: no symbol tables */
  uint64_t props = (f->props & P_COPY) | P_STATIC;
  wr(s, &props, 8);
  wr_i64(s, f->start);
  wr_i64(s, f->nstates);
  wr_i64(s, 0); /* numarcs: OpenFst's VectorFst writes 0 */
  for (int32_t q = 0; q < f->nstates; q++) {
    const gh_fst_state *st = &f->states[q];
    wr(s, &st->final, 4);
    wr_i64(s, st->narcs);
    for (int32_t a = 0; a < st->narcs; a++) {
      const gh_fst_arc *arc = &st->arcs[a];
      wr_i32(s, arc->ilabel);
      wr_i32(s, arc->olabel);
      wr(s, &arc->weight, 4);
      wr_i32(s, arc->nextstate);
    }
  }
  gh_ostream_check(s, "FST");
}

void gh_fst_read_file(const char *rx, gh_fst *f) {
  gh_istream *s = gh_istream_open(rx);
  if (!s) gh_die("%s", gh_last_error());
  gh_fst_read(s, f);
  gh_istream_close(s);
}

void gh_fst_write_file(const char *wx, const gh_fst *f) {
  gh_ostream *s = gh_ostream_open(wx);
  gh_fst_write(s, f);
  gh_ostream_close(s);
}

/* ---------------- text ---------------- */
static void print_weight(FILE *fp, float w, int precision) {
  if (w == INFINITY) fputs("Infinity", fp);
  else if (w == -INFINITY) fputs("-Infinity", fp);
  else if (w != w) fputs("BadNumber", fp);
  else fprintf(fp, "%.*g", precision, (double)w);
}

static void print_state(FILE *fp, const gh_fst *f, int32_t q, int precision) {
  const gh_fst_state *st = &f->states[q];
  for (int32_t a = 0; a < st->narcs; a++) {
    const gh_fst_arc *arc = &st->arcs[a];
    fprintf(fp, "%d\t%d\t%d\t%d", q, arc->nextstate, arc->ilabel, arc->olabel);
    if (arc->weight != GH_FST_ONE) { putc('\t', fp); print_weight(fp, arc->weight, precision); }
    putc('\n', fp);
  }
  if (st->final != GH_FST_ZERO || st->narcs == 0) {
    fprintf(fp, "%d", q);
    if (st->final != GH_FST_ONE) { putc('\t', fp); print_weight(fp, st->final, precision); }
    putc('\n', fp);
  }
}

void gh_fst_print(FILE *fp, const gh_fst *f, int precision) {
  if (f->start < 0) return;
  print_state(fp, f, f->start, precision);
  for (int32_t q = 0; q < f->nstates; q++)
    if (q != f->start) print_state(fp, f, q, precision);
}

/* Kaldi's text FST entry: "\n", lines "s d i o [w]" or "s [w]", an empty line ends it
 * (fstext/kaldi-fst-io-inl.h ReadFstKaldi). */
static void read_text_fst(gh_istream *s, gh_fst *f) {
  while (gh_istream_peek(s) == ' ' || gh_istream_peek(s) == '\t' || gh_istream_peek(s) == '\r')
    gh_istream_getc(s);
  if (gh_istream_getc(s) != '\n') gh_istream_fail(s, "text FST: expected a newline after the key");
  int first = 1;
  for (int64_t nline = 1; !gh_istream_eof(s); nline++) {
    char *line = gh_read_line(s), *tok[6];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
      if (n == 6) break;
      tok[n++] = t;
    }
    if (n == 0) break;
    long long v[4];
    float w = GH_FST_ONE;
    int ok = n != 3 && n <= 5;
    for (int i = 0; ok && i < (n >= 4 ? 4 : 1); i++) {
      char *end;
      v[i] = strtoll(tok[i], &end, 10);
      if (*end || end == tok[i] || v[i] < (i < 2 ? 0 : INT32_MIN) || v[i] >= INT32_MAX) ok = 0;
    }
    if (ok && (n == 2 || n == 5)) {
      const char *wt = tok[n - 1];
      char *end;
      if (!strcmp(wt, "Infinity") || !strcmp(wt, "inf")) w = GH_FST_ZERO;
      else {
        w = strtof(wt, &end);
        if (*end || end == wt) ok = 0;
      }
      if (n == 5 && w == GH_FST_ZERO) ok = 0;
    }
    if (!ok) gh_istream_fail(s, "text FST, line %lld: bad line (expected \"src dst ilabel olabel [weight]\" or \"state [weight]\")", (long long)nline);
    while (v[0] >= f->nstates) gh_fst_add_state(f);
    if (first) { gh_fst_set_start(f, (int32_t)v[0]); first = 0; }
    if (n <= 2) gh_fst_set_final(f, (int32_t)v[0], w);
    else {
      gh_fst_add_arc(f, (int32_t)v[0], (int32_t)v[2], (int32_t)v[3], w, (int32_t)v[1]);
      while (v[1] >= f->nstates) gh_fst_add_state(f);
    }
  }
}

void gh_fst_read_holder(gh_istream *s, gh_fst *f) {
  gh_fst_free(f);
  int c = gh_istream_peek(s);
  if (c < 0) gh_istream_fail(s, "unexpected end of file (no FST)");
  if (isspace(c)) read_text_fst(s, f);
  else gh_fst_read(s, f);
}

void gh_fst_write_holder(gh_ostream *s, int binary, const gh_fst *f) {
  if (binary) { gh_fst_write(s, f); return; }
  FILE *fp = gh_ostream_fp(s);
  putc('\n', fp);
  gh_fst_print(fp, f, 6);
  putc('\n', fp);
  gh_ostream_check(s, "FST");
}
