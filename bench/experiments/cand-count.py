#!/usr/bin/env python3
"""Candidates per frame of the CUDA candidate E-step (kernels/cuda/cuda-gemm.cu
estep_cand): for a one-pdf full-covariance model and some frames, how many
Gaussians lie within M nats of each frame's best (exact log-likelihoods in
float64, numpy), for M = 40, 25, 20, 15.

  gmm-copy --binary=false MODEL model.txt
  copy-feats scp:SOME.scp ark,t:feats.txt
  bench/experiments/cand-count.py model.txt feats.txt

(bench/RESULTS.md D40: the 512-full UBM of bench/train.sh.)
"""
import re
import sys

import numpy as np

txt = open(sys.argv[1]).read()
D = int(re.search(r'<DIMENSION>\s*(\d+)', txt).group(1))
w = np.array(re.search(r'<WEIGHTS>\s*\[([^\]]*)\]', txt).group(1).split(), float)
G = len(w)
b = np.array(re.search(r'<MEANS_INVCOVARS>\s*\[([^\]]*)\]', txt).group(1).split(), float).reshape(G, D)
blocks = re.findall(r'\[([^\]]*)\]', re.search(r'<INV_COVARS>(.*?)</FullGMM>', txt, re.S).group(1))
P = np.zeros((G, D, D))
for g, blk in enumerate(blocks[:G]):
    v = np.array(blk.split(), float)
    k = 0
    for i in range(D):
        for j in range(i + 1):
            P[g, i, j] = P[g, j, i] = v[k]
            k += 1
mu = np.linalg.solve(P, b[:, :, None])[:, :, 0]
norm = np.log(w) - 0.5 * D * np.log(2 * np.pi) + 0.5 * np.linalg.slogdet(P)[1]
X = np.array([l.replace(']', '').split() for l in open(sys.argv[2]) if '[' not in l], float)
Y = X[:, None, :] - mu[None]
L = norm[None] - 0.5 * np.einsum('tgi,gij,tgj->tg', Y, P, Y)
d = L.max(1, keepdims=True) - L
print('%d frames, %d Gaussians, D = %d' % (len(X), G, D))
for m in (40, 25, 20, 15):
    c = (d <= m).sum(1)
    print('margin %d nats: candidates per frame mean %.2f, median %d, max %d' % (m, c.mean(), np.median(c), c.max()))
