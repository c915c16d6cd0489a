"""The seed 000 ablation (its Sec. 5): ViT and Spikformer x {baseline, no MLP, no skip}, trained with
identical hyperparameters through ``spikeport.train.api.train``; Table 1 (parameters and operation
counts), Table 2 (final epoch), Table 3 (best epoch), training curves.

The ViT of a Spikformer preset is derived so that both see the same token grid: ``arch='vit'`` with
``patch_size = img_size / grid side`` (digits-tiny: 8x8 tokens, patch 1; CIFAR presets: patch 4, which is
seed 000's vit-12-384). Every run writes its own folder ``<out>/<arch>-<variant>/`` (checkpoint,
metrics); a finished run found there is reused, so an interrupted study resumes where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from spikeport.errors import ConfigError, unknown_choice
from spikeport.train.presets import DEFAULT_DATASET, PRESETS, preset_config

VARIANTS = {"baseline": {}, "no_mlp": {"mlp": False}, "no_skip": {"skip": False}}
ARCHS = ("vit", "spikformer")
LABELS = {"baseline": "Baseline", "no_mlp": "No MLP", "no_skip": "No Skip Connections"}
SCHEMA, SCHEMA_VERSION = "spikeport.ablation", 1


@dataclass
class AblationConfig:
    preset: str = "digits-tiny"  # the Spikformer preset; the ViT twin is derived from it
    dataset: str | None = None  # default: the preset's
    data_dir: str | None = None
    epochs: int = 30
    archs: tuple[str, ...] = ARCHS
    variants: tuple[str, ...] = tuple(VARIANTS)
    seed: int = 42
    model: dict = field(default_factory=dict)  # ModelConfig overrides for every run (attention, T, ...)
    train: dict = field(default_factory=dict)  # TrainConfig fields for every run (batch_size, lr, ...)
    count_samples: int = 64  # test images for the operation counts (SOPs need real inputs)
    top5_samples: int = 10000  # test images for the final top-5 when the history has none
    out: str = "ablation"
    progress: bool = True

    def __post_init__(self) -> None:
        self.archs, self.variants = tuple(self.archs), tuple(self.variants)
        for a in self.archs:
            if a not in ARCHS:
                raise unknown_choice("ablation arch", a, ARCHS)
        for v in self.variants:
            if v not in VARIANTS:
                raise unknown_choice("ablation variant", v, tuple(VARIANTS))
        if self.epochs < 1:
            raise ConfigError(f"epochs = {self.epochs}: expected >= 1")
        if self.train.get("eval_every", 1) != 1:  # the curves and the best epoch need every epoch's test figures
            raise ConfigError(
                f"ablation train.eval_every = {self.train['eval_every']}: the ablation evaluates every epoch"
            )


def vit_overrides(preset: str, dataset: str | None, model: dict) -> dict:
    """ModelConfig overrides turning the preset into a ViT with the Spikformer's token grid."""
    spec = preset_config(preset, dataset, **{k: v for k, v in model.items() if k != "attention"})
    if spec.arch == "vit":
        return {}
    side = spec.grid[0]
    if spec.img_size % side:
        raise ConfigError(f"preset {preset}: image size {spec.img_size} is not a multiple of the token grid {side}")
    return {"arch": "vit", "patch_size": spec.img_size // side}


def _top5(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, batch: int = 128) -> float:
    from spikeport.train.models import Spikformer, ViT
    from spikeport.train.neurons import reset_net

    assert isinstance(model, (Spikformer, ViT))  # load_model builds one of the two
    model.eval()
    hits = 0
    k = min(5, int(model.cfg.num_classes))
    for s in range(0, len(images), batch):
        with torch.no_grad():
            reset_net(model)
            top = model(images[s : s + batch]).topk(k, -1).indices
        hits += int((top == labels[s : s + batch, None]).any(-1).sum())
    return hits / len(images)


def _run_one(
    cfg: AblationConfig,
    arch: str,
    variant: str,
    images: torch.Tensor,
    labels: torch.Tensor,
    log: Callable[[str], object],
) -> dict:
    from spikeport.analysis.opcount import count_ops
    from spikeport.train import checkpoint as ckpt_io
    from spikeport.train.api import train

    model_over = dict(cfg.model)
    if arch == "vit":
        model_over.pop("attention", None)
        model_over.update(vit_overrides(cfg.preset, cfg.dataset, cfg.model))
    model_over.update(VARIANTS[variant])
    run_dir = Path(cfg.out) / f"{arch}-{variant}"
    path = run_dir / "checkpoint.pt"
    t0 = time.perf_counter()
    done = None
    if path.is_file():
        ck = ckpt_io.load(path)
        if int(ck.get("epoch", 0)) >= cfg.epochs and ck.get("history"):
            done = ck
    if done is None:
        log(f"[ablation] training {arch} {variant} for {cfg.epochs} epochs -> {run_dir}")
        train(
            preset=cfg.preset,
            dataset=cfg.dataset,
            data_dir=cfg.data_dir,
            epochs=cfg.epochs,
            seed=cfg.seed,
            model=model_over,
            out=str(run_dir),
            progress=cfg.progress,
            resume=path.is_file(),
            **cfg.train,
        )
        done = ckpt_io.load(path)
    else:
        log(f"[ablation] reusing the finished run in {run_dir}")
    model, _ = ckpt_io.load_model(path)
    history = list(done["history"])
    ops = count_ops(model, images[: cfg.count_samples])
    best = max(range(len(history)), key=lambda i: history[i]["test_acc"])
    final_top5 = history[-1].get("test_top5", _top5(model, images, labels))

    def row(h: dict, top5: float | None) -> dict:
        return {
            "epoch": h["epoch"],
            "train_loss": h["train_loss"],
            "val_loss": h["test_loss"],
            "top1": h["test_acc"],
            "top5": top5,
        }

    return {
        "arch": arch,
        "variant": variant,
        "name": f"{'ViT' if arch == 'vit' else 'Spikformer'} {LABELS[variant]}",
        "run_dir": str(run_dir),
        "model_config": done["model_config"],
        "ops": ops,
        "final": row(history[-1], final_top5),
        "best": row(history[best], history[best].get("test_top5", final_top5 if best == len(history) - 1 else None)),
        "curves": [
            {k: h[k] for k in ("epoch", "train_loss", "train_acc", "test_loss", "test_acc") if k in h} for h in history
        ],
        "seconds": time.perf_counter() - t0,
    }


def run_ablation(cfg: AblationConfig, log: Callable[[str], object] = print) -> dict:
    """Train (or reuse) every arch x variant, count operations, write ablation.json/.md, curves.png, index.html."""
    from spikeport.analysis.ablation_report import write_report
    from spikeport.train.data import split_tensors

    if cfg.preset not in PRESETS:
        raise unknown_choice("preset", cfg.preset, sorted(PRESETS))
    dataset = cfg.dataset or DEFAULT_DATASET[cfg.preset]
    images, labels = split_tensors(dataset, cfg.data_dir, "test", limit=max(cfg.top5_samples, cfg.count_samples))
    rows = [_run_one(cfg, arch, variant, images, labels, log) for arch in cfg.archs for variant in cfg.variants]
    result = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "config": asdict(cfg),
        "dataset": dataset,
        "test_images": len(images),
        "rows": rows,
        "ops_note": "per image; module_macs = Linear/Conv multiply-accumulates (seed 000 Table 1 'FLOPs', "
        "thop-style, Spikformer summed over T); attention_macs = attention products; sops = "
        "measured spike-driven accumulates of the Spikformer on "
        f"{min(cfg.count_samples, len(images))} test images (analysis/opcount.py)",
        "top5_note": f"top-5 of the final model on the first {len(images)} test images (the training "
        "history records no top-5); of the best epoch only when it is the last, or when the "
        "history records test_top5",
    }
    return write_report(result, Path(cfg.out))
