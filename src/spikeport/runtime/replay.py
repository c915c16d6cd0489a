"""The host's view of a recorded run, time step by time step, for any executor that records spikes.

A chip (or its Lava simulation) emits spikes; the residual sums and the readout (value kinds ``integer`` /
``logits``) are not sent anywhere, so the host recomputes them from the recorded spikes with their kernel
records' ``step``, the same code the reference simulator runs. Feeding a ``runtime.counter.RunCounter`` gives the
reference's counts for the recorded run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel, value_kind
from spikeport.runtime.recording import Spikes
from spikeport.value_kinds import LOGITS


@dataclass
class HostStep:
    """What a kernel's ``step`` sees when the host replays it (``spikeport.ir.kernels.base.Step``)."""

    qparams: Mapping[str, Mapping[str, Any]]
    prepared: dict[str, Any] = field(default_factory=dict)
    ops: Any = fx.INT
    t: int = 0
    images: Any = None


def replay(
    graph: Graph,
    spikes: Spikes,
    observer: Callable[[int, str, Any, dict[str, Any]], None] | None = None,
    nodes: Sequence[str] | None = None,
) -> np.ndarray | None:
    """Recorded spikes as recorded, residual sums and the readout recomputed from them, every other value
    (synaptic activations inside the network) as zeros; ``observer(t, name, value, extra)`` sees each (a
    ``Counter``: activations are not recorded, so ``act_overflows`` stays 0). ``nodes`` (graph order) walks only
    those, e.g. one residual sum and the nodes behind it. Returns the logits summed over T (None without a
    readout)."""
    S = next(iter(spikes.values())).shape[0] if spikes else 0
    ctx = HostStep({n.name: n.params for n in graph.nodes.values()})
    walked = graph.order if nodes is None else list(nodes)
    kinds = {name: value_kind(graph, name) for name in walked}
    replayed = [name for name in walked if name not in spikes and kinds[name].host_replayed]
    for name in replayed:
        prepare = kernel(graph.nodes[name].op).prepare
        if prepare is not None:
            ctx.prepared[name] = prepare(graph.nodes[name], graph.nodes[name].params)
    state: dict[str, dict[str, Any]] = {name: {} for name in replayed}
    logits = None
    for t in range(graph.T):
        ctx.t = t
        values: dict[str, np.ndarray] = {}
        for name in walked:
            node = graph.nodes[name]
            if name in spikes:
                out = spikes[name][:, t].astype(np.int64)
            elif name in state:
                out = kernel(node.op).step(ctx, node, [values[s] for s in node.inputs], state[name], {})
            else:
                out = np.zeros((S, *node.shape), np.int64)
            values[name] = out
            if kinds[name] == LOGITS:
                logits = out if logits is None else logits + out
            if observer is not None:
                observer(t, name, out, {"a_in": np.zeros(1)})
    return logits
