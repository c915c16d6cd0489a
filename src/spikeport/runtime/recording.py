"""What a run records: the spikes of every spiking layer, per sample and time step, whatever executed them.

A recording is ``{node name: array [S, T, *shape]}``. Every Target fills the same one when asked to record
(``RunOptions.record``), so that comparisons (``runtime.compare``), host replay (``runtime.replay``) and the
predictions of a network without a readout (netx files) read one format. A non-spiking integrator's membrane
voltage ``v`` is recorded beside its node, under ``v_key(name)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spikeport.ir.graph import Graph
from spikeport.ir.kernels import value_kind
from spikeport.ir.kernels.lif import is_integrator

Spikes = dict[str, np.ndarray]  # node name (or v_key(name)) -> [S, T, *shape]

V_SUFFIX = ":v"  # recordings of an integrator's v sit beside the spikes, under "<node>:v"
V_DTYPE = np.int32


def recorded(graph: Graph) -> list[str]:
    """The nodes whose spikes a run records (and a comparison compares): every spiking output the network
    computes (value kind ``spikes`` or ``graded``; a spike input is fed, not computed)."""
    return [n for n in graph.order if graph.nodes[n].inputs and value_kind(graph, n).recorded is not None]


def integrators(graph: Graph) -> list[str]:
    """The non-spiking integrators whose ``v`` a run records next to the spikes, as ``v_key(name)``."""
    return [n for n in graph.order if is_integrator(graph.nodes[n])]


def v_key(name: str) -> str:
    return name + V_SUFFIX


def recorded_node(key: str) -> tuple[str, bool]:
    """(node name, whether it is the node's v) of a recording key."""
    return (key.removesuffix(V_SUFFIX), True) if key.endswith(V_SUFFIX) else (key, False)


def recording_keys(graph: Graph) -> list[str]:
    """Every key a full recording of ``graph`` holds: the recorded spiking nodes, then the integrators' v."""
    return recorded(graph) + [v_key(n) for n in integrators(graph)]


def dtype_of(graph: Graph, key: str) -> type[np.integer[Any]]:
    """The dtype a recording key is held in (its value kind's: graded spikes need their full width)."""
    node, is_v = recorded_node(key)
    if is_v:
        return V_DTYPE
    name = value_kind(graph, node).recorded
    if name is None:
        raise ValueError(f"node '{node}' sends {value_kind(graph, node)}, which runs do not record")
    dtype: type[np.integer[Any]] = np.dtype(name).type
    return dtype


def empty_recording(graph: Graph, samples: int) -> Spikes:
    """Zeroed arrays for every recording key of ``graph``, ``samples`` samples long."""
    return {
        key: np.zeros((samples, graph.T, *graph.nodes[recorded_node(key)[0]].shape), dtype_of(graph, key))
        for key in recording_keys(graph)
    }


def concat(parts: Sequence[Spikes]) -> Spikes:
    """The recordings of consecutive samples of one run (the shards of a sharded run) as one, in their order."""
    keys = list(parts[0]) if parts else []
    for i, part in enumerate(parts):
        if list(part) != keys:
            raise ValueError(f"recording {i} holds other nodes than recording 0: not a shard of the same run")
    return {key: np.concatenate([part[key] for part in parts]) for key in keys}
