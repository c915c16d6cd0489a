"""NIR export of the parts of a Spikformer that NIR can express (SPS stem, MLP sub-blocks, readout).

NIR (neuroir.org) has no primitive that multiplies two activations, so spiking self-attention
(Q K^T V, the causal running sum, the dendritic q * g(k * v)) cannot be written in it; nor can
MaxPool2d (NIR has SumPool2d/AvgPool2d only, and a max over spikes is an OR, not a sum). The export
therefore lowers the float IR (``handlers.trace`` + ``passes.fold_bn``: the same graph the Loihi flow
starts from) into independent NIR sub-graphs, one per expressible region, and lists everything else
with its reason in the export report. The host (the user's code) connects the parts.

The LIF mapping (SpikingJelly's discrete LIF -> NIR's continuous LIF, integrated by Euler with ``dt``):

    SpikingJelly:  h = v + (x - v) / tau_sj ;  s = [h >= v_th] ;  v = h (1 - s)      (v_reset = 0)
    NIR LIF:       tau dv/dt = (v_leak - v) + r I ;  z = [v > v_threshold] ;  v = v_reset if z
    Euler, step dt: v += (dt / tau) (v_leak - v + r I)

    tau = tau_sj * dt,  r = 1,  v_leak = 0,  v_reset = 0,  I = x (the BN-folded synaptic input),
    v_threshold = the largest float32 below v_th  (so that NIR's strict v > v_threshold is exactly
    SpikingJelly's v >= v_th on float32 membranes).

With ``dt`` = norse's default (1e-3) ``norse.torch.from_nir(graph)`` reproduces the discrete update;
the update is bit-identical when dt * float32(1 / float32(tau)) == 1 / tau_sj exactly, which holds for
power-of-two tau_sj (Spikformer's tau = 2); the report says so per LIF.

What each IR op becomes in NIR is its entry in ``NIR_LOWERINGS`` (``spikeport.ir.registry``): a node
builder, the part's Output node (a residual sum: NIR sums a node's in-edges), or why NIR cannot express it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from torch import nn

from spikeport.brief import brief_repr
from spikeport.convert import passes
from spikeport.convert.handlers import trace
from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import value_kind
from spikeport.ir.registry import Registry
from spikeport.value_kinds import SPIKES

if TYPE_CHECKING:
    import nir

REPORT_SCHEMA = "spikeport.nir_export"
DEFAULT_DT = 1e-3  # seconds per SpikingJelly step; norse.torch.from_nir's default dt


@dataclass(frozen=True)
class NirLowering:
    """How one IR op is written in NIR. ``lower(graph, node, dt, token_dim)``: its NIR node (float, BN
    folded); ``at_output``: it is the part's Output node, which sums its in-edges (a residual add);
    ``not_expressible``: why NIR cannot express it (the report quotes it); ``folded_weights``: it carries
    its torch module's BN-folded weight and bias (``nir_check`` copies them into the torch model)."""

    lower: Callable[..., nir.NIRNode] | None = None
    at_output: bool = False
    not_expressible: str = ""
    folded_weights: bool = False


NIR_LOWERINGS: Registry[NirLowering] = Registry("NIR lowering")


def not_expressible(op: str) -> str:
    """Why NIR cannot express ``op`` ("" when it can, or when the op has no entry)."""
    entry = NIR_LOWERINGS.find(op)
    return entry.not_expressible if entry else ""


@dataclass
class NirPart:
    name: str  # node name in the top-level NIR graph, e.g. "block_0_mlp"
    graph: nir.NIRGraph  # this part: Input -> ... -> Output
    ir_nodes: list[str]  # the IR nodes (torch module paths) it expresses
    input_from: str  # the IR node whose output feeds it in the full model
    input_layout: str  # "CHW" map, "D" per token, or "N*D" flattened tokens
    lif_nodes: dict[str, str] = field(default_factory=dict)  # NIR node name -> IR node name


@dataclass
class NirExport:
    graph: nir.NIRGraph  # top level: one sub-graph per part, each between an Input and an Output
    parts: dict[str, NirPart]
    report: dict[str, Any]
    ir: Graph  # the float IR the parts were lowered from (BN folded)
    path: Path | None = None
    report_path: Path | None = None

    BRIEF = ("path", "parts", "report_path")
    __repr__ = brief_repr


def nir_threshold(v_threshold: float) -> np.float32:
    """NIR fires on v > v_threshold, SpikingJelly on v >= v_th: the float32 predecessor of v_th."""
    below: np.float32 = np.nextafter(np.float32(v_threshold), np.float32(-np.inf))
    return below


def euler_step_exact(tau: float, dt: float) -> bool:
    """True when norse's Euler factor dt * float32(1 / float32(tau * dt)) equals 1/tau and x / tau is
    exactly x * (1 / tau) in float32 (tau a power of two): then the membranes are bit-identical."""
    factor = np.float32(dt) * (np.float32(1.0) / np.float32(tau * dt))
    mantissa, _ = np.frexp(tau)
    return bool(factor == np.float32(1.0 / tau) and mantissa == 0.5)


def lif_node(tau: float, v_threshold: float, shape: tuple[int, ...], dt: float) -> nir.LIF:
    """One NIR LIF for a SpikingJelly LIFNode(tau, v_threshold, v_reset=0, decay_input=True)."""
    import nir

    def full(v: float | np.float32) -> np.ndarray:
        return np.full(shape, v, dtype=np.float32)

    return nir.LIF(
        tau=full(tau * dt),
        r=full(1.0),
        v_leak=full(0.0),
        v_threshold=full(nir_threshold(v_threshold)),
        v_reset=full(0.0),
        metadata={
            "spikingjelly_tau": float(tau),
            "spikingjelly_v_threshold": float(v_threshold),
            "dt": float(dt),
            "spike_rule": "v >= spikingjelly_v_threshold",
        },
    )


def _chw(shape: tuple[int, ...]) -> tuple[int, ...]:
    """IR shapes are channels-last (H, W, C); NIR follows torch's (C, H, W)."""
    h, w, c = shape
    return (c, h, w)


def _conv(graph: Graph, node: Node, dt: float, token_dim: bool) -> nir.Conv2d:
    import nir

    p, a = node.params, node.attrs
    in_shape = graph.nodes[node.inputs[0]].shape
    bias = p.get("bias", np.zeros(a["out_channels"], np.float32))
    return nir.Conv2d(
        input_shape=in_shape[:2],
        weight=p["weight"].astype(np.float32),
        stride=a["stride"],
        padding=a["padding"],
        dilation=a["dilation"],
        groups=a["groups"],
        bias=bias.astype(np.float32),
        metadata={"module": node.name},
    )


def _dense(graph: Graph, node: Node, dt: float, token_dim: bool) -> nir.Affine:
    import nir

    p, a = node.params, node.attrs
    bias = p.get("bias", np.zeros(a["out_features"], np.float32))
    return nir.Affine(
        weight=p["weight"].astype(np.float32),
        bias=bias.astype(np.float32),
        metadata={"module": node.name, "applied": "per token"},
    )


def _lif(graph: Graph, node: Node, dt: float, token_dim: bool) -> nir.LIF:
    a = node.attrs
    shape = (node.shape[-1],) if token_dim else _chw(node.shape)
    return lif_node(a["tau"], a["v_threshold"], shape, dt)


def _readout(graph: Graph, node: Node, dt: float, token_dim: bool) -> nir.Affine:
    import nir

    p = node.params
    # logits_t = W mean_tokens(x_t) + b  ==  (tile(W) / N) flatten(x_t) + b ; the host averages over T
    n_tokens = int(np.prod(graph.nodes[node.inputs[0]].shape[:-1]))
    weight = np.tile(p["weight"], (1, n_tokens)) / np.float32(n_tokens)
    return nir.Affine(
        weight=weight.astype(np.float32),
        bias=p["bias"].astype(np.float32),
        metadata={"module": node.name, "applied": "per time step on flattened tokens"},
    )


NIR_LOWERINGS.add("conv", NirLowering(_conv, folded_weights=True))
NIR_LOWERINGS.add("dense", NirLowering(_dense, folded_weights=True))
NIR_LOWERINGS.add("lif", NirLowering(_lif))
NIR_LOWERINGS.add("readout", NirLowering(_readout))
NIR_LOWERINGS.add("add", NirLowering(at_output=True))
NIR_LOWERINGS.add(
    "attention",
    NirLowering(
        not_expressible="multiplies two spike tensors (Q K^T V, or the causal running sum); NIR has no "
        "product of two activations (Affine/Conv/Scale multiply by constants only)"
    ),
)
NIR_LOWERINGS.add(
    "dendritic",
    NirLowering(not_expressible="q * g(k * v): products of spike tensors along the token axis; no NIR primitive"),
)
NIR_LOWERINGS.add(
    "maxpool",
    NirLowering(not_expressible="NIR has SumPool2d and AvgPool2d only; a max over spikes (an OR) is not a sum"),
)


def _lowering(node: Node) -> NirLowering:
    """The NIR entry of a part member; a ConversionError when NIR cannot express it."""
    entry = NIR_LOWERINGS.get(node.op, node.name)
    if entry.lower is None and not entry.at_output:
        raise ConversionError(f"node '{node.name}' (op {node.op}) has no NIR lowering: {entry.not_expressible}")
    return entry


def lower_part(graph: Graph, name: str, members: list[str], dt: float, layout: str) -> NirPart:
    """An IR region with one external input -> a NIR graph. A final ``add`` becomes the Output node,
    which sums its in-edges (NIR semantics), so residual sums of spikes need no extra primitive."""
    import nir

    inside = set(members)
    external = sorted({s for m in members for s in graph.nodes[m].inputs if s not in inside})
    if len(external) != 1:
        raise ConversionError(f"NIR part '{name}' must have one input, has {external}")
    src = graph.nodes[external[0]]
    shapes: dict[str, Callable[[tuple[int, ...]], tuple[int, ...]]] = {
        "CHW": lambda s: _chw(s),
        "D": lambda s: (s[-1],),
        "N*D": lambda s: (int(np.prod(s)),),
    }
    in_shape = shapes[layout]
    nodes = {"input": nir.Input(input_type={"input": np.array(in_shape(src.shape))})}
    local = {external[0]: "input"}
    lifs = {}
    for ir_name in members:
        node = graph.nodes[ir_name]
        entry = _lowering(node)
        if entry.at_output and ir_name != members[-1]:
            raise ConversionError(f"NIR part '{name}': {node.op} node '{ir_name}' must be the part's last node")
        key = "output" if entry.at_output else ir_name.rsplit(".", 1)[-1]
        local[ir_name] = key
        if entry.lower is not None:
            nodes[key] = entry.lower(graph, node, dt, layout != "CHW")
        if value_kind(graph, ir_name) == SPIKES:  # its spikes are compared in nir_check
            lifs[key] = ir_name
    final = local[members[-1]]
    out_shape = in_shape(graph.nodes[members[-1]].shape) if final == "output" else nodes[final].output_type["output"]
    nodes["output"] = nir.Output(output_type={"output": np.array(out_shape)})
    # Edges in destination order: norse loads through nirtorch's GraphExecutor, which runs nodes in
    # depth-first order from the input, so the residual edge input -> output must come after the chain.
    edges = [(local[s], local[m]) for m in members for s in graph.nodes[m].inputs]
    if final != "output":
        edges.append((final, "output"))
    graph_nir = nir.NIRGraph(nodes=nodes, edges=edges, metadata={"spikeport_part": name})
    return NirPart(name, graph_nir, list(members), external[0], layout, lifs)


def _regions(graph: Graph) -> tuple[list[tuple[str, list[str], str]], list[dict[str, Any]]]:
    """Split the IR into NIR-expressible regions (name, members, input layout) and the rest."""
    regions: list[tuple[str, list[str], str]] = []
    left_out: list[dict[str, Any]] = []
    order = graph.order
    stem = [n for n in order if n.startswith("patch_embed.")]
    segment: list[str] = []
    for n in stem:
        op = graph.nodes[n].op
        if not_expressible(op):  # splits the stem: the parts around it are separate
            regions.append(("patch_embed", segment, "CHW"))
            segment = []
            left_out.append({"node": n, "op": op, "reason": not_expressible(op)})
        else:
            segment.append(n)
    regions.append(("patch_embed", segment, "CHW"))
    regions = [r for r in regions if r[1]]
    if len(regions) > 1:
        regions = [(f"patch_embed_s{i}", m, lay) for i, (_, m, lay) in enumerate(regions)]
    blocks = sorted({n.split(".")[1] for n in order if n.startswith("block.")}, key=int)
    for b in blocks:
        prefix = f"block.{b}."
        mlp = [n for n in order if n.startswith(prefix + "mlp.") or n == prefix + "mlp_add"]
        if mlp:
            regions.append((f"block_{b}_mlp", mlp, "D"))
        attn = [n for n in order if n.startswith(prefix) and n not in mlp]
        kinds = sorted({graph.nodes[n].op for n in attn if not_expressible(graph.nodes[n].op)})
        left_out.append(
            {
                "node": prefix + "attn",
                "op": "+".join(kinds),
                "ir_nodes": attn,
                "reason": "; ".join(not_expressible(k) for k in kinds)
                + ". The sub-block (q/k/v projections, core, LRF, attn_lif, proj, residual add) stays on "
                "the host: its projections alone are Affine+LIF but only feed the product",
            }
        )
    if "head" in graph.nodes:
        regions.append(("head", ["head"], "N*D"))
    return regions, left_out


def build_nir(model: nn.Module, dt: float = DEFAULT_DT) -> NirExport:
    """The NIR parts of a spikeport Spikformer (no file written). Raises ConversionError for models
    without spiking neurons (the ViT baseline: export it with ``export_onnx``)."""
    import nir

    cfg = getattr(model, "cfg", None)
    if cfg is None or cfg.arch != "spikformer":
        raise ConversionError(
            f"NIR export needs a spikeport Spikformer, got {type(model).__name__} "
            "(the ViT baseline has no spiking neurons: use export_onnx)"
        )
    if not dt > 0:
        raise ConversionError(f"NIR export: dt must be > 0 (seconds per time step), got {dt}")
    graph = passes.fold_bn(trace(model))
    regions, left_out = _regions(graph)
    parts = {name: lower_part(graph, name, members, dt, layout) for name, members, layout in regions}
    nodes, edges = {}, []
    for name, part in parts.items():
        nodes[name] = part.graph
        nodes[f"{name}_input"] = nir.Input(input_type={"input": part.graph.nodes["input"].input_type["input"]})
        nodes[f"{name}_output"] = nir.Output(output_type={"output": part.graph.nodes["output"].output_type["output"]})
        edges += [(f"{name}_input", name), (name, f"{name}_output")]
    top = nir.NIRGraph(
        nodes=nodes,
        edges=edges,
        metadata={
            "producer": "spikeport",
            "dt": float(dt),
            "T": int(graph.T),
            "model_config": json.dumps(graph.meta.get("model_config", {})),
            "not_expressed": json.dumps([d["node"] for d in left_out]),
            # norse.from_nir loads this top level too but cannot run it (the parts are not connected: NIR cannot
            # express the attention between them); the file says what to load instead
            "load": load_hint(list(parts), dt),
        },
    )
    return NirExport(top, parts, _export_report(graph, parts, left_out, dt), graph)


def _export_report(
    graph: Graph, parts: dict[str, NirPart], left_out: list[dict[str, Any]], dt: float
) -> dict[str, Any]:
    """The export's report: the LIF mapping, each part's IR nodes and shapes, what NIR does not express and what
    the host computes between the parts."""
    import nir

    host_ops = [
        {"op": "direct coding", "reason": f"the image is fed unchanged at each of the T={graph.T} steps"},
        {
            "op": "token layout",
            "reason": "SPS output (C, H, W) -> tokens (N=H*W, D) is a transpose (no arithmetic); "
            "the head part takes the tokens flattened to N*D",
        },
        {
            "op": "readout time average",
            "reason": "logits = mean over T of the head part's per-step output "
            "(nir.I could integrate, but norse.from_nir cannot load it)",
        },
    ]
    taus = sorted({float(n.attrs["tau"]) for n in graph.by_op("lif")})
    return {
        "schema": REPORT_SCHEMA,
        "schema_version": 1,
        "nir_version": nir.version,
        "dt": dt,
        "T": graph.T,
        "model": graph.meta.get("model_config", {}),
        "lif_mapping": {
            "tau": "tau_sj * dt",
            "r": 1.0,
            "v_leak": 0.0,
            "v_reset": 0.0,
            "v_threshold": "largest float32 below v_th (NIR: v > v_threshold; SpikingJelly: v >= v_th)",
            "bit_exact_euler": {str(t): euler_step_exact(t, dt) for t in taus},
        },
        "parts": [
            {
                "name": p.name,
                "ir_nodes": p.ir_nodes,
                "input_from": p.input_from,
                "input_layout": p.input_layout,
                "input_shape": p.graph.nodes["input"].input_type["input"].tolist(),
                "output_shape": p.graph.nodes["output"].output_type["output"].tolist(),
                "nir_nodes": {k: type(v).__name__ for k, v in p.graph.nodes.items()},
            }
            for p in parts.values()
        ],
        "not_expressed": left_out,
        "host_operations": host_ops,
        "load": load_hint(list(parts), dt),
    }


def load_hint(parts: list[str], dt: float) -> str:
    return (
        f"independent parts, connected by the host (NIR cannot express spiking self-attention): load one with "
        f"norse.torch.from_nir(nir.read(path).nodes[PART], dt={dt}); PART in {', '.join(parts)}; the whole file "
        "does not run as one network"
    )
