"""spikeport analyze: the seed papers' diagnostics of a trained model (spikeport.analysis.model_analysis)."""

from __future__ import annotations

import argparse
from typing import Any

from spikeport import api
from spikeport.cli._common import (
    command,
    echo,
    emit_json,
    json_flag,
    json_to_stdout,
    output_dir,
    positive_int,
    quiet_flag,
    refuse_flags,
    table,
)

SEQ_LEN = 128  # --hf: tokens per sequence when --seq-len is not given


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "analyze",
        help="token clustering, head correlation and attention locality of a model",
        description="The seed papers' diagnostics of a trained Spikformer or ViT (or a Hugging Face model with "
        "--hf): per block, how much attention stays within a radius of each token (locality), the correlation "
        "between heads, and how similar the token representations become (clustering); analysis.json, plots and "
        "index.html in --out.",
        examples=[
            "spikeport analyze runs/digits-ssa/checkpoint.pt --out analysis/digits-ssa",
            "spikeport analyze --hf bert-base-uncased --text sentences.txt --out analysis/bert",
        ],
    )
    p.add_argument("checkpoint", nargs="?", help="spikeport checkpoint (.pt) of a Spikformer or ViT")
    p.add_argument("--out", type=output_dir, required=True, help="output folder (analysis.json, PNGs, index.html)")
    p.add_argument("--samples", type=positive_int, default=256, help="images to analyse (default 256)")
    p.add_argument("--dataset", help="digits | cifar10 | cifar100 | imagenet (default: the checkpoint's)")
    p.add_argument("--data-dir", help="local dataset folder (CIFAR pickles / ImageNet image folder)")
    p.add_argument("--split", help="test | train (default test)")
    p.add_argument("--batch-size", type=positive_int, default=32)
    p.add_argument(
        "--hf",
        metavar="MODEL",
        help="analyse a Hugging Face model instead (name or local folder; needs `transformers`)",
    )
    p.add_argument("--text", help="--hf: a text file, one sequence per line (default: random token ids)")
    p.add_argument("--seq-len", type=positive_int, help=f"--hf: tokens per sequence (default {SEQ_LEN})")
    json_flag(p, "the analysis (also written to the output folder)")
    quiet_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.hf:
        refuse_flags(
            {"--dataset": args.dataset, "--data-dir": args.data_dir, "--split": args.split},
            "with --hf (a Hugging Face model reads --text or random token ids, not images)",
        )
    else:
        refuse_flags({"--text": args.text, "--seq-len": args.seq_len}, "to a checkpoint (they feed a --hf model)")
    res = api.analyze(
        args.checkpoint,
        args.out,
        hf=args.hf,
        samples=args.samples,
        dataset=args.dataset,
        data_dir=args.data_dir,
        split=args.split or "test",
        batch_size=args.batch_size,
        text=args.text,
        seq_len=SEQ_LEN if args.seq_len is None else args.seq_len,
        progress=not args.quiet,
    )
    emit_json(args, res, "the analysis")
    if json_to_stdout(args):
        return 0
    if not args.quiet:
        print_summary(res)
    echo(f"wrote {', '.join(res['files'])} to {args.out}")
    return 0


def print_summary(res: dict[str, Any]) -> None:
    m = res["model"]
    rows = []
    for b in res["blocks"]:
        for kind, s in b["locality"].items():
            rows.append(
                [
                    f"block {b['block']} {kind}",
                    s["share_within_radius"],
                    s["normalised_entropy"],
                    b["head_correlation"]["mean_offdiag"] if kind == "attention" else "",
                    res["representations"][b["block"]]["cosine"]["mean"] if kind == "attention" else "",
                ]
            )
    for kind, s in res["locality_overall"].items():
        rows.append([f"all {kind}", s["share_within_radius"], s["normalised_entropy"], "", ""])
    radius = next(iter(res["locality_overall"].values()))
    table(
        f"{m['arch']} / {m['attention']} ({res['samples']} samples; uniform share within {radius['radius']}: "
        f"{radius['uniform_share_within_radius']:.3f})",
        ["layer", f"share <= {radius['radius']}", "entropy/logN", "head corr", "token cos"],
        rows,
    )
