"""Measured ceilings of the GPU, in the same run as the benchmark (bench/run.sh): device-to-device copy
bandwidth (bytes read + written) and 8192^3 matrix products in fp32 (TF32 off) and TF32, through PyTorch.
Median of 10 timed calls after 3 warm-ups (CUDA events).  Prints one line:
  ceilings: copy <GB/s> GB/s, sgemm fp32 <TFLOP/s>, tf32 <TFLOP/s>"""
import torch

def bench(fn, warm=3, rep=10):
    for _ in range(warm): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(rep):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b) / 1e3)
    ts.sort(); return ts[len(ts) // 2]

n = 1 << 30
src = torch.randn(n // 4, device="cuda"); dst = torch.empty_like(src)
copy = 2 * n / bench(lambda: dst.copy_(src)) / 1e9
del src, dst
A = torch.randn(8192, 8192, device="cuda"); B = torch.randn(8192, 8192, device="cuda")
torch.backends.cuda.matmul.allow_tf32 = False
fp32 = 2 * 8192 ** 3 / bench(lambda: A @ B) / 1e12
torch.backends.cuda.matmul.allow_tf32 = True
tf32 = 2 * 8192 ** 3 / bench(lambda: A @ B) / 1e12
print("ceilings: copy %.0f GB/s, sgemm fp32 %.1f TFLOP/s, tf32 %.1f TFLOP/s" % (copy, fp32, tf32), flush=True)
