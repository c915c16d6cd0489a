"""A NIR graph -> a spikeport artifact (``spikeport convert GRAPH.nir --out DIR --inputs SAMPLES.npy``).

Map (``primitives.graph_from_nir``), calibrate the fixed-point scales on the samples (the float simulation's
largest synaptic input per layer), quantize (``convert.quantize``: the same plan as a converted checkpoint), compare
the float simulation, fake-quant and the integer reference on the samples (spike agreement per layer, accuracy on
the labels, or agreement with the float predictions without labels), and write ``<name>.spk.h5`` with
``conversion_report.json``, whose ``nir`` section names the source, the mapping, the decays Loihi 2's 12 bits hold
and what is approximated. Nothing is written when any step fails.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from spikeport.atomic import check_output_dir
from spikeport.convert.api import ConversionResult, compare_executors, conversion_report
from spikeport.convert.passes import check_ranges
from spikeport.convert.quantize import finalize, plan
from spikeport.errors import ConfigError
from spikeport.ir import artifact as artifact_io
from spikeport.ir.graph import Graph
from spikeport.ir.limits import MAX_T
from spikeport.nir_import.graphs import flatten, library_of, primitive, read_nir
from spikeport.nir_import.primitives import Build, graph_from_nir
from spikeport.nir_import.samples import load_array, load_labels, to_ir_layout
from spikeport.nir_import.simulate import Simulator
from spikeport.progress import QUIET, Progress

DEFAULT_STEPS = 16  # a graph that names no T in its metadata and a conversion not given one
REPORT_KEY = "nir"


def check_file_name(name: str) -> None:
    if not name or Path(name).name != name or name in (".", ".."):
        raise ConfigError(f"name = {name!r}: expected a file name (no folder): the files go into `out`")


def time_step(graph_meta: dict[str, Any], dt: float | None, path: Path) -> tuple[float, str]:
    """(dt, where it came from): the one given, else the graph's metadata ``dt``; NIR's constants are in seconds
    and the libraries do not write the step they integrate with, so none is guessed."""
    if dt is None and "dt" in graph_meta:
        dt, where = float(np.ravel(graph_meta["dt"])[0]), "the graph's metadata"
    else:
        where = "given"
    if dt is None:
        raise ConfigError(
            f"{path}: the NIR graph does not say its time step (metadata 'dt'): give it with --dt SECONDS "
            "(snnTorch's export_to_nir writes tau = dt / (1 - beta) with dt = 1e-4; norse.torch.to_nir uses 1e-3)"
        )
    if not (np.isfinite(dt) and dt > 0):
        raise ConfigError(f"dt = {dt}: expected a positive time step in seconds")
    return float(dt), where


def steps_of(graph_meta: dict[str, Any], steps: int | None) -> tuple[int, str]:
    if steps is None and "T" in graph_meta:
        steps, where = int(np.ravel(graph_meta["T"])[0]), "the graph's metadata"
    elif steps is None:
        steps, where = DEFAULT_STEPS, f"default ({DEFAULT_STEPS}; --steps sets T)"
    else:
        where = "given"
    if not 1 <= steps <= MAX_T:
        raise ConfigError(f"steps = {steps}: expected 1..{MAX_T} time steps per sample")
    return int(steps), where


def float_forward(simulator: Simulator) -> Callable[..., tuple[np.ndarray, dict[str, Any]]]:
    """The float simulation as ``compare_executors`` calls a float network: NCHW images in, each layer's spikes out
    through ``on_layer``, logits back."""

    def forward(x: torch.Tensor, shapes: dict[str, Any], on_layer: Callable[[str, np.ndarray], None]) -> Any:
        run = simulator.run(x.permute(0, 2, 3, 1).numpy(), keep_spikes=True)
        for name in shapes:
            on_layer(name, run.spikes[name])
        return run.logits, {}

    return forward


def calibrate(build: Build, samples: np.ndarray) -> tuple[dict[str, float], float]:
    """(per neuron layer: its largest synaptic input before the 1 / tau fold, the quantizer's statistic; the
    largest |sample|), from the float simulation of ``samples``."""
    run = Simulator(build.graph, build.dynamics).run(samples)
    stats = {name: run.a_in_max.get(name, 0.0) * dyn.tau_steps for name, dyn in build.dynamics.items()}
    return stats, float(np.abs(samples).max(initial=0.0))


def nir_section(build: Build, source: dict[str, Any]) -> dict[str, Any]:
    """The conversion report's ``nir`` block: the source, each NIR node's spikeport nodes, the decays held."""
    layers = []
    for name, dyn in build.dynamics.items():
        layers.append(
            {
                "node": name,
                "primitive": dyn.primitive,
                "threshold": dyn.threshold,
                "dv": int(build.graph.nodes[name].attrs["dv"]),
                "du": int(build.graph.nodes[name].attrs["du"]),
                "decays": dyn.decays(),
                "notes": dyn.notes,
            }
        )
    decays = [d for dyn in build.dynamics.values() for d in dyn.decays()]
    worst = max((abs(float(d["error"])) for d in decays), default=0.0)
    notes = [{"node": name, "what": note} for name, dyn in build.dynamics.items() for note in dyn.notes]
    return {
        **source,
        "mapping": build.rows,
        "neurons": layers,
        "largest_decay_error": worst,
        "approximations": build.graph.meta.get("nir_approximations", []) + notes,
    }


def convert_nir(
    nir_file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    inputs: str | os.PathLike[str],
    labels: str | os.PathLike[str] | None = None,
    name: str = "model",
    dt: float | None = None,
    steps: int | None = None,
    calibrate_samples: int | None = None,
    samples: int | None = None,
    lowering: Callable[[Graph], dict[str, str]] | None = None,
    progress: Progress = QUIET,
) -> ConversionResult:
    """``<out>/<name>.spk.h5`` and ``<out>/conversion_report.json`` from the NIR graph ``nir_file``, calibrated on the
    first ``calibrate_samples`` of ``inputs`` (an .npy of analog samples [S, *input shape], NIR's layout; None: all)
    and compared on the first ``samples`` (None: all), scored on ``labels`` ([S] integers) where given."""
    path, out = Path(nir_file), check_output_dir(out, "convert out")
    check_file_name(name)
    artifact_io.check_conversion_targets(out, name)
    progress.stage(f"reading {path}")
    nir_graph = read_nir(path)
    flat = flatten(nir_graph)
    dt, dt_from = time_step(flat.metadata, dt, path)
    T, t_from = steps_of(flat.metadata, steps)
    library = library_of(nir_graph)
    input_node = next(n for n in flat.nodes.values() if primitive(n) == "Input")
    nir_shape = tuple(int(s) for s in np.ravel(input_node.input_type["input"]))
    meta = {
        "source": "nir",
        "nir_file": str(path.resolve()),
        "nir_library": library or "",
        "dt": dt,
        "nir_input_shape": list(nir_shape),
        "nir_inputs": str(Path(inputs).resolve()),
        "nir_labels": str(Path(labels).resolve()) if labels is not None else "",
        "model_config": {},
    }
    build = graph_from_nir(flat, dt, T, meta)
    x = to_ir_layout(load_array(inputs, "samples"), nir_shape, str(inputs))
    y = load_labels(labels, len(x)) if labels is not None else None
    calib = x[:calibrate_samples] if calibrate_samples else x
    progress.stage(f"calibrating the fixed-point scales on {len(calib)} samples (float simulation, dt = {dt:g} s)")
    float_graph_simulator = Simulator(copy.deepcopy(build.graph), build.dynamics)  # quantization works in place
    stats, input_range = calibrate(build, calib)
    graph = check_ranges(finalize(plan(build.graph, stats, input_range)))
    graph.meta["calibration"] = {"samples": len(calib), "lif_input_max": stats}
    x, y = x[:samples], None if y is None else y[:samples]
    # without labels the float simulation's predictions are what the integers are scored against
    float_run = float_graph_simulator.run(x) if y is None else None
    scored = y if y is not None else np.argmax(float_run.logits, axis=-1) if float_run else None
    progress.stage(f"comparing the float simulation, fake-quant and the reference simulator on {len(x)} samples")
    images = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    comparison = compare_executors(None, graph, images, np.asarray(scored), float_forward=float_forward(
        float_graph_simulator), progress=progress)  # fmt: skip
    report = conversion_report(graph, comparison, lowering)
    report["executors"] = ["nir-float (spikeport's Euler simulation)", "torch-fakequant", "reference"]
    source = {
        "file": meta["nir_file"],
        "library": library,
        "library_note": None if library else "the graph's metadata names no library (NIR 1.0 files usually do not)",
        "dt": dt,
        "dt_from": dt_from,
        "T": T,
        "T_from": t_from,
        "input_shape": list(nir_shape),
        "samples": meta["nir_inputs"],
        "labels": meta["nir_labels"] or None,
        "scored_against": "labels" if y is not None else "the float simulation's predictions (no labels given)",
    }
    report[REPORT_KEY] = nir_section(build, source)
    progress.stage(f"writing {out}")
    files = artifact_io.write_conversion(graph, out, name, report)
    progress.done()
    return ConversionResult(graph, files[0], None, report, files, None)
