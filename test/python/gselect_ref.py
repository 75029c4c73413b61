#!/usr/bin/env python3
"""Independent float64 reference of Kaldi's gmm-global-acc-stats --gselect
(numpy): posteriors over each frame's selected Gaussians only; prints the
occupancies one per line (with --all: then the first- and second-order sums,
sum gamma x and sum gamma x^2, row by row, as <MEANACCS> and <DIAGVARACCS>).  --kaldi-contiguous emulates Kaldi's
DiagGmm::LogLikelihoodsPreselect shortcut (diag-gmm.cc): when a list's
last index + 1 - first index equals its length, Kaldi takes the Gaussians
first..first+n-1 IN INDEX ORDER and pairs their log-likelihoods with the
list positions, which mislabels them unless the list is increasing.
--contract: the normaliser recomputed in float64 from the weights and
variances, the stored gconst unused (doc/reliability.md "Numerical
contract": what every backend evaluates since rel-num; Kaldi uses its
stored float gconst).  A gselect.txt of '-' selects all Gaussians on every
frame (the E-step without --gselect).
Usage: gselect_ref.py model.txt feats.ark gselect.txt|- [--kaldi-contiguous] [--contract] [--all]"""
import sys
import os
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from kaldi_text import read_text_gmm_set, read_ark_fm  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith('--')]
quirk = '--kaldi-contiguous' in sys.argv
g = read_text_gmm_set(args[0])[0]
feats = read_ark_fm(args[1])
gsel = {}
for line in (open(args[2]) if args[2] != '-' else []):
    t = line.split()
    lists, cur = [], []
    for x in t[1:]:
        if x == ';':
            lists.append(cur)
            cur = []
        else:
            cur.append(int(x))
    gsel[t[0]] = lists
w, mu, var = g['weights'], g['means'], g['covs']
G, D = mu.shape
# the stored gconsts (log w - 0.5 (D log 2pi + log det C + mu' C^-1 mu)), as the tools use them
logc = g['gconsts'] + 0.5 * (mu ** 2 / var).sum(1)
if '--contract' in sys.argv:
    with np.errstate(divide='ignore'):
        logc = np.log(w) - 0.5 * (D * np.log(2 * np.pi) + np.log(var).sum(1))
if args[2] == '-':
    gsel = {key: [list(range(G))] * len(X) for key, X in feats.items()}
occ = np.zeros(G)
m1 = np.zeros((G, D))
m2 = np.zeros((G, D))
tot = 0.0
nq = 0
for key, X in feats.items():
    ll_all = logc[None, :] - 0.5 * (((X[:, None, :] - mu[None]) ** 2) / var[None]).sum(2)
    for t, lst in enumerate(gsel[key]):
        idx = np.array(lst)
        if quirk and lst[-1] + 1 - lst[0] == len(lst):
            ll = ll_all[t, lst[0]:lst[0] + len(lst)]
            nq += 1
        else:
            ll = ll_all[t, idx]
        m = ll.max()
        p = np.exp(ll - m)
        tot += m + np.log(p.sum())
        gam = p / p.sum()
        np.add.at(occ, idx, gam)
        np.add.at(m1, idx, gam[:, None] * X[t][None, :])
        np.add.at(m2, idx, gam[:, None] * (X[t] ** 2)[None, :])
for v in occ:
    print('%.9g' % v)
if '--all' in sys.argv:
    for v in np.concatenate([m1.ravel(), m2.ravel()]):
        print('%.9g' % v)
print('frames using the shortcut: %d' % nq, file=sys.stderr)
