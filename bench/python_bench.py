#!/usr/bin/env python3
"""bench/python_bench.py -- the Python package's rows (bench/python.sh says how
to run it): wall time of

  gmm   gmmhmm.GaussianMixture(n_components=G, covariance_type=T).fit(X) against
        scikit-learn's GaussianMixture (all cores) on the same X, both from the
        same initial parameters (init_params='random_from_data', the same
        random_state: both draw the same rows) for --iters iterations (tol=0);
        and gmm-train on the same files called directly (the Python layer's
        overhead = fit - tool).  Prints the final mean log-likelihood of both.
  hmm   gmmhmm.GaussianHMM(n_components=S).fit(X, lengths) against hmmlearn's
        GaussianHMM (diag) on --seqs sequences of --min-len..--max-len frames
        (D=--hmm-dim) sampled from a random S-state HMM, both from the same
        initial parameters (init_params='', our k-means start given to both),
        --iters iterations (tol=0); and hmm-train on the same files directly.

One line per measurement, "python: <row> ... <seconds> s", for the log."""
import argparse
import os
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'python'))
import gmmhmm  # noqa: E402
from gmmhmm import _tools, io  # noqa: E402


def gmm_row(N, D, G, ct, iters, device, rng):
    from sklearn.mixture import GaussianMixture as SK
    centres = rng.uniform(-4, 4, size=(32, D))
    X = centres[rng.randint(32, size=N)] + rng.randn(N, D) * rng.uniform(0.5, 1.5, size=D)
    kw = dict(n_components=G, covariance_type=ct, init_params='random_from_data', random_state=0,
              max_iter=iters, tol=0.0, reg_covar=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        t = time.time()
        ours = gmmhmm.GaussianMixture(device=device, **kw).fit(X)
        t_ours = time.time() - t
        t = time.time()
        ref = SK(**kw).fit(X)
        t_ref = time.time() - t
    # the tool alone on the same files: our initial model (the same rows) and the archive
    with _tools.workdir() as wd:
        est = gmmhmm.GaussianMixture(**kw)
        g0 = est._initial(X, np.random.RandomState(0), wd)
        io.write_gmm(os.path.join(wd, '0.mdl'), g0)
        _tools.write_feats(os.path.join(wd, 'f.ark'), X)
        t = time.time()
        _tools.run('gmm-train', '--device=%s' % device, '--num-iters=%d' % iters, *est._est_opts(),
                   os.path.join(wd, '0.mdl'), 'ark:' + os.path.join(wd, 'f.ark'), os.path.join(wd, '1.mdl'))
        t_tool = time.time() - t
    print('python: GaussianMixture(n_components=%d, covariance_type=%r).fit %dx%d, %d iterations: gmmhmm %.2f s '
          '(gmm-train alone %.2f s, Python layer %.2f s), scikit-learn %.2f s; lower_bound_ %.6f vs %.6f'
          % (G, ct, N, D, iters, t_ours, t_tool, t_ours - t_tool, t_ref, ours.lower_bound_, ref.lower_bound_))
    sys.stdout.flush()


def hmm_row(S, seqs, lo, hi, D, iters, device, rng):
    from hmmlearn import hmm
    L = rng.randint(lo, hi + 1, size=seqs).tolist()
    means = rng.uniform(-3, 3, size=(S, D))
    A = np.full((S, S), 0.1 / (S - 1))
    np.fill_diagonal(A, 0.9)
    Xs = []
    for n in L:
        s = np.zeros(n, dtype=int)
        s[0] = rng.randint(S)
        u = rng.rand(n)
        cA = np.cumsum(A, 1)
        for t in range(1, n):
            s[t] = min(int(np.searchsorted(cA[s[t - 1]], u[t])), S - 1)
        Xs.append(means[s] + rng.randn(n, D))
    X = np.vstack(Xs)
    ours = gmmhmm.GaussianHMM(S, n_iter=iters, tol=0.0, random_state=0, device=device)
    with _tools.workdir() as wd:
        f = os.path.join(wd, 'f.ark')
        _tools.write_feats(f, X, L)
        ours._init(X, L, wd, f)
    m0, c0 = ours.means_.copy(), ours.covars_.copy()
    ours.init_params = ''
    t = time.time()
    ours.fit(X, L)
    t_ours = time.time() - t
    ref = hmm.GaussianHMM(S, covariance_type='diag', n_iter=iters, tol=-np.inf, init_params='', covars_prior=0)
    ref.startprob_, ref.transmat_, ref.means_, ref.covars_ = np.full(S, 1 / S), np.full((S, S), 1 / S), m0, c0
    t = time.time()
    ref.fit(X, L)
    t_ref = time.time() - t
    with _tools.workdir() as wd:
        o = gmmhmm.GaussianHMM(S, n_iter=iters, tol=0.0, init_params='', device=device)
        o.startprob_, o.transmat_, o.means_, o.covars_ = np.full(S, 1 / S), np.full((S, S), 1 / S), m0, c0
        h, m = o._write_models(wd)
        f = os.path.join(wd, 'f.ark')
        _tools.write_feats(f, X, L)
        t = time.time()
        _tools.run('hmm-train', '--device=%s' % device, '--num-iters=%d' % iters, '--min-post=0',
                   '--transition-min-count=0', '--transition-floor=0', '--min-gaussian-occupancy=0',
                   '--min-gaussian-weight=0', h, m, 'ark:' + f, os.path.join(wd, 'a.hmm'), os.path.join(wd, 'a.mdl'))
        t_tool = time.time() - t
    N = X.shape[0]
    print('python: GaussianHMM(n_components=%d).fit %d sequences of %d-%d frames (%d frames, D=%d), %d iterations: '
          'gmmhmm %.2f s (hmm-train alone %.2f s, Python layer %.2f s), hmmlearn %.2f s; last log-likelihood per '
          'frame %.6f vs %.6f' % (S, seqs, lo, hi, N, D, iters, t_ours, t_tool, t_ours - t_tool, t_ref,
                                   ours.monitor_.history[-1] / N, ref.monitor_.history[-1] / N))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--sizes', default='50000x20,1000000x40', help='NxD,... for the GMM rows')
    ap.add_argument('--comps', default='64,512')
    ap.add_argument('--types', default='full,diag')
    ap.add_argument('--iters', type=int, default=10)
    ap.add_argument('--states', type=int, default=8)
    ap.add_argument('--seqs', type=int, default=1000)
    ap.add_argument('--min-len', type=int, default=200)
    ap.add_argument('--max-len', type=int, default=2000)
    ap.add_argument('--hmm-dim', type=int, default=20)
    ap.add_argument('--only', default='gmm,hmm')
    a = ap.parse_args()
    rng = np.random.RandomState(0)
    print('python: device %s, %d cores, scikit-learn and hmmlearn on all cores' % (a.device, os.cpu_count()))
    if 'gmm' in a.only:
        for size in a.sizes.split(','):
            N, D = (int(x) for x in size.split('x'))
            for G in (int(x) for x in a.comps.split(',')):
                for ct in a.types.split(','):
                    gmm_row(N, D, G, ct, a.iters, a.device, rng)
    if 'hmm' in a.only:
        hmm_row(a.states, a.seqs, a.min_len, a.max_len, a.hmm_dim, a.iters, a.device, rng)


if __name__ == '__main__':
    main()
