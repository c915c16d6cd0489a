"""The multi-step LIF of TorchLIF on a CPU as compiled loops (numba): a training step's, and inference's.

``neurons.MultiStepLIF`` runs the LIF as eager ops: ~7 whole-layer tensor ops a time step forward and ~12
backward, each a read and a write of the layer's state. On a CPU that was half of a digits-tiny training step.
Here the forward is one pass over memory and the backward two (torch's vectorised sigmoid, then one loop): the
digits-tiny training step takes 0.60x the time of the same step with SpikingJelly's neurons (0.29 vs 0.48 s at batch
32 on one thread, ``benchmarks/bench_train.py``).
The equations and their order are MultiStepLIF's, in the tensor's dtype, so the spikes are the same; the
gradients equal to rounding (tests/test_train_fast_path.py). Inference (no gradient wanted: a conversion's float
run, calibration, evaluation) runs the forward loop alone (``infer``), equal to TorchLIF.step_by_step.

numba, not torch.compile: Inductor's first build on a machine compiles a dozen C++ files (~25 s of CPU per
process with a cold cache), numba's a second or two, cached on disk (lif_loops.py). The loops run on one thread.
Where numba is missing or cannot build (one warning says why), or with ``SPIKEPORT_FUSED_LIF=0``, training runs
MultiStepLIF and inference the plain loop; CUDA tensors always do (their training step is torch.compile'd
whole: loop.training_net).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

ENV = "SPIKEPORT_FUSED_LIF"  # "0": train with the eager MultiStepLIF

_SCALAR = {torch.float32: np.float32, torch.float64: np.float64}  # the parameters in the tensor's dtype, as torch
_built: set[torch.dtype] = set()  # the dtypes whose kernels built and ran
_failure: str | None = None  # why the kernels could not be built: no more attempts in this process
_plain = threading.local()  # depth: inside plain_loops() blocks of this thread


@functools.cache
def _kernels() -> tuple[Any, Any, Any]:
    """(forward, backward, infer): lif_loops' numba functions, imported (and built or read from numba's cache) on
    first use."""
    from spikeport.train import lif_loops

    return lif_loops.lif_forward, lif_loops.lif_backward, lif_loops.lif_infer


class FusedLIF(torch.autograd.Function):
    """MultiStepLIF's autograd node (same arguments, same outputs) on the compiled loops; CPU tensors."""

    @staticmethod
    def forward(
        ctx: Any, x_seq: torch.Tensor, v: torch.Tensor, tau: float, v_threshold: float, alpha: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        shape, steps = x_seq.shape, x_seq.shape[0]
        scalar = _SCALAR[x_seq.dtype]
        flat_x = x_seq.detach().reshape(steps, -1).contiguous()
        v_out = v.detach().reshape(-1).clone()  # a clone is contiguous; the loop updates it in place
        spikes, z_seq = torch.empty_like(flat_x), torch.empty_like(flat_x)
        params = (scalar(tau), scalar(v_threshold), scalar(alpha))
        _kernels()[0](flat_x.numpy(), v_out.numpy(), *params, spikes.numpy(), z_seq.numpy())
        ctx.save_for_backward(z_seq)
        ctx.set_materialize_grads(False)
        ctx.shape, ctx.params = shape, params
        return spikes.view(shape), v_out.view(shape[1:])

    @staticmethod
    def backward(
        ctx: Any, grad_spikes: torch.Tensor | None, grad_v: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, None, None, None]:
        (z_seq,) = ctx.saved_tensors
        tau, _, alpha = ctx.params
        sig = torch.sigmoid(z_seq)  # MultiStepLIF's sigmoid(alpha (H - v_th)), vectorised by torch
        grad_spikes = torch.zeros_like(z_seq) if grad_spikes is None else grad_spikes.reshape(z_seq.shape)
        grad_next = torch.zeros_like(z_seq[0]) if grad_v is None else grad_v.reshape(-1).clone()
        grad_x = torch.empty_like(z_seq)
        _kernels()[1](
            z_seq.numpy(),
            sig.numpy(),
            grad_spikes.contiguous().numpy(),
            grad_next.numpy(),  # a clone or zeros: contiguous, updated in place
            tau,
            alpha,
            grad_x.numpy(),
        )
        return grad_x.view(ctx.shape), grad_next.view(ctx.shape[1:]), None, None, None


def infer(x_seq: torch.Tensor, v: torch.Tensor, tau: float, v_threshold: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(spikes, final membrane) without autograd, equal to ``TorchLIF.step_by_step``'s (inference: a conversion's
    float run, calibration, evaluation); where ``usable(x_seq)``."""
    shape, steps = x_seq.shape, x_seq.shape[0]
    scalar = _SCALAR[x_seq.dtype]
    flat_x = x_seq.detach().reshape(steps, -1).contiguous()
    v_out = v.detach().expand(shape[1:]).reshape(-1).clone()
    spikes = torch.empty_like(flat_x)
    _kernels()[2](flat_x.numpy(), v_out.numpy(), scalar(tau), scalar(v_threshold), spikes.numpy())
    return spikes.view(shape), v_out.view(shape[1:])


@contextlib.contextmanager
def plain_loops() -> Iterator[None]:
    """TorchLIF as plain torch ops within the block, in this thread (a memory measurement of the eager op
    sequence)."""
    _plain.depth = getattr(_plain, "depth", 0) + 1
    try:
        yield
    finally:
        _plain.depth -= 1


def usable(x_seq: torch.Tensor) -> bool:
    """Whether the compiled loops (FusedLIF, ``infer``) can run on ``x_seq``: a CPU tensor of float32 or float64, the
    kernels built (the first call builds them and runs each on a small tensor; a failure is warned about once and
    the eager loops are used from then on)."""
    global _failure
    in_plain_block: int = getattr(_plain, "depth", 0)
    if _failure is not None or os.environ.get(ENV, "1") == "0" or in_plain_block > 0:
        return False
    if x_seq.device.type != "cpu" or x_seq.dtype not in _SCALAR:
        return False
    if x_seq.dtype in _built:
        return True
    try:
        _kernels()
        with torch.enable_grad():  # the first LIF to run may be an inference's, under no_grad
            probe = torch.linspace(0.0, 2.0, 8, dtype=x_seq.dtype).reshape(2, 4).requires_grad_()
            FusedLIF.apply(probe, torch.zeros_like(probe[0]), 2.0, 1.0, 4.0)[0].sum().backward()
        infer(probe, torch.zeros_like(probe[0]), 2.0, 1.0)
    except Exception as exc:  # noqa: BLE001 - any build failure means: the eager loops
        _failure = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        warnings.warn(
            f"spikeport: the compiled LIF loops could not be built ({_failure}); the LIF runs as eager torch ops "
            f"(same spikes; a training step about 1.7x slower on a CPU). Set {ENV}=0 to skip the attempt.",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    _built.add(x_seq.dtype)
    return True
