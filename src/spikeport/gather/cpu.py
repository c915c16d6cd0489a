"""ONNX Runtime on this CPU: the float network that ran, timed here in latency and throughput mode (the check on
a GPU estimate's time)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from spikeport.report.inputs import MODES, CpuBaseline
from spikeport.run_report import RunReport

if TYPE_CHECKING:
    from spikeport.train.models import ModelConfig

REPEATS, WARMUP, BUDGET_S = 5, 1, 1.0  # ONNX Runtime calls per batch: the median of REPEATS, within BUDGET_S


def cpu_baselines(
    run: RunReport, cfg: ModelConfig | None, timed: dict[str, list[CpuBaseline]], say: Callable[[str], None]
) -> list[CpuBaseline]:
    """ONNX Runtime on this CPU, batch 1 and the throughput batch, of the float network that ran (``cfg``): the
    ONNX file beside the artifact when there is one, else an export of its config with random weights (latency
    does not depend on them). Once per network (``timed``); [] without a Spikformer config or without
    onnxruntime."""
    if cfg is None or cfg.arch != "spikformer":
        return []
    beside = Path(run.artifact).with_name(Path(run.artifact).name.replace(".spk.h5", ".onnx")) if run.artifact else None
    key = json.dumps([cfg.to_dict(), str(beside) if beside and beside.is_file() else None], sort_keys=True)
    if key in timed:
        return timed[key]
    try:
        import torch

        from spikeport.exports import onnx as onnx_export
    except ImportError:
        timed[key] = []
        return []
    name = f"SNN {cfg.attention} T={cfg.T} (float, same network)"
    out = []
    with tempfile.TemporaryDirectory(prefix="spikeport-report-") as tmp:
        path = beside if beside is not None and beside.is_file() else None
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
    timed[key] = out
    return out
