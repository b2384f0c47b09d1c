"""Baseline for gpu_reduce_bench: cupy.sum of 2^LOG2_N random float64 (default 27), timed with
CUDA events, 5 warm-ups, median of REPS (default 30). Usage: python3 cupy_sum_baseline.py [LOG2_N] [REPS]"""
import statistics
import sys

import cupy as cp

log2n = int(sys.argv[1]) if len(sys.argv) > 1 else 27
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
x = cp.random.default_rng(2027).random(1 << log2n, dtype=cp.float64) - 0.25
for _ in range(5):
    s = cp.sum(x)
cp.cuda.Device().synchronize()
times = []
for _ in range(reps):
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    s = cp.sum(x)
    end.record()
    end.synchronize()
    times.append(cp.cuda.get_elapsed_time(start, end))
ms = statistics.median(times)
print(f"cupy.sum f64 2^{log2n}: median {ms:.4f} ms, {x.nbytes / (ms * 1e-3) / 1e9:.0f} GB/s, sum {float(s):.17e}")
