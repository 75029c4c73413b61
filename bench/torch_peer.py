#!/usr/bin/env python3
"""Peer for bench/run.sh: the same GMM log-likelihoods in PyTorch on the same
GPU, the way a PyTorch user would write them: expanded features times a
parameter matrix (one GEMM, float32, TF32 off so the arithmetic matches ours),
plus the Gaussian constants, then logsumexp over each pdf's Gaussians.

  full: loglike_g(x) = gconst_g + x.mu_invcov_g - 0.5 x'P_g x
        = [1, x, vec_lower(x x')] . [gconst_g, mu_invcov_g, c_g]
        with c_ii = -0.5 P_ii, c_ij = -P_ij (Vanek et al.'s doubled off-diagonals)
  diag: [1, x, x*x] . [gconst_g, mu_invvar_g, -0.5 invvar_g]

Prints one line per case: frames/s and GFLOP/s under the seed's flop count
(full: 5 per off-diagonal, 4 per diagonal element, 9 per log-add; diag: 4 per
dimension + 9), the same count bench-score uses.
Also the global-UBM shapes (1 pdf x 1024 full / 2048 diag Gaussians, D=40)
over --ubm-frames frames, as bench/run.sh runs them with bench-score.
Usage: torch_peer.py [--frames=4096] [--iters=5] [--ubm-frames=0 (skip)]
"""
import sys

import torch


def flops_per_gauss(kind, d):
    """Vanek et al.'s flop count of one Gaussian on one frame (see bench-score.c)."""
    return (5 * d * (d - 1) // 2 + 4 * d + 9) if kind == "full" else 4 * d + 9


def bench(kind, pdfs, gauss, d, frames, iters, chunk):
    """Time the GEMM + logsumexp formulation of `pdfs` x `gauss` Gaussians
    ("full" or "diag", dimension d) on `frames` random frames, `chunk` frames
    per GEMM; prints the median of `iters` timed calls (CUDA events, natural
    log outputs [frames x pdfs], results discarded)."""
    torch.manual_seed(0)
    dev = "cuda"
    G = pdfs * gauss
    x = torch.randn(frames, d, device=dev)
    if kind == "full":
        il = torch.tril_indices(d, d, device=dev)
        nfeat = 1 + d + il.shape[1]
    else:
        nfeat = 1 + 2 * d
    W = torch.randn(nfeat, G, device=dev) * 0.01

    def expand(xc):
        one = torch.ones(xc.shape[0], 1, device=dev)
        if kind == "full":
            quad = (xc[:, :, None] * xc[:, None, :])[:, il[0], il[1]]
            return torch.cat([one, xc, quad], 1)
        return torch.cat([one, xc, xc * xc], 1)

    def run():
        outs = []
        for s in range(0, frames, chunk):
            ll = expand(x[s:s + chunk]) @ W
            outs.append(torch.logsumexp(ll.view(-1, pdfs, gauss), dim=2))
        return torch.cat(outs)

    for _ in range(2):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); run(); b.record(); torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    t = sorted(times)[len(times) // 2]
    gflops = frames * G * flops_per_gauss(kind, d) / t / 1e9
    print("torch-peer %s: %d pdfs x %d Gaussians, D=%d, %d frames: %.2f ms/call  %.0f frames/s  %.1f GFLOP/s"
          % (kind, pdfs, gauss, d, frames, t * 1e3, frames / t, gflops), flush=True)


def main():
    """Parse --frames / --iters / --ubm-frames and run every case (CUDA only)."""
    frames, iters, ubm_frames = 4096, 5, 0
    for a in sys.argv[1:]:
        if a.startswith("--frames="):
            frames = int(a.split("=")[1])
        elif a.startswith("--ubm-frames="):
            ubm_frames = int(a.split("=")[1])
        elif a.startswith("--iters="):
            iters = int(a.split("=")[1])
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    bench("full", 5000, 16, 36, frames, iters, chunk=1024)
    bench("diag", 5000, 256, 36, frames, iters, chunk=256)
    if ubm_frames > 0:
        bench("full", 1, 1024, 40, ubm_frames, iters, chunk=8192)
        bench("diag", 1, 2048, 40, ubm_frames, iters, chunk=8192)


if __name__ == "__main__":
    main()
