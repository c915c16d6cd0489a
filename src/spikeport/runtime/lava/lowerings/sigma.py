"""sigma: lava.proc.sdn.Sigma (netx's ``sigma_output`` layer): sends the running sum of its a_in; no reset."""

from __future__ import annotations

from spikeport.ir.graph import Node
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role
from spikeport.runtime.lava.lowerings.builder import (
    LOWERINGS,
    LavaLowering,
    LavaNetwork,
    check_pipeline_fill,
    flat,
    lava_model,
    steps,
    synapse_ports,
)


def _build(net: LavaNetwork, node: Node) -> None:
    """Lava's Sigma decoder (netx's ``sigma_output`` layer): it sends the running sum of its a_in."""
    from lava.proc.sdn.process import Sigma

    check_pipeline_fill(net, node)
    proc = Sigma(shape=flat(node.shape))
    proc.name = node.name  # Sigma takes no name; check-hw and errors use it
    for port in synapse_ports(net, node.inputs):
        port.connect(proc.a_in)
    net.stream_out[node.name] = proc.s_out
    net.processes.append(proc)


LOWERINGS.add("sigma", LavaLowering(_build, steps(0), resets=False, summary="Sigma (decoder: running sum)"))

PROCESSES.declare(ProcessFacts("Sigma", Role.NEURON, lava_model("sdn", "PySigmaModelFixed"), {"sigma": 24}, "a_in"))
