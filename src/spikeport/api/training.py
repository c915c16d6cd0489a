"""A model before conversion: its training config, training (float or quantization-aware), a preset's figures."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from spikeport.api.choices import Attention, Dataset
from spikeport.errors import ConfigError

if TYPE_CHECKING:
    from spikeport.convert.qat import QatResult
    from spikeport.train.api import TrainConfig
    from spikeport.train.loop import TrainResult
else:  # typing.get_type_hints resolves each name on use (spikeport.api._hints)
    from spikeport.api._hints import _hint

    QatResult = _hint("convert.qat.QatResult")
    TrainConfig = _hint("train.api.TrainConfig")
    TrainResult = _hint("train.loop.TrainResult")


def train_config(
    preset: str | None = None, config_file: str | os.PathLike[str] | None = None, **overrides: Any
) -> TrainConfig:
    """The resolved training config: defaults < the preset's recipe < ``config_file`` (YAML) <
    ``overrides`` (TrainConfig fields; None values are ignored). Fails on a bad key before any data is read."""
    from spikeport.train.api import resolve_config

    return resolve_config(preset, config_file, **overrides)


def train(config: TrainConfig | dict[str, Any] | None = None, **overrides: Any) -> TrainResult | QatResult:
    """Train (or resume) one model. ``config`` is a TrainConfig, a dict of its fields or None (the preset
    recipe); ``overrides`` are TrainConfig fields (``preset``, ``model``, ``epochs``, ``out``, ...).

    With ``qat=True`` it fine-tunes the float weights of ``init`` through the fake-quant executor instead
    (quantization-aware training) and returns a ``QatResult`` with the fine-tuned artifact
    ``<out>/model.spk.h5``."""
    from spikeport.train import api as train_api

    cfg = train_api.as_config(config, **overrides)
    if not cfg.qat:
        return train_api.train(cfg)
    if not cfg.init:
        raise ConfigError("--qat needs --init CKPT: quantization-aware fine-tuning starts from trained float weights")
    from spikeport.convert.qat import train_qat

    return train_qat(cfg)


def info(
    preset: str,
    dataset: Dataset | None = None,
    *,
    attention: Attention | None = None,
    mlp: bool | None = None,
    skip: bool | None = None,
) -> dict[str, Any]:
    """A preset's parameters, per-layer MACs for one sample and time step, LIF neurons, tokens and T (schema
    spikeport.info), from a forward pass on the meta device (no memory, no compute)."""
    from spikeport.train.info import model_info
    from spikeport.train.presets import preset_config

    cfg = preset_config(preset, dataset, attention=attention, mlp=mlp, skip=skip)
    return model_info(cfg, preset, dataset)
