#!/usr/bin/env python3
"""Independent float64 numpy references for fMLLR and MAP (test/bats/adapt.bats).

fMLLR (Gales 1998; Povey & Saon 2006): for a diagonal GMM and frames x_t with
Gaussian posteriors gamma_tg, xi = [x; 1]:
  beta = sum gamma,  K = sum gamma (mu/var) xi',  G_i = sum gamma/var_i xi xi'
  Q(W) = beta log|det A| + tr(W K') - 1/2 sum_i w_i G_i w_i'
and the row update w_i = (alpha c_i + k_i) G_i^-1 with c_i the cofactor row of A.
Written from the equations (not from the C code).

Subcommands (each prints what it measured and exits 1 if a tolerance fails):
  aux MODEL_TXT FEATS_ARK OURS_ARK [--per-utt] [--min-count N] [--tol T]
      stats and 40 passes of the row update in numpy; checks Q never decreases
      (after every row of every pass) and that our transforms (gmm-est-fmllr
      output, binary FM archive) equal numpy's within T (max abs) and reach
      the same Q per frame within 1e-4.
  gen-distort DIR        write DIR/model.txt (a known diagonal GMM), DIR/feats.ark
      (20,000 frames sampled from it, then distorted y = M x + c) and DIR/truth.npy
      (the inverse [M^-1, -M^-1 c] that fMLLR should recover).
  check-distort DIR W1_ARK W2_ARK TOL  our transform after two passes (W1 estimated
      on the distorted features, W2 on W1's output; the posteriors of the first
      pass come from the distorted features, so one pass stops short) vs
      DIR/truth.npy (max abs).
  map MODEL_TXT FEATS_ARK OURS_TXT MEAN_TAU VAR_TAU WEIGHT_TAU FLAGS [--tol T]
      closed-form MAP (Reynolds et al. 2000 eq. 14, Kaldi's form) vs our
      adapted model (text); means/variances relative to the prior's standard
      deviation / variance, weights absolute.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from kaldi_text import read_ark_fm, read_text_gmm_set  # noqa: E402


def comp_loglikes(pdf, X):
    mu, var, w = pdf['means'], pdf['covs'], pdf['weights']
    D = X.shape[1]
    ll = np.empty((X.shape[0], len(w)))
    for g in range(len(w)):
        d = X - mu[g]
        ll[:, g] = np.log(w[g]) - 0.5 * (D * np.log(2 * np.pi) + np.log(var[g]).sum() + (d * d / var[g]).sum(1))
    return ll


def posteriors(pdf, X):
    ll = comp_loglikes(pdf, X)
    m = ll.max(1, keepdims=True)
    p = np.exp(ll - m)
    return p / p.sum(1, keepdims=True)


def stats(pdf, X):
    gam = posteriors(pdf, X)
    mu, var = pdf['means'], pdf['covs']
    D = X.shape[1]
    xi = np.hstack([X, np.ones((X.shape[0], 1))])
    beta = gam.sum()
    K = (gam @ (mu / var)).T @ xi                        # D x (D+1)
    scale = gam @ (1.0 / var)                            # T x D: sum_g gamma/var_gi
    G = np.einsum('ti,tj,tk->ijk', scale, xi, xi)        # D x (D+1) x (D+1)
    return beta, K, G


def auxf(W, beta, K, G):
    D = W.shape[0]
    sign, ld = np.linalg.slogdet(W[:, :D])
    return beta * ld + np.sum(W * K) - 0.5 * sum(W[i] @ G[i] @ W[i] for i in range(D))


def row_update(W, beta, K, G, iters=40, check=True):
    D = W.shape[0]
    W = W.copy()
    invG = [np.linalg.inv(G[i]) for i in range(D)]
    q = auxf(W, beta, K, G)
    worst = 0.0
    for _ in range(iters):
        for i in range(D):
            cof = np.linalg.inv(W[:, :D]).T[i]           # cofactor row / det
            c = np.append(cof, 0.0)
            e1 = c @ invG[i] @ c
            e2 = c @ invG[i] @ K[i]
            disc = np.sqrt(e2 * e2 + 4 * e1 * beta)
            best = None
            for a in ((-e2 + disc) / (2 * e1), (-e2 - disc) / (2 * e1)):
                val = beta * np.log(abs(a * e1 + e2)) - 0.5 * a * a * e1
                if best is None or val > best[0]:
                    best = (val, a)
            W[i] = (best[1] * c + K[i]) @ invG[i]
            qn = auxf(W, beta, K, G)
            worst = min(worst, qn - q)
            q = qn
    if check and worst < -1e-8 * abs(q):
        print('auxiliary function decreased by %g' % -worst)
        sys.exit(1)
    return W, q


def read_fm_ark(path):
    return read_ark_fm(path)


def cmd_aux(args):
    per_utt = '--per-utt' in args
    min_count = float(args[args.index('--min-count') + 1]) if '--min-count' in args else 500.0
    tol = float(args[args.index('--tol') + 1]) if '--tol' in args else 1e-3
    pdf = read_text_gmm_set(args[0])[0]
    feats = read_ark_fm(args[1])
    ours = read_fm_ark(args[2])
    groups = {k: [k] for k in feats} if per_utt else {'all': list(feats)}
    worst_w, worst_q, n = 0.0, 0.0, 0
    for name, utts in groups.items():
        X = np.concatenate([feats[u].astype(np.float64) for u in utts])
        beta, K, G = stats(pdf, X)
        D = X.shape[1]
        W0 = np.hstack([np.eye(D), np.zeros((D, 1))])
        if beta <= min_count:
            W = W0
        else:
            W, _ = row_update(W0, beta, K, G)
        key = name if per_utt else list(ours)[0]
        Wo = ours[key].astype(np.float64)
        worst_w = max(worst_w, np.abs(Wo - W).max())
        worst_q = max(worst_q, abs(auxf(Wo, beta, K, G) - auxf(W, beta, K, G)) / beta)
        n += 1
    print('%d transforms: max |W_ours - W_numpy| %.3g, max |Q diff| per frame %.3g' % (n, worst_w, worst_q))
    sys.exit(0 if worst_w <= tol and worst_q <= 1e-4 else 1)


def write_text_diag_gmm(path, w, mu, var):
    def mat(M):
        return ' [\n' + '\n'.join('  ' + ' '.join('%.9g' % v for v in r) for r in M) + ' ]\n'
    with open(path, 'w') as f:
        f.write('<DiagGMM> \n<WEIGHTS>  [ %s ]\n' % ' '.join('%.9g' % v for v in w))
        f.write('<MEANS_INVVARS> ' + mat(mu / var) + '<INV_VARS> ' + mat(1.0 / var) + '</DiagGMM> \n')


def cmd_gen_distort(args):
    import kaldiio
    d = args[0]
    rng = np.random.default_rng(7)
    D, Gn, T = 4, 4, 20000
    w = np.full(Gn, 1.0 / Gn)
    mu = rng.normal(0, 10, (Gn, D))
    var = rng.uniform(0.5, 2.0, (Gn, D))
    write_text_diag_gmm(os.path.join(d, 'model.txt'), w, mu, var)
    comp = rng.integers(0, Gn, T)
    X = mu[comp] + rng.normal(size=(T, D)) * np.sqrt(var[comp])
    M = np.eye(D) + 0.15 * rng.normal(size=(D, D))
    c = rng.normal(0, 1, D)
    Y = X @ M.T + c
    Minv = np.linalg.inv(M)
    np.save(os.path.join(d, 'truth.npy'), np.hstack([Minv, (-Minv @ c)[:, None]]))
    kaldiio.save_ark(os.path.join(d, 'feats.ark'),
                     {'utt%d' % i: Y[i * 2000:(i + 1) * 2000].astype(np.float32) for i in range(10)})
    with open(os.path.join(d, 'spk2utt'), 'w') as f:
        f.write('spk ' + ' '.join('utt%d' % i for i in range(10)) + '\n')


def cmd_check_distort(args):
    truth = np.load(os.path.join(args[0], 'truth.npy'))
    D = truth.shape[0]
    W1 = list(read_fm_ark(args[1]).values())[0].astype(np.float64)
    W2 = list(read_fm_ark(args[2]).values())[0].astype(np.float64)
    # second pass was estimated on W1-transformed features: W = W2 o W1
    W = np.hstack([W2[:, :D] @ W1[:, :D], (W2[:, :D] @ W1[:, D] + W2[:, D])[:, None]])
    err1, err = np.abs(W1 - truth).max(), np.abs(W - truth).max()
    print('max |W - [M^-1, -M^-1 c]|: %.4g after one pass, %.4g after two (largest element %.3g)'
          % (err1, err, np.abs(truth).max()))
    sys.exit(0 if err <= float(args[3]) else 1)


def cmd_map(args):
    tol = float(args[args.index('--tol') + 1]) if '--tol' in args else 1e-4
    prior = read_text_gmm_set(args[0])[0]
    X = np.concatenate([v.astype(np.float64) for v in read_ark_fm(args[1]).values()])
    ours = read_text_gmm_set(args[2])[0]
    tm, tv, tw = float(args[3]), float(args[4]), float(args[5])
    flags = args[6]
    gam = posteriors(prior, X)
    occ = gam.sum(0)
    m = gam.T @ X
    s = gam.T @ (X * X)
    mu, var, w = prior['means'].copy(), prior['covs'].copy(), prior['weights'].copy()
    if 'w' in flags:
        w = (occ + tw * w) / (occ.sum() + tw)
    if 'm' in flags:
        mu = (m + tm * mu) / (occ + tm)[:, None]
    if 'v' in flags:
        v = s / occ[:, None] - 2 * mu * m / occ[:, None] + mu * mu
        var = (occ[:, None] * v + tv * var) / (occ + tv)[:, None]
    sd = np.sqrt(prior['covs'])
    em = np.abs(ours['means'] - mu).max() if 'm' not in flags else (np.abs(ours['means'] - mu) / sd).max()
    ev = (np.abs(ours['covs'] - var) / prior['covs']).max()
    ew = np.abs(ours['weights'] - w).max()
    moved = (np.abs(mu - prior['means']) / sd).max()
    print('means %.3g (in prior std devs; largest MAP move %.3g), variances %.3g (relative), weights %.3g'
          % (em, moved, ev, ew))
    sys.exit(0 if max(em, ev, ew) <= tol else 1)


if __name__ == '__main__':
    cmd = sys.argv[1]
    {'aux': cmd_aux, 'gen-distort': cmd_gen_distort, 'check-distort': cmd_check_distort,
     'map': cmd_map}[cmd](sys.argv[2:])
