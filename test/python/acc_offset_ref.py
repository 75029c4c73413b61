#!/usr/bin/env python3
"""One EM step of a diagonal GMM through the accumulate -> estimate tools,
checked against a float64 numpy reference, on features offset by many
standard deviations (doc/reliability.md: the contract's range is <= 1e4
sigma).  The variance is E[x^2] - mu^2 of the written sums, so the
accumulator files must keep them in double.

  acc_offset_ref.py gen --offset=SIGMAS --workdir=DIR
      writes DIR/off.ark (4 utterances x 1000 frames, dim 3, float32),
      DIR/off.mdl.txt (a global <DiagGMM> of 2 Gaussians 8 sigma apart,
      float32 parameters, text) and DIR/ref.npz: the means and variances of
      one ML update from that model, in float64 (posteriors from the stored
      parameters, centred second moments).
  acc_offset_ref.py check --workdir=DIR MODEL.txt [--bound=B]
      compares MODEL.txt (a text <DiagGMM>, e.g. from gmm-global-copy
      --binary=false) with the reference: prints "max_rel_var E max_rel_mean M"
      (variances relative to themselves; means relative to |mean| + sigma:
      the model file stores means times inverse variances in float, 6e-8
      of the mean, 6e-4 sigma at 1e4 sigma) and exits 1 if either exceeds B
      (default 1e-5).
"""
import argparse
import re
import struct
import sys

import numpy as np

D, G, U, T = 3, 2, 4, 1000


def write_ark_fm(path, mats):
    with open(path, 'wb') as f:
        for key, m in mats:
            m = np.asarray(m, dtype='<f4')
            f.write(key.encode() + b' \0BFM ')
            f.write(b'\x04' + struct.pack('<i', m.shape[0]) + b'\x04' + struct.pack('<i', m.shape[1]))
            f.write(m.tobytes())


def read_text_diag(path):
    """(weights, means, variances) of a text <DiagGMM>, float64."""
    t = open(path).read()
    def block(tok):
        i = t.index(tok) + len(tok)
        j = t.index(']', i)
        return np.array([float(x) for x in t[i:j].replace('[', ' ').split()])
    w = block('<WEIGHTS>')
    mi = block('<MEANS_INVVARS>').reshape(len(w), -1)
    iv = block('<INV_VARS>').reshape(len(w), -1)
    return w, mi / iv, 1.0 / iv


def fmt(v):
    return ' '.join(repr(float(x)) for x in np.ravel(v))


def gen(a):
    rng = np.random.default_rng(7)
    c = a.offset  # sigma = 1
    mus = c + np.array([[0.0, 0.0, 0.0], [8.0, -8.0, 8.0]])
    var = np.array([[1.0, 0.5, 2.0], [1.5, 1.0, 0.7]])
    mats = []
    for u in range(U):
        z = rng.integers(0, G, T)
        x = mus[z] + np.sqrt(var[z]) * rng.standard_normal((T, D))
        mats.append(('u%d' % u, x.astype(np.float32)))
    write_ark_fm(a.workdir + '/off.ark', mats)
    # the model: the generating parameters, perturbed, as float32
    w = np.array([0.45, 0.55], dtype=np.float32)
    m0 = mus + 0.3 * rng.standard_normal((G, D))
    v0 = var * rng.uniform(0.8, 1.25, (G, D))
    iv = (1.0 / v0).astype(np.float32)
    mi = (m0 * iv.astype(np.float64)).astype(np.float32)
    # gconsts as Kaldi computes them (the tools recompute their normalisers)
    ivd, mid = iv.astype(np.float64), mi.astype(np.float64)
    gc = (np.log(w.astype(np.float64)) - 0.5 * D * np.log(2 * np.pi) + 0.5 * np.log(ivd).sum(1)
          - 0.5 * (mid * mid / ivd).sum(1)).astype(np.float32)
    with open(a.workdir + '/off.mdl.txt', 'w') as f:
        f.write('<DiagGMM>\n<GCONSTS>  [ %s ]\n<WEIGHTS>  [ %s ]\n' % (fmt(gc), fmt(w)))
        f.write('<MEANS_INVVARS>  [\n%s ]\n' % '\n'.join('  ' + fmt(r) for r in mi))
        f.write('<INV_VARS>  [\n%s ]\n</DiagGMM>\n' % '\n'.join('  ' + fmt(r) for r in iv))
    # the float64 reference: posteriors from the stored float32 parameters
    X = np.concatenate([m for _, m in mats]).astype(np.float64)
    mu = mid / ivd
    ll = (np.log(w.astype(np.float64))[None, :] - 0.5 * D * np.log(2 * np.pi) + 0.5 * np.log(ivd).sum(1)[None, :]
          - 0.5 * (((X[:, None, :] - mu[None, :, :]) ** 2) * ivd[None, :, :]).sum(2))
    mx = ll.max(1, keepdims=True)
    post = np.exp(ll - mx)
    post /= post.sum(1, keepdims=True)
    occ = post.sum(0)
    mean = (post.T @ X) / occ[:, None]
    varr = np.stack([(post[:, g:g + 1] * (X - mean[g]) ** 2).sum(0) / occ[g] for g in range(G)])
    np.savez(a.workdir + '/ref.npz', mean=mean, var=varr, occ=occ)


def check(a):
    r = np.load(a.workdir + '/ref.npz')
    w, mean, var = read_text_diag(a.model)
    assert mean.shape == r['mean'].shape, (mean.shape, r['mean'].shape)
    ev = np.abs(var / r['var'] - 1).max()
    em = (np.abs(mean - r['mean']) / (np.abs(r['mean']) + np.sqrt(r['var']))).max()
    print('max_rel_var %.3g max_rel_mean %.3g' % (ev, em))
    sys.exit(0 if ev <= a.bound and em <= a.bound else 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('cmd', choices=['gen', 'check'])
    p.add_argument('model', nargs='?')
    p.add_argument('--offset', type=float, default=0.0)
    p.add_argument('--workdir', required=True)
    p.add_argument('--bound', type=float, default=1e-5)
    a = p.parse_intermixed_args()
    gen(a) if a.cmd == 'gen' else check(a)


if __name__ == '__main__':
    main()
