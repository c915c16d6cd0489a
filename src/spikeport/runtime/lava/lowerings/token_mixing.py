"""The chip-native q-gated token mixing that attention (SSA, causal) and dendritic are lowered to
(docs/lowering.md): coincidence pairs k AND v in a memoryless LIF, a token-mixing Conv, a ProdNeuron gated by q,
then a rescale Sparse into the attention LIF. ``PairLayout`` says which channels each pair reads and feeds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from spikeport.counting import CONV_FIELD_MAX
from spikeport.errors import ConversionError
from spikeport.ir.graph import Node
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role
from spikeport.runtime.lava.lowerings.builder import (
    LavaNetwork,
    arrival,
    inputs_depth,
    lava_model,
    memoryless_lif,
    sparse_synapse,
    synapse,
)


@dataclass(frozen=True)
class PairLayout:
    """The coincidence pairs of a q-gated token mixing, per token: pair p = row * groups + group reads
    k[k[p]] AND v[v[p]], is gated by q[q[p]] and adds into output channel out[p]. Pairs of one ``group``
    share a token kernel (a Conv group: Lava's Conv takes at most CONV_FIELD_MAX groups)."""

    rows: int
    groups: int
    k: np.ndarray  # [rows * groups] channel indices
    v: np.ndarray
    q: np.ndarray
    out: np.ndarray

    @property
    def size(self) -> int:
        return self.rows * self.groups

    def select(self, channel: np.ndarray, tokens: int, channels: int) -> Any:
        """The 0/1 matrix [tokens * size, tokens * channels] routing channel[p] of each token to its pair p."""
        from scipy import sparse

        rows = np.arange(tokens * self.size)
        cols = (rows // self.size) * channels + np.tile(channel, tokens)
        return sparse.csr_matrix((np.ones(len(rows), np.int64), (rows, cols)), shape=(len(rows), tokens * channels))


def token_mixing(
    net: LavaNetwork, node: Node, layout: PairLayout, kernel: Any, full: bool = False, part: str = ""
) -> Any:
    """The chip-native core of a q-gated token mixing (dendritic, SSA, causal; docs/lowering.md): coincidence
    LIF (k AND v per pair) -> token-mixing Conv (``kernel`` [groups, taps] along the raster tokens; ``full``:
    the anti-causal half mirrors it) -> ProdNeuron gated by q. Returns the product's graded s_out, two steps
    after the latest input (the rescale synapse is the third). ``part`` names one of several such chains."""
    from lava.proc.conv.process import Conv
    from lava.proc.prodneuron.process import ProdNeuron

    q, k, v = node.inputs
    tokens, channels = int(np.prod(node.shape[:-1])), node.shape[-1]
    taps, size = kernel.shape[1], tokens * layout.size
    if max(layout.groups, 2 * taps - 1) > CONV_FIELD_MAX:
        raise ConversionError(
            f"node '{node.name}' ({node.op}): its token-mixing Conv needs {layout.groups} groups and a "
            f"{2 * taps - 1}-lag kernel; Lava's Conv holds at most {CONV_FIELD_MAX} of each (8-bit fields)"
        )
    start = inputs_depth(net, node)

    coincidence = memoryless_lif(size, 1, f"{node.name}{part}.coincidence")  # a_in 2 (k and v) > vth 1
    net.processes.append(coincidence)
    for src, channel in ((k, layout.k), (v, layout.v)):
        select = layout.select(channel, tokens, channels)
        synapse(net, src, coincidence.name, select, arrive=start + 1, weight_exp=0).a_out.connect(coincidence.a_in)

    # Lava's Conv convolves (flips its kernel): w[taps - 1 + m] = K[m] puts lag m on token n - m, and
    # w[taps - 1 - m] on token n + m (zero for a causal kernel), so symmetric padding keeps N outputs.
    # 2 K: the 8-bit mixed-sign convention of every spikeport synapse (even weights), undone downstream.
    weight = np.zeros((layout.groups, 2 * taps - 1, 1, 1), np.int32)
    weight[:, taps - 1 :, 0, 0] = 2 * kernel
    if full:
        weight[:, : taps - 1, 0, 0] = 2 * kernel[:, :0:-1]
    grid = (tokens, layout.rows, layout.groups)  # Lava's (X, Y, Z): Z is the Conv group, X the token axis
    mix = Conv(
        weight=weight,
        weight_exp=0,
        input_shape=grid,
        padding=(taps - 1, 0),
        stride=(1, 1),
        dilation=(1, 1),
        groups=layout.groups,
        num_weight_bits=8,
        num_message_bits=0,
        name=f"{node.name}{part}.token_mix",
    )
    coincidence.s_out.reshape(grid).connect(mix.s_in)

    product = ProdNeuron(shape=(size,), vth=0, exp=0)
    product.name = f"{node.name}{part}.product"  # ProdNeuron takes no name; check-hw and errors use it
    mix.a_out.reshape((size,)).connect(product.a_in1)
    q_select = layout.select(layout.q, tokens, channels)
    synapse(net, q, product.name, q_select, arrive=start + 2, weight_exp=0).a_out.connect(product.a_in2)
    net.processes += [mix, product]
    return product.s_out


def rescale(
    net: LavaNetwork,
    node: Node,
    product: Any,
    layout: PairLayout,
    weight: np.ndarray,
    exp: int,
    part: str = "",
    channels: int | None = None,
    delay: int | None = None,
) -> Any:
    """A graded Sparse summing the gated products of ``layout``'s pairs into their output channels
    (``weight`` [size] per pair, exponent ``exp``), arriving at the attention LIF's depth (or after ``delay``
    steps, into ``channels`` outputs per token when a chain's relay reads it)."""
    from scipy import sparse

    tokens = int(np.prod(node.shape[:-1]))
    channels = node.shape[-1] if channels is None else channels
    cols = np.arange(tokens * layout.size)
    rows = (cols // layout.size) * channels + np.tile(layout.out, tokens)
    vals = np.tile(weight.astype(np.int64), tokens)
    keep = vals != 0
    weights = sparse.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(tokens * channels, len(cols)))
    start = inputs_depth(net, node)
    name = f"{node.name}{part}.rescale_exp{exp}"
    delay = arrival(net, node) - (start + 3) if delay is None else delay
    proc = sparse_synapse(net, product, name, weights, delay=delay, graded=True, weight_exp=exp)
    return proc.a_out


# the q-gated product (a_in1: the token mixing, a_in2: q)
PROCESSES.declare(
    ProcessFacts("ProdNeuron", Role.NEURON, lava_model("prodneuron", "PyProdNeuronModelFixed"), {"v": 24}, "a_in1")
)
