#!/usr/bin/env python3
"""local/python_class.py <data-dir> --states S --iters K --seed N --device D --
the hmmlearn user's code with gmmhmm's Python package: gmmhmm.GaussianHMM
(fitted by hmm-train) and hmmlearn's GaussianHMM, each from its own
initialisation (k-means means, data covariance, uniform start and
transitions), K iterations at most, tol 1e-2 on the total log-likelihood
(hmmlearn's default).  Prints one line each: wall time of fit, iterations,
converged, final average log-likelihood per frame (score / frames)."""
import argparse
import time

import kaldiio
import numpy as np
from hmmlearn import hmm

import gmmhmm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('data')
    ap.add_argument('--states', type=int, default=3)
    ap.add_argument('--iters', type=int, default=10)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--device', default='auto')
    a = ap.parse_args()
    feats = kaldiio.load_scp(a.data + '/feats.scp')
    keys = sorted(feats)
    Xs = [np.asarray(feats[k], dtype=np.float64) for k in keys]
    X, L = np.vstack(Xs), [len(x) for x in Xs]
    for name, est in (('gmmhmm.GaussianHMM', gmmhmm.GaussianHMM(a.states, n_iter=a.iters, random_state=a.seed,
                                                                device=a.device)),
                      ('hmmlearn GaussianHMM', hmm.GaussianHMM(a.states, n_iter=a.iters, random_state=a.seed))):
        t = time.time()
        est.fit(X, L)
        dt = time.time() - t
        print('python: %s(n_components=%d).fit: %.2f s, %d iterations, converged %s, final log-likelihood per '
              'frame %.4f' % (name, a.states, dt, est.monitor_.iter, est.monitor_.converged,
                              est.score(X, L) / len(X)))


if __name__ == '__main__':
    main()
