"""spikeport inspect ARTIFACT: the graph, per-node precision and value ranges."""

from __future__ import annotations

import numpy as np

KEY_ATTRS = (
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


def register(sub) -> None:
    p = sub.add_parser("inspect", help="show an artifact's graph, precisions and ranges")
    p.add_argument("artifact")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def describe(graph) -> dict:
    nodes = []
    for name in graph.order:
        n = graph.nodes[name]
        params = {
            k: {
                "shape": list(v.shape),
                "min": int(v.min()) if v.size else 0,
                "max": int(v.max()) if v.size else 0,
                "bits": int(np.ceil(np.log2(max(abs(int(v.min())), abs(int(v.max())), 1) + 1))) + 1,
            }
            for k, v in n.params.items()
        }
        nodes.append(
            {
                "name": name,
                "op": n.op,
                "inputs": n.inputs,
                "shape": list(n.shape),
                "attrs": {k: v for k, v in n.attrs.items() if k in KEY_ATTRS},
                "params": params,
            }
        )
    return {
        "T": graph.T,
        "nodes": nodes,
        "model": graph.meta.get("model_config", {}),
        "dataset": graph.meta.get("dataset"),
        "qat": graph.meta.get("qat", False),
    }


def run(args) -> int:
    from spikeport.cli._common import print_json, table, warn_stale_report
    from spikeport.ir import artifact

    graph = artifact.read(args.artifact)
    warn_stale_report(graph.digest, args.artifact, "inspect")
    info = describe(graph)
    if args.json:
        print_json(info)
        return 0
    rows = []
    for n in info["nodes"]:
        prange = "; ".join(f"{k} [{p['min']}, {p['max']}] ({p['bits']}b)" for k, p in n["params"].items())
        attrs = ", ".join(f"{k}={v}" for k, v in n["attrs"].items())
        rows.append([n["name"], n["op"], "x".join(map(str, n["shape"])), ", ".join(n["inputs"]), attrs, prange])
    table(
        f"{args.artifact}: T={info['T']}, {len(rows)} nodes",
        ["name", "op", "shape", "inputs", "attributes", "integer ranges"],
        rows,
    )
    return 0
