"""`spikeport memory PRESET`: per-module inference memory, analytic and measured, across attention variants."""

from __future__ import annotations

import argparse

from spikeport import api
from spikeport.cli._common import (
    command,
    echo,
    emit_json,
    json_flag,
    json_to_stdout,
    positive_int,
    progress_printer,
    quiet_flag,
    table,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        subparsers,
        "memory",
        help="per-module inference memory (analytic and measured) of a preset, per attention variant",
        description="Analytic per-module bytes (weights, LIF state, attention state: SSA holds Q, K, V and "
        "K^T V; lrf_causal the running sum; lrf_dyn the dendritic state k x d) at torch precision "
        "and at Loihi precision (8-bit weights, 24-bit state), the activations live in a "
        "layer-by-layer run, and the measured peak of the torch float model (CPU: torch allocator "
        "events via torch.profiler; CUDA: torch.cuda.max_memory_allocated), no_grad. For a converted "
        "network's footprint on the chip (cores, synaptic memory) see `spikeport check-hw` and `spikeport report`.",
        examples=[
            "spikeport memory digits-tiny",
            "spikeport memory spikformer-8-512 --attention ssa --attention lrf_dyn --no-measure --json mem.json",
        ],
    )
    p.add_argument("preset", help="model preset, e.g. spikformer-8-512, digits-tiny")
    p.add_argument(
        "--attention",
        action="append",
        help="attention variant to include (repeat to compare; default: ssa and lrf_dyn)",
    )
    p.add_argument("--batch", type=positive_int, default=1, help="batch size (default 1)")
    p.add_argument("--T", type=positive_int, help="time steps (default: the preset's)")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "fp16", "bf16"), help="torch precision (default fp32)")
    p.add_argument("--device", default="cpu", help="where to measure: cpu (default) or cuda")
    p.add_argument(
        "--form",
        default="recurrent",
        choices=("recurrent", "parallel"),
        help="inference form of lrf_dyn / lrf_causal (default recurrent, the runtime form)",
    )
    p.add_argument(
        "--no-measure",
        dest="measure",
        action="store_false",
        help="analytic only (the measurement runs one forward of the float model)",
    )
    json_flag(p, "the comparison (schema spikeport.memory_compare)")
    quiet_flag(p)
    p.set_defaults(func=run)


def _mb(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e6:,.3f}"


def run(args: argparse.Namespace) -> int:
    attentions = args.attention or ["ssa", "lrf_dyn"]
    result = api.memory(
        args.preset,
        attentions,
        batch=args.batch,
        T=args.T,
        dtype=args.dtype,
        measure=args.measure,
        device=args.device,
        form=args.form,
        progress=progress_printer(args),
    )
    emit_json(args, result, "the comparison")
    if args.quiet or json_to_stdout(args):
        return 0
    for res in result["results"]:
        a, lo, m = res["analytic"], res["analytic_loihi"], res["measured"]
        loihi = {mod["name"]: mod for mod in lo["modules"]}
        rows = []
        for mod in a["modules"]:
            meas = None if m is None else m["modules"].get(mod["name"])
            rows.append(
                [
                    mod["name"].replace("block.", "b"),
                    _mb(mod["weights"]),
                    _mb(mod["neuron_state"]),
                    _mb(mod["attention_core"]),
                    _mb(mod["attention_buffers"]),
                    _mb(loihi[mod["name"]]["held"]),
                    _mb(mod["activation_peak"]),
                    _mb(meas),
                ]
            )
        table(
            f"{args.preset} {res['attention']}: MB (1e6 bytes), batch {args.batch}, T {a['T']}, {args.dtype}",
            ["module", "weights", "LIF", "attn core", "attn buf", "@Loihi", "act an.", "act meas."],
            rows,
        )
        live = ", ".join(f"{n} {b / 1e6:.1f}" for n, b in a["live_at_peak"][:4])
        echo(
            "  columns: LIF state, attention core (K^T V / S / X), attention buffers (Q,K,V or LRF window), "
            "held state at Loihi precision, activation peak of a layer-by-layer run (analytic, measured)"
        )
        echo(f"  peak of the layer-by-layer run in '{a['peak_module']}'; live there (MB): {live}")
        if m is not None:
            echo(
                f"  measured: {m['label']}, device {m['device']}, neuron backend {m['neuron_backend']}; "
                f"weights {_mb(m['weights_bytes'])} MB, activation peak {_mb(m['activation_peak'])} MB, "
                f"inference peak {_mb(m['inference_peak'])} MB"
                + (f", RSS cross-check {_mb(m['rss_peak_delta'])} MB" if m.get("rss_peak_delta") else "")
            )
    base = attentions[0]
    rows = [
        [
            r["figure"],
            *[_mb(r["bytes"][att]) for att in attentions],
            *[
                ("-" if r[f"ratio_to_{base}"][att] is None else f"{r[f'ratio_to_{base}'][att]:.3f}")
                for att in attentions[1:]
            ],
        ]
        for r in result["summary"]
    ]
    table(
        f"{args.preset}: {' vs '.join(attentions)} (MB; ratio to {base})",
        ["figure", *attentions, *[f"/{base}" for a in attentions[1:]]],
        rows,
    )
    for r in result["summary"]:
        echo(f"  {r['figure']}: {r['note']}")
    return 0
