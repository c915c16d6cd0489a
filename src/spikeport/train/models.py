"""Spikformer (with the SSA / LRF-SSA / LRF-causal / LRF-Dyn attention switch) and the ViT baseline.

Read top to bottom: shared layers, SPS stem, attention, MLP, block, Spikformer, ViT. What each builds from is
``ModelConfig`` (``train/model_config.py``).
Module names follow the official code (ZK-Zhou/spikformer): ``layout="linear"`` is the CIFAR code
(``q_linear``, ``fc1_linear``, ``proj_linear``: nn.Linear with bias), ``layout="conv"`` the ImageNet code
(``q_conv``: Conv1d without bias, ``proj_conv``: Conv1d with bias, ``fc1_conv``: Conv2d 1x1), so an
official checkpoint loads with ``strict=True``. Internally every block works on ``[T, B, N, C]``.
The unused ``norm1``/``norm2`` LayerNorms of the official blocks are kept for the same reason.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from spikeport.errors import unknown_choice
from spikeport.train.attention import (
    Dendrites,
    LocalReceptiveField,
    causal_core_parallel,
    causal_core_running,
    ssa_core,
)
from spikeport.train.bn_lif import apply_bn, batch_norm_lif, batch_norms_groupable, fusable, linear_bn_lif

# attention_spec re-exported: gather/models.py still imports it from here (being rewritten in parallel, issue 41)
from spikeport.train.model_config import INFERENCE_FORMS, ModelConfig, attention_spec as attention_spec
from spikeport.train.neurons import groupable, make_lif


def apply_pointwise(layer: nn.Linear | nn.Conv1d | nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    """A token-wise affine map with either official container: nn.Linear, or Conv1d/Conv2d with a 1x1 kernel."""
    if isinstance(layer, nn.Linear):
        return layer(x)
    return F.linear(x, layer.weight.flatten(1), layer.bias)


def pointwise_bn_lif(layer: nn.Linear | nn.Conv1d | nn.Conv2d, bn: nn.Module, lif: nn.Module, x: torch.Tensor) -> Any:
    """LIF(BN(layer(x))) for a token-wise ``layer`` (``apply_pointwise``), its GEMM and BN's statistics fused where
    ``bn_lif.linear_bn_lif`` can; an nn.Linear that a hook watches runs as a module."""
    if isinstance(layer, nn.Linear) and (layer._forward_hooks or layer._forward_pre_hooks):
        return batch_norm_lif([bn], [lif], layer(x))
    return linear_bn_lif([bn], [lif], x, layer.weight.flatten(1), layer.bias)


def _side_by_side(layers: list[Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(weight, bias) of token-wise maps with one input, stacked on the output axis (a missing bias as zeros)."""
    weight = torch.cat([layer.weight.flatten(1) for layer in layers])
    if all(layer.bias is None for layer in layers):
        return weight, None
    bias = [layer.bias if layer.bias is not None else weight.new_zeros(layer.weight.shape[0]) for layer in layers]
    return weight, torch.cat(bias)


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
        y = getattr(self, conv)(x.flatten(0, 1))
        norm, neuron = getattr(self, bn), getattr(self, lif)

        def channels_last() -> torch.Tensor:  # [T, B, H, W, C]; a view held no longer than used (it keeps y alive)
            return y.reshape(t, b, *y.shape[1:]).permute(0, 1, 3, 4, 2)

        if fusable([norm], [neuron], channels_last()):  # a CPU training step: BatchNorm and the LIF as one node
            spikes = batch_norm_lif([norm], [neuron], channels_last())
            neuron.v = neuron.v.permute(0, 3, 1, 2)  # the final membrane as the module holds it, [B, C, H, W]
            # [T, B, C, H, W] in channels-last memory: the next convolution reads and writes channels-last too, so
            # the view above needs no copy after the first stage (and oneDNN's kernels are faster on it here)
            return spikes.permute(0, 1, 4, 2, 3)
        y = norm(y)
        return neuron(y.reshape(t, b, *y.shape[1:]))  # type: ignore[no-any-return]

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
            q, k, v = linear_bn_lif(bns, lifs, x, weight, bias).chunk(3, dim=-1)
            return q, k, v
        return self.project(x, "q"), self.project(x, "k"), self.project(x, "v")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.project_qkv(x)
        if self.record:
            self.recorded = {"q": q.detach(), "k": k.detach(), "v": v.detach()}
        y = self.attn_lif(self.mix(q, k, v))
        proj = getattr(self, f"proj_{self._names}")
        return pointwise_bn_lif(proj, self.proj_bn, self.proj_lif, y)


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
            x = pointwise_bn_lif(getattr(self, f"fc{i}_{self._names}"), getattr(self, f"fc{i}_bn"),
                                 getattr(self, f"fc{i}_lif"), x)  # fmt: skip
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
