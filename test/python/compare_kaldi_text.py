#!/usr/bin/env python3
"""Compare two Kaldi text objects (models, accumulators, tables of vectors or
posteriors) number by number: the same tokens in the same order, and every
number within max |a-b| / (scale + |b|) <= --rtol, where scale is --scale
(default 1).  Prints the maximum; exits 1 on a token mismatch or a number
beyond the tolerance.
Usage: compare_kaldi_text.py a.txt b.txt [--rtol 1e-5] [--scale 1]"""
import argparse
import sys

ap = argparse.ArgumentParser()
ap.add_argument('a')
ap.add_argument('b')
ap.add_argument('--rtol', type=float, default=1e-5)
ap.add_argument('--scale', type=float, default=1.0)
a = ap.parse_args()


def toks(path):
    return open(path).read().split()


def num(t):
    try:
        return float(t)
    except ValueError:
        return None


A, B = toks(a.a), toks(a.b)
if len(A) != len(B):
    print('different token counts: %d vs %d' % (len(A), len(B)))
    sys.exit(1)
worst, where = 0.0, None
for i, (x, y) in enumerate(zip(A, B)):
    fx, fy = num(x), num(y)
    if fx is None or fy is None:
        if x != y:
            print('token %d differs: %r vs %r' % (i, x, y))
            sys.exit(1)
        continue
    e = abs(fx - fy) / (a.scale + abs(fy))
    if e > worst:
        worst, where = e, i
print('max rel diff %.3e at token %s (rtol %.1e)' % (worst, where, a.rtol))
sys.exit(0 if worst <= a.rtol else 1)
