"""The multi-step LIF of a training step as two compiled kernels (``torch.compile``, Inductor).

``neurons.MultiStepLIF`` runs the LIF as eager ops: ~7 whole-layer tensor ops a time step forward and ~12
backward, each a read and a write of the layer's state. On a CPU that was half of a digits-tiny training step.
Compiled, each direction is one pass over memory: the digits-tiny training step takes about 0.55x the time of
SpikingJelly's CPU path (``benchmarks/bench_train.py``). The equations and their order are MultiStepLIF's,
so the spikes are the same; the gradients equal to rounding (tests/test_train_fast_path.py).

The kernels take the layer flattened (``[T, n]``, n dynamic): one build per dtype and step count, whatever the
layer's shape, and the neuron parameters as a tensor, so thresholds do not multiply the builds. A build takes a
few seconds on a CPU with a cold Inductor cache (it needs a C++ compiler), about one with a warm one. Where it
cannot be built, or with ``SPIKEPORT_FUSED_LIF=0``, training runs MultiStepLIF, after one warning saying why.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Any

import torch

ENV = "SPIKEPORT_FUSED_LIF"  # "0": never build; train with the eager MultiStepLIF

_built: dict[tuple[Any, ...], bool] = {}  # (device type, dtype, steps) -> whether its kernels built and ran
_failure: str | None = None  # why a build failed: no more attempts in this process


def _forward(x_seq: torch.Tensor, v: torch.Tensor, params: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """(spikes, H[t], final V) of ``x_seq`` [T, n] from membrane ``v`` [n]; params = (tau, v_threshold, alpha)."""
    tau, v_threshold = params[0], params[1]
    spikes, h_steps = [], []
    for t in range(x_seq.shape[0]):
        h = v + (x_seq[t] - v) / tau
        s = (h >= v_threshold).to(h.dtype)
        v = h * (1.0 - s)
        spikes.append(s)
        h_steps.append(h)
    return torch.stack(spikes), torch.stack(h_steps), v


def _backward(
    h_seq: torch.Tensor, grad_spikes: torch.Tensor, grad_v: torch.Tensor, params: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(dL/dX [T, n], dL/dV at the start) by BPTT in reverse; MultiStepLIF.backward's formula."""
    tau, v_threshold, alpha = params[0], params[1], params[2]
    grad_x = []
    grad_next = grad_v
    for t in range(h_seq.shape[0] - 1, -1, -1):
        centred = h_seq[t] - v_threshold
        sig = torch.sigmoid(alpha * centred)
        grad_h = grad_spikes[t] * (alpha * sig * (1 - sig)) + grad_next * (centred < 0).to(centred.dtype)
        grad_x.append(grad_h / tau)
        grad_next = grad_h * (1 - 1 / tau)
    grad_x.reverse()
    return torch.stack(grad_x), grad_next


@functools.cache
def _kernels() -> tuple[Any, Any]:
    """The compiled pair, made on first use (importing torch's compiler takes a second or two)."""
    return torch.compile(_forward, dynamic=True), torch.compile(_backward, dynamic=True)


class FusedLIF(torch.autograd.Function):
    """MultiStepLIF's autograd node (same arguments, same outputs) on the compiled kernels."""

    @staticmethod
    def forward(
        ctx: Any, x_seq: torch.Tensor, v: torch.Tensor, tau: float, v_threshold: float, alpha: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        shape, steps = x_seq.shape, x_seq.shape[0]
        params = torch.tensor([tau, v_threshold, alpha], dtype=x_seq.dtype, device=x_seq.device)
        spikes, h_seq, v_out = _kernels()[0](x_seq.reshape(steps, -1), v.reshape(-1), params)
        ctx.save_for_backward(h_seq, params)
        ctx.set_materialize_grads(False)
        ctx.shape = shape
        return spikes.view(shape), v_out.view(shape[1:])

    @staticmethod
    def backward(
        ctx: Any, grad_spikes: torch.Tensor | None, grad_v: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, None, None, None]:
        h_seq, params = ctx.saved_tensors
        grad_spikes = torch.zeros_like(h_seq) if grad_spikes is None else grad_spikes.reshape(h_seq.shape)
        grad_v = torch.zeros_like(h_seq[0]) if grad_v is None else grad_v.reshape(-1)
        grad_x, grad_v0 = _kernels()[1](h_seq, grad_spikes, grad_v, params)
        return grad_x.view(ctx.shape), grad_v0.view(ctx.shape[1:]), None, None, None


def usable(x_seq: torch.Tensor) -> bool:
    """Whether the training step can run FusedLIF on tensors like ``x_seq``: the first call per device, dtype and
    step count builds the kernels and runs both directions on a small tensor; a failure (no C++ compiler, a
    device Inductor cannot target) is warned about once and MultiStepLIF is used from then on."""
    global _failure
    if _failure is not None or os.environ.get(ENV, "1") == "0" or torch.compiler.is_compiling():
        return False  # inside a torch.compile'd network the outer compile fuses the eager loop itself
    key = (x_seq.device.type, x_seq.dtype, x_seq.shape[0])
    if key not in _built:
        try:
            probe = torch.linspace(0.0, 2.0, x_seq.shape[0] * 8, dtype=x_seq.dtype, device=x_seq.device)
            probe = probe.reshape(x_seq.shape[0], 8).requires_grad_()
            spikes, _ = FusedLIF.apply(probe, torch.zeros_like(probe[0]), 2.0, 1.0, 4.0)
            spikes.sum().backward()
        except Exception as exc:  # noqa: BLE001 - any build failure means: train with the eager loop
            _failure = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            warnings.warn(
                f"spikeport: the compiled LIF kernels could not be built ({_failure}); training with the eager "
                f"LIF loop (same spikes, about 2x slower on a CPU). Set {ENV}=0 to skip the attempt.",
                RuntimeWarning,
                stacklevel=2,
            )
            return False
        _built[key] = True
    return _built[key]
