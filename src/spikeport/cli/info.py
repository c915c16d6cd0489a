"""`spikeport info PRESET`: parameters, per-layer MACs for one time step, neurons, tokens, T (spikeport.api.info)."""

from __future__ import annotations

import argparse
from typing import Any

from spikeport import api
from spikeport.cli._common import bool_flag, command, echo, emit_json, json_flag, json_to_stdout, quiet_flag, table


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        subparsers,
        "info",
        help="parameters, per-layer MACs, neurons and tokens of a model preset",
        description="Describe a preset: parameters (used by the forward pass, and with the official blocks' "
        "unused LayerNorms), per-layer MACs for one sample and one time step, LIF neurons, tokens, T. Shapes come "
        "from a forward pass on the meta device (no memory, no compute).",
        examples=[
            "spikeport info digits-tiny",
            "spikeport info spikformer-8-512 --attention lrf_dyn --json info.json",
            "spikeport info spikformer-4-384 --dataset cifar100 --no-mlp",
        ],
    )
    p.add_argument("preset", help="model preset, e.g. digits-tiny, spikformer-4-384, spikformer-8-512")
    p.add_argument("--dataset", help="digits | cifar10 | cifar100 | imagenet (sets classes, channels, size)")
    p.add_argument("--attention", help="ssa | lrf_ssa | lrf_causal | lrf_dyn")
    bool_flag(p, "mlp", "keep / remove the MLP of every block (seed 000 ablation)")
    bool_flag(p, "skip", "keep / remove the residual connections (seed 000 ablation)")
    p.add_argument(
        "--layers",
        action="store_true",
        help="a row per layer (default: a row per part, the stem, each block's attention and MLP, the head)",
    )
    json_flag(p, "the description (schema spikeport.info)")
    quiet_flag(p, "table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    info = api.info(args.preset, args.dataset, attention=args.attention, mlp=args.mlp, skip=args.skip)
    emit_json(args, info, "the description")
    if args.quiet or json_to_stdout(args):
        return 0
    if args.layers:
        rows = [
            [
                r["name"] + (" (unused)" if r.get("unused") else ""),
                r["op"],
                "x".join(map(str, r["out_shape"])),
                r["params"],
                r["macs"],
                r["neurons"],
            ]
            for r in info["layers"]
        ]
        headings = ["layer", "op", "out shape", "params", "MACs", "neurons"]
    else:
        rows = parts(info["layers"], info["depth"])
        headings = ["part", "layers", "out shape", "params", "MACs", "neurons"]
    table(f"{args.preset} ({info['attention'] or info['arch']})", headings, rows)
    if not args.layers:
        echo(f"a row per layer ({len(info['layers'])}): --layers, or --json FILE")
    echo(
        f"parameters: {info['params']:,} used by the forward pass ({info['params'] / 1e6:.2f}M); "
        f"{info['params_include_unused']:,} with the unused norm1/norm2 LayerNorms "
        f"({info['params_include_unused'] / 1e6:.2f}M)"
    )
    echo(
        f"MACs per sample per time step: {info['macs']:,} ({info['macs'] / 1e9:.3f} G); "
        f"LIF neurons: {info['neurons']:,}"
    )
    echo(
        f"T = {info['T']} time steps, {info['tokens']} tokens on a {info['grid'][0]}x{info['grid'][1]} grid, "
        f"D = {info['embed_dim']}, {info['depth']} blocks, {info['num_heads']} heads"
    )
    return 0


def parts(layers: list[dict[str, Any]], depth: int) -> list[list[Any]]:
    """The layers summed per part: the stem, each block's attention and MLP, the head; blocks whose parts are
    equal in every figure are one row, 'block.0-7.attn (each)' (a Spikformer's blocks are). The unused LayerNorms
    are left out (the parameters line counts them)."""
    groups: dict[str, list[Any]] = {}
    for r in layers:
        if r.get("unused"):
            continue
        name = r["name"].split(".")
        key = ".".join(name[:3]) if name[0] in ("block", "blocks") and len(name) > 2 else name[0]
        row = groups.setdefault(key, [key, 0, "", 0, 0, 0])
        row[1] += 1
        row[2] = "x".join(map(str, r["out_shape"]))  # the part's output: its last layer's
        row[3] += r["params"]
        row[4] += r["macs"]
        row[5] += r["neurons"]
    rows, seen = [], set()
    for key, row in groups.items():
        if key in seen:
            continue
        name = key.split(".")
        if len(name) == 3 and depth > 1:
            alike = [f"{name[0]}.{b}.{name[2]}" for b in range(depth)]
            if all(k in groups and groups[k][1:] == row[1:] for k in alike):
                seen.update(alike)
                rows.append([f"{name[0]}.0-{depth - 1}.{name[2]} (each)", *row[1:]])
                continue
        rows.append(row)
    return rows
