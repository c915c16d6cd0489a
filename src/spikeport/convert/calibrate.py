"""Calibration and float-side observation: forward hooks on the LIF modules of the torch model.

Node names of the IR are the torch module paths, so a LIF module's hook maps 1:1 to its ``lif`` node.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn

from spikeport.train.neurons import is_lif, reset_net


@contextmanager
def lif_hooks(
    model: nn.Module,
    on_input: Callable[[str, torch.Tensor], None] | None = None,
    on_output: Callable[[str, torch.Tensor], None] | None = None,
) -> Iterator[None]:
    handles = []
    for name, m in model.named_modules():
        if is_lif(m):
            if on_input is not None:
                handles.append(m.register_forward_pre_hook(lambda mod, args, n=name: on_input(n, args[0])))
            if on_output is not None:
                handles.append(m.register_forward_hook(lambda mod, args, out, n=name: on_output(n, out)))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@torch.no_grad()
def calibrate(model: nn.Module, images: torch.Tensor, batch_size: int = 64) -> dict[str, Any]:
    """Max |pre-neuron input| per LIF (before 1/tau) and max |pixel| over ``images`` [S, C, H, W]."""
    stats: dict[str, float] = {}

    def record(name: str, x: torch.Tensor) -> None:
        # NaN stays NaN (max(0.0, nan) is 0.0): quantize.check_finite names the layer
        value, seen = float(x.detach().abs().max()), stats.get(name, 0.0)
        stats[name] = math.nan if math.isnan(value) or math.isnan(seen) else max(seen, value)

    model.eval()
    with lif_hooks(model, on_input=record):
        for i in range(0, len(images), batch_size):
            model(images[i : i + batch_size])
            reset_net(model)
    return {"lif_input_max": stats, "input_range": float(images.abs().max()) if len(images) else None}


def to_node_layout(x: torch.Tensor, shape: tuple[int, ...]) -> np.ndarray:
    """A float LIF output [T, B, C, H, W] (stem maps) or [T, B, N, C] (tokens) -> [T, B, H, W, C]."""
    x = x.detach().cpu()
    if x.dim() == 5:
        x = x.permute(0, 1, 3, 4, 2)
    return x.reshape(x.shape[0], x.shape[1], *shape).numpy()


@torch.no_grad()
def float_spikes(
    model: nn.Module,
    images: torch.Tensor,
    shapes: dict[str, tuple[Any, ...]],
    on_layer: Callable[[str, np.ndarray], None] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """(logits [B, classes], {lif name: spikes [T, B, H, W, C]}) of the float torch model. With ``on_layer``, each
    layer's spikes go to ``on_layer(name, spikes)`` as the forward produces them and are not kept (the dict is
    empty): a comparison then holds one layer of them at a time."""
    spikes: dict[str, np.ndarray] = {}

    def record(name: str, out: torch.Tensor) -> None:
        if name in shapes:
            layer = to_node_layout(out, shapes[name])
            if on_layer is None:
                spikes[name] = layer
            else:
                on_layer(name, layer)

    model.eval()
    with lif_hooks(model, on_output=record):
        logits = model(images)
    reset_net(model)
    return logits.cpu().numpy(), spikes
