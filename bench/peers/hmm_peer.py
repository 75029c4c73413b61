#!/usr/bin/env python3
"""bench/peers/hmm_peer.py [N M T ...] -- the PyTorch peer of the HMM forward: the HMM part of
../shared/peers/torch_scoring_hmm_peer.py (dense N states x M sequences x T steps, scaled, one batched
matmul per step, fp32 with TF32 off), timed with CUDA events (median of 5 after 2 warm-up calls), and its
error against the same function in float64.  Prints one line per shape:
  torch-hmm N=512 M=512 T=100: X ms/call Y frames/s Z GFLOP/s; max rel err E vs float64
(GFLOP/s = 2 N^2 M T / time, the peer's count; frames/s = M T / time).
Then the Viterbi peer, the same shapes: log-domain max-plus written the way a PyTorch user writes it
(delta[:, :, None] + logA[None] reduced by max over the previous state, in chunks of sequences so the
[chunk x N x N] temporary stays under 1 GB; back-pointers kept on the GPU, backtrace by gather), fp32:
  torch-viterbi N=512 M=512 T=100: X ms/call Y frames/s; max rel err E vs float64 (score); D path states differ"""
import sys, math, torch

dev = "cuda"
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False


def bench(fn, warm=2, rep=5):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(rep):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    ts.sort(); return ts[len(ts) // 2]


def hmm_forward(A, logB, T):
    # verbatim from the peer: A: N,N; logB: T,Mseq,N; log-likelihood per sequence using scaling
    Mseq, N = logB.shape[1], logB.shape[2]
    alpha = torch.full((Mseq, N), 1.0 / N, device=dev, dtype=A.dtype)
    ll = torch.zeros(Mseq, device=dev, dtype=A.dtype)
    for t in range(T):
        b = logB[t]; bm = b.max(1, keepdim=True).values
        alpha = (alpha @ A) * torch.exp(b - bm)
        s = alpha.sum(1, keepdim=True); alpha = alpha / s
        ll += torch.log(s[:, 0]) + bm[:, 0]
    return ll


def hmm_viterbi(logA, logB, T):
    # logA: N,N log transitions; logB: T,Mseq,N; uniform start.  Returns (best log score, path [Mseq, T]).
    Mseq, N = logB.shape[1], logB.shape[2]
    chunk = max(1, (1 << 28) // (N * N))
    delta = logB[0] - math.log(N)
    back = torch.empty((T, Mseq, N), device=dev, dtype=torch.int64)
    for t in range(1, T):
        nd = torch.empty_like(delta)
        for c0 in range(0, Mseq, chunk):
            v, i = (delta[c0:c0 + chunk, :, None] + logA[None]).max(1)
            nd[c0:c0 + chunk] = v + logB[t, c0:c0 + chunk]
            back[t, c0:c0 + chunk] = i
        delta = nd
    best, s = delta.max(1)
    path = torch.empty((Mseq, T), device=dev, dtype=torch.int64)
    path[:, T - 1] = s
    for t in range(T - 1, 0, -1):
        s = back[t].gather(1, s[:, None])[:, 0]
        path[:, t - 1] = s
    return best, path


shapes = [int(x) for x in sys.argv[1:]] or [512, 512, 100, 4096, 256, 100]
for k in range(0, len(shapes), 3):
    N, Mseq, T = shapes[k:k + 3]
    A = torch.softmax(torch.randn(N, N, device=dev), 1)
    logB = torch.randn(T, Mseq, N, device=dev)
    t = bench(lambda: hmm_forward(A, logB, T))
    ref = hmm_forward(A.double(), logB.double(), T)
    got = hmm_forward(A, logB, T).double()
    err = ((got - ref).abs() / ref.abs().clamp(min=1)).max().item()
    print(f"torch-hmm N={N} M={Mseq} T={T}: {t * 1e3:.3f} ms/call {Mseq * T / t:.4g} frames/s "
          f"{2 * N * N * Mseq * T / t / 1e9:.1f} GFLOP/s; max rel err {err:.3g} vs float64", flush=True)

for k in range(0, len(shapes), 3):
    N, Mseq, T = shapes[k:k + 3]
    A = torch.softmax(torch.randn(N, N, device=dev), 1)
    logA = torch.log(A)
    logB = torch.randn(T, Mseq, N, device=dev)
    t = bench(lambda: hmm_viterbi(logA, logB, T))
    rb, rp = hmm_viterbi(logA.double(), logB.double(), T)
    gb, gp = hmm_viterbi(logA, logB, T)
    err = ((gb.double() - rb).abs() / rb.abs().clamp(min=1)).max().item()
    diff = int((gp != rp).sum().item())
    print(f"torch-viterbi N={N} M={Mseq} T={T}: {t * 1e3:.3f} ms/call {Mseq * T / t:.4g} frames/s; "
          f"max rel err {err:.3g} vs float64 (score); {diff} path states differ", flush=True)
