"""``spikeport.convert(...)``: torch model -> deployment artifact + ONNX baseline + conversion report.

Flow ``loihi2``: trace -> fold_bn -> fold_tau -> to_channels_last -> move_bias -> (calibrate) ->
quantize -> check_ranges. Then the three executors of the integer ladder are compared on evaluation
data: torch float, fake-quant (torch, same integers) and the reference integer simulator.
Everything is computed in memory first and the files are written atomically at the end, so a failed
conversion leaves nothing half-written.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from spikeport.brief import brief_repr
from spikeport.convert import passes
from spikeport.convert.calibrate import calibrate as calibrate_model, float_spikes
from spikeport.convert.fakequant import FakeQuantExecutor
from spikeport.convert.handlers import trace
from spikeport.convert.quantize import finalize, plan
from spikeport.ir import artifact
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel
from spikeport.ir.kernels.attention import place_on_host
from spikeport.progress import QUIET, Progress
from spikeport.run_report import RunReport
from spikeport.runtime.counter import RunCounter, build_report
from spikeport.runtime.executor import to_channels_last
from spikeport.runtime.sim.reference import ReferenceSimulator

REPORT_SCHEMA = "spikeport.conversion"
PLAN_FIELDS = ("vth", "sigma_exp", "weight_exp", "taps", "kernel_exp")  # planned attributes the conversion report shows
FLOWS = {"loihi2": passes.PRE_QUANT_FLOW}


@dataclass
class ConversionResult:
    graph: Graph
    artifact_path: Path | None
    onnx_path: Path | None
    report: dict[str, Any]
    files: list[Path] = field(default_factory=list)
    reference_run: RunReport | None = None  # the reference simulator's run report on the evaluation data

    BRIEF = ("artifact_path", "onnx_path", "accuracy", "graph", "reference_run")  # not the graph's weights
    __repr__ = brief_repr

    @property
    def accuracy(self) -> dict[str, float]:
        """Each executor's accuracy on the evaluation images (the conversion report's comparison)."""
        return dict(self.report.get("comparison", {}).get("accuracy", {}))


# Bytes the calibration forward and the executor comparison may hold per batch: their batches are sized from the graph
# so that an ImageNet-shape network (30 M node outputs per sample) runs a sample at a time where a CIFAR one runs 10
BATCH_BUDGET = 1 << 30


def plan_graph(model: nn.Module, calib_images: torch.Tensor | None = None, flow: str = "loihi2") -> Graph:
    """Float IR with its quantization plan (scales from ``calib_images`` [S, C, H, W] when given)."""
    graph = passes.run_flow(trace(model), FLOWS[flow])
    stats = {}
    if calib_images is not None and len(calib_images):
        stats = calibrate_model(model, calib_images, batch_size=calibration_batch(graph))
        release_freed_memory()
    graph = plan(graph, stats.get("lif_input_max"), stats.get("input_range"))
    graph.meta["calibration"] = {
        "samples": 0 if calib_images is None else int(len(calib_images)),
        "lif_input_max": stats.get("lif_input_max", {}),
    }
    return graph


def release_freed_memory() -> None:
    """Give the pages the C heap holds free back to the system (glibc ``malloc_trim``; a no-op elsewhere).

    glibc keeps what a phase freed for later allocations (its mmap threshold grows with the largest buffer freed),
    so after the calibration forward and each comparison batch a CIFAR conversion held 1-2 GB it no longer used."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _node_elements(graph: Graph) -> int:
    return sum(int(np.prod(graph.nodes[name].shape)) for name in graph.order)


def calibration_batch(graph: Graph, budget: int = BATCH_BUDGET) -> int:
    """Samples per batch of the float calibration forward: its activations, float32 over T steps, for every node
    (an upper bound: torch frees most of them as the forward goes on), kept within ``budget``."""
    return int(max(1, min(64, budget // (_node_elements(graph) * 4 * graph.T))))


def comparison_batch(graph: Graph, budget: int = BATCH_BUDGET) -> int:
    """Samples per batch of ``compare_executors`` within ``budget``: one step of every node's output in float64 in the
    reference and in the fake-quant executor, the float forward's float32 activations over T steps, and the
    reference's LIF spikes over T steps in uint8 (kept to compare the other two with)."""
    lif = sum(int(np.prod(n.shape)) for n in graph.by_op("lif"))
    per_sample = _node_elements(graph) * (8 + 8 + 4 * graph.T) + lif * graph.T
    return int(max(1, min(128, budget // per_sample)))


def build_graph(model: nn.Module, calib_images: torch.Tensor | None = None, flow: str = "loihi2") -> Graph:
    """Float IR -> quantized IR, with calibration from ``calib_images`` [S, C, H, W] when given."""
    return passes.check_ranges(finalize(plan_graph(model, calib_images, flow)))


# (images [B, C, H, W], {lif: shape}, on_layer(name, spikes [T, B, ...])) -> (logits [B, classes], {})
FloatForward = Callable[[torch.Tensor, dict[str, tuple[Any, ...]], Callable[[str, np.ndarray], None]], Any]


def compare_executors(
    model: nn.Module | None,
    graph: Graph,
    images: torch.Tensor,
    labels: np.ndarray,
    batch_size: int | None = None,
    progress: Progress = QUIET,
    float_forward: FloatForward | None = None,
) -> dict[str, Any]:
    """Accuracy of float / fake-quant / reference and per-layer spike agreement on the same images.

    Batch by batch (``comparison_batch`` samples unless given): the reference runs first and keeps its LIF spikes;
    the fake-quant executor and the float model are compared with them layer by layer as they produce theirs, so
    no executor's spikes are held beside another's. ``float_forward`` runs the float network instead of ``model``'s
    torch forward (a NIR import's float simulation: ``nir_import.simulate``)."""
    if float_forward is None:
        assert model is not None, "compare_executors: give the torch model or its float_forward"
        torch_model = model

        def float_forward(x: torch.Tensor, shapes: dict[str, tuple[Any, ...]], on_layer: Any) -> Any:
            return float_spikes(torch_model, x, shapes, on_layer=on_layer)

    lif_shapes = {n.name: n.shape for n in graph.by_op("lif")}
    sim, fq = ReferenceSimulator(graph), FakeQuantExecutor(graph)
    preds: dict[str, list[Any]] = {"torch-float": [], "torch-fakequant": [], "reference": []}
    agree = {
        name: {"fq_ref_mismatch": 0, "float_ref_agree": 0, "total": 0, "float_spikes": 0, "ref_spikes": 0}
        for name in lif_shapes
    }
    counter = RunCounter(graph)
    ref_wall = 0.0  # the reference simulator's own time (spike collection included)
    batch_size = batch_size or comparison_batch(graph)
    starts = range(0, len(images), batch_size)
    for i in progress.bar(starts, total=len(starts), desc="float / fake-quant / reference"):
        x = images[i : i + batch_size]
        x_nhwc = to_channels_last(x.numpy())
        ref = {name: np.zeros((graph.T, len(x), *shape), np.uint8) for name, shape in lif_shapes.items()}

        def keep(t: int, name: str, out: Any, extra: dict[str, Any], ref: dict[str, np.ndarray] = ref) -> None:
            if name in ref:
                ref[name][t] = out

        def against_reference(
            t: int, name: str, out: Any, extra: dict[str, Any], ref: dict[str, np.ndarray] = ref
        ) -> None:
            if name in ref:
                spikes = out.numpy() if hasattr(out, "numpy") else np.asarray(out)
                agree[name]["fq_ref_mismatch"] += int(np.sum(spikes != ref[name][t]))

        def float_layer(name: str, spikes: np.ndarray, ref: dict[str, np.ndarray] = ref) -> None:
            agree[name]["float_ref_agree"] += int(np.sum(spikes == ref[name]))
            agree[name]["float_spikes"] += int(spikes.sum())

        t0 = time.perf_counter()
        logits_r = sim.run_batch(x_nhwc, counter, observer=keep)
        ref_wall += time.perf_counter() - t0
        logits_q = fq.run(x_nhwc, observer=against_reference).numpy()
        logits_f = float_forward(x, lif_shapes, float_layer)[0]
        for name, r in ref.items():
            agree[name]["total"] += int(r.size)
            agree[name]["ref_spikes"] += int(r.sum(dtype=np.int64))
        for key, lg in (("torch-float", logits_f), ("torch-fakequant", logits_q), ("reference", logits_r)):
            preds[key].append(np.argmax(lg, axis=-1))
        del ref
        release_freed_memory()
    predictions = {k: np.concatenate(v) for k, v in preds.items()}
    accuracy = {k: float(np.mean(v == labels)) for k, v in predictions.items()}
    layers = []
    for name, a in agree.items():
        total = max(a["total"], 1)
        layers.append(
            {
                "name": name,
                "fq_ref_identical": a["fq_ref_mismatch"] == 0,
                "fq_ref_mismatches": a["fq_ref_mismatch"],
                "float_ref_spike_agreement": a["float_ref_agree"] / total,
                "firing_rate_float": a["float_spikes"] / total,
                "firing_rate_reference": a["ref_spikes"] / total,
            }
        )
    run = build_report(graph, counter, predictions["reference"], labels, ref_wall, "reference")
    return {
        "samples": int(len(labels)),
        "accuracy": accuracy,
        "layers": layers,
        "prediction_agreement_fq_ref": float(np.mean(predictions["torch-fakequant"] == predictions["reference"])),
        "act_overflows": {
            layer.name: layer.total("act_overflows") for layer in run.layers if layer.total("act_overflows")
        },
        "reference_run": run,
    }


def conversion_report(
    graph: Graph, comparison: dict[str, Any] | None, lowering: Callable[[Graph], dict[str, str]] | None = None
) -> dict[str, Any]:
    """The conversion report's JSON; ``lowering``: per op of the graph, what a backend lowers it to (the caller
    names the backend: the converter knows none)."""
    quant = graph.meta.get("quantization", {})
    layers = []
    for name in graph.order:
        node = graph.nodes[name]
        row = {"name": name, "op": node.op, "shape": list(node.shape)}
        if name in quant:
            row.update(
                {
                    "param": quant[name]["param"],
                    "rel_error": quant[name]["rel_error"],
                    "saturated": quant[name]["saturated"],
                }
            )
        row.update({key: node.attrs[key] for key in PLAN_FIELDS if key in node.attrs})
        if kernel(node.op, name).neurons(node):
            row["act_overflows"] = ((comparison or {}).get("act_overflows") or {}).get(name, 0)
        layers.append(row)
    if comparison:
        by_name = {layer["name"]: layer for layer in comparison["layers"]}
        for row in layers:
            row.update({k: v for k, v in by_name.get(row["name"], {}).items() if k != "name"})
    return {
        "schema": REPORT_SCHEMA,
        "schema_version": 1,
        "T": graph.T,
        "model": graph.meta.get("model_config", {}),
        "calibration": graph.meta.get("calibration", {}),
        "executors": ["torch-float", "torch-fakequant", "reference"],
        "preprocessing": graph.meta.get("preprocessing"),  # what the float model and the ONNX file expect
        "lowering": lowering(graph) if lowering is not None else {},
        "comparison": {k: v for k, v in (comparison or {}).items() if k not in ("layers", "reference_run")},
        "layers": layers,
    }


def convert(
    model: nn.Module,
    out_dir: str | os.PathLike[str],
    *,
    name: str = "model",
    calib_images: torch.Tensor | None = None,
    eval_images: torch.Tensor | None = None,
    eval_labels: np.ndarray | None = None,
    onnx: Callable[[nn.Module], tuple[bytes, dict[str, Any] | None] | None] | None = None,
    meta: dict[str, Any] | None = None,
    lowering: Callable[[Graph], dict[str, str]] | None = None,
    host_attention: bool = False,
    progress: Progress = QUIET,
) -> ConversionResult:
    """Convert, compare executors on the evaluation data, write ``<name>.spk.h5``, ``<name>.onnx`` and
    ``conversion_report.json`` into ``out_dir``. ``onnx`` exports the float model: (ONNX bytes, its ONNX Runtime
    parity with torch on the evaluation images or None), or None when it cannot; it is passed in
    (``spikeport.api.convert`` passes spikeport.exports.onnx's) because the exporters build on the converter,
    not the other way round. ``lowering`` fills the report's ``lowering`` section (per op: the processes a backend
    lowers it to; ``spikeport.api.convert`` passes the Lava backend's ``lowering_summary``, {} without one).
    ``host_attention``: every SSA / causal attention core on the host (AttentionCore), the fallback a user asks
    for instead of the chip-native token mixing (docs/lowering.md section 9)."""
    out_dir = Path(out_dir)
    model = model.eval()
    calibrated = f"scales calibrated on {len(calib_images)} images" if calib_images is not None else "static scales"
    progress.stage(f"tracing and quantizing to Loihi 2 fixed point ({calibrated})")
    graph = build_graph(model, calib_images)
    graph.meta.update(meta or {})
    if host_attention:
        place_on_host(graph)
    comparison = None
    if eval_images is not None and eval_labels is not None:
        progress.stage(f"comparing torch float, fake-quant and the reference simulator on {len(eval_images)} images")
        comparison = compare_executors(model, graph, eval_images, np.asarray(eval_labels), progress=progress)
    report = conversion_report(graph, comparison, lowering)
    release_freed_memory()
    onnx_bytes = None
    if onnx is not None:
        progress.stage("exporting the float network to ONNX and checking it in ONNX Runtime")
        exported = onnx(model)
        onnx_bytes, parity = exported if exported is not None else (None, None)
        report["onnx"] = {"exported": onnx_bytes is not None}
        if parity is not None:  # ONNX Runtime (CPU) vs the float torch model, same images
            report["onnx"]["parity"] = parity
    progress.stage(f"writing {out_dir}")
    files = artifact.write_conversion(graph, out_dir, name, report, onnx_bytes)
    progress.done()
    onnx_path = files[1] if onnx_bytes is not None else None
    reference_run = None
    if comparison:  # what `spikeport run <artifact>` reports on the same images
        run = comparison["reference_run"]
        reference_run = replace(  # the digest as `spikeport run` writes it: the report finds the runs' model by it
            run,
            artifact=str(files[0]),
            artifact_digest=graph.digest,
            model={**(run.model or {}), "dataset": graph.meta.get("dataset")},
        )
    return ConversionResult(graph, files[0], onnx_path, report, files, reference_run)
