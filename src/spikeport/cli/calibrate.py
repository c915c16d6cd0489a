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
        help="fit a neuromorphic profile's per-op energies, static power and time step to measured run reports",
        description="Reads run reports that carry a measured energy split (static and dynamic joules per inference, "
        "time per step: a bundle's result.json on Loihi 2, or a published measurement attached to the counts of the "
        "same network), prices their counts with the base profile and writes a profile whose per-op energies are "
        "scaled by one least-squares factor, whose static power and time step are the measured means, with the fit's "
        "provenance in its 'calibration' section. With one run the fit reproduces it by construction.",
        examples=[
            "spikeport calibrate bundle/result.json --out loihi2-mine.yaml",
            "spikeport calibrate build/pilotnet/pilotnet_lif_measured.json --profile loihi2 --out loihi2-pilotnet.yaml",
        ],
    )
    p.add_argument(
        "runs", nargs="+", metavar="RUN_JSON", help="measured run reports (spikeport run --json, result.json)"
    )
    p.add_argument("--profile", default="loihi2", help="the base profile: a shipped name or a .yaml path")
    p.add_argument("--out", required=True, type=output_file, metavar="PROFILE.yaml", help="the profile to write")
    p.add_argument("--name", help="the written profile's name (default: <base>-calibrated)")
    json_flag(p, "the fit: scale and, per run, measured and estimated joules")
    quiet_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
