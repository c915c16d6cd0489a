"""Quantization-aware fine-tuning (``spikeport train --qat``) with the fake-quant executor.

The float model is converted as usual up to the quantization plan (``convert.api.plan_graph``); the
planned float graph becomes a ``FakeQuantNetwork`` whose float masters (BN-folded, 1/tau-folded weights
and biases, dendritic A / Gamma / C) are fine-tuned through the *exact* integer forward pass with
straight-through gradients. The plan (scales, exponents) stays fixed, so the result quantizes to the same
fields and the fine-tuned integers are what the reference simulator and Lava execute.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from spikeport.convert.fakequant import FakeQuantNetwork
from spikeport.convert.quantize import finalize
from spikeport.ir.graph import Graph


@dataclass
class QatConfig:
    epochs: int = 2
    batch_size: int = 64
    lr: float = 2e-4              # small: the masters start at the float optimum
    weight_decay: float = 0.0
    smoothing: float = 0.1
    seed: int = 0


def _logit_scale(net: FakeQuantNetwork) -> float:
    """Integer logits are sum_t gain * N * float logits: rescale so the loss sees float-sized logits."""
    head = net.graph.by_op("readout")[0]
    return 1.0 / (head.attrs["gain"] * head.attrs["tokens"] * net.graph.T)


@torch.no_grad()
def evaluate(net: FakeQuantNetwork, images: torch.Tensor, labels: torch.Tensor, batch_size: int = 128) -> float:
    correct = 0
    for i in range(0, len(images), batch_size):
        correct += int((net(images[i:i + batch_size]).argmax(-1) == labels[i:i + batch_size]).sum())
    return correct / max(len(labels), 1)


def finetune(planned: Graph, train: tuple[torch.Tensor, torch.Tensor], test: tuple[torch.Tensor, torch.Tensor],
             cfg: QatConfig = QatConfig(), log=print) -> tuple[Graph, list[dict]]:
    """Fine-tune the masters of a planned float graph; returns (quantized graph, history)."""
    torch.manual_seed(cfg.seed)
    net = FakeQuantNetwork(planned)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scale = _logit_scale(net)
    x, y = train
    gen = torch.Generator().manual_seed(cfg.seed)
    history = [{"epoch": 0, "test_acc": evaluate(net, *test)}]
    log(f"qat epoch 0: fake-quant test acc {history[0]['test_acc']:.4f}")
    for epoch in range(1, cfg.epochs + 1):
        t0, perm = time.perf_counter(), torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), cfg.batch_size):
            idx = perm[i:i + cfg.batch_size]
            logits = net(x[idx]) * scale
            loss = F.cross_entropy(logits.float(), y[idx], label_smoothing=cfg.smoothing)
            opt.zero_grad()
            loss.backward()
            opt.step()
        history.append({"epoch": epoch, "test_acc": evaluate(net, *test), "epoch_time_s": time.perf_counter() - t0})
        log(f"qat epoch {epoch}: fake-quant test acc {history[-1]['test_acc']:.4f} ({history[-1]['epoch_time_s']:.0f}s)")
    return quantize_masters(planned, net), history


def quantize_masters(planned: Graph, net: FakeQuantNetwork) -> Graph:
    """The quantized graph of the fine-tuned masters (same plan, integers recomputed)."""
    masters = {node: {k: v.detach().numpy() for k, v in params.items()} for node, params in net.float_params().items()}
    for name, params in masters.items():
        planned.nodes[name].params = params
    graph = finalize(planned)
    graph.meta["qat"] = True
    graph.validate()
    return graph
