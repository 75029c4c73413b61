#!/usr/bin/env python3
"""Compare two Kaldi-text GMM sets (gmm-copy --binary=false output) in moment
form: per pdf the number of Gaussians, weights (absolute), means (in standard
deviations of the reference) and covariances (relative to the reference
diagonal).  Prints the maxima; exits 1 if any exceeds --rtol.
Usage: compare_models.py a.txt b.txt [--rtol 1e-5] [--cov-rtol R]"""
import argparse
import sys
import os
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from kaldi_text import read_text_gmm_set  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('a')
ap.add_argument('b')
ap.add_argument('--rtol', type=float, default=1e-5)
ap.add_argument('--cov-rtol', type=float, help='tolerance for covariances (default: --rtol)')
a = ap.parse_args()
if a.cov_rtol is None:
    a.cov_rtol = a.rtol
A, B = read_text_gmm_set(a.a), read_text_gmm_set(a.b)
if len(A) != len(B):
    print('different number of pdfs: %d vs %d' % (len(A), len(B)))
    sys.exit(1)
ew = em = ev = 0.0
for p, (x, y) in enumerate(zip(A, B)):
    if x['type'] != y['type'] or x['means'].shape != y['means'].shape:
        print('pdf %d: different shapes/types' % p)
        sys.exit(1)
    ew = max(ew, np.abs(x['weights'] - y['weights']).max())
    if y['type'] == 'diag':
        sd = np.sqrt(y['covs'])
        em = max(em, (np.abs(x['means'] - y['means']) / sd).max())
        ev = max(ev, (np.abs(x['covs'] - y['covs']) / y['covs']).max())
    else:
        dg = np.sqrt(np.einsum('gii->gi', y['covs']))
        em = max(em, (np.abs(x['means'] - y['means']) / dg).max())
        ev = max(ev, (np.abs(x['covs'] - y['covs']) / (dg[:, :, None] * dg[:, None, :])).max())
print('%d pdfs: max |dw| %.2e, max |dmu|/sd %.2e, max rel dcov %.2e (rtol %.1e, cov-rtol %.1e)' % (len(A), ew, em, ev, a.rtol, a.cov_rtol))
sys.exit(0 if max(ew, em) <= a.rtol and ev <= a.cov_rtol else 1)
