"""Measured ceilings of the GPU, in the same run as the benchmark (bench/run.sh): device-to-device copy
bandwidth (bytes read + written) and 8192^3 matrix products in fp32 (TF32 off) and TF32, through PyTorch.
Median of 10 timed calls after 3 warm-ups (CUDA events).  Prints one line:
  ceilings: copy <GB/s> GB/s, sgemm fp32 <TFLOP/s>, tf32 <TFLOP/s>
and the host-to-device copy of 160 MB (the features of bench/io.sh's 1M frames of D=40) from
page-locked memory, alone and while a matrix product runs on the GPU:
  ceilings: host-to-device <GB/s> GB/s page-locked, <GB/s> GB/s beside a kernel"""
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

h = torch.empty(40 << 20, dtype=torch.float32).pin_memory(); d = torch.empty(40 << 20, device="cuda")
h2d = h.numel() * 4 / bench(lambda: d.copy_(h, non_blocking=True)) / 1e9
s = torch.cuda.Stream()
def beside():  # the copy on a second stream while products run on the first (the time of the copy alone)
    for _ in range(4): A @ B
    with torch.cuda.stream(s):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(s); d.copy_(h, non_blocking=True); b.record(s)
    torch.cuda.synchronize(); return a.elapsed_time(b) / 1e3
t = sorted(beside() for _ in range(7))[3]
print("ceilings: host-to-device %.1f GB/s page-locked, %.1f GB/s beside a kernel" % (h2d, h.numel() * 4 / t / 1e9), flush=True)
