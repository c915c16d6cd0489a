"""spikeport analyze: the seed papers' diagnostics of a trained model (spikeport.analysis.model_analysis)."""

from __future__ import annotations

from spikeport.cli._common import output_dir, positive_int, refuse_flags

SEQ_LEN = 128  # --hf: tokens per sequence when --seq-len is not given


def register(sub) -> None:
    p = sub.add_parser("analyze", help="token clustering, head correlation and attention locality of a model")
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
    p.set_defaults(func=run)


def run(args) -> int:
    from spikeport.errors import ConfigError

    if bool(args.checkpoint) == bool(args.hf):
        raise ConfigError("give either a CHECKPOINT or --hf MODEL")
    if args.samples < 1:
        raise ConfigError(f"--samples must be >= 1 (got {args.samples})")
    if args.hf:
        from spikeport.analysis.hf import analyze_hf

        refuse_flags(
            {"--dataset": args.dataset, "--data-dir": args.data_dir, "--split": args.split},
            "with --hf (a Hugging Face model reads --text or random token ids, not images)",
        )
        res = analyze_hf(
            args.hf,
            args.out,
            samples=args.samples,
            seq_len=SEQ_LEN if args.seq_len is None else args.seq_len,
            text_file=args.text,
            batch_size=args.batch_size,
        )
    else:
        from spikeport.analysis.model_analysis import analyze_checkpoint

        refuse_flags({"--text": args.text, "--seq-len": args.seq_len}, "to a checkpoint (they feed a --hf model)")
        res = analyze_checkpoint(
            args.checkpoint,
            args.out,
            samples=args.samples,
            data_dir=args.data_dir,
            dataset=args.dataset,
            split=args.split or "test",
            batch_size=args.batch_size,
            progress=True,
        )
    print_summary(res)
    print(f"wrote {', '.join(res['files'])} to {args.out}")
    return 0


def print_summary(res: dict) -> None:
    from spikeport.cli._common import table

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
