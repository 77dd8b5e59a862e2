#!/usr/bin/env python3
"""hpipe called from Python against the methods of ../shared/workloads.md, on the same inputs, in one run.

Per case (the W1-W4 shapes of hpipe_bench): hpipe's time called from Python, every peer's (PyTorch,
and NumPy / SciPy / numexpr on the CPU, where installed), and the ratio best peer / hpipe. With the
C++ benchmark binary (--hpipe-bench, found in build/bench by default) the same run also times each
case's `hpipe_bench` benchmark and prints how the Python call compares: from Python hpipe should be
at least as far ahead of the best peer as from C++ (within 10%). Then the Python call overhead of a
tiny call (W3 case A) and the 500 x 500 batched dot against (a*b).sum(1) at every thread count.

Times are medians of --repeats samples after a warm-up; a sample of a short call is the mean of a
batch of calls lasting about a millisecond. Outputs are preallocated (out=) where the method allows
it. Without hpipe importable only the peers are timed (a GPU host with PyTorch alone).
"""
import argparse
import importlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

try:
    import hpipe
except ImportError:
    hpipe = None


def optional(module):
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


np, special, signal, numexpr = (optional(m) for m in ("numpy", "scipy.special", "scipy.signal", "numexpr"))

PYTHON_GOAL = 1.1  # from Python, within 10% of hpipe_bench's lead over the best peer
OVERHEAD_GOAL_US = 2.0  # Python call over the C++ call, W3 case A


# Idle time before each method is timed, so that the previous method's worker threads (PyTorch's
# OpenMP team may spin after a parallel region) have left the cores: right after the slice-add peers,
# W4 A from Python took 1.3-1.7x its time after an idle pause (Zen 5, 2026-11-27).
SETTLE_S = 0.1


def seconds_per_call(fn, device, repeats):
    """Median seconds per call of `repeats` samples; a sample batches calls to last about 1 ms."""
    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    time.sleep(SETTLE_S)  # the previous method's worker threads go idle
    fn()  # warm-up: kernel selection, allocator, caches
    sync()
    start = time.perf_counter()
    fn()
    sync()
    batch = max(1, int(1e-3 / max(time.perf_counter() - start, 1e-9)))
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        samples.append((time.perf_counter() - start) / batch)
    return statistics.median(samples)


class Case:
    """One workload case: the hpipe call, its peers by name, and its hpipe_bench benchmark."""

    def __init__(self, label, bench, hpipe_call, peers, repeats=None):
        self.label, self.bench, self.hpipe_call, self.peers, self.repeats = label, bench, hpipe_call, peers, repeats


def cases(device):
    """Every case, made one workload at a time (each workload's arrays go when its cases are done)."""
    gen = torch.Generator(device=device).manual_seed(7)

    def uniform(*shape, dtype=torch.float32, lo=0.05, hi=1.0):
        return torch.rand(*shape, generator=gen, device=device, dtype=dtype) * (hi - lo) + lo

    for workload in (w1_cases, w3_cases, w4_cases, w2_cases):
        yield from workload(uniform, device == "cpu")


def w1_cases(uniform, cpu):
    """Batched dot products."""
    for n, k in ((500, 500), (4096, 4096)):
        a, b = uniform(n, k), uniform(n, k)
        out = torch.empty(n, device=a.device)
        peers = {"(a*b).sum(1)": lambda a=a, b=b: (a * b).sum(1),
                 "bmm": lambda a=a, b=b: torch.bmm(a.unsqueeze(1), b.unsqueeze(2))}
        if cpu and np:
            an, bn = a.numpy(), b.numpy()
            peers["np.einsum"] = lambda an=an, bn=bn: np.einsum("ij,ij->i", an, bn)
        yield Case(f"W1 dot {n}x{k}", f"BM_dot/{n}/{k}", lambda a=a, b=b, out=out: hpipe.batched_dot(a, b, out=out),
                   peers)


def w3_cases(uniform, cpu):
    """Batched full convolutions: one kernel per row (case A and a large batch), one shared kernel (case B)."""
    for n, la, lv in ((5, 5, 7), (100000, 9, 7)):
        a, v = uniform(n, la), uniform(n, lv)
        out = torch.empty(n, la + lv - 1, device=a.device)
        peers = {"grouped F.conv1d": lambda a=a, v=v, n=n, lv=lv: F.conv1d(
            a.unsqueeze(0), v.unsqueeze(1).flip(2), padding=lv - 1, groups=n)}
        if cpu and signal:
            peers["fftconvolve"] = lambda a=a.numpy(), v=v.numpy(): signal.fftconvolve(a, v, axes=1)
        if cpu and np and n <= 1000:
            peers["np.convolve rows"] = lambda a=a.numpy(), v=v.numpy(): [np.convolve(r, k) for r, k in zip(a, v)]
        yield Case(f"W3 conv1d rows {n}x{la}*{lv}", f"BM_conv1d_rows/{n}/{la}/{lv}",
                   lambda a=a, v=v, out=out: hpipe.conv1d(a, v, out=out), peers)
    signals, kernel = uniform(100, 9), uniform(6)
    out = torch.empty(100, 14, device=signals.device)
    yield Case("W3 conv1d shared 100x9*6", "BM_conv1d_shared/100/9/6",
               lambda: hpipe.conv1d(signals, kernel, out=out),
               {"F.conv1d": lambda: F.conv1d(signals.unsqueeze(1), kernel.flip(0).view(1, 1, -1), padding=5)})


def w4_cases(uniform, cpu):
    """CASSI at (16, 28, 256, 256), S = 2, a shared mask."""
    bsz, c, h, w, s = 16, 28, 256, 256, 2
    x, mask, y = uniform(bsz, c, h, w), uniform(h, w), uniform(bsz, h, w + (c - 1) * s)
    y_out, x_out = torch.empty_like(y), torch.empty_like(x)
    alpha = torch.zeros(w + (c - 1) * s, device=mask.device)
    for i in range(c):
        alpha[i * s:i * s + w] += 1
    phi = hpipe.cassi_phi(mask, c, s) if hpipe else None

    def slice_adds():
        y_out.zero_()
        masked = x * mask
        for i in range(c):
            y_out[:, :, i * s:i * s + w] += masked[:, i]

    def crops(measurement):
        return torch.stack([measurement[:, :, i * s:i * s + w] for i in range(c)], dim=1)

    def crops_of(cube):
        return torch.stack([cube[:, i, :, i * s:i * s + w] for i in range(c)], dim=1)

    yield Case("W4 CASSI A", "BM_cassi_forward/16/28/256/256/2",
               lambda: hpipe.cassi_forward(x, mask, s, out=y_out), {"slice-adds": slice_adds}, repeats=5)
    yield Case("W4 CASSI A^T", "BM_cassi_adjoint/16/28/256/256/2",
               lambda: hpipe.cassi_adjoint(y, mask, c, s, out=x_out), {"crops": lambda: crops(y) * mask}, repeats=5)
    yield Case("W4 CASSI A^+", "BM_cassi_pinv/16/28/256/256/2",
               lambda: hpipe.cassi_pinv(y, mask, c, s, out=x_out), {"crops of y/phi": lambda: crops(y / phi) * mask},
               repeats=5)
    yield Case("W4 column-count inverse", "BM_cassi_pinv_alpha/16/28/256/256/2",
               lambda: hpipe.cassi_pinv_alpha(y, mask, c, s, out=x_out),
               {"crops + cat": lambda: torch.cat([(y / alpha)[:, None, :, i * s:i * s + w] for i in range(c)], 1) / mask},
               repeats=5)
    # MST / DAUHST's shift_3d and shift_back_3d, as their code does them: band by band.
    shifted = torch.zeros(bsz, c, h, w + (c - 1) * s, device=x.device)

    def slice_copies():
        shifted.zero_()
        for i in range(c):
            shifted[:, i, :, i * s:i * s + w] = x[:, i]

    yield Case("W4 shift", "BM_cassi_shift/16/28/256/256/2", lambda: hpipe.cassi_shift(x, s, out=shifted),
               {"slice copies": slice_copies}, repeats=5)
    shifted_in = uniform(bsz, c, h, w + (c - 1) * s)
    yield Case("W4 shift back", "BM_cassi_shift_back/16/28/256/256/2",
               lambda: hpipe.cassi_shift_back(shifted_in, s, out=x_out),
               {"crops": lambda: crops_of(shifted_in)}, repeats=5)


def w2_cases(uniform, cpu):
    """Transcendentals of 10^8 elements; few repeats (each call moves 0.8-1.6 GB)."""
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        x = uniform(10000, 10000, dtype=dtype)
        y = torch.empty_like(x)
        xn, yn = (x.numpy(), y.numpy()) if cpu and np else (None, None)
        for name in ("exp", "log", "erf"):
            peers = {f"torch.{name}": lambda x=x, y=y, f=getattr(torch, name): f(x, out=y)}
            if xn is not None:
                if name != "erf":
                    peers[f"np.{name}"] = lambda f=getattr(np, name), xn=xn, yn=yn: f(xn, out=yn)
                elif special:
                    peers["scipy erf"] = lambda xn=xn, yn=yn: special.erf(xn, out=yn)
                if numexpr and name != "erf":  # numexpr has no erf
                    peers[f"ne.evaluate {name}"] = lambda name=name, xn=xn, yn=yn: numexpr.evaluate(
                        f"{name}(x)", {"x": xn}, out=yn)
            yield Case(f"W2 {name} {tag}", f"BM_{name}_{tag}/10000/10000",
                       lambda x=x, y=y, f=getattr(hpipe, name, None): f(x, out=y), peers, repeats=3)
        for axis in ((0, 1) if tag == "f32" else (0,)):
            out = torch.empty(10000, dtype=dtype, device=x.device)
            peers = {"torch.logsumexp": lambda x=x, axis=axis: torch.logsumexp(x, dim=axis)}
            if xn is not None and special:
                peers["scipy logsumexp"] = lambda axis=axis, xn=xn: special.logsumexp(xn, axis=axis)
            yield Case(f"W2 logsumexp {tag} axis {axis}", f"BM_logsumexp_{tag}/10000/10000/{axis}",
                       lambda x=x, axis=axis, out=out: hpipe.logsumexp(x, axis, out=out), peers, repeats=3)
    # A softmax's normaliser: 4096 rows of 1000 classes along the last axis.
    x = uniform(4096, 1000)
    out = torch.empty(4096, device=x.device)
    peers = {"torch.logsumexp": lambda x=x: torch.logsumexp(x, dim=1)}
    if cpu and special:
        peers["scipy logsumexp"] = lambda xn=x.numpy(): special.logsumexp(xn, axis=1)
    yield Case("logsumexp f32 4096 x 1000 axis 1", "BM_logsumexp_f32/4096/1000/1",
               lambda x=x, out=out: hpipe.logsumexp(x, 1, out=out), peers)
    # erf float64 of a normal CDF's arguments z / sqrt(2), z standard normal (erfinv of a uniform in
    # (-1, 1)): most vectors take erf's full form, where W2's inputs take its cheap one.
    x = torch.erfinv(uniform(10000, 10000, dtype=torch.float64, lo=-1.0, hi=1.0))
    y = torch.empty_like(x)
    peers = {"torch.erf": lambda x=x, y=y: torch.erf(x, out=y)}
    if cpu and special:
        peers["scipy erf"] = lambda xn=x.numpy(), yn=y.numpy(): special.erf(xn, out=yn)
    yield Case("W2 erf f64 normal CDF", "BM_erf_f64_normal_cdf/10000/10000",
               lambda x=x, y=y: hpipe.erf(x, out=y), peers, repeats=3)


def cpp_times(binary, names, device):
    """Seconds per call of the named hpipe_bench benchmarks, by name (median of 3 repetitions)."""
    prefix = "BM_cuda_" if device == "cuda" else "BM_"
    names = [prefix + name[len("BM_"):] for name in names]
    pattern = "^(" + "|".join(names) + ")(/real_time)?$"
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        process = subprocess.run([binary, f"--benchmark_filter={pattern}", "--benchmark_repetitions=3",
                                  "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.3",
                                  f"--benchmark_out={report.name}", "--benchmark_out_format=json"],
                                 capture_output=True, text=True)
        text = pathlib.Path(report.name).read_text()
    if process.returncode != 0 or not text:
        raise RuntimeError(f"{binary} --benchmark_filter={pattern} gave no results:\n{process.stderr}")
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    return {run["run_name"].replace(prefix, "BM_", 1).removesuffix("/real_time"):
            run["real_time"] * scale[run["time_unit"]]
            for run in json.loads(text)["benchmarks"] if run.get("aggregate_name") == "median"}


def show(seconds):
    if seconds is None:
        return "-"
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=20, help="samples per case (the large W2/W4 cases: fewer)")
    parser.add_argument("--hpipe-bench", default=str(pathlib.Path(__file__).resolve().parents[1] / "build/bench/hpipe_bench"),
                        help="the C++ benchmark binary, run for the same cases (skipped if absent)")
    parser.add_argument("--filter", default="", help="only the cases whose label contains this text")
    args = parser.parse_args()
    threads = hpipe.num_threads() if hpipe else os.cpu_count()
    # The peers run with PyTorch's default thread count and with hpipe's; the faster counts.
    peer_threads = sorted({torch.get_num_threads(), threads})
    where = torch.cuda.get_device_name() if args.device == "cuda" else \
        f"CPU, hpipe {threads} threads, peers {' and '.join(map(str, peer_threads))}"
    print(f"PyTorch {torch.__version__}, NumPy {np.__version__ if np else '-'}, "
          f"numexpr {numexpr.__version__ if numexpr else 'not installed'}, on {where}; "
          f"hpipe {'from ' + hpipe.__file__ if hpipe else 'not importable: peers only'}")

    binary = args.hpipe_bench if hpipe and os.access(args.hpipe_bench, os.X_OK) else None
    print(f"hpipe_bench: {binary or 'not found: Python figures only'}; each case's C++ benchmark runs right "
          f"after its Python timings. Goal: py/C++ <= {PYTHON_GOAL} (Python keeps C++'s lead within 10%).\n")
    print(f"{'case':28s} {'hpipe py':>10s} {'C++':>10s} {'best peer':>30s} {'peer/py':>8s} {'peer/C++':>9s} {'py/C++':>7s}")
    cpp = {}
    for case in cases(args.device):
        if args.filter not in case.label:
            continue
        repeats = min(args.repeats, case.repeats or args.repeats)
        peer_times = {}
        for name, fn in case.peers.items():
            for n in peer_threads:
                torch.set_num_threads(n)
                peer_times[f"{name} @{n}t" if len(peer_threads) > 1 else name] = seconds_per_call(fn, args.device, repeats)
        torch.set_num_threads(threads)
        best = min(peer_times, key=peer_times.get)
        peer = peer_times[best]
        py = seconds_per_call(case.hpipe_call, args.device, repeats) if hpipe else None
        if binary:
            cpp.update(cpp_times(binary, [case.bench], args.device))
        c = cpp.get(case.bench)
        ratios = f"{peer / py if py else float('nan'):8.2f}" + (
            f" {peer / c:9.2f} {py / c:7.2f}  {'ok' if py / c <= PYTHON_GOAL else 'BEHIND'}" if c else "")
        print(f"{case.label:28s} {show(py):>10s} {show(c):>10s} {best + ' ' + show(peer):>30s} {ratios}")
        others = ", ".join(f"{name} {show(t)}" for name, t in peer_times.items() if name != best)
        print(f"{'':28s}   other peers: {others}" if others else "", flush=True)

    if hpipe and not args.filter:
        autograd_figures(args.device, args.repeats)
    if hpipe and args.device == "cpu" and np and not args.filter:
        small_call_figures(cpp, args.device, args.repeats)
    if hpipe and args.device == "cuda" and not args.filter:
        cuda_tiny_calls(args.repeats)


def autograd_figures(device, repeats):
    """CASSI A through hpipe.torch as an unrolled network calls it, small (the cost of a call) and
    one W4 image: hpipe's kernel alone, the same outside autograd (no_grad), and forward + backward
    beside PyTorch's slice-adds."""
    import hpipe.torch as ht
    gen = torch.Generator(device=device).manual_seed(5)
    print("\nCASSI A through hpipe.torch (S = 2, shared mask): kernel / no_grad / forward + backward, "
          "slice-adds forward + backward")
    for b, c, h, w in ((1, 4, 8, 8), (1, 28, 256, 256)):
        x = torch.rand(b, c, h, w, generator=gen, device=device).requires_grad_()
        mask = torch.rand(h, w, generator=gen, device=device)
        grad = torch.ones(b, h, w + (c - 1) * 2, device=device)

        def slice_adds():
            y = x.new_zeros(grad.shape)
            masked = x * mask
            for i in range(c):
                y[:, :, i * 2:i * 2 + w] += masked[:, i]
            return y

        detached = x.detach()
        kernel = seconds_per_call(lambda: hpipe.cassi_forward(detached, mask, 2), device, repeats)
        with torch.no_grad():
            no_grad = seconds_per_call(lambda: ht.cassi_forward(x, mask, 2), device, repeats)
        times = [kernel, no_grad] + [seconds_per_call(f, device, repeats) for f in (
            lambda: ht.cassi_forward(x, mask, 2).backward(grad), lambda: slice_adds().backward(grad))]
        print(f"  {b}x{c}x{h}x{w}: " + " / ".join(show(t) for t in times[:3]) + f", peer {show(times[3])}")


def small_call_figures(cpp, device, repeats):
    """The cost of a tiny call from Python, and the small batched dot at every thread count."""
    gen = torch.Generator().manual_seed(3)
    a, v = torch.rand(5, 5, generator=gen), torch.rand(5, 7, generator=gen)
    out = torch.empty(5, 11)
    an, vn, outn = a.numpy(), v.numpy(), out.numpy()
    c = cpp.get("BM_conv1d_rows/5/5/7")
    print("\nW3 case A (5 rows of 5, 7 taps), one call" + (f"; hpipe_bench {show(c)}" if c else ""))
    for kind, call in (("NumPy arrays", lambda: hpipe.conv1d(an, vn, out=outn)),
                       ("torch tensors", lambda: hpipe.conv1d(a, v, out=out))):
        t = min(seconds_per_call(call, device, repeats) for _ in range(3))
        overhead = f", overhead over C++ {(t - c) * 1e6:.2f} us (goal <= {OVERHEAD_GOAL_US} us)" if c else ""
        print(f"  hpipe.conv1d(..., out=) with {kind}: {show(t)}{overhead}")

    a, b = torch.rand(500, 500, generator=gen), torch.rand(500, 500, generator=gen)
    out = torch.empty(500)
    print("W1 dot 500x500 at every thread count (hpipe.set_num_threads, torch.set_num_threads):")
    default = hpipe.num_threads()
    for threads in range(1, os.cpu_count() + 1):
        hpipe.set_num_threads(threads)
        torch.set_num_threads(threads)
        # Interleaved, best of 3 medians each: a 2-core VM's transient stalls of the second core
        # (a median of 1 ms batches moved between 23 and 35 us for the same call) hit both sides alike.
        t_hpipe = t_peer = float("inf")
        for _ in range(3):
            t_hpipe = min(t_hpipe, seconds_per_call(lambda: hpipe.batched_dot(a, b, out=out), device, repeats))
            t_peer = min(t_peer, seconds_per_call(lambda: (a * b).sum(1), device, repeats))
        print(f"  {threads} thread(s): hpipe {show(t_hpipe)}, (a*b).sum(1) {show(t_peer)}, "
              f"ratio {t_peer / t_hpipe:.2f} {'ok' if t_hpipe < t_peer else 'BEHIND'}")
    hpipe.set_num_threads(default)
    torch.set_num_threads(default)


def cuda_tiny_calls(repeats):
    """A tiny call on tensors in device memory, hpipe beside PyTorch's own kernel: queued back to back
    (the host's cost of a call) and waited for one by one (the call's whole latency)."""
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = torch.rand(5, 5, device="cuda", generator=gen)
    y = torch.empty_like(x)
    print("\nA tiny call on the GPU (exp of 5 x 5 float32, out=): queued / waited for each")
    for name, call in (("hpipe.exp", lambda: hpipe.exp(x, out=y)), ("torch.exp", lambda: torch.exp(x, out=y))):
        queued = seconds_per_call(call, "cuda", repeats)
        waited = seconds_per_call(lambda: (call(), torch.cuda.synchronize()), "cuda", repeats)
        print(f"  {name}: {show(queued)} / {show(waited)}")


if __name__ == "__main__":
    sys.exit(main())
