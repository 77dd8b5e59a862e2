#!/usr/bin/python3
"""Items per second for GAP-TV over a batch of CASSI measurements (the W4 shape: 28 bands of
256 x 256, measurements 256 x 310) run four ways, and the scheduling overhead per item:

  serial      a plain loop of hpipe.gap_tv over the items (hpipe uses every core)
  dask 1x     hpipe.dask.gap_tv, one item per chunk, on a local cluster of 1 worker process; the
              results stay on the workers (persist), as when each writes its chunk to Zarr
  dask 2x     the same on 2 worker processes (hpipe threads per worker: cores / 2), and once more
              gathering the results into the client (7.3 MB per item over loopback TCP)
  batch 2x    `hpipe batch recon gap-tv` on the items as .npy files, 2 worker processes

Overhead: wall time per item of the same Dask cluster (2 workers) and of `hpipe batch` (cassi
forward) on items so small that the work is nothing but scheduling.

    PYTHONPATH=python:build/python /usr/bin/python3 bench/scale_out.py --items 8 --iters 5 \
        --hpipe build/tools/hpipe
"""
import argparse
import os
import subprocess
import tempfile
import time

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

import hpipe
import hpipe.dask as hd

BANDS, HEIGHT, WIDTH = 28, 256, 256  # W4


REPEATS = 3  # each row is the best of this many runs: the machine may be shared


def timed(f):
    best = float("inf")
    for run in range(REPEATS):
        t0 = time.perf_counter()
        f(run)
        best = min(best, time.perf_counter() - t0)
    return best


def kept(x):
    from distributed import wait

    wait(x.persist())


def on_cluster(workers, f):
    """The time of f(run) on a fresh cluster, after f(-1) warmed it (workers import hpipe and
    receive the mask). Each run must compute keys of its own, or it could reuse earlier ones."""
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        hd._size_threads(client)
        f(-1)
        return timed(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=8, help="measurements (W4 has 16)")
    parser.add_argument("--iters", type=int, default=5, help="GAP-TV iterations per item")
    parser.add_argument("--hpipe", default="build/tools/hpipe", help="the hpipe command, for the batch rows")
    parser.add_argument("--tiny", type=int, default=200, help="items for the overhead rows")
    opts = parser.parse_args()

    scene, mask = hpipe.synth(BANDS, HEIGHT, WIDTH)
    scales = np.linspace(1.0, 0.5, opts.items, dtype=np.float32)[:, None, None, None]
    y = hpipe.cassi_forward(scene[None] * scales, mask)
    params = dict(iterations=opts.iters, tv_iterations=5)
    rows = []

    def serial(run):
        for i in range(opts.items):
            hpipe.gap_tv(y[i:i + 1], mask, bands=BANDS, **params)

    serial(-1)
    rows.append(("serial loop", timed(serial)))

    def recon(run):
        ychunks = da.from_array(y if run >= 0 else y[:2], chunks=(1, -1, -1), name=f"y-{run}")
        return hd.gap_tv(ychunks, mask, bands=BANDS, **params)

    for workers in (1, 2):
        rows.append((f"dask, {workers} worker(s)",
                     on_cluster(workers, lambda run: kept(recon(run)))))
    rows.append(("dask, 2 workers, gathered",
                 on_cluster(2, lambda run: recon(run).compute())))
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(f"{tmp}/y")
        np.save(f"{tmp}/mask.npy", mask)
        for i in range(opts.items):
            np.save(f"{tmp}/y/{i:03d}.npy", y[i])
        cmd = [os.path.abspath(opts.hpipe), "batch", "recon", "gap-tv", "y", "--mask", "mask.npy", "--iters",
               str(opts.iters), "--workers", "2", "-q", "--force", "-o", "x"]
        rows.append(("hpipe batch, 2 workers", timed(lambda run: subprocess.run(cmd, cwd=tmp, check=True))))

        tiny = np.ones((opts.tiny, 4), np.float32)
        dask_tiny = on_cluster(2, lambda run: kept(hd.exp(da.from_array(tiny, chunks=(1, -1), name=f"tiny-{run}"))))
        os.mkdir(f"{tmp}/t")
        np.save(f"{tmp}/m.npy", np.ones((2, 2), np.float32))
        for i in range(opts.tiny):
            np.save(f"{tmp}/t/{i:04d}.npy", np.ones((2, 2, 2), np.float32))
        cmd = [os.path.abspath(opts.hpipe), "batch", "cassi", "forward", "t", "--mask", "m.npy", "--workers", "2",
               "-q", "--force", "-o", "f"]
        batch_tiny = timed(lambda run: subprocess.run(cmd, cwd=tmp, check=True))

    print(f"best of {REPEATS} runs each; GAP-TV, {opts.items} items of ({BANDS}, {HEIGHT}, {WIDTH}), "
          f"{opts.iters} iterations, {len(os.sched_getaffinity(0))} cores, "
          f"load average {os.getloadavg()[0]:.2f} at the end")
    base = rows[0][1]
    for name, seconds in rows:
        print(f"  {name:24s} {seconds:7.2f} s  {opts.items / seconds:6.2f} items/s  {base / seconds:5.2f}x serial")
    print(f"scheduling overhead per item ({opts.tiny} empty items, 2 workers): "
          f"dask {dask_tiny / opts.tiny * 1e3:.2f} ms, "
          f"hpipe batch (a process per item) {batch_tiny / opts.tiny * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
