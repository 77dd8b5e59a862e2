"""hpipe over Dask: the operations mapped over Dask arrays chunked along the batch axis.

Each function takes Dask arrays (or NumPy arrays, wrapped with one chunk) and returns a lazy Dask
array whose blocks are computed by the hpipe function of the same name, one task per batch chunk::

    import dask.array as da, hpipe.dask as hd
    y = da.from_zarr("measurements.zarr")              # (B, H, W'), chunks (8, H, W')
    x = hd.gap_tv(y, mask, iterations=50)              # (B, C, H, W), chunks (8, C, H, W)
    x.to_zarr("reconstructions.zarr")

Inputs that are not chunked (the mask, a shared conv1d kernel) are one key of the graph: each
worker receives them once, not once per task. The work runs on the active
``dask.distributed.Client``; with none, the functions start :func:`client`'s local cluster.
Kernels release the GIL, and every worker's hpipe thread count is set so that the machine's
workers x Dask threads x hpipe threads do not exceed its cores (:class:`HpipeThreads`).
"""
import functools
import os

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph
from distributed import Client, LocalCluster, WorkerPlugin
from distributed.comm import get_address_host

import hpipe

__all__ = [
    "client", "HpipeThreads", "cassi_forward", "cassi_adjoint", "cassi_pinv", "cassi_pinv_alpha", "gap_tv",
    "admm_tv", "exp", "log", "erf", "logsumexp", "batched_dot", "conv1d",
]


def usable_cores():
    """The cores this process may run on (its affinity mask: what Slurm or a container grants)."""
    return len(os.sched_getaffinity(0))


class HpipeThreads(WorkerPlugin):
    """Sets each worker's hpipe thread count to its host's cores divided by the Dask threads of
    all workers on that host (at least 1), so concurrent tasks do not oversubscribe the cores.

    ``dask_threads_per_host`` maps a host to the Dask threads of its workers, as the scheduler
    saw them when the plugin was registered; a worker on another host counts only itself."""

    name = "hpipe-threads"

    def __init__(self, dask_threads_per_host):
        self.dask_threads_per_host = dict(dask_threads_per_host)

    def setup(self, worker):
        host = get_address_host(worker.address)
        busy = self.dask_threads_per_host.get(host, worker.state.nthreads)
        hpipe.set_num_threads(max(1, usable_cores() // busy))


def _size_threads(c):
    """Registers HpipeThreads for the workers `c` sees now (once per client)."""
    if getattr(c, "_hpipe_threads_sized", False):
        return
    per_host = {}
    for address, info in c.scheduler_info()["workers"].items():
        host = get_address_host(address)
        per_host[host] = per_host.get(host, 0) + info["nthreads"]
    # register_plugin since distributed 2023.9; register_worker_plugin, its older name, is gone in 2026.6.
    register = getattr(c, "register_plugin", None) or c.register_worker_plugin
    register(HpipeThreads(per_host), name=HpipeThreads.name)
    c._hpipe_threads_sized = True


def client(address=None):
    """The Dask client hpipe.dask runs on.

    ``address=None``: the active client, else a new local cluster on this machine (one worker
    process per core, one Dask thread each, loopback only). ``"tcp://host:8786"``: connects to
    that scheduler. Either way every worker's hpipe thread count is set (:class:`HpipeThreads`)."""
    if address is not None:
        c = Client(address, set_as_default=True)
    else:
        try:
            c = Client.current()
        except ValueError:  # none active
            cluster = LocalCluster(n_workers=usable_cores(), threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None)
            c = Client(cluster, set_as_default=True)
    _size_threads(c)
    return c


def _batched(x, name, ndim):
    """x as a Dask array of rank `ndim`, chunked only along its first (batch) axis."""
    x = x if isinstance(x, da.Array) else da.from_array(np.asarray(x), chunks=-1)
    if x.ndim != ndim:
        raise ValueError(f"hpipe.dask: {name}: expected {ndim} dimensions, got shape {x.shape}")
    if any(len(c) > 1 for c in x.chunks[1:]):
        x = x.rechunk({axis: -1 for axis in range(1, ndim)})
    return x


def _same_dtype(op, first_name, first, name, other):
    """hpipe's TypeError for mixed dtypes, raised while the graph is built rather than in its tasks."""
    if other.dtype != first.dtype:
        raise TypeError(f"hpipe.dask.{op}: {name}: expected {first.dtype} like {first_name}, got {other.dtype}")


def _call(op, *args, **kwargs):
    # Tasks name the op: pybind11's functions do not pickle, a function of this module does.
    # Arrays that arrive over the network may sit at any byte offset of a frame; hpipe needs
    # them aligned to their element size, so those few are copied.
    args = [np.require(a, requirements="A") if isinstance(a, np.ndarray) else a for a in args]
    return getattr(hpipe, op)(*args, **kwargs)


def _task(op, **kwargs):
    return functools.partial(_call, op, **kwargs)


def _map_batch(op, x, shared, tail, dtype, **kwargs):
    """One task per batch chunk of x: hpipe.<op>(block, *shared, **kwargs) -> (b, *tail). Each
    shared NumPy array is one key that every task depends on, so it travels to each worker once."""
    client()
    shared = [np.asarray(s) for s in shared]
    name = f"hpipe-{op}-" + tokenize(x, *shared, kwargs)
    shared_keys = [f"hpipe-shared-{tokenize(s)}" for s in shared]
    call = _task(op, **kwargs)
    zeros = (0,) * len(tail)
    dsk = dict(zip(shared_keys, shared))
    for i in range(len(x.chunks[0])):
        dsk[(name, i) + zeros] = (call, (x.name, i) + (0,) * (x.ndim - 1), *shared_keys)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, (x.chunks[0],) + tuple((t,) for t in tail), dtype=dtype)


def _dispersed(bands, height, width, step, axis):
    """The measurement (H', W') of a cube (C, H, W) through a dispersion (as hpipe::cassi)."""
    spread = (bands - 1) * abs(step)
    return (height, width + spread) if axis == "width" else (height + spread, width)


def _cube(y, mask, bands, step, axis):
    """The cube shape (C, H, W) behind measurements y (B, H', W') through `mask`."""
    height, width = mask.shape[-2:]
    if bands is None and mask.ndim == 3:
        bands = mask.shape[0]
    if bands is None:
        along, mask_along = (y.shape[2], width) if axis == "width" else (y.shape[1], height)
        if step == 0 or (along - mask_along) % abs(step):
            raise ValueError(f"hpipe.dask: bands: give the band count (the measurement {y.shape[1:]} and mask "
                             f"{mask.shape} do not tell it with step {step})")
        bands = (along - mask_along) // abs(step) + 1
    return (bands, height, width)


def cassi_forward(x, mask, step=2, axis="width", device="auto"):
    """hpipe.cassi_forward per chunk: x (B, C, H, W) -> y (B, H', W')."""
    x = _batched(x, "x", 4)
    mask = np.asarray(mask)
    _same_dtype("cassi_forward", "x", x, "mask", mask)
    tail = _dispersed(x.shape[1], x.shape[2], x.shape[3], step, axis)
    return _map_batch("cassi_forward", x, [mask], tail, x.dtype, step=step, axis=axis, device=device)


def _inverse(op, y, mask, bands, step, axis, device, **params):
    y = _batched(y, "y", 3)
    mask = np.asarray(mask)
    _same_dtype(op, "y", y, "mask", mask)
    cube = _cube(y, mask, bands, step, axis)
    return _map_batch(op, y, [mask], cube, y.dtype, bands=cube[0], step=step, axis=axis, device=device, **params)


def cassi_adjoint(y, mask, bands=None, step=2, axis="width", device="auto"):
    """hpipe.cassi_adjoint per chunk: y (B, H', W') -> (B, C, H, W)."""
    return _inverse("cassi_adjoint", y, mask, bands, step, axis, device)


def cassi_pinv(y, mask, bands=None, step=2, axis="width", device="auto"):
    """hpipe.cassi_pinv per chunk: y (B, H', W') -> (B, C, H, W)."""
    return _inverse("cassi_pinv", y, mask, bands, step, axis, device)


def cassi_pinv_alpha(y, mask, bands=None, step=2, axis="width", device="auto"):
    """hpipe.cassi_pinv_alpha per chunk: y (B, H', W') -> (B, C, H, W)."""
    return _inverse("cassi_pinv_alpha", y, mask, bands, step, axis, device)


def gap_tv(y, mask, bands=None, step=2, axis="width", device="auto", **params):
    """hpipe.gap_tv per chunk: y (B, H', W') -> x (B, C, H, W); params as hpipe.gap_tv
    (iterations, lam, accelerate, tv_weight, tv_iterations, vectorial)."""
    return _inverse("gap_tv", y, mask, bands, step, axis, device, **params)


def admm_tv(y, mask, bands=None, step=2, axis="width", device="auto", **params):
    """hpipe.admm_tv per chunk: y (B, H', W') -> theta (B, C, H, W); params as hpipe.admm_tv."""
    return _inverse("admm_tv", y, mask, bands, step, axis, device, **params)


def _key_name(op, *args, **kwargs):
    """map_blocks' name= for one call: Dask since 2025.7 takes it as the whole key name (it was a
    prefix), so it carries its own token of the call's inputs; calls of one name would share keys."""
    return f"hpipe-{op}-" + tokenize(*args, **kwargs)


def _elementwise(op):
    def apply(x, device="auto"):
        client()
        x = x if isinstance(x, da.Array) else da.from_array(np.asarray(x), chunks=-1)
        return da.map_blocks(_task(op, device=device), x, dtype=x.dtype, name=_key_name(op, x, device))

    apply.__name__ = apply.__qualname__ = op
    apply.__doc__ = f"hpipe.{op} on every block (any chunking and rank, as hpipe.{op}); the shape is kept."
    return apply


exp = _elementwise("exp")
log = _elementwise("log")
erf = _elementwise("erf")


def logsumexp(x, axis, device="auto"):
    """hpipe.logsumexp along `axis`, which is made one chunk; the other axes keep their chunks.
    x has rank 2 to 4; the axis is dropped."""
    client()
    x = x if isinstance(x, da.Array) else da.from_array(np.asarray(x), chunks=-1)
    if not 2 <= x.ndim <= 4 or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"hpipe.dask.logsumexp: x of rank 2 to 4 and an axis of it, got shape {x.shape}, axis {axis}")
    axis %= x.ndim
    x = x.rechunk({axis: -1})
    return da.map_blocks(_task("logsumexp", axis=axis, device=device), x, drop_axis=axis,
                         dtype=x.dtype, name=_key_name("logsumexp", x, axis, device))


def batched_dot(a, b, device="auto"):
    """hpipe.batched_dot per row chunk: a, b (N, K) -> (N,); b takes a's row chunks."""
    a = _batched(a, "a", 2)
    b = _batched(b, "b", 2).rechunk(a.chunks)
    _same_dtype("batched_dot", "a", a, "b", b)
    client()
    return da.map_blocks(_task("batched_dot", device=device), a, b, drop_axis=1, dtype=a.dtype,
                         name=_key_name("batched_dot", a, b, device))


def conv1d(a, v, mode="full", device="auto"):
    """hpipe.conv1d per row chunk: a (N, La) with v (Lv,) shared by every row (sent to each
    worker once) or v (N, Lv) one row per signal (chunked as a) -> (N, Lout), np.convolve's
    lengths: La + Lv - 1 (full), max(La, Lv) (same), max - min + 1 (valid)."""
    a = _batched(a, "a", 2)
    v = v if isinstance(v, da.Array) else np.asarray(v)
    _same_dtype("conv1d", "a", a, "v", v)
    la = a.shape[1]
    lv = v.shape[-1]
    lengths = {"full": la + lv - 1, "same": max(la, lv), "valid": max(la, lv) - min(la, lv) + 1}
    if mode not in lengths:
        raise ValueError(f"hpipe.dask.conv1d: mode: expected full, same or valid, got {mode!r}")
    if getattr(v, "ndim", 1) == 1:
        return _map_batch("conv1d", a, [v], (lengths[mode],), a.dtype, mode=mode, device=device)
    v = _batched(v, "v", 2).rechunk((a.chunks[0], (lv,)))
    client()
    return da.map_blocks(_task("conv1d", mode=mode, device=device), a, v,
                         chunks=(a.chunks[0], (lengths[mode],)), dtype=a.dtype,
                         name=_key_name("conv1d", a, v, mode, device))
