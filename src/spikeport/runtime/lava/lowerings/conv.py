"""conv: a convolution (channels-last, torch's cross-correlation) as Lava synapses.

on pixels   lava.proc.sparse.Sparse reading the 16-bit graded pixels: the convolution unrolled into a matrix
            (each synapse stored: Loihi 2's Conv shares its kernel but applies no weight exponent, lava#803,
            and the first layer floors); weights 2 * mantissa, exponent - 1
on spikes   lava.proc.conv.Conv (weights pre-scaled by 2**weight_exp, spatially flipped: Lava's Conv
            convolves, torch's correlates; the IR's (H, W, C) is Lava's (X, Y, Z)); a Sparse where a field
            exceeds CONV_FIELD_MAX (``builder.fits_conv``); past MAX_FAN_IN inputs per output, partial sums
            over runs of the input channels into a GradedVec relay, summed by a graded Sparse (one step more)
"""

from __future__ import annotations

import numpy as np

from spikeport.chip_limits import CONV_FIELD_MAX, MAX_FAN_IN
from spikeport.errors import ConversionError
from spikeport.ir.graph import Node
from spikeport.ir.kernels import value_kind
from spikeport.ir.kernels.conv import parts
from spikeport.runtime.lava.lowerings.builder import (
    LOWERINGS,
    LavaLowering,
    LavaNetwork,
    arrival,
    conv_matrix,
    fits_conv,
    spike_conv,
    synapse,
)
from spikeport.value_kinds import ANALOG


def _build(net: LavaNetwork, node: Node) -> None:
    graph, a, q, src = net.graph, node.attrs, node.params, node.inputs[0]
    if value_kind(graph, src) == ANALOG or not fits_conv(a) or a["groups"] * parts(node) > CONV_FIELD_MAX:
        if parts(node) > 1:
            fan_in = int(np.prod(a["kernel"])) * a["in_channels"] // a["groups"]
            raise ConversionError(
                f"node '{node.name}' (conv): {fan_in:,} inputs per output, past the {MAX_FAN_IN:,} a core receives, "
                "on a Sparse: no partial-sum split for this form"
            )
        # graded pixels (Conv applies no exponent), or fields past Lava's Conv (depthwise over > 127
        # channels): the convolution unrolled into a Sparse, each synapse stored
        weights = conv_matrix(graph.nodes[src].shape, node.shape, 2 * q["weight_mant"].astype(np.int64), a)
        # weights 2 * mantissa with exponent - 1, as for dense: Lava's 8-bit mixed-sign mode drops one LSB;
        # Sparse applies its exponent as a floor shift of the sum (Conv has no exponent: lava#803)
        net.synapse_out[node.name] = synapse(
            net, src, node.name, weights, arrive=arrival(net, node), weight_exp=a["weight_exp"] - 1
        ).a_out
        return
    if a["weight_exp"] < 0:
        raise ConversionError(f"node '{node.name}': spike-driven conv with weight_exp < 0 has no Lava mapping")
    w = (q["weight_mant"].astype(np.int64) << a["weight_exp"])[:, ::-1, ::-1, :]
    geometry = {k: tuple(a[k]) for k in ("padding", "stride", "dilation")}
    spike_conv(net, node, tuple(graph.nodes[src].shape), w, groups=a["groups"], parts=parts(node), **geometry)


LOWERINGS.add(
    "conv",
    LavaLowering(
        _build,
        lambda node, relays: 1 + (parts(node) > 1),  # a split conv's partial sums pass a relay
        summary="Conv (spikes; past MAX_FAN_IN inputs a neuron, partial sums through a GradedVec relay) / graded "
        "Sparse (pixels)",
    ),
)
