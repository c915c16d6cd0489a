"""spikeport export ARTIFACT --netx OUT.net: the netx-expressible part of a converted network as a lava-dl
netx HDF5 file (see spikeport.exports.netx); spikeport export CHECKPOINT --nir OUT.nir: the NIR-expressible parts
of a trained model (see spikeport.exports.nir)."""

from __future__ import annotations

from spikeport.cli._common import output_file


def register(sub) -> None:
    p = sub.add_parser(
        "export",
        help="export an artifact's netx-expressible part (--netx) or a checkpoint's NIR parts (--nir)",
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
    p.add_argument("--json", type=output_file, metavar="PATH", help="also write what was exported / left out as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.nir:
        return run_nir(args)
    return run_netx(args)


def run_nir(args) -> int:
    from spikeport.analysis.io import write_json
    from spikeport.exports.nir import export_nir
    from spikeport.train.checkpoint import load_model
    from spikeport.train.data import dataset_of, split_tensors

    model, ckpt = load_model(args.artifact)
    try:
        import norse  # noqa: F401

        images = split_tensors(dataset_of(ckpt, None), None, "test", 16, model.cfg.img_size)[0]
    except ImportError:  # no norse: the parts are written unchecked
        images = None
    export = export_nir(model, args.nir, check_images=images)
    if args.json:
        write_json(export.report, args.json)
    for part in export.report["parts"]:
        print(f"part {part['name']}: {len(part['ir_nodes'])} IR nodes, input {part['input_shape']}")
    print(f"not expressed in NIR: {len(export.report['not_expressed'])} nodes (the report lists why)")
    parity = export.report.get("parity")
    if parity is not None:
        p = parity["float_model"]
        head = p["parts"].get("head", {})
        print(
            f"checked in norse on {parity['samples']} test images against the float model: "
            f"{p['spike_mismatches']:,} spike mismatches of {p['lif_outputs_compared']:,} LIF outputs"
            + (f", head argmax agreement {head['argmax_agreement']:.3f}" if "argmax_agreement" in head else "")
        )
    print(f"load: {export.report['load']}")
    print(f"wrote {export.path} and {export.report_path}" + (f" and {args.json}" if args.json else ""))
    return 0


def run_netx(args) -> int:
    from spikeport.analysis.io import write_json  # torch-free atomic JSON write
    from spikeport.cli._common import table
    from spikeport.exports.netx import export_netx
    from spikeport.ir import artifact

    result = export_netx(artifact.read(args.artifact), args.netx)
    info = result.to_dict()
    info["artifact"] = str(args.artifact)
    if args.json:
        write_json(info, args.json)
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
    reasons: dict[str, list[str]] = {}
    for item in result.left_out:
        reasons.setdefault(item["reason"], []).append(item["name"])
    print("shape in netx/torch order; bias error in LSBs of v (the threshold is vThMant << 6)")
    print(f"left out {len(result.left_out)} nodes:")
    for reason, names in reasons.items():
        shown = ", ".join(names[:4]) + (f", ... (+{len(names) - 4})" if len(names) > 4 else "")
        print(f"  - {shown}: {reason}")
    if not result.exact:
        print(
            "note: netx fixes the CUBA bias exponent at 6; biases that are not multiples of 64 were rounded "
            "(see 'bias inexact'), so the netx file's spikes can differ from spikeport's in those layers"
        )
    print(f"wrote {args.netx}" + (f" and {args.json}" if args.json else ""))
    return 0
