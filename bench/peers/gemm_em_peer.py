"""(Copied from ../shared/peers/ -- the peer of the EM rows of bench/RESULTS.md; bench/run.sh runs it.)
The strongest plain-PyTorch EM a GPU user would write: expanded features [1, x, vech(xx')] (full) or [1, x, x^2]
(diag), so that the E-step log-likelihoods AND the sufficient statistics are each one fp32 GEMM per chunk.
Times one EM iteration for the shapes given; prints JSON.
Usage: python3 gemm_em_peer.py [--device cuda|cpu] [--shapes "full,150000,19,16;diag,262144,40,2048"]
(--device cpu: the PyTorch CPU version of the same math, all cores (torch.get_num_threads()), tags gemm_em_cpu_*;
the peer of our CPU backend, bench-em --device=cpu.)"""
import argparse, json, math, os, time
import torch
ap = argparse.ArgumentParser()
ap.add_argument("--device", default="cuda")
ap.add_argument("--shapes", default="full,150000,19,16;full,500000,36,128;full,262144,40,1024;diag,262144,40,2048")
args = ap.parse_args()
dev = args.device; torch.backends.cuda.matmul.allow_tf32 = False
def sync():
    if dev == "cuda": torch.cuda.synchronize()
def em_iter(X, w, mu, cov, full, chunk=32768):
    N, D = X.shape; K = mu.shape[0]
    if full:
        iu = torch.triu_indices(D, D, device=dev)
        P = torch.linalg.inv(cov); logdet = torch.logdet(cov)
        g = torch.log(w) - 0.5 * (D * math.log(2 * math.pi) + logdet + torch.einsum("gi,gij,gj->g", mu, P, mu))
        Pq = -0.5 * P[:, iu[0], iu[1]] * torch.where(iu[0] == iu[1], 1.0, 2.0)
        A = torch.cat([g[:, None], torch.einsum("gij,gj->gi", P, mu), Pq], 1)
    else:
        iv = 1 / cov
        g = torch.log(w) - 0.5 * (D * math.log(2 * math.pi) + torch.log(cov).sum(1) + (mu * mu * iv).sum(1))
        A = torch.cat([g[:, None], mu * iv, -0.5 * iv], 1)
    S = torch.zeros(K, A.shape[1], device=dev, dtype=torch.float64)
    for i in range(0, N, chunk):
        x = X[i:i + chunk]; n = x.shape[0]
        Xe = torch.cat([torch.ones(n, 1, device=dev), x, x[:, iu[0]] * x[:, iu[1]] if full else x * x], 1)
        r = torch.softmax(Xe @ A.T, 1)
        S += (r.T @ Xe).double()
    nk = S[:, 0]; s1 = S[:, 1:1 + D] / nk[:, None]
    if full:
        s2 = torch.zeros(K, D, D, device=dev, dtype=torch.float64); s2[:, iu[0], iu[1]] = S[:, 1 + D:] / nk[:, None]
        s2 = s2 + s2.transpose(1, 2) - torch.diag_embed(torch.diagonal(s2, dim1=1, dim2=2))
        cov = (s2 - s1[:, :, None] * s1[:, None, :]).float() + 1e-3 * torch.eye(D, device=dev)
    else:
        cov = (S[:, 1 + D:] / nk[:, None] - s1 ** 2).float().clamp_min(1e-3)
    return (nk / N).float(), s1.float(), cov
res = {}
torch.manual_seed(0)
shapes = [(int(n), int(d), int(k), t == "full") for t, n, d, k in (x.split(",") for x in args.shapes.split(";"))]
if dev == "cpu": print(f"torch-cpu threads={torch.get_num_threads()}", flush=True)
for (N, D, K, full) in shapes:
    X = torch.randn(N, D, device=dev) + torch.randn(64, D, device=dev)[torch.randint(0, 64, (N,), device=dev)] * 2
    mu = X[torch.randperm(N, device=dev)[:K]].clone(); w = torch.full((K,), 1.0 / K, device=dev)
    cov = torch.eye(D, device=dev).expand(K, D, D).clone() if full else torch.ones(K, D, device=dev)
    for _ in range(2): w, mu, cov = em_iter(X, w, mu, cov, full)
    sync(); t0 = time.time()
    for _ in range(3): w, mu, cov = em_iter(X, w, mu, cov, full)
    sync(); t = (time.time() - t0) / 3
    tag = f"gemm_em_{'cpu_' if dev == 'cpu' else ''}{'full' if full else 'diag'}_N{N}_D{D}_K{K}"; res[tag] = t; print(tag, f"{t*1e3:.1f} ms/iter", flush=True)
json.dump(res, open(os.path.join(os.environ.get("OUT", "/tmp"), f"gemm_em_peer{'_cpu' if dev == 'cpu' else ''}.json"), "w"), indent=1)
