"""maxpool: the max over each k x k window of spikes (= OR on spikes), channels-last, zero padding."""

from __future__ import annotations

from typing import Any

from spikeport import counting as C, fixedpoint as fx
from spikeport.fixedpoint import Array
from spikeport.ir.graph import Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import Attr, Kernel, OpSpec, Shape, Step, between, positive
from spikeport.value_kinds import SPIKES

# a k x k window every stride positions: maxpool's and maxpool_activation's attributes and output shape
POOL_ATTRS = (
    Attr("kernel", int, check=positive),
    Attr("stride", int, check=positive),
    Attr("padding", int, check=between(0, 8)),
)


def pool_shape(node: Node, shapes: list[Shape]) -> Shape:
    h, w, c = shapes[0]
    k, s, p = node.attrs["kernel"], node.attrs["stride"], node.attrs["padding"]
    return C.conv_out_size(h, k, s, p, 1), C.conv_out_size(w, k, s, p, 1), c


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    a = node.attrs
    return fx.maxpool(ctx.ops, ins[0], a["kernel"], a["stride"], a["padding"])


KERNELS.add(
    "maxpool",
    Kernel(
        OpSpec(
            "maxpool",
            (SPIKES,),
            (1, 1),
            SPIKES,
            POOL_ATTRS,
            (),
            pool_shape,
            doc=__doc__ or "",
        ),
        step=_step,
        count=lambda ops, node, ins, out, extra: {"spikes": ops.nonzero(out)},
        counters=("spikes",),
    ),
)
