"""hpipe.dask and `hpipe batch --scheduler` on a local cluster of 2 worker processes (loopback):
results bit-identical to serial calls, the shared mask sent once, worker thread counts, and batch
items that survive a killed worker and a corrupt input."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.special

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

import hpipe  # noqa: E402
import hpipe.batch  # noqa: E402
import hpipe.dask as hd  # noqa: E402

HPIPE_CLI = os.environ.get("HPIPE_CLI")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    c = distributed.Client(cluster, set_as_default=True)
    assert hd.client() is c  # the active client is the one hpipe.dask runs on (its workers' threads now sized)
    yield c
    c.close()
    cluster.close()


def test_every_op_gives_the_serial_calls_bits(client):
    rng = np.random.default_rng(7)
    _, mask = hpipe.synth(6, 13, 17)
    for dtype in (np.float32, np.float64):
        x = rng.random((5, 6, 13, 17)).astype(dtype)
        m = mask.astype(dtype)
        y = hd.cassi_forward(da.from_array(x, chunks=(2, 3, -1, -1)), m).compute()
        assert np.array_equal(y, hpipe.cassi_forward(x, m))
        yd = da.from_array(y, chunks=(2, -1, -1))
        for op in ("cassi_adjoint", "cassi_pinv", "cassi_pinv_alpha"):
            assert np.array_equal(getattr(hd, op)(yd, m).compute(), getattr(hpipe, op)(y, m, bands=6)), op
        params = dict(iterations=3, tv_iterations=2, tv_weight=0.05)
        assert np.array_equal(hd.gap_tv(yd, m, **params).compute(), hpipe.gap_tv(y, m, bands=6, **params))
        assert np.array_equal(hd.admm_tv(yd, m, gamma=0.5, **params).compute(),
                              hpipe.admm_tv(y, m, bands=6, gamma=0.5, **params))
        a, b = rng.standard_normal((2, 101, 37)).astype(dtype)
        ad = da.from_array(a, chunks=(30, -1))
        assert np.array_equal(hd.batched_dot(ad, b).compute(), hpipe.batched_dot(a, b))
        v = rng.standard_normal(5).astype(dtype)
        for mode in ("full", "same", "valid"):
            assert np.array_equal(hd.conv1d(ad, v, mode).compute(), hpipe.conv1d(a, v, mode)), mode
        rows = rng.standard_normal((101, 4)).astype(dtype)
        assert np.array_equal(hd.conv1d(ad, da.from_array(rows, chunks=(50, -1))).compute(), hpipe.conv1d(a, rows))
        for op, values in (("exp", a), ("log", np.abs(a)), ("erf", a)):
            assert np.array_equal(getattr(hd, op)(da.from_array(values, chunks=(30, 10))).compute(),
                                  getattr(hpipe, op)(values)), op
        z = rng.standard_normal((6, 9, 11)).astype(dtype)
        for axis in (0, 1, 2):
            got = hd.logsumexp(da.from_array(z, chunks=(2, 3, 4)), axis=axis).compute()
            assert np.array_equal(got, hpipe.logsumexp(z, axis=axis)), axis


def test_calls_on_other_inputs_have_keys_of_their_own(client, monkeypatch):
    # Dask since 2025.7 takes map_blocks' name= as the whole key name: hpipe.dask's names carry
    # their inputs' token, else two calls share keys and one's blocks stand for the other's.
    names = []
    map_blocks = da.map_blocks
    monkeypatch.setattr(da, "map_blocks", lambda *args, name, **kwargs: names.append(name) or map_blocks(
        *args, name=name, **kwargs))
    zeros, ones = da.zeros((4, 3), chunks=2), da.ones((4, 3), chunks=2)
    for inputs in ((zeros,), (ones,)):
        hd.exp(*inputs), hd.logsumexp(*inputs, axis=0), hd.batched_dot(*inputs, *inputs)
        hd.conv1d(*inputs, inputs[0][:, :2])
    assert len(set(names)) == len(names) == 8
    exps = dask.compute(hd.exp(zeros), hd.exp(ones))
    np.testing.assert_array_equal(exps[1], np.full((4, 3), np.e))


def test_the_mask_is_one_key_of_the_graph(client):
    _, mask = hpipe.synth(4, 8, 9)
    y = hd.cassi_pinv(da.zeros((6, 8, 15), chunks=1, dtype=np.float32), mask)
    graph = dict(y.__dask_graph__())
    shared = [k for k in graph if isinstance(k, str) and k.startswith("hpipe-shared-")]
    assert len(shared) == 1
    assert sum(1 for task in graph.values() if isinstance(task, tuple) and shared[0] in task) == 6


def test_worker_threads_do_not_oversubscribe_the_cores(client):
    cores = len(os.sched_getaffinity(0))
    assert set(client.run(hd._call, "num_threads").values()) == {max(1, cores // 2)}


def test_bad_arguments_name_the_argument(client):
    """Refused while the graph is built, by hpipe's own checks run on batches of 0 items, in
    hpipe.dask's name: not by every task at compute()."""
    f32 = np.float32
    y, mask = np.zeros((2, 4, 9), f32), np.ones((4, 5), f32)
    cases = [
        (lambda: hd.cassi_forward(np.zeros((2, 3, 4), f32), mask), ValueError, "x: expected 4 dimensions"),
        (lambda: hd.cassi_forward(np.zeros((2, 3, 4, 5), f32), np.ones((4, 6), f32)), hpipe.Error,
         "hpipe.dask.cassi_forward: mask: expected shape (4, 5)"),
        (lambda: hd.cassi_forward(np.zeros((2, 3, 4, 5), f32), mask, axis="w"), hpipe.Error,
         "hpipe.dask.cassi_forward: axis: expected 'width' or 'height', got 'w'"),
        (lambda: hd.cassi_forward(np.zeros((2, 3, 4, 5), f32), mask, step=2.5), TypeError,
         "hpipe.dask.cassi_forward: step: expected an int"),
        (lambda: hd.cassi_forward(np.zeros((2, 3, 4, 5), np.int64), mask), TypeError,
         "hpipe.dask.cassi_forward: x: expected float32 or float64, got int64"),
        # Mixed dtypes.
        (lambda: hd.cassi_pinv(y, np.ones((4, 5)), bands=3), TypeError,
         "hpipe.dask.cassi_pinv: mask: expected float32 like y, got float64"),
        (lambda: hd.batched_dot(np.zeros((2, 3)), np.zeros((2, 3), f32)), TypeError,
         "hpipe.dask.batched_dot: b: expected float64 like a, got float32"),
        (lambda: hd.conv1d(np.zeros((2, 3)), [1, 2]), TypeError,
         "hpipe.dask.conv1d: v: expected float32 or float64, got int64"),
        # Bands: inferred only from a measurement wider than the mask by whole steps, else given.
        (lambda: hd.cassi_pinv(np.zeros((2, 4, 1), f32), mask), ValueError,
         "hpipe.dask.cassi_pinv: bands: give the band count"),
        (lambda: hd.cassi_pinv(y, mask, bands=0), hpipe.Error, "hpipe.dask.cassi_pinv: bands: expected at least 1"),
        (lambda: hd.cassi_pinv(y, mask, bands=4), hpipe.Error, "hpipe.dask.cassi_pinv: mask: expected shape (4, 3)"),
        (lambda: hd.gap_tv(y, mask, lam=-1), hpipe.Error, "hpipe.dask.gap_tv: lam: expected a value > 0"),
        (lambda: hd.gap_tv(y, mask, iters=3), TypeError, "hpipe.dask.gap_tv() got an unexpected keyword argument"),
        (lambda: hd.batched_dot(np.zeros((2, 3)), np.zeros((3, 3))), ValueError,
         "hpipe.dask.batched_dot: b: expected 2 rows like a, got shape (3, 3)"),
        (lambda: hd.batched_dot(np.zeros((2, 3)), np.zeros((2, 4))), hpipe.Error,
         "hpipe.dask.batched_dot: b: expected shape (0, 3)"),
        (lambda: hd.conv1d(np.zeros((2, 3)), np.ones(2), "wide"), hpipe.Error,
         "hpipe.dask.conv1d: mode: expected 'full', 'same' or 'valid', got 'wide'"),
        (lambda: hd.conv1d(np.zeros((2, 3)), np.ones(0)), hpipe.Error,
         "hpipe.dask.conv1d: v: expected a kernel of length at least 1"),
        (lambda: hd.conv1d(np.zeros((2, 3)), np.ones(())), hpipe.Error, "hpipe.dask.conv1d: v: expected 1 to 2"),
        (lambda: hd.conv1d(np.zeros((2, 3)), np.ones((3, 2))), ValueError,
         "hpipe.dask.conv1d: v: expected 2 rows like a"),
        (lambda: hd.logsumexp(np.zeros((2, 3)), 2), hpipe.Error, "hpipe.dask.logsumexp: axis: expected -2 to 1"),
        (lambda: hd.exp(np.zeros(3), device="gpu"), hpipe.Error, "hpipe.dask.exp: device: expected 'auto'"),
    ]
    for call, exception, message in cases:
        with pytest.raises(exception, match=re.escape(message)):
            call()
    # A NumPy integer step tells the band count as an int does.
    assert hd.cassi_pinv(y, mask, step=np.int64(2)).shape == (2, 3, 4, 5)


def test_logsumexp_of_every_element_and_more_than_four_dimensions(client, rng):
    x = rng.standard_normal((7, 5, 6))
    chunked = da.from_array(x, chunks=(3, 2, 4))
    assert np.isclose(hd.logsumexp(chunked).compute(), scipy.special.logsumexp(x), rtol=1e-15)
    # Blocks of more than 4 dimensions that are views hpipe cannot merge into 4 (da.from_array's, in
    # this process) are copied densely.
    z = rng.standard_normal((3,) * 5)
    np.testing.assert_array_equal(hd.exp(da.from_array(z, chunks=2)).compute(scheduler="sync"), hpipe.exp(z))


# ---- hpipe batch on the cluster ----

needs_cli = pytest.mark.skipif(not HPIPE_CLI, reason="HPIPE_CLI (the hpipe binary) is not set; ctest sets it")
RECON = ["recon", "gap-tv", "--mask=mask.npy", "--tv-iters=3", "--device=cpu"]


def measurements(folder, count, size=40):
    """`count` measurements of the synthetic scene at different brightnesses in folder/meas."""
    scene, mask = hpipe.synth(16, size, size)
    np.save(folder / "mask.npy", mask)
    (folder / "meas").mkdir()
    for k in range(count):
        np.save(folder / "meas" / f"y{k}.npy", hpipe.cassi_forward(scene[None] * (1 - 0.1 * k), mask)[0])


def local_batch(folder, outdir, *options):
    subprocess.run([HPIPE_CLI, "batch", *RECON, *options, "-o", outdir, "-q", "--", "meas"], cwd=folder, check=True)


def in_folder(folder, f):
    old = os.getcwd()
    os.chdir(folder)
    try:
        return f()
    finally:
        os.chdir(old)


def worker_running_an_item(client, timeout=30):
    """The pid of a worker whose item's hpipe process is running."""
    deadline = time.monotonic() + timeout
    pids = client.run(os.getpid)
    while time.monotonic() < deadline:
        for pid in pids.values():
            if psutil.Process(pid).children():
                return pid
        time.sleep(0.005)
    raise AssertionError("no item started")


@needs_cli
def test_an_item_whose_worker_is_killed_is_recomputed_once(client, tmp_path):
    # Items of about half a second (on 2 idle cores), so that the kill lands in the middle of one.
    measurements(tmp_path, 4, size=256)
    local_batch(tmp_path, "serial", "--iters=100")
    args = [*RECON, "--iters=100", "--output=out", "--", "meas"]

    def run_and_kill():
        listing, futures = hpipe.batch.submit(client, HPIPE_CLI, args)
        os.kill(worker_running_an_item(client), signal.SIGKILL)
        return hpipe.batch.collect(listing, futures)

    summary = in_folder(tmp_path, run_and_kill)
    # Results the killed worker held are recomputed too: their items are complete, so skipped.
    assert summary["done"] + summary["skipped"] == 4 and summary["done"] >= 1 and summary["failed"] == 0, summary
    names = sorted(os.listdir(tmp_path / "out"))  # hidden temporary files included
    assert names == [f"y{k}.npy" for k in range(4)]
    for name in names:
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), name
    client.wait_for_workers(2, timeout=30)  # the nanny restarted the killed one


@needs_cli
def test_the_command_runs_on_the_scheduler_and_a_corrupt_input_fails_alone(client, tmp_path):
    measurements(tmp_path, 3)
    (tmp_path / "meas" / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00truncated")
    # The command runs this interpreter on this package (its folders, absolute: cwd changes).
    env = dict(os.environ, HPIPE_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(os.path.dirname(os.path.abspath(p)) for p in hpipe.__path__))

    def batch(*options):
        return subprocess.run([HPIPE_CLI, "batch", *RECON, *options, "--scheduler", client.scheduler.address, "--",
                               "meas"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    run = batch("--iters=5", "-o", "out", "--json")
    assert run.returncode == 1 and run.stdout.startswith("{"), run.stderr
    result = json.loads(run.stdout)["result"]
    assert (result["done"], result["failed"], result["clipped"]) == (3, 1, 0), result
    assert result["failures"][0]["input"] == "meas/bad.npy"
    assert "hpipe: error: meas/bad.npy: " in run.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["y0.npy", "y1.npy", "y2.npy"]
    # A re-run skips the complete items; bad usage stops the batch with exit status 2.
    (tmp_path / "meas" / "bad.npy").unlink()
    again = batch("--iters=5", "-o", "out", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["result"]["skipped"] == 3
    usage = batch("--lambda=-1", "-o", "u")
    assert usage.returncode == 2 and "--lambda" in usage.stderr, usage.stderr
    # A scheduler address that is none, and an hpipe command that is not there: one line, no traceback.
    for options in (["--scheduler", "bogus"], ["--hpipe", "/no/such/hpipe", "--scheduler", client.scheduler.address]):
        bad = subprocess.run([sys.executable, "-m", "hpipe.batch", *options, "--", *RECON, "-o", "v", "--", "meas"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert bad.returncode == 2 and bad.stderr.startswith("hpipe: error: "), bad.stderr
        assert "Traceback" not in bad.stderr, bad.stderr
