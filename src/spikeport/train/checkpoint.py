"""Checkpoints: atomic save, safe load (``torch.load(weights_only=True)`` only), architecture checks, and
loading the official Spikformer checkpoints (ZK-Zhou/spikformer, timm-style files).

A spikeport checkpoint is a dict of plain data:
``{"format": "spikeport.checkpoint", "version": 1, "model": state_dict, "model_config": ModelConfig.to_dict(),
"train_config": dict, "epoch": completed epochs, "optimizer": ..., "scheduler": ..., "scaler": ...,
"rng": {...}, "seed": int, "history": [per-epoch metrics]}``.
"""

from __future__ import annotations

import argparse
import os
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from spikeport.atomic import atomic_write
from spikeport.data.images import DATASETS
from spikeport.errors import CheckpointError, ConfigError
from spikeport.ir.hdf5 import open_hdf5
from spikeport.train.model_config import ModelConfig

FORMAT, VERSION = "spikeport.checkpoint", 1
SHOW = 5  # mismatched keys named in an error message
# |value| of any floating-point tensor of a checkpoint: a sum of squares over 2**27 float32 values (the largest
# tensor a conversion takes, ir.limits.MAX_PARAM_ELEMENTS) stays finite below it (1e30 once overflowed numpy's norm
# and was refused three steps later naming an exponent)
MAX_WEIGHT = 1e15
# a legacy (pre-1.6, non-zip) torch.save file opens with this magic number, pickled as a long
LEGACY_MAGIC = b"\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"


def save_atomic(obj: object, path: str | os.PathLike[str]) -> Path:
    """torch.save through :func:`spikeport.atomic.atomic_write`: never a half-written file; a full disk or a
    file-size limit is one WriteError naming ``path``."""
    path = Path(path)
    with atomic_write(path) as tmp, open(tmp, "wb") as f:
        try:
            torch.save(obj, f)
        except RuntimeError as err:  # torch's zip writer reports the OSError of the file object it wrote to so
            if isinstance(err.__context__, OSError):
                raise err.__context__ from None
            raise
    return path


def read(path: str | os.PathLike, extra_safe_globals: tuple = ()) -> dict:
    """``torch.load(path, weights_only=True)`` on CPU; any failure -> CheckpointError naming the file."""
    path = Path(path).expanduser()
    if path.is_dir():
        inside = [p.name for p in (path / "checkpoint.pt", path / "model.spk.h5") if p.is_file()]
        hint = f"; it holds {' and '.join(inside)}" if inside else ""
        raise CheckpointError(f"{path}: a folder, not a checkpoint file{hint}")
    if not path.exists():
        raise CheckpointError(f"{path}: no such checkpoint file")
    if not path.is_file():  # a FIFO would block the read
        raise CheckpointError(f"{path}: not a regular file (a FIFO or device), expected a checkpoint file")
    with open(path, "rb") as f:
        head = f.read(32)
        if head.startswith(b"\x80") and LEGACY_MAGIC not in head:
            raise CheckpointError(
                f"{path}: a raw Python pickle, not a torch checkpoint (torch.save writes a zip archive): spikeport "
                "loads only torch's weights-only format, which runs no code from the file"
            )
        if head[:8] == b"\x89HDF\r\n\x1a\n":
            open_hdf5(path).close()  # a damaged or refused one says so (a truncated netx file is no artifact)
            raise CheckpointError(
                f"{path}: an HDF5 file (a converted spikeport artifact, or a lava-dl netx network), not a torch "
                f"checkpoint: an artifact is already converted (run it: spikeport run {path}); `spikeport convert` "
                "also reads netx files (.net)"
            )
    _check_crc(path)
    try:
        # torch warns (two lines) about a raw pickle's protocol before refusing it: the refusal says it all
        with torch.serialization.safe_globals(list(extra_safe_globals)), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - truncated zip, bad pickle, disallowed global ...
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if "Weights only load failed" in reason:  # torch's advice (weights_only=False) would run the file's code
            detail = " ".join(str(err).split("WeightsUnpickler error:")[-1].split("Check the documentation")[0].split())
            raise CheckpointError(
                f"{path}: torch's weights-only loader refused it ({detail[:200]}: an object or pickle protocol it "
                "does not load); spikeport loads checkpoints no other way, since any other load runs the file's code"
            ) from None
        raise CheckpointError(
            f"{path}: not a readable torch checkpoint (truncated or corrupt?): {type(err).__name__}: {reason[:200]}"
        ) from None
    if not isinstance(obj, Mapping):
        raise CheckpointError(
            f"{path}: holds a {type(obj).__name__}; expected a dict (a state dict or a spikeport checkpoint)"
        )
    return dict(obj)


def _check_crc(path: Path) -> None:
    """torch.load does not check the CRC-32 that every member of its zip format carries: a flipped bit in a weight
    loads as another model. The zip module does (the whole file is read once: ~1 s per GB)."""
    if not zipfile.is_zipfile(path):  # the legacy (pre-1.6) format: no checksums to check
        return
    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except Exception as err:  # noqa: BLE001 - a damaged directory, an unknown compression method ...
        raise CheckpointError(f"{path}: damaged zip structure (corrupted?): {type(err).__name__}: {err}") from None
    if bad is not None:
        raise CheckpointError(f"{path}: member '{bad}' fails its CRC-32 check: the file was corrupted or edited")


def load(path: str | os.PathLike) -> dict:
    """A spikeport checkpoint (see the module docstring), validated."""
    ckpt = read(path)
    if ckpt.get("format") != FORMAT:
        inner = next((ckpt[k] for k in ("net", "state_dict", "model") if isinstance(ckpt.get(k), Mapping)), ckpt)
        if is_spikingjelly_state(inner):
            raise CheckpointError(
                f"{path}: a SpikingJelly model.spikformer checkpoint, not a spikeport one: load it with "
                "spikeport.train.checkpoint.spikingjelly_model(path, img_size=...) and convert that model "
                "(spikeport.api.convert(model, out, dataset=...); docs/checkpoints.md)"
            )
        raise CheckpointError(
            f"{path}: not a spikeport checkpoint (no format '{FORMAT}'); for official "
            f"Spikformer weights use load_official_state_dict"
        )
    if ckpt.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {ckpt.get('version')}; expected {VERSION}")
    for key in ("model", "model_config", "epoch"):
        if key not in ckpt:
            raise CheckpointError(f"{path}: checkpoint has no '{key}' entry")
    check_state_dict(ckpt["model"], path, "model")
    if not isinstance(ckpt["model_config"], Mapping):
        raise CheckpointError(
            f"{path}: entry 'model_config' is a {type(ckpt['model_config']).__name__}, expected a dict (a model config)"
        )
    epoch = ckpt["epoch"]
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise CheckpointError(f"{path}: entry 'epoch' is {_short(epoch)}, expected an integer >= 0")
    _check_train_config(ckpt.get("train_config"), path)
    return ckpt


def _check_train_config(train: object, path: str | os.PathLike) -> None:
    """What commands read back from ``train_config``: the dataset (convert, analyze and export take their images
    from it) and its folder. An unknown dataset was refused later without naming the file or the entry."""
    if train is None:
        return
    if not isinstance(train, Mapping):
        raise CheckpointError(f"{path}: entry 'train_config' is a {type(train).__name__}, expected a dict")
    dataset = train.get("dataset")
    if dataset is not None and dataset not in DATASETS:
        raise CheckpointError(
            f"{path}: entry 'train_config.dataset' is {_short(dataset)}, expected one of {', '.join(DATASETS)}"
        )
    if not isinstance(train.get("data_dir", ""), (str, type(None))):
        raise CheckpointError(f"{path}: entry 'train_config.data_dir' is {_short(train['data_dir'])}, expected a path")


def check_state_dict(state: object, source: str | os.PathLike, entry: str = "state dict") -> None:
    """``state`` is a state dict (parameter name -> tensor) whose floating-point tensors hold finite numbers only:
    a NaN or inf weight would quantize to a saturated integer and convert silently into another model."""
    if not isinstance(state, Mapping):
        raise CheckpointError(
            f"{source}: entry '{entry}' is a {type(state).__name__}, expected a state dict (parameter name -> tensor)"
        )
    for key, value in state.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor):
            raise CheckpointError(
                f"{source}: entry '{entry}' holds {_short(key)} -> {type(value).__name__}, expected name -> tensor"
            )
        if value.is_floating_point() or value.is_complex():
            bad = int((~torch.isfinite(value)).sum())
            if bad:
                raise CheckpointError(
                    f"{source}: tensor '{key}' of entry '{entry}' holds {bad} non-finite value(s) (NaN or inf) of "
                    f"{value.numel()}: a diverged training run? (expected finite weights)"
                )
            top = float(value.abs().max()) if value.numel() else 0.0
            if top > MAX_WEIGHT:
                raise CheckpointError(
                    f"{source}: tensor '{key}' of entry '{entry}' holds values up to {top:.3g} in magnitude, expected "
                    f"at most {MAX_WEIGHT:.0e} (no trained network's are; beyond it float32 sums of squares overflow "
                    "and a conversion's exponents leave Loihi's range)"
                )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def state_dict_mismatch(model: nn.Module, state: Mapping[str, torch.Tensor]) -> str | None:
    """None if ``state`` fits ``model`` exactly, else a one-line summary of the first mismatched keys."""
    own = model.state_dict()
    missing = [f"{k} {tuple(own[k].shape)}" for k in own if k not in state]  # with the shape expected
    unexpected = [k for k in state if k not in own]
    shapes = [
        f"{k} {tuple(state[k].shape)} vs model {tuple(own[k].shape)}"
        for k in own
        if k in state and hasattr(state[k], "shape") and tuple(state[k].shape) != tuple(own[k].shape)
    ]
    parts = []
    for label, keys in (("missing keys", missing), ("unexpected keys", unexpected), ("shape mismatches", shapes)):
        if keys:
            more = f" (+{len(keys) - SHOW} more)" if len(keys) > SHOW else ""
            parts.append(f"{label} [{', '.join(keys[:SHOW])}]{more}")
    return "; ".join(parts) or None


def load_state_checked(model: nn.Module, state: Mapping[str, torch.Tensor], source: str | os.PathLike) -> None:
    """``model.load_state_dict(state, strict=True)``, but a mismatch names the keys and the file."""
    problem = state_dict_mismatch(model, state)
    if problem:
        raise CheckpointError(f"{source}: weights of another architecture than {type(model).__name__}: {problem}")
    model.load_state_dict(state, strict=True)


def build_from_checkpoint(ckpt: dict[str, Any], source: str | os.PathLike[str], **overrides: Any) -> nn.Module:
    """The model a spikeport checkpoint describes, with its weights (``overrides``: e.g. neuron_backend)."""
    from spikeport.train.models import build_model

    try:
        cfg = ModelConfig.from_dict({**ckpt["model_config"], **overrides})
    except (ConfigError, TypeError) as err:
        raise CheckpointError(f"{source}: bad model_config: {err}") from None
    model = build_model(cfg)
    load_state_checked(model, ckpt["model"], source)
    return model


def load_model(path: str | os.PathLike[str], **overrides: Any) -> tuple[nn.Module, dict[str, Any]]:
    """(model in eval mode, checkpoint dict) from a spikeport checkpoint file."""
    ckpt = load(path)
    return build_from_checkpoint(ckpt, path, **overrides).eval(), ckpt


# ------------------------------------------------------------------------------- official checkpoints
def unwrap_official(obj: Mapping, source: str = "state dict") -> dict[str, torch.Tensor]:
    """The bare state dict of a timm-style checkpoint: ``{'state_dict': ...}`` / ``{'model': ...}`` /
    ``{'state_dict_ema': ...}`` wrappers and DDP's ``module.`` prefixes removed."""
    state = obj
    for key in ("state_dict", "model", "state_dict_ema", "model_ema"):
        if isinstance(state, Mapping) and key in state and isinstance(state[key], Mapping):
            state = state[key]
            break
    if not isinstance(state, Mapping) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(
            f"{source}: no state dict of tensors found (looked for 'state_dict', 'model', "
            f"'state_dict_ema' or a bare state dict)"
        )
    check_state_dict(state, source)
    return {(k[len("module.") :] if k.startswith("module.") else k): v for k, v in state.items()}


def load_official_state_dict(model: nn.Module, path_or_state: str | os.PathLike | Mapping) -> nn.Module:
    """Load official Spikformer weights (``cifar10/model.py`` -> ``layout='linear'`` presets,
    ``imagenet/model.py`` -> ``layout='conv'``) with ``strict=True``. timm checkpoints store the training
    arguments as an ``argparse.Namespace``, the one non-tensor global allowed here."""
    if isinstance(path_or_state, Mapping):
        source, obj = "official Spikformer state dict", path_or_state
    else:
        source = str(path_or_state)
        obj = read(path_or_state, extra_safe_globals=(argparse.Namespace,))
    load_state_checked(model, unwrap_official(obj, source), source)
    return model


# ------------------------------------------------------------------------------ SpikingJelly checkpoints
# spikingjelly.activation_based.model.spikformer (SpikingJelly 2.0): the same network as the official code's
# ImageNet layout (1x1 Conv1d projections, BN, the same LIFs, SSA as Q (K^T V) * 0.125, x + RPE, the head on the
# mean over tokens), with three differences the mapping takes care of: Q, K, V are one Conv1d(D, 3D) + BN(3D)
# (split into q/k/v, in that order), the projections and MLPs have no bias (spikeport's zero), and the stem pools
# before each pooled stage's LIF (ModelConfig.pool_before_lif). SpikingJelly's head runs per time step: its output
# averaged over T is spikeport's logits (the head is linear).
SJ_MARK = "patch_embed.stages.0.conv_bn.block.0.weight"
SJ_BN = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")


def is_spikingjelly_state(state: Mapping) -> bool:
    """Whether a state dict is SpikingJelly's model.spikformer (its stem's first key)."""
    return SJ_MARK in state


def check_spikingjelly_state(state: Mapping[str, torch.Tensor], source: str | os.PathLike[str]) -> None:
    """Every tensor the mapping reads present, of the shape SpikingJelly's model.spikformer gives it for the sizes
    the state dict's own tensors say (D from the position encoding, the input channels from the stem, the classes
    from the head, the MLP width from block 0); a CheckpointError naming ``source``, the key and the shape expected
    otherwise (a missing head.weight was a KeyError, a 1-D stem weight an IndexError)."""
    if not is_spikingjelly_state(state):
        raise CheckpointError(f"{source}: not a SpikingJelly model.spikformer state dict (no '{SJ_MARK}')")
    rpe = "patch_embed.positional_encoding.conv_bn.block.0.weight"
    d = _sj_size(state, rpe, 4, "(D, D, 3, 3)", source)
    c_in = _sj_size(state, SJ_MARK, 4, f"({d // 8}, C_in, 3, 3)", source, axis=1)
    classes = _sj_size(state, "head.weight", 2, f"(classes, {d})", source)
    blocks = sorted({int(k.split(".")[1]) for k in state if k.startswith("blocks.") and k.split(".")[1].isdigit()})
    hidden = _sj_size(state, "blocks.0.mlp.fc1.0.weight", 3, f"(hidden, {d}, 1)", source) if blocks else 4 * d
    stem = [c_in, d // 8, d // 4, d // 2, d]
    shapes: dict[str, tuple[int, ...]] = {"head.weight": (classes, d), "head.bias": (classes,), rpe: (d, d, 3, 3)}
    convs: dict[str, tuple[int, ...]] = {
        f"patch_embed.stages.{i}.conv_bn.block": (stem[i + 1], stem[i], 3, 3) for i in range(4)
    }
    convs["patch_embed.positional_encoding.conv_bn.block"] = (d, d, 3, 3)
    for b in range(len(blocks)):  # blocks 0 .. n-1: a gap is a missing key of the block that is not there
        convs |= {
            f"blocks.{b}.attn.qkv_conv_bn": (3 * d, d, 1),
            f"blocks.{b}.attn.proj_conv_bn": (d, d, 1),
            f"blocks.{b}.mlp.fc1": (hidden, d, 1),
            f"blocks.{b}.mlp.fc2": (d, hidden, 1),
        }
    for name, shape in convs.items():
        shapes[f"{name}.0.weight"] = shape
        for bn in SJ_BN:
            shapes[f"{name}.1.{bn}"] = () if bn == "num_batches_tracked" else (shape[0],)
    for key, shape in shapes.items():
        if key not in state:
            raise CheckpointError(f"{source}: key '{key}' is missing: expected a tensor of shape {shape}")
        if tuple(state[key].shape) != shape:
            raise CheckpointError(f"{source}: key '{key}' has shape {tuple(state[key].shape)}, expected {shape}")


def _sj_size(
    state: Mapping[str, torch.Tensor], key: str, ndim: int, shape: str, source: str | os.PathLike[str], axis: int = 0
) -> int:
    """A size a SpikingJelly tensor says (its ``axis``), after checking it is there with ``ndim`` axes."""
    if key not in state:
        raise CheckpointError(f"{source}: key '{key}' is missing: expected a tensor of shape {shape}")
    if state[key].ndim != ndim or state[key].shape[axis] < 1:
        raise CheckpointError(f"{source}: key '{key}' has shape {tuple(state[key].shape)}, expected {shape}")
    return int(state[key].shape[axis])


def spikingjelly_config(
    state: Mapping[str, torch.Tensor],
    *,
    img_size: int = 224,
    num_heads: int | None = None,
    patch_size: int | None = None,
    T: int = 4,
    source: str | os.PathLike[str] = "SpikingJelly state dict",
    **overrides: Any,
) -> ModelConfig:
    """The ModelConfig of a SpikingJelly Spikformer state dict: sizes from its tensors; what the weights do not
    say from the arguments: ``img_size``, ``num_heads`` (default D / 32, as spikformer_ti / _s / _cifar10),
    ``patch_size`` 4 (pools after stages 2 and 3) or 16 (after all four; default: 4 up to 64-pixel images, else
    16), T. The LIFs are SpikingJelly's defaults there (tau 2, threshold 1, attention 0.5)."""
    check_spikingjelly_state(state, source)
    d = int(state["patch_embed.positional_encoding.conv_bn.block.0.weight"].shape[0])
    depth = len({k.split(".")[1] for k in state if k.startswith("blocks.")})
    hidden = int(state["blocks.0.mlp.fc1.0.weight"].shape[0]) if depth else 4 * d
    patch = patch_size if patch_size is not None else (4 if img_size <= 64 else 16)
    if patch not in (4, 16):
        raise ConfigError(f"patch_size = {patch}: SpikingJelly's Spikformer stem has patch size 4 or 16")
    fields = dict(
        img_size=img_size,
        in_channels=int(state[SJ_MARK].shape[1]),
        num_classes=int(state["head.weight"].shape[0]),
        embed_dim=d,
        depth=depth,
        num_heads=num_heads if num_heads is not None else max(1, d // 32),
        mlp_ratio=hidden / d,
        T=T,
        pool_stages=(2, 3) if patch == 4 else (0, 1, 2, 3),
        layout="conv",
        attention="ssa",
        pool_before_lif=True,
    )
    return ModelConfig(**{**fields, **overrides})


def spikingjelly_state_dict(
    state: Mapping[str, torch.Tensor], model: nn.Module, source: str | os.PathLike[str] = "SpikingJelly state dict"
) -> dict[str, torch.Tensor]:
    """SpikingJelly's tensors under spikeport's names and shapes for ``model`` (layout conv, pool_before_lif):
    the fused Q, K, V split, Conv1d kernels reshaped where spikeport's are Conv2d, absent biases zero, the unused
    LayerNorms at their initial values; a CheckpointError naming the keys SpikingJelly's file lacks."""
    target = model.state_dict()
    out: dict[str, torch.Tensor] = {}

    def take(key: str) -> torch.Tensor:
        if key not in state:
            raise CheckpointError(f"{source}: key '{key}' is missing (expected for {type(model).__name__})")
        return state[key]

    def bn(dst: str, src: str, part: slice = slice(None)) -> None:
        for name in SJ_BN:
            value = take(f"{src}.{name}")
            out[f"{dst}.{name}"] = value if name == "num_batches_tracked" else value[part]

    stem = [f"patch_embed.stages.{i}.conv_bn.block" for i in range(4)]
    for i, suffix in enumerate(("", "1", "2", "3")):
        out[f"patch_embed.proj_conv{suffix}.weight"] = take(f"{stem[i]}.0.weight")
        bn(f"patch_embed.proj_bn{suffix}", f"{stem[i]}.1")
    out["patch_embed.rpe_conv.weight"] = take("patch_embed.positional_encoding.conv_bn.block.0.weight")
    bn("patch_embed.rpe_bn", "patch_embed.positional_encoding.conv_bn.block.1")
    depth = len({k.split(".")[1] for k in state if k.startswith("blocks.")})
    for b in range(depth):
        src, dst = f"blocks.{b}", f"block.{b}"
        qkv = take(f"{src}.attn.qkv_conv_bn.0.weight")
        d = qkv.shape[0] // 3
        for i, p in enumerate("qkv"):
            part = slice(i * d, (i + 1) * d)
            out[f"{dst}.attn.{p}_conv.weight"] = qkv[part]
            bn(f"{dst}.attn.{p}_bn", f"{src}.attn.qkv_conv_bn.1", part)
        out[f"{dst}.attn.proj_conv.weight"] = take(f"{src}.attn.proj_conv_bn.0.weight")
        bn(f"{dst}.attn.proj_bn", f"{src}.attn.proj_conv_bn.1")
        for fc in ("fc1", "fc2"):
            out[f"{dst}.mlp.{fc}_conv.weight"] = take(f"{src}.mlp.{fc}.0.weight")
            bn(f"{dst}.mlp.{fc}_bn", f"{src}.mlp.{fc}.1")
    out["head.weight"], out["head.bias"] = take("head.weight"), take("head.bias")
    for key, value in target.items():
        if key not in out:  # biases SpikingJelly's convs do not have; the unused LayerNorms
            out[key] = torch.zeros_like(value) if not key.endswith(".weight") else torch.ones_like(value)
        elif out[key].shape != value.shape and out[key].numel() == value.numel():
            out[key] = out[key].reshape(value.shape)  # Conv1d (C, D, 1) -> spikeport's Conv2d (C, D, 1, 1)
    extra = sorted(set(state) - _sj_keys_read(state, depth))
    if extra:
        raise CheckpointError(
            f"{source}: keys this mapping does not read: {', '.join(extra[:SHOW])}"
            + (f" (+{len(extra) - SHOW})" if len(extra) > SHOW else "")
        )
    return out


def _sj_keys_read(state: Mapping[str, torch.Tensor], depth: int) -> set[str]:
    convs = [f"patch_embed.stages.{i}.conv_bn.block" for i in range(4)]
    convs.append("patch_embed.positional_encoding.conv_bn.block")
    for b in range(depth):
        convs += [f"blocks.{b}.attn.qkv_conv_bn", f"blocks.{b}.attn.proj_conv_bn"]
        convs += [f"blocks.{b}.mlp.fc1", f"blocks.{b}.mlp.fc2"]
    keys = {f"{c}.0.weight" for c in convs} | {f"{c}.1.{n}" for c in convs for n in SJ_BN}
    return keys | {"head.weight", "head.bias"}


def load_spikingjelly_state_dict(
    model: nn.Module, path_or_state: str | os.PathLike | Mapping, source: str | os.PathLike[str] | None = None
) -> nn.Module:
    """Load a SpikingJelly ``model.spikformer`` checkpoint (a bare state dict, or one under 'state_dict' / 'model'
    / 'net', as SpikingJelly's examples save it) into a spikeport Spikformer built from
    :func:`spikingjelly_config` (``strict=True`` after the mapping of :func:`spikingjelly_state_dict`). ``source``
    names a state dict given in memory in messages (the file it was read from)."""
    if isinstance(path_or_state, Mapping):
        source, obj = str(source or "SpikingJelly state dict"), path_or_state
    else:
        source = str(path_or_state)
        obj = read(path_or_state, extra_safe_globals=(argparse.Namespace,))
    if isinstance(obj.get("net"), Mapping):  # SpikingJelly's training scripts save {'net': ..., 'epoch': ...}
        obj = obj["net"]
    state = unwrap_official(obj, source)
    cfg = getattr(model, "cfg", None)
    if cfg is None or cfg.layout != "conv" or not cfg.pool_before_lif:
        raise CheckpointError(
            f"{source}: a SpikingJelly model.spikformer checkpoint needs a model with layout='conv' and "
            "pool_before_lif=True (build it from spikingjelly_config(state, img_size=..., num_heads=...))"
        )
    check_spikingjelly_state(state, source)
    load_state_checked(model, spikingjelly_state_dict(state, model, source), source)
    return model


def spikingjelly_model(path_or_state: str | os.PathLike[str] | Mapping[str, Any], **config: Any) -> nn.Module:
    """A spikeport Spikformer holding a SpikingJelly ``model.spikformer`` checkpoint's weights, in eval mode:
    ``spikingjelly_model("sj.pth", img_size=32)`` (``config``: :func:`spikingjelly_config`'s arguments), ready for
    ``spikeport.api.convert(model, out, dataset=...)``; its logits are SpikingJelly's output averaged over T."""
    from spikeport.train.models import build_model

    if isinstance(path_or_state, Mapping):
        obj: Mapping = path_or_state
    else:
        obj = read(path_or_state, extra_safe_globals=(argparse.Namespace,))
    source = "SpikingJelly state dict" if isinstance(path_or_state, Mapping) else str(path_or_state)
    state = unwrap_official(obj["net"] if isinstance(obj.get("net"), Mapping) else obj, source)
    model = build_model(spikingjelly_config(state, source=source, **config))
    load_spikingjelly_state_dict(model, state, source)
    return model.eval()
