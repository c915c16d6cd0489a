"""`spikeport demo`: train -> convert -> reference + Lava (bit-exact check) -> report, on digits. A thin layer
over spikeport.demo.run_demo."""

from __future__ import annotations

import argparse

from spikeport.cli._common import nonnegative_int, output_dir, positive_int


def register(subparsers) -> None:
    from spikeport.cli._common import one_line_errors

    p = one_line_errors(
        subparsers.add_parser(
            "demo",
            help="the whole pipeline on the embedded digits data set, in minutes on a CPU",
            description="Trains digits-tiny with SSA and LRF-Dyn attention, converts both to Loihi 2 fixed point, "
            "runs the reference integer simulator on the whole test split and the Lava CPU simulator "
            "(fixed_pt) on a subset, checks that they agree bit for bit, and writes an HTML + JSON "
            "report (energy estimates, GPU baseline, state memory). See docs/demo.md.",
        )
    )
    p.add_argument("--out", type=output_dir, default="demo", metavar="DIR", help="output folder (default: demo)")
    p.add_argument(
        "--attention",
        action="append",
        metavar="NAME",
        help="attention variant to train (repeatable; default: ssa and lrf_dyn)",
    )
    p.add_argument(
        "--epochs",
        type=nonnegative_int,
        default=6,
        help="training epochs per model (default 6; 0: the full digits recipe, 10 epochs)",
    )
    p.add_argument("--lava-samples", type=positive_int, default=24, help="test samples run on Lava (default 24)")
    p.add_argument(
        "--profile",
        action="append",
        metavar="NAME|FILE.yaml",
        help="hw profile pricing the op counts (repeatable; default loihi2 and cmos45nm)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from spikeport.demo import DemoConfig, run_demo

    cfg = DemoConfig(
        out=args.out,
        attentions=tuple(args.attention or ("ssa", "lrf_dyn")),
        epochs=args.epochs or None,
        lava_samples=args.lava_samples,
        profiles=tuple(args.profile or ("loihi2", "cmos45nm")),
    )
    result = run_demo(cfg, say=lambda msg: print(msg, file=sys.stderr, flush=True))
    print_result(result)
    return 0


def print_result(result) -> None:
    from spikeport.cli._common import table
    from spikeport.report.summary import fmt_bytes, fmt_si

    rows = []
    for m in result.models:
        a = m.accuracy
        rows.append(
            [
                m.attention,
                f"{m.train_minutes:.2f}",
                f"{a['torch-float']:.4f}",
                f"{a['torch-fakequant']:.4f}",
                f"{a['reference (all)']:.4f}",
                f"{a['lava-fixed_pt (subset)']:.4f} ({m.lava_samples})",
                "yes" if m.lava_identical else "NO",
                f"{len(m.hardware['host_computing'])} / ~{m.hardware['cores']}",
            ]
        )
    table(
        "accuracy on the digits test split (360 images)",
        [
            "attention",
            "train min",
            "torch-float",
            "fake-quant",
            "reference",
            "lava-fixed_pt (n)",
            "lava == reference",
            "Loihi 2: host computing / cores",
        ],
        rows,
    )
    erows = []
    for run in result.summary["runs"]:
        if run["executor"] != "reference":
            continue
        loihi = next((e for e in run["energy"] if e["profile"] == "loihi2" and e["method"] == "native"), None)
        gpu = next((b for b in run["gpu"] if b.get("network") == "snn" and b.get("energy_J")), None)
        sm = run["state_memory"]
        gpu_text = ratio = "-"
        if gpu:
            floor = (gpu.get("details") or {}).get("energy_idle_floor_J")
            span = [floor, gpu["energy_J"]] if floor and gpu["kind"] == "estimated" else [gpu["energy_J"]]
            gpu_text = f"{' .. '.join(fmt_si(v, 'J') for v in span)} ({gpu['kind']}, {gpu['device']})"
            if loihi:
                ratio = " .. ".join(f"{v / loihi['energy_J']:,.0f}x" for v in span)
        erows.append(
            [
                run["attention"],
                fmt_si(loihi["energy_J"], "J") if loihi else "-",
                gpu_text,
                ratio,
                fmt_bytes(sm["attention_state_bytes"]),
                fmt_bytes(sm["state_bytes"]),
            ]
        )
    table(
        "per inference (counts by the reference simulator, whole test split)",
        [
            "attention",
            "Loihi 2 energy (estimated)",
            "GPU energy, same float network, batch 1",
            "GPU / Loihi 2",
            "attention state",
            "all state",
        ],
        erows,
    )
    print(
        "an estimated GPU figure spans idle power x latency .. TDP x latency (roofline latency at batch 1, "
        "launch-bound for a model this small)"
    )
    print("energy figures are estimates (op counts x hw profile); read the caveats in the report before quoting")
    print(f"demo finished in {result.minutes:.1f} min; report: {result.html.resolve()} (JSON: {result.json})")
