"""spikeport check-hw ARTIFACT --profile loihi2: chip-mappable vs host-only processes, cores, chips, the
smallest system that holds them, the spikes that cross chips, broken limits; one verdict line at the end."""

from __future__ import annotations

from spikeport.cli._common import shape_arg


def register(sub) -> None:
    p = sub.add_parser(
        "check-hw", help="hardware readiness: chip-mappable vs host-only processes, cores, chips and system, limits"
    )
    p.add_argument("artifact", help="<name>.spk.h5 (or a lava-dl netx file)")
    p.add_argument("--profile", default="loihi2", help="hardware profile: a shipped name or a .yaml path")
    p.add_argument("--input-shape", type=shape_arg, help="netx files: input shape H,W,C or N (default: from the file)")
    p.add_argument(
        "--run-report",
        metavar="RUN_JSON",
        help="a run report of this artifact (spikeport run --json PATH): its per-layer spike counts give the "
        "spikes that cross chips (default: an assumed firing rate, labelled as such)",
    )
    p.add_argument(
        "--rate",
        type=_rate,
        default=None,
        help="spikes per neuron and step assumed where no run report counts a group (default 0.1)",
    )
    p.add_argument("--json", action="store_true", help="print the check as JSON (schema spikeport.check_hw)")
    p.set_defaults(func=run)


def _rate(text: str) -> float:
    from spikeport.cli._common import finite_float

    value = finite_float(text)
    if not 0 <= value <= 1:
        import argparse

        raise argparse.ArgumentTypeError(f"{text!r} is not a rate in [0, 1]")
    return value


def load_graph(path: str, input_shape: tuple[int, ...] | None):
    from spikeport.ir.netx import graph_from_netx, is_netx_file

    if is_netx_file(path):
        return graph_from_netx(path, input_shape)
    from spikeport.ir import artifact

    if input_shape is not None:
        from spikeport.errors import ConfigError

        raise ConfigError(f"{path}: --input-shape applies to netx files; an artifact holds its input shape")
    return artifact.read(path)


def run(args) -> int:
    from spikeport.cli._common import print_json, table
    from spikeport.hw_profiles import load_profile
    from spikeport.run_report import RunReport
    from spikeport.runtime.loihi2.check_hw import DEFAULT_RATE, check_hw

    prof = load_profile(args.profile)
    run_report = RunReport.from_json(args.run_report) if args.run_report else None
    rate = DEFAULT_RATE if args.rate is None else args.rate
    result = check_hw(load_graph(args.artifact, args.input_shape), prof, run_report, rate)
    d = result.to_dict()
    if args.json:
        print_json(d)
        return 1 if result.violations else 0
    by_layer: dict[str, list] = {}
    for p in result.processes:
        by_layer.setdefault(p.layer, []).append(p)
    groups = result.by_layer()
    rows = []
    for layer, procs in by_layer.items():
        est = groups.get(layer)
        rows.append(
            [
                layer,
                ", ".join(sorted({p.type for p in procs})),
                "/".join(sorted({p.placement for p in procs})),
                est["neurons"] if est else "",
                est["synapses"] if est else "",
                est["stored_weights"] if est else "",
                est["fan_in"] if est else "",
                est["cores"] if est else "",
                est["cores_by"].replace("_per_core", "") if est else "",
                _chips(est["chips"]) if est else "",
                " ".join(f"{s['var']}[{s['bits']}b]" for p in procs for s in p.state) or "-",
                sum(p.state_bytes for p in procs),
            ]
        )
    table(
        f"{args.artifact} on {d['profile']}: {d['totals']['chip_mappable']} chip-mappable, "
        f"{d['totals']['host_only']} host-only processes, ~{d['totals']['cores']} cores",
        [
            "layer",
            "processes",
            "placement",
            "neurons",
            "synapses",
            "weights stored",
            "fan-in",
            "cores",
            "cores set by",
            "chips",
            "state vars",
            "state B",
        ],
        rows,
    )
    for p in result.processes:
        if p.placement == "host":
            print(f"host-only: {p.name} ({p.type}): {p.evidence}")
    print(f"{len(result.boundaries)} host<->chip connections (each needs an adapter on hardware)")
    t = d["totals"]
    print(
        f"{len(t['host_computing'])} computing processes on the host; ~{t['cores']} Loihi 2 cores for the rest "
        f"({t['weights_stored_on_chip']:,} weights stored for {t['synapses_on_chip']:,} synapses)"
    )
    if t["host_computing"]:
        from spikeport.report.summary import fmt_si

        if prof.has("timing", "host_io_step"):
            print(
                f"{len(t['host_computing'])} computing processes on the host ({', '.join(t['host_computing'])}): "
                f"every time step waits for a host round trip, ~{fmt_si(prof.si('timing', 'host_io_step'), 's')} "
                f"per step (estimate: {prof.cite('timing', 'host_io_step')})"
            )
    print(
        f"state held between time steps: {t['state_bytes_on_chip']:,} B on the chip, "
        f"{t['state_bytes_on_host']:,} B in host processes (Var bits of Lava's fixed-point models)"
    )
    _print_chips(result, prof)
    for f in result.findings:
        print(
            f"{f.severity.upper()}: layer '{f.layer}' breaks {d['profile']} rule '{f.rule}': "
            f"{f.value:g} > {f.limit:g} ({f.message})"
        )
    print(result.verdict)
    return 1 if result.violations else 0


def _chips(chips: list[int]) -> str:
    if not chips:
        return ""
    return str(chips[0]) if len(chips) == 1 else f"{chips[0]}-{chips[-1]}"


def _print_chips(result, prof) -> None:
    """The placement on chips and the spikes that cross them (check-hw's model: docs/netx_and_hardware.md)."""
    import math

    from spikeport.metrics.energy import chip_crossing_energy
    from spikeport.report.summary import fmt_si

    if result.cores_per_chip is None:
        return
    per_chip = result.cores_per_chip
    print(
        f"chips: {result.chips} of {per_chip} cores (at least {max(1, math.ceil(result.cores / per_chip))} for "
        f"{result.cores:,} cores; layers placed in order, a layer kept on one chip where it fits)"
    )
    for load in result.chip_loads():
        span = load["first"] if load["first"] == load["last"] else f"{load['first']} .. {load['last']}"
        print(f"  chip {load['chip']}: {load['cores']} cores, {span}")
    traffic = result.traffic
    if traffic is not None and traffic.chips > 1:
        cost, hop = chip_crossing_energy(traffic, prof), prof.get("energy", "spike_chip_hop")
        spread = f", range {hop.range[0]:g}-{hop.range[1]:g} {hop.unit}" if hop and hop.range else ""
        energy = (
            f"; ~{fmt_si(cost.energy_J, 'J')} per inference at {hop.value:g} {hop.unit} a message "
            f"(spike_chip_hop: {hop.confidence}{spread}; its reasoning is in profile {prof.name})"
            if cost.energy_J is not None and hop is not None
            else f"; profile {prof.name} has no spike_chip_hop to price them"
        )
        counted = (
            f"{traffic.measured_share:.0%} of them from the run report's spike counts, the rest at "
            f"{traffic.rate:g} spikes per neuron and step (estimate)"
            if traffic.measured_share
            else traffic.source
        )
        print(
            f"chip-to-chip: ~{traffic.messages_per_step:,.0f} spike messages per time step cross a chip boundary "
            f"({traffic.messages_per_inference:,.0f} per inference; {counted}){energy}"
        )
        top = list(traffic.by_layer.items())[:3]
        if top and traffic.messages_per_step:
            print(
                "  most sent by: " + ", ".join(f"{layer} {sent / traffic.messages_per_step:.0%}" for layer, sent in top)
            )
