"""The training loop: AdamW, cosine schedule with linear warmup and cooldown, label smoothing and mixup,
``reset_net`` after every batch, AMP and ``torchrun`` DDP on CUDA, CPU everywhere.

Reproducibility: the model is initialised from ``seed``; every epoch reseeds all generators from
(seed, epoch) and the train order is a permutation of (seed, epoch), so an epoch does not depend on how
the process got there. The checkpoint written atomically after every epoch holds the weights, the
optimizer, the schedule step, the RNG states and the metric history: ``resume`` continues with results
identical to an uninterrupted run on CPU (tests/test_train_loop.py compares the weights bit for bit).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
import yaml
from torch import nn

from spikeport.atomic import atomic_write, check_output_dir, write_text
from spikeport.brief import brief_repr
from spikeport.errors import BackendUnavailableError, CheckpointError, ConfigError
from spikeport.progress import LOG_EVERY_S, Bar, is_terminal
from spikeport.train import checkpoint as ckpt_io
from spikeport.train.augment import Mixup
from spikeport.train.config import TrainConfig
from spikeport.train.data import build_loaders
from spikeport.train.models import Block, build_model, count_params
from spikeport.train.neurons import is_lif, reset_net
from spikeport.train.presets import DEFAULT_DATASET, preset_config


@dataclass
class TrainResult:
    out: Path | None
    checkpoint: Path | None
    history: list[dict]
    params: int
    minutes: float
    model: nn.Module = field(repr=False)

    BRIEF = ("out", "test_acc", "best_acc", "params", "minutes", "history")  # not every epoch's metrics
    __repr__ = brief_repr

    @property
    def test_acc(self) -> float:
        return self.history[-1].get("test_acc", float("nan")) if self.history else float("nan")

    @property
    def best_acc(self) -> float:
        return max((r["test_acc"] for r in self.history if "test_acc" in r), default=float("nan"))

    @property
    def firing_rates(self) -> dict[str, float]:
        return self.history[-1].get("firing_rates", {}) if self.history else {}


def lr_at(cfg: TrainConfig, t: float) -> float:
    """Learning rate at fractional epoch ``t`` (timm's CosineLRScheduler rule, evaluated every step):
    linear warmup from warmup_lr, cosine from lr to min_lr over epochs - cooldown, then min_lr."""
    if t < cfg.warmup_epochs:
        return cfg.warmup_lr + (cfg.lr - cfg.warmup_lr) * t / cfg.warmup_epochs
    span = max(cfg.epochs - cfg.cooldown_epochs, 1)
    if t >= span:
        return cfg.min_lr
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * t / span))


def training_net(
    net: nn.Module, device: torch.device, compile: bool = True, say: Callable[..., None] | None = None
) -> nn.Module:
    """What the training step calls: on CUDA (``compile``) ``torch.compile(net)``, which fuses each layer's
    BatchNorm, LIF and elementwise work into few kernels (benchmarks/profile_train.py: 2x the step rate of the
    eager network for spikformer-4-384 at batch 128 with AMP, after ~1-2 minutes of compiling at the first step);
    else ``net`` itself. The parameters, state dict and checkpoints stay those of ``net``. Evaluation runs ``net``
    eagerly: no second compilation for eval mode."""
    if not (compile and device.type == "cuda"):
        return net
    if say is not None:
        say("spikeport train: torch.compile of the training step (the first step compiles, ~1-2 min)", file=sys.stderr)
    compiled: nn.Module = torch.compile(net)  # type: ignore[assignment]  # an OptimizedModule: a Module
    return compiled


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """No weight decay on biases and 1-d (norm) parameters, as timm's filter_bias_and_bn."""
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if p.ndim <= 1 or name.endswith(".bias") else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def seed_epoch(seed: int, epoch: int) -> int:
    """One generator seed per (seed, epoch); set on every library the epoch draws from."""
    s = (seed * 1_000_003 + epoch) % (2**31)
    random.seed(s)
    np.random.seed(s)
    torch.manual_seed(s)
    return s


def rng_state() -> dict:
    np_state = np.random.get_state(legacy=True)
    if not isinstance(np_state, tuple):  # numpy gives the legacy tuple for its default MT19937 generator only
        raise CheckpointError(
            f"numpy's global generator is {np_state['bit_generator']}; a checkpoint records the legacy MT19937 state"
        )
    return {
        "python": random.getstate(),
        "torch": torch.get_rng_state(),
        "numpy": [np_state[0], torch.from_numpy(np_state[1].astype(np.int64)), *np_state[2:]],
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict) -> None:
    random.setstate(tuple(tuple(x) if isinstance(x, list) else x for x in state["python"]))
    torch.set_rng_state(state["torch"])
    name, keys, *rest = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), *rest))
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class FiringRates:
    """Mean spikes per neuron per time step of every LIF layer (forward hooks), while enabled."""

    def __init__(self, model: nn.Module):
        self.sums: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.handles = [m.register_forward_hook(self.hook(name)) for name, m in model.named_modules() if is_lif(m)]

    def hook(self, name: str) -> Callable[[nn.Module, tuple[Any, ...], torch.Tensor], None]:
        def record(_module: nn.Module, _inputs: tuple[Any, ...], out: torch.Tensor) -> None:
            self.sums[name] = self.sums.get(name, 0.0) + float(out.detach().float().sum())
            self.counts[name] = self.counts.get(name, 0) + out.numel()

        return record

    def rates(self) -> dict[str, float]:
        return {k: self.sums[k] / max(self.counts[k], 1) for k in self.sums}

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def soft_cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return torch.sum(-target * F.log_softmax(logits.float(), dim=-1), dim=-1).mean()


class Trainer:
    """One float training run (QAT is convert.qat.train_qat)."""

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.rank, self.world, self.local_rank = (
            int(os.environ.get(k, d)) for k, d in (("RANK", 0), ("WORLD_SIZE", 1), ("LOCAL_RANK", 0))
        )
        self.main = self.rank == 0
        self.out = Path(cfg.out).expanduser() if cfg.out else None
        self.ckpt_path = self.out / "checkpoint.pt" if self.out else None
        if self.out and self.main:  # before any data is read or epoch is run
            check_output_dir(self.out, "train out")

    # ----------------------------------------------------------------------------------- setup
    def device(self) -> torch.device:
        want = self.cfg.device
        if want == "auto":
            want = "cuda" if torch.cuda.is_available() else "cpu"
        if want.startswith("cuda"):
            if not torch.cuda.is_available():
                raise BackendUnavailableError(
                    f"device {self.cfg.device!r}: CUDA is not available here; use --device cpu"
                )
            return torch.device("cuda", self.local_rank if self.world > 1 else torch.device(want).index or 0)
        if want != "cpu":
            raise ConfigError(f"unknown device {want!r}; valid choices: auto, cpu, cuda, cuda:N")
        return torch.device("cpu")

    def setup(self) -> None:
        cfg = self.cfg
        dataset = cfg.dataset or DEFAULT_DATASET.get(cfg.preset, "digits")
        if self.world > 1 and not torch.distributed.is_initialized():
            torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        self.dev = self.device()
        if self.dev.type == "cuda":
            torch.cuda.set_device(self.dev)
        self.amp = bool(cfg.amp and self.dev.type == "cuda")
        if cfg.amp and not self.amp and self.main:
            print("spikeport train: --amp needs CUDA; training in float32 on CPU", file=sys.stderr)
        self.train_loader, self.test_loader, self.info = build_loaders(
            dataset,
            cfg.data_dir,
            cfg.augment,
            cfg.batch_size,
            cfg.eval_batch_size,
            cfg.num_workers,
            cfg.seed,
            distributed=self.world > 1,
            img_size=cfg.model.get("img_size"),
        )
        self.model_cfg = preset_config(cfg.preset, dataset, **cfg.model)
        if (self.model_cfg.num_classes, self.model_cfg.in_channels) != (self.info.num_classes, self.info.in_channels):
            raise ConfigError(
                f"model has {self.model_cfg.num_classes} classes / {self.model_cfg.in_channels} "
                f"channels, dataset {dataset} has {self.info.num_classes} / {self.info.in_channels}"
            )
        torch.manual_seed(cfg.seed)
        random.seed(cfg.seed)
        np.random.seed(cfg.seed)
        model = build_model(self.model_cfg)
        if cfg.init:
            self.load_init(model, cfg.init)
        self.params = count_params(model)
        for blk in model.modules():  # the official blocks' LayerNorms are never called: freeze them
            if isinstance(blk, Block):  # so that AdamW and DDP skip them (kept for checkpoint keys)
                blk.norm1.requires_grad_(False)
                blk.norm2.requires_grad_(False)
        self.model = model.to(self.dev)
        self.net = self.model
        if self.world > 1:
            ids = [self.dev.index] if self.dev.type == "cuda" else None
            self.net = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        self.net = training_net(self.net, self.dev, cfg.compile, say=print if self.main and cfg.log else None)
        self.optimizer = torch.optim.AdamW(param_groups(self.model, cfg.weight_decay), lr=cfg.lr, betas=cfg.betas)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp)
        self.mixup = Mixup(cfg.augment, self.info.num_classes, cfg.smoothing)
        self.step, self.start_epoch = 0, 0
        self.history: list[dict[str, Any]] = []

    @staticmethod
    def load_init(model: nn.Module, path: str) -> None:
        obj = ckpt_io.read(path, extra_safe_globals=(argparse.Namespace,))
        if obj.get("format") == ckpt_io.FORMAT:
            ckpt_io.load_state_checked(model, obj["model"], path)
        elif ckpt_io.is_spikingjelly_state(ckpt_io.unwrap_official(obj.get("net", obj), path)):
            ckpt_io.load_spikingjelly_state_dict(model, obj)
        else:
            ckpt_io.load_official_state_dict(model, path)

    # ----------------------------------------------------------------------------------- state
    def state(self, epoch: int) -> dict:
        return {
            "format": ckpt_io.FORMAT,
            "version": ckpt_io.VERSION,
            "model": self.model.state_dict(),
            "model_config": self.model_cfg.to_dict(),
            "train_config": self.cfg.to_dict(),
            "epoch": epoch,
            "optimizer": self.optimizer.state_dict(),
            "scheduler": {"step": self.step},
            "scaler": self.scaler.state_dict(),
            "rng": rng_state(),
            "seed": self.cfg.seed,
            "history": self.history,
            "params": self.params,
        }

    def resume(self) -> None:
        if self.ckpt_path is None or not self.ckpt_path.is_file():
            raise CheckpointError(f"--resume: no checkpoint at {self.ckpt_path or '<no --out folder>'}")
        ck = ckpt_io.load(self.ckpt_path)
        if ck["model_config"] != self.model_cfg.to_dict():
            diff = sorted(k for k in ck["model_config"] if ck["model_config"][k] != self.model_cfg.to_dict().get(k))
            raise CheckpointError(
                f"{self.ckpt_path}: was trained with another model config (differs in {diff}); "
                f"resume with the same preset and model flags"
            )
        ckpt_io.load_state_checked(self.model, ck["model"], self.ckpt_path)
        self.optimizer.load_state_dict(ck["optimizer"])
        self.scaler.load_state_dict(ck["scaler"])
        self.step, self.start_epoch = int(ck["scheduler"]["step"]), int(ck["epoch"])
        self.history = list(ck["history"])
        set_rng_state(ck["rng"])

    # ----------------------------------------------------------------------------------- epochs
    def autocast(self) -> AbstractContextManager[Any]:
        return torch.autocast("cuda", dtype=torch.float16) if self.amp else nullcontext()

    def train_epoch(self, epoch: int) -> dict:
        cfg, net = self.cfg, self.net
        net.train()
        mix_rng = random.Random(seed_epoch(cfg.seed, epoch))
        sampler = self.train_loader.sampler
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        steps = len(self.train_loader)
        loss_sum = correct = seen = 0.0
        start = time.perf_counter()
        bar = self.bar(self.train_loader, f"epoch {epoch + 1}/{cfg.epochs}")
        for i, (x, y) in enumerate(bar):
            x, y = x.to(self.dev, non_blocking=True), y.to(self.dev, non_blocking=True)
            lr = lr_at(cfg, epoch + i / steps)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            x_in, target = self.mixup(x, y, epoch, mix_rng) if self.mixup.active else (x, None)
            with self.autocast():
                logits = net(x_in)
            loss = (
                soft_cross_entropy(logits, target)
                if target is not None
                else F.cross_entropy(logits.float(), y, label_smoothing=cfg.smoothing)
            )
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            if cfg.clip_grad:
                self.scaler.unscale_(self.optimizer)
                nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_grad)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            reset_net(self.model)
            self.step += 1
            loss_sum += float(loss.detach()) * len(y)
            correct += float((logits.detach().argmax(-1) == y).sum())
            seen += len(y)
            bar.set_postfix(loss=f"{loss_sum / seen:.3f}", acc=f"{correct / seen:.3f}", lr=f"{lr:.2e}")
        loss_sum, correct, seen = self.all_reduce(loss_sum, correct, seen)
        rate = seen / max(time.perf_counter() - start, 1e-9)  # all ranks' images over this rank's time
        return {"train_loss": loss_sum / seen, "train_acc": correct / seen, "lr": lr, "train_images_per_s": rate}

    @torch.no_grad()
    def evaluate(self) -> dict:
        self.net.eval()
        rates = FiringRates(self.model)
        loss_sum = correct = seen = 0.0
        try:
            for x, y in self.bar(self.test_loader, "eval"):
                x, y = x.to(self.dev, non_blocking=True), y.to(self.dev, non_blocking=True)
                with self.autocast():
                    logits = self.model(x)
                reset_net(self.model)
                loss_sum += float(F.cross_entropy(logits.float(), y, reduction="sum"))
                correct += float((logits.argmax(-1) == y).sum())
                seen += len(y)
        finally:
            rates.remove()
        loss_sum, correct, seen = self.all_reduce(loss_sum, correct, seen)
        return {"test_loss": loss_sum / seen, "test_acc": correct / seen, "firing_rates": rates.rates()}

    def all_reduce(self, *values: float) -> list[float]:
        if self.world == 1:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.dev)
        torch.distributed.all_reduce(t)
        return t.tolist()

    def bar(self, loader: Iterable[Any], desc: str) -> Bar:
        """A bar on a terminal (``progress``); in a log file or CI (``progress`` or ``log``) a line every
        LOG_EVERY_S seconds with the running loss and accuracy, so that a long epoch's log is not empty until the
        epoch ends, and no bar's carriage returns."""
        on = self.cfg.progress if is_terminal(sys.stderr) else (self.cfg.progress or self.cfg.log)
        return Bar(loader, desc=desc, enabled=bool(on and self.main))

    # ----------------------------------------------------------------------------------- run
    def run(self, stop_after: int | None = None) -> TrainResult:
        """Train to ``cfg.epochs``; ``stop_after`` ends this call after that many epochs (a preemptible
        job's time slice, or a test of resume): the next call with ``resume=True`` continues."""
        t0 = time.perf_counter()
        self.setup()
        if self.cfg.resume:
            self.resume()
        elif self.out and self.main:
            self.out.mkdir(parents=True, exist_ok=True)
        if self.out and self.main:
            write_text(self.out / "config.yaml", dump_yaml(self.cfg.to_dict()))
        last = self.cfg.epochs if stop_after is None else min(self.cfg.epochs, self.start_epoch + stop_after)
        if self.main and self.cfg.log and last > self.start_epoch:  # the first line comes before an epoch's minutes
            bars = " (bars on a terminal)" if self.cfg.progress else ""
            bars += "" if is_terminal(sys.stderr) else f" and one every {LOG_EVERY_S:.0f} s within an epoch"
            print(
                f"training epochs {self.start_epoch + 1}..{last} of {self.cfg.epochs}, "
                f"{len(self.train_loader)} batches each on {self.dev.type}; a line per epoch{bars}",
                file=sys.stderr,
                flush=True,
            )
        for epoch in range(self.start_epoch, last):
            t_epoch = time.perf_counter()
            metrics = {"epoch": epoch + 1, **self.train_epoch(epoch)}
            if self.evaluates(epoch + 1, last):
                metrics.update(self.evaluate())
            metrics["epoch_time_s"] = time.perf_counter() - t_epoch
            self.history.append(metrics)
            if self.main:
                self.report(metrics)
                if self.out and self.ckpt_path:  # both are set together (a run folder)
                    ckpt_io.save_atomic(self.state(epoch + 1), self.ckpt_path)
                    write_text(self.out / "metrics.jsonl", "".join(json.dumps(m) + "\n" for m in self.history))
                    if "test_acc" in metrics:  # redrawn where the test curve moves (a plot costs ~0.5 s of CPU)
                        plot_curves(self.history, self.out / "curves.png")
        if self.world > 1:
            torch.distributed.barrier()
        return TrainResult(
            self.out, self.ckpt_path, self.history, self.params, (time.perf_counter() - t0) / 60, self.model
        )

    def evaluates(self, epoch: int, last: int) -> bool:
        """Whether epoch ``epoch`` (1-based) ends with a test-split evaluation: every ``eval_every`` epochs and the
        last of this call (a resumable slice ends evaluated, so its checkpoint's history says where it got)."""
        every = self.cfg.eval_every
        return epoch == last or (every > 0 and epoch % every == 0)

    def report(self, m: dict) -> None:
        if not self.cfg.log:
            return
        done = [h["epoch_time_s"] for h in self.history[-3:]]  # the last epochs: warm-up leaves the mean
        eta = sum(done) / len(done) * (self.cfg.epochs - m["epoch"])
        tested = ""
        if "test_acc" in m:  # an evaluated epoch (eval_every)
            rates = m["firing_rates"]
            mean_rate = sum(rates.values()) / max(len(rates), 1)
            tested = f"  test loss {m['test_loss']:.4f} acc {m['test_acc']:.4f}  firing {mean_rate:.3f}"
        print(
            f"epoch {m['epoch']:>3}/{self.cfg.epochs}  train loss {m['train_loss']:.4f} acc {m['train_acc']:.4f}"
            f"{tested}  lr {m['lr']:.2e}  {m['train_images_per_s']:.0f} img/s  {m['epoch_time_s']:.1f}s"
            f"  ETA {_clock(eta)}",
            file=sys.stderr,
            flush=True,
        )


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


# ------------------------------------------------------------------------------------------- files
def dump_yaml(d: dict) -> str:
    return yaml.safe_dump(d, sort_keys=False)


def plot_curves(history: list[dict], path: Path) -> None:
    """Loss and accuracy per epoch (train and test) and the mean firing rate, as one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    tested = [m for m in history if "test_acc" in m]  # eval_every: not every epoch is evaluated
    for key, style, marker, rows in (("train", "-", "", history), ("test", "--", "o", tested)):
        ep = [m["epoch"] for m in rows]
        axes[0].plot(ep, [m[f"{key}_loss"] for m in rows], style, marker=marker, label=key)
        axes[1].plot(ep, [m[f"{key}_acc"] for m in rows], style, marker=marker, label=key)
    rates = [sum(m["firing_rates"].values()) / max(len(m["firing_rates"]), 1) for m in tested]
    axes[2].plot([m["epoch"] for m in tested], rates, marker="o")
    for ax, title in zip(axes, ("loss", "accuracy", "mean firing rate (test, spikes/neuron/step)"), strict=True):
        ax.set_title(title)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    axes[0].legend()
    axes[1].legend()
    fig.tight_layout()
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
