"""hpipe.torch: gradients (gradcheck and gradgradcheck in float64), forward values against
independent torch references, CassiOperator, and the same checks on CUDA where it is usable."""
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import hpipe  # noqa: E402
import hpipe.torch as ht  # noqa: E402


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


def offsets(bands, step):
    return [c * step - min(0, (bands - 1) * step) for c in range(bands)]


def as_width(t, axis):
    """Views with the dispersion axis last: the references below are written for width."""
    return t if axis == "width" else t.transpose(-1, -2)


def reference_forward(x, mask, step, axis):
    x, masks = as_width(x, axis), as_width(mask.expand(x.shape[1], *mask.shape[-2:]), axis)
    bands, width = x.shape[1], x.shape[-1]
    y = x.new_zeros(*x.shape[:1], x.shape[2], width + (bands - 1) * abs(step))
    for c, o in enumerate(offsets(bands, step)):
        y[:, :, o:o + width] += masks[c] * x[:, c]
    return as_width(y, axis)


def reference_adjoint(y, mask, bands, step, axis):
    y, masks = as_width(y, axis), as_width(mask.expand(bands, *mask.shape[-2:]), axis)
    width = masks.shape[-1]
    x = torch.stack([masks[c] * y[:, :, o:o + width] for c, o in enumerate(offsets(bands, step))], 1)
    return as_width(x, axis)


def reference_phi(mask, bands, step, axis):
    cube = torch.ones(1, bands, *mask.shape[-2:], dtype=mask.dtype, device=mask.device)
    phi = reference_forward(cube, mask * mask, step, axis)[0]
    return torch.where(phi == 0, torch.ones_like(phi), phi)


def reference_shift(x, step, axis):
    x = as_width(x, axis)
    bands, width = x.shape[1], x.shape[-1]
    shifted = x.new_zeros(*x.shape[:-1], width + (bands - 1) * abs(step))
    for c, o in enumerate(offsets(bands, step)):
        shifted[:, c, :, o:o + width] = x[:, c]
    return as_width(shifted, axis)


def reference_shift_back(shifted, width, step, axis):
    shifted = as_width(shifted, axis)
    return as_width(torch.stack([shifted[:, c, :, o:o + width]
                                 for c, o in enumerate(offsets(shifted.shape[1], step))], 1), axis)


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
    exact = {"x": x.double(), "mask": mask.double(), "y": y.double()}
    phi = reference_phi(exact["mask"], C, step, axis)
    expected = {
        "forward": (ht.cassi_forward(x, mask, step, axis), reference_forward(exact["x"], exact["mask"], step, axis)),
        "adjoint": (ht.cassi_adjoint(y, mask, C, step, axis),
                    reference_adjoint(exact["y"], exact["mask"], C, step, axis)),
        "phi": (ht.cassi_phi(mask, C, step, axis), phi),
        "pinv": (ht.cassi_pinv(y, mask, C, step, axis), reference_adjoint(exact["y"] / phi, exact["mask"], C, step, axis)),
        "shift": (ht.cassi_shift(x, step, axis), reference_shift(exact["x"], step, axis)),
    }
    expected["shift_back"] = (ht.cassi_shift_back(expected["shift"][0], step, axis), exact["x"])
    for name, (got, want) in expected.items():
        assert got.device == x.device and got.dtype == dtype, name
        torch.testing.assert_close(got.double(), want, msg=lambda m: f"{name}: {m}", **tolerance(dtype, bands=C))


def tolerance(dtype, bands=1):
    """Sums of `bands` terms, each rounded in the element type, against float64 references."""
    eps = torch.finfo(dtype).eps
    return {"rtol": 4 * bands * eps, "atol": 4 * bands * eps}


def test_reference_shift_back_inverts_reference_shift():
    # The references check each other: shift_back(shift(x)) = x for every step and axis.
    x = rand(B, C, H, W)
    for step, axis, _ in CASSI_CASES:
        shifted = reference_shift(x, step, axis)
        torch.testing.assert_close(reference_shift_back(shifted, (W if axis == "width" else H), step, axis), x)


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


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_small_ops_on_device(device, dtype):
    # Forward and backward on the device, against the same computation in float64 on the CPU.
    a, v = rand(5, 5, device=device, dtype=dtype, seed=1), rand(5, 7, device=device, dtype=dtype, seed=2)
    x = rand(3, 4, device=device, dtype=dtype, low=0.1, seed=3)
    calls = {
        "batched_dot": (ht.batched_dot, (a, v[:, :5])),
        "conv1d": (lambda a, v: ht.conv1d(a, v, "same"), (a, v)),
        "exp": (ht.exp, (x,)), "log": (ht.log, (x,)), "erf": (ht.erf, (x,)),
        "logsumexp": (lambda x: ht.logsumexp(x, 0), (x,)),
    }
    for name, (fn, inputs) in calls.items():
        inputs = [t.clone().requires_grad_() for t in inputs]
        exact = [t.detach().cpu().double().requires_grad_() for t in inputs]
        got, want = fn(*inputs), fn(*exact)
        assert got.device == inputs[0].device and got.dtype == dtype, name
        got.sum().backward()
        want.sum().backward()
        for result, reference in itertools.chain([(got, want)], ((t.grad, e.grad) for t, e in zip(inputs, exact))):
            torch.testing.assert_close(result.detach().cpu().double(), reference.detach(), msg=lambda m: f"{name}: {m}",
                                       **tolerance(dtype, bands=8))


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


def test_cassi_operator_trains_an_unrolled_step():
    """A GAP-Net style step with a trainable aperture and step size: gradients reach both, and match
    the same step written with the torch references."""
    x, mask, _ = cassi_inputs(2, "width", False, "cpu")
    op = ht.CassiOperator(torch.nn.Parameter(mask.clone()), bands=C)
    alpha = torch.nn.Parameter(torch.tensor(0.5, dtype=torch.float64))
    assert [p is op.mask for p in op.parameters()] == [True]

    def loss(forward, adjoint, phi):
        y = forward(x)
        z = adjoint(y) * 0.5
        estimate = z + adjoint((y - forward(z)) / (alpha + phi()))
        return (estimate - x).square().mean()

    loss(op, op.adjoint, op.phi).backward()
    grads = (op.mask.grad.clone(), alpha.grad.clone())
    op.mask.grad, alpha.grad = None, None
    loss(lambda x: reference_forward(x, op.mask, 2, "width"), lambda y: reference_adjoint(y, op.mask, C, 2, "width"),
         lambda: reference_phi(op.mask, C, 2, "width")).backward()
    torch.testing.assert_close(grads, (op.mask.grad, alpha.grad))


def test_cassi_operator_buffer_moves_with_the_module():
    op = ht.CassiOperator(rand(C, H, W, low=0.1, dtype=torch.float32)).to(torch.float64)
    assert op.mask.dtype == torch.float64 and "mask" in dict(op.named_buffers())
    x = rand(B, C, H, W)
    torch.testing.assert_close(op(x), reference_forward(x, op.mask, 2, "width"))
