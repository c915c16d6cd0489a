"""spikeport convert: checkpoint -> <name>.spk.h5 + <name>.onnx + conversion report (and --list-supported); a thin
layer over spikeport.api.convert."""

from __future__ import annotations

from spikeport.cli._common import nonnegative_int, output_dir, positive_int, refuse_flags, shape_arg

CALIBRATE = 256  # training samples that calibrate the scales when --calibrate is not given


def register(sub) -> None:
    p = sub.add_parser("convert", help="quantize a trained model to Loihi 2 fixed point (artifact + ONNX + report)")
    p.add_argument(
        "checkpoint", nargs="?", help="a spikeport checkpoint (runs/<name>/checkpoint.pt) or a lava-dl netx file (.net)"
    )
    p.add_argument("--out", type=output_dir, help="output folder (default build/<run name>)")
    p.add_argument("--name", default="model", help="file stem of the artifact and the ONNX export")
    p.add_argument(
        "--calibrate",
        type=nonnegative_int,
        help=f"training samples used to calibrate scales (0: static; default {CALIBRATE})",
    )
    p.add_argument(
        "--eval-samples", type=positive_int, default=None, help="test samples for the parity report (default: all)"
    )
    p.add_argument("--dataset", help="override the checkpoint's dataset")
    p.add_argument("--data-dir", help="dataset folder (CIFAR / ImageNet)")
    p.add_argument("--no-onnx", dest="onnx", action="store_false", help="skip the ONNX GPU-baseline export")
    p.add_argument("--list-supported", action="store_true", help="list the torch modules spikeport converts")
    p.add_argument("--json", action="store_true", help="print the conversion report as JSON")
    p.add_argument(
        "--input-shape", type=shape_arg, help="netx files: input shape H,W,C or N (default: the file's input layer)"
    )
    p.add_argument(
        "--input-drive",
        choices=("spikes", "bias", "graded"),
        help="netx files: what the artifact's input is: 0/1 spikes, integer images held as the input neuron's "
        "bias, or graded integers into an SDNN input layer (default: graded for SDNN files, else spikes)",
    )
    p.add_argument(
        "--steps", type=positive_int, help="netx files: time steps per sample (default: the file's tSample, else 16)"
    )
    p.add_argument("--num-layers", type=positive_int, help="netx files: import only the first N layers")
    p.set_defaults(func=run)


def run(args) -> int:
    from spikeport.cli._common import print_json, table

    checkpoint_flags = {
        "--calibrate": args.calibrate,
        "--eval-samples": args.eval_samples,
        "--dataset": args.dataset,
        "--data-dir": args.data_dir,
        "--no-onnx": not args.onnx,
    }
    netx_flags = {
        "--input-shape": args.input_shape,
        "--input-drive": args.input_drive,
        "--steps": args.steps,
        "--num-layers": args.num_layers,
    }
    if args.list_supported:
        from spikeport.convert.handlers import supported_modules

        given = {"CHECKPOINT": args.checkpoint, "--out": args.out, "--json": args.json, "--name": args.name != "model"}
        refuse_flags({**given, **checkpoint_flags, **netx_flags}, "with --list-supported (it converts nothing)")
        table("supported torch modules", ["module", "becomes"], [list(r) for r in supported_modules()])
        return 0
    if not args.checkpoint:
        from spikeport.errors import ConfigError

        raise ConfigError("convert needs a CHECKPOINT (or --list-supported)")
    from spikeport import api
    from spikeport.ir.netx import is_netx_file

    if is_netx_file(args.checkpoint):
        refuse_flags(
            checkpoint_flags, f"to a netx file ({args.checkpoint} holds integers already: nothing to quantize)"
        )
        return _convert_netx(args)
    refuse_flags(netx_flags, f"to a checkpoint ({args.checkpoint}): netx-file flags")
    result = api.convert(
        args.checkpoint,
        args.out,
        name=args.name,
        calibrate=CALIBRATE if args.calibrate is None else args.calibrate,
        eval_samples=args.eval_samples,
        dataset=args.dataset,
        data_dir=args.data_dir,
        onnx=args.onnx,
    )
    if args.json:
        print_json(result.report)
        return 0
    print_report(result.report)
    print("wrote " + ", ".join(str(f) for f in result.files))
    return 0


def _convert_netx(args) -> int:
    from spikeport import api
    from spikeport.cli._common import print_json, table

    if not args.out:
        from spikeport.errors import ConfigError

        raise ConfigError(f"convert {args.checkpoint}: give the output folder with --out DIR")
    shape = args.input_shape
    result = api.convert_netx(
        args.checkpoint,
        args.out,
        name=args.name,
        input_shape=shape,
        input_drive=args.input_drive,
        steps=args.steps,
        num_layers=args.num_layers,
    )
    if args.json:
        print_json(result.report)
        return 0
    r = result.report
    table(
        f"netx import of {r['source']} (input {r['input_shape']}, drive {r['input_drive']}, T={r['T']})",
        ["netx layer", "node", "op", "shape"],
        [[x["netx_layer"], x["node"], x["op"], x["shape"]] for x in r["layers"]],
    )
    print(r["note"])
    print("wrote " + ", ".join(str(f) for f in result.files))
    return 0


def print_report(report: dict) -> None:
    from spikeport.cli._common import table

    rows = []
    for layer in report["layers"]:
        if layer["op"] in ("input", "add"):
            continue
        rows.append(
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
        )
    table(
        "conversion report (executors: torch-float, torch-fakequant, reference)",
        ["layer", "op", "exp / sigma", "quant rel err", "saturated", "a_in wraps", "float=ref spikes", "fq!=ref"],
        rows,
    )
    c = report.get("comparison") or {}
    if c:
        acc = c["accuracy"]
        print(
            f"accuracy on {c['samples']} test samples: torch-float {acc['torch-float']:.4f}, "
            f"torch-fakequant {acc['torch-fakequant']:.4f}, reference {acc['reference']:.4f}; "
            f"fake-quant and reference predictions agree on {c['prediction_agreement_fq_ref']:.2%}"
        )
