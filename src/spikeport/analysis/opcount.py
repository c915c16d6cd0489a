"""Operation counts of a Spikformer / ViT for the ablation's Table 1, per image (a Spikformer's counts are
summed over its T time steps). Every formula is spikeport.counting's (docs/counting.md).

- ``module_macs``: dense multiply-accumulates of the Linear / Conv layers, what thop-style counters report
  and what seed 000's Table 1 calls FLOPs (its numbers match 1 MAC = 1 FLOP, Linear/Conv only, attention
  products left out: ViT-12-384 on CIFAR = 12 blocks x 12 N d^2 with N = 65 -> 1.38 G).
- ``attention_macs``: the attention cores' dense MACs (ViT: Q K^T and A V, 2 N^2 d per block; SSA and the
  causal running sum: 2 N d d_h per block and time step; the dendritic recursion: N d (4k - 1)); lrf_*
  local convs are Conv modules (above).
  Both come from ``spikeport info``'s table (``train.info.model_info``: shapes, no images), so info, this
  table and the GPU estimate agree.
- ``sops`` (Spikformer only): synaptic operations driven by the actual inputs of each spike-driven layer,
  measured with forward hooks on real images: the value-weighted accumulates of counting's event rules
  (``dense_events`` / ``conv_events``: an input of value v drives v x its synapses, exact at the image
  borders; a SEW sum of 2 counts twice), i.e. Spikformer's ``firing rate x T x FLOPs`` per layer; the
  attention cores' spike-driven accumulates (Q (K^T V): coincident k, v spike pairs, then d_h per q spike;
  dendritic: k per k*v coincidence). Layers fed non-integer values stay in ``analog_macs`` (MACs, not
  SOPs): the first conv (analog pixels, as in Spikformer's energy formula), the head (fed the firing
  rates averaged over tokens and time) and the dendritic recursion's dynamics (A X, C^T X, q g).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from spikeport import counting as C
from spikeport.errors import ConfigError
from spikeport.train.info import inference_macs, model_info, module_macs
from spikeport.train.model_config import ModelConfig
from spikeport.train.models import SSA, Spikformer, ViT, count_params

LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d)


def _valued_synops(module: nn.Linear | nn.Conv1d | nn.Conv2d, x: torch.Tensor) -> int:
    """Value-weighted accumulates of a Linear / Conv fed small non-negative integers (spikes, SEW sums)."""
    x = x.detach().to("cpu", torch.float64)
    if isinstance(module, nn.Linear):
        return C.dense_events(x.numpy(), module.out_features)[1]
    assert not isinstance(module.padding, str)  # spikeport's convs give numbers, not "same" / "valid"
    x = x.movedim(1, -1)  # channels-last; a 1-D conv is an L x 1 image
    extra: tuple[int, ...] = () if x.dim() == 4 else (1,)
    if extra:
        x = x.unsqueeze(2)
    return C.conv_events(
        x.numpy(),
        module.kernel_size + extra,
        module.stride + extra,
        module.padding + (0,) * len(extra),
        module.dilation + extra,
        module.out_channels,
        module.groups,
    )[1]


def _config(model: nn.Module) -> ModelConfig:
    if not isinstance(model, (Spikformer, ViT)):
        raise ConfigError(f"operation counts need a spikeport Spikformer or ViT, got {type(model).__name__}")
    return model.cfg


def static_macs(model: nn.Module) -> dict[str, int]:
    """``module_macs`` and ``attention_macs`` per image, from ``spikeport info``'s rows for the model."""
    info = model_info(_config(model))
    modules = dict(model.named_modules())
    core_ops = {core.op for core in C.CORES.values()}
    rows = [r for r in info["layers"] if not r.get("unused")]
    layers = [r for r in rows if isinstance(modules.get(r["name"]), LAYERS)]
    cores = [r for r in rows if r["op"] in core_ops]
    return {
        "module_macs": inference_macs(layers, info["arch"], info["T"]),
        "attention_macs": inference_macs(cores, info["arch"], info["T"]),
    }


def count_ops(model: nn.Module, images: torch.Tensor, batch_size: int = 64) -> dict[str, Any]:
    """Per-image operation counts of ``model`` on ``images [S, C, H, W]`` (eval mode, no grad)."""
    from spikeport.train.neurons import reset_net

    cfg = _config(model)
    spiking = cfg.arch != "vit"
    totals = {"sops": 0, "analog_macs": 0}
    handles = []

    def layer_hook(
        module: nn.Linear | nn.Conv1d | nn.Conv2d, args: tuple[torch.Tensor, ...], out: torch.Tensor
    ) -> None:
        x = args[0]
        if bool(torch.all(x == x.round())) and bool(torch.all(x >= 0)):
            totals["sops"] += _valued_synops(module, x)
        else:
            totals["analog_macs"] += module_macs(module, tuple(out.shape))

    def attn_hook(module: SSA, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        rec = module.recorded
        t, b, n, c = rec["q"].shape
        q, k, v = (rec[p].to("cpu", torch.float64).reshape(t * b, n, c).numpy() for p in ("q", "k", "v"))
        core = C.attention_core(cfg)
        assert core.synops is not None  # only the ViT's softmax core has none, and a ViT gets no hooks
        totals["sops"] += core.synops(q, k, v, cfg.num_heads, cfg.num_dendrites)
        totals["analog_macs"] += t * b * core.dynamics_macs(n, c, cfg.num_heads, cfg.num_dendrites)

    if spiking:
        for m in model.modules():
            if isinstance(m, LAYERS):
                handles.append(m.register_forward_hook(layer_hook))
            elif isinstance(m, SSA):
                m.record = True
                handles.append(m.register_forward_hook(attn_hook))
        model.eval()
        try:
            for start in range(0, len(images), batch_size):
                with torch.no_grad():
                    reset_net(model)
                    model(images[start : start + batch_size])
        finally:
            for h in handles:
                h.remove()
            for m in model.modules():
                if isinstance(m, SSA):
                    m.record, m.recorded = False, {}
    n = len(images)
    out: dict[str, Any] = {**static_macs(model), **{k: v / n for k, v in totals.items()}}
    out["params"] = count_params(model)
    out["params_with_unused"] = count_params(model, include_unused=True)
    out["T"] = cfg.T if spiking else 1
    if not spiking:
        out["sops"] = None
        out["analog_macs"] = None
    return out
