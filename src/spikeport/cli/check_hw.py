"""spikeport check-hw ARTIFACT --profile loihi2: chip-mappable vs host-only processes, cores, broken limits
(spikeport.api.check_hw)."""

from __future__ import annotations

from spikeport.cli._common import command, echo, emit_json, json_flag, json_to_stdout, quiet_flag, shape_arg


def register(sub) -> None:
    p = command(
        sub,
        "check-hw",
        help="hardware readiness: chip-mappable vs host-only processes, cores, limits",
        description="Builds the artifact's Lava network (not run) and checks it against a hardware profile: which "
        "processes map to the chip and which stay on the host (and why), neurons, synapses and stored weights, the "
        "cores each neuron group needs and what sets them, the state every process holds between time steps, and "
        "every limit a layer breaks. Exit status 1 when a limit is broken. `spikeport report` shows the same counts "
        "per variant.",
        examples=[
            "spikeport check-hw build/digits-ssa/model.spk.h5",
            "spikeport check-hw build/digits-lrfdyn/model.spk.h5 --profile loihi2 --json hw.json",
            "spikeport check-hw pilotnet_lif.net --input-shape 66,200,3",
        ],
    )
    p.add_argument("artifact", help="<name>.spk.h5 (or a lava-dl netx file)")
    p.add_argument("--profile", default="loihi2", help="hardware profile: a shipped name or a .yaml path")
    p.add_argument("--input-shape", type=shape_arg, help="netx files: input shape H,W,C or N (default: from the file)")
    json_flag(p, "the check (schema spikeport.check_hw)")
    quiet_flag(p, "tables")
    p.set_defaults(func=run)


def run(args) -> int:
    from spikeport import api
    from spikeport.cli._common import table

    result = api.check_hw(args.artifact, args.profile, input_shape=args.input_shape)
    d = result.to_dict()
    emit_json(args, d, "the check")
    if args.quiet or json_to_stdout(args):
        return 1 if result.violations else 0
    by_layer: dict[str, list] = {}
    for p in result.processes:
        by_layer.setdefault(p.layer, []).append(p)
    cores: dict[str, dict] = {}  # per layer, summed over its neuron groups (a lowering may have several)
    for row in result.layers:
        est = cores.setdefault(row["layer"], {**row, "neurons": 0, "synapses": 0, "stored_weights": 0, "cores": 0})
        for key in ("neurons", "synapses", "stored_weights", "cores"):
            est[key] += row[key]
        est["fan_in"] = max(est["fan_in"], row["fan_in"])
    rows = []
    for layer, procs in by_layer.items():
        est = cores.get(layer)
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
            "state vars",
            "state B",
        ],
        rows,
    )
    for p in result.processes:
        if p.placement == "host":
            echo(f"host-only: {p.name} ({p.type}): {p.evidence}")
    echo(f"{len(result.boundaries)} host<->chip connections (each needs an adapter on hardware)")
    t = d["totals"]
    echo(
        f"{len(t['host_computing'])} computing processes on the host; ~{t['cores']} Loihi 2 cores for the rest "
        f"({t['weights_stored_on_chip']:,} weights stored for {t['synapses_on_chip']:,} synapses)"
    )
    if t["host_computing"]:
        from spikeport.hw_profiles import load_profile
        from spikeport.report.format import fmt_si

        prof = load_profile(args.profile)
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
    for f in result.findings:
        echo(
            f"{f.severity.upper()}: layer '{f.layer}' breaks {d['profile']} rule '{f.rule}': "
            f"{f.value:g} > {f.limit:g} ({f.message})"
        )
    echo("OK: no limit of the profile is broken" if not result.violations else f"{len(result.violations)} violation(s)")
    return 1 if result.violations else 0
