"""The model a run report names (its ``model`` object), as a config checked against the run's layers: the GPU
baselines and the memory breakdown rebuild that network, so a config of another network is an error. And the op
registry as the run report's validator holds each layer to it (``op_counters``).

The check builds a ``ModelConfig`` (``train.model_config``, which imports no torch: a deploy install without torch
reads and checks it); its verdict is kept in the report cache (``gather.cache``) by the run's config and layers.
``CheckedConfig`` carries the checked fields and builds the ``ModelConfig`` where something is computed."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from spikeport.errors import CacheEntryError, ConfigError, ReportError
from spikeport.gather.cache import ReportCache
from spikeport.ir.kernels import KERNELS
from spikeport.run_report import RunReport
from spikeport.train.model_config import ModelConfig, attention_spec

# counters an op's record once produced and no longer does: run reports written then read as they were
# (the dendritic core counted its X writes before its chip-native lowering, ed646bd)
FORMER_COUNTERS = {"dendritic": ("dendritic_updates",)}


@functools.cache
def op_counters() -> dict[str, frozenset[str]]:
    """The op registry as the run report's validator holds layers to it (``RunReport.validate``'s ``ops``): every op
    of the registry -> the counters its kernel record counts (and those it once counted). ``run_report`` reads files
    with the standard library alone: the registry is given to it here, where the report's figures are made."""
    return {op: frozenset(KERNELS.get(op).counters) | frozenset(FORMER_COUNTERS.get(op, ())) for op in KERNELS}


@dataclass(frozen=True)
class CheckedConfig:
    """A run report's model config that passed the check, as ``ModelConfig.to_dict`` writes it."""

    fields: Mapping[str, Any]

    def build(self) -> ModelConfig:
        """The ModelConfig: where a baseline or the memory is computed, not read from the cache."""
        return ModelConfig.from_dict(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.fields))

    @property
    def arch(self) -> str:
        return str(self.fields["arch"])

    def size(self) -> tuple[int, int, int]:
        """(embed_dim, depth, img_size): whether two runs are of one model size."""
        return int(self.fields["embed_dim"]), int(self.fields["depth"]), int(self.fields["img_size"])


def model_config(run: RunReport, where: str = "run report", cache: ReportCache | None = None) -> CheckedConfig | None:
    """The run's model config, or None when the run report carries none (netx files: only a ``dataset``). A config
    that does not validate, or that describes another network than the run's layers (another attention core, depth,
    T...), is a ReportError naming ``where``: its memory and GPU figures would be another model's. A config that
    passed is kept in ``cache`` by the run's config and layers (``CheckedConfig``)."""
    m = run.model or {}
    if not set(m) - {"dataset"}:
        return None
    key = {
        "model": m,
        "T": run.T,
        "layers": [[layer.name, layer.op] for layer in run.layers],
        "max_prediction": max(run.predictions) if run.predictions else None,
    }
    kept = (cache or ReportCache(None)).get("config", key, lambda value: _kept_config(value, m))
    if kept is not None:
        return kept
    cfg = _checked(m, run, where)
    (cache or ReportCache(None)).put("config", key, cfg.to_dict())
    return CheckedConfig(cfg.to_dict())


def _kept_config(value: Any, m: Mapping[str, Any]) -> CheckedConfig:
    """A config entry's value: ``ModelConfig.to_dict`` of the run's config ``m``, so every field ``m`` gives has the
    value ``m`` gives it and the sizes the report reads are positive whole numbers (a re-sealed entry of another
    model would print another model's memory)."""
    if not isinstance(value, dict) or value.get("arch") not in ("spikformer", "vit"):
        raise CacheEntryError("value: expected a model config of arch spikformer or vit")
    for name in ("embed_dim", "depth", "img_size", "num_heads", "num_classes", "T"):
        v = value.get(name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise CacheEntryError(f"value.{name}: expected a positive whole number, found {v!r}")
    for name, given in m.items():
        if name in value and value[name] != given and not _same_sequence(value[name], given):
            raise CacheEntryError(f"value.{name}: {value[name]!r}, the run report's model has {given!r}")
    return CheckedConfig(value)


def _same_sequence(a: Any, b: Any) -> bool:
    return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and list(a) == list(b)


def _checked(m: dict[str, Any], run: RunReport, where: str) -> ModelConfig:
    known = {f.name for f in fields(ModelConfig)}
    if "arch" not in m:
        raise ReportError(where, "model", "a model config without 'arch' (spikformer or vit)")
    try:
        cfg = ModelConfig.from_dict({k: v for k, v in m.items() if k in known})
    except (ConfigError, TypeError) as err:
        raise ReportError(where, "model", f"not a valid model config: {err}") from None
    problem = _config_mismatch(cfg, run)
    if problem:
        raise ReportError(where, "model", f"describes another network than the run's layers: {problem}")
    return cfg


def _config_mismatch(cfg: ModelConfig, run: RunReport) -> str | None:
    """How a Spikformer config disagrees with the layers a run counted (None when it does not). The structure is
    compared where the layers carry the converter's names (``block.<i>.attn...``)."""
    if cfg.arch != "spikformer":
        return None
    ops = {layer.op for layer in run.layers}
    names = [layer.name for layer in run.layers]
    blocks = {name.split(".")[1] for name in names if name.startswith("block.") and name.count(".") >= 2}
    counted_op = "dendritic" if "dendritic" in ops else "attention" if "attention" in ops else "none"
    checks: list[tuple[str, object, object]] = [("T", cfg.T, run.T)]
    if blocks:  # the converter's layer names
        checks += [
            ("depth", cfg.depth, len(blocks)),
            ("attention op", "dendritic" if cfg.attention_spec.core == "dendritic" else "attention", counted_op),
            ("lrf", cfg.attention_spec.lrf, any(".attn.lrf." in name for name in names)),
            ("mlp", cfg.mlp, any(".mlp." in name for name in names)),
        ]
    for what, said, counted in checks:
        if said != counted:
            return f"{what} {said!r} (attention {cfg.attention!r}), the layers have {counted!r}"
    width = next((layer.neurons for layer in run.layers if layer.name == "block.0.attn.q_lif"), None)
    tokens = cfg.grid[0] * cfg.grid[1]
    if width is not None and width != tokens * cfg.embed_dim:  # the GPU baseline builds a model of this width
        return f"embed_dim {cfg.embed_dim} ({tokens} tokens), block.0.attn.q_lif has {width} neurons"
    if run.predictions and max(run.predictions) >= cfg.num_classes:
        return f"predictions up to class {max(run.predictions)}, the model has {cfg.num_classes} classes"
    return None


def attention_cores(names: list[str | None], cache: ReportCache | None = None) -> dict[str, str]:
    """Each attention variant name -> its attention core (``ssa`` for every SSA form, ...); a name that is no
    variant (a ViT, a netx network's file name) is left out. Kept in ``cache`` by the names."""
    wanted = list(dict.fromkeys(n for n in names if n))
    kept = (cache or ReportCache(None)).get("cores", {"names": wanted}, lambda value: _kept_cores(value, wanted))
    if kept is not None:
        return kept

    out = {}
    for name in wanted:
        try:
            out[name] = attention_spec(name).core
        except ConfigError:
            continue
    (cache or ReportCache(None)).put("cores", {"names": wanted}, out)
    return out


def _kept_cores(value: Any, wanted: list[str]) -> dict[str, str]:
    """A cores entry's value: some of the ``wanted`` names, each to the name of an attention core."""
    if not isinstance(value, dict) or not set(value) <= set(wanted):
        raise CacheEntryError(f"value: expected an object of some of {wanted}")
    bad = [name for name, core in value.items() if not isinstance(core, str) or not core.isidentifier()]
    if bad:
        raise CacheEntryError(f"value.{bad[0]}: expected the name of an attention core, found {value[bad[0]]!r}")
    return dict(value)
