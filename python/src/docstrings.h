// Docstrings of hpipe's Python functions. Each starts with "name(signature)\n--\n\n", which
// CPython turns into __text_signature__ (inspect.signature, help()). Formulas, accuracy contracts
// and error bounds are the C++ headers' (runtime/include/hpipe/*.h); these summarize them.
#pragma once

namespace hpipe::python::docs {

#define HPIPE_ARRAYS                                                                                  \
  "\nArrays: NumPy arrays or anything with __dlpack__ (PyTorch CPU/CUDA tensors, CuPy), float32 or\n" \
  "float64, all of one dtype and on one device; any strides (transposed and broadcast views are\n"    \
  "read in place). The result goes into `out` (returned) or a new array of x's kind (NumPy in,\n"     \
  "NumPy out; tensor in, tensor on the same device out). device: 'auto' (CUDA when usable or the\n"   \
  "arrays are on a GPU), 'cpu' or 'cuda'. Raises hpipe.Error (a ValueError) for bad shapes and\n"     \
  "values and a read-only `out` (as NumPy), TypeError for a wrong dtype, kind or device mix.\n"

#define HPIPE_DISPERSION_ARGS                                                                  \
  "step: S, the displacement in pixels between neighbouring bands (any sign). axis: 'width'\n" \
  "(W' = W + (C - 1)|S|) or 'height' (H' = H + (C - 1)|S|). Band c is displaced by\n"          \
  "o_c = c S - min(0, (C - 1) S).\n"
#define HPIPE_CASSI_ARGS "mask: (H, W) shared by all bands, or (C, H, W) one per band.\n" HPIPE_DISPERSION_ARGS

inline constexpr const char *kError =
    "Raised by hpipe for bad arguments and kernel failures; the message names the function and\n"
    "the argument as Python names them, what was expected and what was given.";

inline constexpr const char *kIterationInfo =
    "Passed to the callback of gap_tv/admm_tv after every iteration: iteration (1-based),\n"
    "iterations (of the run) and residual, ||y - A x_k||_2 over the whole measurement.";

inline constexpr const char *kCassiForward =
    "cassi_forward(x, mask, step=2, axis='width', *, out=None, device='auto')\n--\n\n"
    "CASSI forward model A: masked, displaced bands summed into one measurement.\n\n"
    "    y[b, h, w'] = sum_c mask_c[h, w' - o_c] * x[b, c, h, w' - o_c]\n\n"
    "x: (B, C, H, W). Returns y: (B, H, W') (axis='width') or (B, H', W) (axis='height').\n" HPIPE_CASSI_ARGS
    "Accuracy: float32 sums are formed in float64 and rounded once (0.5 ULP); float64: up to\n"
    "C + 1 roundings.\n" HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> scene, mask = hpipe.synth(bands=28, height=64, width=64)\n"
    "    >>> y = hpipe.cassi_forward(scene[None], mask, step=2)\n"
    "    >>> y.shape\n"
    "    (1, 64, 118)\n";

inline constexpr const char *kCassiAdjoint =
    "cassi_adjoint(y, mask, bands=None, step=2, axis='width', *, out=None, device='auto')\n--\n\n"
    "Adjoint A^T of cassi_forward:  x[b, c, h, w] = mask_c[h, w] * y[b, h, w + o_c].\n\n"
    "y: (B, H, W') or (B, H', W). Returns x: (B, C, H, W). bands: C; taken from `out` or a per-band\n"
    "mask when not given.\n" HPIPE_CASSI_ARGS "Accuracy: one rounding.\n" HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> x = hpipe.cassi_adjoint(y, mask, bands=28)\n";

inline constexpr const char *kCassiPinv =
    "cassi_pinv(y, mask, bands=None, step=2, axis='width', *, out=None, device='auto')\n--\n\n"
    "Pseudo-inverse A+ y = A^T (y / Phi) (Phi: cassi_phi), so A(A+ y) = y for every y in the\n"
    "range of A.\n\n"
    "y: (B, H, W') or (B, H', W). Returns x: (B, C, H, W). bands: C; taken from `out` or a per-band\n"
    "mask when not given.\n" HPIPE_CASSI_ARGS "Accuracy: Phi's error plus two roundings.\n" HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> x = hpipe.cassi_pinv(hpipe.cassi_forward(cube, mask), mask, bands=cube.shape[1])\n";

inline constexpr const char *kCassiPinvAlpha =
    "cassi_pinv_alpha(y, mask, bands=None, step=2, axis='width', *, out=None, device='auto')\n--\n\n"
    "Column-count inverse: x[b, c, h, w] = (y / alpha)[b, h, w + o_c] / mask_c[h, w], alpha[w'] the\n"
    "number of bands covering column w'; 0 where the mask is 0 (never inf or NaN).\n\n"
    "y: (B, H, W') or (B, H', W). Returns x: (B, C, H, W). bands: C; taken from `out` or a per-band\n"
    "mask when not given.\n" HPIPE_CASSI_ARGS "Accuracy: four roundings.\n" HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> x = hpipe.cassi_pinv_alpha(y, mask, bands=28)\n";

inline constexpr const char *kCassiPhi =
    "cassi_phi(mask, bands=None, step=2, axis='width', *, out=None, device='auto')\n--\n\n"
    "Phi[h, w'] = sum_c mask_c[h, w' - o_c]^2 with zeros replaced by 1: A A^T = diag(Phi).\n\n"
    "Returns (H, W') or (H', W). bands: C (from a per-band mask when not given).\n" HPIPE_CASSI_ARGS
    "Accuracy: float32 0.5 ULP (float64 sums, one rounding).\n" HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> phi = hpipe.cassi_phi(mask, bands=28, step=2)\n";

inline constexpr const char *kCassiShift =
    "cassi_shift(x, step=2, axis='width', *, out=None, device='auto')\n--\n\n"
    "Unmasked displacement with zero padding: band c moves by o_c.\n\n"
    "x: (B, C, H, W). Returns (B, C, H, W') or (B, C, H', W). Exact.\n" HPIPE_DISPERSION_ARGS HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> shifted = hpipe.cassi_shift(cube, step=2)\n";

inline constexpr const char *kCassiShiftBack =
    "cassi_shift_back(shifted, step=2, axis='width', *, out=None, device='auto')\n--\n\n"
    "Inverse of cassi_shift, a crop per band.\n\n"
    "shifted: (B, C, H, W') or (B, C, H', W). Returns (B, C, H, W). Exact.\n" HPIPE_DISPERSION_ARGS HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> cube = hpipe.cassi_shift_back(hpipe.cassi_shift(cube, step=2), step=2)\n";

inline constexpr const char *kBatchedDot =
    "batched_dot(a, b, *, out=None, device='auto')\n--\n\n"
    "Row-wise dot products: out[i] = sum_k a[i, k] * b[i, k], NumPy's (a * b).sum(1).\n\n"
    "a, b: (N, K). Returns (N,). Row-major and column-major (transposed) views are read in place.\n"
    "Accuracy (S = sum_k |a[i, k] b[i, k]|): float32 |out - exact| <= 2^-24 |exact| + 66 2^-24 S,\n"
    "independent of K; float64 (100 + K / 1024) 2^-53 S.\n" HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> a = np.random.rand(500, 500).astype(np.float32)\n"
    "    >>> hpipe.batched_dot(a, a.T).shape     # a.T: a transposed view, no copy\n"
    "    (500,)\n";

inline constexpr const char *kConv1d =
    "conv1d(a, v, mode='full', *, out=None, device='auto')\n--\n\n"
    "Row-by-row np.convolve: out[i] = np.convolve(a[i], v[i], mode) (or v shared by every row).\n\n"
    "a: (N, La). v: (N, Lv), one kernel per row, or (Lv,). mode: 'full' (La + Lv - 1), 'same'\n"
    "(max(La, Lv)) or 'valid' (max - min + 1). Returns (N, L). La < Lv is legal, as in NumPy.\n"
    "Accuracy: each output is a sum of min(La, Lv) products in the element type. An output where\n"
    "a NaN or inf of the shorter operand falls past the longer one's ends is NaN (0 x inf;\n"
    "np.convolve leaves that term out); otherwise np.convolve's non-finite results.\n" HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> hpipe.conv1d(np.ones((5, 5)), np.ones((5, 7))).shape\n"
    "    (5, 11)\n";

#define HPIPE_ELEMENTWISE(name, formula, accuracy)                                                            \
  name "(x, *, out=None, device='auto')\n--\n\n" formula                                                      \
       "\n\nx: up to 8 dimensions (a 0-d array gives a scalar, as NumPy's ufuncs do; more than 4 where x's\n" \
       "and out's layouts merge into 4, as contiguous arrays and their slices do); returns the same\n"        \
       "shape, laid out as x (NumPy's order='K'); out may be x itself (in place). Special values as C's\n"    \
       "<cmath>.\n"                                                                                           \
       "Accuracy (max error, ULP, all float32 inputs and millions of float64 ones tested): " accuracy         \
       ".\n" HPIPE_ARRAYS "\nExample:\n    >>> hpipe." name "(np.linspace(0.5, 2, 4))\n"

inline constexpr const char *kExp = HPIPE_ELEMENTWISE("exp", "Elementwise e^x.", "float32 0.764, float64 0.768");
inline constexpr const char *kLog = HPIPE_ELEMENTWISE(
    "log", "Elementwise natural logarithm (log(0) = -inf, log(x < 0) = NaN).", "float32 0.827, float64 0.820");
inline constexpr const char *kErf =
    HPIPE_ELEMENTWISE("erf", "Elementwise error function (scipy.special.erf).",
                      "float32 1.155, float64 1.209 (1.337 / 1.355 on a CPU without AVX2)");

inline constexpr const char *kLogsumexp =
    "logsumexp(x, axis=None, *, out=None, device='auto')\n--\n\n"
    "log(sum(exp(x), axis)), as scipy.special.logsumexp(x, axis): shifted by the maximum, a row\n"
    "of all -inf gives -inf, any +inf gives +inf, NaN propagates. Sums in double.\n\n"
    "axis: an int (negative counts from the end), x of 1 to 4 dimensions: returns x's shape\n"
    "without it; None: every element (x of up to 8 dimensions, any layout, copied first where it is\n"
    "not C-contiguous; an empty x gives -inf):\n"
    "returns a NumPy scalar (a 0-d tensor for a tensor x, or written into a 0-d `out`).\n"
    "Accuracy: float32 within 1 ULP + 2^-23 absolute; float64 (n + 4) 2^-53 (1 + |result|) for n\n"
    "terms.\n" HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> x = np.random.rand(1000, 300)\n"
    "    >>> hpipe.logsumexp(x, axis=0).shape\n"
    "    (300,)\n";

inline constexpr const char *kTvDenoise =
    "tv_denoise(x, weight=0.1, iterations=5, vectorial=False, *, out=None, device='auto')\n--\n\n"
    "Chambolle's TV denoiser on every (batch, band) image, exactly as\n"
    "skimage.restoration.denoise_tv_chambolle(x[b], weight, max_num_iter=iterations, eps=0,\n"
    "channel_axis=0) (iterations n makes n - 1 dual steps). vectorial=True couples the bands\n"
    "(Bresson & Chan's vectorial TV).\n\n"
    "x: (B, C, H, W); returns the same shape. Accuracy: every operation in the element type\n"
    "(float32's divisor: a reciprocal estimate refined by one Newton step).\n" HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> smooth = hpipe.tv_denoise(noisy[None], weight=0.1, iterations=10)\n";

#define HPIPE_RECON_COMMON                                                                           \
  "y: (B, H, W') measurement; mask as for cassi_forward; bands: C (from `out` or a per-band mask\n"  \
  "when not given). lam > 0: the data step. tv_weight, tv_iterations, vectorial: the TV step (see\n" \
  "tv_denoise).\n"                                                                                   \
  "callback(info): called after every iteration with an hpipe.IterationInfo (iteration,\n"           \
  "iterations, residual); an exception it raises (or Ctrl-C) ends the run and leaves out= as it\n"   \
  "was (only the last iteration writes it; after the last, out= is written). progress: draw a\n"     \
  "progress bar on stderr. Returns x (B, C, H, W). On CUDA tensors the whole run stays on the\n"     \
  "device (a callback's residual brings A x back every iteration).\n"                                \
  "Accuracy: float32 residuals within 1e-5 relative of a float64 run after 20 iterations.\n"

inline constexpr const char *kGapTv =
    "gap_tv(y, mask, bands=None, step=2, axis='width', iterations=20, lam=1.0, accelerate=True, "
    "tv_weight=0.1, tv_iterations=5, vectorial=False, *, callback=None, progress=False, out=None, "
    "device='auto')\n--\n\n"
    "GAP-TV reconstruction of a CASSI measurement (Yuan 2016): from x = A^T y, per iteration\n"
    "    yb = A x;  y1 += y - yb;  x += lam A^T((y1 - yb) / Phi);  x = TV(x)\n"
    "(accelerate=False: x += lam A^T((y - yb) / Phi)).\n\n" HPIPE_RECON_COMMON HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> scene, mask = hpipe.synth(28, 64, 64)\n"
    "    >>> y = hpipe.cassi_forward(scene[None], mask)\n"
    "    >>> x = hpipe.gap_tv(y, mask, bands=28, iterations=20, progress=True)\n"
    "    >>> hpipe.psnr(x[0, 5], scene[5])\n";

inline constexpr const char *kAdmmTv =
    "admm_tv(y, mask, bands=None, step=2, axis='width', iterations=20, lam=1.0, gamma=0.01, "
    "tv_weight=0.1, tv_iterations=5, vectorial=False, *, callback=None, progress=False, out=None, "
    "device='auto')\n--\n\n"
    "ADMM-TV reconstruction of a CASSI measurement: from theta = A^T y, b = 0, per iteration\n"
    "    x = (theta + b) + lam A^T((y - A(theta + b)) / (Phi + gamma))\n"
    "    theta = TV(x - b);  b -= x - theta\n"
    "Returns theta.\n\n" HPIPE_RECON_COMMON HPIPE_ARRAYS
    "\nExample:\n"
    "    >>> x = hpipe.admm_tv(y, mask, bands=28, callback=lambda i: print(i.residual))\n";

inline constexpr const char *kPsnr =
    "psnr(estimate, truth, peak=1.0, *, device='auto')\n--\n\n"
    "Peak signal-to-noise ratio 10 log10(peak^2 / MSE) in dB (inf when equal) of two (H, W) host\n"
    "images of one dtype. Accuracy: computed in double. device: 'auto' or 'cpu'.\n"
    "\nExample:\n"
    "    >>> hpipe.psnr(x[0, 5], scene[5])\n";

inline constexpr const char *kSsim =
    "ssim(estimate, truth, data_range=1.0, *, device='auto')\n--\n\n"
    "SSIM of Wang et al. 2004 (11 x 11 Gaussian window, sigma 1.5, K1 = 0.01, K2 = 0.03), the mean\n"
    "over every window inside the image; equal to skimage's structural_similarity with\n"
    "gaussian_weights=True, use_sample_covariance=False. Two (H, W) host images, H, W >= 11.\n"
    "Accuracy: computed in double. device: 'auto' or 'cpu'.\n"
    "\nExample:\n"
    "    >>> hpipe.ssim(x[0, 5], scene[5])\n";

inline constexpr const char *kSynth =
    "synth(bands=28, height=256, width=256, seed=1, *, device='auto')\n--\n\n"
    "Deterministic synthetic data, the same on every machine: returns (scene, mask), NumPy\n"
    "float32 arrays: scene (bands, height, width) in [0, 1] (smooth background, shapes with their\n"
    "own spectra), mask (height, width) uniform in (0, 1] from `seed`. device: 'auto' or 'cpu'.\n"
    "\nExample:\n"
    "    >>> scene, mask = hpipe.synth(28, 256, 256)\n";

inline constexpr const char *kSetNumThreads =
    "set_num_threads(n)\n--\n\n"
    "Sets the number of CPU worker threads of the kernels (default: the number of cores, or\n"
    "HL_NUM_THREADS; hpipe.Error beyond hpipe's limit). Idle workers spin 1 ms for the next call\n"
    "before they sleep, so that calls in quick succession find them awake;\n"
    "HPIPE_SPIN_US=<microseconds> at start-up sets that time (0: they sleep at once, for processes\n"
    "that share their cores with other busy ones).";
inline constexpr const char *kNumThreads = "num_threads()\n--\n\nThe number of CPU worker threads of the kernels.";
inline constexpr const char *kCudaAvailable =
    "cuda_available()\n--\n\n"
    "Whether CUDA kernels can run here (hpipe built with CUDA, a driver and a device present).";
inline constexpr const char *kCudaUnavailableReason =
    "cuda_unavailable_reason()\n--\n\nWhy cuda_available() is False ('' when it is True).";

#undef HPIPE_RECON_COMMON
#undef HPIPE_ELEMENTWISE
#undef HPIPE_CASSI_ARGS
#undef HPIPE_ARRAYS

}  // namespace hpipe::python::docs
