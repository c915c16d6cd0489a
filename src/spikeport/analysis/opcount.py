"""Operation counts of a Spikformer / ViT for the ablation's Table 1, measured with forward hooks on real
images (per image; a Spikformer's counts are summed over its T time steps).

- ``module_macs``: dense multiply-accumulates of the Linear / Conv layers, what thop-style counters report
  and what seed 000's Table 1 calls FLOPs (its numbers match 1 MAC = 1 FLOP, Linear/Conv only, attention
  products left out: ViT-12-384 on CIFAR = 12 blocks x 12 N d^2 with N = 65 -> 1.38 G).
- ``attention_macs``: the attention products (ViT: Q K^T and A V, 2 N^2 d per block; Spikformer:
  K^T V and Q (K^T V), 2 N d d_h per block and time step); lrf_* local convs are Conv modules (above).
- ``sops`` (Spikformer only): synaptic operations driven by the actual inputs of each spike-driven layer:
  sum of the input values x fan-out (a spike of value 1 triggers fan-out accumulates; a SEW sum of 2
  counts twice), i.e. Spikformer's ``firing rate x T x FLOPs`` measured per layer; attention products as
  fr(k) x MACs(K^T V) + fr(q) x MACs(Q (K^T V)). Layers fed non-integer values stay in ``analog_macs``
  (MACs, not SOPs): the first conv (analog pixels, as in Spikformer's energy formula) and the head (fed
  the firing rates averaged over tokens and time).
"""
from __future__ import annotations

import torch
from torch import nn

from spikeport.train.models import SSA, ViTAttention, count_params


def _fan_out(m: nn.Module) -> int:
    if isinstance(m, nn.Linear):
        return m.out_features
    k = 1
    for s in m.kernel_size:
        k *= s
    return m.out_channels // m.groups * k


def _macs(m: nn.Module, out: torch.Tensor) -> int:
    if isinstance(m, nn.Linear):
        return out.numel() * m.in_features
    k = 1
    for s in m.kernel_size:
        k *= s
    return out.numel() * (m.in_channels // m.groups) * k


def count_ops(model: nn.Module, images: torch.Tensor, batch_size: int = 64) -> dict:
    """Per-image operation counts of ``model`` on ``images [S, C, H, W]`` (eval mode, no grad)."""
    from spikeport.train.neurons import reset_net

    spiking = getattr(model.cfg, "arch", "spikformer") != "vit"
    totals = {"module_macs": 0, "attention_macs": 0, "sops": 0.0, "analog_macs": 0}
    handles = []

    def layer_hook(module, args, out):
        x = args[0]
        macs = _macs(module, out)
        totals["module_macs"] += macs
        if spiking:
            graded = bool(torch.all(x == x.round())) and bool(torch.all(x >= 0))
            if graded:
                totals["sops"] += float(x.sum()) * _fan_out(module)
            else:
                totals["analog_macs"] += macs

    def attn_hook(module, args, out):
        if isinstance(module, ViTAttention):
            b, n, c = args[0].shape
            totals["attention_macs"] += 2 * b * n * n * c
            return
        rec = module.recorded
        t, b, n, c = rec["q"].shape
        dh = c // module.cfg.num_heads
        macs_each = t * b * n * c * dh              # K^T V, and again Q (K^T V), per head summed
        totals["attention_macs"] += 2 * macs_each
        totals["sops"] += float(rec["k"].mean()) * macs_each + float(rec["q"].mean()) * macs_each

    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)):
            handles.append(m.register_forward_hook(layer_hook))
        elif isinstance(m, (SSA, ViTAttention)):
            m.record = True
            handles.append(m.register_forward_hook(attn_hook))
    model.eval()
    try:
        for start in range(0, len(images), batch_size):
            with torch.no_grad():
                if spiking:
                    reset_net(model)
                model(images[start:start + batch_size])
    finally:
        for h in handles:
            h.remove()
        for m in model.modules():
            if isinstance(m, (SSA, ViTAttention)):
                m.record, m.recorded = False, {}
    n = len(images)
    out = {k: v / n for k, v in totals.items()}
    out["params"] = count_params(model)
    out["params_with_unused"] = count_params(model, include_unused=True)
    out["T"] = model.cfg.T if spiking else 1
    if not spiking:
        out["sops"] = None
        out["analog_macs"] = None
    return out
