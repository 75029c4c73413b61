#!/usr/bin/env python3
"""Undo Kaldi's gmm-mixup on a mixed-up model, as an independent check of its
random perturbation.

Usage: mixup_unsplit.py <mixed-up.mdl as text> <pre-mixup.mdl text out> [perturb_factor]

Kaldi's DiagGmm::Split (gmm/diag-gmm.cc) on a pdf that starts with one
Gaussian: the heaviest Gaussian (first among equals) is halved and copied,
and the two means_invvars rows move by +/- fl(perturb * r), r = RandGauss() *
sqrtf(inv_var) (fused multiply-add over the first D & ~15 dimensions, as the
OpenBLAS saxpy of the Kaldi build that made the fixture), RandGauss from the C library's rand() seeded 1 (Kaldi never
seeds it), pdfs in order.  This script replays those random numbers with
glibc's rand/logf/cosf/sqrtf through ctypes, recovers for every split the
float mean m with fl(m + d) and fl(m - d) equal to the two stored rows, and
writes the one-Gaussian model (gconsts of the recovered pdfs in float64;
gmm-mixup recomputes them after splitting).  It fails (exit 1) if some split
cannot be undone, i.e. if the random numbers are not the ones Kaldi drew.
Needs numpy."""
import ctypes
import math
import re
import sys

import numpy as np

libc = ctypes.CDLL("libc.so.6")
libm = ctypes.CDLL("libm.so.6")
for f in ("logf", "cosf", "sqrtf"):
    getattr(libm, f).restype = ctypes.c_float
    getattr(libm, f).argtypes = [ctypes.c_float]
RAND_MAX = 2147483647
f32 = np.float32


def rand_uniform():
    return f32((libc.rand() + 1.0) / (RAND_MAX + 2.0))


def rand_gauss():
    a = f32(libm.sqrtf(f32(f32(-2) * f32(libm.logf(rand_uniform())))))
    b = f32(libm.cosf(f32(2 * math.pi * float(rand_uniform()))))
    return f32(a * b)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    pf = f32(float(sys.argv[3]) if len(sys.argv) > 3 else 0.01)
    text = open(src).read()
    head_end = text.index("<DiagGMM>")
    head, body = text[:head_end], text[head_end:]
    blocks = re.findall(r"<DiagGMM>.*?</DiagGMM>", body, re.S)

    def vec(b, tag):
        s = re.search(r"<%s>\s*\[(.*?)\]" % tag, b, re.S).group(1)
        return np.array([float(x) for x in s.split()], dtype=np.float32)

    libc.srand(1)
    out = [head]
    nsplit = 0
    for b in blocks:
        w = vec(b, "WEIGHTS")
        G = len(w)
        mi = vec(b, "MEANS_INVVARS").reshape(G, -1)
        iv = vec(b, "INV_VARS").reshape(G, -1)
        D = mi.shape[1]
        if G > 1:
            # the split order from the weights alone
            ws = [f32(1.0)]
            order = []
            for cur in range(1, G):
                mx = max(range(cur), key=lambda i: (ws[i], -i))
                ws[mx] = f32(ws[mx] / 2)
                ws.append(ws[mx])
                order.append(mx)
            deltas = []
            for cur in range(1, G):
                mx = order[cur - 1]
                r = np.array([f32(rand_gauss() * f32(libm.sqrtf(iv[mx, d]))) for d in range(D)], dtype=np.float32)
                deltas.append((mx, cur, r))
            m = mi.copy()
            nf = D & ~15
            for mx, cur, r in reversed(deltas):
                rec = np.empty(D, dtype=np.float32)
                for d in range(D):
                    if d < nf:  # fused multiply-add: one rounding
                        dn, do = float(pf) * float(r[d]), -float(pf) * float(r[d])
                        add = lambda c, x: f32(float(c) + x)
                    else:
                        dn, do = f32(pf * r[d]), f32(-pf * r[d])
                        add = lambda c, x: f32(c + x)
                    c0 = f32(float(m[cur, d]) - float(dn))
                    found = None
                    for k in (0, 1, -1, 2, -2, 3, -3, 4, -4):
                        c = c0
                        for _ in range(abs(k)):
                            c = np.nextafter(c, f32(np.inf) if k > 0 else f32(-np.inf))
                        if add(c, dn) == m[cur, d] and add(c, do) == m[mx, d]:
                            found = c
                            break
                    if found is None:
                        sys.exit("mixup_unsplit: cannot undo split %d of a pdf in dimension %d: the random "
                                 "numbers differ from Kaldi's" % (cur, d))
                    rec[d] = found
                m[mx] = rec
                nsplit += 1
            gc = -0.5 * D * math.log(2 * math.pi) + sum(
                0.5 * math.log(float(v)) - 0.5 * float(x) * float(x) / float(v) for x, v in zip(m[0], iv[0]))
            b = ("<DiagGMM> \n<GCONSTS>  [ %r ]\n<WEIGHTS>  [ 1 ]\n<MEANS_INVVARS>  [\n  %s ]\n<INV_VARS>  [\n  %s ]\n"
                 "</DiagGMM>" % (gc, " ".join(repr(float(x)) for x in m[0]), " ".join(repr(float(x)) for x in iv[0])))
        out.append(b + " \n")
    open(dst, "w").write("".join(out) + text[text.rindex("</DiagGMM>") + len("</DiagGMM>"):].lstrip(" \n"))
    print("mixup_unsplit: undid %d splits" % nsplit)


if __name__ == "__main__":
    main()
