"""The GPU baseline of a run's network for `spikeport report` (methods in baselines/gpu.py).

Three sources, in this order: results of `spikeport bench gpu --json` passed in (measured on a CUDA
machine elsewhere), a measurement here when CUDA is available, otherwise an estimate from each GPU
profile (roofline over a meta-device op census, labelled 'estimated'). Two modes (``report.inputs.MODES``), each
figure tagged with its ``mode``: latency (batch 1: one inference as soon as it arrives) and throughput (batch 256:
what a GPU serving many inferences spends per inference). fp32, the attention in its parallel (GPU-friendly)
form; weights are random: dense float kernels cost the same for any values.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spikeport.baselines import gpu
from spikeport.baselines.gpu_bench import vit_counterpart
from spikeport.errors import ConfigError
from spikeport.gather import torchless
from spikeport.gather.cache import ReportCache, machine, profile_digest
from spikeport.gather.kept import typed
from spikeport.hw_profiles import HwProfile
from spikeport.report.inputs import MODES, GpuBaseline, ReportOptions
from spikeport.train.model_config import ModelConfig
from spikeport.train.presets import PRESETS, preset_config

if TYPE_CHECKING:
    from spikeport.gather.models import CheckedConfig

DTYPE, FORM = "fp32", "parallel"


@dataclass
class KeptEstimates:
    """A cache entry of this module: the estimated baselines and the notes that came with them."""

    baselines: list[GpuBaseline]
    notes: list[str]


Found = tuple[list[GpuBaseline], list[str]]  # (baselines, notes)


def _networks(cfg: ModelConfig, include_vit: bool) -> tuple[list[tuple[str, str, ModelConfig]], list[str]]:
    """[(network tag, display name, ModelConfig)], notes."""
    nets = [("snn", f"SNN {cfg.attention} T={cfg.T} (float, same network)", cfg)]
    notes = []
    if include_vit:
        try:
            v = vit_counterpart(cfg)
            nets.append(("vit", f"ViT {v.depth}-{v.embed_dim}/p{v.patch_size} (ANN counterpart)", v))
        except ConfigError as err:
            notes.append(f"no ViT counterpart: {err}")
    return nets, notes


def _from_bench(cfg: ModelConfig, benches: Sequence[dict[str, Any]], include_vit: bool) -> Found:
    """Results of `spikeport bench gpu --json` for this network (attention and T must match; a preset
    target must also match the width, depth and image size)."""
    out: list[GpuBaseline] = []
    notes = []
    for bench in benches:
        if bench.get("attention") != cfg.attention or bench.get("T") != cfg.T:
            continue
        target = str(bench.get("target"))
        if target in PRESETS:
            p = preset_config(target, attention=cfg.attention, T=cfg.T)
            if (p.embed_dim, p.depth, p.img_size, p.num_heads) != (
                cfg.embed_dim,
                cfg.depth,
                cfg.img_size,
                cfg.num_heads,
            ):
                continue
        else:
            notes.append(
                f"GPU bench of '{target}' taken as the same network (attention {cfg.attention}, T {cfg.T} "
                "match; a run folder's size cannot be checked from the bench JSON)"
            )
        labels = list(bench.get("networks", {}))
        snn_label = next((label for label in labels if label.startswith("SNN")), None)
        for r in bench.get("results", []):
            network = "snn" if r.get("name") == snn_label else "vit"
            if network == "vit" and not include_vit:
                continue
            out.append(GpuBaseline.of(r, network, f"spikeport bench gpu ({target})"))
        if out:
            break
    return out, notes


def gpu_baselines(
    cfg: CheckedConfig | None,
    gpu_profiles: list[HwProfile],
    opts: ReportOptions,
    cache: dict[str, Found],
    say: Callable[[str], None],
    kept: ReportCache | None = None,
) -> Found:
    """(baselines tagged network 'snn' | 'vit', notes) for one run's ModelConfig; once per network (``cache``), and
    an estimate once across reports (``kept``: the report cache; a measurement on CUDA is made every time)."""
    if cfg is None or cfg.arch != "spikformer":
        return [], ["no GPU baseline: the run report carries no Spikformer model config"]
    key = json.dumps(cfg.to_dict(), sort_keys=True)
    if key in cache:
        return cache[key]
    found, notes = _from_bench(cfg.build(), opts.gpu_bench, opts.vit) if opts.gpu_bench else ([], [])
    if opts.gpu_bench and not found:
        f = cfg.fields
        notes.append(f"no --gpu-bench result matches attention {f['attention']}, T {f['T']}: baseline computed here")
    if not found:
        found, more = _computed(cfg, gpu_profiles, opts, say, kept or ReportCache(None))
        notes += more
    cache[key] = (found, notes)
    return found, notes


def _computed(
    cfg: CheckedConfig,
    gpu_profiles: list[HwProfile],
    opts: ReportOptions,
    say: Callable[[str], None],
    kept: ReportCache,
) -> Found:
    """``_compute``, its estimates kept in the report cache by the network, the GPU profiles and this machine (an
    estimate is made where this machine has no CUDA: its entry says this machine estimated last time). Without
    torch, none is computed: an entry of the cache, else none and the note ``torchless.NO_GPU``."""
    key = {
        "model": cfg.to_dict(),
        "gpus": [profile_digest(p) for p in gpu_profiles],
        "vit": opts.vit,
        "machine": machine(),
    }
    entry = kept.get("gpu", key, lambda value: typed(KeptEstimates, value))
    if entry is not None:
        return entry.baselines, entry.notes
    if torchless.torch_missing():
        return [], [torchless.NO_GPU]
    found, notes = _compute(cfg.build(), gpu_profiles, opts, say)
    if all(b.kind == "estimated" for b in found):
        kept.put("gpu", key, {"baselines": [b.to_dict() for b in found], "notes": notes})
    return found, notes


def _compute(cfg: ModelConfig, gpu_profiles: list[HwProfile], opts: ReportOptions, say: Callable[[str], None]) -> Found:
    import torch

    from spikeport.train.models import build_model, set_inference_form

    cuda = torch.cuda.is_available()
    if not cuda and not gpu_profiles:
        return [], ["no CUDA device and no GPU profile (--gpu): no GPU baseline"]
    nets, notes = _networks(cfg, opts.vit)
    out = []
    for tag, name, c in nets:
        if cuda:
            model = build_model(c).eval()
            if c.arch == "spikformer":
                set_inference_form(model, FORM)
        for mode, batch in MODES.items():
            if cuda:
                say(f"measuring {name} on CUDA ({mode} mode: batch {batch}, {DTYPE})")
                images = torch.rand(batch, c.in_channels, c.img_size, c.img_size)
                b = gpu.measure_cuda(model, images, name, DTYPE, energy_seconds=opts.cuda_energy_seconds)
                out.append(GpuBaseline.of(b.to_dict(), tag, "measured here (baselines/gpu.py)"))
            else:
                say(f"estimating {name} on {', '.join(p.name for p in gpu_profiles)} ({mode} mode, no CUDA here)")
                counted = _census(json.dumps(c.to_dict(), sort_keys=True), batch)
                out += [
                    GpuBaseline.of(
                        gpu.estimate(counted, p, name, batch, DTYPE).to_dict(), tag, "estimated here (baselines/gpu.py)"
                    )
                    for p in gpu_profiles
                ]
    return out, notes


@functools.lru_cache(maxsize=32)
def _census(cfg_json: str, batch: int) -> gpu.OpCensus:
    """The op census of a config at a batch (shapes only, deterministic): once per process, however many reports
    and runs ask for it."""
    return gpu.census(ModelConfig.from_dict(json.loads(cfg_json)), batch, DTYPE, FORM)
