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

import torch
from torch import nn

NEURON_BACKENDS = ("spikingjelly", "torch")


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
    def forward(ctx, x: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        sig = torch.sigmoid(ctx.alpha * x)
        return grad * ctx.alpha * sig * (1 - sig), None


class TorchLIF(nn.Module):
    """Plain-torch multi-step LIF with the same equations and state semantics as SpikingJelly's LIFNode."""

    def __init__(self, tau: float = 2.0, v_threshold: float = 1.0, alpha: float = 4.0):
        super().__init__()
        self.tau, self.v_threshold, self.alpha = float(tau), float(v_threshold), float(alpha)
        self.v: torch.Tensor | float = 0.0

    def forward(self, x_seq: torch.Tensor) -> torch.Tensor:
        v = self.v if isinstance(self.v, torch.Tensor) else torch.zeros_like(x_seq[0])
        spikes = []
        for x in x_seq:
            h = v + (x - v) / self.tau
            if torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
                s = (h >= self.v_threshold).to(h.dtype)
            else:
                s = SigmoidSpike.apply(h - self.v_threshold, self.alpha)
            v = h * (1.0 - s.detach())
            spikes.append(s)
        self.v = v
        return torch.stack(spikes)

    def reset(self) -> None:
        self.v = 0.0

    def extra_repr(self) -> str:
        return f"tau={self.tau}, v_threshold={self.v_threshold}, hard reset to 0, detach_reset"


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
    from spikeport.errors import unknown_choice

    raise unknown_choice("neuron backend", backend, NEURON_BACKENDS)


def is_lif(module: nn.Module) -> bool:
    if isinstance(module, TorchLIF):
        return True
    try:
        from spikingjelly.activation_based import neuron
    except ImportError:  # pragma: no cover - spikingjelly is a training dependency
        return False
    return isinstance(module, neuron.LIFNode)


def lif_params(module: nn.Module) -> tuple[float, float]:
    """(tau, v_threshold) of either LIF implementation."""
    return float(module.tau), float(module.v_threshold)


def reset_net(model: nn.Module) -> None:
    """Reset every neuron's membrane state (SpikingJelly's ``functional.reset_net`` for both backends)."""
    for m in model.modules():
        if is_lif(m):
            m.reset()
