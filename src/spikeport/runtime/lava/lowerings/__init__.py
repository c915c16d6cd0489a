"""The Lava lowering of each IR op, one module per op (as ``spikeport.ir.kernels`` holds one kernel record per op):
which Lava processes realise it and how many steps it delays.

Each module registers its op's ``LavaLowering`` in ``LOWERINGS`` (``spikeport.ir.registry``) and declares, beside
it, the record (``facts.PROCESSES``) of every Lava process class that op alone builds; ``backend.build_network`` and
``backend.depths`` look each node's op up here. The shared builder is ``builder.py`` (the network being built, the
record, the synapses and their delays, the classes several ops build); ``token_mixing.py`` is the chip-native
q-gated token mixing that attention and dendritic share. Standard Lava processes wherever one exists:

    input          io.source.RingBuffer playing 16-bit graded pixels (or a netx network's spikes) from the host
    conv           Sparse on pixels (unrolled, each synapse stored); Conv on spikes (a Sparse past Conv's fields;
                   past MAX_FAN_IN inputs a neuron, partial sums through a GradedVec relay)
    dense          Conv 1 x 1 over the token grid (partial sums past MAX_FAN_IN); Sparse / DelaySparse
                   kron(I_N, W) where a Conv cannot serve
    attention      chip-native on the token grid (token_mixing, docs/lowering.md section 9); a host AttentionCore
                   only where the user asks (convert --host-attention)
    dendritic      chip-native (token_mixing, docs/lowering.md)
    lif            LIFReset (reset at the first step of every sample window)
    maxpool        Conv(ones, stride) + LIFReset(vth 0)
    add            GradedVec relay fed by identity (Delay)Sparse; none when only the readout reads it
    readout        host, from the recorded spikes of its sources
    sigma_delta    SigmaDelta (no reset interval)
    rf             RF / RF_IZ (no reset interval)
    delta          Delta reading the input's integers (netx's SDNN input layer)
    sigma          Sigma (netx's sigma_output layer)
    recurrent_lif  LIFReset plus a Sparse from its s_out back to its a_in (one sample per stream)

Each module's docstring says its mapping in full. A new op is one more module here (its ``LOWERINGS.add`` and
the records of its own process classes), beside its kernel record in ``spikeport.ir.kernels``: this package
imports every module in it, so nothing else needs editing; an op without one, or a built class without a record,
is an error naming it.
"""

from __future__ import annotations

import importlib
import pkgutil

from spikeport.ir.graph import Graph
from spikeport.runtime.lava.lowerings.builder import LOWERINGS, LavaLowering, LavaNetwork

__all__ = ["LOWERINGS", "LavaLowering", "LavaNetwork", "lowering_summary"]


def lowering_summary(graph: Graph) -> dict[str, str]:
    """Per op of the graph: the Lava processes it is lowered to (the conversion report's ``lowering``), or that it
    has none (a Lava run refuses it by name)."""
    ops = dict.fromkeys(graph.nodes[name].op for name in graph.order)
    return {
        op: (lowered.summary if (lowered := LOWERINGS.find(op)) else f"none: {LOWERINGS.refused[op]}") for op in ops
    }


# the ops no Lava process computes, each with why (a Lava run and check-hw refuse them, saying it)
LOWERINGS.refuse(
    "maxpool_activation",
    "Loihi's synapses sum, they take no max: SpikingJelly's stem pools a current before its LIF; the reference runs "
    "it (docs/checkpoints.md)",
)


for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
