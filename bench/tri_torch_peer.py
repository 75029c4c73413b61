#!/usr/bin/env python3
"""PyTorch peer of bench/tri-model.sh: a triphone acoustic model (a Kaldi .mdl of diagonal GMMs,
thousands of pdfs with different numbers of Gaussians) scored and accumulated the way a PyTorch
user would write it, on the same GPU, float32 with TF32 off:

  scoring  every pdf's Gaussians padded to the largest count K and laid side by side: one GEMM
           [1, x, x*x] . W  ([T x (1+2D)] x [(1+2D) x P*K]) per chunk of frames, the padding at
           -inf, then logsumexp over each pdf's K columns: [T x P] log-likelihoods (natural log),
           the per-pdf GEMMs batched as one;
  E-step   each frame's aligned pdf (ali-to-pdf): its K Gaussians' columns gathered ([T x F x K],
           a batched matrix-vector product), posteriors by softmax, then occupancies, first- and
           second-order sums added per Gaussian with index_add_ (float32 accumulators, as a
           PyTorch user would keep them; ours are double).

Usage: tri_torch_peer.py <model.txt> <feats.scp> <pdf-ali.txt> [our_score_s] [our_estep_s]
  model.txt: `gmm-copy --binary=false final.mdl` (the <DiagGMM> blocks are read; the transition
  model is skipped); feats.scp: Kaldi features (kaldiio); pdf-ali.txt: `ali-to-pdf ... ark,t:`.
Prints one JSON line: frames, pdfs, gaussians, score_s, estep_s (CUDA-synchronised wall time of
the compute over features already on the GPU), avg loglikes (a check against ours), and where
our seconds are given, the ratios peer / ours.
"""
import json
import re
import sys
import time

import numpy as np


def read_model(path):
    """The diagonal GMMs of a text .mdl: lists of (gconsts[K], weights[K], means_invvars[K x D],
    inv_vars[K x D]) per pdf, in pdf order."""
    txt = open(path).read()
    pdfs = []
    for m in re.finditer(r"<DiagGMM>(.*?)</DiagGMM>", txt, re.S):
        body = m.group(1)

        def block(tag):
            b = re.search(r"<%s>\s*\[(.*?)\]" % tag, body, re.S)
            if not b:
                raise SystemExit("%s: a <DiagGMM> without <%s>" % (path, tag))
            rows = [r.split() for r in b.group(1).strip().split("\n") if r.strip()]
            return np.array(rows, dtype=np.float64)

        g = block("GCONSTS").reshape(-1)
        mi = block("MEANS_INVVARS")
        iv = block("INV_VARS")
        pdfs.append((g, mi, iv))
    if not pdfs:
        raise SystemExit("%s: no <DiagGMM> (not a text .mdl of diagonal GMMs?)" % path)
    return pdfs


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    import kaldiio
    import torch

    model_p, scp, ali_p = sys.argv[1:4]
    ours_score = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] not in ("", "-") else None
    ours_estep = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] not in ("", "-") else None
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    pdfs = read_model(model_p)
    P, D = len(pdfs), pdfs[0][1].shape[1]
    K = max(len(p[0]) for p in pdfs)
    F = 1 + 2 * D
    # W[f, p, k]: [gconst, mean*invvar, -0.5 invvar]; padding: gconst -inf, the rest 0
    W = np.zeros((F, P, K), dtype=np.float32)
    W[0] = -np.inf
    for p, (g, mi, iv) in enumerate(pdfs):
        k = len(g)
        W[0, p, :k] = g
        W[1:1 + D, p, :k] = mi.T
        W[1 + D:, p, :k] = -0.5 * iv.T
    Wd = torch.from_numpy(W).to(dev)
    W2 = Wd.reshape(F, P * K)
    Wg = Wd.permute(1, 0, 2).contiguous()  # [P, F, K] for gathering per frame

    pdf_of = {}
    for line in open(ali_p):
        t = line.split()
        if t:
            pdf_of[t[0]] = np.array(t[1:], dtype=np.int64)
    feats, alis = [], []
    for key, m in kaldiio.load_scp_sequential(scp):
        if key in pdf_of:
            feats.append(np.asarray(m, dtype=np.float32))
            alis.append(pdf_of[key])
    X = torch.from_numpy(np.concatenate(feats)).to(dev)
    A = torch.from_numpy(np.concatenate(alis)).to(dev)
    T = X.shape[0]
    if A.shape[0] != T:
        raise SystemExit("alignments of %d frames for %d frames of features" % (A.shape[0], T))
    chunk = max(1, min(32768, (1 << 28) // (P * K)))

    def phi(x):
        return torch.cat([torch.ones(x.shape[0], 1, device=dev), x, x * x], dim=1)

    # scoring: the frames' log-likelihoods of every pdf (results reduced to a checksum)
    torch.cuda.synchronize()
    t0 = time.time()
    best = torch.zeros((), device=dev, dtype=torch.float64)
    for s in range(0, T, chunk):
        x = X[s:s + chunk]
        ll = torch.logsumexp((phi(x) @ W2).view(-1, P, K), dim=2)
        best += ll.max(dim=1).values.double().sum()
    torch.cuda.synchronize()
    score_s = time.time() - t0

    # E-step with the aligned pdfs
    occ = torch.zeros(P * K, device=dev)
    m1 = torch.zeros(P * K, D, device=dev)
    m2 = torch.zeros(P * K, D, device=dev)
    tot = torch.zeros((), device=dev, dtype=torch.float64)
    torch.cuda.synchronize()
    t0 = time.time()
    for s in range(0, T, chunk):
        x, a = X[s:s + chunk], A[s:s + chunk]
        f = phi(x)
        ll = torch.bmm(f.unsqueeze(1), Wg[a]).squeeze(1)  # [t, K]
        lse = torch.logsumexp(ll, dim=1, keepdim=True)
        tot += lse.double().sum()
        post = torch.exp(ll - lse)  # padded columns: 0
        idx = (a.unsqueeze(1) * K + torch.arange(K, device=dev)).reshape(-1)
        pf = post.reshape(-1)
        occ.index_add_(0, idx, pf)
        xr = x.unsqueeze(1).expand(-1, K, -1).reshape(-1, D)
        m1.index_add_(0, idx, pf.unsqueeze(1) * xr)
        m2.index_add_(0, idx, pf.unsqueeze(1) * xr * xr)
    torch.cuda.synchronize()
    estep_s = time.time() - t0

    out = {
        "frames": int(T), "pdfs": P, "gaussians": int(sum(len(p[0]) for p in pdfs)), "max_gauss_per_pdf": K,
        "score_s": round(score_s, 4), "estep_s": round(estep_s, 4),
        "score_frames_per_s": round(T / score_s, 1), "estep_frames_per_s": round(T / estep_s, 1),
        "avg_best_pdf_loglike": float(best) / T, "estep_avg_loglike": float(tot) / T,
        "estep_occupancy": float(occ.double().sum()), "gpu": torch.cuda.get_device_name(0),
    }
    if ours_score:
        out["ratio_score_peer_over_ours_whole"] = round(score_s / ours_score, 3)
    if ours_estep:
        out["ratio_estep_peer_over_ours"] = round(estep_s / ours_estep, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
