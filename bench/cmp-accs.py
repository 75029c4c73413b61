#!/usr/bin/env python3
"""cmp-accs.py A B: compare two text GMM accumulator (or model) files
(gmm-sum-accs --binary=false, gmm-copy --binary=false) number by number, block
by block ("[ ... ]": one Gaussian's or one pdf's vector or matrix), printing for
each kind of block (the token before it, e.g. <FULLVARACCS>) the largest
|a - b| / max |a| over its blocks, with that block's max |a|.  Used by
bench/multi-gpu.sh (is the sum of the --nj 2 accumulators the --nj 1
accumulation up to float rounding?); a report, not a test."""
import sys

def blocks(path):
    toks = open(path).read().split()
    out, label, cur, inb = [], None, None, False
    for i, t in enumerate(toks):
        if t == '[':
            label, cur, inb = toks[i - 1] if i and toks[i - 1] != ']' else label, [], True
        elif t == ']':
            out.append((label, cur)); inb = False
        elif inb:
            cur.append(float(t))
        elif t.startswith('<'):
            label = t
    return out

a, b = blocks(sys.argv[1]), blocks(sys.argv[2])
assert len(a) == len(b), "different block counts"
worst = {}
for (la, va), (lb, vb) in zip(a, b):
    assert la == lb and len(va) == len(vb), (la, lb)
    m = max(abs(x) for x in va) or 1.0
    d = max(abs(x - y) for x, y in zip(va, vb)) / m
    if la not in worst or d > worst[la][0]:
        worst[la] = (d, m)
for k, (d, m) in worst.items():
    print(f"  {k:16s} max |a-b| / max|a| of block: {d:.3g} (block max {m:.4g})")
