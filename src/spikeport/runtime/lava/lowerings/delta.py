"""delta: lava.proc.sdn.Delta reading the input RingBuffer's integers (kind 'graded': netx's SDNN input layer)
on its a_in; graded s_out, no reset."""

from __future__ import annotations

from spikeport.ir.graph import Node
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role
from spikeport.runtime.lava.lowerings.builder import (
    LOWERINGS,
    LavaLowering,
    LavaNetwork,
    flat,
    lava_model,
    out_port,
    steps,
)


def _build(net: LavaNetwork, node: Node) -> None:
    """Lava's Delta encoder reading the input RingBuffer's integers on its a_in (netx's SDNN input layer)."""
    from lava.proc.sdn.process import Delta

    a = node.attrs
    proc = Delta(
        shape=flat(node.shape),
        vth=a["vth"],
        cum_error=bool(a["cum_error"]),
        spike_exp=a["spike_exp"],
        state_exp=a["state_exp"],
    )
    proc.name = node.name  # Delta takes no name; check-hw and errors use it
    for src in node.inputs:
        out_port(net, src).connect(proc.a_in)
    net.stream_out[node.name] = proc.s_out  # graded: its readers take num_message_bits
    net.processes.append(proc)


LOWERINGS.add("delta", LavaLowering(_build, steps(0), resets=False, summary="Delta (encoder of graded inputs)"))

PROCESSES.declare(
    # Delta's model never integrates its sigma Var: not state
    ProcessFacts(
        "Delta",
        Role.HOST_COMPUTE,
        lava_model("sdn", "PyDeltaModelFixed"),
        {"act": 24, "residue": 24, "error": 24},
        "a_in",
        host_only="netx's SDNN input encoder: Intel's hardware runs keep it on the host (lava-dl pilotnet_sdnn: "
        "netx.hdf5.Network(skip_layers=1), io.encoder.DeltaEncoder -> eio.spike.PyToN3ConvAdapter); no public "
        "run places a Delta on a NeuroCore",
    ),
)
