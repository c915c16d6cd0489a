"""recurrent_lif: LIFReset (as lif) plus a Sparse from its s_out back to its a_in (kron(I_N, 2 W), exponent
weight_exp - 1): the synapse's step of delay is the recurrence's t - 1. Its pending sum outlives the reset, so it
runs one sample per stream."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from spikeport.errors import ConversionError
from spikeport.ir.graph import Node
from spikeport.ir.kernels import value_kind
from spikeport.runtime.executor import GraphExecutor
from spikeport.runtime.lava.lowerings.builder import LOWERINGS, LavaLowering, LavaNetwork, sparse_synapse, steps
from spikeport.runtime.lava.lowerings.lif import build_lif
from spikeport.value_kinds import GRADED, SPIKES


def _build(net: LavaNetwork, node: Node) -> None:
    """A LIF group (``lif.build_lif``: LIFReset) and its recurrent synapse: a Sparse from the group's s_out back to
    its own a_in, block-diagonal over the tokens (kron(I_N, 2 W), exponent weight_exp - 1, as dense). A synapse
    sends what it received one step later, so the group reads its spikes of the previous step."""
    from scipy import sparse

    _silent_before_its_input(net, node)
    build_lif(net, node)
    group = net.processes[-1]
    tokens = int(np.prod(node.shape[:-1]))
    w = sparse.csr_matrix(2 * node.params["weight_mant"].astype(np.int64))
    block = sparse.kron(sparse.identity(tokens, dtype=np.int64, format="csr"), w, format="csr")
    block.eliminate_zeros()
    if block.nnz:  # no recurrent weight: a plain LIF group
        loop = sparse_synapse(
            net,
            group.s_out,
            f"{node.name}<-{node.name}",
            block,
            delay=0,
            graded=False,
            weight_exp=node.attrs["weight_exp"] - 1,
        )
        loop.a_out.connect(group.a_in)


def _silent_before_its_input(net: LavaNetwork, node: Node) -> None:
    """A group d steps deep runs d steps on Lava before its sample's first input reaches it, and resets only then:
    a spike it sent in the last of them would reach it again through its recurrent synapse in the sample's first
    step, where the reference has no spike before the first step. So the group and everything before it must stay
    silent on zero input for d steps from zero state (they do unless a bias drives them), checked here by the
    reference's own steps."""
    graph = net.graph
    cone, todo = {}, [node.name]
    while todo:
        name = todo.pop()
        if name not in cone:
            cone[name] = graph.nodes[name]
            todo += graph.nodes[name].inputs
    steps = net.depth[node.name]
    before = replace(graph, nodes={n: cone[n] for n in graph.order if n in cone}, T=steps)
    (source,) = [n for n in before.order if not before.nodes[n].inputs]
    fed = value_kind(graph, source) in (SPIKES, GRADED)  # spikes / integers [S, T, ...], else pixels [S, ...]
    zeros = np.zeros((1, *((steps,) if fed else ()), *graph.nodes[source].shape))
    fired: list[str] = []

    def watch(t: int, name: str, out: Any, extra: dict[str, Any]) -> None:
        if not fired and np.any(np.asarray(out)):
            fired.append(name)

    GraphExecutor(before).run(zeros, watch, watch)
    if fired:
        raise ConversionError(
            f"node '{node.name}' (recurrent_lif): on Lava it runs {steps} step(s) before its input arrives and "
            f"'{fired[0]}' sends values then without any input (a bias drives it); the group's recurrent synapse "
            "would carry those steps' spikes into the sample, which the reference does not: not supported on Lava"
        )


# resets=False: the recurrent synapse's pending sum is not cleared with the group's u and v
LOWERINGS.add(
    "recurrent_lif",
    LavaLowering(_build, steps(0), resets=False, summary="LIFReset + Sparse from its s_out to its a_in"),
)
