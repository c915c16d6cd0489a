"""The configuration of a training run (``TrainConfig``) and how it is resolved.

A run's configuration is merged in this order (later wins): the TrainConfig defaults, the preset's recipe
(``presets.DEFAULT_TRAIN`` -> ``train/configs/<recipe>.yaml``), the user's YAML (``--config``), then
explicit arguments / flags. The resolved config is stored in the checkpoint and in ``config.yaml``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from spikeport.data.images import DATASETS
from spikeport.errors import ConfigError, unknown_choice
from spikeport.train.augment import AugmentConfig, augment_config, float_pair
from spikeport.train.model_config import ModelConfig
from spikeport.train.presets import DEFAULT_TRAIN, PRESETS, preset_config

CONFIG_DIR = Path(__file__).parent / "configs"


@dataclass
class TrainConfig:
    preset: str = "digits-tiny"  # one of presets.PRESETS
    dataset: str | None = None  # digits | cifar10 | cifar100 | imagenet; default: the preset's
    data_dir: str | None = None  # CIFAR python-pickle folder or ImageNet image folder
    model: dict = field(default_factory=dict)  # ModelConfig overrides: attention, T, mlp, skip, neuron_backend ...
    epochs: int = 30  # total epochs, cooldown included
    batch_size: int = 64  # per process
    eval_batch_size: int | None = None  # default: batch_size
    eval_every: int = 1  # test-split evaluation every N epochs and after the last; 0: after the last only
    lr: float = 1e-3  # AdamW peak learning rate, reached after warmup
    min_lr: float = 1e-5  # cosine floor, held during cooldown
    warmup_epochs: float = 1.0  # linear warmup from warmup_lr
    warmup_lr: float = 1e-5
    cooldown_epochs: int = 0  # final epochs at min_lr (timm's cooldown)
    weight_decay: float = 0.06  # not on biases / norm weights
    betas: tuple[float, float] = (0.9, 0.999)
    smoothing: float = 0.1  # label smoothing
    clip_grad: float | None = None  # max gradient norm; None = no clipping
    augment: AugmentConfig = field(default_factory=AugmentConfig)  # a profile name or fields in YAML
    seed: int = 42
    amp: bool = False  # float16 autocast + GradScaler, CUDA only
    compile: bool = True  # torch.compile the training step's forward on CUDA (loop.training_net); CPU runs eager
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    num_workers: int = 0  # DataLoader workers (0: load in the main process; CPU-friendly)
    out: str | None = None  # run folder; None writes nothing (API use)
    resume: bool = False  # continue from <out>/checkpoint.pt
    init: str | None = None  # start from these weights (spikeport or official checkpoint)
    qat: bool = False  # quantization-aware fine-tuning of `init` through the fake-quant executor
    qat_epochs: int = 2  # QAT epochs (the float schedule above is not used with qat)
    qat_lr: float = 2e-4  # QAT AdamW learning rate: small, the weights start at the float optimum
    progress: bool = True  # tqdm progress bars (stderr)
    log: bool = True  # one line of metrics per epoch (stderr)

    def __post_init__(self) -> None:
        self.augment = augment_config(self.augment)
        self.betas = float_pair(self.betas, "betas")
        self.model = dict(self.model or {})
        for name in ("epochs", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} = {getattr(self, name)}: expected a positive integer")
        if int(self.eval_every) < 0:
            raise ConfigError(f"eval_every = {self.eval_every}: expected 0 (the last epoch only) or a positive integer")
        if self.lr <= 0:
            raise ConfigError(f"lr = {self.lr}: expected a positive learning rate")
        if not 0 <= self.smoothing < 1:
            raise ConfigError(f"smoothing = {self.smoothing}: expected a value in [0, 1)")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["augment"], d["betas"] = self.augment.to_dict(), list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"{source}: unknown keys {unknown}; valid keys: {', '.join(sorted(known))}")
        try:
            return cls(**d)
        except TypeError as err:
            raise ConfigError(f"{source}: {err}") from None


def read_yaml(path: str | os.PathLike) -> dict:
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except UnicodeDecodeError:  # a checkpoint or an artifact given as --config
        raise ConfigError(f"{path}: a binary file, not a YAML config (keys as in train/configs/*.yaml)") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {str(err).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys, got {type(data).__name__}")
    return data


def recipe(preset: str) -> dict:
    """The preset's default training recipe (train/configs/<DEFAULT_TRAIN[preset]>.yaml)."""
    if preset not in PRESETS:
        raise unknown_choice("preset", preset, sorted(PRESETS))
    return read_yaml(CONFIG_DIR / f"{DEFAULT_TRAIN[preset]}.yaml")


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        if key in ("model", "augment") and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def resolve_config(
    preset: str | None = None, config_path: str | os.PathLike[str] | None = None, **overrides: Any
) -> TrainConfig:
    """Defaults < preset recipe < YAML file < ``overrides`` (None values are ignored). ``model`` and
    ``augment`` mappings merge key by key; ``augment: <profile>`` replaces the recipe's augmentation."""
    user = read_yaml(config_path) if config_path else {}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    name = preset or overrides.get("preset") or user.get("preset") or TrainConfig.preset
    merged = _merge(_merge(recipe(name), user), overrides)
    merged["preset"] = name
    cfg = TrainConfig.from_dict(merged, source=str(config_path or "config"))
    validate_model(cfg)
    return cfg


def validate_model(cfg: TrainConfig) -> None:
    """Fail on a bad dataset / attention / model key before any data is read."""
    known = {f.name for f in fields(ModelConfig)}
    unknown = sorted(set(cfg.model) - known)
    if unknown:
        raise ConfigError(f"unknown model config keys {unknown}; valid keys: {sorted(known)}")
    if cfg.dataset is not None and cfg.dataset not in DATASETS:
        raise unknown_choice("dataset", cfg.dataset, DATASETS)
    preset_config(cfg.preset, cfg.dataset, **cfg.model)


def as_config(config: TrainConfig | dict[str, Any] | None = None, **overrides: Any) -> TrainConfig:
    """A TrainConfig from a TrainConfig, a dict of TrainConfig fields, or None (the preset recipe), with
    ``overrides`` (TrainConfig fields) applied."""
    if config is None:
        return resolve_config(**overrides)
    if isinstance(config, dict):
        return resolve_config(config.get("preset"), None, **{**config, **overrides})
    if overrides:
        return TrainConfig.from_dict({**config.to_dict(), **overrides})
    return config
