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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from spikeport.fixedpoint import Ops
from spikeport.ir.graph import Graph
from spikeport.progress import Bar
from spikeport.run_report import RunReport
from spikeport.runtime.counter import RunCounter, build_report
from spikeport.runtime.executor import GraphExecutor, Observer, memory_batch
from spikeport.runtime.recording import Spikes, empty_recording, recorded_node
from spikeport.runtime.sim.fast_ops import FAST

EXECUTOR = "reference"


class ReferenceSimulator:
    """Runs an artifact's graph on batches of images; see ``run`` for the report."""

    def __init__(self, graph: Graph, ops: Ops = FAST) -> None:
        self.graph = graph
        self.executor = GraphExecutor(graph, ops)

    def run_batch(
        self, images: np.ndarray, counter: RunCounter | None = None, observer: Observer | None = None
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
        record: bool = False,
    ) -> RunReport:
        """The run report over all inputs [S, ...] (images [S, H, W, C], or spikes / integers [S, T, ...] for a
        spike or graded input); with ``record``, ``report.recording`` holds every spiking layer's spikes (and the
        integrators' v) [S, T, *shape] (``runtime.recording``).

        Each batch is split over ``workers`` threads (default: one per CPU core this process may use), each
        with its own executor and counter and one BLAS thread: samples are independent, so the predictions and
        counts are those of one thread, and every core runs the elementwise steps that one thread would run
        alone (numpy releases the GIL inside them)."""
        batch_size = min(batch_size, memory_batch(self.graph))  # ImageNet shape: 13 samples, not 64
        workers = max(1, min(workers or default_workers(), batch_size))
        executors = [self.executor] + [GraphExecutor(self.graph, self.executor.ops) for _ in range(workers - 1)]
        counters = [RunCounter(self.graph) for _ in executors]
        recording = empty_recording(self.graph, len(images)) if record else None
        preds: list[np.ndarray] = []
        start = time.perf_counter()
        batches = Bar(range(0, len(images), batch_size), desc="reference", enabled=progress)  # no \r into a log
        with _one_blas_thread_each(workers), ThreadPoolExecutor(workers) as pool:
            for i in batches:
                parts = _split(i, min(i + batch_size, len(images)), workers)
                jobs = [
                    pool.submit(self._run_part, ex, images[lo:hi], c, _recorder(recording, lo))
                    for ex, (lo, hi), c in zip(executors, parts, counters, strict=True)
                    if hi > lo
                ]
                preds.extend(_predictions(job.result()) for job in jobs)
        wall = time.perf_counter() - start
        predictions = np.concatenate(preds) if preds else np.zeros(0, np.int64)
        counter = counters[0].merge(counters[1:])
        report = build_report(self.graph, counter, predictions, labels, wall, EXECUTOR, samples=len(images))
        report.recording = recording
        return report

    @staticmethod
    def _run_part(
        executor: GraphExecutor, images: np.ndarray, counter: RunCounter, observer: Observer | None
    ) -> np.ndarray | None:
        def observe(t: int, name: str, out: Any, extra: dict[str, Any]) -> None:
            counter(t, name, out, extra)
            if observer is not None:
                observer(t, name, out, extra)

        logits: np.ndarray | None = executor.run(images, observe)
        return logits


def _split(lo: int, hi: int, parts: int) -> list[tuple[int, int]]:
    """[lo, hi) cut into ``parts`` consecutive ranges as even as np.array_split makes them."""
    sizes = [len(a) for a in np.array_split(np.arange(lo, hi), parts)]
    edges = np.concatenate([[lo], lo + np.cumsum(sizes)])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _predictions(logits: np.ndarray | None) -> np.ndarray:
    """argmax of the summed logits; a graph without a readout predicts nothing."""
    return np.argmax(logits, axis=-1) if logits is not None else np.zeros(0, np.int64)


def _recorder(recording: Spikes | None, first: int) -> Observer | None:
    """An observer writing samples ``first``.. of each recorded node (and integrator v) into ``recording``."""
    if recording is None:
        return None
    keys = {recorded_node(key): key for key in recording}

    def observe(t: int, name: str, value: Any, extra: dict[str, Any]) -> None:
        spikes = keys.get((name, False))
        if spikes is not None:
            recording[spikes][first : first + len(value), t] = value
        v = keys.get((name, True))
        if v is not None:
            recording[v][first : first + len(value), t] = extra["v"]

    return observe


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
