#!/usr/bin/env python3
"""Reference check of our EM against scikit-learn's GaussianMixture.

compare: run sklearn EM from OUR initial model (weights_init, means_init,
  precisions_init; tol=0, reg_covar=0, max_iter=N) on the same frames and
  compare with our model after N iterations (hygiene off on our side):
  weights (abs), means (in standard deviations), variances / covariances
  (relative to the diagonal), and the average log-likelihood per frame of
  the last E-step (sklearn lower_bound_ == our last 'iteration N' log line:
  both are the mean of log p(x) under the model BEFORE the last M-step).
  Prints the measured maxima; exits 1 if any exceeds --tol.
fit: sklearn's own fit (k-means init, EM to convergence, n_init=1) with the
  same number of Gaussians; prints sklearn's mean log-likelihood per frame
  and ours (computed here, in float64, from our model) and exits 1 if ours
  is worse by more than --margin nats per frame.
"""
import argparse
import sys
import warnings
import numpy as np
from sklearn.mixture import GaussianMixture
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, __import__('os').path.dirname(__file__))
from kaldi_text import read_ark_fm, read_text_gmm_set, loglike  # noqa: E402


def frames(path):
    a = read_ark_fm(path)
    return np.concatenate([a[k] for k in a], axis=0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('mode', choices=['compare', 'fit'])
    ap.add_argument('--feats', required=True)
    ap.add_argument('--init')
    ap.add_argument('--ours', required=True)
    ap.add_argument('--iters', type=int, default=5)
    ap.add_argument('--our-ll', type=float, help='our last iteration avg loglike (compare mode)')
    ap.add_argument('--tol', type=float, default=1e-3)
    ap.add_argument('--margin', type=float, default=0.5)
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    X = frames(a.feats)
    ours = read_text_gmm_set(a.ours)[0]
    if a.mode == 'fit':
        G = len(ours['weights'])
        gm = GaussianMixture(n_components=G, covariance_type=ours['type'], random_state=a.seed).fit(X)
        sk = gm.score(X)
        ll = loglike(ours, X).mean()
        print('sklearn fit avg loglike %.4f, ours %.4f, difference %.4f (margin %.2f)' % (sk, ll, ll - sk, a.margin))
        sys.exit(0 if ll >= sk - a.margin else 1)
    init = read_text_gmm_set(a.init)[0]
    typ = init['type']
    prec = 1.0 / init['covs'] if typ == 'diag' else init['precisions']
    gm = GaussianMixture(n_components=len(init['weights']), covariance_type=typ,
                         weights_init=init['weights'] / init['weights'].sum(), means_init=init['means'],
                         precisions_init=prec, max_iter=a.iters, tol=0.0, reg_covar=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', ConvergenceWarning)
        gm.fit(X)
    ew = np.abs(gm.weights_ - ours['weights']).max()
    if typ == 'diag':
        sd = np.sqrt(gm.covariances_)
        em = (np.abs(gm.means_ - ours['means']) / sd).max()
        ev = (np.abs(gm.covariances_ - ours['covs']) / gm.covariances_).max()
    else:
        dg = np.sqrt(np.einsum('gii->gi', gm.covariances_))
        em = (np.abs(gm.means_ - ours['means']) / dg).max()
        ev = (np.abs(gm.covariances_ - ours['covs']) / (dg[:, :, None] * dg[:, None, :])).max()
    print('%s, %d iterations, %d frames: max |dw| %.2e, max |dmu|/sd %.2e, max rel dvar %.2e'
          % (typ, a.iters, X.shape[0], ew, em, ev))
    ok = ew <= a.tol and em <= a.tol and ev <= a.tol
    if a.our_ll is not None:
        dl = abs(gm.lower_bound_ - a.our_ll)
        print('avg loglike of the last E-step: sklearn %.6f ours %.6f (|diff| %.2e)' % (gm.lower_bound_, a.our_ll, dl))
        ok = ok and dl <= a.tol * abs(gm.lower_bound_)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
