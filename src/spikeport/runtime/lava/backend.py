"""Lava backend: the artifact's graph as a network of real Lava processes, run by the Lava runtime.

Each node is lowered by its op's ``LavaLowering`` (``lowerings/<op>.py``: the mapping node -> processes, one
module per op, standard Lava processes wherever one exists).

Timing: every synapse (Sparse, Conv, cores, a relay's identity synapses) delays by one step,
neurons (LIF, GradedVec) by none. A node's *depth* is the Lava step offset of its output; the inputs of a
residual sum sit at different depths and their identity synapses into the relay get DelaySparse delays so
they arrive together. The residual stream is a chain of relays (each add reads the previous one), so a
block's consumers need one synapse each however deep the block sits.
Samples stream back to back, one every R = 2**ceil(log2 T) steps (a power of two, as Loihi 2's reset
interval requires); the layer at depth d resets at step offset (1 + d) mod R, so no state leaks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import value_kind
from spikeport.runtime.lava import compat
from spikeport.runtime.lava.lowerings import LOWERINGS, LavaNetwork
from spikeport.runtime.lava.lowerings.builder import flat
from spikeport.runtime.lava.progress import QUIET, StageProgress
from spikeport.value_kinds import INTEGER, SPIKES

__all__ = [
    "EXECUTOR",
    "LavaNetwork",
    "build_network",
    "depths",
    "flat",
    "leaves",
    "relayed",
    "release",
    "reset_interval",
]

EXECUTOR = "lava-fixed_pt"


def relayed(graph: Graph) -> set[str]:
    """The nodes realised by a relay on Lava: those whose lowering relays them when a Lava process reads
    them (residual sums) and that something other than a host-side node (the readout) reads."""
    return {
        name
        for name in graph.order
        if LOWERINGS.get(graph.nodes[name].op, name).relay_if_read
        and any(not LOWERINGS.get(c.op, c.name).on_host for c in graph.consumers(name))
    }


def depths(graph: Graph, relays: set[str] | None = None) -> dict[str, int]:
    """Lava step offset of every node's output relative to the input's (``relays``: ``relayed(graph)``)."""
    d: dict[str, int] = {}
    relays = relayed(graph) if relays is None else relays
    for name in graph.order:
        node = graph.nodes[name]
        d[name] = max((d[s] for s in node.inputs), default=0) + LOWERINGS.get(node.op, name).delay(node, relays)
    return d


def leaves(graph: Graph, name: str) -> list[str]:
    """The recorded spike sources behind a residual sum (integer values flattened: the host recomputes
    them from their sources' spikes)."""
    if value_kind(graph, name) != INTEGER:
        return [name]
    return [leaf for src in graph.nodes[name].inputs for leaf in leaves(graph, src)]


def reset_interval(T: int) -> int:
    return 1 << math.ceil(math.log2(max(T, 1)))


def build_network(
    graph: Graph,
    source_data: np.ndarray,
    nodes: Sequence[str] | None = None,
    boundary: str | None = None,
    progress: StageProgress = QUIET,
    overrides: Mapping[str, Callable[[LavaNetwork, Node], None]] | None = None,
) -> LavaNetwork:
    """Create and connect the Lava processes of ``graph``; ``source_data`` [n, steps] int32 is what the input
    RingBuffer plays (the pixels).

    A part of a partitioned run (``partition.py``): only ``nodes`` are lowered, and ``boundary``, the node whose
    recorded output feeds them, is stood in for by a RingBuffer playing ``source_data`` (graded for a residual sum,
    binary for spikes) in place of the processes that computed it. Depths then count from the boundary, which makes
    the part the whole network's processes, delays and resets shifted by the boundary's depth. ``progress`` reports
    the processes as they are created. ``overrides`` builds the named nodes its own way instead of by their op's
    lowering (the hardware plan: the input through an adapter, the stem's conv on the host)."""
    compat.import_lava()
    relays = relayed(graph)
    depth = depths(graph, relays)
    if boundary is not None:
        depth = {name: d - depth[boundary] for name, d in depth.items()}
    net = LavaNetwork(graph, None, {}, {}, depth, reset_interval(graph.T), relays=relays, source_data=source_data)
    if boundary is not None:
        _stand_in(net, boundary)
    with progress.stage("build", "processes") as advance:
        for name in graph.order if nodes is None else nodes:
            node = graph.nodes[name]
            before = len(net.processes)
            build = (overrides or {}).get(name) or LOWERINGS.get(node.op, name).build
            build(net, node)
            advance(len(net.processes) - before)
    return net


def release(processes: Sequence[Any]) -> None:
    """Forget a finished network's processes and their Vars in Lava's ProcessServer and VarServer, which keep every
    Process and Var ever created (and so every weight matrix) for the life of the interpreter: a partitioned run, a
    benchmark or check-hw that builds network after network would otherwise hold them all."""
    from lava.magma.core.process.process import ProcessServer
    from lava.magma.core.process.variable import VarServer

    procs = {id(p) for p in processes}
    variables = {id(v) for p in processes for v in p.vars}
    ProcessServer().processes = [p for p in ProcessServer().processes if id(p) not in procs]
    VarServer().vars = [v for v in VarServer().vars if id(v) not in variables]


def _stand_in(net: LavaNetwork, boundary: str) -> None:
    """A RingBuffer that sends what ``boundary``'s processes sent, read by its consumers through the same ports."""
    from lava.proc.io.source import RingBuffer

    assert net.source_data is not None
    net.source = RingBuffer(data=net.source_data.astype(np.int32))
    net.source.name = f"{boundary}.recorded"
    net.processes.append(net.source)
    if value_kind(net.graph, boundary) == SPIKES:
        net.spike_out[boundary] = net.source.s_out
    else:  # a relay's sum (or another graded value): its readers take graded messages
        net.stream_out[boundary] = net.source.s_out
