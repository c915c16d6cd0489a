"""``spikeport.train.api.train(config) -> TrainResult``: the Python API behind ``spikeport train``
(configuration: ``spikeport.train.config``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spikeport.errors import ConfigError

# re-exported: the training API's configuration helpers live in train/config.py
from spikeport.train.config import (
    CONFIG_DIR as CONFIG_DIR,
    TrainConfig as TrainConfig,
    as_config as as_config,
    read_yaml as read_yaml,
    recipe as recipe,
    resolve_config as resolve_config,
    validate_model as validate_model,
)

if TYPE_CHECKING:
    from spikeport.train.loop import TrainResult


def train(config: TrainConfig | dict[str, Any] | None = None, **overrides: Any) -> TrainResult:
    """Train (or resume) one float model; ``config`` and ``overrides`` as in :func:`as_config`.

    Quantization-aware fine-tuning (``qat=True``) goes through the converter's fake-quant executor, so it
    is dispatched one level up, by ``spikeport.train`` (``spikeport.api.train``): train/ never imports
    convert/."""
    from spikeport.train.loop import Trainer

    config = as_config(config, **overrides)
    if config.qat:
        raise ConfigError(
            "qat = True: quantization-aware fine-tuning runs through the converter; call "
            "spikeport.train(..., qat=True) (spikeport.api.train) or `spikeport train --qat`"
        )
    return Trainer(config).run()
