"""An artifact's graph described for a reader (``spikeport inspect``): per node its op, inputs, shape, the
attributes of its fixed-point plan and the integer range of each parameter, with the narrowest integer type
that holds it."""

from __future__ import annotations

from typing import Any

from spikeport.ir.graph import Graph

# the node attributes of the fixed-point plan a reader checks (exponents, thresholds, decays, bit widths)
PLAN_ATTRS = (
    "weight_exp",
    "sigma_exp",
    "vth",
    "du",
    "dv",
    "bias_exp",
    "out_mant",
    "out_exp",
    "frac_bits",
    "bits",
    "heads",
    "variant",
    "state_exp",
)


def describe(graph: Graph) -> dict[str, Any]:
    """The graph's nodes in order (op, inputs, shape, plan attributes, each parameter's shape, range and integer
    type) with T, the root digest, the model config, the data set, the source and whether it was fine-tuned."""
    nodes = []
    for name in graph.order:
        node = graph.nodes[name]
        params = {}
        for key, value in node.params.items():
            lo, hi = (int(value.min()), int(value.max())) if value.size else (0, 0)
            params[key] = {"shape": list(value.shape), "min": lo, "max": hi, **int_type(lo, hi)}
        nodes.append(
            {
                "name": name,
                "op": node.op,
                "inputs": node.inputs,
                "shape": list(node.shape),
                "attrs": {k: v for k, v in node.attrs.items() if k in PLAN_ATTRS},
                "params": params,
            }
        )
    return {
        "T": graph.T,
        "digest": graph.digest,
        "nodes": nodes,
        "model": graph.meta.get("model_config", {}),
        "dataset": graph.meta.get("dataset"),
        "source": graph.meta.get("source", "checkpoint"),
        "qat": graph.meta.get("qat", False),
    }


def int_type(lo: int, hi: int) -> dict[str, Any]:
    """The narrowest integer type that holds [lo, hi]: [-128, 127] is 8 bits signed, [0, 255] 8 bits unsigned."""
    if lo < 0:
        return {"bits": max(int(-lo - 1).bit_length(), int(hi).bit_length()) + 1, "signed": True}
    return {"bits": max(int(hi).bit_length(), 1), "signed": False}
