"""`spikeport neurobench ARTIFACT`: NeuroBench's metrics on the float model beside spikeport's integer counts of the
artifact, on the same test images; a thin layer over spikeport.api.neurobench (baselines/neurobench.py)."""

from __future__ import annotations

import argparse

from spikeport import api
from spikeport.cli._common import (
    command,
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
        "neurobench",
        help="NeuroBench's metrics on the float model beside spikeport's integer counts, same test images",
        description="Runs the neurobench package (the field's shared benchmark harness) on the float model an "
        "artifact was converted from: its static metrics (footprint, connection sparsity, parameters) and workload "
        "metrics (activation sparsity, synaptic operations, membrane updates, accuracy) on the first N test images, "
        "and the reference executor on the artifact on the same images; prints each metric beside spikeport's "
        "nearest figure, their ratio and why they differ, so that spikeport's figures compare with published "
        "NeuroBench results (docs/reports.md).",
        examples=[
            "spikeport neurobench build/digits-lrf_dyn/model.spk.h5",
            "spikeport neurobench build/c10/model.spk.h5 --checkpoint runs/c10/checkpoint.pt --json nb.json",
        ],
    )
    p.add_argument("artifact", help="<name>.spk.h5 converted from a checkpoint")
    p.add_argument(
        "--checkpoint", metavar="CKPT", help="the float model (default: the checkpoint it was converted from)"
    )
    p.add_argument("--samples", type=positive_int, default=64, help="first N test images (default 64)")
    p.add_argument("--batch-size", type=positive_int, default=16, help="NeuroBench's batch (default 16)")
    json_flag(p, "the comparison (schema spikeport.neurobench)")
    quiet_flag(p, "progress lines: the table only")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = api.neurobench(
        args.artifact,
        checkpoint=args.checkpoint,
        samples=args.samples,
        batch_size=args.batch_size,
        progress=progress_printer(args),
    )
    emit_json(args, result.to_dict(), "the comparison")
    if json_to_stdout(args):
        return 0
    rows = [
        [
            r.metric,
            _figure(r.neurobench, r.unit),
            _figure(r.spikeport, r.unit),
            "-" if r.ratio is None else f"{r.ratio:.3g}x",
            r.why,
        ]
        for r in result.rows
    ]
    table(
        f"NeuroBench {result.neurobench_version} on the float model ({result.checkpoint}) vs spikeport's reference on "
        f"the artifact, {result.samples} test images, per inference",
        ["metric", "NeuroBench (float)", "spikeport (integer)", "spikeport / NeuroBench", "why they differ"],
        rows,
        notes=[f"spikeport's figures: {r.metric}: {r.spikeport_figure}" for r in result.rows] + result.notes,
    )
    return 0


def _figure(value: float | None, unit: str) -> str:
    """A share with 4 decimals, a count or bytes whole."""
    if value is None:
        return "-"
    return f"{value:.4f}" if unit.startswith("share") else f"{value:,.0f}"
