"""The integer contract in torch, on any device: ``spikeport run ART --backend reference --device cuda``.

``TorchIntOps`` runs the ``fixedpoint`` primitives on float64 tensors that hold exact integers (every sum stays
below 2**53, as the quantizer checks: MAX_EXACT_SUM), so a CUDA GPU computes the same integers as the numpy
reference. Exactness on a GPU rests on two choices:

- float64 GEMMs (cuBLAS DGEMM, FP64 tensor cores: exact FMAs) and never TF32, which applies to float32 only;
- convolutions as unfold + GEMM, not cuDNN, whose FFT and Winograd algorithms transform the operands into
  non-integers and round.

The fake-quant executor (``convert.fakequant.TorchOps``) subclasses these ops with straight-through gradients.

``TorchReferenceSimulator`` runs the same walk faster, as the numpy reference's ``FastOps`` does on a CPU, on
``CheckedTorchOps``: spikes as uint8, GEMMs of weights by spikes or small integers on int8 tensor cores with int32
sums (``torch._int_mm``: integer arithmetic, exact by construction), the Loihi LIF in float32 where
``fixedpoint.lif_fuses_in_float32`` proves it exact. Each narrowing rests on a bound of the values that flow
(int8 operands; |a_in| << 6 inside float32's exact integers); the bounds are checked on the device as the batch
runs and read back with its logits, and a batch that broke one is run again in ``TorchIntOps``' float64. The
counts stay on the device (``DeviceCounter``: each kernel's own ``count``, run on ``TorchCounts``) and on a CUDA GPU
each batch size's whole walk, counts included, is captured once as a CUDA graph and replayed: one host copy
(logits and the bound flag) per batch, the counts copied once per run. tests/test_torch_reference.py holds every
layer at every step and every count equal to the numpy reference's, on the CPU here and on a GPU where present.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from spikeport.errors import ConfigError
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel
from spikeport.progress import Bar
from spikeport.run_report import RunReport
from spikeport.runtime.counter import build_report
from spikeport.runtime.executor import GraphExecutor
from spikeport.runtime.sim.torch_counts import DeviceCounter
from spikeport.runtime.sim.torch_ops import CheckedTorchOps, TorchIntOps
from spikeport.value_kinds import LOGITS


def torch_device(device: str) -> torch.device:
    """``device`` checked: a clear error where torch cannot use it."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ConfigError(f"device = {device!r}: not a torch device ({err}); expected cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"device = {device!r}: torch sees no CUDA GPU (torch {torch.__version__}, "
            f"built for CUDA {torch.version.cuda or 'none'}); run on the CPU with --device cpu"
        )
    return dev


class _Captured:
    """One batch shape's walk as a CUDA graph: its input, logits, bound flag and counts live in static tensors."""

    def __init__(self, images: torch.Tensor, sim: TorchReferenceSimulator) -> None:
        self.images = images.clone()
        self.counts = DeviceCounter(sim.graph, sim.device)
        side = torch.cuda.Stream(sim.device)  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream(sim.device))
        with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph asks
            sim._walk(sim.fast, self.images, self.counts)
        torch.cuda.current_stream(sim.device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.counts.zero()
        with torch.cuda.graph(self.graph):
            self.counts.device_counts.zero_()
            self.logits = sim._walk(sim.fast, self.images, self.counts)
        # the Python side of the walk ran once, in the capture: host_counts holds one batch's shape-decided counts

    def replay(self, images: torch.Tensor) -> tuple[torch.Tensor, DeviceCounter]:
        self.images.copy_(images, non_blocking=True)
        self.graph.replay()
        return self.logits, self.counts


class TorchReferenceSimulator:
    """``ReferenceSimulator``'s report from the torch executor on ``device``: same integers, same counters
    (see the module docstring for how it runs). ``graphs=False`` walks every batch eagerly."""

    def __init__(self, graph: Graph, device: str = "cuda", graphs: bool = True) -> None:
        self.graph, self.device = graph, torch_device(device)
        self.ops = TorchIntOps(self.device)  # the exact walk, for a batch that breaks a bound of the fast one
        self.fast = CheckedTorchOps(self.device)
        if self.device.type == "cuda":
            self.fast.compile()
        self.executor = GraphExecutor(graph, self.ops)
        self.fast_executor = GraphExecutor(graph, self.fast)
        self.graphs = graphs and self.device.type == "cuda"
        self._captured: dict[tuple[Any, ...], _Captured | None] = {}
        self._seen: set[tuple[Any, ...]] = set()
        self.capture_error: str | None = None  # why a walk could not be captured (it then runs eagerly)
        self.reruns = 0  # batches that broke a bound and ran again exactly

    @property
    def executor_name(self) -> str:
        return f"reference-torch-{self.device.type}"

    def _walk(self, ops: TorchIntOps, images: torch.Tensor, counts: DeviceCounter | None) -> torch.Tensor:
        """One batch through the graph on ``ops`` (the bound flag cleared first) -> summed logits."""
        if isinstance(ops, CheckedTorchOps):
            ops.begin()
        executor = self.fast_executor if ops is self.fast else self.executor
        if counts is not None:
            counts.begin(ops if isinstance(ops, CheckedTorchOps) else None)
        logits: torch.Tensor = executor.run(images, counts)
        if counts is not None:
            counts.flush()
        if isinstance(ops, CheckedTorchOps):
            ops.broken  # noqa: B018 - folds the walk's bound checks into the flag (inside a captured walk too)
        return logits

    @torch.no_grad()
    def run_batch(self, images: np.ndarray, counts: DeviceCounter | None = None) -> np.ndarray:
        """images [B, H, W, C] -> summed integer logits [B, classes] (numpy int64); ``counts`` (optional) adds
        the batch's counts. One host copy: the logits with the bound flag."""
        x = torch.as_tensor(np.asarray(images)).to(self.device)  # its dtype kept: the input kernel rounds it
        batch = self._batch_counts(counts)
        captured = self._capture(x)
        if captured is not None:
            logits, replayed = captured.replay(x)
            batch = replayed if counts is not None else None
        else:
            if batch is not None:
                batch.zero()
            logits = self._walk(self.fast, x, batch)
        host = torch.cat([logits.reshape(-1).to(torch.float64), self.fast.broken.reshape(1).to(torch.float64)])
        values = host.cpu().numpy()
        if values[-1]:  # a bound broke: this batch again in float64, its counts from that walk
            self.reruns += 1
            batch = self._batch_counts(counts)
            if batch is not None:
                batch.zero()
            values = self._walk(self.ops, x, batch).reshape(-1).cpu().numpy()
        elif logits.numel():
            values = values[:-1]
        if counts is not None and batch is not None:
            counts.add(batch)
        return values.reshape(len(x), -1).astype(np.int64)

    def _batch_counts(self, counts: DeviceCounter | None) -> DeviceCounter | None:
        if counts is None:
            return None
        held = getattr(self, "_scratch", None)
        if held is None:
            held = self._scratch = DeviceCounter(self.graph, self.device)
        return held

    def _capture(self, x: torch.Tensor) -> _Captured | None:
        """The captured walk of x's shape, from the second batch of that shape on (the first walks eagerly and
        warms up: constants copied, kernels loaded; a last, smaller batch is never captured)."""
        if not self.graphs:
            return None
        key = (tuple(x.shape), x.dtype)
        if key in self._captured:
            return self._captured[key]
        if key not in self._seen:
            self._seen.add(key)
            return None
        try:
            self._captured[key] = _Captured(x, self)
        except RuntimeError as err:  # an op that cannot be captured: this shape walks eagerly
            torch.cuda.synchronize(self.device)
            self._captured[key] = None
            self.capture_error = f"{type(err).__name__}: {err}"
        return self._captured[key]

    def run(
        self, images: np.ndarray, labels: np.ndarray | None = None, batch_size: int = 256, progress: bool = False
    ) -> RunReport:
        """The run report (schema spikeport.run v1), executor ``reference-torch-<device>``."""
        if not any(kernel(node.op).spec.out_kind == LOGITS for node in self.graph.nodes.values()):
            raise ConfigError(
                "the torch reference predicts from a readout node; this graph has none (a netx network): "
                "run it on the reference target"
            )
        counts = DeviceCounter(self.graph, self.device)
        preds: list[np.ndarray] = []
        start = time.perf_counter()
        batches = Bar(range(0, len(images), batch_size), desc=self.executor_name, enabled=progress)
        for i in batches:
            preds.append(np.argmax(self.run_batch(images[i : i + batch_size], counts), axis=-1))
        counter = counts.counter()
        wall = time.perf_counter() - start
        predictions = np.concatenate(preds) if preds else np.zeros(0, np.int64)
        return build_report(self.graph, counter, predictions, labels, wall, self.executor_name, samples=len(images))
