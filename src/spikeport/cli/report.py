"""`spikeport report RUN.json [RUN2.json ...]`: counts, energy per profile, memory and the GPU baseline of
one or more run reports, as terminal tables, JSON (schema spikeport.report v1) and a self-contained HTML
page. A thin layer over spikeport.api.report."""

from __future__ import annotations

import argparse
import sys

from spikeport.cli._common import output_file, refuse_flags


def register(subparsers) -> None:
    from spikeport.cli._common import one_line_errors

    p = one_line_errors(
        subparsers.add_parser(
            "report",
            help="energy (per hw profile), memory and GPU baseline of run reports; HTML and JSON",
            description="Reads run reports written by `spikeport run ... --json` (any executor) and prints, per "
            "run and per inference: accuracy, per-layer spikes / firing rates / synops / MACs / "
            "dendritic updates / state bytes, the energy estimate of every --profile (native; for CMOS "
            "profiles also the literature convention and the memory-inclusive variant), the state "
            "memory (SSA's K^T V vs LRF-Dyn's dendritic X) and the GPU baseline of the same network "
            "(measured on CUDA, otherwise estimated from --gpu profiles) with the ratio. Every figure "
            "is labelled estimated or measured. See docs/reports.md.",
        )
    )
    p.add_argument("runs", nargs="+", metavar="RUN.json", help="run report(s) (schema spikeport.run v1)")
    p.add_argument(
        "--profile",
        action="append",
        metavar="NAME|FILE.yaml",
        help="hw profile to price op counts with (repeatable; default loihi2 and cmos45nm; a GPU "
        "profile here joins --gpu)",
    )
    p.add_argument(
        "--gpu",
        action="append",
        metavar="NAME|FILE.yaml",
        help="GPU profile for the estimated baseline when there is no CUDA (repeatable; default h100)",
    )
    p.add_argument(
        "--gpu-bench",
        action="append",
        metavar="BENCH.json",
        help="results of `spikeport bench gpu --json` (e.g. measured on a CUDA machine) to use as "
        "the GPU baseline of the run with the same attention and T",
    )
    p.add_argument("--no-gpu", dest="gpu_baseline", action="store_false", help="skip the GPU baseline")
    p.add_argument("--no-vit", dest="vit", action="store_false", help="skip the ANN ViT counterpart on the GPU")
    p.add_argument(
        "--memory",
        action="store_true",
        help="also measure the torch float model's peak memory (ssa and lrf_dyn, CPU, batch 1)",
    )
    p.add_argument(
        "--integer-inputs",
        default="value_acs",
        choices=("value_acs", "event_macs"),
        help="how integer (SEW residual) inputs are counted (docs/counting.md; default value_acs)",
    )
    p.add_argument(
        "--first-layer-once",
        action="store_true",
        help="charge the analog first layer once per inference instead of at every time step",
    )
    p.add_argument(
        "--precision",
        default="fp32",
        choices=("fp32", "fp16", "int32", "int8"),
        help="CMOS arithmetic precision of adds / MACs (default fp32, the literature's)",
    )
    p.add_argument("--html", type=output_file, metavar="PATH", help="write the self-contained HTML page here")
    p.add_argument(
        "--json", type=output_file, metavar="PATH", help="write the summary (schema spikeport.report v1) here"
    )
    p.add_argument("--quiet", action="store_true", help="no tables, only the files written")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from spikeport import api

    if not args.gpu_baseline:
        refuse_flags(
            {"--gpu": args.gpu, "--gpu-bench": args.gpu_bench, "--no-vit": not args.vit},
            "with --no-gpu (there is no GPU baseline to make)",
        )
    summary = api.report(
        args.runs,
        profiles=args.profile or ("loihi2", "cmos45nm"),
        gpus=args.gpu or ("h100",),
        gpu_bench=args.gpu_bench or (),
        gpu_baseline=args.gpu_baseline,
        vit=args.vit,
        measure_memory=args.memory,
        integer_inputs=args.integer_inputs,
        first_layer_per_timestep=not args.first_layer_once,
        precision=args.precision,
        json=args.json,
        html=args.html,
        progress=None if args.quiet else (lambda msg: print(msg, file=sys.stderr)),
    )
    if not args.quiet:
        _wide_when_piped(print_summary, summary)
    if args.json:
        print(f"wrote {args.json}")
    if args.html:
        print(f"wrote {Path(args.html).resolve()}")
    return 0


# ---- terminal ---------------------------------------------------------------------------------------


def _wide_when_piped(fn, *a) -> None:
    """rich draws 80 columns when stdout is not a terminal (logs, CI, `| less`) and would cut layer names;
    it reads COLUMNS, so widen the tables there. A terminal keeps its own width."""
    import os

    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return fn(*a)
    os.environ["COLUMNS"] = "130"
    try:
        fn(*a)
    finally:
        del os.environ["COLUMNS"]


def _n(v) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if float(v).is_integer() or abs(v) >= 1000 else f"{v:.4g}"


def print_answer(s: dict) -> None:
    """The report's first table: one row per run, the figures a reader came for (report.summary.answer_rows)."""
    from spikeport.cli._common import table
    from spikeport.report.summary import answer_table

    columns, rows = answer_table(s)
    table("the answer, per variant and per inference (energy: estimated unless labelled measured)", columns, rows)
    print("  GPU latency mode: batch 1; throughput mode: energy per inference at batch 256")


def print_summary(s: dict) -> None:
    from spikeport.cli._common import table
    from spikeport.report.plots import short_name
    from spikeport.report.summary import fmt_bytes, fmt_ratio, fmt_si

    print_answer(s)
    for i, r in enumerate(s["runs"]):
        acc = "-" if r["accuracy"] is None else f"{r['accuracy']:.4f}"
        print(
            f"\nrun {i + 1}/{len(s['runs'])}: {r['source']}\n  counts by {r['counts_by']}\n  attention "
            f"{r['attention']}, T={r['T']}, {r['samples']} samples, accuracy {acc}; figures per inference"
        )
        rows = [
            [
                short_name(layer["name"]),
                layer["op"],
                _n(layer["spikes"]),
                "-" if layer["firing_rate"] is None else f"{layer['firing_rate']:.2%}",
                _n(layer["synops"]),
                _n(layer["macs"]),
                _n(layer["dendritic_updates"]),
                fmt_bytes(layer["state_bytes"]),
            ]
            for layer in r["layers"]
            if layer["op"] not in ("input", "add")
        ]
        t = r["totals"]
        rows.append(
            [
                "total",
                "",
                _n(t["spikes"]),
                "-" if t["firing_rate"] is None else f"{t['firing_rate']:.2%}",
                _n(t["synops"]),
                _n(t["macs"]),
                _n(t["dendritic_updates"]),
                fmt_bytes(r["state_memory"]["state_bytes"]),
            ]
        )
        table(
            f"per layer, per inference (counts by {r['executor']})",
            ["layer", "op", "spikes", "rate", "synops", "MACs", "dend. upd.", "state"],
            rows,
        )
        if any(short_name(layer["name"]) != layer["name"] for layer in r["layers"]):
            print("  layer names: stem = patch_embed, bI.a / bI.m = block I attention / MLP")
        table(
            f"energy per inference (counts by {r['executor']})",
            ["profile", "method", "energy", "kind"],
            [[e["profile"] or "-", e["method"], fmt_si(e["energy_J"], "J"), e["kind"]] for e in r["energy"]],
        )
        for e in r["energy"]:
            print(
                f"  {e['profile'] or e['method']} / {e['method']}: {e['label']}; leaves out: "
                + "; ".join(e["left_out"])
            )
        sm = r["state_memory"]
        print(
            f"  state memory ({sm['label']}): attention {fmt_bytes(sm['attention_state_bytes'])} "
            f"({', '.join(sm['attention_state_kind']) or 'none'}), neurons {fmt_bytes(sm['neuron_state_bytes'])}, "
            f"total {fmt_bytes(sm['state_bytes'])}; weights {fmt_bytes(sm['weight_bytes'])}"
        )
        if r["gpu"]:
            table(
                "GPU baseline (same network; latency mode: batch 1, throughput mode: per inference at a large batch)",
                ["network", "device", "mode", "kind", "latency", "energy", "dynamic", "peak memory"],
                [
                    [
                        b["name"].split(" (")[0],
                        b["device"].replace(" (profile)", "*"),
                        f"{b.get('mode', '-')} (batch {b.get('batch')})",
                        b["kind"],
                        fmt_si(b.get("latency_s"), "s"),
                        fmt_si(b.get("energy_J"), "J"),
                        fmt_si(b.get("energy_dynamic_J"), "J"),
                        fmt_bytes(b.get("peak_memory_bytes")),
                    ]
                    for b in r["gpu"]
                ],
            )
            for label in dict.fromkeys(f"{b['name']}: {b['label']}" for b in r["gpu"]):
                print(f"  {label}")
            print("  *: estimated from the GPU profile (no CUDA device here)")
        if r["comparison"]:
            table(
                "estimate vs GPU (energy per inference)",
                ["profile", "method", "estimate", "GPU", "GPU energy", "GPU / estimate", "idle floor / est."],
                [
                    [
                        c["profile"] or "-",
                        c["method"],
                        fmt_si(c["energy_J"], "J"),
                        f"{c['gpu_device'].replace(' (profile)', '')} {c['gpu_kind'][:4]}., {c['gpu_mode']}",
                        fmt_si(c["gpu_energy_J"], "J"),
                        fmt_ratio(c["gpu_over_estimate"]),
                        fmt_ratio(c["gpu_floor_over_estimate"]),
                    ]
                    for c in r["comparison"]
                ],
            )
            print(
                "  GPU / estimate: the GPU figure over the op-count estimate; an estimated GPU figure is TDP x "
                "time (upper bound), its idle floor is idle power x time"
            )
        for note in r["notes"]:
            print(f"  note: {note}")
    print_memory(s["memory"])
    print("\nread before quoting a number:")
    for c in s["caveats"]:
        print(f"  - {c}")


def print_memory(m: dict) -> None:
    from spikeport.cli._common import table
    from spikeport.report.summary import fmt_bytes, memory_rows

    table(
        "state memory counted by the executors (Loihi precision, per sample)",
        ["run report", "executor", "attention", "attention state", "neuron state", "state", "weights"],
        [
            [
                r["source"],
                r["executor"],
                r["attention"] or "-",
                fmt_bytes(r["attention_state_bytes"]),
                fmt_bytes(r["neuron_state_bytes"]),
                fmt_bytes(r["state_bytes"]),
                fmt_bytes(r["weight_bytes"]),
            ]
            for r in m["from_runs"]
        ],
    )
    if m["runs_ratio"]:
        rr = m["runs_ratio"]
        print(
            f"  {rr['label']}: attention state x{rr['ratio']['attention_state_bytes']:.4g}, "
            f"total state x{rr['ratio']['state_bytes']:.4g}"
        )
    an = m["analytic"]
    if an:
        atts = [r["attention"] for r in an["results"]]
        base = atts[0]
        table(
            f"memory, analytic for the run's model ({' vs '.join(atts)}, batch 1)",
            ["figure", *atts, *[f"/{base}" for a in atts[1:]]],
            [
                [
                    r["figure"],
                    *[fmt_bytes(r["bytes"][a]) for a in atts],
                    *["-" if r[f"ratio_to_{base}"][a] is None else f"{r[f'ratio_to_{base}'][a]:.3f}" for a in atts[1:]],
                ]
                for r in memory_rows(an)
            ],
        )
    for c in m["check"]:
        print(
            f"  check {c['source']} ({c['attention']}): counted attention state {c['counted']} B vs analytic "
            f"{c['analytic']} B: {'agrees' if c['agrees'] else 'DIFFERENT'}"
        )
    for note in m["notes"]:
        print(f"  note: {note}")
