"""Every operation of the hpipe module against the independent NumPy/SciPy references of
reference.py, on random inputs, odd shapes, float32 and float64, in the layouts hpipe reads in
place, with tolerances from the C++ headers' accuracy contracts."""
import numpy as np
import pytest
import scipy.special

import hpipe
import reference as ref
from conftest import layouts, poisoned

B, C, H, W = 2, 3, 5, 7  # odd on purpose


def assert_within(actual, expected, bound):
    """|actual - expected| <= bound elementwise (bound an array or a number)."""
    actual = np.asarray(actual, np.longdouble)
    error = np.abs(actual - expected)
    assert np.all(np.isfinite(actual)), "non-finite result"
    worst = np.unravel_index(np.argmax(error - bound), error.shape) if error.ndim else ()
    bound = np.broadcast_to(bound, error.shape)
    assert np.all(error <= bound), f"error {error[worst]} > bound {bound[worst]} at {worst}"


def cassi_inputs(rng, dtype, mask_kind):
    x = rng.random((B, C, H, W)).astype(dtype)
    shared = (rng.random((H, W)) * 0.9 + 0.1).astype(dtype)  # in (0, 1], as W4
    mask = {"shared": shared,
            "per_band": (rng.random((C, H, W)) * 0.9 + 0.1).astype(dtype),
            "broadcast": np.broadcast_to(shared, (C, H, W))}[mask_kind]
    return x, mask


CASSI_CASES = pytest.mark.parametrize("step,axis", [(2, "width"), (-1, "width"), (0, "width"), (3, "height")])
MASKS = pytest.mark.parametrize("mask_kind", ["shared", "per_band", "broadcast"])


@CASSI_CASES
@MASKS
@pytest.mark.parametrize("layout", ["dense", "strided", "transposed"])
def test_cassi_forward_adjoint_phi(rng, dtype, step, axis, mask_kind, layout):
    x, mask = cassi_inputs(rng, dtype, mask_kind)
    e = ref.eps(dtype)
    # forward and phi: float32 rounds a float64 sum once (0.5 ULP); float64 makes C + 1 roundings.
    sum_roundings = 1 if dtype == np.float32 else C + 1
    y_ref = ref.forward(x, mask, step, axis)
    out = poisoned(y_ref.shape, dtype)
    y = hpipe.cassi_forward(layouts(x)[layout], mask, step=step, axis=axis, out=out)
    assert y is out
    assert_within(y, y_ref, sum_roundings * e * np.abs(y_ref))
    # adjoint: one rounding
    y_in = layouts(y)[layout]
    x_ref = ref.adjoint(y, mask, C, step, axis)
    assert_within(hpipe.cassi_adjoint(y_in, mask, bands=C, step=step, axis=axis), x_ref, e * np.abs(x_ref))
    phi_ref = ref.phi(mask, C, step, axis)
    assert_within(hpipe.cassi_phi(mask, bands=C, step=step, axis=axis), phi_ref, sum_roundings * e * phi_ref)


@CASSI_CASES
@MASKS
def test_cassi_inverses(rng, dtype, step, axis, mask_kind):
    x, mask = cassi_inputs(rng, dtype, mask_kind)
    e = ref.eps(dtype)
    y = hpipe.cassi_forward(x, mask, step=step, axis=axis)
    phi_roundings = 1 if dtype == np.float32 else C + 1
    x_ref = ref.pinv(y, mask, C, step, axis)
    pinv = hpipe.cassi_pinv(y, mask, bands=C, step=step, axis=axis, out=poisoned(x.shape, dtype))
    assert_within(pinv, x_ref, (phi_roundings + 2) * e * np.abs(x_ref))
    x_ref = ref.pinv_alpha(y, mask, C, step, axis)
    alpha = hpipe.cassi_pinv_alpha(y, mask, bands=C, step=step, axis=axis)
    assert_within(alpha, x_ref, 4 * e * np.abs(x_ref))
    # A(A+ y) = y for y in the range of A
    np.testing.assert_allclose(hpipe.cassi_forward(pinv, mask, step=step, axis=axis), y,
                               rtol=8 * (C + 1) * e, atol=8 * (C + 1) * e)


def test_cassi_pinv_alpha_is_zero_where_the_mask_is(rng, dtype):
    x, mask = cassi_inputs(rng, dtype, "per_band")
    mask[1, 2, 3] = 0
    y = hpipe.cassi_forward(x, mask)
    assert np.all(hpipe.cassi_pinv_alpha(y, mask)[:, 1, 2, 3] == 0)


def test_cassi_bands_come_from_out_or_a_per_band_mask(rng):
    x, mask = cassi_inputs(rng, np.float64, "per_band")
    y = hpipe.cassi_forward(x, mask)
    out = poisoned(x.shape, np.float64)
    np.testing.assert_array_equal(hpipe.cassi_adjoint(y, mask[0], out=out), hpipe.cassi_adjoint(y, mask[0], bands=C))
    assert hpipe.cassi_adjoint(y, mask).shape == x.shape


@CASSI_CASES
def test_cassi_shift_and_back_are_exact(rng, dtype, step, axis):
    x = rng.random((B, C, H, W)).astype(dtype)
    shifted = hpipe.cassi_shift(x, step=step, axis=axis)
    np.testing.assert_array_equal(shifted, ref.shift(x, step, axis))
    np.testing.assert_array_equal(hpipe.cassi_shift_back(layouts(shifted)["strided"], step=step, axis=axis), x)


@pytest.mark.parametrize("n,k", [(1, 1), (7, 33), (500, 500), (3, 5000)])
@pytest.mark.parametrize("layout_a,layout_b", [("dense", "dense"), ("transposed", "transposed"),
                                               ("strided", "dense"), ("dense", "transposed")])
def test_batched_dot(rng, dtype, n, k, layout_a, layout_b):
    a, b = rng.standard_normal((2, n, k)).astype(dtype)
    exact = np.einsum("ik,ik->i", a.astype(ref.EXACT), b.astype(ref.EXACT))
    s = np.einsum("ik,ik->i", np.abs(a).astype(ref.EXACT), np.abs(b).astype(ref.EXACT))
    e = ref.eps(dtype)
    bound = e * np.abs(exact) + 66 * e * s if dtype == np.float32 else (100 + k / 1024) * e * s
    out = poisoned((n,), dtype)
    assert hpipe.batched_dot(layouts(a)[layout_a], layouts(b)[layout_b], out=out) is out
    assert_within(out, exact, bound)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,la,lv", [(5, 5, 7), (100, 9, 6), (3, 17, 1), (4, 2, 9), (2, 40, 13)])
@pytest.mark.parametrize("shared", [False, True], ids=["per_row", "shared"])
def test_conv1d(rng, dtype, mode, n, la, lv, shared):
    a = rng.standard_normal((n, la)).astype(dtype)
    v = rng.standard_normal(lv if shared else (n, lv)).astype(dtype)
    rows = [v] * n if shared else list(v)
    exact = np.stack([np.convolve(a[i].astype(ref.EXACT), rows[i].astype(ref.EXACT), mode) for i in range(n)])
    s = np.stack([np.convolve(np.abs(a[i]).astype(ref.EXACT), np.abs(rows[i]).astype(ref.EXACT), mode)
                  for i in range(n)])
    result = hpipe.conv1d(layouts(a)["strided"], layouts(v)["transposed"], mode)
    assert_within(result, exact, min(la, lv) * ref.eps(dtype) * s * (1 + 1e-6))


def test_conv1d_non_finite_values_as_documented():
    """np.convolve's non-finite results, but NaN for the outputs where a NaN or inf of the shorter
    operand falls on the longer one's zero padding (0 x inf is NaN)."""
    for bad in (np.nan, np.inf):
        longer = np.arange(1.0, 8.0)
        shorter = np.array([1.0, 2.0, bad, 3.0, 4.0])
        for a, v in ((shorter, longer), (longer, shorter)):  # the shorter one as the row, then as the kernel
            for mode in ("full", "same", "valid"):
                want = np.convolve(a, v, mode)
                got = hpipe.conv1d(a[None], v, mode)[0]
                offset = {"full": 0, "same": (len(shorter) - 1) // 2, "valid": len(shorter) - 1}[mode]
                t = np.arange(len(got)) + offset  # the full output each one is
                reaches_padding = (t - 2 < 0) | (t - 2 >= len(longer))  # where shorter[2] meets padding
                np.testing.assert_array_equal(got[~reaches_padding], want[~reaches_padding])
                assert np.isnan(got[reaches_padding]).all()
        # In the longer operand, exactly np.convolve's.
        longer[3] = bad
        np.testing.assert_array_equal(hpipe.conv1d(longer[None], shorter[:2])[0], np.convolve(longer, shorter[:2]))


MATH_RANGES = {"exp": (-80, 80), "log": (1e-30, 1e30), "erf": (-5, 5)}
SPECIALS = {"exp": [0.0, -0.0, np.inf, -np.inf, np.nan, 1000.0, -1000.0],
            "log": [0.0, 1.0, np.inf, -1.0, np.nan, 5e-324],
            "erf": [0.0, -0.0, np.inf, -np.inf, np.nan, 7.0]}


def ulp_error(result, exact, dtype):
    exact_rounded = exact.astype(dtype)
    return np.abs(result.astype(ref.EXACT) - exact) / np.spacing(np.abs(exact_rounded)).astype(ref.EXACT)


@pytest.mark.parametrize("fn", ["exp", "log", "erf"])
@pytest.mark.parametrize("shape,layout", [((1000,), "dense"), ((3, 5, 7), "strided"), ((2, 3, 4, 5), "transposed"),
                                          ((33, 65), "transposed")])
def test_elementwise_math(rng, dtype, fn, shape, layout):
    low, high = MATH_RANGES[fn]
    if fn == "log":
        x = np.exp(rng.uniform(np.log(low), np.log(high), shape)).astype(dtype)
    else:
        x = rng.uniform(low, high, shape).astype(dtype)
    x_ld = x.astype(ref.EXACT)
    # exp and log in long double; erf of float32 through double, of float64 through mpmath.
    erf = ref.erf_exact if dtype == np.float64 else lambda v: scipy.special.erf(v.astype(np.float64))
    exact = {"exp": np.exp, "log": np.log, "erf": erf}[fn](x_ld)
    bound = ref.MATH_ULP[(fn, dtype)]
    result = getattr(hpipe, fn)(layouts(x)[layout], out=poisoned(shape, dtype))
    exact = np.asarray(exact, ref.EXACT)
    finite = np.isfinite(exact.astype(dtype)) & (exact.astype(dtype) != 0)
    assert np.max(ulp_error(result[finite], exact[finite], dtype)) <= bound


@pytest.mark.parametrize("fn", ["exp", "log", "erf"])
def test_elementwise_special_values(dtype, fn):
    x = np.array(SPECIALS[fn], dtype)
    with np.errstate(all="ignore"):
        expected = {"exp": np.exp, "log": np.log, "erf": scipy.special.erf}[fn](x)
    result = getattr(hpipe, fn)(x)
    np.testing.assert_array_equal(result, expected)
    signed = ~np.isnan(expected)  # a NaN's sign is unspecified
    np.testing.assert_array_equal(np.signbit(result[signed]), np.signbit(expected[signed]))


@pytest.mark.parametrize("shape,axis", [((1000,), None), ((1000,), 0), ((7, 300), None), ((7, 300), 1),
                                        ((300, 7), 0), ((5, 6, 7), 1), ((5, 6, 7), -1), ((3, 4, 5, 6), 0),
                                        ((3, 4, 5, 130), 3)])
def test_logsumexp(rng, dtype, shape, axis):
    x = rng.uniform(-20, 20, shape).astype(dtype)
    exact = scipy.special.logsumexp(x.astype(ref.EXACT), axis=axis)
    n = x.size if axis is None else x.shape[axis]
    e = ref.eps(dtype)
    if dtype == np.float32:  # 1 ULP + 2^-23 absolute (hpipe/math.h)
        bound = np.spacing(np.abs(exact).astype(np.float32)).astype(ref.EXACT) + 2 * e
    else:
        bound = (n + 4) * e * (1 + np.abs(exact))
    result = hpipe.logsumexp(x if axis is None else layouts(x)["transposed"], axis=axis)
    if axis is None or x.ndim == 1:
        assert isinstance(result, np.generic) and result.dtype == dtype
    assert_within(result, exact, bound)


def test_logsumexp_special_rows(dtype):
    x = np.array([[-np.inf, -np.inf, -np.inf], [0, np.inf, 1], [0, np.nan, 1], [1, 2, 3]], dtype)
    with np.errstate(all="ignore"):
        expected = scipy.special.logsumexp(x.astype(np.float64), axis=1)
    np.testing.assert_allclose(hpipe.logsumexp(x, axis=1), expected, rtol=2 * ref.eps(dtype))
    out = np.full((), np.nan, dtype)
    assert hpipe.logsumexp(x[3], out=out) is out and out == pytest.approx(expected[3], rel=2 * ref.eps(dtype))


@pytest.mark.parametrize("vectorial", [False, True])
def test_tv_denoise(rng, dtype, vectorial):
    x = rng.random((2, 3, 13, 11)).astype(dtype)
    expected = ref.tv(x, 0.15, 6, vectorial)
    # Every operation in the element type; float32's divisor is a refined reciprocal estimate.
    tolerance = 1e-12 if dtype == np.float64 else 2e-6
    result = hpipe.tv_denoise(layouts(x)["strided"], weight=0.15, iterations=6, vectorial=vectorial)
    np.testing.assert_allclose(result, expected, rtol=0, atol=tolerance)


@pytest.mark.parametrize("method", ["gap_tv", "admm_tv"])
@pytest.mark.parametrize("mask_kind", ["shared", "per_band"])
def test_reconstruction(rng, method, mask_kind):
    x, mask = cassi_inputs(rng, np.float64, mask_kind)
    y = hpipe.cassi_forward(x, mask, step=1)
    kwargs = dict(iterations=4, lam=0.9, tv_weight=0.05, tv_iterations=3)
    extra = {"gamma": 0.02} if method == "admm_tv" else {}
    expected, residuals = getattr(ref, method)(y, mask, C, 1, "width", **kwargs, **extra)
    infos = []
    x64 = getattr(hpipe, method)(y, mask, bands=C, step=1, **kwargs, **extra, callback=infos.append)
    np.testing.assert_allclose(x64, expected, rtol=0, atol=1e-12)
    assert [i.iteration for i in infos] == [1, 2, 3, 4] and {i.iterations for i in infos} == {4}
    np.testing.assert_allclose([i.residual for i in infos], residuals, rtol=1e-9)
    # float32: residuals within 1e-5 relative of the float64 run (hpipe/recon.h)
    infos32 = []
    getattr(hpipe, method)(y.astype(np.float32), mask.astype(np.float32), bands=C, step=1, **kwargs, **extra,
                           callback=infos32.append)
    np.testing.assert_allclose([i.residual for i in infos32], residuals, rtol=1e-5)


def test_reconstruction_progress_bar_and_callback_errors(rng, capsys):
    x, mask = cassi_inputs(rng, np.float32, "shared")
    y = hpipe.cassi_forward(x, mask)
    hpipe.gap_tv(y, mask, bands=C, iterations=3, progress=True)
    assert "3/3" in capsys.readouterr().err

    def stop(info):
        if info.iteration == 2:
            raise KeyError("stop here")

    out = np.full(x.shape, np.nan, np.float32)
    with pytest.raises(KeyError, match="stop here"):
        hpipe.admm_tv(y, mask, bands=C, iterations=5, callback=stop, out=out)
    assert np.isnan(out).all()  # as documented: only the last iteration writes out


def test_psnr_and_ssim(rng, dtype):
    truth = rng.random((23, 19)).astype(dtype)
    estimate = np.clip(truth + rng.normal(0, 0.05, truth.shape), 0, 1).astype(dtype)
    mse = np.mean((estimate.astype(np.float64) - truth) ** 2)
    # both in double
    assert hpipe.psnr(estimate, truth) == pytest.approx(10 * np.log10(1 / mse), rel=1e-12)
    assert hpipe.psnr(estimate, truth, peak=2.0) == pytest.approx(10 * np.log10(4 / mse), rel=1e-12)
    assert hpipe.psnr(truth, truth) == np.inf
    assert hpipe.ssim(estimate, truth) == pytest.approx(ref.ssim(estimate, truth, 1.0), rel=1e-12)
    assert hpipe.ssim(estimate, truth, data_range=2.0) == pytest.approx(ref.ssim(estimate, truth, 2.0), rel=1e-12)
    assert hpipe.ssim(layouts(truth)["transposed"], truth) == pytest.approx(1.0, rel=1e-12)


def test_synth_is_deterministic():
    scene, mask = hpipe.synth(bands=5, height=17, width=13, seed=3)
    assert scene.shape == (5, 17, 13) and mask.shape == (17, 13)
    assert scene.dtype == mask.dtype == np.float32
    assert 0 <= scene.min() and scene.max() <= 1 and 0 < mask.min() and mask.max() <= 1
    again, mask_again = hpipe.synth(bands=5, height=17, width=13, seed=3)
    np.testing.assert_array_equal(scene, again)
    np.testing.assert_array_equal(mask, mask_again)
    assert not np.array_equal(mask, hpipe.synth(bands=5, height=17, width=13, seed=4)[1])
