"""Frontend: torch modules -> float IR nodes, one registered handler per module type (hls4ml style).

``trace(model)`` walks the model from the top; each handler emits nodes for its module and returns the
name of the node that carries the module's output. Parameters stay in torch layout and float32 here;
BatchNorm statistics ride on the synapse node as ``bn_*`` params until the ``fold_bn`` pass.
A module without a handler raises UnsupportedModuleError naming its path, type and the nearest
supported alternative: never a silently wrong network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import torch
from torch import nn

from spikeport.errors import UnsupportedModuleError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import value_kind
from spikeport.ir.ops import infer_shapes, validate
from spikeport.train import models as M
from spikeport.train.attention import Dendrites, LocalReceptiveField
from spikeport.train.neurons import TorchLIF, is_lif
from spikeport.value_kinds import ANALOG

if TYPE_CHECKING:
    from spikingjelly.activation_based.neuron import LIFNode  # untyped: Any to mypy

HANDLERS: dict[type, Handler] = {}

# A handler returns the name of the node carrying its module's output; the LRF's handler returns one name per
# branch (the attention neuron sums them), so ``ssa_handler`` calls it directly.
HandlerFn = TypeVar("HandlerFn", bound=Callable[..., str | list[str]])

# Nearest supported alternative for modules spikeport cannot convert (shown in the error).
ALTERNATIVES = {
    "LayerNorm": "BatchNorm1d/2d after a Linear/Conv (folded into its weights)",
    "GELU": "a LIF neuron (spikingjelly LIFNode) after BatchNorm",
    "ReLU": "a LIF neuron (spikingjelly LIFNode) after BatchNorm",
    "ViT": "Spikformer (spikeport.train.models.Spikformer) with the same size",
    "ViTBlock": "spikeport.train.models.Block (SSA + MLP on spikes)",
    "AvgPool2d": "MaxPool2d on spikes",
    "Dropout": "remove it (it is the identity at inference)",
}


@dataclass
class Handler:
    types: tuple[type, ...]
    fn: Callable[..., str | list[str]]
    description: str


def handler(*types: type, description: str = "") -> Callable[[HandlerFn], HandlerFn]:
    def register(fn: HandlerFn) -> HandlerFn:
        h = Handler(types, fn, description or (fn.__doc__ or "").strip().splitlines()[0])
        for t in types:
            HANDLERS[t] = h
        return fn

    return register


def supported_modules() -> list[tuple[str, str]]:
    """(type name, what it becomes) for every registered handler, for `convert --list-supported`."""
    rows = {}
    for t, h in HANDLERS.items():
        rows[f"{t.__module__}.{t.__qualname__}"] = h.description
    rows["spikingjelly.activation_based.neuron.LIFNode"] = "lif node (Loihi LIF; tau, v_threshold, hard reset)"
    return sorted(rows.items())


@dataclass
class TraceContext:
    graph: Graph
    prefix: list[str] = field(default_factory=list)

    def emit(self, node: Node) -> str:
        self.graph.add(node)
        return node.name


def _np(t: torch.Tensor) -> np.ndarray:
    array: np.ndarray = t.detach().cpu().to(torch.float32).numpy().copy()
    return array


def convert_module(ctx: TraceContext, module: nn.Module, path: str, *inputs: str) -> str:
    """Dispatch one module to its handler; the single place where unsupported modules are refused."""
    if is_lif(module):
        return lif_handler(ctx, module, path, *inputs)
    h = HANDLERS.get(type(module))
    if h is None:
        name = type(module).__name__
        raise UnsupportedModuleError(
            path or "<model>", f"{type(module).__module__}.{name}", ALTERNATIVES.get(name, "see the supported list")
        )
    out = h.fn(ctx, module, path, *inputs)
    assert isinstance(out, str), f"{path}: a module with several outputs is converted by its parent's handler"
    return out


def trace(model: nn.Module) -> Graph:
    """The float IR of a spikeport model (torch layout, BN not yet folded)."""
    cfg = getattr(model, "cfg", None)
    graph = Graph(
        nodes={},
        T=int(getattr(cfg, "T", 1)),
        meta={"model_config": cfg.to_dict() if cfg is not None else {}, "layout": "torch"},
    )
    convert_module(TraceContext(graph), model, "")
    validate(infer_shapes(graph))
    return graph


def join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _bn_params(bn: nn.BatchNorm1d | nn.BatchNorm2d, path: str) -> dict[str, np.ndarray]:
    if bn.running_mean is None or bn.running_var is None:
        raise UnsupportedModuleError(
            path, "a layer whose BatchNorm has no running statistics", "BatchNorm with track_running_stats=True"
        )
    return {
        "bn_mean": _np(bn.running_mean),
        "bn_var": _np(bn.running_var),
        "bn_weight": _np(bn.weight),
        "bn_bias": _np(bn.bias),
        "bn_eps": np.array([bn.eps], np.float32),
    }


def synapse_with_bn(
    ctx: TraceContext, layer: nn.Module, bn: nn.BatchNorm1d | nn.BatchNorm2d | None, path: str, src: str
) -> str:
    """A conv/dense node for ``layer`` with the following BatchNorm attached (folded later)."""
    name = convert_module(ctx, layer, path, src)
    if bn is not None:
        ctx.graph.nodes[name].params.update(_bn_params(bn, path))
    return name


@handler(M.Spikformer, description="the whole Spikformer: input -> SPS -> blocks -> readout")
def spikformer_handler(ctx: TraceContext, model: M.Spikformer, path: str) -> str:
    cfg = model.cfg
    x = ctx.emit(Node("input", "input", [], {}, shape=(cfg.img_size, cfg.img_size, cfg.in_channels)))
    x = convert_module(ctx, model.patch_embed, join(path, "patch_embed"), x)
    for i, blk in enumerate(model.block):
        x = convert_module(ctx, blk, join(path, f"block.{i}"), x)
    head = model.head
    return ctx.emit(
        Node(
            join(path, "head"),
            "readout",
            [x],
            {"classes": head.out_features},
            {"weight": _np(head.weight), "bias": _np(head.bias)},
        )
    )


@handler(M.SPS, description="spiking patch splitting: conv-BN-LIF stages, max-pools, RPE residual")
def sps_handler(ctx: TraceContext, sps: M.SPS, path: str, x: str) -> str:
    for conv, bn, lif, pool in sps.stages:
        a = synapse_with_bn(ctx, getattr(sps, conv), getattr(sps, bn), join(path, conv), x)
        if sps.cfg.pool_before_lif and hasattr(sps, pool):  # conv-BN-maxpool-LIF: the max of the LIF's input
            a = ctx.emit(
                Node(join(path, pool), "maxpool_activation", [a], _pool_attrs(getattr(sps, pool), join(path, pool)))
            )
            x = convert_module(ctx, getattr(sps, lif), join(path, lif), a)
            continue
        x = convert_module(ctx, getattr(sps, lif), join(path, lif), a)
        if hasattr(sps, pool):
            x = convert_module(ctx, getattr(sps, pool), join(path, pool), x)
    a = synapse_with_bn(ctx, sps.rpe_conv, sps.rpe_bn, join(path, "rpe_conv"), x)
    rpe = convert_module(ctx, sps.rpe_lif, join(path, "rpe_lif"), a)
    return ctx.emit(Node(join(path, "rpe_add"), "add", [x, rpe]))


@handler(M.Block, description="encoder block: x + SSA(x), x + MLP(x) (add nodes; ablation switches kept)")
def block_handler(ctx: TraceContext, blk: M.Block, path: str, x: str) -> str:
    y = convert_module(ctx, blk.attn, join(path, "attn"), x)
    x = ctx.emit(Node(join(path, "attn_add"), "add", [x, y])) if blk.cfg.skip else y
    if blk.mlp is not None:
        y = convert_module(ctx, blk.mlp, join(path, "mlp"), x)
        x = ctx.emit(Node(join(path, "mlp_add"), "add", [x, y])) if blk.cfg.skip else y
    return x


@handler(M.SSA, description="spiking self-attention and LRF variants -> attention|dendritic + lif nodes")
def ssa_handler(ctx: TraceContext, attn: M.SSA, path: str, x: str) -> str:
    cfg, kind = attn.cfg, attn._names
    qkv = []
    for p in ("q", "k", "v"):
        a = synapse_with_bn(ctx, getattr(attn, f"{p}_{kind}"), getattr(attn, f"{p}_bn"), join(path, f"{p}_{kind}"), x)
        qkv.append(convert_module(ctx, getattr(attn, f"{p}_lif"), join(path, f"{p}_lif"), a))
    mixes = [
        convert_module(ctx, attn.dendrites, join(path, "dendrites"), *qkv)
        if attn.dendrites is not None
        else ctx.emit(
            Node(
                join(path, "core"),
                "attention",
                qkv,
                {"heads": cfg.num_heads, "scale": float(cfg.scale), "variant": attn.spec.core},
            )
        )
    ]  # ssa | causal (ir/kernels/attention.py)
    if attn.lrf is not None:
        mixes += lrf_handler(ctx, attn.lrf, join(path, "lrf"), qkv[2])  # its branches, summed by attn_lif
    y = convert_module(ctx, attn.attn_lif, join(path, "attn_lif"), *mixes)
    a = synapse_with_bn(ctx, getattr(attn, f"proj_{kind}"), attn.proj_bn, join(path, f"proj_{kind}"), y)
    return convert_module(ctx, attn.proj_lif, join(path, "proj_lif"), a)


@handler(Dendrites, description="LRF-Dyn dendritic attention core (A, Gamma, C along the token axis)")
def dendrites_handler(ctx: TraceContext, den: Dendrites, path: str, q: str, k: str, v: str) -> str:
    cfg = ctx.graph.meta["model_config"]
    return ctx.emit(
        Node(
            path,
            "dendritic",
            [q, k, v],
            {"heads": den.num_heads, "num_dendrites": den.num_dendrites, "scale": float(cfg["scale"])},
            {"transition": _np(den.transition()), "gamma": _np(den.gamma), "readout": _np(den.readout)},
        )
    )


@handler(LocalReceptiveField, description="LRF term: depthwise dilated 3x3 convs on V -> conv nodes")
def lrf_handler(ctx: TraceContext, lrf: LocalReceptiveField, path: str, v: str) -> list[str]:
    return [convert_module(ctx, conv, join(path, f"convs.{i}"), v) for i, conv in enumerate(lrf.convs)]


@handler(M.MLP, description="MLP: (Linear|Conv 1x1)-BN-LIF twice")
def mlp_handler(ctx: TraceContext, mlp: M.MLP, path: str, x: str) -> str:
    for i in ("1", "2"):
        a = synapse_with_bn(
            ctx, getattr(mlp, f"fc{i}_{mlp._names}"), getattr(mlp, f"fc{i}_bn"), join(path, f"fc{i}_{mlp._names}"), x
        )
        x = convert_module(ctx, getattr(mlp, f"fc{i}_lif"), join(path, f"fc{i}_lif"), a)
    return x


@handler(nn.Conv2d, description="Conv2d -> conv node (1x1 convs of the ImageNet layout -> dense)")
def conv2d_handler(ctx: TraceContext, conv: nn.Conv2d, path: str, x: str) -> str:
    if value_kind(ctx.graph, x) != ANALOG and _is_pointwise(conv):
        return dense_handler(ctx, conv, path, x)  # a 1x1 conv on (H, W, C) is a per-token dense
    attrs = {
        "in_channels": conv.in_channels,
        "out_channels": conv.out_channels,
        "kernel": tuple(conv.kernel_size),
        "stride": tuple(conv.stride),
        "padding": tuple(conv.padding),
        "dilation": tuple(conv.dilation),
        "groups": conv.groups,
    }
    if isinstance(conv.padding, str) or conv.padding_mode != "zeros":
        raise UnsupportedModuleError(path, "Conv2d with padding mode/string", "Conv2d with integer zero padding")
    params = {"weight": _np(conv.weight)}
    if conv.bias is not None:
        params["bias"] = _np(conv.bias)
    return ctx.emit(Node(path, "conv", [x], attrs, params))


def _is_pointwise(conv: nn.Conv1d | nn.Conv2d) -> bool:
    return all(k == 1 for k in conv.kernel_size) and all(s == 1 for s in conv.stride) and conv.groups == 1


@handler(nn.Linear, nn.Conv1d, description="Linear / Conv1d(k=1) -> dense node applied per token")
def dense_handler(ctx: TraceContext, layer: nn.Linear | nn.Conv1d | nn.Conv2d, path: str, x: str) -> str:
    if isinstance(layer, nn.Conv1d) and not _is_pointwise(layer):
        raise UnsupportedModuleError(path, "Conv1d with kernel > 1", "Conv1d(kernel_size=1) or Linear")
    w = layer.weight.flatten(1)
    params = {"weight": _np(w)}
    if layer.bias is not None:
        params["bias"] = _np(layer.bias)
    return ctx.emit(Node(path, "dense", [x], {"in_features": w.shape[1], "out_features": w.shape[0]}, params))


@handler(nn.MaxPool2d, description="MaxPool2d on spikes -> maxpool node (OR over the window)")
def maxpool_handler(ctx: TraceContext, pool: nn.MaxPool2d, path: str, x: str) -> str:
    return ctx.emit(Node(path, "maxpool", [x], _pool_attrs(pool, path)))


def _pool_attrs(pool: nn.MaxPool2d, path: str) -> dict[str, int]:
    k, s, p = (pool.kernel_size, pool.stride, pool.padding)
    if not (isinstance(k, int) and isinstance(s, int) and isinstance(p, int)) or pool.dilation != 1 or pool.ceil_mode:
        raise UnsupportedModuleError(path, "MaxPool2d with tuple/dilated/ceil settings", "MaxPool2d(k, s, p) square")
    return {"kernel": int(k), "stride": int(s), "padding": int(p)}


def lif_handler(ctx: TraceContext, lif: TorchLIF | LIFNode, path: str, *inputs: str) -> str:
    """LIF neuron (SpikingJelly LIFNode or TorchLIF) -> lif node; v_reset must be 0 (hard reset)."""
    v_reset = getattr(lif, "v_reset", 0.0)
    if v_reset is None or float(v_reset) != 0.0 or not getattr(lif, "decay_input", True):
        raise UnsupportedModuleError(
            path,
            "LIFNode with soft reset / v_reset != 0 / decay_input=False",
            "LIFNode(tau, v_threshold, v_reset=0.0, decay_input=True)",
        )
    return ctx.emit(Node(path, "lif", list(inputs), {"tau": float(lif.tau), "v_threshold": float(lif.v_threshold)}))


HANDLERS[TorchLIF] = Handler((TorchLIF,), lif_handler, "TorchLIF -> lif node")
