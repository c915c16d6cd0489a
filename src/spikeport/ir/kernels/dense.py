"""dense: a = (x W^T) << weight_exp, token-wise, on spikes or integer residual sums.

With an optional ``delay`` [out, in] (0..62 steps, netx's axonal delays, ``lava.proc.dense.DelayDense``): a[t] =
sum_k (x[t - k] (W * [delay == k])^T) << weight_exp, i.e. each synapse delivers its input ``delay`` steps late. The
executors keep the last ``max(delay)`` inputs; Lava holds the pending sums in the synapse's delay buffer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from spikeport import counting as C, fixedpoint as fx
from spikeport.errors import ConversionError
from spikeport.fixedpoint import Array
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS, value_kind
from spikeport.ir.kernels.base import Attr, Counts, Kernel, OpSpec, Param, Shape, Step, positive
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
from spikeport.value_kinds import ACTIVATION, GRADED, INTEGER, SPIKES

MAX_DELAY = 62  # netx clips axonal delays to 0..62 (Loihi 2: 6 bits)


def _shape(node: Node, shapes: list[Shape]) -> Shape:
    if shapes[0][-1] != node.attrs["in_features"]:
        raise ConversionError(
            f"node '{node.name}': input has {shapes[0][-1]} features, in_features={node.attrs['in_features']}"
        )
    return shapes[0][:-1] + (node.attrs["out_features"],)


def parts(node: Node) -> int:
    """The partial sums each output is split into (``counting.fan_in_parts``: more than MAX_FAN_IN inputs per
    neuron fit no core; 1: not split)."""
    return C.fan_in_parts(1, node.attrs["in_features"])


def _prepare(node: Node, q: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``delays``, for a dense with delays: (k, the weights of the synapses of delay k) for every delay present;
    ``parts``, for a split one: the weights of each run of input channels, [out, in / parts]."""
    if "delay" in q:
        return {"delays": [(int(k), q["weight_mant"] * (q["delay"] == k)) for k in np.unique(q["delay"])], "parts": []}
    n = parts(node)
    c = node.attrs["in_features"] // n
    return {"delays": [], "parts": [q["weight_mant"][:, j * c : (j + 1) * c] for j in range(n)] if n > 1 else []}


def _partial_sums(ops: fx.Ops, x: Array, split: list[Any]) -> Array:
    """The partial sums a split layer's relay neurons hold: each run of input channels through its weights,
    [..., out parts] in ``fx.sum_parts``' layout."""
    c = x.shape[-1] // len(split)
    return ops.concat([ops.matmul(x[..., j * c : (j + 1) * c], w.T) for j, w in enumerate(split)], axis=-1)


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    q, e = ctx.qparams[node.name], node.attrs["weight_exp"]
    by_delay, split = ctx.prepared[node.name]["delays"], ctx.prepared[node.name]["parts"]
    if split:  # the partial sums the relay neurons hold (counted), then their exact sum
        extra["partial_sums"] = _partial_sums(ctx.ops, ins[0], split)
        return ctx.ops.floor_shift(fx.sum_parts(extra["partial_sums"], 1, len(split)), e)
    if not by_delay:
        return fx.dense(ctx.ops, ins[0], q["weight_mant"], e)
    history = state.setdefault("history", [])  # the inputs of the last max(delay) + 1 steps, newest first
    history.insert(0, ins[0])
    del history[by_delay[-1][0] + 1 :]
    out = fx.dense(ctx.ops, ins[0], q["weight_mant"] * 0, e)
    for k, w in by_delay:  # x[t - k] through the synapses of delay k
        if k < len(history):
            out = out + fx.dense(ctx.ops, history[k], w, e)
    return out


def _count(ops: C.CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    if parts(node) > 1 and "partial_sums" not in extra:  # a replay of recorded spikes: recompute the parts
        split = _prepare(node, node.params)["parts"]
        if split:
            extra["partial_sums"] = _partial_sums(fx.INT, np.asarray(ins[0]), split)
    events, valued = C.dense_events(ins[0], node.attrs["out_features"], extra.get("input_kind") == SPIKES, ops)
    return {**split_counts(ops, extra), "synops": events, "synops_valued": valued}


def _needs_exact_sum(graph: Graph, node: Node) -> bool:
    # on spikes and relay sums the Lava lowering shares W across the tokens as a 1 x 1 Conv (stored once per
    # core, not N times), and Conv applies no exponent (lava#803): the sum may not floor, so sigma is made
    # finer instead. Pixels and sigma-delta messages stay on a Sparse, which floors.
    return value_kind(graph, node.inputs[0]) in (SPIKES, INTEGER)


KERNELS.add(
    "dense",
    Kernel(
        OpSpec(
            "dense",
            (SPIKES, INTEGER, GRADED),
            (1, 1),
            ACTIVATION,
            (
                Attr("in_features", int, check=positive),
                Attr("out_features", int, check=positive),
                EXP,
                GAIN_EXP,
                *NETX_ATTRS,
            ),
            (Param("weight", "weight_mant", W8), Param("delay", "delay", (0, MAX_DELAY), optional=True)),
            _shape,
            lambda node, layout: dict.fromkeys(
                ("weight", "delay"), (node.attrs["out_features"], node.attrs["in_features"])
            ),
            doc=__doc__ or "",
        ),
        step=_step,
        prepare=_prepare,
        neurons=lambda node: int(np.prod(node.shape)) * parts(node) if parts(node) > 1 else 0,
        synapse=weight_synapse(_needs_exact_sum),
        quantize=quantize_weight,
        quant_error=WEIGHT_ERROR,
        count=_count,
        counters=("synops", "synops_valued", "macs", "neuron_updates"),  # macs, neuron_updates: a split one's relays
        fan_in=lambda node: int(node.attrs["in_features"]),
        # the delay buffer: a pending 24-bit sum per output neuron for each step of delay
        state_bytes=lambda node: (
            int(np.prod(node.shape)) * 3 * int(node.params["delay"].max()) if "delay" in node.params else 0
        ),
        synapses_per_input=lambda node: float(node.attrs["out_features"]),
    ),
)
