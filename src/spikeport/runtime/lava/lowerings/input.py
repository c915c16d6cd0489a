"""input: a Lava ``io.source.RingBuffer`` on the host playing the input stream. Pixels go as 16-bit graded
spikes (read with graded synapses); a netx network's spike input (node attribute ``kind``) drives its Conv /
Sparse synapses as binary spikes, and a graded one (``kind`` 'graded': netx's SDNN input layer) its Delta."""

from __future__ import annotations

import numpy as np

from spikeport.ir.graph import Node
from spikeport.ir.kernels import value_kind
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role
from spikeport.runtime.lava.lowerings.builder import LOWERINGS, LavaLowering, LavaNetwork, steps
from spikeport.value_kinds import SPIKES


def _build(net: LavaNetwork, node: Node) -> None:
    from lava.proc.io.source import RingBuffer

    assert net.source_data is not None  # build_network sets it before lowering any node
    net.source = RingBuffer(data=net.source_data.astype(np.int32))
    net.processes.append(net.source)
    net.host_only.append(node.name)
    if value_kind(net.graph, node.name) == SPIKES:  # netx imports: spikes drive Conv/Sparse directly
        net.spike_out[node.name] = net.source.s_out
    else:  # pixels as graded spikes (16-bit payload): read with graded synapses
        net.stream_out[node.name] = net.source.s_out


LOWERINGS.add("input", LavaLowering(_build, steps(0), summary="host RingBuffer of graded pixels (I/O)"))

PROCESSES.declare(
    # also the stand-in for a part's boundary node in a partitioned run (backend.build_network)
    ProcessFacts(
        "RingBuffer",
        Role.HOST_INPUT,
        "lava 0.10 lava/proc/io/source.py",
        host_only="host I/O (lava.proc.io): on Loihi 2 the input needs a host-to-chip adapter "
        "(eio.spike.PyToNxAdapter) or an embedded-IO process",
    ),
)
