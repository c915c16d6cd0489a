"""The reference simulator's ops backend: the ``fixedpoint`` primitives on numpy floats that hold exact integers.

``fixedpoint.IntOps`` (int64) is the readable form of the integer contract and the one spikeport's Lava models
use; this backend computes the same integers faster, which is what lets the reference validate a test split
at the speed of the float torch forward (issue 14). Every value it returns is exact, by these bounds:

- **values**: float64 arrays (integers are exact below 2**53, as in the torch fake-quant executor); spikes are
  uint8 0/1 (``spike``: the comparison's own bytes, no copy; counted and summed in integers). A sum of a few
  spike arrays (a residual add) stays a small uint8 integer. Nothing multiplies a spike array by a constant
  in uint8 (that would wrap): the formulas multiply spikes only by other values (gates) or through GEMMs.
- **GEMMs** (``matmul``, ``conv2d``): float32 BLAS when ``K * max|a| * max|b| < 2**24`` (every partial sum of
  integers below 2**24 is exact in float32, in any summation order: binary spikes into 8-bit weights pass for
  K < 131072), float64 BLAS below 2**53, else int64. The bound is checked on every call (one max/min pass
  over each operand), so no input can fall outside it silently.
- **shifts**: x * 2**e is exact in binary floating point; floor / trunc of it are exact.
- **LIF** (``lif_step``): ``fixedpoint.lif_step_float32``, the Loihi LIF fused in place in float32, where
  ``fixedpoint.lif_fuses_in_float32`` proves it exact (spikeport's LIFs: du = 4095, tau = 2); other parameters
  run the generic formula (``fixedpoint.lif_step``) in float64.

``tests/test_fast_reference.py`` checks this backend against ``IntOps`` value for value in every layer of every
graph kind, and hits each bound on both sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from spikeport import fixedpoint as fx

FloatArray = npt.NDArray[np.floating[Any]]
F32_EXACT = 2**24  # float32 holds every integer of magnitude <= 2**24
F64_EXACT = 2**53


def _absmax(x: np.ndarray) -> float:
    if x.size == 0:
        return 0.0
    top = float(x.max())
    return top if x.dtype.kind in "bu" else max(top, -float(x.min()))


def gemm_dtype(a: np.ndarray, b: np.ndarray, k: int) -> type[np.generic]:
    """The narrowest dtype whose BLAS sums a [.., K] @ b [K, ..] exactly (see the module docstring)."""
    bound = k * _absmax(a) * _absmax(b)
    return np.float32 if bound < F32_EXACT else np.float64 if bound < F64_EXACT else np.int64


def _as(x: Any, dtype: type[np.generic]) -> np.ndarray:
    return np.asarray(x).astype(dtype, copy=False)


class FastOps:
    """``fixedpoint.Ops`` on float arrays holding exact integers (see the module docstring)."""

    xp = np

    @staticmethod
    def asint(x: Any) -> FloatArray:
        return _as(x, np.float64)

    @staticmethod
    def round(x: Any) -> FloatArray:
        return _as(np.rint(x), np.float64)

    @staticmethod
    def trunc_shift(x: Any, n: int) -> FloatArray:
        out: FloatArray = np.trunc(np.multiply(x, 2.0**-n, dtype=np.float64))
        return out

    @staticmethod
    def floor_shift(x: Any, e: int) -> FloatArray:
        if e == 0:
            return _as(x, np.float64)
        y: FloatArray = np.multiply(x, 2.0**e, dtype=np.float64)
        return y if e >= 0 else np.floor(y, out=y)

    @staticmethod
    def wrap_lava_u(x: FloatArray) -> FloatArray:
        out: FloatArray = fx.wrap_lava_u_numpy(x)  # comparisons and adds only: exact on floats
        return out

    @staticmethod
    def clip(x: Any, lo: int, hi: int) -> FloatArray:
        out: FloatArray = np.clip(_as(x, np.float64), float(lo), float(hi))
        return out

    @staticmethod
    def spike(v: Any, threshold: Any) -> npt.NDArray[np.uint8]:
        out: npt.NDArray[np.uint8] = np.greater(v, threshold).view(np.uint8)
        return out

    @staticmethod
    def matmul(a: Any, b: Any) -> FloatArray:
        return _as(_gemm(a, b), np.float64)

    @staticmethod
    def matmul_shift(a: Any, b: Any, e: int) -> FloatArray:
        """``floor_shift(matmul(a, b), e)`` (``fixedpoint.dense``), the GEMM's sums shifted as they are read."""
        return _shifted(_gemm(a, b), e)

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> FloatArray:
        return _as(np.where(cond, a, b), np.float64)

    @staticmethod
    def zeros(shape: tuple[int, ...], like: Any = None) -> FloatArray:
        return np.zeros(shape)

    @staticmethod
    def conv2d(x: Any, w: Any, stride: fx.Pair, padding: fx.Pair, dilation: fx.Pair, groups: int) -> FloatArray:
        return _as(_conv_sum(x, w, stride, padding, dilation, groups), np.float64)

    @staticmethod
    def conv2d_shift(
        x: Any, w: Any, stride: fx.Pair, padding: fx.Pair, dilation: fx.Pair, groups: int, e: int
    ) -> FloatArray:
        """``floor_shift(conv2d(...), e)`` (``fixedpoint.conv``), the sums shifted as they are read."""
        return _shifted(_conv_sum(x, w, stride, padding, dilation, groups), e)

    @staticmethod
    def maxpool(x: Any, kernel: int, stride: int, padding: int) -> Any:
        return fx.maxpool_nhwc(x, kernel, stride, padding)

    @staticmethod
    def concat(parts: Sequence[Any], axis: int) -> Any:
        return np.concatenate(parts, axis=axis)

    @staticmethod
    def masked_mix(q: Any, k: Any, v: Any, mask: Any) -> FloatArray:
        """``fixedpoint.masked_mix``, (q k^T * mask) v per head (the causal core's block), its scores kept in float32
        where every sum of both GEMMs is exact there (keys d_h max|q| max|k| max|v| < 2**24: spikes up to 16 M
        key-channel pairs); the formula's float64 scores otherwise."""
        q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
        if k.shape[-2] * k.shape[-1] * _absmax(q) * _absmax(k) * _absmax(v) >= F32_EXACT:
            wide: FloatArray = fx.masked_mix(FAST, q, k, v, mask)
            return wide
        scores = np.matmul(_as(q, np.float32), _as(k, np.float32).swapaxes(-1, -2))
        scores *= _as(mask, np.float32)
        return _as(np.matmul(scores, _as(v, np.float32)), np.float64)

    @staticmethod
    def lif_step(
        u: Any, v: Any, a_in: Any, p: fx.LifParams, extra: dict[str, Any] | None = None
    ) -> tuple[Any, Any, Any]:
        """``fixedpoint.lif_step``: ``fixedpoint.lif_step_float32`` where its bound holds, else the formula in
        float64 (u and v converted first: the formula multiplies them by the decays). The bound on a_in is checked
        on the float32 current (``fixedpoint.lif_current_float32``); its max |a_in| goes to ``extra`` for the
        LIF's count of overflows, which then need not read a_in again. Where the bound fails the current was written
        into ``u`` for nothing: the formula does not read u when the current forgets at once (du = 4095), which the
        fused path requires."""
        a_in = np.asarray(a_in)
        if fx.lif_params_fuse(p):
            current = fx.lif_current_float32(u, a_in)
            top = _absmax(current) / (1 << fx.ACT_SHIFT)
            if fx.lif_fuses_in_float32(p, top):
                if extra is not None:
                    extra["a_in_absmax"] = top
                return fx.lif_step_float32(current, v, a_in, p, current)
        return fx.lif_step(FAST, _as(u, np.float64), _as(v, np.float64), a_in, p)


def _gemm(a: Any, b: Any) -> np.ndarray:
    """a @ b in the narrowest dtype that sums it exactly (``gemm_dtype``), as BLAS returns it."""
    a, b = np.asarray(a), np.asarray(b)
    dtype = gemm_dtype(a, b, a.shape[-1])
    if b.ndim == 2 and a.ndim > 2:  # one GEMM over all rows: numpy would loop over the leading axes
        flat: np.ndarray = np.matmul(_as(a, dtype).reshape(-1, a.shape[-1]), _as(b, dtype))
        return flat.reshape(*a.shape[:-1], b.shape[-1])
    out: np.ndarray = np.matmul(_as(a, dtype), _as(b, dtype))
    return out


def _conv_sum(x: Any, w: Any, stride: fx.Pair, padding: fx.Pair, dilation: fx.Pair, groups: int) -> np.ndarray:
    """The convolution's sums in the narrowest exact dtype (``gemm_dtype`` over one output's fan-in)."""
    x, w = np.asarray(x), np.asarray(w)
    dtype = gemm_dtype(x, w, int(np.prod(w.shape[1:])))
    return fx.conv2d_sum(x, w, stride, padding, dilation, groups, dtype)


def _shifted(sums: np.ndarray, e: int) -> FloatArray:
    """``FastOps.floor_shift`` of sums in their own dtype: floor(sums * 2**e) in float64, each sum converted as it is
    read (one pass, where shifting a float64 copy reads and writes twice); the same values, since the conversion
    and the multiply by a power of two are exact."""
    out: FloatArray = np.multiply(sums, 2.0**e, dtype=np.float64)
    return np.floor(out, out=out) if e < 0 else out


FAST = FastOps()
