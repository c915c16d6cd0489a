"""spikeport run ARTIFACT --backend TARGET: accuracy, per-layer counts, wall time; a thin layer over
spikeport.api.run (the targets: spikeport.runtime.targets.TARGETS)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from spikeport import api, counters
from spikeport.atomic import write_or_fallback
from spikeport.cli._common import (
    command,
    echo,
    json_flag,
    json_to_stdout,
    positive_int,
    quiet_flag,
    refuse_flags,
    shape_arg,
    table,
    warn_stale_report,
)
from spikeport.errors import RankError
from spikeport.report.format import plural

BATCH_SIZE = 64  # the reference simulators' batch when --batch-size is not given: fits the caches

if TYPE_CHECKING:
    from spikeport.run_report import Comparison, RunReport


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    TARGETS = api.targets()

    # "--backend a | b": the targets whose Capabilities take an option, named in its help
    streaming = "--backend " + " | ".join(t.name for t in TARGETS.values() if t.caps.streams)
    devices = "--backend " + " | ".join(t.name for t in TARGETS.values() if t.caps.devices)
    partitions = "--backend " + " | ".join(t.name for t in TARGETS.values() if t.caps.partitions)
    chip = "--backend " + " | ".join(t.name for t in TARGETS.values() if t.caps.chip_drive)

    p = command(
        sub,
        "run",
        help="run a converted artifact on an executor and report counts and accuracy",
        description="Runs an artifact (.spk.h5) on the test images of its data set, or a lava-dl netx file on "
        "--inputs, on one target (--backend: " + ", ".join(TARGETS) + ") and prints per-layer spikes, synops, "
        "MACs and state, the accuracy and the wall time. --compare reference also runs the reference simulator "
        "and checks every spiking layer at every time step (exit status 1 when they differ). --json FILE writes "
        "the run report that `spikeport report` reads. Under torchrun (torchrun --nproc_per_node N -m spikeport "
        "run ...) every target shards the samples over the processes (a Lava network each on lava and loihi2) and "
        "rank 0 writes the one report (docs/cli.md).",
        examples=[
            "spikeport run build/digits-ssa/model.spk.h5 --json reports/ssa-reference.json",
            "spikeport run build/digits-ssa/model.spk.h5 --backend lava --compare reference --samples 24 "
            "--json reports/ssa-lava.json",
            "spikeport run build/digits-ssa/model.spk.h5 --inputs my_images.npy --json mine.json",
            "spikeport run pilotnet_lif.net --inputs image.npy --input-layout netx --input-drive bias --steps 17",
        ],
    )
    p.add_argument("artifact", help="<name>.spk.h5 (or a lava-dl netx .net/.h5 file)")

    targets = "; ".join(
        f"{t.name}: {t.description} (needs {t.needs}{'; on the chip: ' + t.caps.hardware if t.caps.hardware else ''})"
        for t in TARGETS.values()
    )
    p.add_argument("--backend", default="reference", metavar="TARGET", help=f"where it runs: {targets}")
    p.add_argument(
        "--samples",
        type=positive_int,
        help="first N test samples (default: "
        + ", ".join(f"{t.default_samples or 'all'} for {t.name}" for t in TARGETS.values())
        + ")",
    )
    p.add_argument("--dataset", help="override the artifact's dataset")
    p.add_argument("--data-dir", help="dataset folder (CIFAR / ImageNet)")
    self_compare = " | ".join(t.name for t in TARGETS.values() if t.caps.self_compares)
    p.add_argument(
        "--compare",
        choices=("reference",),
        help="also run the reference and diff every layer at every time step (exit status 1 when they differ); "
        f"--backend {self_compare} compares its outputs every step and its read states with the reference on every "
        "run, and prints the verdict the same way",
    )
    json_flag(p, "the run report (schema spikeport.run v1)")
    p.add_argument(
        "--layers",
        action="store_true",
        help="also print the per-layer counts (spikes, synops, MACs, state) and, with --compare, the comparison layer "
        "by layer (the run report holds them too: --json FILE)",
    )
    quiet_flag(p, "progress and no tables: the result line only (and the files written)")
    p.add_argument(
        "--batch-size",
        type=positive_int,
        help=f"the reference simulators' batch (default {BATCH_SIZE}: fits the caches; {streaming} stream one "
        "sample at a time, so there it sizes the --compare reference run only)",
    )
    p.add_argument(
        "--device",
        default="cpu",
        help=f"{devices}: the torch device, cpu, cuda or cuda:N (the reference's integers on a GPU, "
        "float64: exact); --backend reference --device cuda means reference-torch",
    )
    p.add_argument(
        "--partition",
        type=positive_int,
        metavar="N",
        help=f"{partitions}: cut the network into N Lava networks run one after another, each fed with the "
        "recorded spikes of the one before (bit-exact; memory follows the largest part: a spikformer-4-384 needs this "
        "on a 24 GB machine)",
    )
    p.add_argument("--input-shape", type=shape_arg, help="netx files: input shape, e.g. 34,34,2")
    p.add_argument(
        "--inputs",
        help="an artifact: an .npy of your own images [S, H, W, C] (channels-last, normalised as the data set's: "
        "spikeport.api.test_images), run instead of the test images (predictions, no accuracy); netx files: input "
        "spikes [S, T, *input_shape] (or, with --input-drive bias, integer images)",
    )
    p.add_argument(
        "--input-drive",
        choices=list(dict.fromkeys([*api.InputDrive.choices(), *(d.value for d in api.ChipDrive)])),
        default=None,
        help="netx files: 'spikes' feeds 0/1 spikes; 'bias' holds each integer image [S, H, W, C] as the input "
        "neuron's bias for --steps steps (lava-dl's PilotNet/TinyNet tests); 'graded' feeds integers "
        "[S, T, *input_shape] to an SDNN input layer's Delta encoder (lava-dl's PilotNet SDNN test). An artifact on "
        f"{chip}: 'bias' sets the stem's conv result as the first layer's bias (PilotNet-LIF), 'adapter' "
        "streams the pixels through eio.spike.PyToN3ConvAdapter every step (docs/loihi2.md)",
    )
    p.add_argument(
        "--read-state",
        action="append",
        default=[],
        metavar="LAYER",
        help=f"{chip}: a LIF layer whose u / v the hardware plan reads (Var.get) and compares with the "
        "reference after each sample; repeatable",
    )
    p.add_argument("--steps", type=positive_int, help="netx files with --input-drive bias: time steps per sample")
    p.add_argument(
        "--num-layers",
        type=positive_int,
        help="netx files: import only the first N layers (lava-dl's Network(num_layers=N))",
    )
    p.add_argument(
        "--input-layout",
        choices=("spikeport", "slayer", "netx"),
        default="spikeport",
        help="netx files: axis order of --inputs: spikeport channels-last [S, T, H, W, C] / [S, H, W, C]; slayer "
        "[S, C, H, W, T] / [S, C, H, W]; netx lava-dl's (x, y, f[, t]) with optional leading S, as in its gts files",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except RankError:
        # a sharded run (torchrun) raises it on every rank with the same message: rank 0 says it and ends the job
        # with status 2; a rank leaving with an error before rank 0 has said it would have torchrun stop rank 0
        if api.rank():
            return 0
        raise


def _run(args: argparse.Namespace) -> int:
    chosen = api.target(args.backend, args.device)
    if chosen.name == "reference":
        refuse_flags({"--compare": args.compare}, "to --backend reference (it would compare the reference with itself)")
    if chosen.caps.streams and (not args.compare or chosen.caps.self_compares):
        refuse_flags(
            {"--batch-size": args.batch_size},
            f"to --backend {chosen.name} (it streams one sample at a time; the batch sizes a --compare reference run)",
        )
    source = api.source(args.artifact)  # sniffed once: run takes the record
    # one flag for both drives: the file's kind says which it sets (a netx input drive, or the hardware plan's)
    drive = source.kind.drive_option(args.input_drive) if args.input_drive else None
    report = api.run(
        source,
        args.backend,
        args.compare,
        samples=args.samples,
        dataset=args.dataset,
        data_dir=args.data_dir,
        batch_size=BATCH_SIZE if args.batch_size is None else args.batch_size,
        inputs=args.inputs,
        input_shape=args.input_shape,
        input_drive=args.input_drive if drive == "input_drive" else None,
        steps=args.steps,
        input_layout=args.input_layout,
        progress=not args.quiet,
        num_layers=args.num_layers,
        device=args.device,
        partition=args.partition,
        read_states=tuple(args.read_state),
        chip_drive=args.input_drive if drive == "chip_drive" else None,
    )
    if api.rank():  # under torchrun every rank has the whole run's report: rank 0 prints and writes it
        return 0 if report.identical in (None, True) else 1
    if report.artifact_digest:
        warn_stale_report(report.artifact_digest, args.artifact, "run")
    warn_overflows(report)
    note_drive(report)
    if json_to_stdout(args):
        print(report.to_json())  # the JSON alone on stdout
        return 0 if report.identical in (None, True) else 1
    if args.json:
        write_or_fallback(args.json, report.to_json, "the run report")
    echo(result_line(report))  # first, and the one line --quiet keeps: a log shows what the run found
    if not args.quiet:
        if report.compare:
            print_verdict(report.compare, report.executor)
        elif report.hardware is not None and report.hardware.first_mismatch:
            m = report.hardware.first_mismatch
            echo(
                f"FIRST MISMATCH: {mismatch_words(m)}"
                + (f" ({report.executor} {m['value']} vs reference {m['expected']})" if "value" in m else "")
            )
        print_netx_output(report)
        if args.layers:
            print_layers(report)
            if report.compare:
                print_compare(report.compare, report.executor)
        else:
            echo(
                "per-layer spikes, synops, MACs and state"
                + (", and the comparison layer by layer" if report.compare else "")
                + ": --layers"
                + ("" if args.json else " (or the run report: --json FILE)")
            )
    if args.json:
        echo(f"wrote {args.json}")
    return 0 if report.identical in (None, True) else 1


def result_line(report: RunReport) -> str:
    """What a run found, in one line: accuracy, samples, executor, the verdict of a comparison, time and latency,
    each figure saying what it is."""
    samples = plural(report.samples, "sample")
    head = f"accuracy {report.accuracy:.4f} on {samples}" if report.accuracy is not None else f"{samples} run"
    c, hw = report.compare, report.hardware
    verdict = ""
    if c is not None:
        d = c.first_divergence
        if report.identical:
            verdict = ", bit-exact with the reference (every layer, every time step, every prediction)"
        elif d is not None:
            verdict = f", DIFFERS from the reference (first at layer {d['layer']}, time step {d['time_step']})"
        else:
            verdict = ", DIFFERS from the reference (in its predictions)"
    elif hw is not None and report.identical is not None:  # the hardware plan compares itself every run
        read = " and the read states" if hw.states_identical is not None else ""
        if report.identical:
            verdict = f", bit-exact with the reference (its outputs every time step{read}, every prediction)"
        else:
            verdict = f", DIFFERS from the reference ({mismatch_words(hw.first_mismatch)})"
    wall = report.wall_time_s or 0.0
    built = " (the Lava network's build and start included)" if report.lava is not None else ""
    if report.ranks:
        built += f" on {report.ranks} ranks (torchrun; the slowest rank's time)"
    latency = report.latency_timesteps
    pipeline = (
        f" (T = {report.T} + {latency - report.T} steps of pipeline through the layers)"
        if latency is not None and report.T is not None and latency > report.T
        else ""
    )
    return (
        f"{head} ({report.executor}){verdict} | {wall:.2f} s{built}, {rate(report.samples, wall)} | latency "
        f"{latency} time steps from a sample's first input to its last output{pipeline}"
    )


def rate(samples: int, seconds: float) -> str:
    """Samples per second, or seconds per sample where a sample takes more than a second (never "0.0 samples/s")."""
    if seconds <= 0:
        return "time not measured"
    per_s = samples / seconds
    return f"{per_s:.1f} samples/s" if per_s >= 1 else f"{seconds / samples:.1f} s a sample"


def mismatch_words(m: dict[str, Any] | None) -> str:
    """Where the hardware plan first differed from the reference, in words."""
    if not m:
        return "in its outputs"
    if "state" in m:
        return f"first at read state {m['state']}, sample {m['sample']}"
    if "time_step" in m:
        return f"first at output {m['output']}, sample {m['sample']}, time step {m['time_step']}"
    return f"output {m.get('output')} of shape {m.get('shape')}, expected {m.get('expected_shape')}"


def warn_overflows(report: RunReport) -> None:
    """One line on stderr when LIF inputs overflowed (counter ``act_overflows``): the run report alone said so, and
    an artifact whose weight exponent overflows thousands of them ran to "exit 0" without a word."""
    over = sorted(
        ((layer.total("act_overflows"), layer.name) for layer in report.layers if layer.total("act_overflows")),
        reverse=True,
    )
    if over:
        worst = ", ".join(f"{name} {n:,}" for n, name in over[:3]) + (", ..." if len(over) > 3 else "")
        print(
            f"spikeport run: warning: {sum(n for n, _ in over):,} LIF inputs overflowed (|a_in| >= 2**17, which "
            f"Loihi's 24-bit a_in << 6 wraps) in {plural(len(over), 'layer')}: {worst}; the run report counts them "
            "per layer and step (act_overflows)",
            file=sys.stderr,
        )


def note_drive(report: RunReport) -> None:
    """The hardware plan's input drive in one line on stderr, where it is not the bias drive the network would take
    (its samples' biases are past Loihi 2's 13 bits: the adapter drive instead, as `bundle` chooses) or is a bias
    drive the chip could not hold (chosen so): a simulation with 16-bit biases once said "identical" without a word."""
    note = report.hardware.extra.get("drive_note") if report.hardware is not None else None
    if note:
        print(f"spikeport run: note: {note}", file=sys.stderr)


def print_layers(report: RunReport) -> None:
    shown = counters.columns(report.totals or {})  # what the report's tables show; the firing rate after the spikes
    rows = []
    for layer in report.layers:
        if layer.op in ("input", "add"):
            continue
        n = max(layer.neurons * len(layer.spikes) * max(report.samples, 1), 1)
        cells: list[object] = [layer.name, layer.op]
        for c in shown:
            cells.append(layer.total(c.name))
            if c.name == "spikes":
                cells.append(layer.total("spikes") / n if layer.neurons else "")
        rows.append([*cells, layer.state_bytes])
    headings = [h for c in shown for h in ((c.label, "rate") if c.name == "spikes" else (c.label,))]
    table(
        f"run report: executor {report.executor}, {plural(report.samples, 'sample')}, T={report.T}",
        ["layer", "op", *headings, "state bytes"],
        rows,
    )


def print_netx_output(report: RunReport) -> None:
    """A netx network whose result is a value, not a spike count: the output integrator's final v (mnist.net) or
    the Sigma decoder's sums (SDNN), first sample."""
    netx = report.netx
    if netx is not None and netx.output_v is not None:
        echo(f"output: v of the integrator '{netx.output_layer}' at the last step, sample 0: {netx.output_v[0]}")
    elif netx is not None and netx.output is not None:
        echo(f"output: the Sigma decoder '{netx.output_layer}' at the last step, sample 0: {netx.output[0][-1]}")


def print_compare(c: Comparison, executor: str) -> None:
    """The comparison layer by layer (--layers)."""
    silent = set(c.silent())
    table(
        f"{executor} vs reference",
        ["layer", "spikes", "reference", "equal every step", "fired"],
        [
            [
                r.layer,
                r.spikes,
                r.reference_spikes,
                "yes" if r.per_step_equal else "NO",
                "no" if r.layer in silent else "yes",
            ]
            for r in c.layers
        ],
    )


def print_verdict(c: Comparison, executor: str) -> None:
    """The comparison's verdict: where it first differed, and the layers whose agreement proves nothing."""
    silent = set(c.silent())
    d = c.first_divergence
    if d is None and c.prediction_agreement < 1:
        echo(f"identical spikes in every layer at every time step, yet predictions agree {c.prediction_agreement:.2%}")
    elif d is not None:
        echo(
            f"FIRST DIVERGENCE: layer {d['layer']} time step {d['time_step']} sample {d['sample']} neuron "
            f"{d['neuron']} ({executor} {d['values'][1]} vs reference {d['values'][0]}); {d['mismatches']} mismatches"
        )
    if silent:
        echo(
            f"WARNING: {len(silent)} of {len(c.layers)} compared layers never fired in either run, so their "
            f"bit-exactness says nothing: {', '.join(r.layer for r in c.layers if r.layer in silent)}"
        )
