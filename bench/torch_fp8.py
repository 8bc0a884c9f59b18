"""cuBLASLt's FP8 GEMM through PyTorch, the reference of the tensor ladder's FP8 rung.

C = scale_a scale_b A B^T with A m x k and B n x k row-major FP8 e4m3 (as the lab's rung 9
reads them), BF16 C: torch._scaled_mm, which calls cublasLtMatmul. Twice per size: with cuBLASLt's
default split accumulator (partial sums promoted to FP32 on the CUDA cores now and then) and with
use_fast_accum=True (the tensor cores' own accumulation, as rung 9 chains its wgmma). Prints one
line each: the median of 20 event-timed runs after 5 warm-ups, TFLOP/s.

Usage: python3 bench/torch_fp8.py [MxNxK ...]   (default 4096^3 and 8192^3)
"""

import statistics
import sys

import torch


def tflops(m, n, k, fast):
    a = (torch.randint(-8, 8, (m, k), device="cuda") / 8).to(torch.float8_e4m3fn)
    b = (torch.randint(-8, 8, (n, k), device="cuda") / 8).to(torch.float8_e4m3fn)
    one = torch.tensor(1.0, device="cuda")
    scale = torch.tensor(0.125, device="cuda")

    def run():
        return torch._scaled_mm(
            a, b.t(), scale_a=scale, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=fast
        )

    for _ in range(5):
        run()
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return 2 * m * n * k / statistics.median(times) / 1e12


if __name__ == "__main__":
    sizes = sys.argv[1:] or ["4096x4096x4096", "8192x8192x8192"]
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}")
    for size in sizes:
        m, n, k = (int(v) for v in size.split("x"))
        for fast, name in [(False, "split accumulator"), (True, "use_fast_accum")]:
            print(f"cuBLASLt FP8 e4m3 (torch._scaled_mm, BF16 out, {name}) {size}: {tflops(m, n, k, fast):.1f} TFLOP/s")
