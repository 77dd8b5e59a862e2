"""hpipe over Dask: the operations mapped over Dask arrays chunked along the batch axis.

Each function takes Dask arrays (or NumPy arrays, wrapped with one chunk) and returns a lazy Dask
array whose blocks are computed by the hpipe function of the same name, one task per batch chunk.
A bad call is refused while the graph is built, by hpipe's own checks (run on batches of 0
items). In a script, under ``if __name__ == "__main__":``, as any cluster of worker processes needs::

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
import numbers
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


def _empty(x):
    """A NumPy array of x's dtype and trailing shape with no items (a batch of 0)."""
    return np.empty((0,) + tuple(x.shape[1:]), x.dtype)


def _checked(op, *args, **kwargs):
    """hpipe.<op> run here on the call's arguments with their batches of 0 items (`_empty`): its own
    checks (shapes, dtypes, parameters, keywords) refuse a bad call while the graph is built, in
    hpipe.dask's name, rather than in every task. Returns the empty result, whose trailing shape is
    the output's. (Device "cuda" is checked as a name only: the GPUs may be the workers'.)"""
    if kwargs.get("device") == "cuda":
        kwargs["device"] = "cpu"
    try:
        return getattr(hpipe, op)(*args, **kwargs)
    except (TypeError, ValueError) as e:  # hpipe.Error is a ValueError
        raise type(e)(str(e).replace(f"hpipe.{op}", f"hpipe.dask.{op}", 1)) from None


def _same_batch(op, first_name, first, name, other):
    """The batch extents of two arguments agree (a batch of 0 items cannot tell)."""
    if other.shape[0] != first.shape[0]:
        raise ValueError(f"hpipe.dask.{op}: {name}: expected {first.shape[0]} rows like {first_name}, "
                         f"got shape {other.shape}")


def _call(op, *args, **kwargs):
    # Tasks name the op: pybind11's functions do not pickle, a function of this module does.
    # Arrays that arrive over the network may sit at any byte offset of a frame; hpipe needs
    # them aligned to their element size, so those few are copied. A block of more than 4
    # dimensions may be a strided view of an array (da.from_array's) whose layout hpipe cannot
    # merge into 4: it is copied densely too.
    args = [np.require(a, requirements="A" if a.ndim <= 4 else "AC") if isinstance(a, np.ndarray) else a
            for a in args]
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


def _bands(op, y, mask, step, axis):
    """The band count behind measurements y (B, H', W') through a shared (H, W) mask, from the
    extents along the dispersion: H' or W' = H or W + (C - 1) |step|, C >= 1."""
    along, mask_along = (y.shape[2], mask.shape[-1]) if axis == "width" else (y.shape[1], mask.shape[-2])
    spread = along - mask_along
    if not isinstance(step, numbers.Integral) or step == 0 or spread < 0 or spread % abs(step):
        raise ValueError(f"hpipe.dask.{op}: bands: give the band count (the measurement {y.shape[1:]} and mask "
                         f"{mask.shape} do not tell it with step {step!r} along {axis})")
    return spread // abs(step) + 1


def cassi_forward(x, mask, step=2, axis="width", device="auto"):
    """hpipe.cassi_forward per chunk: x (B, C, H, W) -> y (B, H', W')."""
    x = _batched(x, "x", 4)
    mask = np.asarray(mask)
    kwargs = dict(step=step, axis=axis, device=device)
    tail = _checked("cassi_forward", _empty(x), mask, **kwargs).shape[1:]
    return _map_batch("cassi_forward", x, [mask], tail, x.dtype, **kwargs)


def _inverse(op, y, mask, bands, step, axis, device, **params):
    y = _batched(y, "y", 3)
    mask = np.asarray(mask)
    if bands is None and mask.ndim == 2:
        bands = _bands(op, y, mask, step, axis)
    kwargs = dict(bands=bands, step=step, axis=axis, device=device, **params)
    cube = _checked(op, _empty(y), mask, **kwargs).shape[1:]
    return _map_batch(op, y, [mask], cube, y.dtype, **kwargs)


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
        _checked(op, np.empty(0, x.dtype), device=device)
        return da.map_blocks(_task(op, device=device), x, dtype=x.dtype, name=_key_name(op, x, device))

    apply.__name__ = apply.__qualname__ = op
    apply.__doc__ = f"hpipe.{op} on every block (any chunking and rank, as hpipe.{op}); the shape is kept."
    return apply


exp = _elementwise("exp")
log = _elementwise("log")
erf = _elementwise("erf")


def _logsumexp_kept(x, axis=None, keepdims=True, device="auto", **_):
    """da.reduction's chunk, combine and aggregate for the logsumexp of every element: x's, as an
    array of x's rank (keepdims) or 0-d. (logsumexp of logsumexps is the logsumexp of all.)"""
    value = hpipe.logsumexp(np.require(x, requirements="A"), device=device)
    return np.full((1,) * x.ndim if keepdims else (), value, x.dtype)


def logsumexp(x, axis=None, device="auto"):
    """hpipe.logsumexp along `axis`, which is made one chunk; the other axes keep their chunks
    (x of rank 1 to 4; the axis is dropped). axis=None: of every element (any rank), each block's
    by hpipe, then theirs: a 0-d array."""
    client()
    x = x if isinstance(x, da.Array) else da.from_array(np.asarray(x), chunks=-1)
    if axis is None:
        _checked("logsumexp", np.empty(0, x.dtype), device=device)
        kept = functools.partial(_logsumexp_kept, device=device)
        return da.reduction(x, kept, kept, combine=kept, axis=None, keepdims=False, dtype=x.dtype,
                            meta=np.empty((), x.dtype), name=_key_name("logsumexp", x, None, device))
    _checked("logsumexp", np.empty((0,) * x.ndim, x.dtype), axis, device=device)
    axis %= x.ndim
    x = x.rechunk({axis: -1})
    return da.map_blocks(_task("logsumexp", axis=axis, device=device), x, drop_axis=axis,
                         dtype=x.dtype, name=_key_name("logsumexp", x, axis, device))


def batched_dot(a, b, device="auto"):
    """hpipe.batched_dot per row chunk: a, b (N, K) -> (N,); b takes a's row chunks."""
    a = _batched(a, "a", 2)
    b = _batched(b, "b", 2)
    _same_batch("batched_dot", "a", a, "b", b)
    _checked("batched_dot", _empty(a), _empty(b), device=device)
    client()
    return da.map_blocks(_task("batched_dot", device=device), a, b.rechunk(a.chunks), drop_axis=1, dtype=a.dtype,
                         name=_key_name("batched_dot", a, b, device))


def conv1d(a, v, mode="full", device="auto"):
    """hpipe.conv1d per row chunk: a (N, La) with v (Lv,) shared by every row (sent to each
    worker once) or v (N, Lv) one row per signal (chunked as a) -> (N, Lout), np.convolve's
    lengths: La + Lv - 1 (full), max(La, Lv) (same), max - min + 1 (valid)."""
    a = _batched(a, "a", 2)
    per_row = np.ndim(v) == 2
    if per_row:
        v = _batched(v, "v", 2)
        _same_batch("conv1d", "a", a, "v", v)
    else:
        v = np.asarray(v)  # a Dask kernel computed: one key of the graph
    kwargs = dict(mode=mode, device=device)
    tail = _checked("conv1d", _empty(a), _empty(v) if per_row else v, **kwargs).shape[1:]
    if not per_row:
        return _map_batch("conv1d", a, [v], tail, a.dtype, **kwargs)
    client()
    return da.map_blocks(_task("conv1d", **kwargs), a, v.rechunk((a.chunks[0], (v.shape[1],))),
                         chunks=(a.chunks[0], tail), dtype=a.dtype, name=_key_name("conv1d", a, v, mode, device))
