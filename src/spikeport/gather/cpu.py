"""ONNX Runtime on this CPU: the float network that ran, timed here in latency and throughput mode (the check on
a GPU estimate's time). Kept in the report cache (``gather.cache``) by the artifact's digest, the ONNX file's bytes,
the network and this machine: a second report on the same runs times nothing."""

from __future__ import annotations

import datetime
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spikeport.gather import torchless
from spikeport.gather.cache import ReportCache, file_digest, machine
from spikeport.gather.kept import typed
from spikeport.report.inputs import MODES, CpuBaseline

if TYPE_CHECKING:
    from spikeport.gather.models import CheckedConfig
    from spikeport.train.model_config import ModelConfig

REPEATS, WARMUP, BUDGET_S = 5, 1, 1.0  # ONNX Runtime calls per batch: the median of REPEATS, within BUDGET_S


@dataclass
class KeptTimings:
    """A cache entry of this module: when the timings were made, and they."""

    when: str
    baselines: list[CpuBaseline]


def cpu_baselines(
    artifact: Path | None,
    digest: str | None,
    cfg: CheckedConfig | None,
    timed: dict[str, list[CpuBaseline]],
    say: Callable[[str], None],
    cache: ReportCache,
) -> list[CpuBaseline]:
    """ONNX Runtime on this CPU, batch 1 and the throughput batch, of the float network that ran (``cfg``): the
    ONNX file beside the artifact (found at ``artifact``, root digest ``digest``) when there is one, else an export
    of its config with random weights (latency does not depend on them). Once per network (``timed``, and the
    report cache across reports); [] without a Spikformer config or without onnxruntime."""
    if cfg is None or cfg.arch != "spikformer":
        return []
    beside = artifact.with_name(artifact.name.replace(".spk.h5", ".onnx")) if artifact is not None else None
    onnx = beside if beside is not None and beside.is_file() else None
    key = json.dumps([cfg.to_dict(), str(onnx) if onnx else None], sort_keys=True)
    if key in timed:
        return timed[key]
    try:
        ort_version = metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        timed[key] = []
        return []
    kept_key: dict[str, Any] = {
        "model": cfg.to_dict(),
        "onnx": None if onnx is None else {"artifact": digest, "file": file_digest(onnx)},
        "machine": machine(),
        "onnxruntime": ort_version,
        "method": [REPEATS, WARMUP, BUDGET_S, MODES],
    }
    kept = cache.get("cpu", kept_key, lambda value: typed(KeptTimings, value))
    if kept is not None:
        note = f"timed here on {kept.when} and kept in the report cache ({cache.folder})"
        source = str(onnx) if onnx else "export"
        timed[key] = [replace(b, source=source, notes=[*b.notes, note]) for b in kept.baselines]
        return timed[key]
    if torchless.torch_missing():  # the inputs are torch tensors: nothing timed, and no empty timing kept
        timed[key] = []
        return []
    timed[key] = _time(cfg.build(), onnx, say)
    when = datetime.datetime.now().isoformat(timespec="minutes")
    cache.put("cpu", kept_key, {"when": when, "baselines": [b.to_dict() for b in timed[key]]})
    return timed[key]


def _time(cfg: ModelConfig, beside: Path | None, say: Callable[[str], None]) -> list[CpuBaseline]:
    try:
        import torch

        from spikeport.exports import onnx as onnx_export
    except ImportError:
        return []
    name = f"SNN {cfg.attention} T={cfg.T} (float, same network)"
    out = []
    with tempfile.TemporaryDirectory(prefix="spikeport-report-") as tmp:
        path = beside
        if path is None:
            from spikeport.train.models import build_model

            say(f"exporting {name} to ONNX (random weights: the time does not depend on them)")
            path = onnx_export.export_onnx(build_model(cfg).eval(), Path(tmp) / "model.onnx").path
        for mode, batch in MODES.items():
            say(f"timing {name} in ONNX Runtime on this CPU ({mode} mode, batch {batch})")
            images = torch.rand(batch, cfg.in_channels, cfg.img_size, cfg.img_size)
            try:
                t = onnx_export.ort_latency(path, images, repeats=REPEATS, warmup=WARMUP, threads=1, budget_s=BUDGET_S)
            except Exception as err:  # noqa: BLE001 - a file ONNX Runtime refuses (a fixed batch, an old export)
                say(f"ONNX Runtime could not run {path} at batch {batch}: {err}")
                continue
            out.append(
                CpuBaseline(
                    name,
                    "cpu",
                    "measured",
                    f"measured (this CPU, ONNX Runtime, 1 thread, median of {t['repeats']}; "
                    + ("the ONNX file beside the artifact)" if path == beside else "an export with random weights)"),
                    batch,
                    executor="onnxruntime",
                    dtype="fp32",
                    latency_s=t["median_s"],
                    throughput_per_s=batch / t["median_s"],
                    network="snn",
                    mode=mode,
                    source=str(path) if path == beside else "export",
                )
            )
    return out
