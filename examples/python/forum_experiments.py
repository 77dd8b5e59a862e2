#!/usr/bin/env python3
"""The forum posts' experiments (../shared/workloads.md), run with hpipe beside the PyTorch code they used.

  W4  --iterations rounds of: random cube x and mask (values in (0, 1]), y = A x, the column-count
      inverse x' of y, A x'; prints the mean absolute error of A x' against A x (the post's figure).
  W1  the batched dot of two 500 x 500 float32 arrays, against (a * b).sum(1, keepdim=True).
  W3  full convolutions of 5 rows of 5 with their own 7-tap kernels, against grouped F.conv1d.

Each hpipe result is checked against the PyTorch method on the same inputs (the W4 one on the
first round). --json prints the figures as one JSON object instead.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

import hpipe


def relative_difference(result, peer):
    """max |result - peer| / max |peer|: how far hpipe is from the PyTorch method."""
    return ((result - peer).abs().max() / peer.abs().max()).item()


def slice_add_forward(x, mask, step):
    """The post's A: a loop of slice-adds."""
    batch, bands, height, width = x.shape
    y = x.new_zeros(batch, height, width + (bands - 1) * step)
    masked = x * mask
    for c in range(bands):
        y[:, :, c * step:c * step + width] += masked[:, c]
    return y


def column_count_inverse(y, mask, bands, step):
    """The post's inverse: y over the number of bands covering each column, cropped per band, over the mask."""
    width = mask.shape[-1]
    alpha = y.new_zeros(y.shape[-1])
    for c in range(bands):
        alpha[c * step:c * step + width] += 1
    z = y / alpha
    return torch.cat([z[:, None, :, c * step:c * step + width] for c in range(bands)], 1) / mask


def cassi_round_trip(iterations, shape, step, gen):
    batch, bands, height, width = shape
    y = torch.empty(batch, height, width + (bands - 1) * step)
    x_inverse = torch.empty(shape)
    y_again = torch.empty_like(y)
    errors, seconds, peer_difference = [], 0.0, None
    for i in range(iterations):
        x = 1 - torch.rand(shape, generator=gen)
        mask = 1 - torch.rand(height, width, generator=gen)
        start = time.perf_counter()
        hpipe.cassi_forward(x, mask, step, out=y)
        hpipe.cassi_pinv_alpha(y, mask, bands, step, out=x_inverse)
        hpipe.cassi_forward(x_inverse, mask, step, out=y_again)
        seconds += time.perf_counter() - start
        errors.append((y_again - y).abs().mean().item())
        if i == 0:
            peer = slice_add_forward(column_count_inverse(slice_add_forward(x, mask, step), mask, bands, step), mask, step)
            peer_difference = relative_difference(y_again, peer)
    return {"iterations": iterations, "shape": list(shape), "step": step, "mae": sum(errors) / len(errors),
            "max_mae": max(errors), "ms_per_round_trip": 1e3 * seconds / iterations,
            "difference_from_pytorch": peer_difference}


def batched_dot(gen):
    a, b = torch.rand(500, 500, generator=gen), torch.rand(500, 500, generator=gen)
    dots = hpipe.batched_dot(a, b)[:, None]
    return {"shape": [500, 500], "difference_from_pytorch": relative_difference(dots, (a * b).sum(1, keepdim=True))}


def batched_conv1d(gen):
    signals, kernels = torch.rand(5, 5, generator=gen), torch.rand(5, 7, generator=gen)
    rows = hpipe.conv1d(signals, kernels)
    peer = F.conv1d(signals.unsqueeze(0), kernels.unsqueeze(1).flip(2), padding=kernels.shape[1] - 1, groups=5)[0]
    return {"rows": 5, "signal": 5, "taps": 7, "difference_from_pytorch": relative_difference(rows, peer)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000, help="CASSI round trips (the post ran 1000)")
    parser.add_argument("--shape", type=int, nargs=4, default=[16, 28, 256, 256], metavar=("B", "C", "H", "W"))
    parser.add_argument("--step", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    gen = torch.Generator().manual_seed(args.seed)
    results = {"cassi_round_trip": cassi_round_trip(args.iterations, tuple(args.shape), args.step, gen),
               "batched_dot": batched_dot(gen), "batched_conv1d": batched_conv1d(gen)}
    if args.json:
        print(json.dumps(results))
        return
    trip = results["cassi_round_trip"]
    print(f"W4 CASSI round trip, {trip['iterations']} iterations of {tuple(trip['shape'])}, step {trip['step']}: "
          f"mean |A(A+(A x)) - A x| = {trip['mae']:.3g} (worst iteration {trip['max_mae']:.3g}), "
          f"{trip['ms_per_round_trip']:.1f} ms per round trip; "
          f"relative difference from the post's PyTorch code {trip['difference_from_pytorch']:.3g}")
    print(f"W1 batched dot 500 x 500: relative difference from (a * b).sum(1) "
          f"{results['batched_dot']['difference_from_pytorch']:.3g}")
    print(f"W3 conv1d, 5 rows of 5, 7 taps each: relative difference from grouped F.conv1d "
          f"{results['batched_conv1d']['difference_from_pytorch']:.3g}")


if __name__ == "__main__":
    main()
