"""spikeport calibrate RUN.json ... --out PROFILE.yaml: fit a neuromorphic profile's energy constants to measured
run reports (spikeport.api.calibrate; the method: src/spikeport/metrics/calibrate.py, docs/energy.md)."""

from __future__ import annotations

import argparse

from spikeport import api
from spikeport.cli._common import command, echo, emit_json, json_flag, json_to_stdout, output_file, quiet_flag


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "calibrate",
        help="fit a neuromorphic profile's per-op energies, static power and time step to measured run reports, "
        "or its core model to compile tables",
        description="Reads run reports that carry a measured energy split (static and dynamic joules per inference, "
        "time per step: a bundle's result.json on Loihi 2, or a published measurement attached to the counts of the "
        "same network), prices their counts with the base profile and writes a profile whose per-op energies are "
        "scaled by one least-squares factor, whose static power and time step are the measured means, with the fit's "
        "provenance in its 'calibration' section. With one run the fit reproduces it by construction. With "
        "--compile-table, refits check-hw's core model (the profile's core_model section) on what Lava's Loihi 2 "
        "compiler printed: a bundle's result.json from a run on the chip, or a public table by name "
        "(pilotnet_lif, pilotnet_sdnn, oxford, mnist, yolo_kp), and reports each table's cores before and after.",
        examples=[
            "spikeport calibrate bundle/result.json --out loihi2-mine.yaml",
            "spikeport calibrate build/pilotnet/pilotnet_lif_measured.json --profile loihi2 --out loihi2-pilotnet.yaml",
            "spikeport calibrate --compile-table bundle/result.json --compile-table pilotnet_lif --out mine.yaml",
        ],
    )
    p.add_argument(
        "runs", nargs="*", metavar="RUN_JSON", help="measured run reports (spikeport run --json, result.json)"
    )
    p.add_argument(
        "--compile-table",
        action="append",
        default=[],
        metavar="TABLE",
        help="refit the core model on this compile table: a bundle's result.json from Loihi 2, or a public table's "
        "name (NAME=NETWORK.net where its network is not found); repeatable",
    )
    p.add_argument(
        "--check-table",
        action="append",
        default=[],
        metavar="TABLE",
        help="report the refitted core model on this table too, without fitting on it; repeatable",
    )
    p.add_argument("--profile", default="loihi2", help="the base profile: a shipped name or a .yaml path")
    p.add_argument("--out", required=True, type=output_file, metavar="PROFILE.yaml", help="the profile to write")
    p.add_argument("--name", help="the written profile's name (default: <base>-calibrated)")
    json_flag(p, "the fit: scale and, per run, measured and estimated joules")
    quiet_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.compile_table:
        if args.runs:
            raise SystemExit("spikeport calibrate: error: give run reports or --compile-table, one fit at a time")
        return _refit_cores(args)
    if not args.runs:
        raise SystemExit("spikeport calibrate: error: give measured run reports (RUN_JSON) or --compile-table")
    cal = api.calibrate(args.runs, args.out, profile=args.profile, name=args.name)
    fit = {"profile": cal.profile.name, "scale": cal.scale, "runs": [p.to_dict() for p in cal.points]}
    emit_json(args, fit, "the fit")
    if args.quiet or json_to_stdout(args):
        return 0
    echo(f"per-op energies x {cal.scale:.4g} (least squares over {len(cal.points)} run(s))")
    for point in cal.points:
        before, after = point.estimated_dynamic * 1e3, point.estimated_dynamic * cal.scale * 1e3
        echo(
            f"  {point.source}: measured dynamic {point.measured_dynamic * 1e3:.4g} mJ, estimated {before:.4g} mJ "
            f"before the fit, {after:.4g} mJ after"
        )
    echo(f"wrote {args.out} (profile {cal.profile.name}; use it with --profile {args.out})")
    return 0


def _refit_cores(args: argparse.Namespace) -> int:
    fitted = api.calibrate_cores(
        args.compile_table, args.out, profile=args.profile, name=args.name, check=args.check_table
    )
    emit_json(args, fitted.to_dict(), "the fit")
    if args.quiet or json_to_stdout(args):
        return 0
    changed = [f"{k} {fitted.base[k]} -> {v}" for k, v in fitted.constants.items() if v != fitted.base[k]]
    echo(f"core model refitted on {', '.join(fitted.fitted_on)}: {'; '.join(changed) or 'the constants stand'}")
    for table, e in fitted.to_dict()["tables"].items():
        role = "fitted on" if e["fitted_on"] else "checked on"
        echo(
            f"  {table} ({role}): {e['cores_model']:,} cores for the compiler's {e['cores_compiler']:,} "
            f"({e['cores_error']:+.1%}); {e['rows_off']} of {e['rows']} rows off; SynMem allocations "
            f"{e['allocation_error']:.1%} off on average"
        )
    echo(f"wrote {args.out} (use it with --profile {args.out})")
    return 0
