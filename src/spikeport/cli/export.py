"""spikeport export ARTIFACT --netx OUT.net: the netx-expressible part of a converted network as a lava-dl netx HDF5
file; spikeport export CHECKPOINT --nir OUT.nir: the NIR-expressible parts of a trained model
(spikeport.api.export_netx / export_nir)."""

from __future__ import annotations

import argparse
from typing import Any

from spikeport import api
from spikeport.cli._common import command, echo, emit_json, json_flag, json_to_stdout, output_file, quiet_flag, table

# load an exported netx file in lava-dl (Python 3.11 needs spikeport's Lava compatibility steps first)
NETX_LOAD = (
    'python -c "from spikeport.runtime.lava.compat import netx_network; '
    "net = netx_network()(net_config='{path}'); print(net)\""
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "export",
        help="export an artifact's netx-expressible part (--netx) or a checkpoint's NIR parts (--nir)",
        description="--netx: the chain of a converted artifact that lava-dl's netx format can hold (dense / conv "
        "synapses into CUBA neurons, flatten), from the spikes of the first node netx cannot express; what is left "
        "out, and why, is listed. Load the file in lava-dl with the command printed at the end (it applies "
        "spikeport's Lava compatibility steps, which Python 3.11 needs). --nir: the float model's SPS stem, MLPs and "
        "readout as NIR, each part checked in norse when it is installed.",
        examples=[
            "spikeport export build/digits-ssa/model.spk.h5 --netx stem.net --json stem.json",
            "spikeport export runs/digits-ssa/checkpoint.pt --nir model.nir",
        ],
    )
    p.add_argument("artifact", help="<name>.spk.h5 for --netx; a checkpoint (runs/<name>/checkpoint.pt) for --nir")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--netx", type=output_file, metavar="OUT.net", help="lava-dl netx HDF5 file to write (from an artifact)"
    )
    target.add_argument(
        "--nir",
        type=output_file,
        metavar="OUT.nir",
        help="NIR file to write (from a checkpoint: the float model's SPS stem, MLPs and readout, checked in norse)",
    )
    json_flag(p, "what was exported and what was left out")
    quiet_flag(p, "tables")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.nir:
        return run_nir(args)
    return run_netx(args)


def run_nir(args: argparse.Namespace) -> int:
    export = api.export_nir(args.artifact, args.nir)
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
    result = api.export_netx(args.artifact, args.netx)
    info = result.to_dict()
    info["artifact"] = str(args.artifact)
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
