"""`spikeport bench gpu`: the float SNN, its ONNX export and an ANN ViT counterpart, measured on CUDA or
estimated from GPU profiles, plus measured CPU anchors. See baselines/gpu.py for the methods."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from spikeport.baselines import gpu
from spikeport.errors import ConfigError

ONNX_TODO = (
    "ONNX Runtime baseline skipped: spikeport.exports.onnx is not importable here "
    "(TODO: it provides export_onnx(model, path, ...))"
)


def resolve_model(target: str, attention: str | None = None, T: int | None = None):
    """A preset name (random weights: latency and memory do not depend on them) or a spikeport checkpoint
    (a run folder holding checkpoint.pt, or the .pt file)."""
    from spikeport.train.models import build_model
    from spikeport.train.presets import PRESETS, preset_config

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


def vit_counterpart(cfg):
    """The ANN ViT of the same width, depth, heads, MLP ratio and token grid (patch = image / grid)."""
    from spikeport.train.models import ModelConfig

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


def onnx_baselines(model, images, name: str, cuda: bool) -> tuple[list[gpu.Baseline], list[str]]:
    """ONNX Runtime latency of the exported float model: CPU always, CUDA when onnxruntime-gpu is present."""
    try:
        from spikeport.exports import onnx as onnx_export
    except ImportError:
        return [], [ONNX_TODO]
    import onnxruntime as ort

    out, notes = [], []
    with tempfile.TemporaryDirectory(prefix="spikeport-bench-") as tmp:
        path = Path(tmp) / "model.onnx"
        exported = onnx_export.export_onnx(model, path, batch_size=len(images))
        cpu = onnx_export.ort_latency(path, images.cpu(), repeats=7, warmup=2, threads=1)
        out.append(
            gpu.Baseline(
                name,
                "onnxruntime",
                "cpu",
                "measured",
                f"measured (CPU, ONNX Runtime {ort.__version__}, 1 thread, median of {cpu['repeats']})",
                len(images),
                "fp32",
                latency_s=cpu["median_s"],
                throughput_per_s=len(images) / cpu["median_s"],
                details={
                    "opset": exported.opset,
                    "onnx_bytes": exported.file_bytes,
                    "inference_form": exported.inference_form,
                },
            )
        )
        if cuda and "CUDAExecutionProvider" in ort.get_available_providers():
            out.append(_ort_cuda(path, images, name))
        elif cuda:
            notes.append(
                "ONNX Runtime on CUDA skipped: onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu)"
            )
    return out, notes


def _ort_cuda(path, images, name: str) -> gpu.Baseline:
    import statistics
    import time

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


def bench_gpu(
    target: str,
    attention: str | None = None,
    batch: int = 1,
    T: int | None = None,
    dtype: str = "fp32",
    gpus: tuple[str, ...] = ("h100",),
    inference_form: str = "parallel",
    include_vit: bool = True,
    include_onnx: bool = True,
    cpu_anchor: bool = True,
    energy_seconds: float = 5.0,
    cpu_threads: int | None = 1,
    progress=None,
) -> dict:
    """All baselines for one model (schema spikeport.gpu_bench v1)."""
    import torch

    from spikeport.train.models import build_model, set_inference_form

    say = progress or (lambda msg: None)
    if batch < 1:
        raise ConfigError(f"batch must be >= 1, got {batch}")
    snn, name = resolve_model(target, attention, T)
    cfg = snn.cfg
    if cfg.arch != "spikformer":
        raise ConfigError(f"'{target}' is a {cfg.arch}; bench gpu takes a Spikformer (its ViT is added)")
    set_inference_form(snn, inference_form)
    nets = [(f"SNN {cfg.attention} T={cfg.T}", cfg, snn)]
    if include_vit:
        vcfg = vit_counterpart(cfg)
        nets.append((f"ViT {vcfg.depth}-{vcfg.embed_dim}/p{vcfg.patch_size}", vcfg, build_model(vcfg).eval()))
    cuda = torch.cuda.is_available()
    results, notes = [], []
    for label, c, model in nets:
        images = torch.rand(batch, c.in_channels, c.img_size, c.img_size)
        if cuda:
            say(f"measuring {label} on CUDA (batch {batch}, {dtype})")
            results.append(
                gpu.measure_cuda(model, images, label, dtype, energy_seconds=energy_seconds, profiles=tuple(gpus))
            )
        else:
            say(f"estimating {label} on {', '.join(gpus)} (no CUDA here)")
            counted = gpu.census(c, batch, dtype, inference_form)
            results += [gpu.estimate(counted, g, label, batch, dtype) for g in gpus]
        if cpu_anchor:
            say(f"measuring {label} on the CPU (torch)")
            results.append(gpu.measure_cpu(model.float(), images, label, threads=cpu_threads))
        if include_onnx:
            say(f"exporting {label} to ONNX and timing it in ONNX Runtime")
            found, extra = onnx_baselines(model.float().cpu(), images, label, cuda)
            results += found
            notes += [n for n in extra if n not in notes]
    if not cuda:
        notes.append(
            "no CUDA device: GPU figures are estimated from the hw profiles and labelled so; "
            "run `spikeport bench gpu` on a CUDA machine for measured ones"
        )
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
        "dtype": dtype,
        "inference_form": inference_form,
        "cuda": cuda,
        "results": [r.to_dict() for r in results],
        "ratios": _ratios(results, nets),
        "notes": notes,
    }


def bench_gpu_modes(target: str, batches: tuple[int, ...] = (1, 16, 64, 256), progress=None, **kw) -> dict:
    """``bench_gpu`` over a sweep of batches, reduced to the two modes a fair comparison shows: ``latency`` (batch 1)
    and ``throughput`` (per network, executor and device, the batch with the least energy per inference, or
    the most inferences per second where no energy was measured). ``results`` holds those, each tagged with its
    ``mode``; ``sweep`` every batch's results."""
    if 1 not in batches or any(b < 1 for b in batches):
        raise ConfigError(f"batches {list(batches)}: need 1 (the latency mode) and positive sizes")
    say = progress or (lambda msg: None)
    runs = {}
    for b in sorted(set(batches)):
        say(f"batch {b}")
        runs[b] = bench_gpu(target, batch=b, progress=progress, **kw)
    out = dict(runs[1])

    def key(r: dict) -> tuple:
        return r["name"], r["executor"], r["device"], r["kind"]

    def cost(r: dict) -> float:
        return r["energy_J"] if r.get("energy_J") else 1.0 / max(r.get("throughput_per_s") or 1e-30, 1e-30)

    best: dict[tuple, dict] = {}
    for b, run in runs.items():
        for r in run["results"]:
            if b > 1 and (key(r) not in best or cost(r) < cost(best[key(r)])):
                best[key(r)] = r
    latency = [{**r, "mode": "latency"} for r in runs[1]["results"]]
    out["results"] = latency + [{**r, "mode": "throughput"} for r in best.values()]
    out["batch"] = "modes"
    out["batches"] = sorted(runs)
    out["sweep"] = {str(b): run["results"] for b, run in runs.items()}
    return out


def _ratios(results: list[gpu.Baseline], nets) -> list[dict]:
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
    import json

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
    import math

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
