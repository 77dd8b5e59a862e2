"""hpipe.torch: gradients (gradcheck and gradgradcheck in float64), forward values against
independent torch references, CassiOperator, and the same checks on CUDA where it is usable."""
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import hpipe  # noqa: E402
import hpipe.torch as ht  # noqa: E402
import reference as ref  # noqa: E402


def _cuda_unusable_reason():
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False"
    if not hpipe.cuda_available():
        return "hpipe: " + hpipe.cuda_unavailable_reason()
    return None


DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(_cuda_unusable_reason() is not None,
                                                  reason=f"CUDA not usable: {_cuda_unusable_reason()}")),
]


def rand(*shape, device="cpu", dtype=torch.float64, low=0.0, high=1.0, seed=0, requires_grad=False):
    gen = torch.Generator().manual_seed(seed)
    t = (torch.rand(*shape, generator=gen, dtype=dtype) * (high - low) + low).to(device)
    return t.requires_grad_(requires_grad)


def check_gradients(fn, *inputs):
    """First and second derivatives of fn against finite differences (float64 inputs)."""
    assert torch.autograd.gradcheck(fn, inputs)
    assert torch.autograd.gradgradcheck(fn, inputs)


# --- CASSI ---------------------------------------------------------------------------------------
# (step, axis, per_band mask): signs, zero step, both axes, both mask kinds.
CASSI_CASES = [(2, "width", False), (-1, "height", True), (0, "width", True), (3, "height", False),
               (-2, "width", True)]
B, C, H, W = 2, 3, 4, 5


def exact(t):
    """A tensor as the NumPy array the references of reference.py take."""
    return t.detach().cpu().numpy()


def as_torch(reference_result):
    return torch.from_numpy(np.asarray(reference_result, dtype=np.float64))


def cassi_inputs(step, axis, per_band, device, dtype=torch.float64, requires_grad=False):
    """x (B, C, H, W), a mask in [0.1, 1] (Φ > 0), and y of the measurement's shape."""
    x = rand(B, C, H, W, device=device, dtype=dtype, seed=1, requires_grad=requires_grad)
    mask = rand(*((C,) if per_band else ()), H, W, device=device, dtype=dtype, low=0.1, seed=2,
                requires_grad=requires_grad)
    spread = (C - 1) * abs(step)
    shape = (B, H, W + spread) if axis == "width" else (B, H + spread, W)
    y = rand(*shape, device=device, dtype=dtype, seed=3, requires_grad=requires_grad)
    return x, mask, y


@pytest.mark.parametrize("step,axis,per_band", CASSI_CASES)
def test_cassi_gradients(step, axis, per_band):
    x, mask, y = cassi_inputs(step, axis, per_band, "cpu", requires_grad=True)
    check_gradients(lambda x, m: ht.cassi_forward(x, m, step, axis), x, mask)
    check_gradients(lambda y, m: ht.cassi_adjoint(y, m, C, step, axis), y, mask)
    check_gradients(lambda m: ht.cassi_phi(m, C, step, axis), mask)
    check_gradients(lambda y, m: ht.cassi_pinv(y, m, C, step, axis), y, mask)
    shifted = rand(*ht.cassi_shift(x, step, axis).shape, seed=4, requires_grad=True)
    check_gradients(lambda x: ht.cassi_shift(x, step, axis), x)
    check_gradients(lambda s: ht.cassi_shift_back(s, step, axis), shifted)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("step,axis,per_band", CASSI_CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cassi_values(step, axis, per_band, dtype, device):
    x, mask, y = cassi_inputs(step, axis, per_band, device, dtype)
    shifted = ht.cassi_shift(x, step, axis)
    results = {
        "forward": (ht.cassi_forward(x, mask, step, axis), ref.forward(exact(x), exact(mask), step, axis)),
        "adjoint": (ht.cassi_adjoint(y, mask, C, step, axis), ref.adjoint(exact(y), exact(mask), C, step, axis)),
        "phi": (ht.cassi_phi(mask, C, step, axis), ref.phi(exact(mask), C, step, axis)),
        "pinv": (ht.cassi_pinv(y, mask, C, step, axis), ref.pinv(exact(y), exact(mask), C, step, axis)),
        "shift": (shifted, ref.shift(exact(x), step, axis)),
        "shift_back": (ht.cassi_shift_back(shifted, step, axis), exact(x)),
    }
    for name, (got, want) in results.items():
        assert got.device == x.device and got.dtype == dtype, name
        torch.testing.assert_close(got.cpu().double(), as_torch(want), msg=lambda m: f"{name}: {m}",
                                   **tolerance(dtype, bands=C))


def tolerance(dtype, bands=1):
    """Sums of `bands` terms, each rounded in the element type, against exact references."""
    eps = torch.finfo(dtype).eps
    return {"rtol": 4 * bands * eps, "atol": 4 * bands * eps}


@pytest.mark.parametrize("batch,bands", [(1, 3), (2, 1), (1, 1)])
@pytest.mark.parametrize("per_band", [False, True])
def test_cassi_gradients_of_one_image_or_one_band(batch, bands, per_band):
    x = rand(batch, bands, H, W, seed=1, requires_grad=True)
    mask = rand(*((bands,) if per_band else ()), H, W, low=0.1, seed=2, requires_grad=True)
    y = rand(batch, H, W + (bands - 1) * 2, seed=3, requires_grad=True)
    check_gradients(ht.cassi_forward, x, mask)
    check_gradients(lambda y, m: ht.cassi_pinv(y, m, bands), y, mask)


def test_cassi_mask_gradient_through_expanded_and_noncontiguous_inputs():
    # A broadcast (expanded) mask and a transposed cube: gradients reach the original tensors.
    x = rand(B, C, W, H, seed=1, requires_grad=True)
    mask_row = rand(W, low=0.1, seed=2, requires_grad=True)
    check_gradients(lambda x, m: ht.cassi_forward(x.transpose(2, 3), m.expand(H, W), 2, "width"), x, mask_row)


# --- batched dot, conv1d, transcendentals ----------------------------------------------------------
def test_batched_dot_gradients_and_values():
    a, b = rand(7, 11, seed=1, requires_grad=True), rand(7, 11, seed=2, requires_grad=True)
    check_gradients(ht.batched_dot, a, b)
    check_gradients(lambda a, b: ht.batched_dot(a.t(), b.t()), rand(11, 7, seed=3, requires_grad=True),
                    rand(11, 7, seed=4, requires_grad=True))
    torch.testing.assert_close(ht.batched_dot(a, b), (a * b).sum(1))


CONV_LENGTHS = [(7, 3), (3, 6), (5, 5), (1, 4), (6, 1), (9, 2)]


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("la,lv", CONV_LENGTHS)
@pytest.mark.parametrize("shared", [False, True])
def test_conv1d_gradients_and_values(mode, la, lv, shared):
    a = rand(3, la, seed=1, low=-1, requires_grad=True)
    v = rand(*(() if shared else (3,)), lv, seed=2, low=-1, requires_grad=True)
    check_gradients(lambda a, v: ht.conv1d(a, v, mode), a, v)
    kernels = v.detach().expand(3, lv).numpy()
    want = np.stack([np.convolve(row, kernel, mode) for row, kernel in zip(a.detach().numpy(), kernels)])
    torch.testing.assert_close(ht.conv1d(a, v, mode), torch.from_numpy(want))


# (function, torch reference, input range): log on positive inputs.
ELEMENTWISE = [(ht.exp, torch.exp, (-3, 3)), (ht.log, torch.log, (0.1, 4)), (ht.erf, torch.erf, (-3, 3))]


@pytest.mark.parametrize("fn,reference,bounds", ELEMENTWISE)
@pytest.mark.parametrize("shape", [(9,), (3, 5), (2, 3, 5), (2, 1, 3, 4)])
def test_elementwise_gradients_and_values(fn, reference, bounds, shape):
    x = rand(*shape, low=bounds[0], high=bounds[1], requires_grad=True)
    check_gradients(fn, x)
    torch.testing.assert_close(fn(x), reference(x))


@pytest.mark.parametrize("shape,axis", [((4, 5), 0), ((4, 5), 1), ((3, 4, 5), -1), ((3, 4, 5), 1),
                                        ((2, 3, 2, 3), 2), ((7,), None), ((3, 4), None)])
def test_logsumexp_gradients_and_values(shape, axis):
    x = rand(*shape, low=-4, high=4, requires_grad=True)
    check_gradients(lambda x: ht.logsumexp(x, axis), x)
    want = torch.logsumexp(x, dim=tuple(range(x.dim())) if axis is None else axis)
    torch.testing.assert_close(ht.logsumexp(x, axis), want)


# Each function with arguments that require grad (the mask too, where there is one).
WITHOUT_GRAPH = [
    (lambda x, m, y: ht.cassi_forward(x, m, 2)),
    (lambda x, m, y: ht.cassi_adjoint(y, m, C, 2)),
    (lambda x, m, y: ht.cassi_pinv(y, m, C, 2)),
    (lambda x, m, y: ht.cassi_phi(m, C, 2)),
    (lambda x, m, y: ht.cassi_shift(x, 2)),
    (lambda x, m, y: ht.batched_dot(x.reshape(B, -1), x.reshape(B, -1))),
    (lambda x, m, y: ht.conv1d(x.reshape(-1, W), m[0])),
    (lambda x, m, y: ht.erf(x)),
    (lambda x, m, y: ht.logsumexp(x, 1)),
]


@pytest.mark.parametrize("fn", WITHOUT_GRAPH)
def test_calls_outside_autograd_record_nothing_and_agree(fn):
    # Without a graph to record (grad mode off, or no argument that requires grad) the functions
    # skip autograd's node: the same values, no grad_fn, and arguments that require grad accepted.
    x, mask, y = cassi_inputs(2, "width", False, "cpu", requires_grad=True)
    recorded = fn(x, mask, y)
    assert recorded.grad_fn is not None
    with torch.no_grad():
        plain = fn(x, mask, y)
    assert plain.grad_fn is None and not plain.requires_grad
    torch.testing.assert_close(plain, recorded.detach(), rtol=0, atol=0)
    detached = fn(x.detach(), mask.detach(), y.detach())
    assert detached.grad_fn is None
    torch.testing.assert_close(detached, plain, rtol=0, atol=0)


def test_empty_batches_flow_forward_and_backward():
    x = torch.rand(0, 4, 8, 8, dtype=torch.float64, requires_grad=True)
    ht.cassi_forward(x, torch.rand(8, 8, dtype=torch.float64)).sum().backward()
    assert x.grad.shape == x.shape
    # A trainable mask of a batch of 0 gets a gradient of 0 (the backward pass raised: a reshape
    # to (0, -1) has nothing to infer -1 from).
    y = torch.rand(0, 8, 14, dtype=torch.float64)
    for mask_shape in [(8, 8), (4, 8, 8)]:
        calls = {"cassi_forward": lambda m: ht.cassi_forward(x.detach(), m),
                 "cassi_adjoint": lambda m: ht.cassi_adjoint(y, m, 4),
                 "cassi_pinv": lambda m: ht.cassi_pinv(y, m, 4)}
        for name, call in calls.items():
            mask = torch.rand(*mask_shape, dtype=torch.float64, requires_grad=True)
            call(mask).sum().backward()
            torch.testing.assert_close(mask.grad, torch.zeros_like(mask), rtol=0, atol=0, msg=f"{name} {mask_shape}")
    rows = torch.rand(3, 0, dtype=torch.float64, requires_grad=True)
    result = ht.logsumexp(rows, axis=1)
    torch.testing.assert_close(result, torch.logsumexp(rows.detach(), dim=1))
    result.sum().backward()
    assert rows.grad.shape == rows.shape


def every_call(device, dtype):
    """Each function of hpipe.torch with inputs of `dtype` on `device`: name -> (function, inputs)."""
    a, v = rand(5, 5, device=device, dtype=dtype, seed=1), rand(5, 7, device=device, dtype=dtype, seed=2)
    x = rand(3, 4, device=device, dtype=dtype, low=0.1, seed=3)
    cube, mask, y = cassi_inputs(2, "width", False, device, dtype)
    return {
        "cassi_forward": (ht.cassi_forward, (cube, mask)),
        "cassi_adjoint": (lambda y, m: ht.cassi_adjoint(y, m, C), (y, mask)),
        "cassi_phi": (lambda m: ht.cassi_phi(m, C), (mask,)),
        "cassi_pinv": (lambda y, m: ht.cassi_pinv(y, m, C), (y, mask)),
        "cassi_shift": (ht.cassi_shift, (cube,)),
        "cassi_shift_back": (ht.cassi_shift_back, (y.unsqueeze(1).expand(B, C, *y.shape[1:]),)),
        "batched_dot": (ht.batched_dot, (a, v[:, :5])),
        "conv1d": (lambda a, v: ht.conv1d(a, v, "same"), (a, v)),
        "exp": (ht.exp, (x,)), "log": (ht.log, (x,)), "erf": (ht.erf, (x,)),
        "logsumexp": (lambda x: ht.logsumexp(x, 0), (x,)),
    }


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_and_backward_on_device(device, dtype):
    """Every op on the device against the same computation in float64 on the CPU; `sum()` hands
    the backward passes a broadcast (stride 0) gradient."""
    for name, (fn, inputs) in every_call(device, dtype).items():
        inputs = [t.clone().requires_grad_() for t in inputs]
        references = [t.detach().cpu().double().requires_grad_() for t in inputs]
        got, want = fn(*inputs), fn(*references)
        assert got.device == inputs[0].device and got.dtype == dtype, name
        got.sum().backward()
        want.sum().backward()
        pairs = itertools.chain([(got, want)], ((t.grad, r.grad) for t, r in zip(inputs, references)))
        for result, reference in pairs:
            torch.testing.assert_close(result.detach().cpu().double(), reference.detach(), msg=lambda m: f"{name}: {m}",
                                       **tolerance(dtype, bands=8))


# --- reconstruction -------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["gap_tv", "admm_tv"])
@pytest.mark.parametrize("device", DEVICES)
def test_reconstruction_of_tensors_on_their_device(method, device):
    """gap_tv / admm_tv of tensors: a tensor on their device, as the float64 reference computes it,
    residuals too (on CUDA the whole run stays on the device)."""
    x = rand(B, C, H, W, device=device, seed=1)
    mask = rand(C, H, W, device=device, low=0.1, seed=2)
    y = hpipe.cassi_forward(x, mask, step=1)
    kwargs = dict(iterations=4, lam=0.9, tv_weight=0.05, tv_iterations=3)
    extra = {"gamma": 0.02} if method == "admm_tv" else {}
    expected, residuals = getattr(ref, method)(exact(y), exact(mask), C, 1, "width", **kwargs, **extra)
    infos = []
    result = getattr(hpipe, method)(y, mask, bands=C, step=1, **kwargs, **extra, callback=infos.append)
    assert result.device == y.device and result.dtype == torch.float64
    np.testing.assert_allclose(exact(result), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose([i.residual for i in infos], residuals, rtol=1e-9)
    out = torch.full_like(x, float("nan"))
    assert getattr(hpipe, method)(y, mask, bands=C, step=1, **kwargs, **extra, out=out) is out
    assert torch.equal(out, result)
    torch.testing.assert_close(hpipe.tv_denoise(result).cpu(), hpipe.tv_denoise(result.cpu()), rtol=0, atol=1e-12)


# --- torch.autocast -------------------------------------------------------------------------------
# The autocast dtype each device's region takes (torch 1.13's CPU autocast takes bfloat16 only).
AUTOCAST_DTYPE = {"cpu": torch.bfloat16, "cuda": torch.float16}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16])
def test_autocast_runs_low_precision_tensors_in_float32(device, low):
    """Inside torch.autocast every function takes float16 / bfloat16 tensors as float32 (as torch's
    float32-policy ops do): the result is float32 and equal to the call on the tensors cast to float32,
    and each input's gradient comes back in its own type, equal to the float32 gradient cast to it."""
    for name, (fn, inputs) in every_call(device, torch.float32).items():
        lows = [t.to(low).requires_grad_() for t in inputs]
        float32s = [t.detach().float().requires_grad_() for t in lows]
        with torch.autocast(device, dtype=AUTOCAST_DTYPE[device]):
            got = fn(*lows)
        want = fn(*float32s)
        assert got.dtype == torch.float32, name
        torch.testing.assert_close(got, want, rtol=0, atol=0, msg=lambda m: f"{name}: {m}")
        got.sum().backward()
        want.sum().backward()
        for t, r in zip(lows, float32s):
            assert t.grad.dtype == low, name
            torch.testing.assert_close(t.grad, r.grad.to(low), rtol=0, atol=0, msg=lambda m: f"{name}: {m}")


def test_autocast_leaves_float32_and_float64_alone_and_mixes_with_a_float32_aperture():
    x, mask, _ = cassi_inputs(2, "width", False, "cpu")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert ht.cassi_forward(x, mask).dtype == torch.float64
        # An unrolled network's bfloat16 activations beside its float32 trainable aperture.
        aperture = torch.nn.Parameter(mask.float())
        op = ht.CassiOperator(aperture, bands=C)
        y = op(x.bfloat16())
        assert y.dtype == torch.float32
        op.adjoint(y.bfloat16()).sum().backward()
    assert aperture.grad is not None and aperture.grad.dtype == torch.float32


def test_autocast_mixing_low_precision_and_float64_says_what_it_cast():
    x, mask, _ = cassi_inputs(2, "width", False, "cpu")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(TypeError, match=r"mask: expected float32 like x, got float64 \(inside torch.autocast, "
                                            r"float16 and bfloat16 tensors are taken as float32\)"):
            ht.cassi_forward(x.bfloat16(), mask)


def test_low_precision_outside_autocast_is_refused_naming_the_argument():
    x, mask, _ = cassi_inputs(2, "width", False, "cpu")
    for low in (torch.float16, torch.bfloat16):
        with pytest.raises(TypeError, match=f"x: expected float32 or float64, got {str(low)[6:]}"):
            ht.cassi_forward(x.to(low), mask.float())
        with pytest.raises(TypeError, match="x: expected float32 or float64"):
            ht.exp(x.to(low))


# --- CassiOperator ---------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("step,axis,per_band", CASSI_CASES)
def test_cassi_operator(step, axis, per_band, device):
    x, mask, y = cassi_inputs(step, axis, per_band, device)
    op = ht.CassiOperator(mask, step, axis, bands=None if step else C)
    torch.testing.assert_close(op(x), ht.cassi_forward(x, mask, step, axis))
    torch.testing.assert_close(op.adjoint(y), ht.cassi_adjoint(y, mask, C, step, axis))
    torch.testing.assert_close(op.pinv(y), ht.cassi_pinv(y, mask, C, step, axis))
    if op.bands is not None:
        torch.testing.assert_close(op.phi(), ht.cassi_phi(mask, C, step, axis))
    # The adjoint identity <A x, y> = <x, Aᵀ y>, and A A⁺ = identity on the range of A.
    torch.testing.assert_close((op(x) * y).sum(), (x * op.adjoint(y)).sum())
    torch.testing.assert_close(op(op.pinv(op(x))), op(x))


def test_cassi_operator_needs_bands_for_phi_of_a_shared_mask():
    op = ht.CassiOperator(rand(H, W, low=0.1))
    with pytest.raises(hpipe.Error, match="bands"):
        op.phi()
    assert ht.CassiOperator(rand(H, W, low=0.1), bands=C).phi().shape == (H, W + (C - 1) * 2)


def test_cassi_operator_in_an_unrolled_step():
    """A GAP-Net style step: its gradients with respect to the aperture, the step size and the
    measurement pass gradcheck; an nn.Parameter mask is the module's parameter."""
    x, mask, _ = cassi_inputs(2, "width", False, "cpu")
    y = ht.cassi_forward(x, mask).requires_grad_()
    alpha = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)

    def step(mask, alpha, y):
        op = ht.CassiOperator(mask, bands=C)
        z = op.adjoint(y) * 0.5
        return z + op.adjoint((y - op(z)) / (alpha + op.phi()))

    check_gradients(step, mask.requires_grad_(), alpha, y)
    op = ht.CassiOperator(torch.nn.Parameter(mask.detach().clone()), bands=C)
    assert [p is op.mask for p in op.parameters()] == [True]
    step(op.mask, alpha, y).square().sum().backward()
    assert op.mask.grad is not None and op.mask.grad.shape == (H, W)


def test_cassi_operator_buffer_moves_with_the_module():
    op = ht.CassiOperator(rand(C, H, W, low=0.1, dtype=torch.float32)).to(torch.float64)
    assert op.mask.dtype == torch.float64 and "mask" in dict(op.named_buffers())
    x = rand(B, C, H, W)
    torch.testing.assert_close(op(x), as_torch(ref.forward(exact(x), exact(op.mask), 2, "width")))


def test_bad_arguments_raise_hpipe_errors_and_leave_inputs_alone():
    x, mask, _ = cassi_inputs(2, "width", False, "cpu", requires_grad=True)
    before = (x.detach().clone(), mask.detach().clone())
    with pytest.raises(TypeError, match="mask"):
        ht.cassi_forward(x, mask.float())
    with pytest.raises(hpipe.Error, match="mask"):
        ht.cassi_forward(x, mask[:, :-1])
    ht.cassi_forward(x, mask).sum().backward()
    assert torch.equal(x.detach(), before[0]) and torch.equal(mask.detach(), before[1])
    # NumPy arrays belong to hpipe's own functions; hpipe.torch says so.
    with pytest.raises(TypeError, match="hpipe.torch: expected torch.Tensor arguments, got numpy.ndarray"):
        ht.exp(np.ones(3))
