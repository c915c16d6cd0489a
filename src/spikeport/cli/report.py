"""`spikeport report RUN.json [RUN2.json ...]`: per model, energy in one accounting with its ratios, the chip
footprint (cores, synaptic memory, state), the GPU in both modes and the CPU measured here, as terminal tables, JSON
(schema spikeport.report v1) and a self-contained HTML page. Parses flags, calls spikeport.api.report, prints
with spikeport.report.terminal."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from spikeport import api, file_kinds
from spikeport.atomic import write_or_fallback
from spikeport.cli._common import (
    command,
    echo,
    emit_json,
    json_flag,
    json_to_stdout,
    output_file,
    progress_printer,
    quiet_flag,
    refuse_flags,
)
from spikeport.errors import ConfigError, OutputPathError

if TYPE_CHECKING:
    from spikeport.report.model import ReportSummary


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        subparsers,
        "report",
        help="energy per model in one accounting, chip footprint, memory and GPU baseline of run reports; HTML, JSON",
        description="Reads run reports written by `spikeport run ... --json FILE` (any executor) and prints, per model "
        "(the runs of one artifact merged) and per inference: energy with static power on both sides or on neither "
        "(said in the headline, with the ratios between models and against the GPU in both modes, and where the "
        "chip's per-op energies come from), accuracy (float and integer), whether the other executors are bit-exact "
        "with the reference and on how many samples, the chip footprint of the artifact (check-hw: cores, chips, "
        "synaptic memory, chip state, host state), the GPU of the same float network in latency mode (batch 1) and "
        "throughput mode (batch 256; measured with --gpu-bench or on CUDA, else estimated from --gpu profiles) and "
        "ONNX Runtime measured on this CPU. --detail adds each run, the paper's O(d^2) vs O(kd) attention-state claim "
        "and the analytic memory. A run report's artifact is found as written, from the run report's folder, or by "
        "digest; check-hw and the timings are cached. Terms: docs/glossary.md; see docs/reports.md.",
        examples=[
            "spikeport report demo/reports/ssa-reference.json demo/reports/lrf_dyn-reference.json --html report.html",
            "spikeport report demo/reports/*.json --no-gpu --json summary.json",
            "spikeport report run.json --gpu-bench gpu.json        # GPU figures measured on a CUDA machine",
        ],
    )
    p.add_argument("runs", nargs="+", metavar="RUN.json", help="run report(s) (schema spikeport.run v1)")
    p.add_argument(
        "--profile",
        action="append",
        metavar="NAME|FILE.yaml",
        help="hw profile to price op counts with (repeatable; default loihi2 and cmos45nm; a GPU "
        "profile here joins --gpu); the first neuromorphic one is the chip check-hw counts for",
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
    p.add_argument("--no-gpu", dest="gpu_baseline", action="store_false", help="skip the GPU (and CPU) baseline")
    p.add_argument("--no-vit", dest="vit", action="store_false", help="skip the ANN ViT counterpart on the GPU")
    p.add_argument(
        "--no-cpu", dest="cpu", action="store_false", help="skip timing the float network in ONNX Runtime here"
    )
    p.add_argument("--no-chip", dest="chip", action="store_false", help="skip check-hw on the artifacts")
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="a run whose artifact is not found (as written, from the run report's folder, or by digest) is reported "
        "without its chip footprint, with a note (default: an error naming the run report)",
    )
    p.add_argument(
        "--no-cache",
        dest="cache",
        action="store_false",
        help="work out check-hw, the CPU timings, GPU estimates and the analytic memory again instead of reading "
        "them from the report cache ($XDG_CACHE_HOME/spikeport/report, or $SPIKEPORT_CACHE/report)",
    )
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
    p.add_argument(
        "--detail",
        action="store_true",
        help="also print each run (per-layer counts, every estimate, the GPU and CPU tables, model state, notes), the "
        "paper's claim and the analytic memory after the answer (the page folds them)",
    )
    p.add_argument("--html", type=output_file, metavar="FILE", help="write the self-contained HTML page here")
    json_flag(p, "the summary (schema spikeport.report v1)")
    quiet_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    from spikeport.report.terminal import console, render

    for flag, path in (("--json", args.json), ("--html", args.html)):
        if path and file_kinds.sniff(path) is file_kinds.FileKind.RUN_REPORT:  # `report --json a.json b.json`
            raise ConfigError(f"{flag} {path}: is a run report, an input of report; {flag} takes the file to write")
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
        cpu_baseline=args.cpu,
        chip=args.chip,
        allow_missing=args.allow_missing,
        cache=args.cache,
        measure_memory=args.memory,
        integer_inputs=args.integer_inputs,
        first_layer_per_timestep=not args.first_layer_once,
        precision=args.precision,
        progress=progress_printer(args),
    )
    if not args.quiet and not json_to_stdout(args):
        render(summary, console(), detail=args.detail)
    # each output is attempted whatever happens to the other: a page that cannot be written once cost the JSON
    failed = []
    writes = (partial(emit_json, args, summary.to_dict(), "the summary"), partial(_write_page, args, summary))
    for write in writes:
        try:
            write()
        except OutputPathError as err:
            failed.append(err)
    if failed:
        raise failed[0]
    return 0


def _write_page(args: argparse.Namespace, summary: ReportSummary) -> None:
    from spikeport.report.html import write_html

    if args.html:
        write_or_fallback(args.html, lambda path: write_html(summary, path), "the page")
        echo(f"wrote {Path(args.html).resolve()}", file=sys.stderr if json_to_stdout(args) else sys.stdout)
