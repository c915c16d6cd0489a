"""add: the elementwise sum of two or more spike or integer maps (SEW residual): small non-negative integers."""
from __future__ import annotations

from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import Kernel, OpSpec, same_shape


def _step(ctx, node, ins, state, extra):
    total = ins[0]
    for x in ins[1:]:
        total = total + x
    return total


KERNELS.add("add", Kernel(OpSpec("add", ("spikes", "integer"), (2, 64), "integer", (), (), same_shape,
                                 doc=__doc__ or ""), step=_step))
