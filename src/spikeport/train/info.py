"""``spikeport info``: parameters, per-layer MACs for one time step, neurons, tokens, T of a model.

Shapes come from one forward pass on PyTorch's ``meta`` device (no memory, no arithmetic), so even the
ImageNet presets are described instantly; MACs follow from the shapes with the dense counting rules of
``spikeport.counting`` (docs/counting.md), counted for one sample and one time step (the head runs
once per sample, after the mean over time steps):

  Conv / Linear / 1x1 Conv   conv_macs / dense_macs: output elements x (input channels / groups) x kernel size
  BatchNorm, LayerNorm        0 (BatchNorm folds into the weights at inference)
  attention core              core_macs, one row per attention: SSA / LRF-SSA Q (K^T V) and LRF-causal's
                              running sum 2 N D d_h; LRF-Dyn's dendritic recursion N D (4k - 1) (Gamma x Token
                              is spike-driven: synops at run time, no MACs); ViT softmax attention 2 N^2 D
  LIF, max-pool, residuals    0 MACs (LIF rows list their neuron count instead)

``module_macs`` is the rule for one Linear / Conv module, shared with the ablation's op counts
(``spikeport.analysis.opcount``); ``model_info``'s ``macs_per_inference`` is what the GPU estimate prices
(``spikeport.baselines.gpu``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from spikeport import counting as C
from spikeport.train.model_config import ModelConfig
from spikeport.train.models import SSA, Block, ViTAttention, build_model, count_params
from spikeport.train.neurons import is_lif

SCHEMA, SCHEMA_VERSION = "spikeport.info", 1


def _direct_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters(recurse=False))


def _unused_norms(model: nn.Module) -> set[str]:
    """Module names of the official blocks' LayerNorms that the forward pass never calls."""
    return {f"{name}.{n}" for name, m in model.named_modules() if isinstance(m, Block) for n in ("norm1", "norm2")}


def module_macs(module: nn.Module, out_shape: tuple[int, ...]) -> int:
    """Dense MACs of a Linear / Conv module that produced an output of ``out_shape`` (any leading axes:
    batch, time steps, tokens); 0 for other modules."""
    if isinstance(module, nn.Linear):
        return C.dense_macs(_numel(out_shape) // module.out_features, module.in_features, module.out_features)
    if isinstance(module, (nn.Conv1d, nn.Conv2d)):
        return C.conv_macs(
            module.in_channels,
            module.out_channels,
            module.kernel_size,
            _numel(out_shape) // module.out_channels,
            groups=module.groups,
        )
    return 0


def model_info(cfg: ModelConfig, preset: str | None = None, dataset: str | None = None) -> dict:
    """The info dict (JSON-ready): totals and one row per layer."""
    model, shapes = _traced(cfg)
    rows = _parameter_rows(model) + _layer_rows(model, shapes, cfg)
    used = [r for r in rows if not r.get("unused")]
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "preset": preset,
        "dataset": dataset,
        "arch": cfg.arch,
        "attention": cfg.attention if cfg.arch == "spikformer" else None,
        "params": count_params(model),
        "params_include_unused": count_params(model, include_unused=True),
        "params_note": (
            "params: what the forward pass uses (the Spikformer paper's count); "
            "params_include_unused: also the official blocks' unused norm1/norm2 LayerNorms, "
            "stored in checkpoints (seed 000 Table 1 counts them)"
        ),
        "macs": sum(r["macs"] for r in used),
        "macs_note": (
            "multiply-accumulates per sample for ONE time step (head: once per sample); see spikeport.train.info"
        ),
        "macs_per_inference": inference_macs(used, cfg.arch, cfg.T),
        "neurons": sum(r["neurons"] for r in used),
        "T": cfg.T,
        "tokens": cfg.num_tokens if cfg.arch == "spikformer" else cfg.num_tokens + 1,
        "grid": list(cfg.grid),
        "embed_dim": cfg.embed_dim,
        "depth": cfg.depth,
        "num_heads": cfg.num_heads,
        "model_config": cfg.to_dict(),
        "layers": rows,
    }


Shapes = dict[str, tuple[tuple[int, ...], tuple[int, ...]]]  # module name -> (input shape, output shape)


def _traced(cfg: ModelConfig) -> tuple[nn.Module, Shapes]:
    """The model built on the meta device and the shapes each described module saw in one forward pass."""
    # One sample, one time step, plain-torch neurons: the same structure, shapes per time step.
    shape_cfg = replace(cfg, T=1, neuron_backend="torch")
    with torch.device("meta"):
        model = build_model(shape_cfg)
    shapes: Shapes = {}

    def hook(name: str) -> Callable[[nn.Module, tuple[Any, ...], torch.Tensor], None]:
        def record(_m: nn.Module, inputs: tuple[Any, ...], out: torch.Tensor) -> None:
            shapes[name] = (tuple(inputs[0].shape) if inputs else (), tuple(out.shape))

        return record

    handles = [
        m.register_forward_hook(hook(name))
        for name, m in model.named_modules()
        if name and (_direct_params(m) or is_lif(m) or isinstance(m, (nn.MaxPool2d, SSA, ViTAttention)))
    ]
    with torch.no_grad():
        model(torch.empty(1, cfg.in_channels, cfg.img_size, cfg.img_size, device="meta"))
    for h in handles:
        h.remove()
    return model, shapes


def _parameter_rows(model: nn.Module) -> list[dict]:
    """The model's own parameters (ViT: cls_token, pos_embed), one row each."""
    return [
        {"name": pname, "op": "Parameter", "params": p.numel(), "macs": 0, "neurons": 0, "out_shape": list(p.shape[1:])}
        for pname, p in model.named_parameters(recurse=False)
    ]


def _layer_rows(model: nn.Module, shapes: Shapes, cfg: ModelConfig) -> list[dict]:
    """One row per module with parameters, per LIF and per max-pool, in module order; each attention core a row
    of its own, named as its IR node: the dendritic core is its Dendrites module's row, the other cores come right
    before the attention neuron (SSA) / the projection (ViT)."""
    unused = _unused_norms(model) if cfg.arch == "spikformer" else set()
    rows: list[dict] = []
    cores: dict[str, dict] = {}  # anchor module -> the core row that goes before it
    core_of: dict[str, dict] = {}  # Dendrites module -> the core fields its row takes
    for name, m in model.named_modules():
        if not name:
            continue
        out_shape = shapes.get(name, ((), ()))[1]
        if isinstance(m, (SSA, ViTAttention)):
            tokens = out_shape[-2] if out_shape else cfg.num_tokens
            core = {
                "op": C.attention_core(cfg).op,
                "macs": C.core_macs(cfg, tokens),
                "out_shape": [tokens, cfg.embed_dim],
            }
            if getattr(m, "dendrites", None) is not None:
                core_of[f"{name}.dendrites"] = core
            else:
                anchor = f"{name}.attn_lif" if isinstance(m, SSA) else f"{name}.proj"
                cores[anchor] = {"name": f"{name}.core", "params": 0, "neurons": 0, **core}
            continue
        row = _module_row(name, m, out_shape, cfg, name in unused)
        if row is None:
            continue
        row.update(core_of.pop(name, {}))
        if name in cores:
            rows.append(cores.pop(name))
        rows.append(row)
    return rows


def _module_row(name: str, m: nn.Module, out_shape: tuple[int, ...], cfg: ModelConfig, unused: bool) -> dict | None:
    """A module's row: parameters, MACs (Linear / Conv), neurons (LIF); None for a module that has none of these
    and is no max-pool."""
    params = _direct_params(m)
    row: dict[str, Any] = {
        "name": name,
        "op": type(m).__name__,
        "params": params,
        "macs": 0,
        "neurons": 0,
        "out_shape": _per_sample(out_shape),
    }
    if unused:
        row["unused"] = True
    if isinstance(m, (nn.Conv1d, nn.Conv2d)) and not out_shape:
        # official ImageNet layout: 1x1 convs applied token-wise with F.linear (models.apply_pointwise)
        out_shape = (cfg.num_tokens, m.out_channels)
        row["out_shape"] = list(out_shape)
    if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Linear)):
        row["macs"] = module_macs(m, out_shape) if out_shape else 0
    elif is_lif(m) and out_shape:
        row.update(op="LIF", neurons=_numel(out_shape), v_threshold=float(m.v_threshold))
    elif not params and not isinstance(m, nn.MaxPool2d):
        return None
    return row


def inference_macs(rows: list[dict], arch: str, T: int) -> int:
    """MACs of some of the info's layer rows for one inference: a Spikformer runs every layer T times and
    its head once (after the mean over time steps); a ViT runs everything once."""
    spiking = arch == "spikformer"
    once = sum(r["macs"] for r in rows if r["name"] == "head" or not spiking)
    return C.inference_macs(sum(r["macs"] for r in rows) - once, once, T if spiking else 1)


def _per_sample(shape: Sequence[int]) -> list[int]:
    """[T=1, B=1, ...] or [T*B=1, ...] -> the per-sample, per-time-step shape."""
    shape = list(shape)
    while len(shape) > 1 and shape[0] == 1:
        shape.pop(0)
    return shape


def _numel(shape: Iterable[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n
