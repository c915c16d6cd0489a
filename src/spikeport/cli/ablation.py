"""spikeport ablation: seed 000's ViT vs Spikformer x {baseline, no MLP, no skip} study
(spikeport.analysis.ablation)."""

from __future__ import annotations

import argparse

from spikeport import api
from spikeport.cli._common import (
    command,
    echo,
    emit_json,
    json_flag,
    json_to_stdout,
    nonnegative_int,
    output_dir,
    positive_float,
    positive_int,
    progress_printer,
    quiet_flag,
    table,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "ablation",
        help="seed 000 ablation: ViT and Spikformer x {baseline, no MLP, no skip}",
        description="Trains the ViT and the Spikformer of a preset, each as is, without its MLPs and without its "
        "residual connections (seed 000's Table 1), counts each one's operations on test images, and writes the "
        "accuracy and operation tables (ablation.json, ablation.md, one folder per run) to --out.",
        examples=[
            "spikeport ablation --out ablation/digits --epochs 10",
            "spikeport ablation --preset spikformer-12-384 --dataset cifar10 --variants baseline,no_skip "
            "--out ablation/cifar",
        ],
    )
    p.add_argument(
        "--preset", default="digits-tiny", help="Spikformer preset; the ViT twin is derived (default digits-tiny)"
    )
    p.add_argument("--dataset", help="digits | cifar10 | cifar100 | imagenet (default: the preset's)")
    p.add_argument("--data-dir", help="local dataset folder (CIFAR pickles / ImageNet image folder)")
    p.add_argument("--epochs", type=positive_int, default=30, help="epochs of every run (default 30)")
    p.add_argument("--archs", default="vit,spikformer", help="comma-separated subset of vit,spikformer")
    p.add_argument("--variants", default="baseline,no_mlp,no_skip", help="comma-separated subset")
    p.add_argument(
        "--attention", help="Spikformer attention: ssa | lrf_ssa | lrf_causal | lrf_dyn (default: the preset's)"
    )
    p.add_argument("--T", type=positive_int, help="time steps of the Spikformer")
    p.add_argument("--batch-size", type=positive_int, help="for every run (default: the preset's recipe)")
    p.add_argument("--lr", type=positive_float, help="for every run (default: the preset's recipe)")
    p.add_argument("--seed", type=nonnegative_int, default=42)
    p.add_argument("--count-samples", type=positive_int, default=64, help="test images for the SOP counts (default 64)")
    p.add_argument("--out", type=output_dir, required=True, help="output folder (one subfolder per run)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars (as --quiet)")
    json_flag(p, "the ablation results (also written to the output folder)")
    quiet_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spikeport.analysis.ablation import AblationConfig
    from spikeport.analysis.ablation_report import tables

    def split(s: str) -> tuple[str, ...]:
        return tuple(v.strip() for v in s.split(",") if v.strip())

    model = {k: v for k, v in (("attention", args.attention), ("T", args.T)) if v is not None}
    train = {k: v for k, v in (("batch_size", args.batch_size), ("lr", args.lr)) if v is not None}
    cfg = AblationConfig(
        preset=args.preset,
        dataset=args.dataset,
        data_dir=args.data_dir,
        epochs=args.epochs,
        archs=split(args.archs),
        variants=split(args.variants),
        seed=args.seed,
        model=model,
        train=train,
        count_samples=args.count_samples,
        out=args.out,
        progress=args.progress and not args.quiet,
    )

    res = api.ablation(cfg, log=progress_printer(args) or (lambda msg: None))
    emit_json(args, res, "the ablation results")
    if json_to_stdout(args):
        return 0
    if not args.quiet:
        for title, (cols, rows) in tables(res).items():
            table(title, cols, rows)
    echo(f"wrote {', '.join(res['files'])} to {args.out}")
    return 0
