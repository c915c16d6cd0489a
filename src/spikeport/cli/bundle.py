"""spikeport bundle ARTIFACT --out DIR: a folder an INRC member copies to a vLab login VM and runs as it is
(spikeport.api.bundle; what is in it: runtime/loihi2/bundle.py, docs/loihi2.md)."""

from __future__ import annotations

import argparse
import shlex

from spikeport import api
from spikeport.cli._common import (
    command,
    deprecated_alias,
    echo,
    emit_json,
    json_flag,
    json_to_stdout,
    positive_int,
    quiet_flag,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "bundle",
        help="a folder that runs the artifact's hardware plan on Loihi 2 (INRC vLab) as it is, or in simulation",
        description="Writes the artifact, the deploy side of spikeport (no torch), N test samples with the "
        "reference's expected outputs and states, run.sh (Loihi 2 through Lava's host selection where lava-loihi "
        "imports, else the plan's simulation, said on its first line), run.slurm, requirements-deploy.txt and a "
        "README with the commands and what they print. The run writes result.json for `spikeport report`.",
        examples=[
            "spikeport bundle build/digits-lrf_dyn/model.spk.h5 --out bundles/lrf_dyn",
            "spikeport bundle build/digits-ssa/model.spk.h5 --out bundles/ssa --samples 8 --input-drive adapter "
            "--read-state block.0.attn.attn_lif",
        ],
    )
    p.add_argument("artifact", help="<name>.spk.h5")
    p.add_argument("--out", required=True, metavar="DIR", help="the bundle folder to write (new, or --force)")
    p.add_argument("--samples", type=positive_int, default=4, help="test samples to run and check (default 4)")
    p.add_argument("--dataset", help="override the artifact's dataset")
    p.add_argument("--data-dir", help="dataset folder (CIFAR / ImageNet)")
    p.add_argument(
        "--input-drive",
        choices=[d.value for d in api.ChipDrive],
        help="bias (the stem's conv result as the first layer's bias) or adapter (pixels through "
        "PyToN3ConvAdapter every step); default: bias where these samples' biases fit Loihi 2's 13 bits",
    )
    p.add_argument(
        "--read-state", action="append", default=[], metavar="LAYER", help="a LIF layer whose u / v are read and "
        "checked after each sample (Var.get); repeatable",
    )  # fmt: skip
    p.add_argument(
        "--slurm-partition",
        metavar="NAME",
        help="the SLURM partition (default: from check-hw's chips: oheogulch, kp, kp_stack)",
    )
    deprecated_alias(p, "--partition", "--slurm-partition")  # run's --partition N cuts a network into N parts
    p.add_argument("--force", action="store_true", help="replace DIR if it already holds files")
    json_flag(p, "the bundle's manifest (bundle.json)")
    quiet_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    made = api.bundle(
        args.artifact,
        args.out,
        samples=args.samples,
        dataset=args.dataset,
        data_dir=args.data_dir,
        drive=args.input_drive,
        states=tuple(args.read_state),
        slurm_partition=args.slurm_partition,
        force=args.force,
    )
    emit_json(args, made.manifest, "the bundle manifest")
    if args.quiet or json_to_stdout(args):
        return 0
    m = made.manifest
    echo(f"wrote {made.folder}: {m['samples']} samples, input drive {m['drive']} ({m['drive_reason']})")
    echo(f"SLURM partition {m['partition']}; check-hw: {m['verdict'].split(' (')[0]}")
    folder = shlex.quote(str(made.folder))
    echo(f"run it there: bash {folder}/run.sh   (or: cd {folder} && sbatch run.slurm; see README.md there)")
    return 0
