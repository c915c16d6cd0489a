"""The configuration of a spikeport model: what ``build_model`` builds (``train/models.py``), checked before anything
is allocated.

``ModelConfig`` is the record a checkpoint, an artifact and a run report carry (``to_dict`` / ``from_dict``):
every field typed and bounded, so that a file cannot ask for a model that fills the host's memory.
``AttentionSpec`` says what an attention variant is made of; ``ATTENTION_VARIANTS`` is the only place that reads
a variant's name. ``config_of`` reads the configuration back from a built model.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, fields

from spikeport.errors import ConfigError, unknown_choice
from spikeport.ir.limits import MAX_IMG_SIZE, MAX_T

ARCHS = ("spikformer", "vit")
LAYOUTS = ("linear", "conv")
INFERENCE_FORMS = ("parallel", "recurrent")
ATTENTION_CORES = ("ssa", "causal", "dendritic")
NEURON_BACKENDS = ("spikingjelly", "torch")  # train/neurons.py's LIF groups; here, so the record loads no torch


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


def config_of(model: object) -> ModelConfig:
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
