"""The reference integer simulator (``--backend reference``): the golden model of the integer contract.

numpy arithmetic (no torch, no lava): the ``spikeport.fixedpoint`` formulas on the ``FastOps`` backend (floats
that hold exact integers, float32 BLAS where a bound proves it exact: runtime/sim/fast_ops.py), batched over
samples, zero state at the start of every batch. ``ReferenceSimulator(graph, ops=fx.INT)`` runs the same walk
in int64 (the readable form; the tests hold the two equal in every layer). It records, per node and per time
step (summed over samples): spikes, synaptic operations, MACs, neuron updates, dendritic state updates, and the
node's held state in bytes, using the counting rules of docs/counting.md.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spikeport.fixedpoint import Ops
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import kernel
from spikeport.ir.kernels.base import CountFn
from spikeport.ir.ops import value_kind
from spikeport.metrics.counting import COUNTERS
from spikeport.runtime.sim.executor import GraphExecutor, Observer, last_readers, memory_batch
from spikeport.runtime.sim.fast_ops import FAST

EXECUTOR = "reference"


@dataclass
class LayerCounts:
    name: str
    op: str
    input_kind: str
    neurons: int
    state_bytes: int
    weight_bytes: int
    fan_out: float
    fan_in: int  # synapses per output neuron (MAC count of one output on analog input)
    per_t: dict[str, list[int]] = field(default_factory=dict)

    def add(self, key: str, t: int, value: Any) -> None:
        self.per_t[key][t] += int(value)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "name": self.name,
            "op": self.op,
            "input_kind": self.input_kind,
            "neurons": self.neurons,
            "fan_out": self.fan_out,
            "state_bytes": self.state_bytes,
            "weight_bytes": self.weight_bytes,
        }
        d.update({k: list(v) for k, v in self.per_t.items()})
        return d


def _input_kind(graph: Graph, node: Node) -> str:
    kinds = {value_kind(graph, s) for s in node.inputs}
    return (
        "analog"
        if "analog" in kinds
        else "integer"
        if "integer" in kinds
        else "graded"
        if "graded" in kinds
        else "spikes"
        if "spikes" in kinds
        else "activation"
        if kinds
        else "none"
    )


def state_bytes(graph: Graph, node: Node) -> int:
    """Bytes of state the node holds between its inputs and outputs, at Loihi precision."""
    return kernel(node.op).state_bytes(node)


def weight_bytes(node: Node) -> int:
    return int(sum(np.asarray(p).size * (1 if k == "weight_mant" else 4) for k, p in node.params.items()))


class Counter:
    """Observer for GraphExecutor that accumulates the per-node, per-time-step counts (each node's kernel
    record says what it counts; the formulas are spikeport.metrics.counting's)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.layers: dict[str, LayerCounts] = {}
        self._count: dict[str, CountFn | None] = {}
        for node in graph.nodes.values():
            record = kernel(node.op, node.name)
            lc = LayerCounts(
                node.name,
                node.op,
                _input_kind(graph, node),
                record.neurons(node),
                record.state_bytes(node),
                weight_bytes(node),
                _fan_out(graph, node),
                record.fan_in(node),
            )
            lc.per_t = {k: [0] * graph.T for k in COUNTERS}
            self.layers[node.name] = lc
            self._count[node.name] = record.count
        self.state_peak: dict[str, float] = {}
        self._last: dict[str, np.ndarray] = {}  # outputs a node still to be counted reads
        self._done_after = last_readers(graph)

    def __call__(self, t: int, name: str, out: Any, extra: dict[str, Any]) -> None:
        count = self._count[name]
        if count is not None:
            lc = self.layers[name]
            extra["input_kind"] = lc.input_kind
            for key, value in count(
                self.graph.nodes[name], [self._last[s] for s in self.graph.nodes[name].inputs], out, extra
            ).items():
                lc.per_t[key][t] += int(value)
        if "state_peak" in extra:
            self.state_peak[name] = max(self.state_peak.get(name, 0), extra["state_peak"])
        self._last[name] = out
        for done in self._done_after[name]:
            self._last.pop(done, None)


def _fan_out(graph: Graph, node: Node) -> float:
    """Synapses one spike of this node drives (dense: out features; conv: C_out/groups * k*k)."""
    return float(sum(kernel(c.op).synapses_per_input(c) for c in graph.consumers(node.name)))


class ReferenceSimulator:
    """Runs an artifact's graph on batches of images; see ``run`` for the report."""

    def __init__(self, graph: Graph, ops: Ops = FAST) -> None:
        self.graph = graph
        self.executor = GraphExecutor(graph, ops)

    def run_batch(
        self, images: np.ndarray, counter: Counter | None = None, observer: Observer | None = None
    ) -> np.ndarray:
        """images [B, H, W, C] -> summed integer logits [B, classes]."""

        def observe(t: int, name: str, out: Any, extra: dict[str, Any]) -> None:
            if counter is not None:
                counter(t, name, out, extra)
            if observer is not None:
                observer(t, name, out, extra)

        logits: np.ndarray = self.executor.run(images, observe if (counter or observer) else None)
        return logits

    def run(
        self,
        images: np.ndarray,
        labels: np.ndarray | None = None,
        batch_size: int = 64,
        progress: bool = False,
        workers: int | None = None,
    ) -> dict[str, Any]:
        """The run report (schema spikeport.run v1) over all images [S, H, W, C].

        Each batch is split over ``workers`` threads (default: one per CPU core this process may use), each
        with its own executor and counter and one BLAS thread: samples are independent, so the predictions and
        counts are those of one thread, and every core runs the elementwise steps that one thread would run
        alone (numpy releases the GIL inside them)."""
        batch_size = min(batch_size, memory_batch(self.graph))  # ImageNet shape: 13 samples, not 64
        workers = max(1, min(workers or default_workers(), batch_size))
        executors = [self.executor] + [GraphExecutor(self.graph, self.executor.ops) for _ in range(workers - 1)]
        counters = [Counter(self.graph) for _ in executors]
        preds: list[np.ndarray] = []
        start = time.perf_counter()
        batches = range(0, len(images), batch_size)
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="reference", unit="batch")
        with _one_blas_thread_each(workers), ThreadPoolExecutor(workers) as pool:
            for i in batches:
                parts = np.array_split(images[i : i + batch_size], workers)
                jobs = [
                    pool.submit(self._run_part, ex, part, c)
                    for ex, part, c in zip(executors, parts, counters, strict=True)
                    if len(part)
                ]
                preds.extend(np.argmax(job.result(), axis=-1) for job in jobs)
        wall = time.perf_counter() - start
        predictions = np.concatenate(preds) if preds else np.zeros(0, np.int64)
        return build_report(self.graph, merge_counters(counters), predictions, labels, wall, EXECUTOR)

    @staticmethod
    def _run_part(executor: GraphExecutor, images: np.ndarray, counter: Counter) -> np.ndarray:
        logits: np.ndarray = executor.run(images, counter)
        return logits


def default_workers() -> int:
    """The CPU cores this process may run on (1 without threadpoolctl, which keeps BLAS to one thread each)."""
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def _one_blas_thread_each(workers: int) -> Iterator[None]:
    if workers == 1:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def merge_counters(counters: Sequence[Counter]) -> Counter:
    """One counter holding the sums (and state peaks) of counters that saw disjoint samples of the same graph."""
    merged = counters[0]
    for other in counters[1:]:
        for name, layer in merged.layers.items():
            for key, per_t in layer.per_t.items():
                layer.per_t[key] = [a + b for a, b in zip(per_t, other.layers[name].per_t[key], strict=True)]
        for name, peak in other.state_peak.items():
            merged.state_peak[name] = max(merged.state_peak.get(name, 0), peak)
    return merged


def build_report(
    graph: Graph,
    counter: Counter,
    preds: np.ndarray | Sequence[int],
    labels: np.ndarray | None,
    wall: float,
    executor: str,
) -> dict[str, Any]:
    layers = [counter.layers[name].to_dict() for name in graph.order]
    totals = {k: int(sum(sum(layer[k]) for layer in layers)) for k in COUNTERS}
    report = {
        "schema": "spikeport.run",
        "schema_version": 1,
        "executor": executor,
        "model": graph.meta.get("model_config", {}),
        "T": graph.T,
        "samples": int(len(preds)),
        "predictions": [int(p) for p in preds],
        "wall_time_s": wall,
        "latency_timesteps": graph.T,
        "layers": layers,
        "totals": totals,
        "state_peak": {k: float(v) for k, v in counter.state_peak.items()},
        "peak_state_bytes": int(sum(layer["state_bytes"] for layer in layers)),
    }
    if labels is not None:
        report["accuracy"] = float(np.mean(np.asarray(preds) == np.asarray(labels))) if len(preds) else 0.0
    return report
