"""`spikeport convert`: a checkpoint -> <name>.spk.h5 + <name>.onnx + conversion report, a lava-dl netx file or a
NIR graph -> an artifact (spikeport.api.convert / convert_netx / convert_nir); --list-supported lists the torch
modules it converts."""

from __future__ import annotations

import argparse
from typing import Any

from spikeport import api
from spikeport.cli._common import (
    command,
    deprecated_alias,
    echo,
    emit_json,
    finite_float,
    json_flag,
    json_to_stdout,
    nonnegative_int,
    output_dir,
    positive_int,
    quiet_flag,
    refuse_flags,
    shape_arg,
    table,
    typed,
)
from spikeport.errors import ConfigError
from spikeport.report.format import plural

CALIBRATE = 256  # training samples that calibrate the scales when --calibrate is not given


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "convert",
        help="quantize a trained model to Loihi 2 fixed point (artifact + ONNX + report), or import a netx file",
        description="A spikeport checkpoint: folds BatchNorm and the LIF time constants, calibrates the fixed-point "
        "scales on --calibrate training images, quantizes to Loihi 2's integers, compares torch float, fake-quant "
        "and the reference integer simulator on the test images, exports the float network to ONNX (its "
        "preprocessing in the file's metadata) and writes <name>.spk.h5, <name>.onnx and conversion_report.json "
        "into --out. A lava-dl netx file (.net): its integers as they are (no quantization), with the input drive "
        "and T fixed in the artifact. A NIR graph (.nir: snnTorch, Norse, ...): its primitives mapped onto spikeport's "
        "ops with Euler steps of --dt seconds, the scales calibrated on --inputs (analog samples), float, fake-quant "
        "and the integer reference compared on them (docs/nir.md). A line per stage on stderr (and bars on a "
        "terminal) unless --quiet.",
        examples=[
            "spikeport convert runs/digits-ssa/checkpoint.pt --out build/digits-ssa",
            "spikeport convert runs/cifar-lrf_dyn/checkpoint.pt --calibrate 512 --samples 1000 --json report.json",
            "spikeport convert pilotnet_lif.net --out build/pilotnet   # input drive: bias (an Input block)",
            "spikeport convert snn.nir --out build/snn --inputs x.npy --labels y.npy --dt 1e-4 --steps 16",
            "spikeport convert --list-supported",
        ],
    )
    p.add_argument(
        "checkpoint",
        nargs="?",
        help="a spikeport checkpoint (runs/<name>/checkpoint.pt), a lava-dl netx file (.net) or a NIR graph (.nir)",
    )
    p.add_argument("--out", type=output_dir, metavar="DIR", help="output folder (default build/<run name>)")
    p.add_argument("--name", default="model", help="file stem of the artifact and the ONNX export")
    p.add_argument(
        "--calibrate",
        type=nonnegative_int,
        help=f"training samples used to calibrate scales (0: static; default {CALIBRATE}; NIR graphs: the first N "
        "of --inputs, default all)",
    )
    p.add_argument(
        "--samples",
        type=positive_int,
        default=None,
        help="first N test samples the executors are compared on (the conversion report; default: all)",
    )
    deprecated_alias(p, "--eval-samples", "--samples", type=positive_int)
    p.add_argument("--dataset", help="override the checkpoint's dataset")
    p.add_argument("--data-dir", help="dataset folder (CIFAR / ImageNet)")
    p.add_argument("--no-onnx", dest="onnx", action="store_false", help="skip the ONNX GPU-baseline export")
    p.add_argument(
        "--host-attention",
        action="store_true",
        help="compute SSA / causal attention on the host (AttentionCore, a host<->chip round trip every step) "
        "instead of the chip-native token mixing: a fallback",
    )
    p.add_argument("--list-supported", action="store_true", help="list the torch modules spikeport converts")
    p.add_argument(
        "--layers",
        action="store_true",
        help="also print the per-layer table (weight exponent, quantization error, saturation, a_in wraps, spike "
        "agreement between the executors); the verdict and its summary come first either way, and the conversion "
        "report holds every row (--json FILE)",
    )
    json_flag(p, "the conversion report")
    quiet_flag(p)
    p.add_argument(
        "--input-shape", type=shape_arg, help="netx files: input shape H,W,C or N (default: the file's input layer)"
    )
    p.add_argument(
        "--input-drive",
        choices=api.InputDrive.choices(),
        help="netx files: what the artifact's input is: 0/1 spikes, integer images held as the input neuron's "
        "bias, or graded integers into an SDNN input layer (default: graded for an SDNN input layer, bias for an "
        "Input block with a CUBA neuron, as lava-dl feeds PilotNet-LIF and TinyNet, else spikes)",
    )
    p.add_argument(
        "--steps",
        type=positive_int,
        help="netx files and NIR graphs: time steps per sample (default: the file's tSample / T, else 16)",
    )
    p.add_argument("--num-layers", type=positive_int, help="netx files: import only the first N layers")
    p.add_argument(
        "--inputs",
        metavar="SAMPLES.npy",
        help="NIR graphs: analog samples [S, *input shape] (NIR's layout, fed every step) that calibrate the scales "
        "and that the executors are compared on",
    )
    p.add_argument("--labels", metavar="L.npy", help="NIR graphs: the samples' integer labels [S] (the accuracy)")
    p.add_argument(
        "--dt",
        type=finite_float,
        help="NIR graphs: seconds per time step (default: the graph's metadata dt; snnTorch exports with 1e-4, "
        "norse.torch.to_nir with 1e-3)",
    )
    setattr(p, "bare_usage", True)  # noqa: B010  # `spikeport convert` alone: its usage (CHECKPOINT is optional only with --list-supported)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    checkpoint_flags = {
        "--calibrate": args.calibrate,
        typed(args, "--samples"): args.samples,
        "--dataset": args.dataset,
        "--data-dir": args.data_dir,
        "--no-onnx": not args.onnx,
        "--host-attention": args.host_attention,
    }
    netx_flags = {
        "--input-shape": args.input_shape,
        "--input-drive": args.input_drive,
        "--steps": args.steps,
        "--num-layers": args.num_layers,
    }
    nir_flags = {"--inputs": args.inputs, "--labels": args.labels, "--dt": args.dt}
    if args.list_supported:
        given = {"CHECKPOINT": args.checkpoint, "--out": args.out, "--name": args.name != "model"}
        refuse_flags(
            {**given, **checkpoint_flags, **netx_flags, **nir_flags}, "with --list-supported (it converts nothing)"
        )
        rows = [list(r) for r in api.supported_modules()]
        emit_json(args, [{"module": m, "becomes": b} for m, b in rows], "the supported modules")
        if not (args.quiet or json_to_stdout(args)):
            table("supported torch modules", ["module", "becomes"], rows)
        return 0
    if not args.checkpoint:
        raise ConfigError("convert needs a CHECKPOINT (or --list-supported)")
    if api.is_netx_file(args.checkpoint):
        refuse_flags(
            {**checkpoint_flags, **nir_flags},
            f"to a netx file ({args.checkpoint} holds integers already: nothing to quantize)",
        )
        return _convert_netx(args)
    if api.is_nir_file(args.checkpoint):
        not_nir = {
            "--dataset": args.dataset,
            "--data-dir": args.data_dir,
            "--no-onnx": not args.onnx,
            "--host-attention": args.host_attention,
            "--input-shape": args.input_shape,
            "--input-drive": args.input_drive,
            "--num-layers": args.num_layers,
        }
        refuse_flags(not_nir, f"to a NIR graph ({args.checkpoint}: it runs on --inputs, without an ONNX export)")
        return _convert_nir(args)
    refuse_flags({**netx_flags, **nir_flags}, f"to a checkpoint ({args.checkpoint}): netx-file and NIR flags")
    result = api.convert(
        args.checkpoint,
        args.out,
        name=args.name,
        calibrate=CALIBRATE if args.calibrate is None else args.calibrate,
        samples=args.samples,
        dataset=args.dataset,
        data_dir=args.data_dir,
        onnx=args.onnx,
        host_attention=args.host_attention,
        progress=not args.quiet,
    )
    emit_json(args, result.report, "the conversion report")
    if json_to_stdout(args):
        return 0
    if not args.quiet:
        print_report(result.report, args.layers)
    echo("wrote " + ", ".join(str(f) for f in result.files))
    if result.artifact_path is not None:
        echo(next_steps(str(result.artifact_path)))
    return 0


def next_steps(artifact: str) -> str:
    """What to run on a new artifact, in one line: Lava checked against the reference, then the chip's plan."""
    return (
        f"next: spikeport run {artifact} --backend lava --compare reference --samples 24 --json lava.json  "
        f"(then spikeport check-hw {artifact}; spikeport report lava.json)"
    )


def _convert_netx(args: argparse.Namespace) -> int:
    if not args.out:
        raise ConfigError(f"convert {args.checkpoint}: give the output folder with --out DIR")
    result = api.convert_netx(
        args.checkpoint,
        args.out,
        name=args.name,
        input_shape=args.input_shape,
        input_drive=args.input_drive,
        steps=args.steps,
        num_layers=args.num_layers,
    )
    emit_json(args, result.report, "the conversion report")
    if json_to_stdout(args):
        return 0
    r = result.report
    if not args.quiet:
        table(
            f"netx import of {r['source']} (input {r['input_shape']}, drive {r['input_drive']}, T={r['T']})",
            ["netx layer", "node", "op", "shape"],
            [[x["netx_layer"], x["node"], x["op"], x["shape"]] for x in r["layers"]],
        )
        echo(r["note"])
        if r.get("input_drive_note"):
            echo(r["input_drive_note"])
    echo("wrote " + ", ".join(str(f) for f in result.files))
    return 0


def _convert_nir(args: argparse.Namespace) -> int:
    if not args.out or not args.inputs:
        raise ConfigError(f"convert {args.checkpoint}: a NIR graph needs --out DIR and --inputs SAMPLES.npy")
    result = api.convert_nir(
        args.checkpoint,
        args.out,
        inputs=args.inputs,
        labels=args.labels,
        name=args.name,
        dt=args.dt,
        steps=args.steps,
        calibrate=args.calibrate,
        samples=args.samples,
        progress=not args.quiet,
    )
    emit_json(args, result.report, "the conversion report")
    if json_to_stdout(args):
        return 0
    if not args.quiet:
        print_nir_source(result.report["nir"])
        print_report(result.report, args.layers)
    echo("wrote " + ", ".join(str(f) for f in result.files))
    if result.artifact_path is not None:
        echo(next_steps(str(result.artifact_path)))
    return 0


def print_nir_source(nir: dict[str, Any]) -> None:
    """Where the graph came from and what the 12-bit decays and the mapping do not hold exactly."""
    library = nir["library"] or "library not named in the graph"
    echo(f"NIR graph {nir['file']} ({library}), dt = {nir['dt']:g} s ({nir['dt_from']})")
    echo(f"T = {nir['T']} time steps per sample ({nir['T_from']})")
    table(
        "neurons: NIR dynamics -> Loihi 2 decays (12 bits)",
        ["node", "primitive", "state", "kept per step", "held", "error"],
        [
            [
                n["node"],
                n["primitive"],
                d["state"],
                f"{d['kept_exact']:.6f}",
                f"{d['kept_held']:.6f}",
                f"{d['error']:+.2e}",
            ]
            for n in nir["neurons"]
            for d in n["decays"]
        ],
    )
    for a in nir["approximations"]:
        echo(f"approximated at {a['node']}: {a['what']}")


def print_report(report: dict[str, Any], layers: bool = False) -> None:
    """The verdict (accuracy of each executor, their agreement) and a summary of the layers first; the per-layer
    table with ``layers`` (--layers), else one line saying where it is."""
    c = report.get("comparison") or {}
    if c:
        acc = c["accuracy"]
        echo(
            f"accuracy on {plural(c['samples'], 'test sample')}: torch-float {acc['torch-float']:.4f}, "
            f"torch-fakequant {acc['torch-fakequant']:.4f}, reference {acc['reference']:.4f}; "
            f"fake-quant and reference predictions agree on {c['prediction_agreement_fq_ref']:.2%}"
        )
    shown = [layer for layer in report["layers"] if layer["op"] not in ("input", "add")]
    echo(layer_summary(shown))
    if layers:
        rows = [
            [
                layer["name"],
                layer["op"],
                layer.get("weight_exp", layer.get("sigma_exp", "")),
                layer.get("rel_error", ""),
                layer.get("saturated", ""),
                layer.get("act_overflows", ""),
                layer.get("float_ref_spike_agreement", ""),
                layer.get("fq_ref_mismatches", ""),
            ]
            for layer in shown
        ]
        table(
            "conversion report (executors: torch-float, torch-fakequant, reference)",
            ["layer", "op", "exp / sigma", "quant rel err", "saturated", "a_in wraps", "float=ref spikes", "fq!=ref"],
            rows,
        )
    else:
        echo("per-layer exponents, quantization error, saturation and spike agreement: --layers (or --json FILE)")
    prep = report.get("preprocessing")
    if prep:
        echo(
            f"input: {prep['pixels']}, then (x - mean) / std with mean {prep['mean']}, std {prep['std']} "
            f"({prep['layout']}); the ONNX file carries the same in its metadata"
        )


def layer_summary(layers: list[dict[str, Any]]) -> str:
    """The per-layer table in one line: how many layers, the worst quantization error and where, and the totals of
    what a reader must act on (saturated weights, a_in wraps, fake-quant / reference mismatches)."""

    def total(key: str) -> int:
        return int(sum(layer.get(key) or 0 for layer in layers if isinstance(layer.get(key), (int, float))))

    errors = [(float(x["rel_error"]), x["name"]) for x in layers if isinstance(x.get("rel_error"), (int, float))]
    worst = f"; worst quantization error {max(errors)[0]:.3g} ({max(errors)[1]})" if errors else ""
    agreement = [float(x["float_ref_spike_agreement"]) for x in layers
                 if isinstance(x.get("float_ref_spike_agreement"), (int, float))]  # fmt: skip
    least = (
        f"; float and reference spikes agree on {min(agreement):.2%} in the least-agreeing layer" if agreement else ""
    )
    return (
        f"{plural(len(layers), 'layer')}{worst}; {total('saturated'):,} saturated weights, {total('act_overflows'):,} "
        f"a_in wraps, {total('fq_ref_mismatches'):,} fake-quant / reference spike mismatches{least}"
    )
