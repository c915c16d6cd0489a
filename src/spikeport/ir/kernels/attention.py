"""attention: a = core(q, k, v) * out_mant << out_exp on binary q, k, v spikes; core = Q (K^T V) per head
(variant 'ssa') or the causal running sum S_n = sum_{j<=n} k_j^T v_j read by q_n (variant 'causal')."""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport import chip_limits, counting as C, fixedpoint as fx
from spikeport.fixedpoint import Array
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import (
    Attr,
    Counts,
    Kernel,
    OpSpec,
    Step,
    SynapseRole,
    between,
    heads_shape,
    mantissa_exp,
    positive,
    tokens,
)
from spikeport.ir.kernels.synapse import W8
from spikeport.value_kinds import ACTIVATION, SPIKES

CORES = {"ssa": fx.ssa_core, "causal": fx.causal_core}


PLACEMENTS = ("chip", "host")  # the node's optional 'placement': where the user wants its core computed


def on_chip(node: Node) -> bool:
    """Whether the chip-native lowering applies: unless the user asked for the host AttentionCore (the node's
    ``placement`` 'host') or the tokens fit no chip token grid (``counting.token_grid``: more than 64 x 64)."""
    return node.attrs.get("placement", "chip") == "chip" and C.token_grid(node.shape[:-1]) is not None


def place_on_host(graph: Graph) -> list[str]:
    """The user's fallback: every attention node's core computed by the host AttentionCore (``placement``
    'host') instead of the chip-native token mixing; returns the nodes' names."""
    names = [node.name for node in graph.by_op("attention")]
    for name in names:
        graph.nodes[name].attrs["placement"] = "host"
    return names


def head_chains(node: Node) -> list[tuple[int, int]]:
    """The chip-native lowering's chains of heads [first, last) (chip_limits.MAX_PAIR_NEURONS pair neurons at
    most per chain, one head at least)."""
    heads, tokens = node.attrs["heads"], int(np.prod(node.shape[:-1]))
    dh = node.shape[-1] // heads
    per_chain = max(1, chip_limits.MAX_PAIR_NEURONS // (tokens * dh * dh))
    return [(first, min(heads, first + per_chain)) for first in range(0, heads, per_chain)]


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    a = node.attrs
    q, k, v = (tokens(x) for x in ins)
    core = CORES[a["variant"]](ctx.ops, q, k, v, a["heads"])
    return fx.scale(ctx.ops, core, a["out_mant"], a["out_exp"]).reshape(ins[0].shape)


def _count(ops: C.CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    q, k, v = (tokens(x) for x in ins)
    b, n, c = q.shape
    heads = node.attrs["heads"]
    if not on_chip(node):  # the host core: its accumulates and the out_mant rescale
        return {"synops": C.ssa_events(q, k, v, heads, ops), "macs": b * n * c}
    synops, messages = C.pair_mix_counts(q, k, v, heads, node.attrs["variant"] == "causal", ops)
    neurons = b * C.pair_mix_neurons(n, c, heads)
    if len(head_chains(node)) > 1:  # each chain's sums pass a relay: one update per output, graded messages
        neurons += b * n * c
        messages = messages + ops.nonzero(out)
    return {"synops": synops, "macs": messages, "neuron_updates": neurons}


def _neurons(node: Node) -> int:
    if not on_chip(node):
        return 0
    tokens, channels = int(np.prod(node.shape[:-1])), node.shape[-1]
    relays = tokens * channels if len(head_chains(node)) > 1 else 0
    return C.pair_mix_neurons(tokens, channels, node.attrs["heads"]) + relays


def _plan_path(graph: Graph, node: Node, sigma_exp: int) -> None:
    node.attrs["out_mant"], node.attrs["out_exp"] = mantissa_exp(2.0**sigma_exp * node.attrs["scale"])


def _fold_tau(node: Node, tau: float) -> None:
    node.attrs["scale"] = node.attrs["scale"] / tau


def _state_bytes(node: Node) -> int:
    if on_chip(node):  # recounted from the step's spikes by memoryless neurons: nothing held between steps
        return 0
    return C.kv_state_entries(node.shape[-1], node.attrs["heads"]) * 2  # K^T V (or S): 16-bit entries


KERNELS.add(
    "attention",
    Kernel(
        OpSpec(
            "attention",
            (SPIKES,),
            (3, 3),
            ACTIVATION,
            (
                Attr("heads", int, check=positive),
                Attr("variant", str, check=lambda v: None if v in CORES else f"must be {'|'.join(CORES)}"),
                Attr("scale", float),
                Attr("out_mant", int, True, between(*W8)),
                Attr("out_exp", int, True, between(-24, 16)),
                Attr(
                    "placement",
                    str,
                    check=lambda v: None if v in PLACEMENTS else f"must be {'|'.join(PLACEMENTS)}",
                    optional=True,
                ),
            ),
            (),
            heads_shape,
            doc=__doc__ or "",
        ),
        step=_step,
        synapse=SynapseRole(_plan_path, _fold_tau),
        count=_count,
        counters=("synops", "macs", "neuron_updates"),
        state_bytes=_state_bytes,
        neurons=_neurons,
        fan_in=lambda node: int(np.prod(node.shape[:-1])) if on_chip(node) else 0,
        synapses_per_input=lambda node: float(node.shape[-1] // node.attrs["heads"]) if on_chip(node) else 0.0,
    ),
)
