"""spikeport export ARTIFACT --netx OUT.net: the netx-expressible part of a converted network as a lava-dl
netx HDF5 file (see spikeport.exports.netx)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("export", help="export the netx-expressible part of an artifact as a lava-dl netx file")
    p.add_argument("artifact", help="<name>.spk.h5")
    p.add_argument("--netx", metavar="OUT.net", required=True, help="netx HDF5 file to write")
    p.add_argument("--json", metavar="PATH", help="also write what was exported / left out as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
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
