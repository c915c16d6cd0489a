"""spikeport run ARTIFACT --backend reference|lava|loihi2: accuracy, per-layer counts, wall time."""
from __future__ import annotations

BACKENDS = ("reference", "lava", "loihi2")


def register(sub) -> None:
    p = sub.add_parser("run", help="run a converted artifact on an executor and report counts and accuracy")
    p.add_argument("artifact", help="<name>.spk.h5 (or a lava-dl netx .net/.h5 file)")
    p.add_argument("--backend", default="reference", help=f"one of {', '.join(BACKENDS)}")
    p.add_argument("--samples", type=int, help="first N test samples (default: all for reference, 200 for lava)")
    p.add_argument("--dataset", help="override the artifact's dataset")
    p.add_argument("--data-dir", help="dataset folder (CIFAR / ImageNet)")
    p.add_argument("--compare", choices=("reference",), help="also run the reference and diff every layer")
    p.add_argument("--json", metavar="PATH", help="write the run report (schema spikeport.run v1) here")
    p.add_argument("--batch-size", type=int, default=64, help="reference simulator batch (64: fits the caches)")
    p.add_argument("--input-shape", help="netx files: input shape, e.g. 34,34,2")
    p.add_argument("--inputs", help="netx files: an .npy of input spikes [S, T, *input_shape]")
    p.set_defaults(func=run)


def load_inputs(graph, args, default_samples: int | None):
    from spikeport.runtime.sim.executor import to_channels_last
    from spikeport.train.data import split_tensors

    meta = graph.meta
    dataset = args.dataset or meta.get("dataset", "digits")
    samples = args.samples if args.samples is not None else default_samples
    x, y = split_tensors(dataset, args.data_dir or meta.get("data_dir"), "test", samples,
                   (meta.get("model_config") or {}).get("img_size"))
    return to_channels_last(x.numpy()), y.numpy()


def run(args) -> int:
    from pathlib import Path

    from spikeport.convert.api import write_json_atomic
    from spikeport.errors import unknown_choice
    from spikeport.ir import artifact

    if args.backend not in BACKENDS:
        raise unknown_choice("backend", args.backend, BACKENDS)
    if args.backend == "loihi2":
        from spikeport.runtime.loihi2.backend import require_loihi2

        require_loihi2()                      # fails at once, before loading anything, off INRC systems
    from spikeport.ir.netx import is_netx_file

    report = run_netx_file(args) if is_netx_file(args.artifact) else run_backend(artifact.read(args.artifact), args)
    if args.json:
        write_json_atomic(report, Path(args.json))
    print_summary(report)
    if report.get("compare"):
        print_compare(report["compare"])
    if args.json:
        print(f"wrote {args.json}")
    return 0 if not report.get("compare") or report["compare"]["identical"] else 1


def run_backend(graph, args) -> dict:
    if args.backend == "reference":
        from spikeport.runtime.sim.reference import ReferenceSimulator

        x, y = load_inputs(graph, args, None)
        report = ReferenceSimulator(graph).run(x, y, batch_size=args.batch_size, progress=True)
    else:
        from spikeport.runtime.lava.run import compare_with_reference, reference_spikes, run_lava

        x, y = load_inputs(graph, args, 200)
        if args.backend == "loihi2":
            from spikeport.runtime.loihi2.backend import run_loihi2

            report, spikes = run_loihi2(graph, x, y)
        else:
            report, spikes = run_lava(graph, x, y, progress=True)
        if args.compare:
            ref_report, ref_spikes = reference_spikes(graph, x, args.batch_size)
            report["compare"] = compare_with_reference(graph, report, spikes, ref_report, ref_spikes)
    report["artifact"] = str(args.artifact)
    report["model"]["dataset"] = graph.meta.get("dataset")
    return report


def run_netx_file(args) -> dict:
    """A lava-dl netx file on spike inputs (--inputs [S, T, *shape], --input-shape H,W,C or N)."""
    from spikeport.errors import ConfigError
    from spikeport.runtime.lava.run import compare_with_reference, reference_spikes
    from spikeport.runtime.lava.netx_run import load_spike_inputs, run_netx

    if not args.inputs:
        raise ConfigError(f"{args.artifact} is a netx file: give its input spikes with --inputs SPIKES.npy "
                          f"([S, T, *input_shape], 0/1)")
    shape = tuple(int(s) for s in args.input_shape.split(",")) if args.input_shape else None
    x = load_spike_inputs(args.inputs, shape, args.samples)
    report, spikes = run_netx(args.artifact, x, args.backend, input_shape=shape, batch_size=args.batch_size,
                              progress=args.backend != "reference")
    if args.compare and args.backend != "reference":
        from spikeport.ir.netx import graph_from_netx
        from spikeport.runtime.lava.netx_run import output_predictions

        graph = graph_from_netx(args.artifact, tuple(x.shape[2:]), T=x.shape[1])
        ref_report, ref_spikes = reference_spikes(graph, x, args.batch_size)
        ref_report["predictions"] = output_predictions(graph, ref_spikes)[0]
        report["compare"] = compare_with_reference(graph, report, spikes, ref_report, ref_spikes)
    report["model"]["dataset"] = None
    return report


def print_summary(report: dict) -> None:
    from spikeport.cli._common import table

    rows = []
    for l in report["layers"]:
        if l["op"] in ("input", "add"):
            continue
        n = max(l["neurons"] * len(l["spikes"]) * max(report["samples"], 1), 1)
        rows.append([l["name"], l["op"], sum(l["spikes"]), sum(l["spikes"]) / n if l["neurons"] else "",
                     sum(l["synops"]), sum(l["macs"]), sum(l["dendritic_updates"]), l["state_bytes"]])
    table(f"run report: executor {report['executor']}, {report['samples']} samples, T={report['T']}",
          ["layer", "op", "spikes", "rate", "synops", "MACs", "dendritic upd.", "state bytes"], rows)
    acc = report.get("accuracy")
    print(f"executor {report['executor']}: accuracy {acc:.4f}" if acc is not None else f"executor {report['executor']}",
          f"| {report['samples']} samples in {report['wall_time_s']:.2f} s "
          f"({report['samples'] / max(report['wall_time_s'], 1e-9):.1f} samples/s) "
          f"| latency {report['latency_timesteps']} time steps")


def print_compare(c: dict) -> None:
    from spikeport.cli._common import table

    table("lava-fixed_pt vs reference", ["layer", "spikes", "reference", "equal every step"],
          [[r["layer"], r["spikes"], r["reference_spikes"], "yes" if r["per_step_equal"] else "NO"] for r in c["layers"]])
    d = c["first_divergence"]
    if d is None:
        print(f"bit-exact: identical spikes in every layer at every time step; predictions agree "
              f"{c['prediction_agreement']:.2%}")
    else:
        print(f"FIRST DIVERGENCE: layer {d['layer']} time step {d['time_step']} sample {d['sample']} neuron "
              f"{d['neuron']} (lava {d['values'][1]} vs reference {d['values'][0]}); {d['mismatches']} mismatches")
