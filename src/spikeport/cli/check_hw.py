"""spikeport check-hw ARTIFACT --profile loihi2: chip-mappable vs host-only processes, cores, chips, the
smallest system that holds them, the spikes that cross chips, broken limits; one verdict line at the end
(spikeport.api.check_hw)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from spikeport import api
from spikeport.cli._common import (
    command,
    echo,
    emit_json,
    finite_float,
    json_flag,
    json_to_stdout,
    quiet_flag,
    shape_arg,
    table,
)
from spikeport.report.format import fmt_si

if TYPE_CHECKING:
    from spikeport.hw_profiles import HwProfile


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "check-hw",
        help="hardware readiness: chip-mappable vs host-only processes, cores, chips and system, limits",
        description="Builds the artifact's Lava network (not run) and checks it against a hardware profile: which "
        "processes map to the chip and which stay on the host (and why), neurons, synapses and stored weights, the "
        "cores each neuron group needs and what sets them, the state every process holds between time steps, and "
        "every limit a layer breaks. Exit status 1 when a limit is broken. `spikeport report` shows the same counts "
        "per variant.",
        examples=[
            "spikeport check-hw build/digits-ssa/model.spk.h5",
            "spikeport check-hw build/digits-lrf_dyn/model.spk.h5 --profile loihi2 --json hw.json",
            "spikeport check-hw build/c10/model.spk.h5 --run-report lava.json   # measured chip crossings",
            "spikeport check-hw pilotnet_lif.net --input-shape 66,200,3",
        ],
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
    p.add_argument(
        "--input-drive",
        choices=[d.value for d in api.ChipDrive],
        help="how the hardware plan feeds the input: bias (the stem's conv result as the first layer's bias, as "
        "Intel's PilotNet-LIF; the default where the network has such a stem) or adapter (the pixels streamed every "
        "step through eio.spike.PyToN3ConvAdapter)",
    )
    p.add_argument(
        "--read-state",
        action="append",
        default=[],
        metavar="LAYER",
        help="a LIF layer whose u and v the plan reads after each sample (Var.get); repeatable",
    )
    json_flag(p, "the check (schema spikeport.check_hw)")
    quiet_flag(p, "tables")
    p.set_defaults(func=run)


def _rate(text: str) -> float:
    value = finite_float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a rate in [0, 1]")
    return value


def run(args: argparse.Namespace) -> int:
    from spikeport.hw_profiles import load_profile

    prof = load_profile(args.profile)
    rate = {} if args.rate is None else {"rate": args.rate}  # check-hw's default where none is given
    result = api.check_hw(
        args.artifact,
        prof,
        input_shape=args.input_shape,
        run_report=args.run_report,
        drive=args.input_drive,
        states=args.read_state,
        **rate,
    )
    d = result.to_dict()
    source = api.artifact_source(args.artifact)  # where the artifact came from: a NIR graph, a netx file, a checkpoint
    if source is not None:
        d["source"] = source
    emit_json(args, d, "the check")
    if args.quiet or json_to_stdout(args):
        return 1 if result.violations else 0
    if source is not None:
        library = f", {source['library']}" if source.get("library") else ""
        echo(f"source: {source['kind']} {source['file']}{library}")
    by_layer: dict[str, list[Any]] = {}
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
                f"{est['floor']:.1f}" if est else "",
                est["cores"] if est else "",
                f"{est['share']:.1f}" if est else "",
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
            "floor",
            "cores alone",
            "packed",
            "cores set by",
            "chips",
            "state vars",
            "state B",
        ],
        rows,
    )
    for p in result.processes:
        if p.placement == "host":
            echo(f"host-only: {p.name} ({p.type}): {p.evidence}")
    _print_plan(d["plan"])
    t = d["totals"]
    echo(
        f"{len(t['host_computing'])} computing processes on the host; ~{t['cores']} Loihi 2 cores for the rest "
        f"({t['weights_stored_on_chip']:,} weights stored for {t['synapses_on_chip']:,} synapses)"
    )
    if t["host_computing"]:
        if prof.has("timing", "host_io_step"):
            echo(
                f"{len(t['host_computing'])} computing processes on the host ({', '.join(t['host_computing'])}): "
                f"every time step waits for a host round trip, ~{fmt_si(prof.si('timing', 'host_io_step'), 's')} "
                f"per step (estimate: {prof.cite('timing', 'host_io_step')})"
            )
    echo(
        f"state held between time steps: {t['state_bytes_on_chip']:,} B on the chip, "
        f"{t['state_bytes_on_host']:,} B in host processes (Var bits of Lava's fixed-point models)"
    )
    _print_floor(result)
    _print_chips(result, prof)
    for f in result.findings:
        echo(
            f"{f.severity.upper()}: layer '{f.layer}' breaks {d['profile']} rule '{f.rule}': "
            f"{f.value:g} > {f.limit:g} ({f.message})"
        )
    echo(result.verdict)
    return 1 if result.violations else 0


def _print_plan(plan: dict[str, Any] | None) -> None:
    """The hardware plan: how the input and outputs cross to the host, what crosses every step, known pitfalls."""
    if plan is None:
        return
    traffic = plan["host_traffic"]
    echo(
        f"hardware plan (input drive {plan['drive']}; {plan['embedded_io']} when simulated): "
        f"{traffic['values_per_step']:,} values ({traffic['bytes_per_step']:,} B) cross host<->chip every step, "
        f"{traffic['values_per_sample']:,} ({traffic['bytes_per_sample']:,} B) once a sample"
    )
    for b in plan["boundaries"]:
        arrow = (
            f"{b['host']} -> {b['chip']}"
            if b["adapter"] != "eio.spike.NxToPyAdapter"
            else f"{b['chip']} -> {b['host']}"
        )
        bits = f"{b['message_bits']}-bit" if b["message_bits"] else "spikes"
        echo(f"  {b['adapter']}: {arrow}, {b['values']:,} {bits} values a {b['per']} ({b['source']})")
    for line in plan["warnings"]:
        echo(f"WARNING: {line}")
    for pit in plan["pitfalls"]:
        echo(f"PITFALL: {pit['what']} at {pit['where']}: {pit['message']} ({pit['source']})")


LIMIT_WORDS = {
    "neurons_per_core": "neurons",
    "synaptic_memory_per_core": "synaptic memory",
    "fan_in_axons_per_core": "input axons",
}
LIMIT_UNITS = {
    "neurons_per_core": (1, "neurons"),
    "synaptic_memory_per_core": (1024, "KiB"),
    "fan_in_axons_per_core": (1, "axons"),
}


def _print_floor(result: Any) -> None:  # result: api.check_hw's HwCheck
    """The lower bound on cores, what sets it and on what it rests; the float model's share, the lowering's
    additions and the placement's own overhead; the packing (docs/netx_and_hardware.md, "The floor and the
    packing")."""
    floor = result.floor
    if floor is None:
        return
    cited = {lim.key: lim for lim in floor.limits}
    parts = []
    for key, cores in sorted(floor.totals.items(), key=lambda kv: -kv[1]):
        lim = cited.get(key)
        per, unit = LIMIT_UNITS.get(key, (1, ""))
        basis = f" at {lim.value / per:,.0f} {unit} a core ({lim.confidence})" if lim is not None else ""
        parts.append(f"{LIMIT_WORDS.get(key, key)} {cores:,.1f}{basis}")
    echo(f"floor: {floor.cores:,} cores, set by {LIMIT_WORDS.get(floor.by, floor.by)} ({'; '.join(parts)})")
    lowering_neurons = sum(row["neurons"] for row in result.layers) - sum(row["model_neurons"] for row in result.layers)
    echo(
        f"  the float model's own neurons and weighted synapses: {floor.model:,.1f} cores "
        f"({LIMIT_WORDS.get(floor.model_by, floor.model_by)}); the lowering's additions (coincidence pairs, products, "
        f"relays, partial sums, delay lines: {lowering_neurons:,} neurons): +{floor.lowering:,.1f}"
    )
    packed = (
        f"up to {result.groups_per_core} neuron groups a core, in {len(result.runs)} runs"
        if result.groups_per_core
        else "every group on cores of its own (the profile sets no neuron_groups_per_core)"
    )
    echo(
        f"placement: {result.cores:,} cores, {result.ratio:.2f}x the floor (+{result.cores - floor.cores:,} for the "
        f"placement; {result.cores_alone:,} with every group on cores of its own); {packed}"
    )


def _chips(chips: list[int]) -> str:
    if not chips:
        return ""
    return str(chips[0]) if len(chips) == 1 else f"{chips[0]}-{chips[-1]}"


def _print_chips(result: Any, prof: HwProfile) -> None:  # result: api.check_hw's HwCheck
    """The placement on chips and the spikes that cross them (check-hw's model: docs/netx_and_hardware.md)."""
    from spikeport.metrics.energy import chip_crossing_energy

    if result.cores_per_chip is None:
        return
    per_chip = result.cores_per_chip
    echo(
        f"chips: {result.chips} of {per_chip} cores (at least {max(1, math.ceil(result.cores / per_chip))} for "
        f"{result.cores:,} cores; layers placed in order, a layer kept on one chip where it fits)"
    )
    for load in result.chip_loads():
        span = load["first"] if load["first"] == load["last"] else f"{load['first']} .. {load['last']}"
        echo(f"  chip {load['chip']}: {load['cores']} cores, {span}")
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
        echo(
            f"chip-to-chip: ~{traffic.messages_per_step:,.0f} spike messages per time step cross a chip boundary "
            f"({traffic.messages_per_inference:,.0f} per inference; {counted}){energy}"
        )
        top = list(traffic.by_layer.items())[:3]
        if top and traffic.messages_per_step:
            echo(
                "  most sent by: " + ", ".join(f"{layer} {sent / traffic.messages_per_step:.0%}" for layer, sent in top)
            )
