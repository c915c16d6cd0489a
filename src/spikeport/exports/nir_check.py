"""Parity of the NIR export: each part loaded with ``norse.torch.from_nir`` against the torch model.

Two references, because the export folds BatchNorm into the synapses (as the Loihi flow does):

- ``bn_folded``: a copy of the torch model whose Conv/Linear layers carry the folded weights of the
  export and whose BatchNorms are the identity. norse then runs the same float operations in the same
  order, so its spikes must be *identical* (this checks the lowering: layouts, edges, residual sums,
  and the LIF mapping, whose Euler step is bit-exact for power-of-two tau).
- ``float_model``: the model as trained. ``W' x + b'`` and ``BN(W x + b)`` round differently (about one
  float32 ulp), so a membrane that lands within that distance of the threshold can flip a spike; the
  report counts them.

The part inputs are what the reference model's own part saw (the attention stays on the host).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from spikeport.errors import ConversionError
from spikeport.exports.nir_graph import DEFAULT_DT, NIR_LOWERINGS, NirExport, NirPart
from spikeport.train.models import Block, Spikformer


def load_part_with_norse(part: NirPart | object, dt: float = DEFAULT_DT) -> nn.Module:
    """``norse.torch.from_nir`` of one part (a NirPart, or a nir.NIRGraph read back from the file)."""
    import norse.torch

    graph = part.graph if isinstance(part, NirPart) else part
    module: nn.Module = norse.torch.from_nir(graph, dt=dt)  # norse is untyped
    return module


def run_norse(module: nn.Module, x_seq: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Run a norse-loaded part over T steps: x_seq [T, B, ...] -> (outputs [T, B, ...], {lif: spikes})."""
    spikes: dict[str, list[torch.Tensor]] = {}
    hooks = [
        sub.register_forward_hook(lambda m, i, o, n=name: spikes.setdefault(n, []).append(o[0]))
        for name, sub in module.named_children()
        if type(sub).__name__ == "LIFBoxCell"
    ]
    state, outs = None, []
    try:
        with torch.no_grad():
            for x in x_seq:
                out, state = module(x, state)
                outs.append(out)
    finally:
        for h in hooks:
            h.remove()
    return torch.stack(outs), {k: torch.stack(v) for k, v in spikes.items()}


def bn_folded_copy(model: nn.Module, export: NirExport) -> nn.Module:
    """A copy of ``model`` computing with the export's BN-folded synapses (BatchNorms -> identity)."""
    folded = copy.deepcopy(model).eval()
    modules = dict(folded.named_modules())
    for node in export.ir.nodes.values():
        entry = NIR_LOWERINGS.find(node.op)
        if entry is None or not entry.folded_weights or node.name not in modules:
            continue
        layer = modules[node.name]
        weight = torch.from_numpy(node.params["weight"]).reshape(layer.weight.shape)
        layer.weight = nn.Parameter(weight, requires_grad=False)
        if "bias" in node.params:
            layer.bias = nn.Parameter(torch.from_numpy(node.params["bias"]), requires_grad=False)
    for _, mod in list(folded.named_modules()):
        for child_name, child in list(mod.named_children()):
            if isinstance(child, (nn.BatchNorm1d, nn.BatchNorm2d)):
                setattr(mod, child_name, nn.Identity())
    return folded


def _spikformer(model: nn.Module) -> Spikformer:
    if not isinstance(model, Spikformer):
        raise ConversionError(f"the NIR parity check needs a spikeport Spikformer, got {type(model).__name__}")
    return model


def _blocks(model: Spikformer) -> list[Block]:
    blocks = []
    for blk in model.block:
        assert isinstance(blk, Block)  # an nn.ModuleList yields plain Modules; Spikformer's are Blocks
        blocks.append(blk)
    return blocks


def torch_activations(model: nn.Module, images: torch.Tensor) -> dict[str, torch.Tensor]:
    """LIF spikes ([T, B, ...], torch layout), max-pool outputs, MLP inputs, block and SPS outputs and
    the logits of a spikeport Spikformer (either neuron backend)."""
    from spikeport.train.neurons import is_lif, reset_net

    net = _spikformer(model)
    acts: dict[str, torch.Tensor] = {}
    hooks = []
    T = net.cfg.T

    def keep(name: str, reshape: bool = False) -> Callable[[nn.Module, Any, torch.Tensor], None]:
        def hook(m: nn.Module, i: Any, o: torch.Tensor) -> None:
            acts[name] = (o.reshape(T, -1, *o.shape[1:]) if reshape else o).detach()

        return hook

    for name, mod in model.named_modules():
        if is_lif(mod):
            hooks.append(mod.register_forward_hook(keep(name)))
        elif isinstance(mod, nn.MaxPool2d):  # applied on [T*B, C, H, W]
            hooks.append(mod.register_forward_hook(keep(name, reshape=True)))
    for i, blk in enumerate(_blocks(net)):
        hooks.append(blk.register_forward_hook(keep(f"block.{i}")))
        if blk.mlp is not None:
            hooks.append(
                blk.mlp.register_forward_pre_hook(
                    lambda m, inp, n=f"block.{i}.mlp": acts.__setitem__(n, inp[0].detach())
                )
            )
    hooks.append(net.patch_embed.register_forward_hook(keep("patch_embed")))
    reset_net(model)
    try:
        with torch.no_grad():
            acts["logits"] = model(images)
    finally:
        for h in hooks:
            h.remove()
        reset_net(model)
    return acts


def part_input(model: nn.Module, part: NirPart, acts: dict[str, torch.Tensor], images: torch.Tensor) -> torch.Tensor:
    """[T, B, ...] input of a part, in the part's layout, as the reference model computed it."""
    net = _spikformer(model)
    if part.input_from == "input":  # direct coding: the image at every step
        return images.unsqueeze(0).repeat(net.cfg.T, *([1] * images.dim()))
    if part.input_layout == "CHW":
        return acts[part.input_from]
    if part.input_layout == "D":
        return acts[part.ir_nodes[0].rsplit(".", 1)[0]]  # block.0.mlp.fc1_linear -> block.0.mlp
    return acts[f"block.{len(net.block) - 1}"].flatten(2)  # head: tokens flattened to N*D


def compare(model: nn.Module, export: NirExport, images: torch.Tensor) -> dict[str, Any]:
    """Spike mismatches per LIF and per part output, norse vs ``model``; logits for the head."""
    dt = export.report["dt"]
    acts = torch_activations(model.eval(), images)
    parts = {}
    for name, part in export.parts.items():
        out, spikes = run_norse(load_part_with_norse(part, dt), part_input(model, part, acts, images))
        row: dict[str, Any] = {"lifs": {}}
        for key, ir_name in part.lif_nodes.items():
            ref, got = acts[ir_name], spikes[key]
            row["lifs"][ir_name] = {
                "mismatches": int((ref != got).sum()),
                "total": int(ref.numel()),
                "spikes": int(ref.sum()),
            }
        last = part.ir_nodes[-1]
        if last == "patch_embed.rpe_add":  # SPS tokens [T, B, N, D] -> maps [T, B, D, H, W]
            row["output_mismatches"] = int((acts["patch_embed"].transpose(-1, -2).reshape(out.shape) != out).sum())
        elif last.endswith(".mlp_add"):
            row["output_mismatches"] = int((acts[last.rsplit(".", 1)[0]] != out).sum())
        elif last == "head":
            logits = out.mean(0)  # the host's time average
            row["logits_max_abs_diff"] = float((logits - acts["logits"]).abs().max())
            row["argmax_agreement"] = float((logits.argmax(-1) == acts["logits"].argmax(-1)).float().mean())
        parts[name] = row
    mismatches = sum(
        r.get("output_mismatches", 0) + sum(v["mismatches"] for v in r["lifs"].values()) for r in parts.values()
    )
    total = sum(v["total"] for r in parts.values() for v in r["lifs"].values())
    return {
        "spikes_identical": mismatches == 0,
        "spike_mismatches": mismatches,
        "lif_outputs_compared": total,
        "parts": parts,
    }


def check_parts(model: nn.Module, export: NirExport, images: torch.Tensor) -> dict[str, Any]:
    """The parity section of the export report: norse against both references."""
    training = model.training
    try:
        return {
            "executors": ["norse.torch.from_nir", "torch-float"],
            "samples": int(len(images)),
            "bn_folded": compare(bn_folded_copy(model, export), export, images),
            "float_model": compare(model, export, images),
        }
    finally:
        model.train(training)
