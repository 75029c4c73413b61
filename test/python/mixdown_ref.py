#!/usr/bin/env python3
"""Independent float64 reference for gmm-mixup --mix-down (Kaldi's
AmDiagGmm::MergeByCount, gmm/am-diag-gmm.cc, with GetSplitTargets of
gmm/model-common.cc and DiagGmm::Merge of gmm/diag-gmm.cc), written from
Kaldi's formulas with numpy.

Usage: mixdown_ref.py <model-in text> <occs text> <target> <power> <min-count>
                      <merged model text> [tol]
       mixdown_ref.py targets <occs text> <target> <power> <min-count> <model text>
                      (the model's Gaussians per pdf must be the targets)

Targets: every pdf starts at 1 Gaussian; repeatedly the pdf of the largest
occ^power / n gets one more, unless (n + 1) * min_count >= occ, which stops
that pdf (ties: the lowest pdf; Kaldi's heap order differs only for exact
ties), until the total reaches <target>; each pdf with more Gaussians than
its target is merged down to it.

Merge of one pdf (weights w, means mu, variances v, second moments
S = v + mu^2): for every pair i > j the change of likelihood
  delta(i, j) = (w_i + w_j) * L(merged) - w_i * L(i) - w_j * L(j),
  L = 0.5 * log det of the inverse covariance = -0.5 * sum_d log var_d,
the merged Gaussian having weight w_i + w_j, mean and second moment the
weight-averaged ones; the pair of largest delta (scanned i ascending, j < i
ascending, first kept) is merged into i, j is dropped, the deltas of i are
recomputed; the survivors keep their order.  A target of 1: the weighted
global mean and variance (weights that do not sum to 1 within 1e-6 are
multiplied in, as Kaldi does).

Checks the merged model: the same number of Gaussians per pdf (exact), and
per Gaussian and dimension |dw| <= tol, |dmean| <= tol * (sd + |mean|),
|dvar| <= tol * (var + mean^2) (default tol 1e-6; the C code works in float
as Kaldi, and var = second moment - mean^2 loses float digits in proportion
to (var + mean^2) / var, up to 615 in the fixture's monophone model).
Prints the largest of each; exits 1 on the first difference beyond tol."""
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit('/', 1)[0])
import kaldi_text  # noqa: E402


def read_occs(path):
    toks = open(path).read().split()
    assert toks[0] == '[' and toks[-1] == ']', f'{path}: not a text vector'
    return np.array([float(t) for t in toks[1:-1]])


def targets(occs, target, power, min_count):
    P = len(occs)
    n = np.ones(P, dtype=int)
    key = occs ** power
    stopped = np.zeros(P, dtype=bool)
    num = P
    while num < target:
        pri = np.where(stopped, 0.0, key / n)
        p = int(np.argmax(pri))
        if pri[p] == 0:
            break
        if (n[p] + 1) * min_count >= occs[p]:
            stopped[p] = True
        else:
            n[p] += 1
            num += 1
    return n


def merge(w, mu, var, target):
    w, mu, var = w.copy(), mu.copy(), var.copy()
    G = len(w)
    if G <= target:
        return w, mu, var
    S = var + mu * mu
    if target == 1:
        W = w.sum()
        m = (w[:, None] * mu).sum(0)
        s = (w[:, None] * S).sum(0)
        if abs(W - 1) > 1e-6 * (abs(W) + 1):
            m, s, W = m * W, s * W, 1.0
        return np.array([W]), m[None], (s - m * m)[None]
    L = -0.5 * np.log(var).sum(1)

    def delta(i, j):
        ws = w[i] + w[j]
        m = (w[i] * mu[i] + w[j] * mu[j]) / ws
        s = (w[i] * S[i] + w[j] * S[j]) / ws
        return ws * (-0.5 * np.log(s - m * m).sum()) - w[i] * L[i] - w[j] * L[j]

    D = np.full((G, G), -np.inf)
    for i in range(G):
        for j in range(i):
            D[i, j] = D[j, i] = delta(i, j)
    alive = np.ones(G, dtype=bool)
    for _ in range(G - target):
        best, bi, bj = -np.inf, -1, -1
        for i in range(G):
            if not alive[i]:
                continue
            for j in range(i):
                if alive[j] and D[i, j] > best:
                    best, bi, bj = D[i, j], i, j
        assert bi >= 0, 'no pair to merge'
        ws = w[bi] + w[bj]
        mu[bi] = (w[bi] * mu[bi] + w[bj] * mu[bj]) / ws
        S[bi] = (w[bi] * S[bi] + w[bj] * S[bj]) / ws
        w[bi] = ws
        var[bi] = S[bi] - mu[bi] * mu[bi]
        L[bi] = -0.5 * np.log(var[bi]).sum()
        alive[bj] = False
        for j in range(G):
            if j != bi and alive[j]:
                D[bi, j] = D[j, bi] = delta(bi, j)
    return w[alive], mu[alive], var[alive]


def main():
    if sys.argv[1] == 'targets':
        occs_path, target, power, min_count, model_path = sys.argv[2:7]
        t = targets(read_occs(occs_path), int(target), float(power), float(min_count))
        n = [len(p['weights']) for p in kaldi_text.read_text_gmm_set(model_path)]
        bad = [p for p in range(len(t)) if p >= len(n) or n[p] != t[p]]
        if len(n) != len(t) or bad:
            sys.exit(f'{len(n)} pdfs, {len(t)} targets; Gaussians differ from the targets at pdfs {bad[:10]}')
        print(f'{sum(n)} Gaussians in {len(n)} pdfs: the targets')
        return
    src, occs_path, target, power, min_count, ours_path = sys.argv[1:7]
    tol = float(sys.argv[7]) if len(sys.argv) > 7 else 1e-6
    model = kaldi_text.read_text_gmm_set(src)
    ours = kaldi_text.read_text_gmm_set(ours_path)
    occs = read_occs(occs_path)
    if len(occs) != len(model) or len(ours) != len(model):
        sys.exit(f'{len(occs)} occupancies, {len(model)} pdfs in, {len(ours)} pdfs out')
    t = targets(occs, int(target), float(power), float(min_count))
    ew = em = ev = 0.0
    total = 0
    for p, (a, b) in enumerate(zip(model, ours)):
        tp = max(int(t[p]), 1)
        w, mu, var = merge(a['weights'], a['means'], a['covs'], tp) if len(a['weights']) > tp else (
            a['weights'], a['means'], a['covs'])
        total += len(w)
        if len(b['weights']) != len(w):
            sys.exit(f'pdf {p}: {len(b["weights"])} Gaussians, the reference has {len(w)}')
        ew = max(ew, float(np.abs(b['weights'] - w).max()))
        em = max(em, float((np.abs(b['means'] - mu) / (np.sqrt(var) + np.abs(mu))).max()))
        ev = max(ev, float((np.abs(b['covs'] - var) / (var + mu * mu)).max()))
        if ew > tol or em > tol or ev > tol:
            sys.exit(f'pdf {p}: weights within {ew:.2e}, means {em:.2e}, variances {ev:.2e}: beyond {tol}')
    print(f'{total} Gaussians in {len(model)} pdfs as the reference; weights within {ew:.2e}, '
          f'means within {em:.2e} of sd + |mean|, variances within {ev:.2e} of var + mean^2')


main()
