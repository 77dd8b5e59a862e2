"""hpipe's differentiable operations as PyTorch autograd functions, and CassiOperator.

Each function has the signature of the hpipe function of the same name (without `out=`; the
device is the tensors' own) and takes and returns torch tensors, CPU or CUDA, float32 or float64
(float16 and bfloat16 too inside torch.autocast, computed and returned in float32).
Gradients flow to every tensor argument, the CASSI mask included (trainable coded apertures).
Forward and backward passes run hpipe kernels: the backward of A is Aᵀ, of a convolution a
convolution with the flipped operand, of exp its own output; only elementwise products and the
reductions of a shared operand's gradient over the batch are torch operations. Backward passes are
written with these same functions, so second derivatives work too.

    import hpipe.torch as ht
    y = ht.cassi_forward(x, mask, step=2)     # mask may require grad
    y.square().sum().backward()               # x.grad = 2 Aᵀ y, mask.grad likewise
"""
import functools
import math

import torch

import hpipe


def _detached(*tensors):
    # hpipe refuses tensors that require grad (detach() costs about 0.9 us, so only those).
    try:
        return tuple(t.detach() if t.requires_grad else t for t in tensors)
    except AttributeError:  # not tensors: said once here, not per function
        kinds = ", ".join(type(t).__module__ + "." + type(t).__name__ for t in tensors)
        raise TypeError(f"hpipe.torch: expected torch.Tensor arguments, got {kinds}; hpipe's own functions take "
                        "NumPy arrays") from None


class _NoGraph:
    """The context of a forward run outside autograd: what it keeps for backward is dropped."""

    def save_for_backward(self, *tensors):
        pass


_LOW_PRECISION = (torch.float16, torch.bfloat16)

# Whether an autocast region is active, per device type.
try:  # torch >= 2.4 asks by device type
    torch.is_autocast_enabled("cpu")
    _AUTOCAST_ON = {d: functools.partial(torch.is_autocast_enabled, d) for d in ("cpu", "cuda")}
except TypeError:  # torch 1.13: the CPU's own query, the plain one for CUDA
    _AUTOCAST_ON = {"cpu": torch.is_autocast_cpu_enabled, "cuda": torch.is_autocast_enabled}


def _in_float32(args):
    """Inside torch.autocast hpipe.torch runs in float32, as torch's float32-policy ops on CUDA (exp,
    log, logsumexp) do: float16 and bfloat16 tensors of a device in an autocast region are cast to
    float32 (differentiably: their gradients come back in their own type); others, float64 too, stay."""
    def in_region(t):
        query = _AUTOCAST_ON.get(t.device.type)
        return query is not None and query()

    return tuple(
        a.to(torch.float32) if isinstance(a, torch.Tensor) and a.dtype in _LOW_PRECISION and in_region(a) else a
        for a in args)


def _run(function, *args):
    """function.apply(*args) where autograd records a graph; elsewhere (no tensor argument requires
    grad, or grad mode is off, as in inference and in backward passes without create_graph) its
    forward alone, without the autograd node and its cost (docs/python.md). Inside torch.autocast,
    low-precision tensors are taken in float32 (_in_float32): asked only when hpipe has refused a
    type, so that other calls pay nothing for it (hpipe checks types before any work)."""
    try:
        return _apply(function, args)
    except TypeError:
        in_float32 = _in_float32(args)
        if all(cast is given for cast, given in zip(in_float32, args)):
            raise
    try:
        return _apply(function, in_float32)
    except TypeError as error:  # its message names the types after the cast: say so
        raise TypeError(f"{error} (inside torch.autocast, float16 and bfloat16 tensors are taken as float32)") from None


def _apply(function, args):
    if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        return function.apply(*args)
    return function.forward(_NoGraph(), *args)


def _mask_gradient(cube, measurement, mask, step, axis):
    """Σ_b cube[b, c, h, w] · measurement[b, h, w + o_c], summed over c as well for a shared mask.

    This is the gradient, with respect to the mask, of <measurement, A cube> (cassi_forward) and
    of <cube, Aᵀ measurement> (cassi_adjoint). The displaced measurement comes from the adjoint
    with a mask of ones; the sum over the batch (and bands) is one batched dot product over
    transposed views, which hpipe reads in place.
    """
    batch, bands, height, width = cube.shape
    ones = torch.ones(height, width, dtype=cube.dtype, device=cube.device)
    displaced = cassi_adjoint(measurement, ones, bands, step, axis)
    summed = batch if mask.dim() == 3 else batch * bands
    # Sizes spelled out: a batch of 0 has no -1 to infer (its gradient is 0).
    terms = mask.numel()
    return batched_dot(cube.reshape(summed, terms).t(), displaced.reshape(summed, terms).t()).reshape(mask.shape)


def _phi_gradient(mask, grad_phi, bands, step, axis):
    """The gradient of <grad_phi, Φ(mask)>: 2 m_c[h, w] grad_phi[h, w + o_c] (summed over c for a shared mask).

    Where Φ is 0 (replaced by 1) every mask value covering it is 0, so the gradient is 0 there too.
    """
    per_band = 2 * cassi_adjoint(grad_phi.unsqueeze(0), mask, bands, step, axis)[0]
    return per_band if mask.dim() == 3 else per_band.sum(0)


class _CassiForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mask, step, axis):
        ctx.save_for_backward(x, mask)
        ctx.step, ctx.axis = step, axis
        return hpipe.cassi_forward(*_detached(x, mask), step, axis)

    @staticmethod
    def backward(ctx, grad_y):
        x, mask = ctx.saved_tensors
        grad_x = grad_mask = None
        if ctx.needs_input_grad[0]:
            grad_x = cassi_adjoint(grad_y, mask, x.shape[1], ctx.step, ctx.axis)
        if ctx.needs_input_grad[1]:
            grad_mask = _mask_gradient(x, grad_y, mask, ctx.step, ctx.axis)
        return grad_x, grad_mask, None, None


class _CassiAdjoint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y, mask, bands, step, axis):
        x = hpipe.cassi_adjoint(*_detached(y, mask), bands, step, axis)
        ctx.save_for_backward(y, mask)
        ctx.step, ctx.axis = step, axis
        return x

    @staticmethod
    def backward(ctx, grad_x):
        y, mask = ctx.saved_tensors
        grad_y = grad_mask = None
        if ctx.needs_input_grad[0]:
            grad_y = cassi_forward(grad_x, mask, ctx.step, ctx.axis)
        if ctx.needs_input_grad[1]:
            grad_mask = _mask_gradient(grad_x, y, mask, ctx.step, ctx.axis)
        return grad_y, grad_mask, None, None, None


class _CassiPhi(torch.autograd.Function):
    @staticmethod
    def forward(ctx, mask, bands, step, axis):
        ctx.save_for_backward(mask)
        ctx.bands, ctx.step, ctx.axis = bands, step, axis
        return hpipe.cassi_phi(*_detached(mask), bands, step, axis)

    @staticmethod
    def backward(ctx, grad_phi):
        (mask,) = ctx.saved_tensors
        return _phi_gradient(mask, grad_phi, ctx.bands, ctx.step, ctx.axis), None, None, None


class _CassiPinv(torch.autograd.Function):
    # x = Aᵀ z with z = y ⊘ Φ: the y gradient is (A g) ⊘ Φ; the mask gradient has the adjoint's
    # term and, through Φ, -Σ_b (A g ⊘ Φ)·z.
    @staticmethod
    def forward(ctx, y, mask, bands, step, axis):
        x = hpipe.cassi_pinv(*_detached(y, mask), bands, step, axis)
        ctx.save_for_backward(y, mask)
        ctx.bands, ctx.step, ctx.axis = x.shape[1], step, axis
        return x

    @staticmethod
    def backward(ctx, grad_x):
        y, mask = ctx.saved_tensors
        phi = cassi_phi(mask, ctx.bands, ctx.step, ctx.axis)
        grad_y = cassi_forward(grad_x, mask, ctx.step, ctx.axis) / phi
        grad_mask = None
        if ctx.needs_input_grad[1]:
            z = y / phi
            grad_mask = (_mask_gradient(grad_x, z, mask, ctx.step, ctx.axis) -
                         _phi_gradient(mask, (grad_y * z).sum(0), ctx.bands, ctx.step, ctx.axis))
        return grad_y, grad_mask, None, None, None


class _CassiDisplacement(torch.autograd.Function):
    # cassi_shift and cassi_shift_back are each other's adjoint: shift_back is a crop, whose
    # adjoint places the gradient back with zero padding, which is the shift.
    @staticmethod
    def forward(ctx, t, kernel, adjoint, step, axis):
        ctx.adjoint, ctx.step, ctx.axis = adjoint, step, axis
        return kernel(*_detached(t), step, axis)

    @staticmethod
    def backward(ctx, grad):
        return ctx.adjoint(grad, ctx.step, ctx.axis), None, None, None, None


class _BatchedDot(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return hpipe.batched_dot(*_detached(a, b))

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        rows = grad_out.unsqueeze(1)
        return (rows * b if ctx.needs_input_grad[0] else None, rows * a if ctx.needs_input_grad[1] else None)


def _conv1d_offset(signal_length, kernel_length, mode):
    """Where `mode`'s output starts in the full convolution (hpipe/conv1d.h)."""
    shorter = min(signal_length, kernel_length)
    return {"full": 0, "same": (shorter - 1) // 2, "valid": shorter - 1}[mode]


class _Conv1d(torch.autograd.Function):
    # out[t] = full[t + offset] with full[s] = Σ_j a[s - j] v[j], so ∂L/∂a[i] = Σ_t g[t] v[t + offset - i]:
    # the full convolution of g with the flipped v, read from Lv - 1 - offset on (always in range);
    # ∂L/∂v likewise with the roles of a and v swapped, summed over rows for a shared kernel.
    @staticmethod
    def forward(ctx, a, v, mode):
        out = hpipe.conv1d(*_detached(a, v), mode)
        ctx.save_for_backward(a, v)
        ctx.offset = _conv1d_offset(a.shape[1], v.shape[-1], mode)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        a, v = ctx.saved_tensors
        grad_a = grad_v = None
        if ctx.needs_input_grad[0]:
            grad_a = _conv1d_window(grad_out, v, ctx.offset, a.shape[1])
        if ctx.needs_input_grad[1]:
            grad_v = _conv1d_window(grad_out, a, ctx.offset, v.shape[-1])
            if v.dim() == 1:
                grad_v = grad_v.sum(0)
        return grad_a, grad_v, None


def _conv1d_window(grad_out, other, offset, length):
    """Σ_t grad_out[t] other[t + offset - i] for i < length: the gradient of the operand of that length."""
    start = other.shape[-1] - 1 - offset
    return conv1d(grad_out, other.flip(-1), "full")[:, start:start + length]


class _Elementwise(torch.autograd.Function):
    # y = kernel(x); `gradient(grad_y, x, y)` is the chain rule's product.
    @staticmethod
    def forward(ctx, x, kernel, gradient):
        y = kernel(*_detached(x))
        ctx.save_for_backward(x, y)
        ctx.gradient = gradient
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, y = ctx.saved_tensors
        return ctx.gradient(grad_y, x, y), None, None


class _LogSumExp(torch.autograd.Function):
    # ∂/∂x logsumexp(x) = exp(x - logsumexp(x)), the softmax along the axis.
    @staticmethod
    def forward(ctx, x, axis):
        out = hpipe.logsumexp(*_detached(x), axis)
        ctx.save_for_backward(x, out)
        ctx.axis = axis
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, out = ctx.saved_tensors
        if ctx.axis is not None:
            grad_out, out = grad_out.unsqueeze(ctx.axis), out.unsqueeze(ctx.axis)
        return grad_out * exp(x - out), None


def cassi_forward(x, mask, step=2, axis="width"):
    """A x: cube x (B, C, H, W), mask (H, W) or (C, H, W) -> measurement (B, H, W + (C - 1)|step|)."""
    return _run(_CassiForward, x, mask, step, axis)


def cassi_adjoint(y, mask, bands=None, step=2, axis="width"):
    """Aᵀ y: measurement (B, H, W') -> cube (B, C, H, W); bands is needed with a shared (H, W) mask."""
    return _run(_CassiAdjoint, y, mask, bands, step, axis)


def cassi_phi(mask, bands=None, step=2, axis="width"):
    """Φ = Σ_c (displaced m_c)², zeros replaced by 1: (H, W'); bands is needed with a shared mask."""
    return _run(_CassiPhi, mask, bands, step, axis)


def cassi_pinv(y, mask, bands=None, step=2, axis="width"):
    """A⁺ y = Aᵀ(y ⊘ Φ): measurement (B, H, W') -> cube (B, C, H, W)."""
    return _run(_CassiPinv, y, mask, bands, step, axis)


def cassi_shift(x, step=2, axis="width"):
    """Each band displaced by o_c with zero padding: (B, C, H, W) -> (B, C, H, W')."""
    return _run(_CassiDisplacement, x, hpipe.cassi_shift, cassi_shift_back, step, axis)


def cassi_shift_back(shifted, step=2, axis="width"):
    """The crop that undoes cassi_shift: (B, C, H, W') -> (B, C, H, W)."""
    return _run(_CassiDisplacement, shifted, hpipe.cassi_shift_back, cassi_shift, step, axis)


def batched_dot(a, b):
    """out[i] = Σ_k a[i, k] b[i, k]: (N, K), (N, K) -> (N,)."""
    return _run(_BatchedDot, a, b)


def conv1d(a, v, mode="full"):
    """np.convolve(a[i], v[i], mode) row by row: a (N, La), v (N, Lv) or shared (Lv,)."""
    return _run(_Conv1d, a, v, mode)


def exp(x):
    """Elementwise exp (up to 8 dimensions, as hpipe.exp); accuracy as hpipe/math.h states for hpipe.exp."""
    return _run(_Elementwise, x, hpipe.exp, lambda grad_y, x, y: grad_y * y)


def log(x):
    """Elementwise natural logarithm (up to 8 dimensions, as hpipe.log)."""
    return _run(_Elementwise, x, hpipe.log, lambda grad_y, x, y: grad_y / x)


def erf(x):
    """Elementwise error function (up to 8 dimensions, as hpipe.erf)."""
    return _run(_Elementwise, x, hpipe.erf, lambda grad_y, x, y: grad_y * (2 / math.sqrt(math.pi)) * exp(-x * x))


def logsumexp(x, axis=None):
    """log Σ exp(x) along axis (all elements when None), like scipy.special.logsumexp."""
    return _run(_LogSumExp, x, axis)


class CassiOperator(torch.nn.Module):
    """The CASSI operator of one coded aperture, for unrolled reconstruction networks.

    `forward` is A, `adjoint` Aᵀ, `phi` Φ and `pinv` A⁺; e.g. a GAP-Net / DAUHST step
    `x = z + op.adjoint((y - op(z)) / (alpha + op.phi()))`. The mask (H, W) or (C, H, W) is a
    buffer, or a parameter when an `nn.Parameter` is given (a trainable aperture). With a shared
    (H, W) mask the band count comes from `bands`, or from the measurement's width when step != 0.
    """

    def __init__(self, mask, step=2, axis="width", bands=None):
        super().__init__()
        if isinstance(mask, torch.nn.Parameter):
            self.mask = mask
        else:
            self.register_buffer("mask", mask)
        self.step, self.axis = step, axis
        self.bands = mask.shape[0] if mask.dim() == 3 else bands

    def extra_repr(self):
        return f"mask={tuple(self.mask.shape)}, step={self.step}, axis={self.axis!r}, bands={self.bands}"

    def forward(self, x):
        return cassi_forward(x, self.mask, self.step, self.axis)

    def adjoint(self, y):
        return cassi_adjoint(y, self.mask, self._bands_of(y), self.step, self.axis)

    def phi(self):
        if self.bands is None:
            raise hpipe.Error("CassiOperator.phi: bands: a shared (H, W) mask needs CassiOperator(..., bands=C)")
        return cassi_phi(self.mask, self.bands, self.step, self.axis)

    def pinv(self, y):
        return cassi_pinv(y, self.mask, self._bands_of(y), self.step, self.axis)

    def _bands_of(self, y):
        if self.bands is not None or self.step == 0:
            return self.bands  # None with step 0: hpipe's error asks for bands
        dim = -1 if self.axis == "width" else -2
        return (y.shape[dim] - self.mask.shape[dim]) // abs(self.step) + 1
