"""add: a lava.proc.graded.GradedVec relay (vth 0: sends the sum as a graded spike), fed by one identity Sparse /
DelaySparse per input; consumers read it with graded synapses (num_message_bits 24). An add read only by the
readout has no relay (the host sums the recorded spikes)."""

from __future__ import annotations

import numpy as np

from spikeport.ir.graph import Node
from spikeport.runtime.lava.lowerings.builder import LOWERINGS, LavaLowering, LavaNetwork, synapse


def _build(net: LavaNetwork, node: Node) -> None:
    """A relayed residual sum as a GradedVec (vth 0: it sends its a_in, the sum) fed by one identity
    synapse per input, delayed so that all inputs arrive in the same step. An add only the host readout
    reads has no process (the host sums the recorded spikes)."""
    if node.name not in net.relays:
        return
    from lava.proc.graded.process import GradedVec
    from scipy import sparse

    n = int(np.prod(node.shape))
    relay = GradedVec(shape=(n,), vth=0, exp=0)
    relay.name = node.name  # GradedVec takes no name; check-hw and errors use it
    identity = sparse.identity(n, dtype=np.int64, format="csr")
    for src in node.inputs:
        synapse(net, src, node.name, identity, weight_exp=0).a_out.connect(relay.a_in)
    net.processes.append(relay)
    net.stream_out[node.name] = relay.s_out


LOWERINGS.add(
    "add",
    LavaLowering(
        _build,
        lambda node, relays: int(node.name in relays),  # identity synapses
        relay_if_read=True,
        summary="GradedVec relay fed by identity (Delay)Sparse",
    ),
)
