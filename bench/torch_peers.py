#!/usr/bin/env python3
"""The peers of ../shared/workloads.md in PyTorch, timed at hpipe_bench's sizes, for comparison.

Prints one line per case: median milliseconds over --repeats calls after a warm-up, data resident
on the device (--device cuda|cpu). Outputs are preallocated (out=) where PyTorch allows it. Run it
beside `hpipe_bench` on the same machine; hpipe is not needed.
"""
import argparse
import statistics
import time

import torch


def timed_ms(fn, device, repeats):
    fn()  # warm-up (kernel selection, allocator)
    times = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def cases(device):
    gen = torch.Generator(device=device).manual_seed(7)

    def uniform(*shape, dtype=torch.float32, lo=0.05, hi=1.0):
        return torch.rand(*shape, generator=gen, device=device, dtype=dtype) * (hi - lo) + lo

    # W2: 10^8 elements.
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        x = uniform(10000, 10000, dtype=dtype)
        y = torch.empty_like(x)
        yield f"exp_{tag}", lambda x=x, y=y: torch.exp(x, out=y)
        yield f"log_{tag}", lambda x=x, y=y: torch.log(x, out=y)
        yield f"erf_{tag}", lambda x=x, y=y: torch.erf(x, out=y)
        yield f"logsumexp_{tag} axis 0", lambda x=x: torch.logsumexp(x, dim=0)
        del x, y
    x = uniform(10000, 10000)
    yield "logsumexp_f32 axis 1", lambda: torch.logsumexp(x, dim=1)
    del x

    # W1: batched dot products, the fast peer and bmm.
    for n, k in ((500, 500), (4096, 4096)):
        a, b = uniform(n, k), uniform(n, k)
        yield f"dot {n}x{k} (a*b).sum(1)", lambda a=a, b=b: (a * b).sum(1)
        yield f"dot {n}x{k} bmm", lambda a=a, b=b: torch.bmm(a.unsqueeze(1), b.unsqueeze(2))

    # W3: grouped conv1d, one kernel per row (full convolution).
    for n, la, lv in ((5, 5, 7), (100000, 9, 7)):
        a, v = uniform(n, la), uniform(n, lv)
        yield f"conv1d rows {n}x{la}*{lv}", lambda a=a, v=v, n=n, lv=lv: torch.nn.functional.conv1d(
            a.unsqueeze(0), v.unsqueeze(1).flip(2), padding=lv - 1, groups=n)

    # W4: CASSI forward as a loop of slice-adds, the adjoint as a loop of crops.
    bsz, c, h, w, s = 16, 28, 256, 256, 2
    x, mask = uniform(bsz, c, h, w), uniform(h, w)
    y = torch.zeros(bsz, h, w + (c - 1) * s, device=device)

    def forward():
        y.zero_()
        masked = x * mask
        for i in range(c):
            y[:, :, i * s:i * s + w] += masked[:, i]

    def adjoint():
        return torch.stack([y[:, :, i * s:i * s + w] for i in range(c)], dim=1) * mask

    yield "cassi_forward slice-adds", forward
    yield "cassi_adjoint crops", adjoint


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    name = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"PyTorch {torch.__version__} on {name}")
    for label, fn in cases(args.device):
        print(f"{label:40s} {timed_ms(fn, args.device, args.repeats):10.3f} ms", flush=True)


if __name__ == "__main__":
    main()
