#!/usr/bin/env python3
"""Float64 references for fc-shrink / --shrink (lib/gmm/shrink.h, doc/shrink.md).

  shrink_ref.py gen DIR --n N --dim D --seed S
      writes DIR/x.feats (text archive, one utterance, values exact in float32),
      DIR/x.post (posteriors: every frame -> pdf 0 with a random weight in
      (0.05, 1]) and DIR/x.npy (the frames, float64 of the float32 values).
  shrink_ref.py check MODEL_TXT DIR --method M [--factor F] [--tau T]
                [--target diag|identity] [--weighted] [--rtol R]
      compares the covariance of the one-Gaussian text model MODEL_TXT (fc-shrink
      output with --binary=false) with the reference estimate from DIR/x.npy:
        unit weights:  scikit-learn LedoitWolf / OAS / ShrunkCovariance
                       (fixed, target identity); fixed/occupancy target diag
                       and ss: direct numpy formulas;
        --weighted:    ss: Schafer & Strimmer 2005 Table 1 target D with
                       their unbiased s_ij and Var(s_ij), written for
                       reliability weights (V1 = sum w, V2 = sum w^2);
                       lw / oas: the same estimators with the weighted ML
                       covariance and N = V1^2 / V2, computed by brute force
                       over the frames (no shift algebra).
      Prints lambda and the largest relative difference; exits 1 above --rtol.
Independent of the C code: reads the model with kaldi_text.py."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from kaldi_text import read_text_gmm_set  # noqa: E402


def gen(a):
    r = np.random.RandomState(a.seed)
    D = a.dim
    A = r.randn(D, D) * 0.6 + np.eye(D) * 1.5           # a correlated Gaussian, mean far from 0
    X = (r.randn(a.n, D) @ A.T + 10.0 + 3.0 * r.randn(D)).astype(np.float32)
    w = (0.05 + 0.95 * r.rand(a.n)).astype(np.float32)
    os.makedirs(a.dir, exist_ok=True)
    with open(os.path.join(a.dir, 'x.feats'), 'w') as f:
        f.write('utt1  [\n' + '\n'.join('  ' + ' '.join(repr(float(v)) for v in row) for row in X) + ' ]\n')
    with open(os.path.join(a.dir, 'x.post'), 'w') as f:
        f.write('utt1 ' + ' '.join('[ 0 %r ]' % float(v) for v in w) + '\n')
    np.save(os.path.join(a.dir, 'x.npy'), X.astype(np.float64))
    np.save(os.path.join(a.dir, 'w.npy'), w.astype(np.float64))


def ss_weighted(X, w):
    """Schafer & Strimmer 2005, Table 1 target D, Sec. 2-3: s_ij unbiased,
    Var^(s_ij) = n/(n-1)^3 sum_k (w_kij - mean w_ij)^2, written for weights
    (for w = 1 these are exactly S&S's expressions)."""
    V1, V2 = w.sum(), (w * w).sum()
    mu = (w[:, None] * X).sum(0) / V1
    Y = X - mu
    Wk = Y[:, :, None] * Y[:, None, :]                    # w_kij
    wbar = np.einsum('k,kij->ij', w, Wk) / V1
    scale = V1 * V1 / (V1 * V1 - V2)                       # unbiased weighted covariance factor
    s = scale * wbar
    var_w = V1 / (V1 * V1 - V2) * np.einsum('k,kij->ij', w, (Wk - wbar) ** 2)  # unbiased weighted var of w_kij
    var_s = scale ** 2 * var_w * V2 / V1 ** 2              # variance of the weighted mean, times scale^2
    off = ~np.eye(X.shape[1], dtype=bool)
    lam = min(1.0, max(0.0, var_s[off].sum() / (s[off] ** 2).sum()))
    S = wbar                                               # the ML (M-step) covariance is shrunk
    return lam, np.where(off, (1 - lam) * S, S)


def weighted_est(X, w, method):
    V1, V2 = w.sum(), (w * w).sum()
    N = V1 * V1 / V2
    mu = (w[:, None] * X).sum(0) / V1
    Y = X - mu
    S = (w[:, None] * Y).T @ Y / V1
    D = X.shape[1]
    m = np.trace(S) / D
    if method == 'lw':
        b2 = (sum(wk * np.sum(np.outer(y, y) ** 2) for wk, y in zip(w, Y)) / V1 - np.sum(S ** 2)) / (D * N)
        d2 = np.sum((S - m * np.eye(D)) ** 2) / D
        lam = min(b2, d2) / d2
    else:  # oas
        al = np.mean(S ** 2)
        lam = min(1.0, (al + m * m) / ((N + 1) * (al - m * m / D)))
    return lam, (1 - lam) * S + lam * m * np.eye(D)


def check(a):
    from sklearn.covariance import OAS, LedoitWolf, ShrunkCovariance, empirical_covariance
    X = np.load(os.path.join(a.dir, 'x.npy'))
    w = np.load(os.path.join(a.dir, 'w.npy')) if a.weighted else np.ones(len(X))
    D = X.shape[1]
    pdfs = read_text_gmm_set(a.model)
    assert len(pdfs) == 1 and len(pdfs[0]['weights']) == 1, 'one pdf with one Gaussian expected'
    C = pdfs[0]['covs'][0]
    if C.ndim == 1:
        C = np.diag(C)
    S = empirical_covariance(X) if not a.weighted else None
    lam = None
    if a.weighted:
        if a.method == 'ss':
            lam, R = ss_weighted(X, w)
        else:
            lam, R = weighted_est(X, w, a.method)
    elif a.method == 'lw':
        e = LedoitWolf().fit(X); R, lam = e.covariance_, e.shrinkage_
    elif a.method == 'oas':
        e = OAS().fit(X); R, lam = e.covariance_, e.shrinkage_
    elif a.method in ('fixed', 'occupancy'):
        lam = a.factor if a.method == 'fixed' else a.tau / (a.tau + len(X))
        if a.target == 'identity':
            R = ShrunkCovariance(shrinkage=lam).fit(X).covariance_
        else:
            R = (1 - lam) * S + lam * np.diag(np.diag(S))
    elif a.method == 'ss':
        lam, R = ss_weighted(X, w)
    elif a.method == 'diag':
        R = np.diag(np.diag(S))
    scale = np.sqrt(np.outer(np.diag(R), np.diag(R)))
    err = np.abs(C - R).max() / scale.max()
    ev = np.linalg.eigvalsh(C).min()
    print('method %s%s: lambda %s, max |C - ref| / max var %.2e, min eigenvalue %.3g (rtol %.1e)' %
          (a.method, ' (weighted)' if a.weighted else '', 'n/a' if lam is None else '%.6f' % lam, err, ev, a.rtol))
    sys.exit(0 if err <= a.rtol and ev > 0 else 1)


ap = argparse.ArgumentParser()
sub = ap.add_subparsers(dest='cmd', required=True)
g = sub.add_parser('gen'); g.add_argument('dir'); g.add_argument('--n', type=int, default=60)
g.add_argument('--dim', type=int, default=6); g.add_argument('--seed', type=int, default=1)
c = sub.add_parser('check'); c.add_argument('model'); c.add_argument('dir'); c.add_argument('--method', required=True)
c.add_argument('--factor', type=float, default=0.0); c.add_argument('--tau', type=float, default=0.0)
c.add_argument('--target', default='diag'); c.add_argument('--weighted', action='store_true')
c.add_argument('--rtol', type=float, default=1e-5)
a = ap.parse_args()
gen(a) if a.cmd == 'gen' else check(a)
