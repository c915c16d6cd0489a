"""Exact integer convolutions on numpy (channels-last), the sums of every ``conv2d`` of the integer contract.

``ConvPlan`` holds one convolution's weights and picks, per call, the cheapest way to sum it exactly in a given
dtype (float32 where the caller's bound keeps every partial sum below 2**24, float64 below 2**53, int64 beyond):

- groups == 1: the gathered taps (im2col) and one GEMM, a batch chunk at a time; a row's kW taps are gathered in one
  copy where they are contiguous in the padded row (dilation 1 along W);
- depthwise kernels dilated over an interleaved grid that they cover (the chip-native token mixing): one token
  matrix per distinct kernel (``_TokenMix``);
- depthwise [kH, 1] kernels along H (the 1-D token mixing): one banded matrix per channel (``_band``);
- other depthwise kernels (the LRF term's dilated 3 x 3): each tap over the outputs it reaches (``_depthwise``);
- else a GEMM or a product per tap.

Every path sums the same integers, so they agree value for value (tests/test_fixedpoint.py holds each to torch's
convolution). ``spikeport.fixedpoint`` re-exports the public names; the Lava fast Conv model uses ``ConvPlan`` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import as_strided

IntArray = npt.NDArray[np.int64]
Pair = Sequence[int]  # (height, width) of a stride / padding / dilation


def conv_out_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output positions along one axis of a (torch-semantics) convolution."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv2d_nhwc(x: np.ndarray, w: np.ndarray, stride: Pair, padding: Pair, dilation: Pair, groups: int) -> IntArray:
    """Exact integer 2-D cross-correlation (torch.nn.Conv2d semantics) in channels-last layout.

    x: [B, H, W, C_in] integers; w: [C_out, kH, kW, C_in // groups]; returns [B, H', W', C_out] int64.
    Summed in float64 BLAS (exact: all sums stay far below 2**53, fixedpoint.MAX_EXACT_SUM)."""
    return conv2d_sum(x, w, stride, padding, dilation, groups, np.float64).astype(np.int64)


def conv2d_sum(
    x: np.ndarray, w: np.ndarray, stride: Pair, padding: Pair, dilation: Pair, groups: int, dtype: Any
) -> np.ndarray:
    """``conv2d_nhwc`` summed in ``dtype``: exact when the caller has bounded every sum (see
    runtime/sim/fast_ops.py)."""
    return ConvPlan(w, stride, padding, dilation, groups, dtype)(x)


class ConvPlan:
    """One convolution's weights, prepared once for many inputs (a Lava model's weights never change):
    groups == 1: one GEMM over the gathered taps (K = kH kW C_in); depthwise [kH, 1] kernels (token mixing): one
    banded matrix per channel, built on the first call; depthwise kernels dilated over an interleaved grid with
    more taps than the grid has positions (the 2-D token mixing): one token matrix per distinct kernel
    (``_TokenMix``); else a GEMM or a product per tap."""

    def __init__(self, w: np.ndarray, stride: Pair, padding: Pair, dilation: Pair, groups: int, dtype: Any) -> None:
        self.stride, self.padding, self.dilation = (tuple(int(v) for v in a) for a in (stride, padding, dilation))
        self.groups, self.dtype = int(groups), dtype
        self.w = np.asarray(w).astype(dtype, copy=False)
        cout, kh, kw, cg = self.w.shape
        self.along_h = cg == 1 and cout == groups and kw == 1 and (self.stride[1], self.padding[1]) == (1, 0)
        self._band: np.ndarray | None = None
        self._mix: _TokenMix | None = None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        (sh, sw), (ph, pw), (dh, dw) = self.stride, self.padding, self.dilation
        wf, groups, dtype = self.w, self.groups, self.dtype
        b, h, wd, cin = x.shape
        cout, kh, kw, cg = wf.shape
        ho, wo = conv_out_size(h, kh, sh, ph, dh), conv_out_size(wd, kw, sw, pw, dw)
        og = cout // groups
        depthwise = cg == 1 and cout == groups == cin
        if depthwise and _TokenMix.applies(self, h, wd):
            if self._mix is None or self._mix.grid != (h, wd):
                self._mix = _TokenMix(self, h, wd)
            return self._mix(np.asarray(x).astype(dtype, copy=False))
        if depthwise and not self.along_h:
            return _depthwise(np.asarray(x), wf, self.stride, self.padding, self.dilation, (ho, wo))
        xp = np.pad(np.asarray(x).astype(dtype, copy=False), ((0, 0), (ph, ph), (pw, pw), (0, 0)))

        def tap(i: int, j: int) -> np.ndarray:
            return xp[:, i * dh : i * dh + sh * (ho - 1) + 1 : sh, j * dw : j * dw + sw * (wo - 1) + 1 : sw, :]

        if self.along_h and cin == groups:
            if self._band is None or self._band.shape[1:] != (ho, xp.shape[1]):
                self._band = _band(wf[:, :, 0, 0], sh, dh, ho, xp.shape[1])
            out: np.ndarray = np.matmul(self._band, xp.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)
            return np.ascontiguousarray(out)
        if groups == 1:  # gathered taps, a batch chunk at a time: ~16 MB of them stay in cache
            out = np.empty((b, ho, wo, cout), dtype)
            w2 = wf.reshape(cout, -1).T
            chunk = max(1, (1 << 22) // max(1, ho * wo * kh * kw * cin))
            for b0 in range(0, b, chunk):
                b1 = min(b, b0 + chunk)
                cols = np.empty((b1 - b0, ho, wo, kh, kw * cin), dtype)
                for i in range(kh):
                    if dw == 1:  # a row's kW taps are kW C contiguous values of the padded row: one copy for all
                        rows = xp[b0:b1, i * dh : i * dh + sh * (ho - 1) + 1 : sh]
                        step = (*rows.strides[:2], sw * rows.strides[2], rows.strides[3])
                        cols[:, :, :, i] = as_strided(rows, (*rows.shape[:2], wo, kw * cin), step, writeable=False)
                        continue
                    for j in range(kw):
                        cols[:, :, :, i, j * cin : (j + 1) * cin] = tap(i, j)[b0:b1]
                np.matmul(cols.reshape(-1, w2.shape[0]), w2, out=out[b0:b1].reshape(-1, cout))
            return out
        out = np.zeros((b, ho, wo, cout), dtype)
        for i in range(kh):
            for j in range(kw):
                if cg == 1 and og == 1:  # depthwise
                    out += tap(i, j) * wf[:, i, j, 0]
                else:
                    t = tap(i, j).reshape(b, ho, wo, groups, cg)
                    out += np.einsum("bhwgc,goc->bhwgo", t, wf[:, i, j, :].reshape(groups, og, cg)).reshape(out.shape)
        return out


class _TokenMix:
    """A depthwise convolution, stride 1, that keeps its size, dilated by (dh, dw) with padding a multiple of the
    dilation over an (H, W) map whose sides the dilation divides: each (i mod dh, j mod dw) sub-grid is convolved on
    its own, as one [positions, positions] matrix per distinct channel kernel, applied to every sub-grid and channel
    with that kernel in one GEMM. The chip-native token mixing's Conv (tokens on a grid, pair slots interleaved)
    is this with kernels of (2 rows - 1)(2 columns - 1) taps: the GEMM costs one multiply per token pair and
    channel, the taps loop (2 rows - 1)(2 columns - 1) per token and channel."""

    @staticmethod
    def applies(plan: ConvPlan, h: int, w: int) -> bool:
        (dh, dw), (ph, pw), (kh, kw) = plan.dilation, plan.padding, plan.w.shape[1:3]
        if plan.stride != (1, 1) or h % dh or w % dw or ph % dh or pw % dw:
            return False
        keeps = 2 * (ph // dh) == kh - 1 and 2 * (pw // dw) == kw - 1
        return bool(keeps and (h // dh) * (w // dw) < kh * kw)  # the token matrix is smaller than the taps' loop

    def __init__(self, plan: ConvPlan, h: int, w: int) -> None:
        self.grid = (h, w)
        self.dil = plan.dilation
        rows, cols = h // self.dil[0], w // self.dil[1]
        kernels = plan.w[:, :, :, 0]  # [C, kH, kW], torch correlation form
        distinct, self.which = np.unique(kernels.reshape(len(kernels), -1), axis=0, return_inverse=True)
        self.which = self.which.ravel()
        kh, kw = kernels.shape[1:]
        oy, ox = np.divmod(np.arange(rows * cols), cols)
        # out[o] = sum_i w[i] in[o + i - p] on the sub-grid: input position m reads tap (m - o + p)
        ty = oy[None, :] - oy[:, None] + plan.padding[0] // self.dil[0]
        tx = ox[None, :] - ox[:, None] + plan.padding[1] // self.dil[1]
        inside = (ty >= 0) & (ty < kh) & (tx >= 0) & (tx < kw)
        self.mats = np.zeros((len(distinct), rows * cols, rows * cols), plan.dtype)  # [kernel, out, in]
        for d, flat in enumerate(distinct):
            self.mats[d][inside] = flat.reshape(kh, kw)[ty[inside], tx[inside]]
        self.rows, self.cols = rows, cols

    def __call__(self, x: np.ndarray) -> np.ndarray:
        b, h, w, c = x.shape
        (dh, dw), rows, cols = self.dil, self.rows, self.cols
        # [B, rows, dh, cols, dw, C] -> [rows cols, B dh dw C]: the tokens of every sub-grid and channel as columns
        t = x.reshape(b, rows, dh, cols, dw, c).transpose(1, 3, 0, 2, 4, 5).reshape(rows * cols, -1, c)
        out = np.empty_like(t)
        for d in range(len(self.mats)):
            chans = np.flatnonzero(self.which == d)
            sel = t[:, :, chans] if len(self.mats) > 1 else t
            mixed = self.mats[d] @ sel.reshape(rows * cols, -1)
            if len(self.mats) > 1:
                out[:, :, chans] = mixed.reshape(sel.shape)
            else:
                out = mixed.reshape(t.shape)
        result: np.ndarray = out.reshape(rows, cols, b, dh, dw, c).transpose(2, 0, 3, 1, 4, 5).reshape(b, h, w, c)
        return np.ascontiguousarray(result)


def _depthwise(x: np.ndarray, w: np.ndarray, stride: Pair, padding: Pair, dilation: Pair, size: Pair) -> np.ndarray:
    """A depthwise convolution (w [C, kH, kW, 1] in the plan's dtype) without a padded copy of ``x``: each tap adds
    its weights times the inputs it reads into the outputs whose window puts it inside the map, and nothing where
    it falls on the padding (which would add zeros; the LRF term's 3 x 3 kernels dilated by 3 and 5 on an 8 x 8
    token grid reach 56 % and 34 % of the padded taps' outputs). The map is laid out [H, W, B C] first, so that each
    tap's product and sum run over B C contiguous values (channels-last runs of C alone cost numpy's loop overhead
    every C values). Every product and partial sum is an exact integer in the dtype (the caller's bound), so any
    order of the sums gives the padded loop's values."""
    (ho, wo), dtype = size, w.dtype
    if x.dtype.kind not in "bu" and x.dtype != dtype:  # spikes multiply as they are; other values in the dtype
        x = x.astype(dtype)
    b, h, wd, c = x.shape
    grid = np.ascontiguousarray(x.transpose(1, 2, 0, 3)).reshape(h, wd, b * c)
    out = np.zeros((ho, wo, b * c), dtype)
    buffer = np.empty_like(out)
    for i in range(w.shape[1]):
        oy, iy, rows = _reach(i, stride[0], padding[0], dilation[0], h, ho)
        for j in range(w.shape[2]):
            ox, ix, cols = _reach(j, stride[1], padding[1], dilation[1], wd, wo)
            if rows and cols:
                part = buffer[:rows, :cols]
                np.multiply(grid[iy, ix], np.tile(w[:, i, j, 0], b), out=part)
                out[oy, ox] += part
    return np.ascontiguousarray(out.reshape(ho, wo, b, c).transpose(2, 0, 1, 3))


def _reach(tap: int, stride: int, padding: int, dilation: int, size: int, outputs: int) -> tuple[slice, slice, int]:
    """Along one axis: the outputs whose window puts ``tap`` inside the map (input o s + tap d - p in [0, size)),
    the inputs they read there, and how many."""
    first = max(0, -(-(padding - tap * dilation) // stride))
    count = max(0, min(outputs, (size - 1 + padding - tap * dilation) // stride + 1) - first)
    start = first * stride + tap * dilation - padding
    return slice(first, first + count), slice(start, start + stride * count, stride), count


def _band(taps: np.ndarray, stride: int, dilation: int, ho: int, h_padded: int) -> np.ndarray:
    """[C, H', H_padded]: band[c, o, o s + k d] = taps[c, k], so that out[b, o, w, c] = sum_k taps[c, k]
    xp[b, o s + k d, w, c] is one GEMM per channel (depthwise, or one-channel, kernels [kH, 1] along H)."""
    band = np.zeros((taps.shape[0], ho, h_padded), taps.dtype)
    rows = np.arange(ho)
    for k in range(taps.shape[1]):
        band[:, rows, rows * stride + k * dilation] = taps[:, k : k + 1]
    return band
