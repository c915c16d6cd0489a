"""`spikeport train`: train (or resume) a preset on digits / CIFAR / ImageNet; a thin layer over
spikeport.api.train (``--qat``: quantization-aware fine-tuning, through the same call)."""

from __future__ import annotations

import argparse
from typing import Any

from spikeport import api
from spikeport.cli._common import (
    bool_flag,
    command,
    echo,
    emit_json,
    json_flag,
    json_to_stdout,
    nonnegative_int,
    output_dir,
    positive_float,
    positive_int,
    refuse_flags,
)
from spikeport.errors import ConfigError
from spikeport.report.format import plural


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        subparsers,
        "train",
        help="train a Spikformer / ViT preset (digits, CIFAR-10/100, ImageNet)",
        description="Train a preset with its recipe (train/configs/*.yaml), a YAML config and flags "
        "(flags win). Writes checkpoint.pt, metrics.jsonl, curves.png and config.yaml to --out. A line when training "
        "starts and one per epoch on stderr (bars over the batches on a terminal) unless --quiet. --qat fine-tunes "
        "a float checkpoint through the fake-quant executor and writes a fixed-point artifact instead.",
        examples=[
            "spikeport train --preset digits-tiny --attention lrf_dyn --out runs/digits-lrf_dyn",
            "spikeport train --preset spikformer-4-384 --dataset cifar10 --data-dir data/cifar-10-batches-py",
            "spikeport train --preset digits-tiny --qat --init runs/digits-lrf_dyn/checkpoint.pt --out runs/qat",
        ],
    )
    p.add_argument("--preset", help="model preset (default: digits-tiny; see `spikeport info --help`)")
    p.add_argument("--dataset", help="digits | cifar10 | cifar100 | imagenet (default: the preset's)")
    p.add_argument("--data-dir", help="CIFAR python-pickle folder or ImageNet image folder")
    p.add_argument("--attention", help="ssa | lrf_ssa | lrf_causal | lrf_dyn (Spikformer presets)")
    p.add_argument("--config", metavar="YAML", help="training config; keys as in train/configs/*.yaml")
    p.add_argument("--epochs", type=positive_int)
    p.add_argument("--batch-size", type=positive_int)
    p.add_argument("--lr", type=positive_float, help="AdamW peak learning rate")
    p.add_argument(
        "--eval-every",
        type=nonnegative_int,
        metavar="N",
        help="evaluate the test split every N epochs and after the last (default 1; 0: after the last only)",
    )
    p.add_argument("--seed", type=nonnegative_int)
    p.add_argument("--augment", help="augmentation profile: none | light | cifar | imagenet")
    p.add_argument("--out", type=output_dir, metavar="DIR", help="run folder (default: runs/<preset>-<attention>)")
    p.add_argument("--resume", action="store_true", default=None, help="continue from <out>/checkpoint.pt")
    p.add_argument(
        "--amp", action=argparse.BooleanOptionalAction, default=None, help="float16 autocast on CUDA (ignored on CPU)"
    )
    p.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="torch.compile the training step on CUDA (default on: ~2x the step rate after 1-2 min of compiling)",
    )
    p.add_argument(
        "--neuron-backend",
        help="spikingjelly | torch: identical spikes; torch trains ~1.7x faster on a CPU (compiled LIF loops)",
    )
    bool_flag(p, "mlp", "keep / remove the MLP of every block (seed 000 ablation)")
    bool_flag(p, "skip", "keep / remove the residual connections (seed 000 ablation)")
    p.add_argument(
        "--qat",
        action="store_true",
        default=None,
        help="quantization-aware fine-tuning through the fake-quant executor (needs --init)",
    )
    p.add_argument(
        "--qat-epochs", type=positive_int, help="QAT epochs (default 2; with --qat, --epochs N means the same)"
    )
    p.add_argument("--qat-lr", type=positive_float, help="QAT learning rate (default 2e-4)")
    p.add_argument("--init", metavar="CKPT", help="start from these weights (spikeport or official checkpoint)")
    p.add_argument("--device", help="auto | cpu | cuda | cuda:N (default: auto)")
    p.add_argument(
        "--workers", type=nonnegative_int, dest="num_workers", help="DataLoader worker processes (default 0)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars or per-epoch lines")
    json_flag(p, "the result (accuracies, minutes, files)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spikeport.convert.qat import QatResult

    if args.qat and args.epochs is not None:  # QAT runs no float epochs: --epochs can only mean the QAT ones
        if args.qat_epochs is not None and args.qat_epochs != args.epochs:
            raise ConfigError(
                f"--epochs {args.epochs} and --qat-epochs {args.qat_epochs}: with --qat both count QAT epochs"
            )
        args.qat_epochs, args.epochs = args.epochs, None

    model = {
        k: v
        for k, v in (
            ("attention", args.attention),
            ("neuron_backend", args.neuron_backend),
            ("mlp", args.mlp),
            ("skip", args.skip),
        )
        if v is not None
    }
    flags = dict(
        dataset=args.dataset,
        data_dir=args.data_dir,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        eval_every=args.eval_every,
        seed=args.seed,
        augment=args.augment,
        out=args.out,
        resume=args.resume,
        amp=args.amp,
        compile=args.compile,
        qat=args.qat,
        qat_epochs=args.qat_epochs,
        qat_lr=args.qat_lr,
        init=args.init,
        device=args.device,
        num_workers=args.num_workers,
        model=model or None,
        progress=False if args.quiet else None,
        log=False if args.quiet else None,
    )
    cfg = api.train_config(args.preset, args.config, **flags)
    if not cfg.qat:
        refuse_flags({"--qat-epochs": args.qat_epochs, "--qat-lr": args.qat_lr}, "without --qat")
    variant = "vit" if cfg.model.get("arch") == "vit" else cfg.model.get("attention", "ssa")
    if cfg.out is None:
        cfg.out = f"runs/{cfg.preset}-{variant}"
    result = api.train(cfg)
    emit_json(args, _result_json(cfg, result), "the result")
    if json_to_stdout(args):
        return 0
    if isinstance(result, QatResult):
        echo(
            f"{cfg.preset} ({variant}) QAT from {cfg.init}: test accuracy torch-float "
            f"{result.float_acc:.4f}, reference after post-training quantization {result.ptq_acc:.4f}, reference "
            f"after {cfg.qat_epochs} QAT epochs {result.test_acc:.4f}, keeping epoch {result.kept_epoch} (best on "
            f"held-out training images; 0 = the post-training quantized start) ({result.minutes:.2f} min)"
        )
        echo(f"wrote {result.artifact} (run it: spikeport run {result.artifact}), qat_metrics.jsonl, qat_report.json")
        return 0
    last = result.history[-1] if result.history else {}
    rates = last.get("firing_rates", {})
    echo(
        f"{cfg.preset} ({variant}) on {cfg.dataset or 'the preset dataset'}: "
        f"test accuracy {result.test_acc:.4f} (best {result.best_acc:.4f}) after "
        f"{plural(len(result.history), 'epoch')}, "
        f"{result.minutes:.2f} min, {result.params:,} parameters, mean firing rate "
        f"{sum(rates.values()) / max(len(rates), 1):.4f}"
    )
    echo(f"run folder: {result.out}  (checkpoint.pt, metrics.jsonl, curves.png, config.yaml)")
    if result.checkpoint is not None:
        echo(
            f"next: spikeport convert {result.checkpoint} --out build/{cfg.preset}-{variant}  (Loihi 2 fixed point, "
            "the executors compared, ONNX for the GPU baseline)"
        )
    return 0


def _result_json(cfg: Any, result: Any) -> dict[str, Any]:  # a TrainConfig, a TrainResult or QatResult
    """What a script reads back from `spikeport train --json`: accuracies, time, files."""
    if cfg.qat:
        return {
            "kind": "qat",
            "preset": cfg.preset,
            "init": str(cfg.init),
            "float_acc": result.float_acc,
            "ptq_acc": result.ptq_acc,
            "test_acc": result.test_acc,
            "kept_epoch": result.kept_epoch,
            "minutes": result.minutes,
            "artifact": None if result.artifact is None else str(result.artifact),
        }
    return {
        "kind": "float",
        "preset": cfg.preset,
        "dataset": cfg.dataset,
        "test_acc": result.test_acc,
        "best_acc": result.best_acc,
        "epochs": len(result.history),
        "minutes": result.minutes,
        "params": result.params,
        "out": None if result.out is None else str(result.out),
        "checkpoint": None if getattr(result, "checkpoint", None) is None else str(result.checkpoint),
    }
