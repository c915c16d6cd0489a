"""lif: lava.proc.lif.LIFReset, reset at the first step of every sample window (its depth's offset in the reset
interval R), reading every synapse of its inputs on its a_in."""

from __future__ import annotations

import numpy as np

from spikeport.ir.graph import Node
from spikeport.runtime.lava.lowerings.builder import LOWERINGS, LavaLowering, LavaNetwork, flat, steps, synapse_ports


def build_lif(net: LavaNetwork, node: Node) -> None:
    from lava.proc.lif.process import LIFReset

    a, R = node.attrs, net.R
    channels = node.shape[-1]
    bias = np.tile(node.params["bias_mant"].astype(np.int32), int(np.prod(node.shape)) // channels)
    proc = LIFReset(
        shape=flat(node.shape),
        du=a["du"],
        dv=a["dv"],
        vth=a["vth"],
        bias_mant=bias,
        bias_exp=a["bias_exp"],
        reset_interval=R,
        reset_offset=(1 + net.depth[node.name]) % R,
        name=node.name,
    )
    for port in synapse_ports(net, node.inputs):
        port.connect(proc.a_in)
    net.spike_out[node.name] = proc.s_out
    net.processes.append(proc)


LOWERINGS.add("lif", LavaLowering(build_lif, steps(0), summary="LIFReset"))
