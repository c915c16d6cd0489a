"""Quantization-aware fine-tuning (``spikeport train --qat --init CKPT``) with the fake-quant executor.

The float model is converted as usual up to the quantization plan (``convert.api.plan_graph``); the
planned float graph becomes a ``FakeQuantNetwork`` whose float masters (BN-folded, 1/tau-folded weights
and biases, dendritic A / Gamma / C) are fine-tuned through the *exact* integer forward pass with
straight-through gradients. The plan (scales, exponents) stays fixed, so the result quantizes to the same
fields and the fine-tuned integers are what the reference simulator and Lava execute.

``train_qat(config)`` is what ``spikeport train --qat`` runs: it writes ``<out>/model.spk.h5`` (the
fine-tuned artifact, ready for ``spikeport run``), ``<out>/qat_metrics.jsonl`` and ``<out>/qat_report.json``.
"""

from __future__ import annotations

import copy
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from spikeport.atomic import check_output_dir, write_json, write_text
from spikeport.brief import brief_repr
from spikeport.convert.fakequant import FakeQuantNetwork
from spikeport.convert.quantize import finalize
from spikeport.errors import ConfigError
from spikeport.ir import artifact
from spikeport.ir.graph import Graph
from spikeport.ir.ops import validate
from spikeport.progress import QUIET, Progress
from spikeport.runtime.executor import to_channels_last
from spikeport.runtime.sim.reference import ReferenceSimulator
from spikeport.train.presets import DEFAULT_DATASET, preset_config

if TYPE_CHECKING:
    from spikeport.train.config import TrainConfig

# One QAT epoch's record: epoch, val_acc, test_acc (fake-quant) and, after fine-tuning epochs, epoch_time_s.
EpochRecord = dict[str, float]


@dataclass
class QatConfig:
    epochs: int = 2
    batch_size: int = 64
    lr: float = 2e-4  # small: the masters start at the float optimum
    weight_decay: float = 0.0
    smoothing: float = 0.1
    seed: int = 0
    # this share of the training images is held out (not fine-tuned on) to choose the epoch that is kept:
    # the one with the best fake-quant accuracy on it (epoch 0, the post-training quantized start, included)
    validation_share: float = 0.1


def _logit_scale(net: FakeQuantNetwork) -> float:
    """Integer logits are sum_t gain * N * float logits: rescale so the loss sees float-sized logits."""
    head = net.graph.by_op("readout")[0]
    gain: float = head.attrs["gain"]
    tokens: int = head.attrs["tokens"]
    return 1.0 / (gain * tokens * net.graph.T)


@torch.no_grad()
def evaluate(net: FakeQuantNetwork, images: torch.Tensor, labels: torch.Tensor, batch_size: int = 128) -> float:
    correct = 0
    for i in range(0, len(images), batch_size):
        correct += int((net(images[i : i + batch_size]).argmax(-1) == labels[i : i + batch_size]).sum())
    return correct / max(len(labels), 1)


def finetune(
    planned: Graph,
    train: tuple[torch.Tensor, torch.Tensor],
    test: tuple[torch.Tensor, torch.Tensor],
    cfg: QatConfig | None = None,
    log: Callable[[str], None] = print,
    progress: Progress = QUIET,
) -> tuple[Graph, list[EpochRecord]]:
    """Fine-tune the masters of a planned float graph; returns (the quantized graph of the kept epoch, history).
    ``progress`` draws a bar over each epoch's batches on a terminal (an epoch takes minutes)."""
    cfg = cfg if cfg is not None else QatConfig()
    torch.manual_seed(cfg.seed)
    net = FakeQuantNetwork(planned)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scale = _logit_scale(net)
    gen = torch.Generator().manual_seed(cfg.seed)
    order = torch.randperm(len(train[0]), generator=gen)
    held = max(1, int(len(order) * cfg.validation_share))
    val = (train[0][order[:held]], train[1][order[:held]])
    x, y = train[0][order[held:]], train[1][order[held:]]

    def record(epoch: int, **extra: float) -> EpochRecord:
        return {"epoch": epoch, "val_acc": evaluate(net, *val), "test_acc": evaluate(net, *test), **extra}

    history = [record(0)]
    best, kept = history[0]["val_acc"], {k: v.detach().clone() for k, v in net.state_dict().items()}
    log(f"qat epoch 0: fake-quant val acc {history[0]['val_acc']:.4f}, test acc {history[0]['test_acc']:.4f}")
    for epoch in range(1, cfg.epochs + 1):
        t0, perm = time.perf_counter(), torch.randperm(len(x), generator=gen)
        starts = range(0, len(x), cfg.batch_size)
        for i in progress.bar(starts, total=len(starts), desc=f"qat epoch {epoch}"):
            idx = perm[i : i + cfg.batch_size]
            logits = net(x[idx]) * scale
            loss = F.cross_entropy(logits.float(), y[idx], label_smoothing=cfg.smoothing)
            opt.zero_grad()
            torch.autograd.backward(loss)  # what loss.backward() runs; Tensor.backward has no annotations
            opt.step()
        history.append(record(epoch, epoch_time_s=time.perf_counter() - t0))
        if history[-1]["val_acc"] > best:  # strictly better: ties keep the earlier, less fine-tuned masters
            best, kept = history[-1]["val_acc"], {k: v.detach().clone() for k, v in net.state_dict().items()}
        log(
            f"qat epoch {epoch}: fake-quant val acc {history[-1]['val_acc']:.4f}, test acc "
            f"{history[-1]['test_acc']:.4f} ({history[-1]['epoch_time_s']:.0f}s)"
        )
    net.load_state_dict(kept)
    kept_epoch = next(h["epoch"] for h in history if h["val_acc"] == best)
    log(f"qat: keeping epoch {kept_epoch} (best validation accuracy {best:.4f})")
    graph = quantize_masters(planned, net)
    graph.meta["qat_kept_epoch"] = kept_epoch
    return graph, history


def quantize_masters(planned: Graph, net: FakeQuantNetwork) -> Graph:
    """The quantized graph of the fine-tuned masters (same plan, integers recomputed)."""
    masters = {node: {k: v.detach().numpy() for k, v in params.items()} for node, params in net.float_params().items()}
    for name, params in masters.items():
        planned.nodes[name].params = params
    graph = finalize(planned)
    graph.meta["qat"] = True
    validate(graph)
    return graph


@dataclass
class QatResult:
    """What ``spikeport train --qat`` produced; ``test_acc`` is the reference simulator's (the artifact's)."""

    out: Path | None
    artifact: Path | None
    history: list[EpochRecord]  # fake-quant validation and test accuracy per QAT epoch (0: before fine-tuning)
    float_acc: float  # the --init model in float
    ptq_acc: float  # reference simulator, post-training quantization (same plan)
    test_acc: float  # reference simulator after QAT
    minutes: float
    graph: Graph = field(repr=False)
    kept_epoch: int = 0  # the epoch whose masters the artifact holds (best validation accuracy)

    __repr__ = brief_repr  # print(result): its figures, each epoch's record counted

    @property
    def best_acc(self) -> float:
        return max(h["test_acc"] for h in self.history)


def train_qat(config: TrainConfig) -> QatResult:
    """Fine-tune ``config.init`` (a float checkpoint of ``config.preset``) through the fake-quant executor
    for ``config.qat_epochs`` epochs at ``config.qat_lr``."""
    from spikeport.convert.api import plan_graph
    from spikeport.train.data import split_tensors
    from spikeport.train.loop import Trainer
    from spikeport.train.models import build_model
    from spikeport.train.neurons import reset_net

    if not config.init:  # before anything is built or read (spikeport.api.train checks the same)
        raise ConfigError("--qat needs --init CKPT: quantization-aware fine-tuning starts from trained float weights")
    if config.out:
        check_output_dir(config.out, "train out")  # before the epochs that fill it
    start = time.perf_counter()
    dataset = config.dataset or DEFAULT_DATASET.get(config.preset, "digits")
    model_cfg = preset_config(config.preset, dataset, **config.model)
    model = build_model(model_cfg)
    Trainer.load_init(model, config.init)  # checks keys and shapes against the preset
    model.eval()
    img_size = model_cfg.img_size
    train = split_tensors(dataset, config.data_dir, "train", None, img_size)
    test = split_tensors(dataset, config.data_dir, "test", None, img_size)
    log: Callable[[str], None] = (
        (lambda msg: print(msg, file=sys.stderr, flush=True)) if config.log else (lambda msg: None)
    )

    def reference_acc(graph: Graph) -> float:
        report = ReferenceSimulator(graph).run(to_channels_last(test[0].numpy()), test[1].numpy())
        assert report.accuracy is not None  # a run with labels has one
        return report.accuracy

    reset_net(model)
    with torch.no_grad():
        float_acc = float((model(test[0]).argmax(-1) == test[1]).float().mean())
    reset_net(model)
    planned = plan_graph(model, train[0][:256])
    ptq_acc = reference_acc(finalize(copy.deepcopy(planned)))  # finalize works in place
    log(f"qat: --init float test acc {float_acc:.4f}, post-training quantized (reference) {ptq_acc:.4f}")
    graph, history = finetune(
        planned,
        train,
        test,
        QatConfig(epochs=config.qat_epochs, lr=config.qat_lr, seed=config.seed),
        log=log,
        progress=Progress("qat", enabled=bool(config.progress)),
    )
    test_acc = reference_acc(graph)
    log(f"qat: reference simulator test acc {test_acc:.4f} after {config.qat_epochs} QAT epochs")
    graph.meta.update({"dataset": dataset, "data_dir": config.data_dir, "checkpoint": str(config.init)})
    out = path = None
    if config.out:
        out = Path(config.out).expanduser()
        path = artifact.write(graph, out / "model.spk.h5")
        write_text(out / "qat_metrics.jsonl", "".join(json.dumps(h) + "\n" for h in history))
        write_json(
            out / "qat_report.json",
            {
                "schema": "spikeport.qat",
                "schema_version": 1,
                "init": str(config.init),
                "dataset": dataset,
                "executors": {
                    "float_acc": "torch-float",
                    "ptq_acc": "reference",
                    "test_acc": "reference",
                    "history": "torch-fakequant",
                },
                "float_acc": float_acc,
                "ptq_acc": ptq_acc,
                "test_acc": test_acc,
                "qat_epochs": config.qat_epochs,
                "qat_lr": config.qat_lr,
                "kept_epoch": graph.meta["qat_kept_epoch"],
                "selection": "best fake-quant accuracy on 10 % of the train split held out from fine-tuning",
                "history": history,
            },
        )
    minutes = (time.perf_counter() - start) / 60
    return QatResult(out, path, history, float_acc, ptq_acc, test_acc, minutes, graph, graph.meta["qat_kept_epoch"])
