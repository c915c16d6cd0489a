"""`spikeport bench gpu`: the float SNN, its ONNX export and an ANN ViT counterpart, measured on CUDA or
estimated from GPU profiles, plus measured CPU anchors. See baselines/gpu.py for the methods."""

from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spikeport.baselines import gpu
from spikeport.errors import ConfigError
from spikeport.train.model_config import ModelConfig, config_of
from spikeport.train.presets import PRESETS, preset_config

if TYPE_CHECKING:
    import torch
    from torch import nn

ONNX_TODO = (
    "ONNX Runtime baseline skipped: spikeport.exports.onnx is not importable here "
    "(TODO: it provides export_onnx(model, path, ...))"
)


def resolve_model(target: str, attention: str | None = None, T: int | None = None) -> tuple[nn.Module, str]:
    """A preset name (random weights: latency and memory do not depend on them) or a spikeport checkpoint
    (a run folder holding checkpoint.pt, or the .pt file)."""
    from spikeport.train.models import build_model

    if target in PRESETS:
        return build_model(preset_config(target, attention=attention, T=T)).eval(), target
    path = Path(target)
    if path.is_dir():
        path = path / "checkpoint.pt"
    if not path.is_file():
        raise ConfigError(
            f"'{target}' is neither a preset ({', '.join(sorted(PRESETS))}) nor a run folder "
            "with checkpoint.pt nor a checkpoint file"
        )
    from spikeport.train.checkpoint import load_model

    overrides = {k: v for k, v in (("attention", attention), ("T", T)) if v is not None}
    model, _ = load_model(path, **overrides)
    return model, str(target)


def vit_counterpart(cfg: ModelConfig) -> ModelConfig:
    """The ANN ViT of the same width, depth, heads, MLP ratio and token grid (patch = image / grid)."""
    side = cfg.grid[0]
    if cfg.img_size % side:
        raise ConfigError(f"no ViT counterpart: image {cfg.img_size} is not a multiple of the token grid {side}")
    return ModelConfig(
        arch="vit",
        img_size=cfg.img_size,
        in_channels=cfg.in_channels,
        num_classes=cfg.num_classes,
        embed_dim=cfg.embed_dim,
        depth=cfg.depth,
        num_heads=cfg.num_heads,
        mlp_ratio=cfg.mlp_ratio,
        patch_size=cfg.img_size // side,
        mlp=cfg.mlp,
        skip=cfg.skip,
    )


def export_networks(
    nets: list[tuple[str, ModelConfig, nn.Module]], folder: Path, say: Callable[[str], None]
) -> tuple[dict[str, Any], list[str]]:
    """Export every network to ONNX once, with a dynamic batch axis: one file serves every batch size of a sweep.
    A fixed-batch export folds the batch-sized zeros of the neuron state into the graph as constants (digits-tiny:
    1.6 MB at batch 1, 193 MB at 256; spikformer-4-384 passes protobuf's 2 GiB at 256). Returns label -> the
    export (exports.onnx.OnnxExport), and notes."""
    try:
        from spikeport.exports import onnx as onnx_export
    except ImportError:
        return {}, [ONNX_TODO]
    out = {}
    for i, (label, _, model) in enumerate(nets):
        say(f"exporting {label} to ONNX once (dynamic batch axis)")
        out[label] = onnx_export.export_onnx(model.float().cpu(), folder / f"net{i}.onnx", batch_size="dynamic")
    return out, []


def onnx_baselines(
    exported: Any, images: torch.Tensor, name: str, cuda: bool, threads: int | None = 1
) -> tuple[list[gpu.Baseline], list[str]]:
    """ONNX Runtime latency of an exported float model (``export_networks``) at the batch of ``images``: CPU always,
    CUDA when onnxruntime-gpu is present."""
    import onnxruntime as ort

    from spikeport.exports import onnx as onnx_export

    out, notes = [], []
    cpu = onnx_export.ort_latency(exported.path, images.cpu(), repeats=5, warmup=1, threads=threads, budget_s=20.0)
    out.append(
        gpu.Baseline(
            name,
            "onnxruntime",
            "cpu",
            "measured",
            f"measured (CPU, ONNX Runtime {ort.__version__}, {threads or 'all'} thread{'s' if threads != 1 else ''}, "
            f"median of {cpu['repeats']})",
            len(images),
            "fp32",
            latency_s=cpu["median_s"],
            throughput_per_s=len(images) / cpu["median_s"],
            details={
                "opset": exported.opset,
                "onnx_bytes": exported.file_bytes,
                "onnx_batch": exported.batch_size,
                "inference_form": exported.inference_form,
            },
        )
    )
    if cuda and "CUDAExecutionProvider" in ort.get_available_providers():
        out.append(_ort_cuda(exported.path, images, name))
    elif cuda:
        notes.append("ONNX Runtime on CUDA skipped: onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu)")
    return out, notes


def _ort_cuda(path: str | os.PathLike[str], images: torch.Tensor, name: str) -> gpu.Baseline:

    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CUDAExecutionProvider"])
    feed = {sess.get_inputs()[0].name: images.cpu().numpy()}
    for _ in range(10):
        sess.run(None, feed)
    times = []
    for _ in range(50):
        start = time.perf_counter()
        sess.run(None, feed)  # returns host arrays: the call is synchronous
        times.append(time.perf_counter() - start)
    med = statistics.median(times)
    return gpu.Baseline(
        name,
        "onnxruntime",
        "cuda",
        "measured",
        "measured (ONNX Runtime CUDAExecutionProvider, wall time incl. host<->device copies)",
        len(images),
        "fp32",
        latency_s=med,
        throughput_per_s=len(images) / med,
    )


@dataclass
class BenchOptions:
    """How ``bench_gpu`` / ``bench_gpu_modes`` measure (one set for every point of a sweep)."""

    dtype: str = "fp32"
    gpus: tuple[str, ...] = ("h100",)
    inference_form: str = "parallel"
    include_onnx: bool = True
    cpu_anchor: bool = True
    energy_seconds: float = 5.0
    cpu_threads: int | None = 1
    # the CPU anchors of a sweep skip a batch whose call, scaled from the last batch measured, would take longer
    # than this, or whose activations (the op census's eager peak; x 4 for torch, whose SpikingJelly neurons keep
    # per-step lists) would take more than cpu_memory_fraction of the memory available now: a throughput figure
    # on a CPU is not worth minutes or swap
    cpu_call_budget_s: float = 30.0
    cpu_memory_fraction: float = 0.25


def _networks(
    target: str, attention: str | None, T: int | None, form: str, include_vit: bool
) -> tuple[str, ModelConfig, list[tuple[str, ModelConfig, nn.Module]]]:
    """(target name, the SNN's config, [(label, config, model)]): the float SNN and its ANN ViT counterpart."""
    from spikeport.train.models import build_model, set_inference_form

    snn, name = resolve_model(target, attention, T)
    cfg = config_of(snn)
    if cfg.arch != "spikformer":
        raise ConfigError(f"'{target}' is a {cfg.arch}; bench gpu takes a Spikformer (its ViT is added)")
    set_inference_form(snn, form)
    nets = [(f"SNN {cfg.attention} T={cfg.T}", cfg, snn)]
    if include_vit:
        vcfg = vit_counterpart(cfg)
        nets.append((f"ViT {vcfg.depth}-{vcfg.embed_dim}/p{vcfg.patch_size}", vcfg, build_model(vcfg).eval()))
    return name, cfg, nets


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


# activations a CPU executor holds, in units of the op census's eager peak: torch's SpikingJelly neurons keep
# per-step lists (measured 3-4x, docs/memory.md); ONNX Runtime's arena took 6.8 GB of RSS for spikformer-4-384's
# SNN at batch 256, twice the census's 3.4 GB
MEMORY_FACTOR = {"torch": 4, "onnxruntime": 2}


class _CpuBudget:
    """Which batches the CPU anchors still measure in a sweep (see BenchOptions.cpu_call_budget_s)."""

    def __init__(self, opts: BenchOptions):
        self.opts = opts
        self.last: dict[tuple[str, str], tuple[int, float]] = {}  # (network, executor) -> (batch, seconds a call)

    def skip(self, net: str, executor: str, batch: int, activation_bytes: int | None) -> str | None:
        """Why the CPU anchor ``executor`` of ``net`` skips ``batch`` (None: measure it)."""
        seen = self.last.get((net, executor))
        if seen is not None and seen[1] * batch / seen[0] > self.opts.cpu_call_budget_s:
            return (
                f"{net} on the CPU ({executor}) skipped at batch {batch}: one call at batch {seen[0]} took "
                f"{seen[1]:.3g} s, so one at batch {batch} would take ~{seen[1] * batch / seen[0]:.3g} s (budget "
                f"{self.opts.cpu_call_budget_s:g} s a call)"
            )
        free = _available_memory()
        factor = MEMORY_FACTOR.get(executor, 1)
        if activation_bytes and free and factor * activation_bytes > self.opts.cpu_memory_fraction * free:
            need, share = factor * activation_bytes / 1e9, self.opts.cpu_memory_fraction
            return (
                f"{net} on the CPU ({executor}) skipped at batch {batch}: its activations (~{need:.3g} GB) "
                f"exceed {share:.0%} of the {free / 1e9:.3g} GB available"
            )
        return None

    def record(self, net: str, executor: str, batch: int, seconds: float | None) -> None:
        if seconds:
            self.last[(net, executor)] = (batch, seconds)


def _point(
    nets: list[tuple[str, ModelConfig, nn.Module]],
    exports: dict[str, Any],
    batch: int,
    opts: BenchOptions,
    cuda: bool,
    budget: _CpuBudget,
    say: Callable[[str], None],
) -> tuple[list[gpu.Baseline], list[str]]:
    """Every baseline of every network at one batch size: (results, notes)."""
    import torch

    results, notes = [], []
    dtype, gpus, energy_seconds = opts.dtype, opts.gpus, opts.energy_seconds
    for label, c, model in nets:
        images = torch.rand(batch, c.in_channels, c.img_size, c.img_size)
        counted = None
        if cuda:
            say(f"  measuring {label} on CUDA (batch {batch}, {dtype})")
            results.append(
                gpu.measure_cuda(model, images, label, dtype, energy_seconds=energy_seconds, profiles=tuple(gpus))
            )
        else:
            say(f"  estimating {label} on {', '.join(gpus)} (batch {batch}; no CUDA here)")
            counted = gpu.census(c, batch, dtype, opts.inference_form)
            results += [gpu.estimate(counted, g, label, batch, dtype) for g in gpus]
        peak = counted.peak_bytes if counted is not None else None
        if opts.cpu_anchor:
            why = budget.skip(label, "torch", batch, peak)
            if why:
                notes.append(why)
            else:
                say(f"  measuring {label} on the CPU (torch, batch {batch})")
                cpu = gpu.measure_cpu(model.float(), images, label, warmup=1, threads=opts.cpu_threads)
                budget.record(label, "torch", batch, cpu.latency_s)
                results.append(cpu)
        if label in exports:
            why = budget.skip(label, "onnxruntime", batch, peak)
            if why:
                notes.append(why)
            else:
                say(f"  timing {label} in ONNX Runtime (batch {batch})")
                found, extra = onnx_baselines(exports[label], images, label, cuda, threads=opts.cpu_threads)
                budget.record(label, "onnxruntime", batch, found[0].latency_s)
                results += found
                notes += [n for n in extra if n not in notes]
    return results, notes


def _options(kw: dict) -> BenchOptions:
    known = {f.name for f in fields(BenchOptions)}
    unknown = set(kw) - known
    if unknown:
        raise TypeError(f"unknown bench options: {', '.join(sorted(unknown))}")
    given: dict[str, Any] = {k: tuple(v) if k == "gpus" else v for k, v in kw.items()}
    return BenchOptions(**given)


def bench_gpu(
    target: str,
    attention: str | None = None,
    batch: int = 1,
    T: int | None = None,
    include_vit: bool = True,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """All baselines for one model at one batch (schema spikeport.gpu_bench v1); ``options`` are
    ``BenchOptions`` fields (dtype, gpus, inference_form, include_onnx, cpu_anchor, energy_seconds, cpu_threads)."""
    import torch

    say = progress or (lambda msg: None)
    if batch < 1:
        raise ConfigError(f"batch must be >= 1, got {batch}")
    opts = _options(options)
    name, cfg, nets = _networks(target, attention, T, opts.inference_form, include_vit)
    cuda = torch.cuda.is_available()
    with tempfile.TemporaryDirectory(prefix="spikeport-bench-") as tmp:
        exports, notes = export_networks(nets, Path(tmp), say) if opts.include_onnx else ({}, [])
        results, more = _point(nets, exports, batch, opts, cuda, _CpuBudget(opts), say)
    return _result(name, cfg, nets, batch, opts, cuda, results, notes + more)


def _result(
    name: str,
    cfg: ModelConfig,
    nets: list[tuple[str, ModelConfig, nn.Module]],
    batch: int,
    opts: BenchOptions,
    cuda: bool,
    results: list[gpu.Baseline],
    notes: list[str],
) -> dict[str, Any]:
    if not cuda:
        notes = notes + [
            "no CUDA device: GPU figures are estimated from the hw profiles and labelled so; "
            "run `spikeport bench gpu` on a CUDA machine for measured ones"
        ]
    return {
        "schema": gpu.SCHEMA,
        "schema_version": 1,
        "target": name,
        "attention": cfg.attention,
        "networks": {
            label: (
                "float SNN (Spikformer, spikes as floats)"
                if c.arch == "spikformer"
                else f"ANN ViT counterpart: same width, depth, heads, token grid (patch {c.patch_size})"
            )
            for label, c, _ in nets
        },
        "T": cfg.T,
        "batch": batch,
        "dtype": opts.dtype,
        "inference_form": opts.inference_form,
        "cuda": cuda,
        "results": [r.to_dict() for r in results],
        "ratios": _ratios(results, nets),
        "notes": notes,
    }


def bench_gpu_modes(
    target: str,
    batches: tuple[int, ...] = (1, 16, 64, 256),
    progress: Callable[[str], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    attention: str | None = None,
    T: int | None = None,
    include_vit: bool = True,
    **options: Any,
) -> dict[str, Any]:
    """``bench_gpu`` over a sweep of batches, reduced to the two modes a fair comparison shows: ``latency`` (batch 1)
    and ``throughput`` (per network, executor and device, the batch with the least energy per inference, or
    the most inferences per second where no energy was measured). ``results`` holds those, each tagged with its
    ``mode``; ``sweep`` every batch's results. The networks are built and exported to ONNX once; ``on_result``
    gets the result so far after every batch (``complete`` False until the last), so that a file written from it
    keeps what was measured if a later batch fails."""
    import torch

    if 1 not in batches or any(b < 1 for b in batches):
        raise ConfigError(f"batches {list(batches)}: need 1 (the latency mode) and positive sizes")
    say = progress or (lambda msg: None)
    opts = _options(options)
    name, cfg, nets = _networks(target, attention, T, opts.inference_form, include_vit)
    cuda = torch.cuda.is_available()
    budget = _CpuBudget(opts)
    runs: dict[int, tuple[list, list]] = {}
    order = sorted(set(batches))
    with tempfile.TemporaryDirectory(prefix="spikeport-bench-") as tmp:
        exports, notes = export_networks(nets, Path(tmp), say) if opts.include_onnx else ({}, [])
        for i, b in enumerate(order):
            say(f"batch {b} ({i + 1} of {len(order)})")
            runs[b] = _point(nets, exports, b, opts, cuda, budget, say)
            out = _modes(name, cfg, nets, opts, cuda, runs, notes, complete=i == len(order) - 1)
            if on_result is not None:
                on_result(out)
    return out


def _modes(
    name: str,
    cfg: ModelConfig,
    nets: list[tuple[str, ModelConfig, nn.Module]],
    opts: BenchOptions,
    cuda: bool,
    runs: dict[int, tuple[list[gpu.Baseline], list[str]]],
    notes: list[str],
    complete: bool,
) -> dict[str, Any]:
    """The modes result of the batches measured so far."""
    per = {b: _result(name, cfg, nets, b, opts, cuda, results, notes + more) for b, (results, more) in runs.items()}
    out = dict(per[1])

    def key(r: dict) -> tuple:
        return r["name"], r["executor"], r["device"], r["kind"]

    def cost(r: dict) -> float:
        return r["energy_J"] if r.get("energy_J") else 1.0 / max(r.get("throughput_per_s") or 1e-30, 1e-30)

    best: dict[tuple, dict] = {}
    for b, run in per.items():
        for r in run["results"]:
            if b > 1 and (key(r) not in best or cost(r) < cost(best[key(r)])):
                best[key(r)] = r
    latency = [{**r, "mode": "latency"} for r in per[1]["results"]]
    out["results"] = latency + [{**r, "mode": "throughput"} for r in best.values()]
    out["batch"] = "modes"
    out["batches"] = sorted(per)
    out["sweep"] = {str(b): run["results"] for b, run in per.items()}
    out["notes"] = list(dict.fromkeys(n for run in per.values() for n in run["notes"]))
    out["complete"] = complete
    return out


def _ratios(results: list[gpu.Baseline], nets: list[tuple[str, ModelConfig, nn.Module]]) -> list[dict[str, Any]]:
    """SNN / ViT on the same device, executor and kind: latency and energy side by side."""
    if len(nets) < 2:
        return []
    snn, vit = nets[0][0], nets[1][0]
    rows = []
    for r in results:
        if r.name != snn:
            continue
        twin = next(
            (v for v in results if v.name == vit and (v.device, v.executor, v.kind) == (r.device, r.executor, r.kind)),
            None,
        )
        if twin is None:
            continue
        row = {
            "device": r.device,
            "executor": r.executor,
            "kind": r.kind,
            "latency_snn_over_vit": r.latency_s / twin.latency_s if r.latency_s and twin.latency_s else None,
        }
        if r.energy_J and twin.energy_J:
            row["energy_snn_over_vit"] = r.energy_J / twin.energy_J
        if r.flops and twin.flops:
            row["flops_snn_over_vit"] = r.flops / twin.flops
        rows.append(row)
    return rows


def load_bench(path: str | os.PathLike) -> dict:
    """The results of `spikeport bench gpu --json` read from ``path``, checked (a ConfigError naming the file)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: GPU bench file not found")
    try:
        data = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{p}: not a JSON file ({err})") from None
    if not isinstance(data, dict) or data.get("schema") != "spikeport.gpu_bench":
        raise ConfigError(
            f"{p}: field 'schema' is not 'spikeport.gpu_bench' (write it with "
            "`spikeport bench gpu ... --json > bench.json`)"
        )
    problem = _bench_problem(data)
    if problem:  # a malformed file would match no run and the report would fall back to estimates unsaid
        raise ConfigError(f"{p}: field {problem}")
    return data


def _bench_problem(data: dict) -> str | None:
    """What is wrong with a bench JSON's fields that the report reads ('field': expected), or None."""

    def number(v: object, low: float = 0.0) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= low

    checks = [
        ("'attention'", isinstance(data.get("attention"), str), "a variant name"),
        ("'T'", isinstance(data.get("T"), int) and not isinstance(data.get("T"), bool) and data["T"] >= 1, "T >= 1"),
        ("'target'", isinstance(data.get("target"), str), "a preset or folder name"),
        ("'networks'", isinstance(data.get("networks"), dict), "an object: label -> what it is"),
        ("'results'", isinstance(data.get("results"), list) and bool(data.get("results")), "a non-empty list"),
    ]
    for field, ok, expected in checks:
        if not ok:
            return f"{field}: expected {expected}"
    for i, r in enumerate(data["results"]):
        if not isinstance(r, dict):
            return f"'results[{i}]': expected an object"
        for key in ("name", "device", "kind", "label"):
            if not isinstance(r.get(key), str):
                return f"'results[{i}].{key}': expected a string"
        if not (isinstance(r.get("batch"), int) and not isinstance(r["batch"], bool) and r["batch"] >= 1):
            return f"'results[{i}].batch': expected an integer >= 1"
        for key in ("latency_s", "energy_J", "energy_dynamic_J", "peak_memory_bytes", "throughput_per_s"):
            if r.get(key) is not None and not number(r[key]):
                return f"'results[{i}].{key}': expected a finite number >= 0 or null"
    return None
