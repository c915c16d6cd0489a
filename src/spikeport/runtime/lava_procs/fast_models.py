"""Faster CPU ProcessModels for three *standard* Lava processes, bit-exact with Lava's own.

The processes stay Lava's (``Conv``, ``Sparse``, ``DelaySparse``: the ones with Loihi 2 chip models); only
their CPU simulation is sped up, selected with ``exception_proc_model_map`` in the run config. Each
subclass keeps Lava's weight handling and changes only how the same integer sum is computed:

- ``DelaySparse``: Lava rebuilds the stacked per-delay weight matrix (a ``vstack`` of the whole matrix)
  at every time step; it is built once here.
- ``Sparse``: boolean column slicing of a CSR matrix -> one sparse mat-vec product.
- ``Conv``: Lava's scipy fallback loops over every (out, in) channel pair with ``convolve2d``; here one
  exact integer correlation (``fixedpoint.conv2d_nhwc``) with the kernel flipped back (Lava convolves).

tests/test_lava_backend.py runs each model against Lava's original on random inputs.
"""
from __future__ import annotations

import numpy as np
from lava.proc.conv import utils as conv_utils
from lava.proc.conv.models import PyConvModelFixed
from lava.proc.sparse.models import PyDelaySparseModelBitAcc, PySparseModelBitAcc

from spikeport import fixedpoint as fx


class FastDelaySparseModel(PyDelaySparseModelBitAcc):
    _stacked = None

    def calc_act(self, s_in) -> np.ndarray:
        if self._stacked is None:
            self._stacked = self.get_delay_wgts_mat(self.weights, self.delays, self.a_buff.shape[-1] - 1)
        return np.reshape(self._stacked.dot(s_in), (self.a_buff.shape[-1], self.weights.shape[0])).T


class FastSparseModel(PySparseModelBitAcc):
    def run_spk(self):
        if self.num_message_bits.item() > 0 or not self.weights_set:
            return super().run_spk()
        self.a_out.send(self.a_buff)
        s_in = self.s_in.recv().astype(bool).astype(np.int64)
        a_accum = np.asarray(self.weights.dot(s_in)).astype(np.int64)
        self.a_buff = (np.left_shift(a_accum, self.weight_exp) if self.weight_exp > 0
                       else np.right_shift(a_accum, -self.weight_exp))


class FastConvModel(PyConvModelFixed):
    def run_spk(self) -> None:
        self.a_out.send(self.a_buf)
        s_in = self.s_in.recv()
        if self.num_message_bits.item() == 0:
            s_in = s_in.astype(bool)
        w = np.asarray(self.weight)[:, ::-1, ::-1, :]
        out = fx.conv2d_nhwc(s_in.astype(np.int64)[None], w, tuple(self.stride), tuple(self.padding),
                             tuple(self.dilation), int(self.groups[0]))[0]
        self.a_buf = conv_utils.signed_clamp(out, bits=24)


def exception_map() -> dict:
    from lava.proc.conv.process import Conv
    from lava.proc.sparse.process import DelaySparse, Sparse

    return {Conv: FastConvModel, Sparse: FastSparseModel, DelaySparse: FastDelaySparseModel}
