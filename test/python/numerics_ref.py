#!/usr/bin/env python3
"""Numerical contract checks (doc/reliability.md, "Numerical contract"):
generates a GMM set and features, runs gmm-score-gpu on one backend, and
compares its per-frame log-likelihoods with an independent float64
reference computed here with numpy from the stored float32 parameters
(mu = P^-1 b, the normaliser log w + 0.5 log det P - D/2 log 2pi recomputed
in double; the file's gconst is not used).

  numerics_ref.py score --device=DEV [--offset=SIGMAS] [--scale=VAR] [--cond=C]
                  [--far=SIGMAS] [--full] [--dim=D] [--gauss=G] [--pdfs=P]
                  [--frames=T] [--seed=S] [--spread=SIGMAS] [--workdir=DIR]
  prints "max_abs ERR max_rel REL bound_ok 1|0" and exits 1 if the bound
  |ll - ref| <= 1e-3 + 1e-5 |ref| is violated (or the tool fails).
  --set-iv=V: (diag) Gaussian 0 of every pdf gets inverse variances V.
  --offset: common feature/mean offset in units of the data's sigma;
  --scale: variance scale (sigma^2) of data and model; --cond: condition
  number of every full covariance; --far: frames this many sigmas from the
  means (in one dimension); --spread: how far apart the Gaussians' means are
  (sigmas).
"""
import argparse
import os
import struct
import subprocess
import sys

import numpy as np

LOG2PI = np.log(2 * np.pi)


def write_ark_fm(path, mats):
    with open(path, 'wb') as f:
        for key, m in mats:
            m = np.asarray(m, dtype='<f4')
            f.write(key.encode() + b' \0BFM ')
            f.write(b'\x04' + struct.pack('<i', m.shape[0]) + b'\x04' + struct.pack('<i', m.shape[1]))
            f.write(m.tobytes())


def fmt(v):
    return ' '.join(repr(float(np.float32(x))) for x in np.ravel(v))


def make_model(rng, a):
    """Float32 parameters of P pdfs x G Gaussians: (weights, mi, P (packed or diag))."""
    D, G = a.dim, a.gauss
    sig = np.sqrt(a.scale)
    c = a.offset * sig
    pdfs = []
    for p in range(a.pdfs):
        w = rng.uniform(0.5, 1.5, G)
        w = (w / w.sum()).astype(np.float32)
        mus = c + sig * a.spread * rng.standard_normal((G, D))
        if a.full:
            precs = []
            for g in range(G):
                Q, _ = np.linalg.qr(rng.standard_normal((D, D)))
                ev = np.logspace(0, np.log10(a.cond), D) if D > 1 else np.ones(1)
                ev = ev / np.sqrt(ev.max() * ev.min())  # geometric centre 1
                Cov = a.scale * (Q * ev) @ Q.T
                Pm = np.linalg.inv(Cov)
                Pm = (Pm + Pm.T) / 2
                precs.append(Pm.astype(np.float32))
            mi = np.array([(precs[g].astype(np.float64) @ mus[g]) for g in range(G)]).astype(np.float32)
            pdfs.append(('full', w, mi, np.array(precs)))
        else:
            var = a.scale * rng.uniform(0.5, 2.0, (G, D))
            iv = (1.0 / var).astype(np.float32)
            if a.set_iv:
                iv[0, :] = np.float32(a.set_iv)
            mi = (mus * iv.astype(np.float64)).astype(np.float32)
            pdfs.append(('diag', w, mi, iv))
    return pdfs


def exact(pdf):
    """float64 means and normalisers from the float32 parameters."""
    typ, w, mi, Pr = pdf
    G, D = mi.shape
    mus, norms = [], []
    for g in range(G):
        if typ == 'diag':
            iv = Pr[g].astype(np.float64)
            mus.append(mi[g].astype(np.float64) / iv)
            norms.append(np.log(float(w[g])) - 0.5 * D * LOG2PI + 0.5 * np.log(iv).sum())
        else:
            Pm = Pr[g].astype(np.float64)
            L = np.linalg.cholesky(Pm)
            mus.append(np.linalg.solve(Pm, mi[g].astype(np.float64)))
            norms.append(np.log(float(w[g])) - 0.5 * D * LOG2PI + np.log(np.diag(L)).sum())
    return np.array(mus), np.array(norms)


def ref_loglikes(pdfs, X):
    X = X.astype(np.float64)
    out = np.empty((X.shape[0], len(pdfs)))
    for p, pdf in enumerate(pdfs):
        mus, norms = exact(pdf)
        comp = np.empty((X.shape[0], len(norms)))
        for g in range(len(norms)):
            d = X - mus[g]
            if pdf[0] == 'diag':
                q = (d * d * pdf[3][g].astype(np.float64)).sum(1)
            else:
                q = np.einsum('ti,ij,tj->t', d, pdf[3][g].astype(np.float64), d)
            comp[:, g] = norms[g] - 0.5 * q
        m = comp.max(1, keepdims=True)
        out[:, p] = (m + np.log(np.exp(comp - m).sum(1, keepdims=True)))[:, 0]
    return out


def gconst(pdf, g):
    mus, norms = exact(pdf)
    typ, w, mi, Pr = pdf
    return norms[g] - 0.5 * float(mi[g].astype(np.float64) @ mus[g])


def write_model(path, pdfs, D):
    with open(path, 'w') as f:
        f.write('<DIMENSION> %d <NUMPDFS> %d\n' % (D, len(pdfs)))
        for pdf in pdfs:
            typ, w, mi, Pr = pdf
            G = len(w)
            tag = 'DiagGMM' if typ == 'diag' else 'FullGMM'
            f.write('<%s>\n<GCONSTS> [ %s ]\n' % (tag, fmt([gconst(pdf, g) for g in range(G)])))
            f.write('<WEIGHTS> [ %s ]\n' % fmt(w))
            if typ == 'diag':
                f.write('<MEANS_INVVARS> [\n%s ]\n' % '\n'.join(fmt(r) for r in mi))
                f.write('<INV_VARS> [\n%s ]\n' % '\n'.join(fmt(r) for r in Pr))
            else:
                f.write('<MEANS_INVCOVARS> [\n%s ]\n' % '\n'.join(fmt(r) for r in mi))
                f.write('<INV_COVARS>\n')
                for g in range(G):
                    rows = [fmt(Pr[g][i, :i + 1]) for i in range(D)]
                    f.write('[ %s ]\n' % '\n'.join(rows))
            f.write('</%s>\n' % tag)


def read_text_ark(path, P):
    out = {}
    toks = open(path).read().split()
    i = 0
    while i < len(toks):
        key = toks[i]
        assert toks[i + 1] == '['
        j = toks.index(']', i + 2)
        vals = np.array([float(t) for t in toks[i + 2:j]])
        out[key] = vals.reshape(-1, P)
        i = j + 1
    return out


def make_feats(rng, a, pdfs):
    sig = np.sqrt(a.scale)
    T, D = a.frames, a.dim
    # frames drawn near the Gaussians' own means (so the likelihoods are O(1))
    X = np.empty((T, D))
    for t in range(T):
        typ, w, mi, Pr = pdfs[t % len(pdfs)]
        mus, _ = exact(pdfs[t % len(pdfs)])
        g = t % len(w)
        X[t] = mus[g] + sig * rng.standard_normal(D)
        if a.far and t % 2 == 1:
            X[t, t % D] += a.far * sig
    return X.astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('cmd', choices=['score'])
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--offset', type=float, default=0.0)
    ap.add_argument('--scale', type=float, default=1.0)
    ap.add_argument('--cond', type=float, default=1.0)
    ap.add_argument('--far', type=float, default=0.0)
    ap.add_argument('--spread', type=float, default=1.0)
    ap.add_argument('--full', action='store_true')
    ap.add_argument('--dim', type=int, default=13)
    ap.add_argument('--gauss', type=int, default=4)
    ap.add_argument('--pdfs', type=int, default=3)
    ap.add_argument('--frames', type=int, default=200)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--set-iv', type=float, default=0.0,
                    help='diag: inverse variances of Gaussian 0 of every pdf (all dims) set to this')
    ap.add_argument('--workdir', default=os.environ.get('BATS_TEST_TMPDIR', '/tmp'))
    ap.add_argument('--gselect', action='store_true',
                    help='score pdf 0 alone with (f)gmm-global-get-frame-likes --gselect, every '
                         'Gaussian selected on every frame (the acc_gselect op), instead of gmm-score-gpu')
    ap.add_argument('--abs-tol', type=float, default=1e-3)
    ap.add_argument('--rel-tol', type=float, default=1e-5)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    pdfs = make_model(rng, a)
    X = make_feats(rng, a, pdfs)
    mdl = os.path.join(a.workdir, 'num.mdl.txt')
    ark = os.path.join(a.workdir, 'num.ark')
    out = os.path.join(a.workdir, 'num.ll.txt')
    write_model(mdl, pdfs, a.dim)
    write_ark_fm(ark, [('u%d' % i, X[i * 50:(i + 1) * 50]) for i in range((a.frames + 49) // 50)])
    cmd = ['gmm-score-gpu', '--device=' + a.device, mdl, 'ark:' + ark, 'ark,t:' + out]
    if a.gselect:  # one global GMM (pdf 0), a gselect list of all its Gaussians per frame
        pdfs = pdfs[:1]
        write_model(mdl, pdfs, a.dim)
        with open(mdl) as f:  # Kaldi's global-GMM file: the <DiagGMM> / <FullGMM> block alone
            body = f.read().split('\n', 1)[1]
        gmdl = os.path.join(a.workdir, 'num.gmm.txt')
        with open(gmdl, 'w') as f:
            f.write(body)
        G, nutt = len(pdfs[0][1]), (a.frames + 49) // 50
        sel = os.path.join(a.workdir, 'num.gselect.txt')
        with open(sel, 'w') as f:
            for i in range(nutt):
                n = min(50, a.frames - 50 * i)
                f.write('u%d %s\n' % (i, ' '.join([' '.join(str(g) for g in range(G)) + ' ;'] * n)))
        tool = 'fgmm-global-get-frame-likes' if pdfs[0][0] == 'full' else 'gmm-global-get-frame-likes'
        cmd = [tool, '--device=' + a.device, '--gselect=ark:' + sel, gmdl, 'ark:' + ark, 'ark,t:' + out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        print('tool failed (exit %d)' % r.returncode)
        return 1
    got = read_text_ark(out, len(pdfs))
    ref = ref_loglikes(pdfs, X)
    L = np.concatenate([got['u%d' % i] for i in range((a.frames + 49) // 50)])
    err = np.abs(L - ref)
    bound = a.abs_tol + a.rel_tol * np.abs(ref)
    ok = bool(np.all(err <= bound))
    print('max_abs %.3g max_rel %.3g worst_ratio %.3g bound_ok %d' %
          (err.max(), (err / np.maximum(1.0, np.abs(ref))).max(), (err / bound).max(), int(ok)))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
