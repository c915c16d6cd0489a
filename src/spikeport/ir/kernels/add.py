"""add: the elementwise sum of two or more spike or integer maps (SEW residual): small non-negative integers."""

from __future__ import annotations

from typing import Any

from spikeport.fixedpoint import Array
from spikeport.ir.graph import Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import Kernel, OpSpec, Step, same_shape, sum_inputs
from spikeport.value_kinds import INTEGER, SPIKES


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    return sum_inputs(ins)


KERNELS.add(
    "add",
    Kernel(OpSpec("add", (SPIKES, INTEGER), (2, 64), INTEGER, (), (), same_shape, doc=__doc__ or ""), step=_step),
)
