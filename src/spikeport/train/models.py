"""Spikformer (with the SSA / LRF-SSA / LRF-causal / LRF-Dyn attention switch) and the ViT baseline.

Read top to bottom: attention spec, config, SPS stem, attention, MLP, block, Spikformer, ViT.
Module names follow the official code (ZK-Zhou/spikformer): ``layout="linear"`` is the CIFAR code
(``q_linear``, ``fc1_linear``, ``proj_linear``: nn.Linear with bias), ``layout="conv"`` the ImageNet code
(``q_conv``: Conv1d without bias, ``proj_conv``: Conv1d with bias, ``fc1_conv``: Conv2d 1x1), so an
official checkpoint loads with ``strict=True``. Internally every block works on ``[T, B, N, C]``.
The unused ``norm1``/``norm2`` LayerNorms of the official blocks are kept for the same reason.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from spikeport.errors import ConfigError, unknown_choice
from spikeport.ir.limits import MAX_IMG_SIZE, MAX_T
from spikeport.train.attention import (
    Dendrites,
    LocalReceptiveField,
    causal_core_parallel,
    causal_core_running,
    ssa_core,
)
from spikeport.train.neurons import NEURON_BACKENDS, groupable, lif_group, make_lif

ARCHS = ("spikformer", "vit")
LAYOUTS = ("linear", "conv")
INFERENCE_FORMS = ("parallel", "recurrent")
ATTENTION_CORES = ("ssa", "causal", "dendritic")


@dataclass(frozen=True)
class AttentionSpec:
    """What an attention variant is made of (DESIGN.md section 2; the cores are in train/attention.py):

    core       ``ssa``: Q (K^T V) over all tokens; ``causal``: the running sum S_n = sum_{j<=n} k_j^T v_j;
               ``dendritic``: the dendritic recursion on u = k * v, read out as q * g
    lrf        the local receptive field term (depthwise dilated 3x3 convs on V) added to the core
    dendrites  k, the dendritic compartments per channel (``dendritic`` core only, 0 otherwise)

    Code that depends on the variant asks these fields, never the variant's name.
    """

    core: str
    lrf: bool
    dendrites: int = 0

    def __post_init__(self) -> None:
        if self.core not in ATTENTION_CORES:
            raise unknown_choice("attention core", self.core, ATTENTION_CORES)
        if not isinstance(self.lrf, bool):
            raise ConfigError(f"attention spec field 'lrf' must be a bool, got {self.lrf!r}")
        if self.core == "dendritic" and not (isinstance(self.dendrites, int) and self.dendrites >= 1):
            raise ConfigError(
                f"attention spec field 'dendrites' (num_dendrites) must be an integer >= 1 for the "
                f"dendritic core, got {self.dendrites!r}"
            )
        if self.core != "dendritic" and self.dendrites != 0:
            raise ConfigError(
                f"attention spec field 'dendrites' must be 0 for the {self.core} core "
                f"(only the dendritic core has dendrites), got {self.dendrites!r}"
            )

    @property
    def causal(self) -> bool:
        """Token n mixes only tokens j <= n (its core runs token by token at inference)."""
        return self.core != "ssa"

    @property
    def name(self) -> str:
        """The user-facing variant name (CLI, presets, checkpoints, artifacts)."""
        key = (self.core, self.lrf)
        for name, parts in ATTENTION_VARIANTS.items():
            if parts == key:
                return name
        raise ConfigError(f"attention spec {self} has no variant name; named variants: {', '.join(ATTENTION_VARIANTS)}")


# The user-facing variant names (the interface: CLI flags, presets, checkpoints' model_config, artifacts'
# meta) and what each is made of: (core, lrf). The only place that reads a variant's name.
ATTENTION_VARIANTS: dict[str, tuple[str, bool]] = {
    "ssa": ("ssa", False),
    "lrf_ssa": ("ssa", True),
    "lrf_causal": ("causal", True),
    "lrf_dyn": ("dendritic", True),
}
ATTENTIONS = tuple(ATTENTION_VARIANTS)


def attention_spec(name: str, num_dendrites: int = 8) -> AttentionSpec:
    """The spec of the variant ``name``; ``num_dendrites`` is k, used by the dendritic core only."""
    if name not in ATTENTION_VARIANTS:
        raise unknown_choice("attention", name, ATTENTIONS)
    core, lrf = ATTENTION_VARIANTS[name]
    return AttentionSpec(core, lrf, num_dendrites if core == "dendritic" else 0)


def _is_int(v: object) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)  # numpy ints too


def _is_real(v: object) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


# the bounds of ModelConfig's numeric fields: far above every published Spikformer / ViT, far below a model that
# cannot be built on a host (MAX_PARAMS bounds the product)
_BOUNDS: dict[str, tuple[float, float]] = {
    "img_size": (1, MAX_IMG_SIZE),
    "in_channels": (1, 64),
    "num_classes": (1, 100_000),
    "embed_dim": (1, 16_384),
    "depth": (0, 256),
    "num_heads": (1, 1024),
    "mlp_ratio": (0.0, 64.0),
    "T": (1, MAX_T),
    "pool_stages": (0, 3),
    "num_dendrites": (0, 256),
    "lrf_dilations": (1, 64),
    "tau": (1.0, 1e6),
    "v_threshold": (1e-9, 1e9),
    "attn_v_threshold": (1e-9, 1e9),
    "scale": (-1e9, 1e9),
    "patch_size": (1, 4096),
}
MAX_PARAMS = 2e9


def config_of(model: nn.Module) -> ModelConfig:
    """The configuration of a spikeport model (``model.cfg``); any other torch module is refused by name."""
    config = getattr(model, "cfg", None)
    if not isinstance(config, ModelConfig):
        raise ConfigError(
            f"{type(model).__name__}: not a spikeport model (expected a module built from a ModelConfig, with `.cfg`)"
        )
    return config


def approx_params(cfg: ModelConfig) -> float:
    """An upper estimate of the parameter count, before anything is allocated: per block 4 D^2 (attention) and
    2 r D^2 (MLP), the stem's 3x3 convolutions (< 15 D^2 + 9 C D) and the head."""
    d = float(cfg.embed_dim)
    return cfg.depth * (4 + 2 * cfg.mlp_ratio) * d * d + 15 * d * d + 9 * cfg.in_channels * d + d * cfg.num_classes


@dataclass
class ModelConfig:
    arch: str = "spikformer"  # "spikformer" or "vit" (the ANN baseline of seed 000)
    img_size: int = 32  # square input images
    in_channels: int = 3
    num_classes: int = 10
    embed_dim: int = 384  # D
    depth: int = 4  # L encoder blocks
    num_heads: int = 12
    mlp_ratio: float = 4.0
    T: int = 4  # time steps; the static image is repeated T times (direct coding)
    pool_stages: tuple[int, ...] = (
        2,
        3,
    )  # SPS stages followed by MaxPool(3, 2, 1): CIFAR (2, 3), ImageNet (0, 1, 2, 3)
    layout: str = "linear"  # "linear" = official CIFAR code, "conv" = official ImageNet code
    # the stem's max-pool before the stage's LIF (conv-BN-maxpool-LIF: SpikingJelly's model.spikformer) instead of
    # after it (conv-BN-LIF-maxpool: the official code); not the same function (a LIF is stateful)
    pool_before_lif: bool = False
    attention: str = "ssa"  # one of ATTENTIONS (the name; attention_spec says what it is made of)
    mlp: bool = True  # seed 000 ablation: False removes the MLP of every block
    skip: bool = True  # seed 000 ablation: False removes both residual connections
    num_dendrites: int = 8  # k, dendritic core (lrf_dyn) only
    lrf_dilations: tuple[int, ...] = (3, 5)  # the local receptive field of the variants with spec.lrf
    tau: float = 2.0  # LIF time constant of every neuron
    v_threshold: float = 1.0
    attn_v_threshold: float = 0.5  # the attention neuron (official attn_lif)
    scale: float = 0.125  # s in SN(Q K^T V * s)
    patch_size: int = 4  # ViT patch size (Spikformer's patch size follows from pool_stages)
    neuron_backend: str = "spikingjelly"  # or "torch" (plain loop: ONNX/NIR export, CPU tests)

    def __post_init__(self) -> None:
        self._check_types_and_bounds()
        self.pool_stages = tuple(int(s) for s in self.pool_stages)
        self.lrf_dilations = tuple(int(d) for d in self.lrf_dilations)
        for name, value, choices in (
            ("arch", self.arch, ARCHS),
            ("attention", self.attention, ATTENTIONS),
            ("layout", self.layout, LAYOUTS),
            ("neuron backend", self.neuron_backend, NEURON_BACKENDS),
        ):
            if value not in choices:
                raise unknown_choice(name, value, choices)
        if self.arch == "spikformer":
            _ = self.attention_spec  # building it validates num_dendrites for the dendritic core
        if self.embed_dim % self.num_heads:
            raise ConfigError(f"embed_dim {self.embed_dim} is not divisible by num_heads {self.num_heads}")
        if self.arch == "spikformer" and self.embed_dim % 8:
            raise ConfigError(f"embed_dim {self.embed_dim} must be divisible by 8 (SPS uses D/8, D/4, D/2)")
        if any(s not in range(4) for s in self.pool_stages):
            raise ConfigError(f"pool_stages {self.pool_stages}: stages are 0..3")
        if self.arch == "vit" and self.img_size % self.patch_size:
            raise ConfigError(f"img_size {self.img_size} is not divisible by patch_size {self.patch_size}")

    def _check_types_and_bounds(self) -> None:
        """Every field has its type (no "64" for 64, no true for 1, no 2.5 for an int) and a bound: a config read
        from a checkpoint, an artifact or a run report must not ask for a model that fills the host's memory."""
        for f in fields(self):
            value, bound = getattr(self, f.name), _BOUNDS.get(f.name)
            if f.type == "str":
                ok = isinstance(value, str)
            elif f.type == "bool":
                ok = isinstance(value, bool)
            elif f.type == "tuple[int, ...]":
                ok = isinstance(value, (tuple, list)) and len(value) <= 8 and all(map(_is_int, value))
            elif f.type == "float":
                ok = _is_real(value) and math.isfinite(value)
                value = float(value) if ok else value
            else:  # "int": _FIELD_TYPES below keeps the annotations to these five
                ok = _is_int(value)
                value = int(value) if ok else value
            values = value if isinstance(value, (tuple, list)) else [value]
            if not ok or (bound is not None and not all(bound[0] <= v <= bound[1] for v in values)):
                expected = f.type if bound is None else f"{f.type} in [{bound[0]}, {bound[1]}]"
                shown = f"{value!r} ({type(value).__name__})"
                raise ConfigError(f"model config field '{f.name}' = {shown}: expected {expected}")
            setattr(self, f.name, value)
        params = approx_params(self)
        if params > MAX_PARAMS:
            raise ConfigError(
                f"model config asks for ~{params / 1e9:.1f} G parameters (embed_dim {self.embed_dim}, depth "
                f"{self.depth}); the limit is {MAX_PARAMS / 1e9:.0f} G (Spikformer-8-768 has 0.066 G)"
            )

    @property
    def attention_spec(self) -> AttentionSpec:
        """What the attention variant ``attention`` is made of (core, LRF on/off, dendrites k)."""
        return attention_spec(self.attention, self.num_dendrites)

    @property
    def grid(self) -> tuple[int, int]:
        """Token grid (rows, cols)."""
        if self.arch == "vit":
            side = self.img_size // self.patch_size
            return side, side
        side = self.img_size
        for _ in self.pool_stages:
            side = (side - 1) // 2 + 1  # MaxPool2d(3, stride 2, padding 1)
        return side, side

    @property
    def num_tokens(self) -> int:
        return self.grid[0] * self.grid[1]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["pool_stages"], d["lrf_dilations"] = list(self.pool_stages), list(self.lrf_dilations)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown model config keys {unknown}; valid keys: {sorted(known)}")
        return cls(**d)


# the annotations _check_types_and_bounds knows; a new kind of field must be taught there first
_FIELD_TYPES = {"int", "float", "str", "bool", "tuple[int, ...]"}
assert {f.type for f in fields(ModelConfig)} <= _FIELD_TYPES, {f.type for f in fields(ModelConfig)} - _FIELD_TYPES


def apply_pointwise(layer: nn.Linear | nn.Conv1d | nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    """A token-wise affine map with either official container: nn.Linear, or Conv1d/Conv2d with a 1x1 kernel."""
    if isinstance(layer, nn.Linear):
        return layer(x)
    return F.linear(x, layer.weight.flatten(1), layer.bias)


def apply_bn(bn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """BatchNorm over the channel axis of ``[..., C]`` (statistics over all other axes, as the official
    code's BN over ``[T*B, C, N]``)."""
    shape = x.shape
    flat = x.reshape(-1, shape[-1])
    if isinstance(bn, nn.BatchNorm2d):
        return bn(flat[:, :, None, None]).reshape(shape)
    return bn(flat).reshape(shape)


def _side_by_side(layers: list[Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(weight, bias) of token-wise maps with one input, stacked on the output axis (a missing bias as zeros)."""
    weight = torch.cat([layer.weight.flatten(1) for layer in layers])
    if all(layer.bias is None for layer in layers):
        return weight, None
    bias = [layer.bias if layer.bias is not None else weight.new_zeros(layer.weight.shape[0]) for layer in layers]
    return weight, torch.cat(bias)


def batch_norms_groupable(bns: list[Any]) -> bool:
    """Whether ``fused_batch_norm`` runs these modules as one: BatchNorm1d each (not folded away), with the same
    eps, momentum and mode, affine, tracking running statistics, no hook watching one."""
    if not all(type(bn) is nn.BatchNorm1d for bn in bns):
        return False
    first = bns[0]
    key = (first.eps, first.momentum, first.affine, first.track_running_stats, first.training)
    return (
        all((bn.eps, bn.momentum, bn.affine, bn.track_running_stats, bn.training) == key for bn in bns)
        and first.momentum is not None
        and first.affine
        and first.track_running_stats
        and not any(bn._forward_hooks or bn._forward_pre_hooks for bn in bns)
    )


def fused_batch_norm(bns: list[Any], y: torch.Tensor) -> torch.Tensor:
    """BatchNorm1d of each of ``batch_norms_groupable`` modules over its block of ``y``'s channels [..., sum C], as
    one call: the same statistics per channel as separate calls, the running statistics written back into each."""
    first, sizes = bns[0], [bn.num_features for bn in bns]
    mean = torch.cat([bn.running_mean for bn in bns])
    var = torch.cat([bn.running_var for bn in bns])
    weight, bias = torch.cat([bn.weight for bn in bns]), torch.cat([bn.bias for bn in bns])
    out = F.batch_norm(y.reshape(-1, y.shape[-1]), mean, var, weight, bias, first.training, first.momentum, first.eps)
    if first.training:  # F.batch_norm updated the concatenated copies in place
        with torch.no_grad():
            for bn, m, v in zip(bns, mean.split(sizes), var.split(sizes), strict=True):
                bn.running_mean.copy_(m)
                bn.running_var.copy_(v)
                bn.num_batches_tracked.add_(1)
    return out.reshape(y.shape)


def pointwise(layout: str, d_in: int, d_out: int, bias: bool = True, conv2d: bool = False) -> nn.Module:
    if layout == "linear":
        return nn.Linear(d_in, d_out)
    return (nn.Conv2d if conv2d else nn.Conv1d)(d_in, d_out, kernel_size=1, bias=bias)


class SPS(nn.Module):
    """Spiking patch splitting: four Conv3x3-BN-LIF stages (D/8, D/4, D/2, D), max-pool after the stages
    in ``pool_stages`` (before their LIF with ``pool_before_lif``), then the relative position embedding
    x + LIF(BN(Conv3x3(x))) (values 0..2)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.embed_dim
        chans = [cfg.in_channels, d // 8, d // 4, d // 2, d]
        suffix = ["", "1", "2", "3"]  # official names: proj_conv, proj_conv1, ...
        for i in range(4):
            setattr(self, f"proj_conv{suffix[i]}", nn.Conv2d(chans[i], chans[i + 1], 3, 1, 1, bias=False))
            setattr(self, f"proj_bn{suffix[i]}", nn.BatchNorm2d(chans[i + 1]))
            setattr(self, f"proj_lif{suffix[i]}", make_lif(cfg.v_threshold, cfg.tau, cfg.neuron_backend))
            if i in cfg.pool_stages:
                setattr(self, f"maxpool{suffix[i]}", nn.MaxPool2d(3, 2, 1))
        self.rpe_conv = nn.Conv2d(d, d, 3, 1, 1, bias=False)
        self.rpe_bn = nn.BatchNorm2d(d)
        self.rpe_lif = make_lif(cfg.v_threshold, cfg.tau, cfg.neuron_backend)
        self.stages = [(f"proj_conv{s}", f"proj_bn{s}", f"proj_lif{s}", f"maxpool{s}") for s in suffix]

    def conv_bn_lif(self, x: torch.Tensor, conv: str, bn: str, lif: str) -> torch.Tensor:
        t, b = x.shape[:2]
        y = getattr(self, bn)(getattr(self, conv)(x.flatten(0, 1)))
        return getattr(self, lif)(y.reshape(t, b, *y.shape[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: [T, B, C_in, H, W] analog pixels -> tokens [T, B, N, D] (values 0, 1, 2)."""
        for conv, bn, lif, pool in self.stages:
            if self.cfg.pool_before_lif and hasattr(self, pool):  # conv-BN-maxpool-LIF (SpikingJelly's stem)
                t, b = x.shape[:2]
                y = getattr(self, pool)(getattr(self, bn)(getattr(self, conv)(x.flatten(0, 1))))
                x = getattr(self, lif)(y.reshape(t, b, *y.shape[1:]))
                continue
            x = self.conv_bn_lif(x, conv, bn, lif)
            if hasattr(self, pool):
                t, b = x.shape[:2]
                y = getattr(self, pool)(x.flatten(0, 1))
                x = y.reshape(t, b, *y.shape[1:])
        x = x + self.conv_bn_lif(x, "rpe_conv", "rpe_bn", "rpe_lif")
        return x.flatten(-2).transpose(-1, -2).contiguous()


class SSA(nn.Module):
    """Spiking self-attention and its LRF variants:
    ``proj_lif(BN(proj(attn_lif(s * core(Q, K, V) [+ LRF(V)]))))`` with Q, K, V = LIF(BN(W x))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d, lay = cfg.embed_dim, cfg.layout
        name = "linear" if lay == "linear" else "conv"
        for p in ("q", "k", "v"):
            setattr(self, f"{p}_{name}", pointwise(lay, d, d, bias=False))
            setattr(self, f"{p}_bn", nn.BatchNorm1d(d))
            setattr(self, f"{p}_lif", make_lif(cfg.v_threshold, cfg.tau, cfg.neuron_backend))
        self.attn_lif = make_lif(cfg.attn_v_threshold, cfg.tau, cfg.neuron_backend)
        setattr(self, f"proj_{name}", pointwise(lay, d, d, bias=True))
        self.proj_bn = nn.BatchNorm1d(d)
        self.proj_lif = make_lif(cfg.v_threshold, cfg.tau, cfg.neuron_backend)
        self._names = name
        self.spec = cfg.attention_spec
        self.lrf = LocalReceptiveField(d, cfg.grid, cfg.lrf_dilations) if self.spec.lrf else None
        self.dendrites = Dendrites(cfg.num_heads, self.spec.dendrites) if self.spec.core == "dendritic" else None
        self.fused_qkv = True  # project_qkv's fast path (set_fused_qkv switches it)
        self.inference_form = "parallel"  # "recurrent": running sum / dendritic recursion token by token
        self.record = False  # keep q, k, v spikes of the last forward (for spikeport analyze)
        self.recorded: dict[str, torch.Tensor] = {}

    def project(self, x: torch.Tensor, p: str) -> torch.Tensor:
        layer = getattr(self, f"{p}_{self._names}")
        return getattr(self, f"{p}_lif")(apply_bn(getattr(self, f"{p}_bn"), apply_pointwise(layer, x)))

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        t, b, n, c = x.shape
        return x.reshape(t, b, n, self.cfg.num_heads, c // self.cfg.num_heads).transpose(2, 3)

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Pre-neuron attention input ``[T, B, N, C]`` from q, k, v spikes ``[T, B, N, C]``."""
        qh, kh, vh = self.heads(q), self.heads(k), self.heads(v)
        core, recurrent = self.spec.core, self.inference_form == "recurrent"
        if self.dendrites is not None:  # the dendritic core (built exactly when spec.core == "dendritic")
            u = kh * vh
            g = self.dendrites.forward_recurrent(u) if recurrent else self.dendrites.forward_parallel(u)
            y = qh * g
        elif core == "ssa":
            y = ssa_core(qh, kh, vh)
        else:  # causal (AttentionSpec admits no other core)
            y = (causal_core_running if recurrent else causal_core_parallel)(qh, kh, vh)
        t, b, h, n, dh = y.shape
        y = y.transpose(2, 3).reshape(t, b, n, h * dh) * self.cfg.scale
        if self.lrf is not None:
            y = y + self.lrf(v)
        return y

    def project_qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v spikes: with ``fused_qkv`` as one projection (the three weights side by side: one GEMM, one
        BatchNorm over 3 D channels, one LIF call), the same function as three ``project`` calls, whose modules
        and state-dict keys it keeps (checkpoints, conversion and the official names are untouched). The three
        separate calls run where fusing would change what is computed or observed (see ``groupable``)."""
        bns = [getattr(self, f"{p}_bn") for p in "qkv"]
        lifs = [getattr(self, f"{p}_lif") for p in "qkv"]
        if self.fused_qkv and batch_norms_groupable(bns) and groupable(lifs):
            weight, bias = _side_by_side([getattr(self, f"{p}_{self._names}") for p in "qkv"])
            q, k, v = lif_group(lifs, fused_batch_norm(bns, F.linear(x, weight, bias))).chunk(3, dim=-1)
            return q, k, v
        return self.project(x, "q"), self.project(x, "k"), self.project(x, "v")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.project_qkv(x)
        if self.record:
            self.recorded = {"q": q.detach(), "k": k.detach(), "v": v.detach()}
        y = self.attn_lif(self.mix(q, k, v))
        proj = getattr(self, f"proj_{self._names}")
        return self.proj_lif(apply_bn(self.proj_bn, apply_pointwise(proj, y)))


class MLP(nn.Module):
    """Linear -> BN -> LIF -> Linear -> BN -> LIF (official names fc1_linear / fc1_conv ...)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, hidden, lay = cfg.embed_dim, int(cfg.embed_dim * cfg.mlp_ratio), cfg.layout
        name = "linear" if lay == "linear" else "conv"
        bn = nn.BatchNorm1d if lay == "linear" else nn.BatchNorm2d
        setattr(self, f"fc1_{name}", pointwise(lay, d, hidden, conv2d=True))
        self.fc1_bn = bn(hidden)
        self.fc1_lif = make_lif(cfg.v_threshold, cfg.tau, cfg.neuron_backend)
        setattr(self, f"fc2_{name}", pointwise(lay, hidden, d, conv2d=True))
        self.fc2_bn = bn(d)
        self.fc2_lif = make_lif(cfg.v_threshold, cfg.tau, cfg.neuron_backend)
        self._names = name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in ("1", "2"):
            x = apply_bn(getattr(self, f"fc{i}_bn"), apply_pointwise(getattr(self, f"fc{i}_{self._names}"), x))
            x = getattr(self, f"fc{i}_lif")(x)
        return x


class Block(nn.Module):
    """x = x + SSA(x); x = x + MLP(x)   (SEW residuals on spikes; the sums are small integers)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.norm1 = nn.LayerNorm(cfg.embed_dim)  # unused, as in the official code (checkpoint keys)
        self.attn = SSA(cfg)
        self.norm2 = nn.LayerNorm(cfg.embed_dim)
        self.mlp = MLP(cfg) if cfg.mlp else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x) if self.cfg.skip else self.attn(x)
        if self.mlp is not None:
            x = x + self.mlp(x) if self.cfg.skip else self.mlp(x)
        return x


class Spikformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.patch_embed = SPS(cfg)
        self.block = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.head = nn.Linear(cfg.embed_dim, cfg.num_classes)
        self.apply(_init_weights)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """Images [B, C, H, W] -> token features [T, B, N, D] after the last block."""
        x = self.patch_embed(x.unsqueeze(0).repeat(self.cfg.T, 1, 1, 1, 1))
        for blk in self.block:
            x = blk(x)
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.forward_features(x).mean(2).mean(0))


def _init_weights(m: nn.Module) -> None:
    if isinstance(m, nn.Linear):
        nn.init.trunc_normal_(m.weight, std=0.02)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.LayerNorm):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)


class ViTAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.num_heads = cfg.num_heads
        self.qkv = nn.Linear(cfg.embed_dim, 3 * cfg.embed_dim)
        self.proj = nn.Linear(cfg.embed_dim, cfg.embed_dim)
        self.record = False
        self.recorded: dict[str, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        attn = ((q @ k.transpose(-2, -1)) / math.sqrt(c // self.num_heads)).softmax(-1)
        if self.record:
            self.recorded = {"attn": attn.detach()}
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class ViTBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.skip = cfg.skip
        # The ablated variants (no MLP / no skip) have no pre-attention LayerNorm: the only structural
        # reading consistent with both ablation rows of seed 000's Table 1 (docs/models.md).
        self.norm1 = nn.LayerNorm(cfg.embed_dim) if (cfg.mlp and cfg.skip) else nn.Identity()
        self.attn = ViTAttention(cfg)
        hidden = int(cfg.embed_dim * cfg.mlp_ratio)
        self.norm2 = nn.LayerNorm(cfg.embed_dim) if cfg.mlp else None
        self.mlp = (
            nn.Sequential(nn.Linear(cfg.embed_dim, hidden), nn.GELU(), nn.Linear(hidden, cfg.embed_dim))
            if cfg.mlp
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.attn(self.norm1(x))
        x = x + y if self.skip else y
        if self.mlp is not None and self.norm2 is not None:  # both exist exactly when cfg.mlp
            y = self.mlp(self.norm2(x))
            x = x + y if self.skip else y
        return x


class ViT(nn.Module):
    """Pre-norm ViT with a class token (the seed 000 ANN baseline), with the same mlp/skip switches."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.embed_dim
        self.patch_embed = nn.Conv2d(cfg.in_channels, d, cfg.patch_size, cfg.patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.zeros(1, cfg.num_tokens + 1, d))
        self.blocks = nn.ModuleList(ViTBlock(cfg) for _ in range(cfg.depth))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, cfg.num_classes)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.apply(_init_weights)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.forward_features(x)[:, 0])


def build_model(cfg: ModelConfig) -> nn.Module:
    return Spikformer(cfg) if cfg.arch == "spikformer" else ViT(cfg)


def count_params(model: nn.Module, include_unused: bool = False) -> int:
    """Parameters the forward pass uses. ``include_unused`` also counts the official blocks' unused
    norm1/norm2 LayerNorms (stored in checkpoints; seed 000's Table 1 counts them, the Spikformer paper
    does not)."""
    unused: set[int] = set()
    if not include_unused:
        for blk in model.modules():
            if isinstance(blk, Block):
                unused.update(id(p) for p in (*blk.norm1.parameters(), *blk.norm2.parameters()))
    return sum(p.numel() for p in model.parameters() if id(p) not in unused)


def set_fused_qkv(model: nn.Module, fused: bool) -> None:
    """Switch every attention's q/k/v projection between the fused fast path and three separate ones."""
    for m in model.modules():
        if isinstance(m, SSA):
            m.fused_qkv = bool(fused)


def set_inference_form(model: nn.Module, form: str) -> None:
    """Switch every attention to its parallel (training) or recurrent (runtime) form."""
    if form not in INFERENCE_FORMS:
        raise unknown_choice("inference form", form, INFERENCE_FORMS)
    for m in model.modules():
        if isinstance(m, SSA):
            m.inference_form = form
