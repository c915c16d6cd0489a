"""maxpool: Conv(ones, stride) + LIFReset(vth 0): a spike iff any input in the window spiked (a Sparse window past
CONV_FIELD_MAX channels)."""

from __future__ import annotations

import numpy as np

from spikeport.ir.graph import Node
from spikeport.runtime.lava.lowerings.builder import (
    LOWERINGS,
    LavaLowering,
    LavaNetwork,
    conv_matrix,
    fits_conv,
    flat,
    out_port,
    steps,
    synapse,
)


def _build(net: LavaNetwork, node: Node) -> None:
    from lava.proc.conv.process import Conv
    from lava.proc.lif.process import LIFReset

    a, src, graph = node.attrs, node.inputs[0], net.graph
    channels = node.shape[-1]
    k = a["kernel"]
    ones = np.zeros((channels, k, k, 1), np.int32) + 1
    lif = LIFReset(
        shape=flat(node.shape),
        du=4095,
        dv=4095,
        vth=0,
        bias_mant=0,
        bias_exp=0,
        reset_interval=net.R,
        reset_offset=(1 + net.depth[node.name]) % net.R,
        name=node.name,
    )
    net.spike_out[node.name] = lif.s_out
    window = dict(stride=(a["stride"],) * 2, padding=(a["padding"],) * 2, dilation=(1, 1), groups=channels)
    if not fits_conv({**window, "kernel": (k, k)}):  # one window synapse per input, each stored
        weights = conv_matrix(graph.nodes[src].shape, node.shape, 2 * ones, window)
        synapse(net, src, node.name, weights, weight_exp=-1).a_out.connect(lif.a_in)
        net.processes.append(lif)
        return
    conv = Conv(
        weight=ones,
        weight_exp=0,
        input_shape=tuple(graph.nodes[src].shape),
        padding=(a["padding"],) * 2,
        stride=(a["stride"],) * 2,
        dilation=(1, 1),
        groups=channels,
        num_weight_bits=8,
        name=f"{node.name}.window",
    )
    out_port(net, src).reshape(graph.nodes[src].shape).connect(conv.s_in)
    conv.a_out.reshape(flat(node.shape)).connect(lif.a_in)
    net.processes += [conv, lif]


LOWERINGS.add("maxpool", LavaLowering(_build, steps(1), summary="Conv(ones) + LIFReset(vth 0)"))
