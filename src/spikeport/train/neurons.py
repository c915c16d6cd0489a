"""Multi-step LIF neurons ``[T, B, ...]``: SpikingJelly's, or an equivalent plain-torch one.

Both implement the Spikformer neuron (official code: ``MultiStepLIFNode(tau=2, detach_reset=True)``):

    H[t] = V[t-1] + (X[t] - V[t-1]) / tau          (decay_input=True, v_reset = 0)
    S[t] = Heaviside(H[t] - v_th)                   (fires on H >= v_th, SpikingJelly's rule)
    V[t] = H[t] * (1 - S[t])                        (hard reset to 0; S detached in the reset)

with the sigmoid surrogate gradient sigma'(alpha x), alpha = 4. ``backend="spikingjelly"`` uses
SpikingJelly's ``LIFNode`` (its CUDA/Triton kernels on a GPU); ``backend="torch"`` is a plain loop that
ONNX export, NIR export and CPU tests use. The two give identical spikes (a test checks).
"""

from __future__ import annotations

import importlib.util
import logging
from typing import TYPE_CHECKING, Any, TypeGuard

import torch
from torch import nn

from spikeport.errors import unknown_choice
from spikeport.train.model_config import NEURON_BACKENDS

if TYPE_CHECKING:
    from spikingjelly.activation_based.neuron import LIFNode  # untyped: Any to mypy


class _NoTritonWarning(logging.Filter):
    """SpikingJelly registers its Triton kernels with torch when a neuron first runs; without Triton (every CPU-only
    install) torch logs "Triton not available, find_triton_kernels = []" once per kernel, into every command's
    output and every API user's. Nothing is lost: SpikingJelly then runs its torch path. A filter, not a level:
    torch resets its loggers' levels."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Triton not available" not in record.getMessage()


if importlib.util.find_spec("triton") is None:
    logging.getLogger("torch._library.triton").addFilter(_NoTritonWarning())


class SigmoidSpike(torch.autograd.Function):
    """Heaviside forward (x >= 0), sigmoid(alpha x) derivative backward: SpikingJelly's Sigmoid surrogate."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        sig = torch.sigmoid(ctx.alpha * x)
        return grad * ctx.alpha * sig * (1 - sig), None


class MultiStepLIF(torch.autograd.Function):
    """All T steps of the LIF as one autograd node: the forward loop records nothing but H[t] (the membrane before
    the spike), the backward runs BPTT in reverse. The step-by-step autograd graph of the same loop (kept for
    tracing and ONNX export) holds ~8 nodes per step; this one node, with the same spikes (same formula) and the
    same gradients (the same products, see tests/test_models_shapes.py), is what the training step runs.

        dL/dH[t] = dL/dS[t] sigma'(H[t] - v_th) + dL/dV[t] (1 - S[t])      (S detached in the reset)
        dL/dX[t] = dL/dH[t] / tau,   dL/dV[t-1] = dL/dH[t] (1 - 1/tau)
    """

    @staticmethod
    def forward(
        ctx: Any, x_seq: torch.Tensor, v: torch.Tensor, tau: float, v_threshold: float, alpha: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        h_seq = torch.empty_like(x_seq)
        spikes = torch.empty_like(x_seq)
        for t in range(x_seq.shape[0]):
            h = v + (x_seq[t] - v) / tau
            torch.ge(h, v_threshold, out=spikes[t])
            h_seq[t] = h
            v = h * (1.0 - spikes[t])
        ctx.save_for_backward(h_seq)
        ctx.set_materialize_grads(False)  # the final state's gradient is None when nothing reads it
        ctx.tau, ctx.v_threshold, ctx.alpha = tau, v_threshold, alpha
        return spikes, v

    @staticmethod
    def backward(
        ctx: Any, grad_spikes: torch.Tensor | None, grad_v: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None, None, None, None]:
        (h_seq,) = ctx.saved_tensors
        tau, alpha = ctx.tau, ctx.alpha
        if grad_spikes is None:
            grad_spikes = torch.zeros_like(h_seq)
        grad_x = torch.empty_like(h_seq)
        grad_next = grad_v
        for t in range(h_seq.shape[0] - 1, -1, -1):
            centred = h_seq[t] - ctx.v_threshold
            sig = torch.sigmoid(alpha * centred)
            grad_h = grad_spikes[t] * (alpha * sig * (1 - sig))
            if grad_next is not None:
                grad_h = grad_h + grad_next * (centred < 0).to(grad_h.dtype)  # 1 - S[t]
            grad_x[t] = grad_h / tau
            grad_next = grad_h * (1 - 1 / tau)
        return grad_x, grad_next, None, None, None


class TorchLIF(nn.Module):
    """Plain-torch multi-step LIF with the same equations and state semantics as SpikingJelly's LIFNode."""

    def __init__(self, tau: float = 2.0, v_threshold: float = 1.0, alpha: float = 4.0):
        super().__init__()
        self.tau, self.v_threshold, self.alpha = float(tau), float(v_threshold), float(alpha)
        self.v: torch.Tensor | float = 0.0

    def forward(self, x_seq: torch.Tensor) -> torch.Tensor:
        v = self.v if isinstance(self.v, torch.Tensor) else torch.zeros_like(x_seq[0])
        spikes, self.v = self.run(x_seq, v)
        return spikes

    def run(self, x_seq: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(spikes, final membrane) from membrane ``v``: on a CPU lif_kernels' compiled loops (one autograd node
        where a gradient is wanted, the forward loop alone in inference), else one MultiStepLIF node (training) or
        the plain loop (inference keeps no H[t]); tracing and ONNX export record plain ops."""
        if torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
            return self.step_by_step(x_seq, v)
        from spikeport.train import lif_kernels  # numba: imported by the first LIF that runs

        compiled = lif_kernels.usable(x_seq)
        if not (torch.is_grad_enabled() and (x_seq.requires_grad or v.requires_grad)):
            return lif_kernels.infer(x_seq, v, self.tau, self.v_threshold) if compiled else self.step_by_step(x_seq, v)
        node = lif_kernels.FusedLIF if compiled else MultiStepLIF
        spikes, v = node.apply(x_seq, v, self.tau, self.v_threshold, self.alpha)
        return spikes, v

    def step_by_step(self, x_seq: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The loop as an autograd graph of plain ops (what tracing and ONNX export record)."""
        spikes = []
        for x in x_seq:
            h = v + (x - v) / self.tau
            if torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
                s = (h >= self.v_threshold).to(h.dtype)
            else:
                s = SigmoidSpike.apply(h - self.v_threshold, self.alpha)
            v = h * (1.0 - s.detach())
            spikes.append(s)
        return torch.stack(spikes), v

    def reset(self) -> None:
        self.v = 0.0

    def extra_repr(self) -> str:
        return f"tau={self.tau}, v_threshold={self.v_threshold}, hard reset to 0, detach_reset"


def groupable(lifs: list[Any]) -> bool:
    """Whether ``lif_group`` runs these LIF groups as one: same kind and parameters, each at rest (no state from an
    earlier call), no forward hook watching one (firing-rate monitors, analysis), not being traced or exported."""
    first = lifs[0]
    if not all(type(m) is type(first) and lif_params(m) == lif_params(first) for m in lifs):
        return False
    if any(isinstance(m.v, torch.Tensor) or float(m.v) != 0.0 for m in lifs):
        return False
    if any(m._forward_hooks or m._forward_pre_hooks for m in lifs):
        return False
    if torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
        return False
    if isinstance(first, TorchLIF):
        return True
    sj = (first.v_reset, first.detach_reset, first.decay_input, first.store_v_seq, first.step_mode)
    return all((m.v_reset, m.detach_reset, m.decay_input, m.store_v_seq, m.step_mode) == sj for m in lifs) and sj == (
        0.0,
        True,
        True,
        False,
        "m",
    )


def lif_group(lifs: list[Any], x_seq: torch.Tensor) -> torch.Tensor:
    """The spikes of ``groupable`` LIF groups of equal size, run as one over ``x_seq`` [T, ..., n C] (their inputs
    side by side on the last axis: one kernel launch instead of n), each group's final state left in its module as
    if it had run alone."""
    first = lifs[0]
    if isinstance(first, TorchLIF):
        spikes, v = first.run(x_seq, torch.zeros_like(x_seq[0]))
    else:
        from spikingjelly.activation_based import functional

        v0 = torch.zeros(x_seq.shape[1:], dtype=torch.float32, device=x_seq.device)
        spikes, v, _ = functional.lif_multi_step(
            x_seq, v0, first.tau, True, first.v_threshold, 0.0, first.surrogate_function, True, False
        )
    keep_final_states(lifs, v)
    return spikes


def keep_final_states(lifs: list[Any], v: torch.Tensor) -> None:
    """Leave in each of ``lifs`` its block of the grouped final membrane ``v`` [..., n C], as if it had run alone."""
    for m, part in zip(lifs, v.chunk(len(lifs), dim=-1), strict=True):
        m.v = part


def make_lif(v_threshold: float = 1.0, tau: float = 2.0, backend: str = "spikingjelly") -> nn.Module:
    """A multi-step LIF group; ``backend`` is one of NEURON_BACKENDS."""
    if backend == "torch":
        return TorchLIF(tau=tau, v_threshold=v_threshold)
    if backend == "spikingjelly":
        from spikingjelly.activation_based import neuron, surrogate

        return neuron.LIFNode(
            tau=tau,
            v_threshold=v_threshold,
            v_reset=0.0,
            decay_input=True,
            detach_reset=True,
            surrogate_function=surrogate.Sigmoid(alpha=4.0),
            step_mode="m",
        )

    raise unknown_choice("neuron backend", backend, NEURON_BACKENDS)


def is_lif(module: nn.Module) -> TypeGuard[TorchLIF | LIFNode]:
    if isinstance(module, TorchLIF):
        return True
    try:
        from spikingjelly.activation_based import neuron
    except ImportError:  # pragma: no cover - spikingjelly is a training dependency
        return False
    return isinstance(module, neuron.LIFNode)


def lif_params(module: TorchLIF | LIFNode) -> tuple[float, float]:
    """(tau, v_threshold) of either LIF implementation."""
    return float(module.tau), float(module.v_threshold)


def reset_net(model: nn.Module) -> None:
    """Reset every neuron's membrane state (SpikingJelly's ``functional.reset_net`` for both backends)."""
    for m in model.modules():
        if is_lif(m):
            m.reset()
