"""BatchNorm (training mode) followed by the multi-step LIF, as one compiled node of a CPU training step.

In a Spikformer block every projection is ``LIF(BN(W x))``. Run as torch's BatchNorm and then the LIF, a layer's
activation is read and written about seventeen times a step (BN's statistics, its output, the LIF's state, the
sigmoid of the surrogate, BN's backward reductions and output); all of it is memory traffic, and on a CPU it was
about 40 % of a digits-tiny training step. Here the forward reads the input twice (the statistics, then the
normalisation and the LIF in one loop) and the backward twice (the LIF's BPTT with BN's reductions, then BN's
input gradient): 0.60-0.76x the time of ``F.batch_norm`` + ``lif_kernels.FusedLIF`` per layer at digits-tiny's
shapes (``benchmarks/bench_train_layers.py``; ``benchmarks/bench_train.py`` times the whole step).

The function is torch's: BatchNorm normalises with the batch's biased variance and updates the running statistics
with the unbiased one (momentum), the LIF is ``neurons.MultiStepLIF``'s. The statistics are summed in float64 in
another order than torch's, so values agree to rounding, not bit for bit (tests/test_train_fast_path.py). Only
BatchNorm1d or BatchNorm2d groups on channel-last data (the blocks' projections; the stem, whose activations stay in
channels-last memory: ``models.SPS``) in training mode with TorchLIFs at rest, on a CPU where ``lif_kernels.usable``;
everything else (inference, hooks that watch a module, the SpikingJelly backend, tracing) runs the modules one after
the other, as before. ``linear_bn_lif`` leaves out the GEMM's bias, which BatchNorm cancels.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from spikeport.train import lif_kernels
from spikeport.train.neurons import TorchLIF, groupable, keep_final_states, lif_group


def apply_bn(bn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """BatchNorm over the channel axis of ``[..., C]`` (statistics over all other axes, as the official
    code's BN over ``[T*B, C, N]``)."""
    shape = x.shape
    flat = x.reshape(-1, shape[-1])
    if isinstance(bn, nn.BatchNorm2d):
        return bn(flat[:, :, None, None]).reshape(shape)
    return bn(flat).reshape(shape)


def batch_norms_groupable(bns: list[Any]) -> bool:
    """Whether ``fused_batch_norm`` runs these modules as one over channel-last data: BatchNorm1d or BatchNorm2d
    each (not folded away; per channel both normalise over every other axis), with the same eps, momentum and mode,
    affine, tracking running statistics, no hook watching one."""
    if not all(type(bn) in (nn.BatchNorm1d, nn.BatchNorm2d) for bn in bns):
        return False
    first = bns[0]
    key = (first.eps, first.momentum, first.affine, first.track_running_stats, first.training)
    return (
        all((bn.eps, bn.momentum, bn.affine, bn.track_running_stats, bn.training) == key for bn in bns)
        and first.momentum is not None
        and first.affine
        and first.track_running_stats
        and not any(bn._forward_hooks or bn._forward_pre_hooks for bn in bns)
    )


def fused_batch_norm(bns: list[Any], y: torch.Tensor) -> torch.Tensor:
    """BatchNorm of each of ``batch_norms_groupable`` modules over its block of ``y``'s channels [..., sum C], as
    one call: the same statistics per channel as separate calls, the running statistics written back into each."""
    first = bns[0]
    mean = torch.cat([bn.running_mean for bn in bns])
    var = torch.cat([bn.running_var for bn in bns])
    weight, bias = torch.cat([bn.weight for bn in bns]), torch.cat([bn.bias for bn in bns])
    out = F.batch_norm(y.reshape(-1, y.shape[-1]), mean, var, weight, bias, first.training, first.momentum, first.eps)
    if first.training:  # F.batch_norm updated the concatenated copies in place
        _store_running(bns, mean, var)
    return out.reshape(y.shape)


def _store_running(bns: list[Any], mean: torch.Tensor, var: torch.Tensor) -> None:
    """Write grouped running statistics [sum C] back into each module (its block) and count the step."""
    sizes = [bn.num_features for bn in bns]
    with torch.no_grad():
        for bn, m, v in zip(bns, mean.split(sizes), var.split(sizes), strict=True):
            bn.running_mean.copy_(m)
            bn.running_var.copy_(v)
            bn.num_batches_tracked.add_(1)


@functools.cache
def _kernels() -> tuple[Any, Any]:
    """(forward, backward): lif_loops' numba functions, imported on first use."""
    from spikeport.train import lif_loops

    return lif_loops.bn_lif_forward, lif_loops.bn_lif_backward


class BatchNormLIF(torch.autograd.Function):
    """(spikes, final membrane, batch mean, biased batch variance) of LIF(BatchNorm(y)) for y [T, M, C]; the
    membrane starts at rest. The caller updates the running statistics (``batch_norm_lif``). ``linear_bias``: the
    bias a GEMM before y left out (``linear_bn_lif``), only given its gradient, zero."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        y: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor,
        eps: float,
        tau: float,
        v_threshold: float,
        alpha: float,
        linear_bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        scalar = lif_kernels._SCALAR[y.dtype]
        flat = y.detach().contiguous()
        spikes, z = torch.empty_like(flat), torch.empty_like(flat)
        mean = torch.empty(flat.shape[-1], dtype=torch.float64)
        var = torch.empty_like(mean)
        v = torch.zeros_like(flat[0])
        params = (scalar(tau), scalar(v_threshold), scalar(alpha))
        gamma, beta = weight.detach().contiguous(), bias.detach().contiguous()
        _kernels()[0](flat.numpy(), gamma.numpy(), beta.numpy(), float(eps), *params, spikes.numpy(), z.numpy(),
                      mean.numpy(), var.numpy(), v.numpy())  # fmt: skip
        ctx.save_for_backward(z, flat, mean, torch.rsqrt(var + eps), gamma)
        ctx.set_materialize_grads(False)
        ctx.params = params
        # the bias of a GEMM before y (linear_bn_lif): BatchNorm cancels it, so its gradient is zero
        ctx.linear_bias = None if linear_bias is None else torch.zeros_like(linear_bias)
        ctx.mark_non_differentiable(mean, var)
        return spikes, v, mean, var

    @staticmethod
    def backward(ctx: Any, grad_spikes: torch.Tensor | None, grad_v: torch.Tensor | None, *_: Any) -> tuple[Any, ...]:
        z, y, mean, invstd, gamma = ctx.saved_tensors
        tau, _, alpha = ctx.params
        sig = torch.sigmoid(z)  # as lif_kernels.FusedLIF: torch's vectorised sigmoid
        grad_spikes = torch.zeros_like(z) if grad_spikes is None else grad_spikes.contiguous()
        grad_next = torch.zeros_like(z[0]) if grad_v is None else grad_v.clone(memory_format=torch.contiguous_format)
        grad_y = torch.empty_like(z)
        grad_gamma, grad_beta = torch.empty_like(gamma), torch.empty_like(gamma)
        _kernels()[1](z.numpy(), sig.numpy(), grad_spikes.numpy(), grad_next.numpy(), y.numpy(), mean.numpy(),
                      invstd.numpy(), gamma.numpy(), tau, alpha, grad_y.numpy(), grad_gamma.numpy(),
                      grad_beta.numpy())  # fmt: skip
        return grad_y, grad_gamma, grad_beta, None, None, None, None, ctx.linear_bias


def fusable(bns: list[Any], lifs: list[Any], y: torch.Tensor, wants_grad: bool | None = None) -> bool:
    """Whether ``batch_norm_lif`` runs these modules as one compiled node on ``y`` (channel-last): BatchNorm modules
    in training mode that ``batch_norms_groupable`` would group, TorchLIFs that ``groupable`` would (at rest, no
    hook, not traced), a gradient wanted (``y.requires_grad`` unless said), and the compiled LIF loops usable for
    ``y``. A batch of one value per channel runs the modules, whose BatchNorm refuses it."""
    return (
        torch.is_grad_enabled()
        and (y.requires_grad if wants_grad is None else wants_grad)
        and y.numel() > y.shape[-1]
        and all(type(m) is TorchLIF for m in lifs)
        and all(bn.training for bn in bns)
        and batch_norms_groupable(bns)
        and groupable(lifs)
        and lif_kernels.usable(y)
    )


def batch_norm_lif(bns: list[Any], lifs: list[Any], y: torch.Tensor) -> torch.Tensor:
    """The spikes of ``lifs`` over ``bns`` over ``y`` [T, ..., n C] (module i reads block i of the last axis), each
    module left as if it had run alone: running statistics and step counts updated, final membranes kept. One
    compiled node where ``fusable``, else the modules one after the other (``fused_batch_norm``, then
    ``lif_group`` or the one LIF)."""
    if not fusable(bns, lifs, y):
        if len(bns) == 1:
            return lifs[0](apply_bn(bns[0], y))  # type: ignore[no-any-return]
        return lif_group(lifs, fused_batch_norm(bns, y))
    return _node(bns, lifs, y)


def linear_bn_lif(
    bns: list[Any], lifs: list[Any], x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
) -> torch.Tensor:
    """``batch_norm_lif(bns, lifs, F.linear(x, weight, bias))``. Where that runs the compiled node, the GEMM runs
    without its bias (torch's addmm first copies the bias into every row of its output: ~4 % of a digits-tiny
    training step). BatchNorm in training mode subtracts each channel's batch mean, so a per-channel constant before
    it changes neither its output nor any gradient but its own, which is exactly zero (the node returns zeros: the
    optimizer still decays it); the constant moves only the running mean, which is updated with it."""
    wants_grad = x.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad)
    # fusable reads x for the GEMM's output: the same device (a CPU: fusable's), dtype and rows, but under autocast
    if bias is None or not fusable(bns, lifs, x, wants_grad) or torch.is_autocast_enabled("cpu"):
        return batch_norm_lif(bns, lifs, F.linear(x, weight, bias))
    return _node(bns, lifs, F.linear(x, weight), bias)


def _node(bns: list[Any], lifs: list[Any], y: torch.Tensor, linear_bias: torch.Tensor | None = None) -> torch.Tensor:
    """The compiled node on y (plus ``linear_bias`` per channel, which only the running mean sees), the modules'
    running statistics and final membranes updated as ``batch_norm_lif`` says."""
    first = bns[0]
    weight, bias = torch.cat([bn.weight for bn in bns]), torch.cat([bn.bias for bn in bns])
    flat = y.reshape(y.shape[0], -1, y.shape[-1])
    spikes, v, mean, var = BatchNormLIF.apply(flat, weight, bias, first.eps, lifs[0].tau, lifs[0].v_threshold,
                                              lifs[0].alpha, linear_bias)  # fmt: skip
    n = flat.shape[0] * flat.shape[1]
    with torch.no_grad():  # F.batch_norm's update: the unbiased variance into the running one
        running_mean = torch.cat([bn.running_mean for bn in bns])
        running_var = torch.cat([bn.running_var for bn in bns])
        unbiased = var * (n / max(n - 1, 1))
        if linear_bias is not None:
            mean = mean + linear_bias.detach().to(mean.dtype)
        running_mean.mul_(1 - first.momentum).add_(mean.to(running_mean.dtype), alpha=first.momentum)
        running_var.mul_(1 - first.momentum).add_(unbiased.to(running_var.dtype), alpha=first.momentum)
    _store_running(bns, running_mean, running_var)
    keep_final_states(lifs, v.reshape(y.shape[1:]))
    return spikes.reshape(y.shape)
