"""dense: a = (x W^T) << weight_exp, token-wise, on spikes or integer residual sums."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spikeport import fixedpoint as fx
from spikeport.errors import ConversionError
from spikeport.fixedpoint import Array
from spikeport.ir.kernels import KERNELS, value_kind
from spikeport.ir.kernels.base import Attr, Counts, Kernel, OpSpec, Param, Shape, Step, positive
from spikeport.ir.kernels.synapse import EXP, W8, WEIGHT_ERROR, quantize_weight, weight_synapse
from spikeport.metrics import counting as C

if TYPE_CHECKING:
    from spikeport.ir.graph import Graph, Node


def _shape(node: Node, shapes: list[Shape]) -> Shape:
    if shapes[0][-1] != node.attrs["in_features"]:
        raise ConversionError(
            f"node '{node.name}': input has {shapes[0][-1]} features, in_features={node.attrs['in_features']}"
        )
    return shapes[0][:-1] + (node.attrs["out_features"],)


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    return fx.dense(ctx.ops, ins[0], ctx.qparams[node.name]["weight_mant"], node.attrs["weight_exp"])


def _count(node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    events, valued = C.dense_events(ins[0], node.attrs["out_features"])
    return {"synops": events, "synops_valued": valued}


def _needs_exact_sum(graph: Graph, node: Node) -> bool:
    # on spikes and relay sums the Lava lowering shares W across the tokens as a 1 x 1 Conv (stored once per
    # core, not N times), and Conv applies no exponent (lava#803): the sum may not floor, so sigma is made
    # finer instead. Pixels and sigma-delta messages stay on a Sparse, which floors.
    return value_kind(graph, node.inputs[0]) in ("spikes", "integer")


KERNELS.add(
    "dense",
    Kernel(
        OpSpec(
            "dense",
            ("spikes", "integer", "graded"),
            (1, 1),
            "activation",
            (Attr("in_features", int, check=positive), Attr("out_features", int, check=positive), EXP),
            (Param("weight", "weight_mant", W8),),
            _shape,
            lambda node, layout: {"weight": (node.attrs["out_features"], node.attrs["in_features"])},
            doc=__doc__ or "",
        ),
        step=_step,
        synapse=weight_synapse(_needs_exact_sum),
        quantize=quantize_weight,
        quant_error=WEIGHT_ERROR,
        count=_count,
        fan_in=lambda node: int(node.attrs["in_features"]),
        synapses_per_input=lambda node: float(node.attrs["out_features"]),
    ),
)
