"""Bounds on what an artifact may declare, checked when it is read and before anything is allocated.

These are host limits, not chip limits: a network too large for one Loihi 2 chip still reads, runs on the
reference simulator and gets its core count from check-hw (which applies the loihi2 profile's limits). They
only stop a damaged or hostile file from asking the host for unbounded memory or time (a flipped byte of ``T``
once read as 4278190084 time steps). Each bound sits far above the largest shipped network (Spikformer-8-768 on
ImageNet) and is named, with its limit, in the error that refuses it. docs/reliability.md lists them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from spikeport.errors import ConversionError

if TYPE_CHECKING:
    from spikeport.ir.graph import Graph

# time steps per sample: above any Spikformer's T (4) and lava-dl's longest recording (ntidigits: 3000)
MAX_T = 10_000
# nodes per graph: Spikformer-8-768 has ~150
MAX_NODES = 10_000
# values per node, per sample and time step: 16 Loihi 2 chips of neurons (16 x 2**20, loihi2.yaml
# neurons_per_chip); ImageNet Spikformer's largest map is 224 x 224 x 48 = 2.4 M
MAX_NODE_ELEMENTS = 2**24
# elements of one parameter dataset: 1 GiB as int64, ~1.1 x the synapses of a Loihi 2 chip (120 M,
# loihi2.yaml synapses_per_chip); Spikformer-8-768's largest weight has 2.4 M
MAX_PARAM_ELEMENTS = 2**27
# parameter elements of a whole artifact: 2 GiB as int64, 30x Spikformer-8-768's 66 M parameters
MAX_TOTAL_ELEMENTS = 2**28
# dimensions of a node's shape: (H, W, C) maps, (N, C) tokens, (classes,) logits; netx adds none beyond 3
MAX_RANK = 4
# side of a square input image (ImageNet: 224)
MAX_IMG_SIZE = 4096
# elements an attribute tuple may hold (kernel sizes, per-head exponents)
MAX_TUPLE = 4096
# values of a run's input array (an .npy of spikes or images): 256 MiB as int8 spikes, 1 GiB as int32 images;
# 370 N-MNIST samples of 300 steps (34 x 34 x 2); a larger set runs as several files
MAX_INPUT_ELEMENTS = 2**28
# samples one run report may count: ImageNet's training set has 1.28 M images
MAX_SAMPLES = 10**8


def shape_problem(shape: tuple[int, ...]) -> str | None:
    """Why a node's output shape cannot be run (None when it can)."""
    if not 1 <= len(shape) <= MAX_RANK:
        return f"is {list(shape)}, expected 1..{MAX_RANK} dimensions"
    if any(s < 1 for s in shape):
        return f"is {list(shape)}, expected positive sizes"
    if math.prod(shape) > MAX_NODE_ELEMENTS:
        return f"is {list(shape)} ({math.prod(shape)} values per step), the limit is {MAX_NODE_ELEMENTS}"
    return None


def check_graph(graph: Graph) -> None:
    """The graph-wide bounds that the kernel records do not check node by node."""
    if not 1 <= graph.T <= MAX_T:
        raise ConversionError(f"T = {graph.T}: expected 1..{MAX_T} time steps per sample")
    if not 1 <= len(graph.nodes) <= MAX_NODES:
        raise ConversionError(f"the graph has {len(graph.nodes)} nodes, expected 1..{MAX_NODES}")
    for node in graph.nodes.values():
        problem = shape_problem(node.shape)
        if problem:
            raise ConversionError(f"node '{node.name}': shape {problem}")
        for key, value in node.attrs.items():
            if isinstance(value, tuple) and len(value) > MAX_TUPLE:
                raise ConversionError(
                    f"node '{node.name}': attribute '{key}' has {len(value)} elements, the limit is {MAX_TUPLE}"
                )
