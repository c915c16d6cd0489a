"""``spikeport analyze``: token clustering, head correlation and attention locality of a trained model.

Per layer of a Spikformer (any attention variant) or ViT:
- representations 0..L (0 = the input of the first block, l = the output of block l): histogram of the
  pairwise cosine similarity of the tokens of each image (seed 002 Fig. 1). Spikformer features are
  the spike counts averaged over the T time steps; the ViT class token is left out (the Spikformer has none).
- blocks 1..L: the head correlation matrix (seed 000 Sec. 5.4) of the time-averaged global scores
  (Spikformer, analysis/mixing.py) or of the softmax maps (ViT, all tokens); attention locality and
  normalised entropy (seed 004 Fig. 2, analysis/stats.py) of the same maps on the patch grid (ViT: the
  patch-to-patch block, rows renormalised; the mass on the class token is reported as ``cls_mass``); for
  lrf_* also the local term alone and the effective mixing (analysis/mixing.py).

Outputs (``write_outputs``): analysis.json (schema spikeport.analysis v1), cosine.png, heads.png,
locality.png, index.html (self-contained).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from spikeport.analysis.html import analysis_page
from spikeport.analysis.mixing import global_mixing, local_mixing_per_head
from spikeport.analysis.stats import LOCAL_RADIUS, CosineStats, HeadCorrStats, LocalityStats
from spikeport.atomic import write_json, write_text
from spikeport.data.images import dataset_of
from spikeport.errors import ConfigError
from spikeport.progress import Bar
from spikeport.train.models import SSA, Block, Spikformer, ViT, ViTAttention, ViTBlock

SCHEMA, SCHEMA_VERSION = "spikeport.analysis", 1

METHOD = {
    "cosine": "pairwise cosine similarity of the tokens of each image (pairs i<j); Spikformer features are "
    "spike counts averaged over time steps; tokens with all-zero features are left out (silent)",
    "head_correlation": "Pearson correlation between heads of the flattened attention maps over all images, "
    "queries and keys; Spikformer: s*Q_h K_h^T from the recorded q, k spikes averaged over "
    "time steps (variant masks / kernels applied); ViT: softmax maps",
    "locality": "each query row normalised to sum 1, mass binned by Manhattan distance on the token grid, "
    "averaged over queries, heads, images (and layers for 'overall'); share within distance <= "
    "radius; entropy / log N averaged over rows",
    "effective_mixing": "lrf_* only: E_h = |s Q_h K_h^T| (time-averaged) + mean over the head's channels of "
    "|local kernel as an N x N matrix|",
}


@dataclass
class AnalysisConfig:
    samples: int = 256  # images analysed (the first N of the split)
    batch_size: int = 32
    radius: int = LOCAL_RADIUS  # locality: Manhattan distance counted as local


class _Capture:
    """Forward hooks: the input of every block and the output of the last one."""

    def __init__(self, blocks: Sequence[nn.Module]) -> None:
        self.feats: dict[int, torch.Tensor] = {}
        self.handles = []
        for i, blk in enumerate(blocks):
            self.handles.append(blk.register_forward_pre_hook(self._pre(i)))
        self.handles.append(blocks[-1].register_forward_hook(self._post(len(blocks))))

    def _pre(self, i: int) -> Callable[[nn.Module, tuple[torch.Tensor, ...]], None]:
        def hook(module: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
            self.feats[i] = args[0].detach()

        return hook

    def _post(self, i: int) -> Callable[[nn.Module, tuple[torch.Tensor, ...], torch.Tensor], None]:
        def hook(module: nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
            self.feats[i] = out.detach()

        return hook

    def close(self) -> None:
        for h in self.handles:
            h.remove()


def _spikeport_model(model: nn.Module) -> Spikformer | ViT:
    if not isinstance(model, (Spikformer, ViT)):
        raise ConfigError(f"spikeport analyze needs a spikeport Spikformer or ViT, got {type(model).__name__}")
    return model


def _attentions(blocks: Iterable[nn.Module]) -> list[SSA | ViTAttention]:
    attns: list[SSA | ViTAttention] = []
    for blk in blocks:
        assert isinstance(blk, (Block, ViTBlock))  # an nn.ModuleList yields plain Modules
        attns.append(blk.attn)
    return attns


def _local_terms(attns: list[SSA | ViTAttention], num_heads: int) -> list[torch.Tensor]:
    """The LRF's mixing per head of each block (the lrf_* variants; image-independent)."""
    local = []
    for a in attns:
        assert isinstance(a, SSA) and a.lrf is not None  # an lrf_* Spikformer: every SSA has its LRF
        local.append(local_mixing_per_head(a.lrf, num_heads))
    return local


class _Stats:
    """What the analysis gathers over the batches: the cosine statistics of each representation; per block the
    head correlation and the locality of its attention maps (lrf_*: also of the local term alone and of the
    effective mixing; ViT: the patch queries' mass on the class token); the accuracy on the samples seen."""

    def __init__(self, depth: int, grid: tuple[int, int], radius: int, local: list[torch.Tensor] | None) -> None:
        self.grid, self.radius, self.local = grid, radius, local
        self.cos = [CosineStats() for _ in range(depth + 1)]
        self.heads = [HeadCorrStats() for _ in range(depth)]
        self.loc = {"attention": [LocalityStats(grid, radius) for _ in range(depth)]}
        if local is not None:
            self.loc["effective"] = [LocalityStats(grid, radius) for _ in range(depth)]
            self.loc["local_only"] = [LocalityStats(grid, radius) for _ in range(depth)]
            for stats, mat in zip(self.loc["local_only"], local, strict=True):
                stats.update(mat)  # image-independent
        self.cls_mass = [0.0] * depth
        self.correct, self.seen = 0, 0

    def add(self, feats: dict[int, torch.Tensor], attns: list[SSA | ViTAttention], vit: bool, n: int) -> None:
        """One batch of ``n`` images: the captured representations and each attention's recorded maps."""
        for i, c in enumerate(self.cos):
            f = feats[i]
            c.update(f[:, 1:] if vit else f.float().mean(0))
        for i, a in enumerate(attns):
            if isinstance(a, ViTAttention):
                maps = a.recorded["attn"].double()  # [B, H, N+1, N+1]
                self.heads[i].update(maps)
                self.loc["attention"][i].update(maps[..., 1:, 1:])
                self.cls_mass[i] += float(maps[..., 1:, 0].mean()) * n  # patch queries -> class key
            else:
                maps = global_mixing(a, a.recorded["q"], a.recorded["k"])  # [B, H, N, N]
                self.heads[i].update(maps)
                self.loc["attention"][i].update(maps)
                if self.local is not None:
                    self.loc["effective"][i].update(maps + self.local[i])

    def overall(self) -> dict[str, dict[str, Any]]:
        """The locality of each kind of map over every block."""
        overall: dict[str, dict[str, Any]] = {}
        for kind, per_layer in self.loc.items():
            total = LocalityStats(self.grid, self.radius)
            for s in per_layer:
                total.merge(s)
            overall[kind] = total.result()
        return overall

    def block_rows(self, vit: bool) -> list[dict[str, Any]]:
        rows = []
        for i, heads in enumerate(self.heads):
            row = {
                "block": i,  # 0-based, as every other command numbers blocks (block.0.attn ...)
                "head_correlation": heads.result(),
                "locality": {kind: per_layer[i].result() for kind, per_layer in self.loc.items()},
            }
            if vit:
                row["cls_mass"] = self.cls_mass[i] / self.seen
            rows.append(row)
        return rows


def analyze_model(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor | None = None,
    cfg: AnalysisConfig | None = None,
    progress: bool = False,
) -> dict:
    """All statistics of ``model`` (Spikformer or ViT) on ``images [S, C, H, W]``; returns the JSON dict
    (without the output file list)."""
    cfg = cfg or AnalysisConfig()
    net = _spikeport_model(model)
    mcfg = net.cfg
    vit = isinstance(net, ViT)
    model.eval()
    blocks = list(net.blocks if isinstance(net, ViT) else net.block)
    attns = _attentions(blocks)
    lrf = (not vit) and mcfg.attention_spec.lrf
    stats = _Stats(len(blocks), mcfg.grid, cfg.radius, _local_terms(attns, mcfg.num_heads) if lrf else None)
    t0 = time.perf_counter()
    _run_batches(model, images, labels, cfg, blocks, attns, stats, vit, progress)
    seen = stats.seen
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "method": METHOD,
        "model": {
            "arch": mcfg.arch,
            "attention": "softmax" if vit else mcfg.attention,
            "depth": len(blocks),
            "num_heads": mcfg.num_heads,
            "embed_dim": mcfg.embed_dim,
            "grid": list(mcfg.grid),
            "tokens": mcfg.num_tokens,
            "T": None if vit else mcfg.T,
            "mlp": mcfg.mlp,
            "skip": mcfg.skip,
        },
        "executor": "torch-float (eval mode, CPU)" if not next(model.parameters()).is_cuda else "torch-float (CUDA)",
        "samples": seen,
        "accuracy_on_samples": stats.correct / seen if labels is not None and seen else None,
        "representations": [
            {"layer": i, "name": "embedding" if i == 0 else f"block {i - 1} output", "cosine": c.result()}
            for i, c in enumerate(stats.cos)
        ],
        "blocks": stats.block_rows(vit),
        "locality_overall": stats.overall(),
        "wall_time_s": time.perf_counter() - t0,
    }


def _run_batches(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor | None,
    cfg: AnalysisConfig,
    blocks: list[nn.Module],
    attns: list[SSA | ViTAttention],
    stats: _Stats,
    vit: bool,
    progress: bool,
) -> None:
    """The first ``cfg.samples`` images through the model in batches, every block's input and every attention's
    maps recorded into ``stats``; the hooks and recorders removed afterwards, whatever happens."""
    from spikeport.train.neurons import reset_net

    capture = _Capture(blocks)
    for a in attns:
        a.record = True
    try:
        batches = Bar(range(0, min(cfg.samples, len(images)), cfg.batch_size), desc="analyze", enabled=progress)
        for start in batches:
            x = images[start : min(start + cfg.batch_size, cfg.samples)]
            with torch.no_grad():
                if not vit:
                    reset_net(model)
                logits = model(x)
            if labels is not None:
                stats.correct += int((logits.argmax(-1) == labels[start : start + len(x)]).sum())
            stats.seen += len(x)
            stats.add(capture.feats, attns, vit, len(x))
    finally:
        capture.close()
        for a in attns:
            a.record, a.recorded = False, {}


def write_outputs(result: dict, out: str | Path, title: str) -> dict:
    """PNG figures, analysis.json and index.html into ``out``; returns ``result`` with ``files``."""
    from spikeport.analysis import model_plots

    out = Path(out)
    figs = model_plots.write_all(result, out, title)
    result = {**result, "files": sorted([*figs, "analysis.json", "index.html"])}
    write_json(out / "analysis.json", result)
    write_text(out / "index.html", analysis_page(result, out, title))
    return result


def analyze_checkpoint(
    checkpoint: str | Path,
    out: str | Path,
    samples: int = 256,
    data_dir: str | None = None,
    dataset: str | None = None,
    split: str = "test",
    batch_size: int = 32,
    progress: bool = False,
) -> dict:
    """Load a spikeport checkpoint, take the first ``samples`` images of its dataset, analyse, write outputs."""
    from spikeport.train.checkpoint import load_model
    from spikeport.train.data import split_tensors

    model, ckpt = load_model(checkpoint)
    mcfg = _spikeport_model(model).cfg
    name = dataset_of(ckpt, dataset)
    images, labels = split_tensors(name, data_dir, split, limit=samples, img_size=mcfg.img_size)
    result = analyze_model(model, images, labels, AnalysisConfig(samples, batch_size), progress)
    result["source"] = {"kind": "spikeport-checkpoint", "path": str(checkpoint), "dataset": name, "split": split}
    what = f"{mcfg.arch}/{result['model']['attention']}"
    shown = "/".join(Path(checkpoint).parts[-2:])
    return write_outputs(result, out, f"{shown} ({what}, {name} {split}, {result['samples']} images)")
