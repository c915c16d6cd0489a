"""What the weight-carrying synapses (conv, dense) share: 8-bit mantissas with a per-layer exponent, and
their part in the scale of the LIF group they feed (see ``spikeport.convert.quantize``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.counting import CountOps
from spikeport.fixedpoint import Ops
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels.base import Attr, Counts, QuantError, SynapseRole, between, ceil_log2, ints

W8 = (fx.WEIGHT_MIN, fx.WEIGHT_MAX)
EXP = Attr("weight_exp", int, True, between(-16, 16))
# how much finer the mantissas are than the float weights (the conversion report's error scale); a record
GAIN_EXP = Attr("gain_exp", int, True, between(-64, 64), optional=True)
# netx imports: the netx layer a synapse came from when it is not its own op, and the input block's
# (weight, bias) transform; the netx export writes them back
NETX_ATTRS = (Attr("netx_type", str, optional=True), Attr("netx_transform", tuple, check=ints(2), optional=True))
WEIGHT_ERROR = QuantError(
    "weight", "weight_mant", lambda node: 2.0 ** (node.attrs["weight_exp"] - node.attrs["gain_exp"]), W8
)


def in_scale_exp(graph: Graph, node: Node) -> int:
    """log2 of one input unit in float units: 2**-frac_bits for pixels, 1 for spikes and sums."""
    src = graph.nodes[node.inputs[0]]
    return -src.attrs["frac_bits"] if src.op == "input" and "frac_bits" in src.attrs else 0


def weight_exponent(w: np.ndarray, gain_exp: int, no_floor: bool) -> int:
    """The per-layer exponent with the least squared error of the 8-bit mantissas: the max-based one, or
    one or two steps finer when clipping a few outliers buys resolution for all other weights."""
    scaled = np.asarray(w, np.float64) * 2.0**gain_exp
    top = float(np.abs(scaled).max())
    e_max = ceil_log2(top / fx.WEIGHT_MAX) if top > 0 else 0
    best, best_err = e_max, np.inf
    for e in (e_max, e_max - 1, e_max - 2):
        if no_floor and e < 0:
            continue
        q = np.clip(np.rint(scaled / 2.0**e), fx.WEIGHT_MIN, fx.WEIGHT_MAX) * 2.0**e
        err = float(np.sum((q - scaled) ** 2))
        if err < best_err:
            best, best_err = e, err
    return max(best, 0) if no_floor else best


def weight_synapse(needs_exact_sum: Callable[[Graph, Node], bool]) -> SynapseRole:
    """``needs_exact_sum(graph, node)``: the Lava mapping cannot floor this path's sum (see quantize.py)."""

    def magnitude(graph: Graph, node: Node) -> float:
        return float(np.abs(node.params["weight"]).max()) * 2.0 ** in_scale_exp(graph, node)

    def shortfall(graph: Graph, node: Node, sigma_exp: int) -> int:
        if not needs_exact_sum(graph, node):
            return 0
        return -weight_exponent(node.params["weight"], sigma_exp + in_scale_exp(graph, node), no_floor=False)

    def plan(graph: Graph, node: Node, sigma_exp: int) -> None:
        gain_exp = sigma_exp + in_scale_exp(graph, node)
        e = weight_exponent(node.params["weight"], gain_exp, no_floor=needs_exact_sum(graph, node))
        node.attrs["gain_exp"], node.attrs["weight_exp"] = int(gain_exp), int(e)

    def fold_tau(node: Node, tau: float) -> None:
        node.params["weight"] = node.params["weight"] / tau
        if "bias" in node.params:
            node.params["bias"] = node.params["bias"] / tau

    return SynapseRole(plan, fold_tau, magnitude, shortfall)


def quantize_weight(node: Node, params: Mapping[str, Any], ops: Ops) -> dict[str, Any]:
    a = node.attrs
    w = params["weight"] * 2.0 ** (a["gain_exp"] - a["weight_exp"])
    return {"weight_mant": ops.clip(ops.round(w), fx.WEIGHT_MIN, fx.WEIGHT_MAX)}


def split_counts(ops: CountOps, extra: dict[str, Any]) -> Counts:
    """A split synapse's relay neurons (docs/lowering.md section 11): each partial sum is a neuron update every
    step and, where it is non-zero, a graded message to the one synapse that sums it."""
    if "partial_sums" not in extra:
        return {}
    partial = extra["partial_sums"]
    return {"neuron_updates": ops.size(partial), "macs": ops.nonzero(partial)}
