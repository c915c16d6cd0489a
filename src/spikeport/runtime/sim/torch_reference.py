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
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from spikeport import counting as C, fixedpoint as fx
from spikeport.errors import ConfigError
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel
from spikeport.ir.kernels.base import CountFn
from spikeport.progress import Bar
from spikeport.run_report import COUNTERS, RunReport
from spikeport.runtime.counter import RunCounter, build_report
from spikeport.runtime.executor import GraphExecutor
from spikeport.value_kinds import LOGITS


def _constant_key(x: np.ndarray) -> tuple[int, tuple[int, ...], tuple[int, ...], str]:
    """Which bytes of its base array a view reads (w.T, a slice): the same view of the same base, the same key."""
    base = x if x.base is None else x.base
    offset = x.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return offset, x.shape, x.strides, x.dtype.str


class TorchIntOps:
    """``fixedpoint.Ops`` on float64 tensors holding exact integers, on ``device`` (see the module docstring)."""

    def __init__(self, device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        # a parameter array -> its tensors on the device, one per view of it (w and w.T), copied once; an entry
        # leaves with its array (a temporary, e.g. weights * 0, is not kept: its address may be reused)
        self._constants: dict[int, tuple[weakref.ref[np.ndarray], dict[tuple[Any, ...], Any]]] = {}

    def constant(self, x: np.ndarray, make: Callable[[np.ndarray], Any], tag: str = "") -> Any:
        """``make(x)`` (a tensor on the device), made once per view of a parameter array and ``tag``, kept while the
        array lives."""
        base = x if x.base is None else x.base
        held = self._constants.get(id(base))
        if held is None or held[0]() is not base:
            try:
                ref = weakref.ref(base)
            except TypeError:  # not weak-referenceable: made every call
                return make(x)
            held = (ref, {})
            self._constants[id(base)] = held
            weakref.finalize(base, self._constants.pop, id(base), None)
        key = (*_constant_key(x), tag)
        if key not in held[1]:
            held[1][key] = make(x)
        return held[1][key]

    def asint(self, x: Any) -> torch.Tensor:
        if isinstance(x, torch.Tensor):
            return x.to(self.device, torch.float64)
        if isinstance(x, np.ndarray):  # a parameter: copied to the device once
            held: torch.Tensor = self.constant(
                x, lambda a: torch.as_tensor(np.asarray(a, np.float64), device=self.device)
            )
            return held
        return torch.as_tensor(np.asarray(x, np.float64), device=self.device)

    def round(self, x: Any) -> torch.Tensor:
        return torch.round(self.asint(x))

    def trunc_shift(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return torch.trunc(x / float(2**n))

    def floor_shift(self, x: torch.Tensor, e: int) -> torch.Tensor:
        return x * float(2**e) if e >= 0 else torch.floor(x / float(2**-e))

    def wrap_lava_u(self, x: torch.Tensor) -> torch.Tensor:
        wrapped = torch.where(x > fx.STATE_MAX, x - 2 * fx.STATE_MAX, x)
        return torch.where(wrapped <= -fx.STATE_MAX, x + 2 * fx.STATE_MAX, wrapped)

    def clip(self, x: torch.Tensor, lo: int, hi: int) -> torch.Tensor:
        return torch.clamp(x, lo, hi)

    def spike(self, v: torch.Tensor, threshold: Any) -> torch.Tensor:
        fired: torch.Tensor = v > threshold
        return fired.to(v.dtype)

    def matmul(self, a: Any, b: Any) -> torch.Tensor:
        return self.asint(a) @ self.asint(b)

    def where(self, cond: Any, a: Any, b: Any) -> torch.Tensor:
        return torch.where(cond, a, b)

    def zeros(self, shape: tuple[int, ...], like: Any = None) -> torch.Tensor:
        device = like.device if isinstance(like, torch.Tensor) else self.device
        return torch.zeros(shape, dtype=torch.float64, device=device)

    def conv2d(self, x: Any, w: Any, stride: fx.Pair, padding: fx.Pair, dilation: fx.Pair, groups: int) -> torch.Tensor:
        """Channels-last exact correlation: unfold + one GEMM per group (see the module docstring)."""
        xt = self.asint(x).permute(0, 3, 1, 2)  # [B, C, H, W]
        wt = self.asint(w).permute(0, 3, 1, 2)  # [C_out, C_in / groups, kH, kW]
        b, c, h, wd = xt.shape
        cout, cg, kh, kw = wt.shape
        ho = fx.conv_out_size(h, kh, stride[0], padding[0], dilation[0])
        wo = fx.conv_out_size(wd, kw, stride[1], padding[1], dilation[1])
        cols = F.unfold(xt, (kh, kw), dilation=tuple(dilation), padding=tuple(padding), stride=tuple(stride))
        cols = cols.view(b, groups, cg * kh * kw, ho * wo)  # [B, G, C_in/G kH kW, L]
        out = torch.einsum("bgkl,gok->bglo", cols, wt.reshape(groups, cout // groups, cg * kh * kw))
        return out.reshape(b, ho, wo, cout) if groups == 1 else out.permute(0, 2, 1, 3).reshape(b, ho, wo, cout)

    def maxpool(self, x: torch.Tensor, kernel: int, stride: int, padding: int) -> torch.Tensor:
        return F.max_pool2d(x.permute(0, 3, 1, 2), kernel, stride, padding).permute(0, 2, 3, 1)

    def concat(self, parts: Sequence[torch.Tensor], axis: int) -> torch.Tensor:
        return torch.cat(list(parts), dim=axis)


INT8_MAX_K = (2**31 - 1) // (128 * 128)  # int32 sums of K products of int8 operands cannot overflow below this
F64 = torch.float64
# counts made of a value: (id(value), what) -> (a weak reference to it, the count), valid while it is that value
Memo = dict[tuple[int, Any], tuple["weakref.ref[torch.Tensor]", torch.Tensor]]


def lif_float32(
    v: torch.Tensor, a_in: torch.Tensor, keep: torch.Tensor, bias: torch.Tensor, threshold: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``fixedpoint.lif_step_float32`` in torch, exact where ``lif_fuses_in_float32`` holds (its docstring has the
    proof; the additions keep its order: (v + u) + bias). Returns (v, spikes as uint8, stats): stats = [spikes,
    act_overflows (|a_in| >= ACT_MAX), bound broken (|a_in| << 6 outside float32's exact integers)] in float64.
    One function so that a compiler fuses it (CheckedTorchOps.compile)."""
    u = a_in.to(torch.float32) * float(1 << fx.ACT_SHIFT)
    v = (torch.trunc(v.to(torch.float32) * keep) + u) + bias  # keep = 1 - dv / 4096, a power of two: exact
    v = torch.clamp(v, -float(fx.STATE_MAX - 1), float(fx.STATE_MAX - 1))
    fired = v > threshold
    magnitude = a_in.abs()
    stats = torch.stack(
        [
            fired.sum(dtype=F64),
            (magnitude >= fx.ACT_MAX).sum(dtype=F64),
            (magnitude.amax() * float(1 << fx.ACT_SHIFT) >= fx.STATE_MAX).to(F64),
        ]
    )
    return v.masked_fill(fired, 0.0), fired.to(torch.uint8), stats


def shift_to_float64(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``floor_shift`` of an int32 GEMM sum: floor(x * 2**e) in float64 (exact: x < 2**31, 2**e a power of two)."""
    return torch.floor(x.to(F64) * scale)


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(fn)`` (one fused kernel for any shape), falling back to ``fn`` where it cannot compile."""
    compiled = torch.compile(fn, dynamic=True)
    chosen: list[Callable[..., Any]] = [compiled]

    def call(*args: Any) -> Any:
        try:
            return chosen[0](*args)
        except Exception:  # noqa: BLE001 - no Triton, an inductor gap: the same function eagerly
            if chosen[0] is fn:
                raise
            chosen[0] = fn
            return fn(*args)

    return call


_COMPILED: dict[Callable[..., Any], Callable[..., Any]] = {}


def _compiled_once(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``_compiled(fn)``, one per process (every simulator of a run shares its compiled kernels)."""
    if fn not in _COMPILED:
        _COMPILED[fn] = _compiled(fn)
    return _COMPILED[fn]


class CheckedTorchOps(TorchIntOps):
    """The simulator's ops: ``TorchIntOps``' integers with narrower arithmetic where a bound makes it exact (see
    the module docstring). ``broken`` (a bool on the device) turns true when a value falls outside a bound the
    narrowing relied on: the caller then runs the batch again in ``TorchIntOps``. Spikes are uint8 tensors this
    backend knows as binary (made by ``spike`` or the LIF, alive): those enter int8 GEMMs unchecked."""

    def __init__(self, device: str | torch.device = "cpu") -> None:
        super().__init__(device)
        self._broken = torch.zeros((), dtype=torch.bool, device=self.device)
        self._checks: list[torch.Tensor] = []  # bound checks of this walk, folded into broken at once
        self._int8: dict[int, tuple[weakref.ref[torch.Tensor], torch.Tensor]] = {}  # this walk's int8 copies of values
        self.lif = lif_float32
        self.shift = shift_to_float64
        self.counted: Memo = {}  # counts the fused LIF made as it ran (TorchCounts reads them)
        self._binary: dict[int, weakref.ref[torch.Tensor]] = {}  # storage address -> a live binary tensor on it
        self._scalars: dict[tuple[float, torch.dtype], torch.Tensor] = {}

    def compile(self) -> None:
        """Fuse the LIF step and the GEMM epilogue with torch.compile (CUDA: Triton kernels)."""
        self.lif, self.shift = _compiled_once(lif_float32), _compiled_once(shift_to_float64)

    def scalar(self, value: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """A 0-dim constant on the device, made once (a compiled function takes it without recompiling)."""
        key = (float(value), dtype)
        if key not in self._scalars:
            self._scalars[key] = torch.tensor(float(value), dtype=dtype, device=self.device)
        return self._scalars[key]

    def _mark_binary(self, x: torch.Tensor) -> torch.Tensor:
        self._binary[x.untyped_storage().data_ptr()] = weakref.ref(x)
        return x

    def is_binary(self, x: torch.Tensor) -> bool:
        """x (or a view of it) holds spikes made here and still alive (a freed one's memory may hold anything)."""
        held = self._binary.get(x.untyped_storage().data_ptr())
        return held is not None and held() is not None and x.dtype == torch.uint8

    @property
    def broken(self) -> torch.Tensor:
        """True (a bool on the device) where a value fell outside a bound the narrowing relied on."""
        if self._checks:
            outside = self._checks[0] if len(self._checks) == 1 else torch.stack(self._checks).any()
            torch.logical_or(self._broken, outside, out=self._broken)
            self._checks.clear()
        return self._broken

    def begin(self) -> None:
        """A new walk: bound flag cleared, nothing of the last walk kept."""
        self._checks.clear()
        self._broken.zero_()
        self._int8.clear()
        self.counted.clear()

    def _check(self, outside: torch.Tensor) -> None:
        self._checks.append(outside)

    def _as_int8(self, x: torch.Tensor) -> torch.Tensor:
        """x as int8: spikes as they are (a view), other values checked for -128..127 (the cast would wrap); once
        per value and walk (q, k and v read the same residual sum)."""
        if self.is_binary(x):
            return x.view(torch.int8)
        held = self._int8.get(id(x))
        if held is not None and held[0]() is x:
            return held[1]
        if x.dtype in (torch.uint8, torch.bool):
            self._check(x.amax() > 127)
        else:
            lo, hi = torch.aminmax(x)
            self._check((lo < -128) | (hi > 127))
        out = x.to(torch.int8)
        self._int8[id(x)] = (weakref.ref(x), out)
        return out

    def _int8_weights(self, w: np.ndarray) -> torch.Tensor | None:
        """An [N, K] weight matrix as a contiguous int8 tensor (read as [K, N] column-major: cuBLASLt's int8
        layout), or None where the int8 GEMM cannot compute it exactly (values, K, or torch._int_mm's shapes)."""
        n, k = w.shape
        if k % 8 or n % 8 or k > INT8_MAX_K or w.dtype.kind not in "iuf" or not np.all(w == np.round(w)):
            return None
        if w.size and (w.min() < -128 or w.max() > 127):
            return None
        return torch.as_tensor(np.ascontiguousarray(w, dtype=np.int8), device=self.device)

    def spike(self, v: torch.Tensor, threshold: Any) -> torch.Tensor:
        fired: torch.Tensor = v > threshold
        return self._mark_binary(fired.view(torch.uint8))  # the comparison's own bytes (FastOps' choice)

    def floor_shift(self, x: torch.Tensor, e: int) -> torch.Tensor:
        if x.dtype == torch.int32:  # an int8 GEMM's sum (matmul, conv2d): shifted into float64 in one pass
            return self.shift(x, self.scalar(2.0**e, F64))
        return super().floor_shift(x, e)

    def matmul(self, a: Any, b: Any) -> torch.Tensor:
        """A constant [K, N] weight matrix times int8 values: int8 GEMM, int32 sums (floor_shift takes them to
        float64: fixedpoint's dense, conv and readout shift every such product at once); else float64."""
        if isinstance(b, np.ndarray) and b.ndim == 2 and isinstance(a, torch.Tensor) and a.dim() >= 2:
            weights = self.constant(b, lambda w: self._int8_weights(np.asarray(w).T), "int8")
            rows = a.numel() // max(a.shape[-1], 1)
            if weights is not None and rows > 16:  # torch._int_mm's smallest M
                out = torch._int_mm(self._as_int8(a.reshape(rows, a.shape[-1])), weights.t())
                return out.reshape(*a.shape[:-1], b.shape[-1])
        return super().matmul(a, b)

    def conv2d(self, x: Any, w: Any, stride: fx.Pair, padding: fx.Pair, dilation: fx.Pair, groups: int) -> torch.Tensor:
        """groups == 1 on int8 values: gather the taps channels-last (int8) and one int8 GEMM (int32 sums, as
        matmul); else TorchIntOps'."""
        if isinstance(w, np.ndarray) and groups == 1 and isinstance(x, torch.Tensor):
            cout, kh, kw, cin = w.shape
            weights = self.constant(w, lambda a: self._int8_weights(np.asarray(a).reshape(cout, -1)), "int8")
            b, h, wd, _ = x.shape
            ho = fx.conv_out_size(h, kh, stride[0], padding[0], dilation[0])
            wo = fx.conv_out_size(wd, kw, stride[1], padding[1], dilation[1])
            if weights is not None and b * ho * wo > 16:
                xp = F.pad(self._as_int8(x), (0, 0, padding[1], padding[1], padding[0], padding[0]))
                sb, sh, sw, sc = xp.stride()
                taps = xp.as_strided(
                    (b, ho, wo, kh, kw, cin),
                    (sb, stride[0] * sh, stride[1] * sw, dilation[0] * sh, dilation[1] * sw, sc),
                )
                out = torch._int_mm(taps.reshape(b * ho * wo, kh * kw * cin), weights.t())
                return out.view(b, ho, wo, cout)
        return super().conv2d(x, w, stride, padding, dilation, groups)

    def maxpool(self, x: torch.Tensor, kernel: int, stride: int, padding: int) -> torch.Tensor:
        if x.dtype == torch.uint8:  # spikes: max_pool2d has no integer kernels; float16 holds 0..255 exactly
            low = torch.float16 if x.is_cuda else torch.float32
            out = super().maxpool(x.to(low), kernel, stride, padding).to(torch.uint8)
            return self._mark_binary(out) if self.is_binary(x) else out
        return super().maxpool(x, kernel, stride, padding)

    def lif_step(
        self, u: Any, v: Any, a_in: torch.Tensor, p: fx.LifParams, extra: dict[str, Any] | None = None
    ) -> tuple[Any, Any, Any]:
        """``fixedpoint.lif_step``: in float32 (``lif_float32``) where its bound holds, checked on the device.
        The current u is not kept (du = 4095: the next step does not read it). ``extra`` is left alone: the counts
        this step makes on the way are noted in ``counted``, on the device."""
        if not fx.lif_fuses_in_float32(p, 0.0):  # the parameters' part of the bound
            return fx.lif_step(self, u, v, a_in, p)
        bias = self.constant(
            np.asarray(p.bias_mant),
            lambda b: torch.as_tensor(
                fx.floor_shift_numpy(np.asarray(b, np.int64), p.bias_exp).astype(np.float32), device=self.device
            ),
            f"bias<<{p.bias_exp}",
        )
        keep = self.scalar((fx.DECAY_UNITY - p.dv) / fx.DECAY_UNITY)
        v, spikes, stats = self.lif(v, a_in, keep, bias, self.scalar(p.vth << fx.ACT_SHIFT))
        self._check(stats[2] > 0.0)
        # its counts, made as it ran: the LIF kernel's "spikes" and "act_overflows" (TorchCounts.nonzero, .beyond)
        self.counted[(id(spikes), "nonzero")] = (weakref.ref(spikes), stats[0])
        self.counted[(id(a_in), ("beyond", fx.ACT_MAX))] = (weakref.ref(a_in), stats[1])
        return a_in, v, self._mark_binary(spikes)


# ---------------------------------------------------------------------------------------------- counting
# The kernels' counts on the device: each kernel's ``count`` (spikeport.ir.kernels.*) runs here as it runs on numpy,
# against ``TorchCounts`` (the ``counting.CountOps`` primitives on tensors). What the values decide is a float64 0-dim
# tensor (an exact integer), what the shapes decide a Python int; tests/test_torch_reference.py holds every count
# equal to the numpy one.
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
            _compiled_once(coincidence_messages) if device.type == "cuda" else coincidence_messages
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
            for key in COUNTERS:
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
                    raise KeyError(f"node '{name}' ({node.op}) counts {key!r}, not a counter; counters: {COUNTERS}")
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
