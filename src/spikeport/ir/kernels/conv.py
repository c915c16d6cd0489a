"""conv: a = conv2d(x, W) << weight_exp (floor shift if < 0), channels-last, on analog pixels (MACs),
spikes or integer residual sums (accumulates). Past chip_limits.MAX_FAN_IN inputs per output the sum is computed as
partial sums over runs of input channels (``parts``), as the Lava lowering's relay neurons hold them: the same
integers, regrouped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from spikeport import counting as C, fixedpoint as fx
from spikeport.errors import ConversionError
from spikeport.fixedpoint import Array
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS, value_kind
from spikeport.ir.kernels.base import Attr, Counts, Kernel, OpSpec, Param, Shape, Step, ints, positive
from spikeport.ir.kernels.synapse import (
    EXP,
    GAIN_EXP,
    NETX_ATTRS,
    W8,
    WEIGHT_ERROR,
    quantize_weight,
    split_counts,
    weight_synapse,
)
from spikeport.value_kinds import ACTIVATION, ANALOG, GRADED, INTEGER, SPIKES


def _shape(node: Node, shapes: list[Shape]) -> Shape:
    (h, w, c), a = shapes[0], node.attrs
    if c != a["in_channels"]:
        raise ConversionError(f"node '{node.name}': input has {c} channels, in_channels={a['in_channels']}")
    return (
        C.conv_out_size(h, a["kernel"][0], a["stride"][0], a["padding"][0], a["dilation"][0]),
        C.conv_out_size(w, a["kernel"][1], a["stride"][1], a["padding"][1], a["dilation"][1]),
        a["out_channels"],
    )


def _param_shapes(node: Node, layout: str) -> dict[str, Shape]:
    a = node.attrs
    cin = a["in_channels"] // a["groups"]
    return {
        "weight": (a["out_channels"], *a["kernel"], cin)
        if layout == "channels_last"
        else (a["out_channels"], cin, *a["kernel"])
    }


def parts(node: Node) -> int:
    """The partial sums each output is split into (``counting.fan_in_parts``): more than MAX_FAN_IN inputs per
    neuron fit no core, so the lowering sums parts of the input channels in relay neurons (1: not split)."""
    a = node.attrs
    return C.fan_in_parts(int(np.prod(a["kernel"])), a["in_channels"] // a["groups"])


def _prepare(node: Node, q: Mapping[str, Any]) -> Any:
    """A split conv's weights regrouped, once, for the conv that computes its partial sums."""
    return fx.split_weight(q["weight_mant"], node.attrs["groups"], parts(node)) if parts(node) > 1 else None


def _partial_sums(ops: fx.Ops, node: Node, x: Array, split: Array) -> Array:
    """The partial sums a split conv's relay neurons hold: a conv of groups x parts groups over the regrouped
    weights (``_prepare``), [..., C_out parts] in ``fx.sum_parts``' layout."""
    a = node.attrs
    return ops.conv2d(x, split, a["stride"], a["padding"], a["dilation"], a["groups"] * parts(node))


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    a = node.attrs
    split = ctx.prepared[node.name]
    if split is not None:  # the partial sums the relay neurons hold (counted), then their exact sum
        extra["partial_sums"] = partial = _partial_sums(ctx.ops, node, ins[0], split)
        return ctx.ops.floor_shift(fx.sum_parts(partial, a["groups"], parts(node)), a["weight_exp"])
    return fx.conv(
        ctx.ops,
        ins[0],
        ctx.qparams[node.name]["weight_mant"],
        a["weight_exp"],
        a["stride"],
        a["padding"],
        a["dilation"],
        a["groups"],
    )


def _fan_in(node: Node) -> int:
    a = node.attrs
    return int(np.prod(a["kernel"]) * a["in_channels"] // a["groups"])


def _count(ops: C.CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    a = node.attrs
    if extra["input_kind"] == ANALOG:
        b, h, w, c = out.shape
        return {"macs": b * C.conv_macs(a["in_channels"], c, a["kernel"], h, w, a["groups"])}
    if parts(node) > 1 and "partial_sums" not in extra:  # a replay of recorded spikes: recompute the parts
        extra["partial_sums"] = _partial_sums(fx.INT, node, np.asarray(ins[0]), _prepare(node, node.params))
    counts = split_counts(ops, extra)
    events, valued = C.conv_events(
        ins[0],
        a["kernel"],
        a["stride"],
        a["padding"],
        a["dilation"],
        a["out_channels"],
        a["groups"],
        extra["input_kind"] == SPIKES,
        ops,
    )
    return {**counts, "synops": events, "synops_valued": valued}


def _needs_exact_sum(graph: Graph, node: Node) -> bool:
    # Lava's Conv applies no exponent (weights are pre-scaled, lava#803): only the graded-pixel stem, which
    # the Lava lowering turns into a Sparse, may floor; the same test as the lowering's
    return value_kind(graph, node.inputs[0]) != ANALOG


KERNELS.add(
    "conv",
    Kernel(
        OpSpec(
            "conv",
            (ANALOG, SPIKES, INTEGER, GRADED),
            (1, 1),
            ACTIVATION,
            (
                Attr("in_channels", int, check=positive),
                Attr("out_channels", int, check=positive),
                # no upper bounds: netx's flatten -> dense is a conv with the whole map as its kernel; the
                # weight's size is bounded (ir.limits) and must match these
                Attr("kernel", tuple, check=ints(2, 1)),
                Attr("stride", tuple, check=ints(2, 1)),
                Attr("padding", tuple, check=ints(2, 0)),
                Attr("dilation", tuple, check=ints(2, 1)),
                Attr("groups", int, check=positive),
                EXP,
                GAIN_EXP,
                *NETX_ATTRS,
            ),
            (Param("weight", "weight_mant", W8),),
            _shape,
            _param_shapes,
            doc=__doc__ or "",
        ),
        step=_step,
        prepare=_prepare,
        neurons=lambda node: int(np.prod(node.shape)) * parts(node) if parts(node) > 1 else 0,
        synapse=weight_synapse(_needs_exact_sum),
        quantize=quantize_weight,
        quant_error=WEIGHT_ERROR,
        count=_count,
        counters=("macs", "synops", "synops_valued", "neuron_updates"),  # neuron_updates: a split one's relays
        fan_in=_fan_in,
        synapses_per_input=lambda node: (
            node.attrs["out_channels"] / node.attrs["groups"] * float(np.prod(node.attrs["kernel"]))
        ),
    ),
)
