"""Independent NumPy references for hpipe's operations (the methods of the reference workloads:
slice-adds and crops for CASSI, np.convolve, float64/long double math, Chambolle's TV as
skimage writes it), and the accuracy contracts of runtime/include/hpipe/*.h as tolerances."""
import numpy as np

# References compute in long double (64-bit mantissa): exact enough to judge float64 results.
EXACT = np.longdouble

EPS = {np.float32: 2.0**-24, np.float64: 2.0**-53}  # unit roundoff (half an ULP at 1)

# Max ULP errors of hpipe/math.h (AVX-512/AVX2 and SSE4.1 columns: the larger).
MATH_ULP = {
    ("exp", np.float32): 0.764, ("exp", np.float64): 0.768,
    ("log", np.float32): 0.827, ("log", np.float64): 0.820,
    ("erf", np.float32): 1.337, ("erf", np.float64): 1.355,
}


def erf_exact(x):
    """erf of each element in long double, through mpmath at 40 digits: SciPy's double erf, the
    obvious reference, is itself a few ULP off in some releases (3 ULP against hpipe's float64
    result, SciPy on NumPy 2.5, where mpmath found hpipe within its contract)."""
    import mpmath

    with mpmath.workdps(40):
        values = [EXACT(mpmath.nstr(mpmath.erf(mpmath.mpf(float(v))), 30)) for v in np.ravel(x)]
    return np.asarray(values, EXACT).reshape(np.shape(x))


def eps(dtype):
    return EPS[np.dtype(dtype).type]


# ---- CASSI (hpipe/cassi.h; W4 of the reference workloads) ----

def offsets(bands, step):
    """o_c = c S - min(0, (C - 1) S)."""
    return [c * step - min(0, (bands - 1) * step) for c in range(bands)]


def per_band(mask, bands):
    return np.broadcast_to(mask, (bands,) + mask.shape[-2:]) if mask.ndim == 2 else mask


def _moved(a, axis):
    """Cube/mask views with the dispersion axis last (height: swap H and W)."""
    return a if axis == "width" else np.swapaxes(a, -1, -2)


def forward(x, mask, step, axis):
    x = _moved(x.astype(EXACT), axis)
    m = _moved(per_band(mask, x.shape[1]).astype(EXACT), axis)
    b, c, h, w = x.shape
    y = np.zeros((b, h, w + (c - 1) * abs(step)), EXACT)
    for band, o in enumerate(offsets(c, step)):
        y[:, :, o:o + w] += m[band] * x[:, band]
    return _moved(y, axis)


def adjoint(y, mask, bands, step, axis):
    y = _moved(y.astype(EXACT), axis)
    m = _moved(per_band(mask, bands).astype(EXACT), axis)
    w = m.shape[-1]
    x = np.stack([m[band] * y[:, :, o:o + w] for band, o in enumerate(offsets(bands, step))], axis=1)
    return _moved(x, axis)


def phi(mask, bands, step, axis):
    m = per_band(mask, bands).astype(EXACT)
    p = forward(np.ones((1,) + m.shape), m * m, step, axis)[0]  # sum_c m_c^2, displaced
    return np.where(p == 0, 1, p)


def pinv(y, mask, bands, step, axis):
    return adjoint(y / phi(mask, bands, step, axis), mask, bands, step, axis)


def pinv_alpha(y, mask, bands, step, axis):
    yw = _moved(y.astype(EXACT), axis)
    m = _moved(per_band(mask, bands).astype(EXACT), axis)
    w = m.shape[-1]
    alpha = np.zeros(yw.shape[-1])
    for o in offsets(bands, step):
        alpha[o:o + w] += 1
    z = yw / alpha
    x = np.stack([np.divide(z[:, :, o:o + w], m[band], out=np.zeros(z.shape[:2] + (w,), EXACT), where=m[band] != 0)
                  for band, o in enumerate(offsets(bands, step))], axis=1)
    return _moved(x, axis)


def shift(x, step, axis):
    xw = _moved(x, axis)
    b, c, h, w = xw.shape
    out = np.zeros((b, c, h, w + (c - 1) * abs(step)), x.dtype)
    for band, o in enumerate(offsets(c, step)):
        out[:, band, :, o:o + w] = xw[:, band]
    return _moved(out, axis)


def shift_back(s, step, axis):
    sw = _moved(s, axis)
    c = sw.shape[1]
    w = sw.shape[-1] - (c - 1) * abs(step)
    return _moved(np.stack([sw[:, band, :, o:o + w] for band, o in enumerate(offsets(c, step))], axis=1), axis)


# ---- reconstruction (hpipe/recon.h) ----

def tv_chambolle(cube, weight, iterations, vectorial=False):
    """skimage.restoration.denoise_tv_chambolle(cube, weight, max_num_iter=iterations, eps=0,
    channel_axis=0) for one (C, H, W) cube in long double (skimage's _denoise_tv_chambolle_nd, per
    band); vectorial: one divisor per pixel from the gradients of every band."""
    image = cube.astype(EXACT)
    p = np.zeros((2,) + image.shape)
    g = np.zeros_like(p)
    out = image
    for i in range(iterations):
        if i > 0:
            d = -p.sum(0)
            d[:, 1:] += p[0, :, :-1]
            d[:, :, 1:] += p[1, :, :, :-1]
            out = image + d
        g[0, :, :-1] = np.diff(out, axis=1)
        g[1, :, :, :-1] = np.diff(out, axis=2)
        norm = np.sqrt((g**2).sum(axis=(0, 1) if vectorial else 0, keepdims=True))
        tau = 0.25  # 1 / (2 ndim)
        p = (p - tau * g) / (1.0 + tau / weight * norm)
    return out


def tv(x, weight, iterations, vectorial=False):
    return np.stack([tv_chambolle(cube, weight, iterations, vectorial) for cube in x])


def gap_tv(y, mask, bands, step, axis, iterations, lam, tv_weight, tv_iterations):
    """GAP-TV, accelerated (hpipe/recon.h); returns x and the residual after every iteration."""
    p = phi(mask, bands, step, axis)
    x = adjoint(y, mask, bands, step, axis)
    y1 = np.zeros(y.shape, EXACT)
    residuals = []
    for _ in range(iterations):
        yb = forward(x, mask, step, axis)
        y1 = y1 + (y - yb)
        x = x + lam * adjoint((y1 - yb) / p, mask, bands, step, axis)
        x = tv(x, tv_weight, tv_iterations)
        residuals.append(np.linalg.norm(y - forward(x, mask, step, axis)))
    return x, residuals


def admm_tv(y, mask, bands, step, axis, iterations, lam, gamma, tv_weight, tv_iterations):
    p = phi(mask, bands, step, axis)
    theta = adjoint(y, mask, bands, step, axis)
    b = np.zeros_like(theta)
    residuals = []
    for _ in range(iterations):
        v = theta + b
        x = v + lam * adjoint((y - forward(v, mask, step, axis)) / (p + gamma), mask, bands, step, axis)
        theta = tv(x - b, tv_weight, tv_iterations)
        b = b - (x - theta)
        residuals.append(np.linalg.norm(y - forward(theta, mask, step, axis)))
    return theta, residuals


def ssim(estimate, truth, data_range):
    """Wang et al. 2004 with an 11 x 11 Gaussian window (sigma 1.5), 'valid' windows."""
    from scipy.signal import correlate2d

    g = np.exp(-((np.arange(11) - 5.0) ** 2) / (2 * 1.5**2))
    window = np.outer(g, g) / np.outer(g, g).sum()
    e, t = estimate.astype(np.float64), truth.astype(np.float64)

    def mean(a):
        return correlate2d(a, window, mode="valid")

    mu_e, mu_t = mean(e), mean(t)
    var_e, var_t, cov = mean(e * e) - mu_e**2, mean(t * t) - mu_t**2, mean(e * t) - mu_e * mu_t
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * mu_e * mu_t + c1) * (2 * cov + c2)) / ((mu_e**2 + mu_t**2 + c1) * (var_e + var_t + c2))
    return s.mean()
