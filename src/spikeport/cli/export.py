"""spikeport export ARTIFACT --netx OUT.net: the netx-expressible part of a converted network as a lava-dl netx HDF5
file; spikeport export CHECKPOINT --nir OUT.nir / --onnx OUT.onnx: the NIR-expressible parts, or the float model as
ONNX, of a trained model (spikeport.api.export_netx / export_nir / export_onnx). Which file the positional is
follows from the format, and a file of the other kind is refused naming both."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from spikeport import api, file_kinds
from spikeport.cli._common import (
    command,
    echo,
    emit_json,
    json_flag,
    json_to_stdout,
    output_file,
    positive_int,
    quiet_flag,
    refuse_flags,
    table,
)
from spikeport.errors import ConfigError

# load an exported netx file in lava-dl (Python 3.11 needs spikeport's Lava compatibility steps first)
NETX_LOAD = (
    'python -c "from spikeport.runtime.lava.compat import netx_network; '
    "net = netx_network()(net_config='{path}'); print(net)\""
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "export",
        help="export an artifact's netx-expressible part (--netx), or a checkpoint as NIR parts (--nir) or ONNX",
        description="--netx (reads an artifact): the chain of a converted artifact that lava-dl's netx format can hold "
        "(dense / conv synapses into CUBA neurons, flatten), from the spikes of the first node netx cannot express; "
        "what is left out, and why, is listed. Load the file in lava-dl with the command printed at the end (it "
        "applies spikeport's Lava compatibility steps, which Python 3.11 needs). --nir (reads a checkpoint): the float "
        "model's SPS stem, MLPs and readout as NIR, each part checked in norse when it is installed. --onnx (reads a "
        "checkpoint): the whole float model as ONNX, the file convert writes beside its artifact (the GPU baseline, "
        "its preprocessing in the metadata), checked in ONNX Runtime against torch on 64 test images.",
        examples=[
            "spikeport export build/digits-ssa/model.spk.h5 --netx stem.net --json stem.json",
            "spikeport export runs/digits-ssa/checkpoint.pt --nir model.nir",
            "spikeport export runs/digits-ssa/checkpoint.pt --onnx model.onnx --batch-size 1",
        ],
    )
    p.add_argument(
        "source",
        metavar="FILE",
        help="what is exported: an artifact (<name>.spk.h5) for --netx; a checkpoint (runs/<name>/checkpoint.pt) for "
        "--nir and --onnx",
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--netx", type=output_file, metavar="OUT.net", help="lava-dl netx HDF5 file to write (FILE: an artifact)"
    )
    target.add_argument(
        "--nir",
        type=output_file,
        metavar="OUT.nir",
        help="NIR file to write (FILE: a checkpoint; the float model's SPS stem, MLPs and readout, checked in norse)",
    )
    target.add_argument(
        "--onnx",
        type=output_file,
        metavar="OUT.onnx",
        help="ONNX file to write (FILE: a checkpoint; the whole float model, checked in ONNX Runtime)",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        help="--onnx: a fixed batch (the file then holds batch-sized initial states: larger); default a symbolic one",
    )
    p.add_argument("--opset", type=positive_int, help="--onnx: the ONNX opset, 14..20 (default 17)")
    p.add_argument(
        "--form",
        choices=("parallel", "recurrent"),
        help="--onnx: the attention's form, parallel (the GPU's, default) or recurrent (token by token)",
    )
    json_flag(p, "what was exported and what was left out")
    quiet_flag(p, "tables")
    p.set_defaults(func=run)


# what each format reads, and the flags that read the other kind of file
READS = {
    "--netx": (file_kinds.ARTIFACT_ONLY, "--nir or --onnx export a checkpoint"),
    "--nir": (file_kinds.CHECKPOINTS, "--netx exports an artifact"),
    "--onnx": (file_kinds.CHECKPOINTS, "--netx exports an artifact"),
}


def run(args: argparse.Namespace) -> int:
    flag = "--netx" if args.netx else "--nir" if args.nir else "--onnx"
    refuse_flags(
        {"--batch-size": args.batch_size, "--opset": args.opset, "--form": args.form} if flag != "--onnx" else {},
        f"to {flag} (they shape the ONNX file)",
    )
    accepted, other = READS[flag]
    kind = file_kinds.sniff(args.source)
    if kind is not None and kind not in accepted:
        raise ConfigError(
            f"{args.source}: export {flag} reads {file_kinds.EXPECTED[accepted]}; this is "
            f"{file_kinds.KINDS[kind].what} ({other}"
            + (": spikeport convert it first for --netx)" if kind is file_kinds.FileKind.CHECKPOINT else ")")
        )
    if args.nir:
        return run_nir(args)
    if args.onnx:
        return run_onnx(args)
    return run_netx(args)


def run_onnx(args: argparse.Namespace) -> int:
    given = {"batch_size": args.batch_size, "opset": args.opset, "inference_form": args.form}
    export = api.export_onnx(args.source, args.onnx, **{k: v for k, v in given.items() if v is not None})
    info = {
        "schema": "spikeport.export_onnx",
        "schema_version": 1,
        "checkpoint": str(args.source),
        **{k: str(v) if k == "path" else v for k, v in asdict(export).items()},
    }
    emit_json(args, info, "the export report")
    if json_to_stdout(args):
        return 0
    if not args.quiet:
        batch = "a symbolic batch" if export.batch_size == "dynamic" else f"batch {export.batch_size}"
        echo(
            f"ONNX opset {export.opset}, {batch}, input {export.input_shape} ('images'), output 'logits', "
            f"the attention in its {export.inference_form} form; {export.file_bytes:,} bytes"
        )
        check = export.check
        if check is not None:
            echo(
                f"checked in ONNX Runtime against torch on {check['samples']} test images: argmax agreement "
                f"{check['argmax_agreement']:.3f}, logits within tolerance on {check['samples_within_tolerance']:.1%}"
                f" of the samples (max difference {check['max_abs_diff']:.2g}; docs/exports.md says why a spike "
                "can flip)"
            )
        else:
            echo("not checked (onnxruntime is not installed)")
    echo(f"wrote {export.path}")
    return 0


def run_nir(args: argparse.Namespace) -> int:
    export = api.export_nir(args.source, args.nir)
    emit_json(args, export.report, "the export report")
    out = print if not (args.quiet or json_to_stdout(args)) else (lambda *a: None)
    for part in export.report["parts"]:
        out(f"part {part['name']}: {len(part['ir_nodes'])} IR nodes, input {part['input_shape']}")
    out(f"not expressed in NIR: {len(export.report['not_expressed'])} nodes (the report lists why)")
    parity = export.report.get("parity")
    if parity is not None:
        p = parity["float_model"]
        head = p["parts"].get("head", {})
        out(
            f"checked in norse on {parity['samples']} test images against the float model: "
            f"{p['spike_mismatches']:,} spike mismatches of {p['lif_outputs_compared']:,} LIF outputs"
            + (f", head argmax agreement {head['argmax_agreement']:.3f}" if "argmax_agreement" in head else "")
        )
    if not (args.quiet or json_to_stdout(args)):
        print(f"load: {export.report['load']}")  # not wrapped: a command to copy
    if not json_to_stdout(args):
        echo(f"wrote {export.path} and {export.report_path}")
    return 0


def run_netx(args: argparse.Namespace) -> int:
    result = api.export_netx(args.source, args.netx)
    info = result.to_dict()
    info["artifact"] = str(args.source)
    info["load"] = NETX_LOAD.format(path=args.netx)
    emit_json(args, info, "the export report")
    if json_to_stdout(args):
        return 0
    if not args.quiet:
        table(
            f"{args.netx}: {len(result.layers)} netx layers, input = spikes of '{result.source}' "
            f"{'x'.join(map(str, result.input_shape))}",
            ["layer", "type", "neuron", "shape", "weights", "bias inexact", "max bias error"],
            [
                [
                    f"layer/{layer.index}",
                    layer.type,
                    layer.neuron,
                    "x".join(map(str, layer.shape)),
                    f"[{layer.weight_range[0]}, {layer.weight_range[1]}]",
                    layer.bias_inexact,
                    layer.bias_max_error,
                ]
                for layer in result.layers
            ],
        )
        echo("shape in netx/torch order; bias error in LSBs of v (the threshold is vThMant << 6)")
        _print_left_out(result.left_out)
        if not result.exact:
            echo(
                "note: netx fixes the CUBA bias exponent at 6; biases that are not multiples of 64 were rounded "
                "(see 'bias inexact'), so the netx file's spikes can differ from spikeport's in those layers"
            )
        echo("load it in lava-dl (one line: spikeport's Lava compatibility steps, then lava-dl's netx):")
        print(f"  {info['load']}")  # not wrapped: a command to copy
    echo(f"wrote {args.netx}")
    return 0


def _print_left_out(left_out: list[dict[str, Any]]) -> None:
    if not left_out:
        echo("left out: nothing (every node of the artifact is in the netx file)")
        return
    reasons: dict[str, list[str]] = {}
    for item in left_out:
        reasons.setdefault(item["reason"], []).append(item["name"])
    echo(f"left out {len(left_out)} node{'s' if len(left_out) != 1 else ''}:")
    for reason, names in reasons.items():
        shown = ", ".join(names[:4]) + (f", ... (+{len(names) - 4})" if len(names) > 4 else "")
        echo(f"  - {shown}: {reason}")
