"""Conversion passes over the IR, each small and testable alone, grouped into named flows.

fold_bn          BatchNorm statistics on a conv/dense node -> its weight and bias (y = W'x + b')
fold_tau         the LIF's 1/tau moves into its synapses: a = y / tau, bias / tau, dv = 4096 / tau
to_channels_last conv weights (out, in, kh, kw) -> (out, kh, kw, in); the IR runs channels-last
move_bias        synapse biases -> the consuming LIF's bias (Loihi has a per-neuron bias, not per synapse)
quantize         floats -> Loihi 2 integers (see quantize.py)
check_ranges     every integer inside its Loihi field (validate with quantized=True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels.lif import synapse_paths, synapse_role
from spikeport.ir.ops import validate


def fold_bn(graph: Graph) -> Graph:
    for node in graph.nodes.values():
        p = node.params
        if "bn_mean" not in p:
            continue
        gain = p["bn_weight"] / np.sqrt(p["bn_var"] + p["bn_eps"][0])
        w = p["weight"]
        p["weight"] = (w * gain.reshape((-1,) + (1,) * (w.ndim - 1))).astype(np.float32)
        bias = p.get("bias", np.zeros_like(gain))
        p["bias"] = ((bias - p["bn_mean"]) * gain + p["bn_bias"]).astype(np.float32)
        for key in ("bn_mean", "bn_var", "bn_weight", "bn_bias", "bn_eps"):
            del p[key]
    return graph


def lif_inputs(graph: Graph, lif_name: str) -> list[Node]:
    """The synapses of a LIF (seen through an maxpool_activation: the max commutes with 1/tau and the bias)."""
    return synapse_paths(graph, graph.nodes[lif_name])


def fold_tau(graph: Graph) -> Graph:
    """SpikingJelly: H = V + (X - V)/tau. Loihi: v = v (1 - dv/4096) + a. So a = X / tau."""
    if graph.meta.get("tau_folded"):
        return graph
    for lif in graph.by_op("lif"):
        tau = lif.attrs["tau"]
        for src in lif_inputs(graph, lif.name):
            synapse_role(graph, lif, src).fold_tau(src, tau)
        lif.attrs["dv"] = int(round(4096 / tau))
        lif.attrs["du"] = 4095  # the current forgets every step: u = a_in << 6
    graph.meta["tau_folded"] = True
    return graph


def to_channels_last(graph: Graph) -> Graph:
    if graph.meta.get("layout") == "channels_last":
        return graph
    for node in graph.by_op("conv"):
        node.params["weight"] = np.ascontiguousarray(node.params["weight"].transpose(0, 2, 3, 1))
    graph.meta["layout"] = "channels_last"
    return graph


def move_bias(graph: Graph) -> Graph:
    for lif in graph.by_op("lif"):
        channels = lif.shape[-1]
        bias = np.zeros(channels, np.float32)
        for src in lif_inputs(graph, lif.name):
            if "bias" in src.params:
                bias = bias + src.params.pop("bias")
        lif.params["bias"] = bias.astype(np.float32)
    return graph


def check_ranges(graph: Graph) -> Graph:
    if not graph.quantized:
        raise ConversionError("check_ranges runs after quantize")
    validate(graph)
    return graph


def run_flow(graph: Graph, passes: Sequence[Callable[[Graph], Graph]]) -> Graph:
    for p in passes:
        graph = p(graph)
    return graph


PRE_QUANT_FLOW = (fold_bn, fold_tau, to_channels_last, move_bias)
