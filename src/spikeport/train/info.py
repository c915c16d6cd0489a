"""``spikeport info``: parameters, per-layer MACs for one time step, neurons, tokens, T of a model.

Shapes come from one forward pass on PyTorch's ``meta`` device (no memory, no arithmetic), so even the
ImageNet presets are described instantly; MACs follow from the shapes with the rules below, counted for
one sample and one time step (the head runs once per sample, after the mean over time steps).

  Conv / Linear / 1x1 Conv   output elements x (input channels / groups) x kernel size
  BatchNorm, LayerNorm        0 (BatchNorm folds into the weights at inference)
  SSA, LRF-SSA                K^T V then Q (K^T V): 2 N D d_h
  LRF-causal                  running-sum form: S_n += k_n^T v_n, then q_n S_n: 2 N D d_h
  LRF-Dyn                     coincidence k*v and gate q*g: 2 N D; dendritic recursion
                              (tridiagonal A X: 3k-2, Gamma u: k, C^T X: k): N D (5k - 2)
  ViT attention               Q K^T and softmax(.) V: 2 N^2 D
  LIF, max-pool, residuals    0 MACs (LIF rows list their neuron count instead)
"""
from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from spikeport.train.models import SSA, Block, ModelConfig, ViTAttention, build_model, count_params
from spikeport.train.neurons import is_lif

SCHEMA, SCHEMA_VERSION = "spikeport.info", 1


def _direct_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters(recurse=False))


def _unused_norms(model: nn.Module) -> set[str]:
    """Module names of the official blocks' LayerNorms that the forward pass never calls."""
    return {f"{name}.{n}" for name, m in model.named_modules() if isinstance(m, Block) for n in ("norm1", "norm2")}


def attention_macs(cfg: ModelConfig, tokens: int) -> list[tuple[str, str, int]]:
    """(suffix, op, MACs) rows of one attention's token mixing, beyond its projections."""
    n, d = tokens, cfg.embed_dim
    dh = d // cfg.num_heads
    if cfg.arch == "vit":
        return [("core", "softmax_attention", 2 * n * n * d)]
    spec = cfg.attention_spec
    if spec.core == "ssa":
        return [("core", "ssa_kTv_q", 2 * n * d * dh)]
    if spec.core == "causal":
        return [("core", "causal_running_sum", 2 * n * d * dh)]
    k = spec.dendrites
    return [("core", "coincidence_and_gate", 2 * n * d), ("dendrites", "dendritic_recursion", n * d * (5 * k - 2))]


def model_info(cfg: ModelConfig, preset: str | None = None, dataset: str | None = None) -> dict:
    """The info dict (JSON-ready): totals and one row per layer."""
    # One sample, one time step, plain-torch neurons: the same structure, shapes per time step.
    shape_cfg = replace(cfg, T=1, neuron_backend="torch")
    with torch.device("meta"):
        model = build_model(shape_cfg)
    unused = _unused_norms(model) if cfg.arch == "spikformer" else set()
    shapes: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def hook(name):
        def record(_m, inputs, out):
            shapes[name] = (tuple(inputs[0].shape) if inputs else (), tuple(out.shape))
        return record

    handles = [m.register_forward_hook(hook(name)) for name, m in model.named_modules()
               if name and (_direct_params(m) or is_lif(m) or isinstance(m, (nn.MaxPool2d, SSA, ViTAttention)))]
    with torch.no_grad():
        model(torch.empty(1, cfg.in_channels, cfg.img_size, cfg.img_size, device="meta"))
    for h in handles:
        h.remove()

    rows, cores = [], {}
    for pname, p in model.named_parameters(recurse=False):       # ViT: cls_token, pos_embed
        rows.append({"name": pname, "op": "Parameter", "params": p.numel(), "macs": 0, "neurons": 0,
                     "out_shape": list(p.shape[1:])})
    for name, m in model.named_modules():
        if not name:
            continue
        params = _direct_params(m)
        out_shape = shapes.get(name, ((), ()))[1]
        row = {"name": name, "op": type(m).__name__, "params": params, "macs": 0, "neurons": 0,
               "out_shape": _per_sample(out_shape)}
        if name in unused:
            row["unused"] = True
        if isinstance(m, (nn.Conv1d, nn.Conv2d)):
            kernel = _numel(m.kernel_size)
            if out_shape:
                row["macs"] = _numel(out_shape) * (m.in_channels // m.groups) * kernel
            else:   # official ImageNet layout: 1x1 convs applied token-wise with F.linear (models.apply_pointwise)
                row["macs"] = cfg.num_tokens * m.in_channels * m.out_channels // m.groups * kernel
                row["out_shape"] = [cfg.num_tokens, m.out_channels]
        elif isinstance(m, nn.Linear) and out_shape:
            row["macs"] = _numel(out_shape) // m.out_features * m.in_features * m.out_features
        elif is_lif(m) and out_shape:
            row.update(op="LIF", neurons=_numel(out_shape), v_threshold=float(m.v_threshold))
        elif isinstance(m, (SSA, ViTAttention)):
            tokens = out_shape[-2] if out_shape else cfg.num_tokens
            # the token-mixing row goes right before the attention neuron (SSA) / the projection (ViT)
            anchor = f"{name}.attn_lif" if isinstance(m, SSA) else f"{name}.proj"
            cores[anchor] = [{"name": f"{name}.{suffix}", "op": op, "params": 0, "macs": macs, "neurons": 0,
                              "out_shape": [tokens, cfg.embed_dim]}
                             for suffix, op, macs in attention_macs(cfg, tokens) if suffix != "dendrites"]
            continue
        elif type(m).__name__ == "Dendrites":   # called through forward_parallel: no hook, shapes from cfg
            row.update(op="dendritic_recursion", macs=attention_macs(cfg, cfg.num_tokens)[-1][2],
                       out_shape=[cfg.num_tokens, cfg.embed_dim])
        elif not params and not isinstance(m, nn.MaxPool2d):
            continue
        rows.extend(cores.pop(name, []))
        rows.append(row)

    used = [r for r in rows if not r.get("unused")]
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
        "preset": preset, "dataset": dataset, "arch": cfg.arch, "attention": cfg.attention if cfg.arch == "spikformer" else None,
        "params": count_params(model),
        "params_include_unused": count_params(model, include_unused=True),
        "params_note": ("params: what the forward pass uses (the Spikformer paper's count); "
                        "params_include_unused: also the official blocks' unused norm1/norm2 LayerNorms, "
                        "stored in checkpoints (seed 000 Table 1 counts them)"),
        "macs": sum(r["macs"] for r in used),
        "macs_note": "multiply-accumulates per sample for ONE time step (head: once per sample); see spikeport.train.info",
        "neurons": sum(r["neurons"] for r in used),
        "T": cfg.T, "tokens": cfg.num_tokens if cfg.arch == "spikformer" else cfg.num_tokens + 1,
        "grid": list(cfg.grid), "embed_dim": cfg.embed_dim, "depth": cfg.depth, "num_heads": cfg.num_heads,
        "model_config": cfg.to_dict(),
        "layers": rows,
    }


def _per_sample(shape) -> list[int]:
    """[T=1, B=1, ...] or [T*B=1, ...] -> the per-sample, per-time-step shape."""
    shape = list(shape)
    while len(shape) > 1 and shape[0] == 1:
        shape.pop(0)
    return shape


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n
