"""`spikeport demo`: train -> convert -> reference + Lava (bit-exact check) -> report, on digits. A thin layer
over spikeport.demo.run_demo."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from spikeport.cli._common import (
    command,
    deprecated_alias,
    echo,
    nonnegative_int,
    output_dir,
    positive_int,
    quiet_flag,
    table,
)

if TYPE_CHECKING:
    from spikeport.demo import DemoResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        subparsers,
        "demo",
        help="the whole pipeline on the embedded digits data set, in minutes on a CPU",
        description="Trains digits-tiny with SSA and LRF-Dyn attention, converts both to Loihi 2 fixed point, "
        "runs the reference integer simulator on the whole test split and the Lava CPU simulator "
        "(fixed_pt) on a subset, checks that they agree bit for bit, and writes an HTML + JSON "
        "report (what differs on the chip: cores, synaptic memory and state per variant; energy estimates; the GPU "
        "in latency and throughput mode beside ONNX Runtime measured here). Each step is a call of spikeport.api "
        "(spikeport.demo.run_demo). See docs/demo.md.",
        examples=[
            "spikeport demo",
            "spikeport demo --out /tmp/demo --epochs 0          # the full digits recipe (10 epochs)",
            "spikeport demo --attention lrf_ssa --attention lrf_dyn --samples 64",
        ],
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
    p.add_argument(
        "--samples",
        type=positive_int,
        default=24,
        help="first N test samples run on Lava (default 24; the reference runs all 360)",
    )
    deprecated_alias(p, "--lava-samples", "--samples", type=positive_int)
    p.add_argument(
        "--profile",
        action="append",
        metavar="NAME|FILE.yaml",
        help="hw profile pricing the op counts (repeatable; default loihi2 and cmos45nm)",
    )
    quiet_flag(p, "progress lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    from spikeport.demo import DemoConfig, run_demo

    cfg = DemoConfig(
        out=args.out,
        attentions=tuple(args.attention or ("ssa", "lrf_dyn")),
        epochs=args.epochs or None,
        lava_samples=args.samples,
        profiles=tuple(args.profile or ("loihi2", "cmos45nm")),
        verbose=not args.quiet,
    )
    say = (lambda msg: None) if args.quiet else (lambda msg: echo(msg, file=sys.stderr, flush=True))
    result = run_demo(cfg, say=say)
    print_result(result)
    return 0


def print_result(result: DemoResult) -> None:
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
                f"{a['lava-fixed_pt (subset)']:.4f}",
                "yes" if m.lava_identical else "NO",
                f"{len(m.hardware['host_computing'])} / ~{m.hardware['cores']}" if m.hardware else "-",
            ]
        )
    tests = sorted({m.test_samples for m in result.models if m.test_samples})
    lava = sorted({m.lava_samples for m in result.models})
    split = f"{' / '.join(map(str, tests))} images" if tests else "all images"
    first = " / ".join(map(str, lava))
    table(
        f"accuracy on the digits test split ({split}; Lava on the first {first}), and check-hw on Loihi 2",
        [
            "attention",
            "training (min)",
            "torch-float",
            "fake-quant",
            "reference",
            f"lava-fixed_pt (first {first})",
            "lava == reference",
            "Loihi 2: computing processes on the host / cores",
        ],
        rows,
    )
    # the report's first screen, as `spikeport report` prints it
    from spikeport.report import tables
    from spikeport.report.terminal import console, print_table, say

    con = console()
    con.print()
    for line in result.summary.headline:
        say(con, line)
    print_table(con, tables.answer(result.summary))
    print_table(con, tables.memory_story(result.summary))
    echo("energy figures are estimates (op counts x hw profile); read the caveats in the report before quoting")
    echo(f"demo finished in {result.minutes:.1f} min; report: {result.html.resolve()} (JSON: {result.json})")
