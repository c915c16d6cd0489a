"""Faster CPU ProcessModels for three *standard* Lava processes, bit-exact with Lava's own.

The processes stay Lava's (``Conv``, ``Sparse``, ``DelaySparse``: the ones with Loihi 2 chip models); only
their CPU simulation is sped up, selected with ``exception_proc_model_map`` in the run config. Each
subclass keeps Lava's weight handling (clipping, truncation, exponent, one step of buffering) and changes
only how the same integer sum is computed:

- ``Sparse`` / ``DelaySparse`` whose weights are block-diagonal, ``kron(I_n, B)`` (a token-wise linear
  layer: the same ``B`` for each of n tokens): one small dense GEMM, ``S[n, in] @ B.T``, instead of a
  sparse mat-vec over n copies of ``B``. Found from the weights themselves when the model starts.
- ``Sparse`` otherwise: one sparse mat-vec product instead of Lava's boolean column slicing.
- ``DelaySparse`` otherwise: the stacked per-delay weight matrix is built once, not at every step.
- ``Conv``: Lava's scipy fallback loops over every (out, in) channel pair with ``convolve2d``; here one
  exact integer correlation (``fixedpoint.conv2d_nhwc``) with the kernel flipped back (Lava convolves).

The integer products are ``fixedpoint``'s (IntOps.matmul: float64 BLAS, exact below 2**53). tests/test_lava_backend.py
runs each model against Lava's original on random inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from lava.proc.conv import utils as conv_utils
from lava.proc.conv.models import PyConvModelFixed
from lava.proc.sparse.models import PyDelaySparseModelBitAcc, PySparseModelBitAcc
from scipy import sparse

from spikeport import fixedpoint as fx

# A block-diagonal matrix's block is multiplied as a dense GEMM only when at least this share of it is non-zero
# (a token-wise layer's W is dense; a routing block of ones, one per row, is not)
MIN_BLOCK_DENSITY = 0.125


class BlockDiagonal:
    """A sparse matrix that is ``kron(I_n, block)``, multiplied as ``n`` rows of one dense GEMM."""

    def __init__(self, n: int, block: np.ndarray):
        self.n, self.block_t = n, np.ascontiguousarray(block.T, dtype=np.float64)  # integers, kept as float64

    @classmethod
    def find(cls, w: sparse.spmatrix, min_density: float = MIN_BLOCK_DENSITY) -> BlockDiagonal | None:
        """The largest ``n >= 2`` with ``w == kron(I_n, B)`` and ``B`` at least ``min_density`` non-zero, or None.

        Checked on the non-zeros alone (block coordinates and values equal in every block): a candidate block is
        never made dense, which for an unstructured [49152, 196608] window matrix meant a 19 GB array at n = 2.
        A sparse ``B`` (a routing matrix of ones) stays a sparse product: its dense GEMM costs more time and
        memory than the mat-vec it replaces."""
        csr = sparse.csr_matrix(w)
        rows, cols = csr.shape
        g = int(np.gcd(rows, cols))
        divisors = sorted((d for d in range(2, g + 1) if g % d == 0), reverse=True)
        candidates = [n for n in divisors if _dense_enough(csr, n, min_density) and _diagonal_at_edges(csr, n)]
        if not candidates:  # most matrices end here, before the copies below (86.7 M synapses: 2 GB of them)
            return None
        coo = sparse.coo_matrix(csr, copy=True)
        coo.eliminate_zeros()
        nnz = coo.nnz
        order = np.lexsort((coo.col, coo.row))
        r, c, v = coo.row[order].astype(np.int64), coo.col[order].astype(np.int64), coo.data[order]
        for n in candidates:
            br, bc = rows // n, cols // n
            if nnz % n or nnz // n < min_density * br * bc:
                continue
            block_of = r // br
            if not np.array_equal(block_of, c // bc) or np.any(np.bincount(block_of, minlength=n) != nnz // n):
                continue
            # sorted by (row, col) and every block holding nnz / n entries: row k of these views is block k
            local_r, local_c = (r - block_of * br).reshape(n, -1), (c - block_of * bc).reshape(n, -1)
            values = v.reshape(n, -1)
            if (local_r == local_r[0]).all() and (local_c == local_c[0]).all() and (values == values[0]).all():
                block = np.zeros((br, bc), np.float64)
                block[local_r[0], local_c[0]] = values[0]
                return cls(n, block)
        return None

    def dot(self, s: np.ndarray) -> np.ndarray:
        return fx.INT.matmul(np.asarray(s).reshape(self.n, -1), self.block_t).reshape(-1)


def _dense_enough(w: sparse.csr_matrix, n: int, min_density: float) -> bool:
    rows, cols = w.shape
    return bool(w.nnz % n == 0 and w.nnz // n >= min_density * (rows // n) * (cols // n))


def _diagonal_at_edges(w: sparse.csr_matrix, n: int, samples: int = 64) -> bool:
    """Whether the first and last row of (up to ``samples`` of) the ``n`` diagonal blocks keep their synapses inside
    the block's columns: a convolution's window rows straddle the blocks and fail here at once."""
    br, bc = w.shape[0] // n, w.shape[1] // n
    for k in np.unique(np.linspace(0, n - 1, min(n, samples)).astype(np.int64)):
        for row in (k * br, (k + 1) * br - 1):
            cols = w.indices[w.indptr[row] : w.indptr[row + 1]]
            if cols.size and (cols.min() < k * bc or cols.max() >= (k + 1) * bc):
                return False
    return True


def sparse_product(w: sparse.spmatrix) -> Callable[[np.ndarray], np.ndarray]:
    """s -> w @ s (int64) for integer s, exact: in int32 where the largest sum provably fits it (no copy of the
    weights per step: a mixed int32 / int64 product made scipy copy all of them, 0.7 GB a step for the 86.7 M
    synapses of an ImageNet stem), else with one int64 copy of the weights made on first need."""
    narrow = sparse.csr_matrix(w, dtype=np.int32)
    fan_in = int(np.diff(narrow.indptr).max(initial=0))
    largest = int(np.abs(narrow.data).max(initial=0))
    wide: list[sparse.csr_matrix] = []

    def product(s: np.ndarray) -> np.ndarray:
        top = int(np.abs(s).max(initial=0))
        if fan_in * largest * top < 2**31:
            return np.asarray(narrow.dot(s.astype(np.int32, copy=False)), np.int64)
        if not wide:
            wide.append(sparse.csr_matrix(narrow, dtype=np.int64))
        return np.asarray(wide[0].dot(s))

    return product


class FastSparseModel(PySparseModelBitAcc):
    # callable s_in -> weights @ s_in, chosen once the weights are set
    _product: Callable[[np.ndarray], np.ndarray] | None = None

    def run_spk(self) -> None:
        if not self.weights_set:
            super().run_spk()
            return
        if self._product is None:
            blocks = BlockDiagonal.find(self.weights)
            self._product = blocks.dot if blocks is not None else sparse_product(self.weights)
        self.a_out.send(self.a_buff)
        self.a_buff: np.ndarray = fx.INT.floor_shift(self._product(_received(self)).astype(np.int64), self.weight_exp)


def _received(model: Any) -> np.ndarray:  # a Lava Sparse model (untyped)
    """s_in as Lava's models read it: binary spikes as 0/1, graded spikes as their integer payload."""
    s_in = model.s_in.recv()
    out: np.ndarray = (s_in.astype(bool) if model.num_message_bits.item() == 0 else s_in).astype(np.int64)
    return out


class FastDelaySparseModel(PyDelaySparseModelBitAcc):
    _calc: Callable[[np.ndarray], np.ndarray] | None = None  # callable s_in -> activation [n_out, max_delay + 1]
    _uniform: tuple[int, BlockDiagonal] | None = None  # (delay, BlockDiagonal) when all synapses share a delay
    _ring: np.ndarray | None = None  # [max_delay + 1, n_out]: a_buff's columns as rows, rotating

    def run_spk(self) -> None:
        if self._calc is None and self.weights_set:
            self._choose_calc()
        if self._uniform is None:
            super().run_spk()
            return
        # Lava's step (send column 0, shift the columns left, add W s at column D) on a ring of rows:
        # row (head + j) % slots is column j. The Var a_buff is not kept up to date on this path.
        delay, blocks = self._uniform
        if self._ring is None:
            self._ring, self._head = np.ascontiguousarray(self.a_buff.T, dtype=np.int64), 0
        ring, slots = self._ring, self._ring.shape[0]
        self.a_out.send(ring[self._head])
        s_in = _received(self)
        ring[self._head] = 0
        self._head = (self._head + 1) % slots
        ring[(self._head + delay) % slots] += fx.INT.floor_shift(blocks.dot(s_in), self.weight_exp)

    def calc_act(self, s_in: np.ndarray) -> np.ndarray:
        if self._calc is None:
            self._choose_calc()
        assert self._calc is not None  # _choose_calc sets it
        return self._calc(s_in)

    def _choose_calc(self) -> None:
        slots = self.a_buff.shape[-1]
        delay = _uniform_delay(self.weights, self.delays)
        blocks = BlockDiagonal.find(self.weights) if delay is not None else None
        if blocks is not None and delay is not None:  # blocks is None when delay is None
            self._uniform = (delay, blocks)

            def calc(s_in: np.ndarray) -> np.ndarray:
                act = np.zeros((self.weights.shape[0], slots), np.int64)
                act[:, delay] = blocks.dot(s_in)
                return act
        else:
            stacked = self.get_delay_wgts_mat(self.weights, self.delays, slots - 1)

            def calc(s_in: np.ndarray) -> np.ndarray:
                out: np.ndarray = np.reshape(stacked.dot(s_in), (slots, self.weights.shape[0])).T
                return out

        self._calc = calc


def _uniform_delay(weights: sparse.spmatrix, delays: sparse.spmatrix) -> int | None:
    """The one delay every non-zero weight has, or None (a weight without a stored delay has delay 0)."""
    # copies: eliminate_zeros works in place, and csr_matrix(x) shares x's arrays (a stored delay of 0 would
    # otherwise corrupt the model's own delays matrix)
    w, d = sparse.csr_matrix(weights, copy=True), sparse.csr_matrix(delays, copy=True)
    w.eliminate_zeros()
    d.eliminate_zeros()
    values = np.unique(d.data)
    if w.nnz == 0 or len(values) > 1:
        return None
    if len(values) == 0:
        return 0
    covered = w.multiply(d != 0).count_nonzero()
    return int(values[0]) if covered == w.nnz else None


class FastConvModel(PyConvModelFixed):
    plan: fx.ConvPlan | None = None  # the flipped weights, prepared once (they do not change during a run)

    def run_spk(self) -> None:
        self.a_out.send(self.a_buf)
        s_in = self.s_in.recv()
        if self.num_message_bits.item() == 0:
            s_in = s_in.astype(bool)
        if self.plan is None:
            w = np.asarray(self.weight)[:, ::-1, ::-1, :]
            args = (tuple(self.stride), tuple(self.padding), tuple(self.dilation), int(self.groups[0]))
            self.plan = fx.ConvPlan(w, *args, np.float64)  # exact: every sum far below 2**53
        out = self.plan(s_in[None])[0].astype(np.int64)
        self.a_buf: np.ndarray = conv_utils.signed_clamp(out, bits=24)


def exception_map() -> dict[type, type]:
    from lava.proc.conv.process import Conv
    from lava.proc.sparse.process import DelaySparse, Sparse

    return {Conv: FastConvModel, Sparse: FastSparseModel, DelaySparse: FastDelaySparseModel}
