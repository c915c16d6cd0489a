"""rf: lava.proc.rf.RF / lava.proc.rf_iz.RF_IZ, a_real_in / a_imag_in from its two synapses; no reset interval."""

from __future__ import annotations

import numpy as np

from spikeport.ir.graph import Node
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role
from spikeport.runtime.lava.lowerings.builder import (
    LOWERINGS,
    LavaLowering,
    LavaNetwork,
    flat,
    lava_model,
    steps,
    synapse_ports,
)


def _build(net: LavaNetwork, node: Node) -> None:
    """Lava's RF (iz 0) or RF_IZ (iz 1), its real input from the node's first synapse, the imaginary from its
    second. The process derives its integer Vars from (period, alpha, vth) floats; the node's integers are
    written over them (what lava-dl's netx loader computes is the importer's business)."""
    from lava.proc.rf.process import RF
    from lava.proc.rf_iz.process import RF_IZ

    a = node.attrs
    proc = (RF_IZ if a["iz"] else RF)(
        shape=flat(node.shape), period=4, alpha=0.0, state_exp=0, decay_bits=0, vth=0, name=node.name
    )
    for var, key in ((proc.sin_decay, "sin_decay"), (proc.cos_decay, "cos_decay"), (proc.decay_bits, "decay_bits")):
        var.init = np.array([a[key]])
    proc.state_exp.init, proc.vth.init = np.array([a["state_exp"]]), np.array([a["vth"]])
    for port, src in zip((proc.a_real_in, proc.a_imag_in), node.inputs, strict=True):
        for out in synapse_ports(net, [src]):
            out.connect(port)
    net.spike_out[node.name] = proc.s_out
    net.processes.append(proc)


LOWERINGS.add("rf", LavaLowering(_build, steps(0), resets=False, summary="RF / RF_IZ (resonate-and-fire)"))

PROCESSES.declare(
    ProcessFacts(
        "RF",
        Role.NEURON,
        lava_model("rf", "PyRFModelFixed"),
        {"real": 24, "imag": 24},
        "a_real_in",
        decays=("sin_decay", "cos_decay"),
    ),
    ProcessFacts(
        "RF_IZ",
        Role.NEURON,
        lava_model("rf_iz", "PyRF_IZModelFixed"),
        {"real": 24, "imag": 24},
        "a_real_in",
        decays=("sin_decay", "cos_decay"),
    ),
)
