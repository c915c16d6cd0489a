"""The integer contract's primitives in torch: ``TorchIntOps`` (the ``fixedpoint`` primitives on float64 tensors that
hold exact integers, on any device) and ``CheckedTorchOps`` (the narrowed fast forms: uint8 spikes, int8 GEMMs with
int32 sums, the LIF in float32 where exact, each bound checked on the device). ``torch_reference.py`` says why each
is exact; the fake-quant executor subclasses ``TorchIntOps`` with straight-through gradients."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from spikeport import fixedpoint as fx


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


def compiled_once(fn: Callable[..., Any]) -> Callable[..., Any]:
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
        self.lif, self.shift = compiled_once(lif_float32), compiled_once(shift_to_float64)

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
