"""sigma_delta: lava.proc.sdn.SigmaDelta (ReLU); its graded s_out is read with graded synapses. It has no reset
interval: its state runs on from one sample to the next."""

from __future__ import annotations

import numpy as np

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
    from lava.proc.sdn.process import ActivationMode, SigmaDelta

    a = node.attrs
    check_pipeline_fill(net, node)
    channels = node.shape[-1]
    bias = np.tile(node.params["bias"].astype(np.int32), int(np.prod(node.shape)) // channels)
    proc = SigmaDelta(
        shape=flat(node.shape),
        vth=a["vth"],
        bias=bias,
        act_mode=ActivationMode.RELU,
        cum_error=bool(a["cum_error"]),
        spike_exp=a["spike_exp"],
        state_exp=a["state_exp"],
        name=node.name,
    )
    for port in synapse_ports(net, node.inputs):
        port.connect(proc.a_in)
    net.stream_out[node.name] = proc.s_out  # graded: its readers take num_message_bits
    net.processes.append(proc)


LOWERINGS.add("sigma_delta", LavaLowering(_build, steps(0), resets=False, summary="SigmaDelta"))

PROCESSES.declare(
    ProcessFacts(
        "SigmaDelta",
        Role.NEURON,
        lava_model("sdn", "PySigmaDeltaModelFixed"),
        {"sigma": 24, "act": 24, "residue": 24, "error": 24},
        "a_in",
    ),
)
