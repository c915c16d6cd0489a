"""A run's counts in torch, kept on the device: ``TorchCounts`` (the counting primitives of ``counting.CountOps`` on
tensors) and ``DeviceCounter`` (the reference's RunCounter as an observer of the graph walk that runs each kernel's
``count`` on them, read back once per run)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from spikeport import counting as C, fixedpoint as fx
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel
from spikeport.ir.kernels.base import CountFn
from spikeport.run_report import LAYER_COUNTER_NAMES
from spikeport.runtime.counter import RunCounter
from spikeport.runtime.sim.torch_ops import F64, CheckedTorchOps, Memo, TorchIntOps, compiled_once


def _total(x: torch.Tensor, dim: Any = None) -> torch.Tensor:
    """The exact sum of integer values, in float64 (exact below 2**53)."""
    return x.sum(dtype=F64) if dim is None else x.sum(dim=dim, dtype=F64)


def _magnitude(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype in (torch.uint8, torch.bool) else x.abs()


def coincidence_messages(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """``counting.NumpyCounts.coincidence_messages`` on spikes [B, N, H, d_h], in float64: GEMMs where numpy uses
    bit words. One function so that a compiler fuses it (TorchCounts on CUDA)."""
    qh, kh, vh = (x.to(torch.float32) for x in (q, k, v))  # 0/1: exact
    if not causal:  # one S = K^T V per head
        held = torch.matmul(kh.permute(0, 2, 3, 1), vh.permute(0, 2, 1, 3))  # [B, H, d_h, d_h]
        reached = (held > 0).sum(-1, dtype=F64)  # [B, H, d_h]
        return (_total(qh, dim=1) * reached).sum()
    pairs = kh[..., :, None] * vh[..., None, :]  # the running S_n: any k_j[c] v_j[c'] = 1 for j <= n
    reached = (pairs.cumsum(dim=1) > 0).sum(-1, dtype=F64)  # [B, N, H, d_h]
    return (qh.to(F64) * reached).sum()


class TorchCounts:
    """``counting.CountOps`` on tensors, on ``device``: what a kernel counts stays on the device. A count of a whole
    value is made once per value and walk (q, k and v's dense layers read the same input; the fused LIF counts its
    spikes and a_in as it runs: ``CheckedTorchOps.counted``); constants (reach tables) are copied once."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.walk: CheckedTorchOps | None = None  # the walk's ops, when they know spikes and counts of their own
        self._memo: Memo = {}
        self._constants = TorchIntOps(device)
        self._messages: Callable[..., torch.Tensor] = (
            compiled_once(coincidence_messages) if device.type == "cuda" else coincidence_messages
        )

    def begin(self, walk: CheckedTorchOps | None) -> None:
        self.walk = walk
        self._memo.clear()

    def _once(self, x: torch.Tensor, what: Any, count: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        for memo in (self._memo, self.walk.counted if self.walk is not None else {}):
            held = memo.get((id(x), what))
            if held is not None and held[0]() is x:
                return held[1]
        value = count(x)
        self._memo[(id(x), what)] = (weakref.ref(x), value)
        return value

    def binary(self, x: torch.Tensor) -> bool:
        return self.walk is not None and self.walk.is_binary(x)

    def size(self, x: torch.Tensor) -> int:
        return x.numel()

    def nonzero(self, x: torch.Tensor, axis: C.Axis = None) -> torch.Tensor:
        """Entries != 0: the sum itself for spikes (one pass)."""
        if axis is not None:
            return _total(x if self.binary(x) else x != 0, axis)
        return self._once(x, "nonzero", lambda v: _total(v) if self.binary(v) else (v != 0).sum(dtype=F64))

    def total(self, x: torch.Tensor, axis: C.Axis = None) -> torch.Tensor:
        return _total(x, axis)

    def abs_total(self, x: torch.Tensor, axis: C.Axis = None) -> torch.Tensor:
        if axis is not None:
            return _total(_magnitude(x), axis)
        return self._once(x, "abs_total", lambda v: _total(_magnitude(v)))

    def beyond(self, x: torch.Tensor, limit: float) -> torch.Tensor:
        return self._once(x, ("beyond", limit), lambda v: (v.abs() >= limit).sum(dtype=F64))

    def constant(self, x: np.ndarray) -> torch.Tensor:
        made: torch.Tensor = self._constants.constant(
            x, lambda a: torch.as_tensor(np.asarray(a, np.float64), device=self.device), "count"
        )
        return made

    def coincidence_messages(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        return self._messages(q, k, v, causal)


class DeviceCounter:
    """The reference ``RunCounter``'s counts of a run, accumulated on the device: an observer of the graph walk that
    runs each kernel's ``count`` on ``TorchCounts``. Counts of tensors are written to a device table at the end of each
    walk (one scatter), shape-decided ints to a host table; both are read back once, by ``counter``."""

    def __init__(self, graph: Graph, device: torch.device) -> None:
        self.graph, self.device = graph, device
        self.layout = RunCounter(graph)  # input kinds, neurons, bytes: the numpy counter's, for the report
        self.slots: dict[str, dict[str, int]] = {}  # node -> counter -> row of the count tables
        self.counts: dict[str, CountFn] = {}
        keys: list[tuple[str, str]] = []
        for name in graph.order:
            count = kernel(graph.nodes[name].op).count
            if count is None:
                continue
            self.counts[name] = count
            self.slots[name] = {}
            for key in LAYER_COUNTER_NAMES:
                self.slots[name][key] = len(keys)
                keys.append((name, key))
        self.keys = keys
        self.ops = TorchCounts(device)
        self.device_counts = torch.zeros((graph.T, len(keys)), dtype=F64, device=device)  # exact integers
        self.host_counts = np.zeros((graph.T, len(keys)), np.int64)
        self._last: dict[str, Any] = {}
        self._where: list[int] = []  # this walk's device counts: their places in the table (flat) ...
        self._values: list[torch.Tensor] = []  # ... and values, written at once by flush
        self._index: dict[tuple[int, ...], torch.Tensor] = {}  # those places on the device

    def begin(self, ops: CheckedTorchOps | None) -> None:
        """A new walk on ``ops`` (the narrowed walk's ops know its spikes and the fused LIF's counts)."""
        self.ops.begin(ops)
        self._last.clear()
        self._where.clear()
        self._values.clear()

    def flush(self) -> None:
        """Write the walk's device counts into the table: one stack and one scatter for the whole walk."""
        if not self._values:
            return
        key = tuple(self._where)
        index = self._index.get(key)
        if index is None:  # made on the first (eager) walk: a captured walk copies nothing to the device
            index = self._index[key] = torch.tensor(self._where, device=self.device)
        self.device_counts.view(-1).index_add_(0, index, torch.stack(self._values))
        self._where.clear()
        self._values.clear()

    def zero(self) -> None:
        self.device_counts.zero_()
        self.host_counts[:] = 0
        self._last.clear()

    def add(self, other: DeviceCounter) -> None:
        self.device_counts += other.device_counts
        self.host_counts += other.host_counts

    def __call__(self, t: int, name: str, out: Any, extra: dict[str, Any]) -> None:
        count = self.counts.get(name)
        if count is not None:
            node, slots = self.graph.nodes[name], self.slots[name]
            extra["input_kind"] = self.layout.layers[name].input_kind
            width = len(self.keys)
            for key, value in count(self.ops, node, [self._last[s] for s in node.inputs], out, extra).items():
                if key not in slots:
                    raise KeyError(
                        f"node '{name}' ({node.op}) counts {key!r}, not a counter; counters: {LAYER_COUNTER_NAMES}"
                    )
                if isinstance(value, torch.Tensor):
                    self._where.append(t * width + slots[key])
                    self._values.append(value if value.dtype == F64 else value.to(F64))
                else:
                    self.host_counts[t, slots[key]] += int(value)
        self._last[name] = out

    def counter(self) -> RunCounter:
        """A reference ``RunCounter`` holding these counts (the one host copy of the device's tables)."""
        device = self.device_counts.cpu().numpy()
        if device.size and device.max() >= fx.MAX_EXACT_SUM:
            raise OverflowError(
                f"a count of {device.max():.4g} on the device: past float64's exact integers (2**53), it may have "
                "rounded; run fewer samples at once"
            )
        totals = np.rint(device).astype(np.int64) + self.host_counts  # [T, rows]
        counter = RunCounter(self.graph)
        for (name, key), column in zip(self.keys, totals.T, strict=True):
            for t, value in enumerate(column):
                if value:
                    counter.layers[name].counter(key)[t] += int(value)
        return counter


# ---------------------------------------------------------------------------------------------- simulator
