"""The fake-quant executor: the integer network in torch, differentiable, for QAT fine-tuning.

It runs ``runtime.executor.GraphExecutor`` (the same graph walk and the same ``fixedpoint`` formulas as
the reference simulator) with ``TorchOps``: float64 tensors that hold integers exactly (all sums stay
below 2**53), and straight-through gradients for rounding, shifts and spikes. Forward values are
therefore identical to the reference simulator's; a test checks spikes layer by layer. ``FakeQuantExecutor`` (an
artifact's forward, no gradient) runs the LIF step as the reference simulator's numpy form on the tensors' memory.

``FakeQuantNetwork(graph)`` takes a *planned, float* graph (after ``quantize.plan``): its float
parameters become trainable ``nn.Parameter``s and are re-quantized with ``quantize.apply`` on every
forward, so fine-tuning moves the float masters while the forward pass stays bit-exact integer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from spikeport import fixedpoint as fx
from spikeport.convert import quantize as Q
from spikeport.ir.graph import Graph
from spikeport.runtime.executor import GraphExecutor, Observer
from spikeport.runtime.sim.fast_ops import FAST
from spikeport.runtime.sim.torch_ops import TorchIntOps

SURROGATE_ALPHA = 4.0


def _ste(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Forward y, backward identity to x (y itself where no gradient is recorded: FakeQuantExecutor)."""
    return x + (y - x).detach() if torch.is_grad_enabled() else y


class _Spike(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, v: torch.Tensor, threshold: Any) -> torch.Tensor:
        ctx.save_for_backward(v)
        ctx.threshold = float(threshold)
        spikes: torch.Tensor = (v > threshold).to(v.dtype)
        return spikes

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (v,) = ctx.saved_tensors
        scale = max(ctx.threshold, 1.0)  # surrogate in units of the threshold
        sig = torch.sigmoid(SURROGATE_ALPHA * (v - ctx.threshold) / scale)
        return grad * SURROGATE_ALPHA * sig * (1 - sig) / scale, None


class TorchOps(TorchIntOps):
    """fixedpoint primitives on float64 tensors holding integers (TorchIntOps), with straight-through gradients
    for rounding, shifts and spikes. On the CPU unless a device is given."""

    def round(self, x: Any) -> torch.Tensor:
        x = self.asint(x)
        return _ste(x, torch.round(x))

    def trunc_shift(self, x: torch.Tensor, n: int) -> torch.Tensor:
        y = x / float(2**n)
        return _ste(y, torch.trunc(y))

    def floor_shift(self, x: torch.Tensor, e: int) -> torch.Tensor:
        if e >= 0:
            return x * float(2**e)
        y = x / float(2**-e)
        return _ste(y, torch.floor(y))

    def spike(self, v: torch.Tensor, threshold: Any) -> torch.Tensor:
        if not torch.is_grad_enabled():
            return super().spike(v, threshold)
        out: torch.Tensor = _Spike.apply(v, threshold)  # type: ignore[no-untyped-call]  # torch's apply is untyped
        return out

    def asint(self, x: Any) -> torch.Tensor:
        return x.to(torch.float64) if isinstance(x, torch.Tensor) else super().asint(x)

    def conv2d(self, x: Any, w: Any, stride: fx.Pair, padding: fx.Pair, dilation: fx.Pair, groups: int) -> torch.Tensor:
        x, w = self.asint(x), self.asint(w)
        if w.shape[-1] == 1 and w.shape[0] == groups == x.shape[-1]:
            return _depthwise(x, w, stride, padding, dilation)
        y = F.conv2d(x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2), None, stride, padding, dilation, groups)
        return y.permute(0, 2, 3, 1)


def _depthwise(x: torch.Tensor, w: torch.Tensor, stride: fx.Pair, padding: fx.Pair, dilation: fx.Pair) -> torch.Tensor:
    """A depthwise correlation (x [B, H, W, C], w [C, kH, kW, 1]) as a sum over its taps: float64's grouped
    F.conv2d runs one convolution per channel (the LRF term's dilated 3x3: ~30 % of an lrf_dyn fake-quant run).
    The same integer sums in another order, exact in float64."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    _, h, wd, _ = x.shape
    kh, kw = w.shape[1:3]
    ho, wo = fx.conv_out_size(h, kh, sh, ph, dh), fx.conv_out_size(wd, kw, sw, pw, dw)
    padded = F.pad(x, (0, 0, pw, pw, ph, ph))
    out = x.new_zeros(x.shape[0], ho, wo, x.shape[-1])
    for i in range(kh):
        for j in range(kw):
            tap = padded[:, i * dh : i * dh + sh * (ho - 1) + 1 : sh, j * dw : j * dw + sw * (wo - 1) + 1 : sw]
            out.addcmul_(tap, w[:, i, j, 0])  # in place: one pass a tap (the integer sums are exact either way)
    return out


TORCH = TorchOps()


def _key(name: str) -> str:
    return name.replace(".", "__")


class FakeQuantNetwork(nn.Module):
    """Trainable fake-quant network from a planned float graph (see module docstring)."""

    def __init__(self, graph: Graph):
        super().__init__()
        if graph.quantized:
            raise ValueError("FakeQuantNetwork needs the planned float graph; use FakeQuantExecutor for artifacts")
        self.graph = graph
        self.masters = nn.ParameterDict()
        for node in graph.nodes.values():
            for pname, arr in node.params.items():
                self.masters[f"{_key(node.name)}::{pname}"] = nn.Parameter(torch.as_tensor(np.asarray(arr, np.float32)))

    def float_params(self) -> dict[str, dict[str, torch.Tensor]]:
        out: dict[str, dict[str, torch.Tensor]] = {}
        for key, p in self.masters.items():
            node, pname = key.split("::")
            out.setdefault(node.replace("__", "."), {})[pname] = p
        return out

    def forward(self, images: torch.Tensor, observer: Observer | None = None) -> torch.Tensor:
        """images [B, C, H, W] -> summed integer logits [B, classes] (float64, differentiable)."""
        qparams = Q.apply(self.graph, TORCH, self.float_params())
        x = images.to(torch.float64).permute(0, 2, 3, 1)
        logits: torch.Tensor = GraphExecutor(self.graph, TORCH, qparams).run(x, observer)
        return logits


class _InferenceOps(TorchOps):
    """TorchOps without a gradient to carry, on the CPU: the LIF step as the reference simulator's numpy form
    (``FastOps.lif_step``: float32 where exact, held to ``fixedpoint.lif_step`` by its tests) on the tensors' memory,
    instead of a dozen float64 tensor passes a step (three quarters of a fake-quant run's time)."""

    def lif_step(
        self, u: torch.Tensor, v: torch.Tensor, a_in: torch.Tensor, p: fx.LifParams, extra: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if torch.is_grad_enabled() or a_in.device.type != "cpu":
            return fx.lif_step(self, u, v, a_in, p)
        # v on a copy: the step writes u and v in place, and the v handed out (``extra["v"]``, the observers') stays
        u_next, v_next, spikes = FAST.lif_step(u.numpy(), v.numpy().copy(), a_in.numpy(), p, extra)
        return torch.from_numpy(u_next), torch.from_numpy(v_next), torch.from_numpy(spikes).to(torch.float64)


class FakeQuantExecutor:
    """The fake-quant forward pass of an already quantized graph (artifact); no training."""

    def __init__(self, graph: Graph):
        self.executor = GraphExecutor(graph, _InferenceOps())

    @torch.no_grad()
    def run(self, images_nhwc: np.ndarray, observer: Observer | None = None) -> torch.Tensor:
        logits: torch.Tensor = self.executor.run(
            torch.as_tensor(np.asarray(images_nhwc), dtype=torch.float64), observer
        )
        # float64 whatever dtype the last op left (the LIF state here is float32); a graph without a readout: None
        return logits.to(torch.float64) if isinstance(logits, torch.Tensor) else logits
