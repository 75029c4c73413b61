#!/usr/bin/env python3
"""Training graphs for forced alignment, built independently of our C code, as Kaldi
table entries in text form (for gmm-align-compiled's tests).

    align_graphs.py <phones.txt> <words.txt> <lexicon.txt> <show-transitions-out> <text> > graphs.ark

The graph of an utterance is what compile-train-graphs (its defaults: transition-scale 0,
self-loop-scale 0, reorder) accepts, before determinization: Kaldi's L.fst with
sil_prob 0.5 (make_lexicon_fst.py: optional silence before the first word and
after every word, cost -log 0.5 either way; position-dependent phones _B _I _E _S),
composed with the word sequence, each phone expanded into its HMM with Kaldi's
reordered transitions (the first frame of an HMM state emits the transition that
leaves it, the later frames its self-loop, as AddSelfLoops(reorder=true) makes
them).  Transition-id arcs cost 0 (compile-train-graphs leaves the transition
probabilities to gmm-align-compiled); the lexicon's silence costs are the only
graph costs; the word id sits on an epsilon arc before the word's first phone.
Kaldi's graphs are determinized and minimized, which moves costs along paths but
keeps each transition-id sequence's total cost, so the best path is the same.

show-transitions-out: our (or Kaldi's) show-transitions output for the model.
"""
import math
import sys

import numpy as np


def remove_epsilons(n, arcs, final):
    """Epsilon removal (as Kaldi's DeterminizeStar does before determinizing): every
    state gets the emitting arcs of the states its epsilon paths reach, with those
    paths' costs added (the cheapest path where several reach a state) and their
    word label; states no longer reachable from the start (0) are dropped and the
    others renumbered in order of first reach.  Returns (arcs, [(state, final cost)])."""
    out_eps = [[] for _ in range(n)]
    out_emit = [[] for _ in range(n)]
    for s, d, i, o, w in arcs:
        (out_eps if i == 0 else out_emit)[s].append((d, i, o, w))
    new_arcs = {}
    final_cost = {}
    order = [0]
    seen = {0}
    k = 0
    while k < len(order):
        q = order[k]
        k += 1
        best = {q: (np.float32(0), 0)}
        stack = [q]
        while stack:  # costs here are >= 0: a label-correcting search
            r = stack.pop()
            c, ol = best[r]
            for d, _, o, w in out_eps[r]:
                nc = np.float32(c + w)
                if d not in best or nc < best[d][0]:
                    best[d] = (nc, o if o else ol)
                    stack.append(d)
        lst = []
        for r, (c, ol) in best.items():
            if r == final and (q not in final_cost or c < final_cost[q]):
                final_cost[q] = c
            for d, i, o, w in out_emit[r]:
                lst.append((d, i, o if o else ol, np.float32(c + w)))
                if d not in seen:
                    seen.add(d)
                    order.append(d)
        new_arcs[q] = lst
    num = {q: j for j, q in enumerate(order)}
    res = [(num[q], num[d], i, o, w) for q in order for d, i, o, w in new_arcs[q]]
    return res, [(num[q], final_cost[q]) for q in order if q in final_cost]


def main():
    phones_txt, words_txt, lexicon_txt, trans_txt, text = sys.argv[1:6]
    phone_id = {}
    for line in open(phones_txt):
        name, i = line.split()
        phone_id[name] = int(i)
    word_id = {}
    for line in open(words_txt):
        name, i = line.split()
        word_id[name] = int(i)
    lexicon = {}
    for line in open(lexicon_txt):
        f = line.split()
        if f:
            lexicon.setdefault(f[0], []).append(f[1:])
    # per phone name: {hmm_state: [(tid, dst or None for self-loop)]}
    hmm = {}
    cur = None
    for line in open(trans_txt):
        f = line.split()
        if line.startswith('Transition-state'):
            phone = f[f.index('phone') + 2]
            st = int(f[f.index('hmm-state') + 2])
            cur = hmm.setdefault(phone, {}).setdefault(st, [])
        elif line.startswith(' Transition-id'):
            tid = int(f[2])
            if '[self-loop]' in line:
                cur.append((tid, None))
            else:
                a = line[line.index('[') + 1:line.index(']')].split('->')
                cur.append((tid, int(a[1])))
    sil_cost = np.float32(-math.log(0.5))

    def tcost(tid):
        return np.float32(0)

    for line in open(text):
        f = line.split()
        if not f:
            continue
        key, words = f[0], f[1:]
        arcs = []  # (src, dst, ilabel, olabel, weight)
        nstates = [0]

        def new():
            nstates[0] += 1
            return nstates[0] - 1

        def phone_chain(name, entry):
            """Arcs of one phone instance from node entry; returns its exit node."""
            states = hmm[name]
            final = max(d for s in states for _, d in states[s] if d is not None)  # non-emitting
            exit_node = new()
            node = {}  # (incoming hmm state s, destination d) -> graph node

            def get(s, d):
                if (s, d) not in node:
                    n = new()
                    node[(s, d)] = n
                    sl = [t for t, dd in states[s] if dd is None]
                    if sl:
                        arcs.append((n, n, sl[0], 0, tcost(sl[0])))
                    if d == final:
                        arcs.append((n, exit_node, 0, 0, np.float32(0)))
                    else:
                        for t, dd in states[d]:
                            if dd is not None:
                                arcs.append((n, get(d, dd), t, 0, tcost(t)))
                return node[(s, d)]

            for t, dd in states[0]:
                if dd is not None:
                    arcs.append((entry, get(0, dd), t, 0, tcost(t)))
            return exit_node

        def opt_sil(b):
            a = new()
            arcs.append((b, a, 0, 0, sil_cost))
            s = new()
            arcs.append((b, s, 0, 0, sil_cost))
            e = phone_chain('SIL', s)
            arcs.append((e, a, 0, 0, np.float32(0)))
            return a

        b = new()  # start = 0
        a = opt_sil(b)
        for w in words:
            if w not in lexicon:
                sys.exit('align_graphs.py: %s: word %s not in the lexicon' % (key, w))
            b = new()
            for pron in lexicon[w]:
                if len(pron) == 1:
                    tagged = [pron[0] + '_S']
                else:
                    tagged = [pron[0] + '_B'] + [p + '_I' for p in pron[1:-1]] + [pron[-1] + '_E']
                n = new()
                arcs.append((a, n, 0, word_id[w], np.float32(0)))
                for p in tagged:
                    n = phone_chain(p, n)
                arcs.append((n, b, 0, 0, np.float32(0)))
            a = opt_sil(b)
        arcs, finals = remove_epsilons(nstates[0], arcs, a)
        out = [key + ' ']
        # the start state's arcs first (the reader takes the first line's source as start)
        arcs.sort(key=lambda x: x[0] != 0)
        for s, d, i, o, w in arcs:
            out.append('%d\t%d\t%d\t%d\t%.9g' % (s, d, i, o, w))
        for q, w in finals:
            out.append('%d\t%.9g' % (q, w))
        out.append('')
        sys.stdout.write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main()
