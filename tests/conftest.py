"""Shared fixtures: small spiking models and their quantized graphs, built in-process (no training)."""
from __future__ import annotations

import numpy as np
import pytest

ATTENTIONS = ("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn")


def spiky_model(attention: str = "ssa", seed: int = 0, **overrides):
    """digits-tiny with BatchNorm parameters that make every layer fire (untrained weights stay silent)."""
    import torch

    from spikeport.train.models import build_model
    from spikeport.train.presets import preset_config

    torch.manual_seed(seed)
    model = build_model(preset_config("digits-tiny", attention=attention, **overrides)).eval()
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            m.weight.data = torch.rand(m.weight.shape, generator=gen) * 2.5 + 0.5
            m.bias.data = torch.rand(m.bias.shape, generator=gen) * 1.5 - 0.5
    return model


def random_images(n: int = 8, seed: int = 0, shape=(1, 8, 8)):
    import torch

    return torch.rand((n, *shape), generator=torch.Generator().manual_seed(seed)) * 2


def quantized_graph(model, calib=None):
    from spikeport.convert.api import build_graph

    return build_graph(model, calib)


@pytest.fixture(scope="session", params=ATTENTIONS)
def variant_graph(request):
    """(attention, model, quantized graph) for every attention variant."""
    model = spiky_model(request.param)
    return request.param, model, quantized_graph(model, random_images(16, seed=1))
