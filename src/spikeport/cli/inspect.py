"""`spikeport inspect ARTIFACT`: the graph, per-node precision and integer ranges (spikeport.api.inspect)."""

from __future__ import annotations

import argparse

from spikeport import api
from spikeport.cli._common import command, emit_json, json_flag, json_to_stdout, quiet_flag, table, warn_stale_report


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "inspect",
        help="show an artifact's graph, precisions and integer ranges",
        description="Lists the nodes of a converted artifact (.spk.h5) in order: op, shape, inputs, the attributes "
        "of its fixed-point plan (exponents, thresholds, decays) and the integer range of every parameter with "
        "the bits it needs (signed, or 'unsigned' when it has no negative value). Warns when the conversion "
        "report beside the artifact belongs to another conversion.",
        examples=[
            "spikeport inspect build/digits-ssa/model.spk.h5",
            "spikeport inspect build/digits-ssa/model.spk.h5 --json graph.json",
        ],
    )
    p.add_argument("artifact", help="<name>.spk.h5 written by `spikeport convert`")
    json_flag(p, "the graph description")
    quiet_flag(p, "table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    info = api.inspect(args.artifact)
    warn_stale_report(info["digest"], args.artifact, "inspect")
    emit_json(args, info, "the graph description")
    if args.quiet or json_to_stdout(args):
        return 0
    rows = []
    for n in info["nodes"]:
        prange = "; ".join(
            f"{k} [{p['min']}, {p['max']}] ({p['bits']}b{'' if p['signed'] else ' unsigned'})"
            for k, p in n["params"].items()
        )
        attrs = ", ".join(f"{k}={v}" for k, v in n["attrs"].items())
        rows.append([n["name"], n["op"], "x".join(map(str, n["shape"])), ", ".join(n["inputs"]), attrs, prange])
    source = "a lava-dl netx file" if info["source"] == "netx" else "a checkpoint"
    table(
        f"{args.artifact} (converted from {source}): T={info['T']}, {len(rows)} nodes",
        ["name", "op", "shape", "inputs", "attributes", "integer ranges"],
        rows,
    )
    return 0
