"""Walks a quantized IR graph time step by time step with a given ops backend (numpy ints or torch).

The reference simulator (sim/reference.py), reference-torch (sim/torch_reference.py) and the fake-quant executor
(convert/fakequant.py) are all this loop; only the ops backend and the source of the integer parameters differ.
It knows no backend, so it sits below them all in ``runtime``: the Lava lowering walks it too (a recurrent
group's silence before its input, checked with the reference's own steps). What each node computes is its
kernel record's ``step`` (``spikeport.ir.kernels``), written once against the ops backend. Every run starts
from zero state (explicit reset between batches of samples).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel
from spikeport.value_kinds import LOGITS

Observer = Callable[[int, str, Any, dict[str, Any]], None]  # (t, node name, output value, extra) -> None


class GraphExecutor:
    def __init__(self, graph: Graph, ops: Any = fx.INT, qparams: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        if not graph.quantized and qparams is None:
            raise ValueError("GraphExecutor needs a quantized graph or integer parameters")
        self.graph, self.ops = graph, ops
        self.qparams = qparams if qparams is not None else {n.name: n.params for n in graph.nodes.values()}
        self.order = [graph.nodes[name] for name in graph.order]
        self.steps = [kernel(node.op, node.name).step for node in self.order]
        self.logits = [kernel(node.op).spec.out_kind == LOGITS for node in self.order]
        self.prepared: dict[str, Any] = {}
        for node in self.order:
            prepare = kernel(node.op).prepare
            if prepare is not None:
                self.prepared[node.name] = prepare(node, self.qparams.get(node.name, {}))
        self.fill = max([kernel(node.op).warmup(node) for node in self.order] + [0])
        # while the pipeline fills: processes that run before the stream reaches them, and stateless ones
        self.fills = [bool(kernel(n.op).warmup(n) or not kernel(n.op).state_bytes(n)) for n in self.order]
        self.t = 0
        self.images: Any = None
        self.state: dict[str, dict[str, Any]] = {}
        # the outputs each node is the last reader of within a step (its own when nothing reads it): dropped as soon
        # as that node has run, so a step holds the outputs still to be read, not every node's (spikformer-8-512 at
        # ImageNet shape: 17.6 M float64 outputs per sample, 141 MB)
        self.done_after = graph.last_readers()

    def run(self, images: Any, observer: Observer | None = None, fill_observer: Observer | None = None) -> Any:
        """images [B, H, W, C] (float, normalized; spikes [B, T, ...] for a spike input) -> summed logits
        [B, classes] over T time steps (None without a readout). ``fill_observer`` sees every node's output
        at the pipeline-fill steps t = -fill .. -1 (what Lava's non-resetting processes send before the stream
        reaches them; zeros for the others), e.g. to compare a whole Lava timeline from step 0."""
        self.images = images
        state: dict[str, dict[str, Any]] = {node.name: {} for node in self.order}
        self.state = state  # each node's state after the last step (the hardware plan compares read states with it)
        self._fill_pipeline(state, fill_observer)
        logits = None
        for t in range(self.graph.T):
            self.t = t
            values: dict[str, Any] = {}
            for node, step, is_logits in zip(self.order, self.steps, self.logits, strict=True):
                extra: dict[str, Any] = {}
                out = step(self, node, [values[s] for s in node.inputs], state[node.name], extra)
                values[node.name] = out
                if is_logits:
                    logits = out if logits is None else logits + out
                if observer is not None:
                    observer(t, node.name, out, extra)
                for name in self.done_after[node.name]:
                    del values[name]
        return logits

    def _fill_pipeline(self, state: dict[str, dict[str, Any]], observer: Observer | None = None) -> None:
        """Steps t = -fill .. -1 on zero input, for processes that run before a stream reaches them and
        keep what they integrated (no reset; e.g. Lava's SigmaDelta). Stateful nodes that reset at the
        stream's start send nothing meanwhile; nothing is counted (``observer`` sees each output)."""
        for t in range(-self.fill, 0):
            self.t = t
            values: dict[str, Any] = {}
            for node, step, fills in zip(self.order, self.steps, self.fills, strict=True):
                if fills:
                    values[node.name] = step(self, node, [values[s] for s in node.inputs], state[node.name], {})
                else:
                    values[node.name] = self.ops.zeros((self.images.shape[0], *node.shape), like=self.images)
                if observer is not None:
                    observer(t, node.name, values[node.name], {})


# Bytes a batch of the reference may hold: state and live outputs measured at ~5 bytes per node output element and
# sample (spikformer-8-512 at ImageNet shape, 33 M elements: 150 MB a sample; a batch of 64 peaked at 10.6 GB)
BATCH_BUDGET = 2 << 30
BYTES_PER_ELEMENT = 5


def memory_batch(graph: Graph, budget: int = BATCH_BUDGET) -> int:
    """The most samples one batch of the reference may take within ``budget`` bytes (at least 1)."""
    elements = sum(int(np.prod(graph.nodes[name].shape)) for name in graph.order)
    return max(1, budget // (BYTES_PER_ELEMENT * max(1, elements)))


def to_channels_last(images: np.ndarray) -> np.ndarray:
    """[B, C, H, W] (torch layout) -> [B, H, W, C]."""
    return np.ascontiguousarray(np.asarray(images).transpose(0, 2, 3, 1))
