"""Loihi 2 fixed-point arithmetic: the one place where spikeport's integer formulas live.

Every executor that claims the integer contract calls these functions: the reference simulator
(``runtime/sim/reference.py``, numpy int64), the fake-quant torch executor (``convert/fakequant.py``, float64
tensors that hold integers, straight-through gradients) and spikeport's own Lava ProcessModels
(``runtime/lava_*``). The standard Lava processes (LIF, Dense, Conv) implement the same rules in Lava's
code; ``docs/fixed_point.md`` and the golden tests tie each formula here to the Lava model it mirrors.

A formula is written once against an ``ops`` backend (``INT`` for numpy, ``TorchOps`` for torch) that
provides the few primitives whose meaning must be identical everywhere:

    trunc_shift(x, n)  sign(x) * (|x| >> n)       (Loihi decays: rounding toward zero)
    floor_shift(x, e)  x << e, or x >> -e (floor)  (Lava Dense/Conv weight exponent)
    wrap(x, bits)      two's-complement-like wrap of Lava's LIF current u
    clip(x, lo, hi)
    matmul / conv2d    exact integer sums (float64 BLAS is exact below 2**53; bounds checked by
                       the quantizer, see MAX_EXACT_SUM)

Loihi LIF (lava.proc.lif PyLifModelBitAcc), per time step:
    u = wrap24(trunc_shift(u * (4096 - (du + 1)), 12) + (a_in << 6))
    v = clip(trunc_shift(v * (4096 - dv), 12) + u + (bias_mant << bias_exp), -(2**23 - 1), 2**23 - 1)
    s = v > (vth << 6);  v[s] = 0
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from spikeport.convolution import (  # the exact convolutions every backend's conv2d is held to
    ConvPlan as ConvPlan,
    conv2d_nhwc as conv2d_nhwc,
    conv2d_sum as conv2d_sum,
    conv_out_size as conv_out_size,
)

STATE_BITS = 24  # u, v, dendritic state
STATE_MAX = 2 ** (STATE_BITS - 1)  # 2**23
DECAY_SHIFT = 12  # decays are 12-bit: x * (4096 - d) >> 12
DECAY_UNITY = 1 << DECAY_SHIFT
ACT_SHIFT = 6  # a_in and vth are MSB-aligned by 6 bits
WEIGHT_BITS = 8  # signed weight mantissa: -128 .. 127
WEIGHT_MIN, WEIGHT_MAX = -(2 ** (WEIGHT_BITS - 1)), 2 ** (WEIGHT_BITS - 1) - 1
VTH_MAX = 2**17 - 1  # unsigned 17-bit threshold mantissa
BIAS_MANT_MIN, BIAS_MANT_MAX = -(2**12), 2**12 - 1  # signed 13-bit
BIAS_EXP_MAX = 7  # unsigned 3-bit
ACT_MAX = 2 ** (STATE_BITS - 1 - ACT_SHIFT)  # |a_in| < 2**17 keeps a_in << 6 inside 24 bits
MAX_EXACT_SUM = 2**53  # float64 BLAS sums of integers are exact below this
SMALL_MATMUL = 4096  # operands up to this many elements: int64 matmul (no BLAS round trip)


# ----------------------------------------------------------------------------------------------- backends
# An integer array of either backend: numpy int64 (IntOps) or a float64 torch tensor holding integers
# (TorchOps). The formulas below are written once for both, so they are typed against this alias.
Array = Any
IntArray = npt.NDArray[np.int64]
Pair = Sequence[int]  # (height, width) of a stride / padding / dilation


class Ops(Protocol):
    """The primitives a backend provides (see the module docstring); IntOps and convert.fakequant.TorchOps."""

    def asint(self, x: Any) -> Array: ...
    def round(self, x: Any) -> Array: ...
    def trunc_shift(self, x: Array, n: int) -> Array: ...
    def floor_shift(self, x: Array, e: int) -> Array: ...
    def wrap_lava_u(self, x: Array) -> Array: ...
    def clip(self, x: Array, lo: int, hi: int) -> Array: ...
    def spike(self, v: Array, threshold: Any) -> Array: ...
    def matmul(self, a: Array, b: Array) -> Array: ...
    def where(self, cond: Any, a: Array, b: Array) -> Array: ...
    def zeros(self, shape: tuple[int, ...], like: Array | None = None) -> Array: ...
    def conv2d(self, x: Array, w: Array, stride: Pair, padding: Pair, dilation: Pair, groups: int) -> Array: ...
    def maxpool(self, x: Array, kernel: int, stride: int, padding: int) -> Array: ...
    def concat(self, parts: Sequence[Array], axis: int) -> Array: ...


class IntOps:
    """Exact integer arithmetic on numpy int64 arrays (the reference simulator, Lava ProcessModels)."""

    xp = np

    @staticmethod
    def asint(x: Any) -> IntArray:
        return np.asarray(x, dtype=np.int64)

    @staticmethod
    def round(x: Any) -> IntArray:
        out: IntArray = np.rint(x).astype(np.int64)  # typed local: numpy gives Any for an Any input
        return out

    @staticmethod
    def trunc_shift(x: IntArray, n: int) -> IntArray:
        out: IntArray = np.sign(x) * (np.abs(x) >> n)
        return out

    @staticmethod
    def floor_shift(x: IntArray, e: int) -> IntArray:
        out: IntArray = floor_shift_numpy(x, e)
        return out

    @staticmethod
    def wrap_lava_u(x: IntArray) -> IntArray:
        out: IntArray = wrap_lava_u_numpy(x)
        return out

    @staticmethod
    def clip(x: IntArray, lo: int, hi: int) -> IntArray:
        return np.minimum(np.maximum(x, lo), hi)  # np.clip checks dtype limits per call: 3x slower

    @staticmethod
    def spike(v: IntArray, threshold: Any) -> IntArray:
        out: IntArray = (v > threshold).astype(np.int64)
        return out

    @staticmethod
    def matmul(a: Any, b: Any) -> IntArray:
        a, b = np.asarray(a), np.asarray(b)
        if a.size + b.size <= SMALL_MATMUL:  # numpy's integer loop beats two float copies + BLAS here
            out: IntArray = np.matmul(a.astype(np.int64, copy=False), b.astype(np.int64, copy=False))
            return out
        # exact: no rounding; an operand kept in float64 (a constant weight block) is not copied
        out = (a.astype(np.float64, copy=False) @ b.astype(np.float64, copy=False)).astype(np.int64)
        return out

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> IntArray:
        out: IntArray = np.where(cond, a, b)
        return out

    @staticmethod
    def zeros(shape: tuple[int, ...], like: Any = None) -> IntArray:
        return np.zeros(shape, dtype=np.int64)

    @staticmethod
    def conv2d(x: IntArray, w: IntArray, stride: Pair, padding: Pair, dilation: Pair, groups: int) -> IntArray:
        return conv2d_nhwc(x, w, stride, padding, dilation, groups)

    @staticmethod
    def maxpool(x: IntArray, kernel: int, stride: int, padding: int) -> IntArray:
        return maxpool_nhwc(x, kernel, stride, padding)

    @staticmethod
    def concat(parts: Sequence[IntArray], axis: int) -> IntArray:
        return np.concatenate(parts, axis=axis)


INT = IntOps()


def wrap_lava_u_numpy(x: Any) -> Any:
    """Lava's PyLifModelBitAcc on a numpy array of integers (int64 or floats holding them): values above 2**23
    wrap down by 2**24, values <= -2**23 wrap up."""
    if x.max(initial=0) <= STATE_MAX and x.min(initial=0) > -STATE_MAX:  # the common case: nothing wraps
        return x
    wrapped = np.where(x > STATE_MAX, x - 2 * STATE_MAX, x)
    return np.where(wrapped <= -STATE_MAX, x + 2 * STATE_MAX, wrapped)


# ----------------------------------------------------------------------------------------------- formulas
@dataclass(frozen=True)
class LifParams:
    """Loihi LIF parameters of one neuron group (bias_mant broadcasts over the last axis: channels)."""

    du: int
    dv: int
    vth: int  # mantissa; the effective threshold is vth << 6
    bias_mant: IntArray  # [C] signed 13-bit
    bias_exp: int  # 0..7

    def bias_effective(self, ops: Ops = INT) -> Array:
        return ops.floor_shift(ops.asint(self.bias_mant), self.bias_exp)


def lif_step(ops: Ops, u: Array, v: Array, a_in: Array, p: LifParams) -> tuple[Array, Array, Array]:
    """One time step of the Loihi LIF (see module docstring). Returns (u, v, spikes)."""
    u_in = ops.floor_shift(a_in, ACT_SHIFT)
    # du = 4095 (spikeport's own LIFs): the current forgets completely, the decay term is exactly 0
    u = u_in if p.du + 1 == DECAY_UNITY else ops.trunc_shift(u * (DECAY_UNITY - (p.du + 1)), DECAY_SHIFT) + u_in
    u = ops.wrap_lava_u(u)
    v = ops.trunc_shift(v * (DECAY_UNITY - p.dv), DECAY_SHIFT) + u + p.bias_effective(ops)
    v = ops.clip(v, -(STATE_MAX - 1), STATE_MAX - 1)
    s = ops.spike(v, p.vth << ACT_SHIFT)
    return u, v * (1 - s), s


def lif_params_fuse(p: LifParams) -> bool:
    """The parameters' part of :func:`lif_fuses_in_float32`: the current forgets at once (du = 4095) and the v decay
    4096 - dv is a power of two."""
    keep = DECAY_UNITY - p.dv
    return p.du + 1 == DECAY_UNITY and keep > 0 and keep & (keep - 1) == 0


def lif_fuses_in_float32(p: LifParams, a_in_absmax: float) -> bool:
    """Whether :func:`lif_step_float32` computes ``lif_step`` exactly: the current forgets at once (du = 4095),
    the v decay 4096 - dv is a power of two (v * 2**-k and its trunc are exact) and ``a_in << 6`` neither wraps
    nor leaves float32's exact integers (|u| < 2**23). Then |v + u| <= 2**24 is exact, and a sum that passes 2**24
    once the bias (< 2**20) is added lies above the clip 2**23 - 1 before and after rounding (rounding is
    monotonic), so the clip returns the exact value."""
    return lif_params_fuse(p) and a_in_absmax * 64 < STATE_MAX


def lif_current_float32(u: Any, a_in: Any) -> Any:
    """The current u = a_in << 6 of :func:`lif_step_float32` in float32: into ``u`` where it is a float32 array of
    a_in's shape (the state of the step before), else into a fresh one. Rounding to float32 is monotonic and 2**23
    is a float32, so max |u| < 2**23 exactly where max |a_in| < 2**17, and u is then exact: the bound can be checked
    on u, at half the bytes of a float64 a_in."""
    if not (isinstance(u, np.ndarray) and u.dtype == np.float32 and u.shape == a_in.shape):
        u = np.empty(a_in.shape, np.float32)
    np.multiply(a_in, float(1 << ACT_SHIFT), out=u, casting="same_kind")
    return u


def lif_step_float32(u: Any, v: Any, a_in: Any, p: LifParams, current: Any = None) -> tuple[Any, Any, Any]:
    """``lif_step`` in float32, in place on ``u`` and ``v`` (numpy float32 arrays of a_in's shape, the state of the
    step before; fresh ones otherwise), where :func:`lif_fuses_in_float32` holds. ``current``: u as
    :func:`lif_current_float32` made it already. Returns (u, v, spikes as uint8)."""
    u = lif_current_float32(u, a_in) if current is None else current
    if not (v.dtype == np.float32 and v.shape == a_in.shape):
        v = np.asarray(v).astype(np.float32)
    keep = DECAY_UNITY - p.dv
    if keep != DECAY_UNITY:
        np.multiply(v, keep / DECAY_UNITY, out=v)
        np.trunc(v, out=v)
    v += u
    bias = floor_shift_numpy(np.asarray(p.bias_mant), p.bias_exp)
    if bias.any():
        v += bias.astype(np.float32)
    limit = float(STATE_MAX - 1)
    np.clip(v, -limit, limit, out=v)  # np.minimum/maximum with a scalar run 3x slower here
    s = np.greater(v, float(p.vth << ACT_SHIFT))
    v *= ~s  # a multiply by the mask: np.copyto / putmask with where= run 20x slower on random masks
    return u, v, s.view(np.uint8)


def floor_shift_numpy(x: Any, e: int) -> Any:
    return np.left_shift(x, e) if e > 0 else np.right_shift(x, -e)


def dense(ops: Ops, x: Array, w: Array, weight_exp: int) -> Array:
    """Token-wise Dense: x [..., in] integers, w [out, in] mantissas -> activation [..., out]. A backend with a
    ``matmul_shift`` shifts the GEMM's sums as it reads them (runtime/sim/fast_ops.py)."""
    fused = getattr(ops, "matmul_shift", None)
    return fused(x, w.T, weight_exp) if fused else ops.floor_shift(ops.matmul(x, w.T), weight_exp)


def conv(
    ops: Ops, x: Array, w: Array, weight_exp: int, stride: Pair, padding: Pair, dilation: Pair, groups: int
) -> Array:
    """Conv2d, channels-last: x [B, H, W, C_in] -> activation [B, H', W', C_out] (``conv2d_shift``: as ``dense``)."""
    fused = getattr(ops, "conv2d_shift", None)
    if fused:
        return fused(x, w, stride, padding, dilation, groups, weight_exp)
    return ops.floor_shift(ops.conv2d(x, w, stride, padding, dilation, groups), weight_exp)


def split_weight(w: Array, groups: int, parts: int) -> Array:
    """A conv weight [C_out, kH, kW, C_in / groups] regrouped for ``parts`` partial sums per output (their input
    channels split in ``parts`` consecutive runs): [C_out parts, kH, kW, C_in / (groups parts)], group G's part j
    at output channels (G parts + j) og + o (og = C_out / groups), read by a conv of groups x parts groups. numpy
    or torch (reshape and swapaxes only)."""
    cout, kh, kw, cin = w.shape
    og, c = cout // groups, cin // parts
    # (G, o, kh, kw, j, c) -> (G, j, o, kh, kw, c)
    g = w.reshape(groups, og, kh, kw, parts, c).swapaxes(1, 4).swapaxes(2, 4).swapaxes(3, 4)
    return g.reshape(groups * parts * og, kh, kw, c)


def sum_parts(partial: Array, groups: int, parts: int) -> Array:
    """[..., C_out parts] partial sums laid out as ``split_weight``'s -> [..., C_out], their sum (exact)."""
    lead, og = tuple(partial.shape[:-1]), partial.shape[-1] // (groups * parts)
    p = partial.reshape(*lead, groups, parts, og)
    total = p[..., 0, :]
    for j in range(1, parts):
        total = total + p[..., j, :]
    return total.reshape(*lead, groups * og)


def scale(ops: Ops, x: Array, mant: int, exp: int) -> Array:
    """Integer rescale x * mant * 2**exp (floor for negative exp): the 8-bit 'weight' of a product path."""
    return ops.floor_shift(x * mant, exp)


def split_heads(x: Array, heads: int) -> Array:
    """[B, N, C] -> [B, H, N, d_h]."""
    b, n, c = x.shape
    return (
        x.reshape(b, n, heads, c // heads).transpose(0, 2, 1, 3)
        if isinstance(x, np.ndarray)
        else x.reshape(b, n, heads, c // heads).transpose(1, 2)
    )


def merge_heads(x: Array) -> Array:
    """[B, H, N, d_h] -> [B, N, C]."""
    b, h, n, d = x.shape
    return (
        x.transpose(0, 2, 1, 3).reshape(b, n, h * d)
        if isinstance(x, np.ndarray)
        else x.transpose(1, 2).reshape(b, n, h * d)
    )


def ssa_core(
    ops: Ops, q: Array, k: Array, v: Array, heads: int, on_state: Callable[[Array], None] | None = None
) -> Array:
    """Q (K^T V) per head on spikes [B, N, C]: an exact integer [B, N, C] (entries <= N * d_h).

    ``on_state`` (optional) receives the held state K^T V [B, H, d_h, d_h] (for Lava's state Var)."""
    qh, kh, vh = split_heads(q, heads), split_heads(k, heads), split_heads(v, heads)
    kv = ops.matmul(swap_last(kh), vh)  # [B, H, d_h, d_h]: the state SSA holds
    if on_state is not None:
        on_state(kv)
    return merge_heads(ops.matmul(qh, kv))


def causal_core(
    ops: Ops, q: Array, k: Array, v: Array, heads: int, on_state: Callable[[Array], None] | None = None
) -> Array:
    """Seed 004 Eq. 11: q_n S_n with the running sum S_n = sum_{j<=n} k_j^T v_j, per head, computed as
    (Q K^T masked to j <= n) V: the same integers (every sum is exact), in two GEMMs per block of
    ``CAUSAL_ROWS`` queries instead of a loop over the tokens (a block holds [B, H, rows, N] scores, not
    [B, H, N, N], for the host core's long sequences). ``on_state`` receives S after the last token
    [B, H, d_h, d_h]."""
    qh, kh, vh = split_heads(q, heads), split_heads(k, heads), split_heads(v, heads)
    n, mask, rows = qh.shape[2], causal_mask(qh.shape[2]), []
    fused = getattr(ops, "masked_mix", None)  # a backend may keep the scores in a narrower type (fast_ops.py)
    for r0 in range(0, n, CAUSAL_ROWS):
        r1 = min(n, r0 + CAUSAL_ROWS)  # queries r0..r1-1 see keys 0..r1-1
        block = (qh[:, :, r0:r1], kh[:, :, :r1], vh[:, :, :r1], mask[r0:r1, :r1])
        rows.append(fused(*block) if fused else masked_mix(ops, *block))
    if on_state is not None:
        on_state(ops.matmul(swap_last(kh), vh))
    return merge_heads(rows[0] if len(rows) == 1 else ops.concat(rows, axis=2))


def masked_mix(ops: Ops, q: Array, k: Array, v: Array, mask: Any) -> Array:
    """(q k^T * mask) v per head: [B, H, rows, d_h] from q [B, H, rows, d_h], k and v [B, H, keys, d_h]."""
    return ops.matmul(ops.matmul(q, swap_last(k)) * ops.asint(mask), v)


CAUSAL_ROWS = 64  # queries per block of causal_core (a 64-token grid is one block; 196 ImageNet tokens, four)


@functools.cache
def causal_mask(tokens: int) -> IntArray:
    """[N, N] ones where j <= n (one array per N: the torch backends keep their device copy by its memory)."""
    mask: IntArray = np.tril(np.ones((tokens, tokens), np.int64))
    mask.setflags(write=False)
    return mask


@dataclass(frozen=True)
class TokenMixParams:
    """Quantized dendritic attention (DESIGN.md section 2, lrf_dyn) of one layer, in its chip-native form.

    The dendritic recursion X_n = A X_{n-1} + Gamma u_n, g_n = C^T X_n is linear and time-invariant along the
    tokens, so g = K * u, a causal convolution over tokens with K_m = C^T A^m Gamma (seed 004 Eq. 12-15).
    On the chip K is a token-mixing synapse: 8-bit mantissas per head, the first ``taps`` lags."""

    kernel_mant: IntArray  # [H, taps]  K_m * 2**kernel_exp[h], m = 0 .. taps - 1
    out_mant: tuple[int, ...]  # [H] 8-bit mantissa of the per-head rescale into the attention LIF's a_in
    out_exp: tuple[int, ...]  # [H] its exponent (floor shift)


def token_mix_matrix(kernel_mant: Any, tokens: int) -> Any:
    """The lower-triangular Toeplitz matrices [H, N, N] of a causal token kernel [H, taps]:
    T[h, n, j] = kernel[h, n - j] for 0 <= n - j < taps."""
    lag = np.arange(tokens)[:, None] - np.arange(tokens)[None, :]
    taps = kernel_mant.shape[-1]
    inside = ((lag >= 0) & (lag < taps)).astype(np.int64)
    gathered = kernel_mant[:, np.clip(lag, 0, taps - 1)]  # numpy or torch (the fake-quant executor's QAT masters)
    if isinstance(gathered, np.ndarray):
        out: IntArray = gathered.astype(np.int64) * inside
        return out
    return gathered * gathered.new_tensor(inside)


def token_mix_core(
    ops: Ops, q: Array, k: Array, v: Array, heads: int, p: TokenMixParams, toeplitz: Any
) -> tuple[Array, Array]:
    """floor_shift(q_n * g_n * out_mant[h], out_exp[h]) with g = K * (k v) along the tokens, per head; also
    returns the gated products q * g [B, H, N, d_h] (the product neurons' graded messages where nonzero).

    ``toeplitz``: ``token_mix_matrix(p.kernel_mant, N)`` in the backend's type (built once per node). Every
    value is an exact integer: |g| <= 127 * taps, and the product with q in {0, 1} is a gate."""
    qh, kh, vh = split_heads(q, heads), split_heads(k, heads), split_heads(v, heads)
    g = ops.matmul(toeplitz, kh * vh)  # [B, H, N, d_h]: [H, N, N] @ coincidences
    gated = qh * g
    rows = [scale(ops, gated[:, h : h + 1], p.out_mant[h], p.out_exp[h]) for h in range(heads)]
    return merge_heads(ops.concat(rows, axis=1)), gated


def maxpool(ops: Ops, x: Array, kernel: int, stride: int, padding: int) -> Array:
    """Max over k x k windows of channels-last spikes [B, H, W, C] (zero padding: spikes are >= 0)."""
    return ops.maxpool(x, kernel, stride, padding)


def maxpool_nhwc(x: IntArray, kernel: int, stride: int, padding: int) -> IntArray:
    xp = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kernel, kernel), axis=(1, 2))[:, ::stride, ::stride]
    out: IntArray = win.max(axis=(-2, -1))
    return out


@dataclass(frozen=True)
class SigmaDeltaParams:
    """Lava's SigmaDelta (ReLU) of one neuron group: vth and bias are shifted left by spike_exp + state_exp
    (as the Process stores them), the message right by state_exp."""

    vth: int
    bias: Any  # [C] signed
    spike_exp: int
    state_exp: int
    cum_error: bool


def sigma_delta_step(ops: Ops, state: dict[str, Array], a_in: Array, p: SigmaDeltaParams) -> Array:
    """One time step of lava.proc.sdn PySigmaDeltaModelFixed; ``state`` holds sigma, act, residue, error
    (updated in place). Returns the graded message s >> state_exp (floor):

        sigma += a_in;  act = relu(sigma + bias');  delta = act - act_prev + residue
        s = delta where |delta| >= vth' (cum_error: error += delta, s = delta where |error| >= vth', error = 0
        where s != 0);  residue = delta - s
    """
    scale = p.spike_exp + p.state_exp
    threshold = p.vth << scale
    state["sigma"] = state["sigma"] + a_in
    pre = state["sigma"] + ops.floor_shift(ops.asint(p.bias), scale)
    act = ops.where(pre > 0, pre, pre * 0)  # ReLU
    delta = act - state["act"] + state["residue"]
    if p.cum_error:
        state["error"] = state["error"] + delta
        fire = (state["error"] >= threshold) | (state["error"] <= -threshold)
    else:
        fire = (delta >= threshold) | (delta <= -threshold)
    s = ops.where(fire, delta, delta * 0)
    if p.cum_error:
        state["error"] = ops.where(fire, state["error"] * 0, state["error"])
    state["residue"], state["act"] = delta - s, act
    return ops.floor_shift(s, -p.state_exp)


def readout(ops: Ops, x: Array, w: Array, bias: Any, weight_exp: int) -> Array:
    """Host readout per time step: token sum of the final residual stream, then the quantized head.

    x [B, N, C] integers -> [B, classes]; summed over time steps by the caller (the argmax is that of
    the float head on mean(tokens, time) because the scale is positive and the bias is pre-multiplied)."""
    return ops.floor_shift(ops.matmul(x.sum(1), w.T), weight_exp) + ops.asint(bias)


def swap_last(x: Array) -> Array:
    return x.swapaxes(-1, -2) if isinstance(x, np.ndarray) else x.transpose(-1, -2)
