"""sigma: lava.proc.sdn.Sigma (netx's ``sigma_output`` layer): sends the running sum of its a_in; no reset."""

from __future__ import annotations

from spikeport.errors import ConversionError
from spikeport.ir.graph import Node
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role
from spikeport.runtime.lava.lowerings.builder import (
    LOWERINGS,
    LavaLowering,
    LavaNetwork,
    flat,
    lava_model,
    no_resetting_neuron_before,
    steps,
    synapse_ports,
)


def _build(net: LavaNetwork, node: Node) -> None:
    """Lava's Sigma decoder (netx's ``sigma_output`` layer): it sends the running sum of its a_in."""
    from lava.proc.sdn.process import Sigma

    if node.attrs["warmup"] != net.depth[node.name]:
        raise ConversionError(
            f"node '{node.name}' (sigma): warmup = {node.attrs['warmup']}, but it sits at Lava depth "
            f"{net.depth[node.name]}; the reference replays that many zero-input steps"
        )
    no_resetting_neuron_before(net.graph, node)
    proc = Sigma(shape=flat(node.shape))
    proc.name = node.name  # Sigma takes no name; check-hw and errors use it
    for port in synapse_ports(net, node.inputs):
        port.connect(proc.a_in)
    net.stream_out[node.name] = proc.s_out
    net.processes.append(proc)


LOWERINGS.add("sigma", LavaLowering(_build, steps(0), resets=False, summary="Sigma (decoder: running sum)"))

PROCESSES.declare(ProcessFacts("Sigma", Role.NEURON, lava_model("sdn", "PySigmaModelFixed"), {"sigma": 24}, "a_in"))
