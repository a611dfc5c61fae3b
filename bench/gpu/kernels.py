#!/usr/bin/env python3
"""Kernel micro-benchmarks of one GPU through PyTorch, for the device profiles.

Measures what the compute model of `docs/cost-model.md` needs per device and
that `shardlab bench gemm` (cuBLAS only) does not: GEMM throughput per dtype and
its tile/wave quantisation, flash attention forward and backward, the achieved
bandwidth of memory-bound kernels (copy, element-wise, norms, softmax) and the
launch cost of a tiny kernel. Every figure is the median of timed repetitions
between CUDA events, after warm-up.

  python3 bench/gpu/kernels.py -o kernels.json [--quick]

The output is committed under configs/calibration/measured/ named for the GPU.
"""
import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F


def timed(fn, reps, warmup=3):
    """Median seconds of fn() over reps runs, each between two CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def reps_for(seconds_guess, budget=0.05, low=5, high=50):
    if seconds_guess <= 0:
        return high
    return max(low, min(high, int(budget / seconds_guess)))


def gemm_case(m, n, k, dtype, layout="NN"):
    """C[m,n] = A[m,k] @ B[k,n]; layout T transposes the stored operand as backward passes do."""
    a = torch.randn(m, k, device="cuda", dtype=torch.float32).to(dtype)
    b = torch.randn(k, n, device="cuda", dtype=torch.float32).to(dtype)
    if layout[0] == "T":
        a = a.t().contiguous().t()
    if layout[1] == "T":
        b = b.t().contiguous().t()
    fn = lambda: torch.matmul(a, b)
    guess = timed(fn, 2, warmup=1)
    t = timed(fn, reps_for(guess))
    flops = 2.0 * m * n * k
    return {"m": m, "n": n, "k": k, "dtype": str(dtype).replace("torch.", ""),
            "layout": layout, "seconds": t, "tflops": flops / t / 1e12}


def fp8_gemm_case(m, n, k):
    """E4M3 x E4M3 -> BF16 through torch._scaled_mm (row-major A, column-major B)."""
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return None
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0, device="cuda")

    def fn():
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    try:
        fn()
    except Exception as error:  # signature differs across PyTorch versions
        return {"m": m, "n": n, "k": k, "error": str(error)[:200]}
    guess = timed(fn, 2, warmup=1)
    t = timed(fn, reps_for(guess))
    return {"m": m, "n": n, "k": k, "dtype": "float8_e4m3fn", "layout": "NT",
            "seconds": t, "tflops": 2.0 * m * n * k / t / 1e12}


def attention_case(batch, heads, seq, head_dim, causal, backend="FLASH_ATTENTION"):
    """Fused attention (a PyTorch SDPA back end: FlashAttention-2 or cuDNN's) forward and
    forward+backward."""
    q = torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=torch.bfloat16,
                    requires_grad=True)
    k = torch.randn_like(q, requires_grad=True)
    v = torch.randn_like(q, requires_grad=True)
    grad = torch.randn_like(q)
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        ctx = lambda: sdpa_kernel(getattr(SDPBackend, backend))
    except (ImportError, AttributeError):
        ctx = lambda: torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False,
                                                     enable_mem_efficient=False)

    def forward():
        with ctx():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def forward_backward():
        with ctx():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.backward(grad)

    try:
        with torch.no_grad():
            t_fwd = timed(forward, 10)
    except RuntimeError as error:
        return {"backend": backend, "seq": seq, "head_dim": head_dim, "error": str(error)[:200]}
    t_both = timed(forward_backward, 10)
    pairs = batch * heads * seq * seq * (0.5 if causal else 1.0)
    fwd_flops = 4.0 * pairs * head_dim
    bwd_flops = 10.0 * pairs * head_dim  # FlashAttention-2: recompute QK^T, dV, dP, dQ, dK
    t_bwd = max(t_both - t_fwd, 1e-9)
    return {"backend": backend.lower(), "batch": batch, "heads": heads, "seq": seq,
            "head_dim": head_dim, "causal": causal, "forward_seconds": t_fwd, "backward_seconds": t_bwd,
            "forward_tflops": fwd_flops / t_fwd / 1e12,
            "backward_tflops": bwd_flops / t_bwd / 1e12}


def memory_case(name, elements, dtype=torch.bfloat16):
    """Achieved bandwidth of one memory-bound kernel over `elements` values."""
    size = torch.tensor([], dtype=dtype).element_size()
    hidden = 4096
    rows = max(1, elements // hidden)
    x = torch.randn(rows, hidden, device="cuda", dtype=torch.float32).to(dtype)
    y = torch.randn_like(x)
    weight = torch.ones(hidden, device="cuda", dtype=dtype)
    kernels = {
        # name: (function, values read + written per element)
        "copy": (lambda: x.clone(), 2),
        "add": (lambda: x + y, 3),
        "gelu": (lambda: F.gelu(x, approximate="tanh"), 2),
        "silu_mul": (lambda: F.silu(x) * y, 5),  # unfused SwiGLU: silu (2) then mul (3)
        "softmax": (lambda: torch.softmax(x, dim=-1), 2),
        "layer_norm": (lambda: F.layer_norm(x, (hidden,), weight), 2),
        "rms_norm": (lambda: (F.rms_norm(x, (hidden,), weight) if hasattr(F, "rms_norm")
                              else x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True)
                                                   + 1e-6).to(dtype) * weight), 2),
    }
    fn, touches = kernels[name]
    guess = timed(fn, 2, warmup=1)
    t = timed(fn, reps_for(guess))
    moved = rows * hidden * size * touches
    return {"kernel": name, "elements": rows * hidden, "dtype": str(dtype).replace("torch.", ""),
            "bytes": moved, "seconds": t, "gbps": moved / t / 1e9}


def graph_launch_gap():
    """GPU-side seconds per dependent tiny kernel with the host out of the way: 1000 one-element
    kernels captured in a CUDA graph and replayed."""
    x = torch.zeros(1, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(1000):
            x.add_(1)
    return timed(graph.replay, 20) / 1000


def launch_overhead():
    """Seconds per launch of a one-element kernel, back to back, and one alone (event to event)."""
    x = torch.zeros(1, device="cuda")
    n = 2000
    for _ in range(100):
        x.add_(1)
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        x.add_(1)
    end.record()
    end.synchronize()
    back_to_back = start.elapsed_time(end) / 1e3 / n
    cpu_start = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
    host = (time.perf_counter() - cpu_start) / n
    alone = timed(lambda: x.add_(1), 50)
    return {"back_to_back_seconds": back_to_back, "host_issue_seconds": host,
            "single_event_seconds": alone, "graph_kernel_seconds": graph_launch_gap()}


def device_facts():
    props = torch.cuda.get_device_properties(0)
    facts = {"name": props.name, "sms": props.multi_processor_count,
             "memory_bytes": props.total_memory, "torch": torch.__version__,
             "cuda": torch.version.cuda, "python": platform.python_version()}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,"
                              "clocks.max.mem,power.limit", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        facts["nvidia_smi"] = smi.stdout.strip()
    except Exception as error:
        facts["nvidia_smi"] = str(error)
    return facts


def gemm_group(quick):
    squares = [1024, 2048, 4096, 8192, 16384] if not quick else [4096, 8192]
    gemms = []
    for s in squares:
        gemms.append(gemm_case(s, s, s, torch.bfloat16))
    for s in [4096, 8192]:
        gemms.append(gemm_case(s, s, s, torch.float16))
        gemms.append(gemm_case(s, s, s, torch.float32))
    # Tile and wave quantisation: one dimension a little past a multiple of 128/256.
    for n in [4096, 4100, 4160, 4224, 4352, 4608, 5120]:
        gemms.append(gemm_case(4096, n, 4096, torch.bfloat16))
    # Small dimensions: tokens per micro-batch or a thin tensor-parallel slice.
    for m in [16, 64, 128, 256, 512, 1024, 2048]:
        gemms.append(gemm_case(m, 8192, 8192, torch.bfloat16))
    for k in [128, 256, 512, 1024, 2048]:
        gemms.append(gemm_case(8192, 8192, k, torch.bfloat16))
    # Transformer layers as tensor parallelism slices them (tokens x hidden x out).
    for tokens, hidden, out in [(4096, 4096, 12288 // 1), (4096, 4096, 1536), (8192, 8192, 3072),
                                (8192, 8192, 7168), (8192, 1024, 8192), (16384, 12288, 4608),
                                (4096, 5120, 3456), (4096, 14336, 4096)]:
        for layout in ["NN", "NT", "TN"]:
            gemms.append(gemm_case(tokens, out, hidden, torch.bfloat16, layout))
    fp8 = [fp8_gemm_case(s, s, s) for s in [4096, 8192, 16384]]
    fp8 += [fp8_gemm_case(8192, 7168, 8192), fp8_gemm_case(4096, 4100, 4096)]
    return {"gemm": gemms, "gemm_fp8": [c for c in fp8 if c is not None]}


def wave_group():
    """Throughput against one dimension in steps of 64 (tile and wave quantisation)."""
    cases = [gemm_case(4096, n, 4096, torch.bfloat16) for n in range(3072, 6144 + 1, 64)]
    cases += [gemm_case(m, 4096, 4096, torch.bfloat16) for m in range(64, 2048 + 1, 64)]
    cases += [gemm_case(8192, 8192, k, torch.bfloat16) for k in range(64, 1024 + 1, 64)]
    return cases


def fp8_group():
    """E4M3 GEMMs over the shapes of the bf16 groups that FP8 accepts (dimensions multiples of 16)."""
    cases = [fp8_gemm_case(s, s, s) for s in [2048, 4096, 6144, 8192, 12288, 16384]]
    cases += [fp8_gemm_case(4096, n, 4096) for n in range(3072, 6144 + 1, 128)]
    cases += [fp8_gemm_case(m, 8192, 8192) for m in [256, 512, 1024, 2048, 4096]]
    cases += [fp8_gemm_case(8192, 8192, k) for k in [256, 512, 1024, 2048]]
    cases += [fp8_gemm_case(t, o, h) for t, h, o in [(4096, 4096, 12288), (8192, 8192, 3072),
                                                      (8192, 8192, 7168), (16384, 12288, 4608),
                                                      (4096, 14336, 4096), (8192, 7168, 2048)]]
    return [c for c in cases if c is not None]


def batched_case(batch, m, n, k):
    """`batch` independent [m, k] x [k, n] products in one strided-batched cuBLAS call (torch.bmm),
    as a mixture-of-experts layer runs its experts."""
    a = torch.randn(batch, m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(batch, k, n, device="cuda").to(torch.bfloat16)
    fn = lambda: torch.bmm(a, b)
    guess = timed(fn, 2, warmup=1)
    t = timed(fn, reps_for(guess))
    return {"batch": batch, "m": m, "n": n, "k": k, "dtype": "bfloat16", "layout": "NN",
            "seconds": t, "tflops": 2.0 * batch * m * n * k / t / 1e12}


def batched_group():
    cases = []
    for n, k in [(2048, 7168), (7168, 2048), (14336, 4096), (4096, 14336)]:
        for m in [64, 128, 256, 512, 1024]:
            for batch in [1, 4, 16, 64]:
                if batch * m * max(n, k) <= (1 << 31) // 8:
                    cases.append(batched_case(batch, m, n, k))
    return cases


def attention_group():
    attention = []
    for seq in [1024, 2048, 4096, 8192, 16384]:
        for head_dim in [64, 128]:
            heads = 4096 // head_dim // (1 if seq <= 4096 else 2)
            for causal in [False, True]:
                batch = max(1, 8192 // seq)
                for backend in ["FLASH_ATTENTION", "CUDNN_ATTENTION"]:
                    attention.append(attention_case(batch, heads, seq, head_dim, causal,
                                                    backend))
    return attention


def attention_extra_group():
    """cuDNN attention at the head sizes of latent attention (query/key 192) and 256."""
    cases = []
    for seq in [2048, 4096, 8192]:
        for head_dim in [96, 192, 256]:
            heads = max(1, 4096 // head_dim)
            cases.append(attention_case(max(1, 8192 // seq), heads, seq, head_dim, True,
                                        "CUDNN_ATTENTION"))
    return cases


def memory_group():
    memory = []
    for name in ["copy", "add", "gelu", "silu_mul", "softmax", "layer_norm", "rms_norm"]:
        for elements in [1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 27, 1 << 29]:
            memory.append(memory_case(name, elements))
    return memory


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--quick", action="store_true", help="a few shapes per group")
    parser.add_argument("--only", choices=["gemm", "waves", "fp8", "batched", "attention",
                                           "attention_extra",
                                           "memory", "launch"],
                        action="append", help="run only these groups (repeatable)")
    args = parser.parse_args()
    wanted = lambda group: not args.only or group in args.only
    torch.backends.cuda.matmul.allow_tf32 = False
    began = time.time()
    result = {"what": "kernel micro-benchmarks (bench/gpu/kernels.py)", "device": device_facts()}

    if wanted("gemm"):
        result.update(gemm_group(args.quick))
    if wanted("waves"):
        result["gemm_waves"] = wave_group()
    if wanted("fp8"):
        result["gemm_fp8_shapes"] = fp8_group()
    if wanted("batched"):
        result["gemm_batched"] = batched_group()
    if wanted("attention"):
        result["flash_attention"] = attention_group()
    if wanted("attention_extra"):
        result["attention_head_sizes"] = attention_extra_group()
    if wanted("memory"):
        result["memory_bound"] = memory_group()
    if wanted("launch"):
        result["launch"] = launch_overhead()
    result["seconds"] = time.time() - began
    with open(args.output, "w") as out:
        json.dump(result, out, indent=1)
    print(json.dumps({"seconds": result["seconds"], "device": result["device"]["name"]}))


if __name__ == "__main__":
    sys.exit(main())
