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
        a, b = np.asarray(a), np.asarray(b)
        dtype = gemm_dtype(a, b, a.shape[-1])
        if b.ndim == 2 and a.ndim > 2:  # one GEMM over all rows: numpy would loop over the leading axes
            flat = np.matmul(_as(a, dtype).reshape(-1, a.shape[-1]), _as(b, dtype))
            return _as(flat, np.float64).reshape(*a.shape[:-1], b.shape[-1])
        return _as(np.matmul(_as(a, dtype), _as(b, dtype)), np.float64)

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> FloatArray:
        return _as(np.where(cond, a, b), np.float64)

    @staticmethod
    def zeros(shape: tuple[int, ...], like: Any = None) -> FloatArray:
        return np.zeros(shape)

    @staticmethod
    def conv2d(x: Any, w: Any, stride: fx.Pair, padding: fx.Pair, dilation: fx.Pair, groups: int) -> FloatArray:
        x, w = np.asarray(x), np.asarray(w)
        dtype = gemm_dtype(x, w, int(np.prod(w.shape[1:])))
        return _as(fx.conv2d_sum(x, w, stride, padding, dilation, groups, dtype), np.float64)

    @staticmethod
    def maxpool(x: Any, kernel: int, stride: int, padding: int) -> Any:
        return fx.maxpool_nhwc(x, kernel, stride, padding)

    @staticmethod
    def concat(parts: Sequence[Any], axis: int) -> Any:
        return np.concatenate(parts, axis=axis)

    @staticmethod
    def lif_step(u: Any, v: Any, a_in: Any, p: fx.LifParams) -> tuple[Any, Any, Any]:
        """``fixedpoint.lif_step``: ``fixedpoint.lif_step_float32`` where its bound holds, else the formula in
        float64 (u and v converted first: the formula multiplies them by the decays)."""
        a_in = np.asarray(a_in)
        if fx.lif_fuses_in_float32(p, _absmax(a_in)):
            return fx.lif_step_float32(u, v, a_in, p)
        return fx.lif_step(FAST, _as(u, np.float64), _as(v, np.float64), a_in, p)


FAST = FastOps()
