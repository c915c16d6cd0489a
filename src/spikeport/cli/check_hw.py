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
    p.add_argument(
        "--layers",
        action="store_true",
        help="the table per layer: its processes, the block a core holds, cores and what sets them, the lower bound",
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
    if args.layers:
        _print_layers(result, args.artifact)
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


def _print_layers(result: Any, artifact: str) -> None:  # result: api.check_hw's HwCheck
    """One row per layer: its processes, where they go, the block a core holds and the cores it takes (the core
    model's cut), what sets them and the lower bound, the chips and the state it keeps."""
    by_layer: dict[str, list[Any]] = {}
    for p in result.processes:
        by_layer.setdefault(p.layer, []).append(p)
    groups = result.by_layer()
    rows = []
    for layer, procs in by_layer.items():
        est = groups.get(layer)
        cores = ""
        if est:
            cores = f"{est['cores']}" + (f"-{est['cores_high']}" if est["cores_high"] > est["cores"] else "")
        rows.append(
            [
                layer,
                ", ".join(sorted({p.type for p in procs})),
                "/".join(sorted({p.placement for p in procs})),
                est["neurons"] if est else "",
                est["stored_weights"] if est else "",
                est["fan_in"] if est else "",
                "x".join(str(b) for b in est["block"]) if est else "",
                cores,
                est["bound_by"] if est else "",
                f"{est['lower_bound']:.1f}" if est else "",
                _chips(est["chips"]) if est else "",
                " ".join(f"{s['var']}[{s['bits']}b]" for p in procs for s in p.state) or "-",
                sum(p.state_bytes for p in procs),
            ]
        )
    d = result.to_dict()["totals"]
    table(
        f"{artifact} on {result.profile}: {d['chip_mappable']} chip-mappable, {d['host_only']} host-only processes, "
        f"{result.size}",
        [
            "layer",
            "processes",
            "placement",
            "neurons",
            "weights stored",
            "fan-in",
            "block a core",
            "cores",
            "set by",
            "lower bound",
            "chips",
            "state vars",
            "state B",
        ],
        rows,
        optional=(4, 5, 11, 12),
    )


def _print_floor(result: Any) -> None:  # result: api.check_hw's HwCheck
    """The cores against the lower bound, what sets the bound and what the core model rests on
    (docs/netx_and_hardware.md, "The core model")."""
    floor = result.floor
    if floor is None:
        return
    cited = {lim.key: lim for lim in floor.limits}
    basis = "; ".join(
        f"{lim.value:,.0f} {what} a core"
        for what, lim in zip(("neurons", "SynMem units", "AxonIn"), cited.values(), strict=False)
    )
    parts = ", ".join(f"{what} {cores:,}" for what, cores in floor.by_budget.items() if cores)
    echo(
        f"lower bound: {floor.cores:,} cores ({parts}; the float model's own layers {floor.model:,}, the lowering's "
        f"additions {floor.lowering:,}): each group's neurons, synapses stored once and input axons over a core's "
        f"budget ({basis})"
    )
    echo(
        f"cores: {result.size}, {result.ratio:.2f}x the lower bound: the blocks Lava's Loihi 2 compiler cuts "
        "(powers of two, a kernel copied to every core of a channel block, the partitioner's splits), every group "
        "on cores of its own"
    )
    source = next(iter(cited.values())).source if cited else ""
    echo(f"  core model: {source}")
    if result.extrapolated:
        named = sorted({r["type"] for r in result.layers if r["extrapolated"]})
        echo(
            f"  extrapolated (no public compile table covers them): {', '.join(named)}; the range "
            f"{result.cores:,}-{result.cores_high:,} takes their neurons at 1-2x a CUBA neuron's share of a core "
            "and their synapses at 1-2x the fitted formats"
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
