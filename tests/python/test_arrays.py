"""How the module takes arrays: in place (zero copy, `out=` written where it is), NumPy and
DLPack producers (PyTorch), bad input rejected with the argument named, the GIL released."""
import inspect
import os
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest
import scipy.special
import torch

import hpipe
from conftest import poisoned


def test_out_is_written_in_place_and_inputs_are_unchanged(rng):
    x = rng.random((2, 3, 5, 7)).astype(np.float32)
    mask = rng.random((5, 7)).astype(np.float32)
    x_before, mask_before = x.copy(), mask.copy()
    out = poisoned((2, 5, 11), np.float32)
    pointer = out.ctypes.data
    assert hpipe.cassi_forward(x, mask, out=out) is out
    assert out.ctypes.data == pointer and not np.isnan(out).any()
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_array_equal(mask, mask_before)


def test_out_may_be_a_strided_view():
    x = np.linspace(-1, 1, 35).reshape(5, 7)
    base = poisoned((10, 14), np.float64)
    hpipe.exp(x, out=base[::2, ::2])
    np.testing.assert_allclose(base[::2, ::2], np.exp(x), rtol=1e-15)
    assert np.isnan(base[1::2]).all() and np.isnan(base[:, 1::2]).all()
    # A dimension of extent 1 or 0 never steps, so its stride may be anything, as NumPy takes it.
    strided = np.lib.stride_tricks.as_strided
    odd = strided(poisoned(8, np.float32), (2, 1), (4, 6))
    hpipe.exp(np.ones((2, 1), np.float32), out=odd)
    np.testing.assert_array_equal(odd, hpipe.exp(np.ones((2, 1), np.float32)))
    assert hpipe.exp(strided(np.ones(8, np.float32), (0,), (6,))).shape == (0,)


@pytest.mark.parametrize("make_view", [lambda a: a, lambda a: a.T, lambda a: a[::2, 1::3]],
                         ids=["dense", "transposed", "strided"])
def test_no_temporary_copy_on_the_python_side(make_view):
    # NumPy reports its allocations to tracemalloc: a copy of x (4 MB) would show.
    x = make_view(np.random.default_rng(1).random((1024, 512)))
    out = np.empty(x.shape)
    hpipe.exp(x, out=out)  # first call: loads the kernel
    tracemalloc.start()
    hpipe.exp(x, out=out)
    hpipe.batched_dot(x, x, out=np.empty(x.shape[0]))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 1024, f"{peak} bytes allocated"


def test_new_numpy_outputs_are_cache_line_aligned():
    assert hpipe.exp(np.ones(1000, np.float32)).ctypes.data % 64 == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_tensors_in_and_out(dtype):
    a = torch.randn(7, 33, dtype=dtype)
    b = torch.randn(33, 7, dtype=dtype).T  # a transposed view, read in place
    result = hpipe.batched_dot(a, b)
    assert isinstance(result, torch.Tensor) and result.dtype == dtype and result.shape == (7,)
    torch.testing.assert_close(result, (a * b).sum(1))
    out = torch.full((7,), float("nan"), dtype=dtype)
    pointer = out.data_ptr()
    assert hpipe.batched_dot(a, b, out=out) is out and out.data_ptr() == pointer
    torch.testing.assert_close(out, (a * b).sum(1))
    # a broadcast (expanded) mask and a 0-d logsumexp
    x = torch.rand(2, 3, 4, 5, dtype=dtype)
    mask = torch.rand(4, 5, dtype=dtype)
    torch.testing.assert_close(hpipe.cassi_forward(x, mask.expand(3, 4, 5)), hpipe.cassi_forward(x, mask))
    total = hpipe.logsumexp(x)
    assert isinstance(total, torch.Tensor) and total.shape == () and total.dtype == dtype
    torch.testing.assert_close(total, torch.logsumexp(x.reshape(-1), 0))


def test_numpy_and_torch_arrays_mix_on_the_host():
    a = np.ones((3, 4), np.float32)
    result = hpipe.batched_dot(a, torch.ones(3, 4))
    assert isinstance(result, np.ndarray)  # the first array's kind
    np.testing.assert_array_equal(result, [4, 4, 4])


def error_message(call, exception):
    with pytest.raises(exception) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("call,exception,message", [
    (lambda: hpipe.exp(np.arange(3)), TypeError, "hpipe.exp: x: expected float32 or float64, got int64"),
    (lambda: hpipe.exp(np.ones(3, np.float16)), TypeError, "x: expected float32 or float64, got float16"),
    (lambda: hpipe.exp(torch.ones(3, dtype=torch.int32)), TypeError, "x: expected float32 or float64, got int32"),
    (lambda: hpipe.exp([1.0, 2.0]), TypeError, "x: expected a NumPy array or an array with __dlpack__"),
    (lambda: hpipe.exp(np.ma.masked_less(np.arange(3.0), 1)), TypeError,
     "hpipe.exp: x: is a numpy.ma.MaskedArray, whose mask hpipe would ignore"),
    (lambda: hpipe.exp(np.ones(3, ">f8")), TypeError, "x: expected native byte order"),
    (lambda: hpipe.exp(np.lib.stride_tricks.as_strided(np.ones(8, np.float32), (3,), (6,))), TypeError,
     "x: strides in bytes must be multiples of the element size 4, got 6"),
    (lambda: hpipe.batched_dot(np.ones((3, 4), np.float32), np.ones((3, 4))), TypeError,
     "hpipe.batched_dot: b: expected float32 like a, got float64"),
    (lambda: hpipe.batched_dot(np.ones((3, 4)), np.ones(4)), hpipe.Error,
     "hpipe.batched_dot: b: expected 2 dimensions (N, K), got shape (4,)"),
    (lambda: hpipe.batched_dot(np.ones((3, 4)), np.ones((3, 5))), hpipe.Error,
     "hpipe.batched_dot: b: expected shape (3, 4) (that of a)"),
    (lambda: hpipe.exp(np.ones(3), out=np.ones(3, np.float32)), TypeError, "out: expected float64 like x, got float32"),
    (lambda: hpipe.exp(np.ones(3), out=np.ones(4)), hpipe.Error, "hpipe.exp: out: expected shape (3,), got (4,)"),
    (lambda: hpipe.exp(np.ones(3), out=np.broadcast_to(np.ones(1), (3,))), ValueError, "out: is read-only"),
    (lambda: hpipe.logsumexp(np.ones((2, 2, 2, 2, 2)), axis=0), hpipe.Error,
     "x: expected 1 to 4 dimensions with an axis"),
    (lambda: hpipe.conv1d(np.ones((2, 3)), np.ones(3), mode="circular"), hpipe.Error,
     "mode: expected 'full', 'same' or 'valid', got 'circular'"),
    (lambda: hpipe.cassi_forward(np.ones((1, 2, 3, 4)), np.ones((3, 4)), axis="depth"), hpipe.Error,
     "axis: expected 'width' or 'height', got 'depth'"),
    (lambda: hpipe.exp(np.ones(3), device="gpu"), hpipe.Error, "device: expected 'auto', 'cpu' or 'cuda', got 'gpu'"),
    (lambda: hpipe.cassi_adjoint(np.ones((1, 3, 6)), np.ones((3, 4))), hpipe.Error,
     "bands: is needed with a shared (H, W) mask and no out="),
    (lambda: hpipe.logsumexp(np.ones((3, 4)), axis=2), hpipe.Error, "axis: expected -2 to 1"),
    (lambda: hpipe.logsumexp(np.ones((3, 4)), axis=1.0), TypeError, "logsumexp: axis: expected an int, got float"),
    (lambda: hpipe.cassi_phi(np.ones((3, 4)), bands=0), hpipe.Error, "cassi_phi: bands: expected at least 1, got 0"),
    (lambda: hpipe.exp(torch.ones(3, requires_grad=True)), TypeError,
     "exp: x: requires grad; the functions of hpipe.torch differentiate through hpipe, or pass a detached tensor"),
    (lambda: hpipe.gap_tv(np.ones((1, 3, 6)), np.ones((3, 4)), bands=2, callback=3), TypeError,
     "callback: expected a callable or None"),
    (lambda: hpipe.psnr(np.ones((3, 4)), np.ones((3, 4)), device="cuda"), hpipe.Error, "device: runs on the CPU only"),
    # An output whose elements share memory (torch refuses it too), also where NumPy lets it be written.
    (lambda: hpipe.exp(torch.ones(3), out=torch.empty(1).expand(3)), hpipe.Error,
     "hpipe.exp: out: its elements may share memory (shape (3,), strides (0,))"),
    (lambda: hpipe.exp(np.ones((2, 3)), out=np.lib.stride_tricks.as_strided(np.empty(3), (2, 3), (0, 8))), hpipe.Error,
     "out: its elements may share memory (shape (2, 3), strides (0, 1))"),
    # The C++ library's messages as the Python function names its arguments: its outputs are out=,
    # and helpers' messages are the function's.
    (lambda: (lambda x: hpipe.exp(x[:-1], out=x[1:]))(np.ones(4)), hpipe.Error, "hpipe.exp: out: overlaps input x"),
    (lambda: (lambda cube: hpipe.cassi_adjoint(cube[0, :1], np.ones((4, 4)), 4, out=cube[..., :4]))(
        np.zeros((1, 4, 4, 10))), hpipe.Error, "hpipe.cassi_adjoint: out: overlaps input y"),
    # Transposed dense operands with few rows: out over a's last products, which the kernel leaves to a tail loop.
    (lambda: (lambda buf: hpipe.batched_dot(buf[:8193].reshape(2731, 3).T, buf[8193:].reshape(2731, 3).T,
                                            out=buf[8185:8188]))(np.ones(16386, np.float32)), hpipe.Error,
     "hpipe.batched_dot: out: overlaps input a"),
    (lambda: hpipe.cassi_adjoint(np.ones((1, 4, 10)), np.ones((4, 4)), bands=40), hpipe.Error,
     "hpipe.cassi_adjoint: y: shape (1, 4, 10) is too small for 40 bands"),
    (lambda: hpipe.gap_tv(np.ones((1, 4, 10)), np.ones((4, 4)), 4, lam=np.inf), hpipe.Error,
     "hpipe.gap_tv: lam: expected a value > 0, at most 1.79769e+305 (float64), got inf"),
    (lambda: hpipe.gap_tv(np.ones((1, 4, 10)), np.ones((4, 4)), 4, lam=0), hpipe.Error,
     "hpipe.gap_tv: lam: expected a value > 0, at most 1.79769e+305 (float64), got 0"),
    (lambda: hpipe.gap_tv(np.ones((1, 4, 10)), np.ones((4, 4)), 4, tv_iterations=0), hpipe.Error,
     "hpipe.gap_tv: tv_iterations: expected at least 1"),
    (lambda: hpipe.tv_denoise(np.ones((1, 2, 4, 4)), weight=0), hpipe.Error, "hpipe.tv_denoise: weight: expected a"),
    (lambda: hpipe.set_num_threads(0), hpipe.Error, "hpipe.set_num_threads: n: expected at least 1, got 0"),
    (lambda: hpipe.cassi_shift(np.ones((1, 4, 4, 4)), out=np.ones((1, 4, 4, 9))), hpipe.Error,
     "hpipe.cassi_shift: out: expected shape (1, 4, 4, 10)"),
    # Scalars of the wrong type are named too (not pybind11's "incompatible function arguments").
    (lambda: hpipe.cassi_forward(np.ones((1, 2, 3, 4)), np.ones((3, 4)), step=2.0), TypeError,
     "hpipe.cassi_forward: step: expected an int, got float"),
    (lambda: hpipe.cassi_forward(np.ones((1, 2, 3, 4)), np.ones((3, 4)), step=2**40), hpipe.Error,
     "step: expected an int from -2147483648 to 2147483647, got 1099511627776"),
    (lambda: hpipe.cassi_shift(np.ones((1, 2, 3, 4)), axis=1), TypeError,
     "hpipe.cassi_shift: axis: expected 'width' or 'height' (a str), got int"),
    (lambda: hpipe.exp(np.ones(3), device=None), TypeError,
     "hpipe.exp: device: expected 'auto', 'cpu' or 'cuda' (a str), got None"),
    (lambda: hpipe.conv1d(np.ones((2, 3)), np.ones(3), mode=b"same"), TypeError, "mode: expected 'full', 'same' or"),
    (lambda: hpipe.tv_denoise(np.ones((1, 2, 3, 4)), weight="0.1"), TypeError,
     "hpipe.tv_denoise: weight: expected a float, got str"),
    (lambda: hpipe.tv_denoise(np.ones((1, 2, 3, 4)), weight=10**400), hpipe.Error, "weight: is too large for a float"),
    (lambda: hpipe.tv_denoise(np.ones((1, 2, 3, 4)), iterations=2.5), TypeError,
     "iterations: expected an int, got float"),
    (lambda: hpipe.tv_denoise(np.ones((1, 2, 3, 4)), vectorial=None), TypeError,
     "vectorial: expected a bool, got None"),
    (lambda: hpipe.gap_tv(np.ones((1, 3, 6)), np.ones((3, 4)), bands=2, accelerate="yes"), TypeError,
     "hpipe.gap_tv: accelerate: expected a bool, got str"),
    (lambda: hpipe.admm_tv(np.ones((1, 3, 6)), np.ones((3, 4)), bands=2, gamma=None), TypeError,
     "hpipe.admm_tv: gamma: expected a float, got None"),
    (lambda: hpipe.admm_tv(np.ones((1, 3, 6)), np.ones((3, 4)), bands=2.0), TypeError,
     "bands: expected an int, got float"),
    (lambda: hpipe.ssim(np.ones((3, 4)), np.ones((3, 4)), data_range="1"), TypeError,
     "hpipe.ssim: data_range: expected a float, got str"),
    (lambda: hpipe.synth(seed=-1), hpipe.Error, "hpipe.synth: seed: expected an int from 0 to"),
    (lambda: hpipe.set_num_threads(1.5), TypeError, "hpipe.set_num_threads: n: expected an int, got float"),
])
def test_bad_input_is_named(call, exception, message):
    assert message in error_message(call, exception)


@pytest.mark.parametrize("call,message", [
    (lambda: hpipe.exp(np.ones(3), outt=np.ones(3)), "hpipe.exp() got an unexpected keyword argument 'outt'"),
    (lambda: hpipe.gap_tv(np.ones((1, 3, 6)), np.ones((3, 4)), iteration=3),
     "hpipe.gap_tv() got an unexpected keyword argument 'iteration'"),
    (lambda: hpipe.exp(np.ones(3), np.ones(3)), "hpipe.exp() takes 1 positional argument but 2 were given"),
    (lambda: hpipe.psnr(np.ones((3, 4)), np.ones((3, 4)), 1.0, "cpu"),
     "hpipe.psnr() takes from 2 to 3 positional arguments but 4 were given"),
    (lambda: hpipe.cassi_adjoint(np.ones((1, 3, 6))), "hpipe.cassi_adjoint() missing 1 required argument: 'mask'"),
    (lambda: hpipe.batched_dot(), "hpipe.batched_dot() missing 2 required arguments: 'a' and 'b'"),
    (lambda: hpipe.exp(np.ones(3), x=np.ones(3)), "hpipe.exp() got multiple values for argument 'x'"),
    (lambda: hpipe.num_threads(2), "hpipe.num_threads() takes 0 positional arguments but 1 was given"),
])
def test_arguments_that_fit_no_parameter_are_named_as_python_names_them(call, message):
    # Not pybind11's "incompatible function arguments", which prints every argument, arrays too.
    assert error_message(call, TypeError) == message


def test_scalar_arguments_take_numpy_scalars_as_numpy_does(rng):
    cube = rng.random((1, 3, 5, 6), dtype=np.float32)
    mask = rng.random((5, 6), dtype=np.float32)
    np.testing.assert_array_equal(hpipe.cassi_forward(cube, mask, np.int64(-1), axis=np.str_("height")),
                                  hpipe.cassi_forward(cube, mask, -1, axis="height"))
    # A flag may be numpy.bool_ or an int, as in `if`; the float (np.float32(0.25) is exact) converts.
    np.testing.assert_array_equal(hpipe.tv_denoise(cube, np.float32(0.25), np.int32(3), np.bool_(True)),
                                  hpipe.tv_denoise(cube, 0.25, 3, True))
    np.testing.assert_array_equal(hpipe.tv_denoise(cube, 1, iterations=2, vectorial=0),
                                  hpipe.tv_denoise(cube, 1.0, iterations=2, vectorial=False))


def test_empty_arrays_give_numpys_results():
    f32 = np.float32
    for shape in [(0, 3), (3, 0)]:
        x = np.empty(shape, f32)
        for fn in (hpipe.exp, hpipe.log, hpipe.erf):
            assert fn(x).shape == shape
            assert fn(torch.from_numpy(x)).shape == torch.Size(shape)
            out = np.empty(shape, f32)
            assert fn(x, out=out) is out
    # An empty view may point anywhere (dask's boolean indexing gave one at an odd address).
    misaligned = np.ndarray((0, 3), f32, buffer=np.zeros(16, np.uint8), offset=1)
    assert hpipe.exp(misaligned).shape == (0, 3)
    # logsumexp: an empty axis gives -inf (torch.logsumexp, scipy.special.logsumexp); axis=None too.
    np.testing.assert_array_equal(hpipe.logsumexp(np.empty((0, 3), f32), axis=0), np.full(3, -np.inf, f32))
    assert hpipe.logsumexp(np.empty((0, 3), f32), axis=1).shape == (0,)
    assert hpipe.logsumexp(np.empty((2, 0), f32)) == -np.inf
    torch.testing.assert_close(hpipe.logsumexp(torch.empty(3, 0), axis=1), torch.logsumexp(torch.empty(3, 0), dim=1))
    # batched_dot: rows of no elements have a product of 0, as np.einsum("ij,ij->i") gives.
    empty_rows = np.empty((3, 0), f32)
    np.testing.assert_array_equal(hpipe.batched_dot(empty_rows, empty_rows),
                                  np.einsum("ij,ij->i", empty_rows, empty_rows))
    assert hpipe.batched_dot(np.empty((0, 3), f32), np.empty((0, 3), f32)).shape == (0,)
    assert hpipe.conv1d(np.empty((0, 9), f32), np.ones(3, f32)).shape == (0, 11)
    # CASSI and reconstruction: a batch of 0.
    mask = np.ones((8, 8), f32)
    assert hpipe.cassi_forward(np.empty((0, 4, 8, 8), f32), mask).shape == (0, 8, 14)
    assert hpipe.cassi_adjoint(np.empty((0, 8, 14), f32), mask, bands=4).shape == (0, 4, 8, 8)
    assert hpipe.gap_tv(np.empty((0, 8, 14), f32), mask, bands=4).shape == (0, 4, 8, 8)
    assert hpipe.tv_denoise(torch.empty(0, 4, 8, 8)).shape == torch.Size([0, 4, 8, 8])
    # A cube of no columns: a measurement of zeros (sums of no terms), and back to that cube.
    no_columns, no_columns_mask = np.empty((1, 4, 8, 0), f32), np.empty((8, 0), f32)
    for step in (2, 0):
        y = hpipe.cassi_forward(no_columns, no_columns_mask, step)
        np.testing.assert_array_equal(y, np.zeros((1, 8, 3 * step), f32))
        for back in (hpipe.cassi_adjoint, hpipe.cassi_pinv, hpipe.cassi_pinv_alpha):
            assert back(y, no_columns_mask, bands=4, step=step).shape == (1, 4, 8, 0)


def test_torch_tensors_read_as_torch_reads_them():
    # The negative bit (a lazily negated view): read as its values, refused as out=.
    x = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex128).conj().imag
    assert x.is_neg()
    torch.testing.assert_close(hpipe.exp(x), torch.exp(x), rtol=1e-15, atol=0)
    torch.testing.assert_close(hpipe.logsumexp(torch._neg_view(x)), torch.logsumexp(-x, 0), rtol=1e-15, atol=0)
    negated_out = torch.zeros(2, dtype=torch.complex128).conj().imag
    with pytest.raises(TypeError, match="hpipe.exp: out: has its negative bit set"):
        hpipe.exp(torch.zeros(2, dtype=torch.float64), out=negated_out)
    # A parameter under torch.no_grad(), as torch's own functions take it.
    weight = torch.nn.Parameter(torch.linspace(0.5, 2, 5))
    with torch.no_grad():
        torch.testing.assert_close(hpipe.log(weight), torch.log(weight), rtol=2e-7, atol=0)
    # A device DLPack has no number for is named.
    with pytest.raises(TypeError, match="hpipe.exp: x: expected host or CUDA memory, got an array whose __dlpack"):
        hpipe.exp(torch.ones(3, device="meta"))


def test_elementwise_functions_take_any_rank_as_numpy_does(rng):
    # A 0-d array gives a NumPy scalar (a 0-d tensor from torch); 5 and 6 dimensions whose layouts
    # merge into 4 run as given.
    scalar = hpipe.exp(np.array(0.5, np.float32))
    assert type(scalar) is np.float32 and abs(scalar - np.exp(np.float32(0.5))) <= np.spacing(scalar)
    assert hpipe.log(torch.tensor(2.0, dtype=torch.float64)).shape == torch.Size([])
    x = rng.random((2, 3, 4, 5, 6), dtype=np.float32)
    for view in (x, x[:, ::2], x[:, :, ::2, :, ::2], x[None, ..., None]):
        np.testing.assert_allclose(hpipe.exp(view), np.exp(view), rtol=2e-7)
    out = np.full(x.shape, np.nan, np.float32)
    assert hpipe.erf(x, out=out) is out
    # logsumexp of every element, as scipy.special.logsumexp: any rank, a 0-d x its value.
    assert hpipe.logsumexp(np.array(2.0)) == 2.0
    np.testing.assert_allclose(hpipe.logsumexp(x[None, ..., None]), np.log(np.exp(x.astype(np.float64)).sum()),
                               rtol=1e-6)
    # Of every element of any layout, as SciPy's (a contiguous copy first).
    for view in (x.T, x[:, ::2], np.broadcast_to(x[0, 0], (3, 4, 5, 6))):
        np.testing.assert_allclose(hpipe.logsumexp(view), scipy.special.logsumexp(view.astype(np.float64)), rtol=1e-6)
    torch.testing.assert_close(hpipe.logsumexp(torch.from_numpy(x).transpose(0, 4)),
                               torch.logsumexp(torch.from_numpy(x).reshape(-1), 0), rtol=1e-6, atol=0)
    # Layouts that do not merge into 4 dimensions are named.
    with pytest.raises(ValueError, match=r"hpipe.exp: out: the layouts of x and out of shape \(2, 3, 4, 5, 6\) do not"):
        hpipe.exp(x, out=np.empty((6, 5, 4, 3, 2), np.float32).transpose())


def test_interleaved_views_are_disjoint(rng):
    # A row's even and odd columns share no element: one may be the other's out=.
    a = rng.random((4, 10), dtype=np.float32)
    even = a[:, ::2].copy()
    assert hpipe.exp(a[:, ::2], out=a[:, 1::2]).base is a
    np.testing.assert_array_equal(a[:, 1::2], hpipe.exp(even))
    np.testing.assert_array_equal(a[:, ::2], even)
    with pytest.raises(hpipe.Error, match="hpipe.exp: out: overlaps input x"):
        hpipe.exp(a[:, :8:2], out=a[:, 2::2])


def test_elementwise_results_keep_their_inputs_layout(rng):
    # As NumPy's order='K' and torch's preserve_format: a transposed or reversed input gives a
    # result laid out as it is (read and written in one pass), a broadcast one a C-order result.
    x = rng.random((7, 9, 11), dtype=np.float32)
    for view in (x.T, x[::-1], x[:, ::2].transpose(1, 0, 2), x.transpose(2, 0, 1)[None],
                 np.broadcast_to(x[0], (3, 9, 11)), np.broadcast_to(x[0, 0, ::2], (3, 6))):
        y = hpipe.exp(view)
        layout = [(n, s) for n, s in zip(y.shape, y.strides) if n > 1]  # a dimension of 1 has any stride
        assert layout == [(n, s) for n, s in zip(view.shape, np.exp(view).strides) if n > 1], view.strides
        np.testing.assert_allclose(y, np.exp(view), rtol=2e-7)
    t = torch.from_numpy(x.reshape(1, 7, 9, 11)).to(memory_format=torch.channels_last)
    y = hpipe.log(t)
    assert y.stride() == torch.log(t).stride()
    torch.testing.assert_close(y, torch.log(t), rtol=2e-7, atol=0)


class FakeCudaArray:
    """Says it lives on CUDA device 0 but hands over a host tensor's capsule: enough for the rules
    hpipe applies before it touches memory, on a machine without a GPU."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.streams = []

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return torch.utils.dlpack.to_dlpack(self.tensor)


def test_host_and_cuda_arrays_do_not_mix():
    host = np.ones((3, 4), np.float32)
    fake = FakeCudaArray(torch.ones(3, 4))
    message = error_message(lambda: hpipe.batched_dot(host, fake), TypeError)
    assert "hpipe.batched_dot: b: expected host memory like a, got CUDA memory on device 0" in message
    assert fake.streams == [1]  # DLPack's number for the legacy default stream (no current-stream library)
    message = error_message(lambda: hpipe.batched_dot(fake, host), TypeError)
    assert "b: expected CUDA memory on device 0 like a, got host memory" in message


class RefusingArray:
    """An array whose __dlpack__ raises, as an exporter does for memory it cannot share."""

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __dlpack__(self, stream=None):
        raise BufferError("cannot export")


def test_a_failed_export_is_named_without_its_traceback():
    message = error_message(lambda: hpipe.exp(RefusingArray()), TypeError)
    assert message == "hpipe.exp: x: its __dlpack__ export failed: BufferError: cannot export"


def test_outputs_too_large_fail_before_or_instead_of_allocating():
    x, mask = np.ones((2, 3, 8, 9), np.float32), np.ones((8, 9), np.float32)
    message = error_message(lambda: hpipe.cassi_forward(x, mask, 10**9), hpipe.Error)
    assert "dispersion: |step| must be at most 2^24 pixels, got 1000000000" in message
    # 2^48 elements from an input of one (zero strides): 1 PiB, past the address space, so that
    # no allocator gives it even where memory is overcommitted.
    wide = np.broadcast_to(np.ones(1, np.float32), (1 << 24, 1 << 24))
    message = error_message(lambda: hpipe.exp(wide), MemoryError)
    assert message == "hpipe.exp: out: unable to allocate 1 PiB for a float32 array of shape (16777216, 16777216)"


@pytest.mark.parametrize("fn", ["exp", "log", "erf"])
def test_elementwise_in_place(rng, fn):
    # out=x, as NumPy's ufuncs and torch's exp_ take it: the values of a call into a new array, for
    # NumPy arrays and torch tensors, dense, transposed, strided and around every vector length.
    op = getattr(hpipe, fn)
    for dtype in (np.float32, np.float64):
        views = [lambda b: b, lambda b: b.T, lambda b: b[:, ::2]]
        for base, view in [(rng.uniform(0.01, 9, n).astype(dtype), views[0]) for n in (1, 17, 63, 64, 65, 1000)] + [
                (rng.uniform(0.01, 9, (7, 65)).astype(dtype), views[1]),
                (rng.uniform(0.01, 9, (5, 130)).astype(dtype), views[2])]:
            expected = op(view(base))
            for x in (view(base.copy()), view(torch.from_numpy(base.copy()))):
                assert op(x, out=x) is x
                np.testing.assert_array_equal(np.asarray(x), expected)
        # A view over x's own elements that is not x is still refused, and x left as it was.
        x = np.ones((4, 8), dtype)
        assert "overlaps input x" in error_message(lambda: op(x[:, :-1], out=x[:, 1:]), hpipe.Error)
        np.testing.assert_array_equal(x, 1)


@pytest.mark.parametrize("variable, value, expected", [
    ("HPIPE_CPU_LIMIT", "AVX2", "HPIPE_CPU_LIMIT: expected avx2 or sse41 (or unset), got 'AVX2'"),
    ("HPIPE_SPIN_US", "99999999999999999999", "HPIPE_SPIN_US: expected a whole number from 0 to 1000000"),
    ("HPIPE_STREAMING_BYTES", "-1", "HPIPE_STREAMING_BYTES: expected a whole number from 0 up (or unset), got '-1'"),
    ("HPIPE_BATCH_PART_BYTES", "1e6", "HPIPE_BATCH_PART_BYTES: expected a whole number from 1 up")])
def test_a_bad_environment_variable_fails_every_call(variable, value, expected):
    # A typo capped nothing (HPIPE_CPU_LIMIT=AVX2) and a huge spin time overflowed: read once per
    # process, so in one of its own.
    call = "try:\n    hpipe.exp(numpy.ones(3))\nexcept hpipe.Error as e:\n    print(e)\n"
    run = subprocess.run([sys.executable, "-c", "import hpipe, numpy\n" + call], env={**os.environ, variable: value},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.startswith("hpipe.exp: " + expected), run.stdout + run.stderr
    # Read at the first call: set after the import, it counts too.
    late = f"import hpipe, numpy, os\nos.environ[{variable!r}] = {value!r}\n" + call
    run = subprocess.run([sys.executable, "-c", late], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.startswith("hpipe.exp: " + expected), run.stdout + run.stderr


def test_exit_while_a_daemon_thread_is_inside_a_call():
    # CPython ends such a thread when it asks for the GIL back; the unwinding aborted the process
    # (exit status 134) where NumPy's calls exit cleanly.
    script = ("import threading, time, numpy, hpipe\n"
              "x = numpy.ones((2, 8, 128, 128), numpy.float32)\n"
              "def loop():\n"
              "    while True:\n"
              "        hpipe.tv_denoise(x, 0.1, 3)\n"
              "threading.Thread(target=loop, daemon=True).start()\n"
              "time.sleep(0.3)\n")
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr


def test_error_is_a_value_error_with_the_cpp_message():
    assert issubclass(hpipe.Error, ValueError) and hpipe.Error.__module__ == "hpipe"
    message = error_message(lambda: hpipe.cassi_forward(np.ones((2, 3, 4, 5)), np.ones((4, 6))), hpipe.Error)
    assert message.startswith("hpipe.cassi_forward: mask:")


def test_cuda_without_a_usable_gpu_says_why():
    if hpipe.cuda_available():
        pytest.skip("CUDA is usable here")
    assert hpipe.cuda_unavailable_reason()
    message = error_message(lambda: hpipe.exp(np.ones(3), device="cuda"), hpipe.Error)
    assert "CUDA is not usable" in message and hpipe.cuda_unavailable_reason() in message


def cuda_usable():
    return torch.cuda.is_available() and hpipe.cuda_available()


@pytest.mark.skipif(not cuda_usable(), reason=f"no usable GPU (torch: {torch.cuda.is_available()}, "
                    f"hpipe: {hpipe.cuda_unavailable_reason() or 'available'})")
def test_cuda_tensors_run_on_their_device_and_stream():
    x = torch.rand(64, 100, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = hpipe.exp(x)
        assert y.device == x.device and isinstance(y, torch.Tensor)
        out = torch.empty(64, device="cuda")
        hpipe.batched_dot(x, x.T.contiguous().T, out=out)
    stream.synchronize()
    torch.testing.assert_close(y.cpu(), torch.exp(x.cpu()))
    torch.testing.assert_close(out.cpu(), (x * x).sum(1).cpu())
    message = error_message(lambda: hpipe.batched_dot(x, np.ones((64, 100), np.float32)), TypeError)
    assert "b: expected CUDA memory on device 0 like a, got host memory" in message


def test_four_threads_calling_different_ops_match_a_serial_run(rng):
    x = rng.random((2, 28, 64, 64)).astype(np.float32)
    mask = rng.random((64, 64)).astype(np.float32)
    a = rng.standard_normal((500, 500)).astype(np.float32)
    big = rng.random((2000, 500))
    jobs = [lambda: hpipe.cassi_forward(x, mask), lambda: hpipe.batched_dot(a, a.T),
            lambda: hpipe.erf(big), lambda: hpipe.logsumexp(big, axis=0)]
    serial = [job() for job in jobs]
    for _ in range(3):
        results = [None] * len(jobs)

        def run(i):
            for _ in range(5):
                results[i] = jobs[i]()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for got, expected in zip(results, serial):
            np.testing.assert_array_equal(got, expected)


def test_the_gil_is_released_while_kernels_run():
    x = np.random.default_rng(2).random(10**7)
    out = np.empty_like(x)
    hpipe.erf(x[:10], out=out[:10])
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.01)
    before = ticks[0]
    hpipe.erf(x, out=out)  # tens of ms; a held GIL would stop the counter for all of it
    during = ticks[0] - before
    stop.set()
    counter.join()
    assert during > 1000


def test_set_num_threads_1_after_a_2_thread_run_limits_the_work():
    x = np.random.default_rng(3).random(2 * 10**7)
    out = np.empty_like(x)
    before = hpipe.num_threads()
    try:
        hpipe.set_num_threads(2)
        hpipe.erf(x, out=out)
        hpipe.set_num_threads(1)
        assert hpipe.num_threads() == 1
        # One worker is the calling thread: CPU time of other threads means more worked. (Process
        # CPU time against wall time would not tell on a loaded machine.)
        process, caller = time.process_time(), time.thread_time()
        for _ in range(3):
            hpipe.erf(x, out=out)
        process, caller = time.process_time() - process, time.thread_time() - caller
        others = process - caller
        assert others < 0.1 * caller, f"other threads used {others:.3f} s, the caller {caller:.3f} s"
    finally:
        hpipe.set_num_threads(before)


def test_docstrings_state_signature_shapes_accuracy_and_an_example():
    for name in hpipe.__all__:
        fn = getattr(hpipe, name)
        if not callable(fn) or isinstance(fn, type):
            continue
        assert fn.__doc__ and len(fn.__doc__) > 40, name
        inspect.signature(fn)  # from the docstring's first line
    for name in ["cassi_forward", "cassi_adjoint", "cassi_pinv", "batched_dot", "conv1d", "exp", "logsumexp",
                 "tv_denoise", "gap_tv", "admm_tv", "psnr", "ssim"]:
        doc = getattr(hpipe, name).__doc__
        assert "Example" in doc and "Accuracy" in doc, name
    assert str(inspect.signature(hpipe.cassi_forward)) == "(x, mask, step=2, axis='width', *, out=None, device='auto')"
