"""Counting a run, whatever executed it: per node and per time step, summed over samples.

A ``RunCounter`` is an observer of the graph walk (``runtime.executor.Observer``): each node's kernel record
counts its step on numpy (``counting.NUMPY``; the formulas are ``spikeport.counting``'s, the rules
docs/counting.md, the counters the records of ``spikeport.counters``). The reference simulator feeds it directly;
a Lava run feeds it from its recording through ``runtime.replay``; the conversion's reference run and QAT use it
too; the torch executor fills one from its device counts. ``build_report`` turns it into the typed ``RunReport``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spikeport import counters
from spikeport.counting import NUMPY
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import input_kind, kernel
from spikeport.ir.kernels.base import CountFn
from spikeport.run_report import LAYER_COUNTER_NAMES, LayerReport, RunReport


def weight_bytes(node: Node) -> int:
    """Bytes of a node's parameters as stored: 8-bit weight mantissas, 32-bit everything else."""
    return int(sum(np.asarray(p).size * (1 if k == "weight_mant" else 4) for k, p in node.params.items()))


def fan_out(graph: Graph, node: Node) -> float:
    """Synapses one spike of this node drives (dense: out features; conv: C_out/groups * k*k)."""
    return float(sum(kernel(c.op).synapses_per_input(c) for c in graph.consumers(node.name)))


class RunCounter:
    """Accumulates the per-node, per-time-step counts of a run (an observer of the graph walk)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.layers: dict[str, LayerReport] = {}
        self._count: dict[str, CountFn | None] = {}
        self._declared: dict[str, frozenset[str]] = {}
        for node in graph.nodes.values():
            record = kernel(node.op, node.name)
            row = LayerReport(
                node.name,
                node.op,
                input_kind(graph, node).name,
                record.neurons(node),
                fan_out(graph, node),
                record.state_bytes(node),
                weight_bytes(node),
            )
            row.counts = {key: [0] * graph.T for key in LAYER_COUNTER_NAMES}
            self.layers[node.name] = row
            self._count[node.name] = record.count
            self._declared[node.name] = frozenset(record.counters)
        self.state_peak: dict[str, float] = {}
        self._last: dict[str, np.ndarray] = {}  # outputs a node still to be counted reads
        self._done_after = graph.last_readers()

    def __call__(self, t: int, name: str, out: Any, extra: dict[str, Any]) -> None:
        count = self._count[name]
        if count is not None:
            row = self.layers[name]
            extra["input_kind"] = row.input_kind
            node = self.graph.nodes[name]
            for key, value in count(NUMPY, node, [self._last[s] for s in node.inputs], out, extra).items():
                if key not in self._declared[name]:  # run reports are checked against the declarations
                    raise KeyError(f"kernel '{node.op}' counted '{key}', which its record does not declare")
                row.counter(key)[t] += int(value)
        if "state_peak" in extra:
            self.state_peak[name] = max(self.state_peak.get(name, 0), extra["state_peak"])
        self._last[name] = out
        for done in self._done_after[name]:
            self._last.pop(done, None)

    def merge(self, others: Sequence[RunCounter]) -> RunCounter:
        """Adds the sums (and state peaks) of counters that saw other samples of the same graph; returns self."""
        for other in others:
            for name, row in self.layers.items():
                theirs = other.layers[name]
                row.counts = {
                    key: [a + b for a, b in zip(v, theirs.counts[key], strict=True)] for key, v in row.counts.items()
                }
            for name, peak in other.state_peak.items():
                self.state_peak[name] = max(self.state_peak.get(name, 0), peak)
        return self


def build_report(
    graph: Graph,
    counter: RunCounter,
    predictions: np.ndarray | Sequence[int],
    labels: np.ndarray | None,
    wall: float,
    executor: str,
    *,
    samples: int | None = None,
    latency_timesteps: int | None = None,
    run_counts: dict[str, int] | None = None,
    **fields: Any,
) -> RunReport:
    """The run report of ``counter``'s counts. ``samples`` defaults to the number of predictions (a network
    without a readout predicts nothing: give it); ``run_counts`` are the counts of the run's ``Scope.RUN``
    counters (``spikeport.counters``), which go to ``totals`` alone; ``fields`` are further RunReport fields
    (lava, compare, artifact, ...), set once here."""
    layers = [counter.layers[name] for name in graph.order]
    preds = [int(p) for p in predictions]
    accuracy = None
    if labels is not None and preds:
        accuracy = float(np.mean(np.asarray(preds) == np.asarray(labels)))
    elif labels is not None:
        accuracy = 0.0
    return RunReport(
        executor=executor,
        samples=len(preds) if samples is None else int(samples),
        layers=layers,
        model=dict(graph.meta.get("model_config", {})),
        T=graph.T,
        predictions=preds,
        accuracy=accuracy,
        wall_time_s=wall,
        latency_timesteps=graph.T if latency_timesteps is None else latency_timesteps,
        totals=_totals(layers, run_counts or {}),
        state_peak={k: float(v) for k, v in counter.state_peak.items()},
        peak_state_bytes=int(sum(row.state_bytes for row in layers)),
        **fields,
    )


def _totals(layers: Sequence[LayerReport], run_counts: dict[str, int]) -> dict[str, int]:
    """Every counter over the whole run: a per-layer counter summed over layers, steps and samples; a per-run one
    as counted."""
    for key in run_counts:
        if counters.counter(key).scope is not counters.Scope.RUN:
            raise KeyError(f"counter {key!r} is counted per layer, not per run")
    totals = {key: int(sum(row.total(key) for row in layers)) for key in LAYER_COUNTER_NAMES}
    return totals | {c.name: int(run_counts[c.name]) for c in counters.COUNTERS if c.name in run_counts}
