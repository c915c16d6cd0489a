"""Lava backend: the artifact's graph as a network of real Lava processes, run by the Lava runtime.

Each node is lowered by its op's ``LavaLowering`` (``lowering.py``: the mapping node -> processes, one
registration per op, standard Lava processes wherever one exists).

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

import numpy as np

from spikeport.ir.graph import Graph
from spikeport.ir.ops import value_kind
from spikeport.runtime.lava import compat
from spikeport.runtime.lava.lowering import LOWERINGS, LavaNetwork, flat
from spikeport.value_kinds import INTEGER

__all__ = ["EXECUTOR", "LavaNetwork", "build_network", "depths", "flat", "leaves", "relayed", "reset_interval"]

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


def build_network(graph: Graph, source_data: np.ndarray) -> LavaNetwork:
    """Create and connect the Lava processes of ``graph``; ``source_data`` [n_pixels, steps] int32."""
    compat.import_lava()
    relays = relayed(graph)
    net = LavaNetwork(
        graph, None, {}, {}, depths(graph, relays), reset_interval(graph.T), relays=relays, source_data=source_data
    )
    for name in graph.order:
        node = graph.nodes[name]
        LOWERINGS.get(node.op, name).build(net, node)
    return net
