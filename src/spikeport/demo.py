"""``spikeport demo`` / ``run_demo()``: the whole pipeline on the embedded default, in a few minutes on a CPU.

For each attention (``ssa`` and ``lrf_dyn`` by default), on scikit-learn's digits:

1. train ``digits-tiny`` (float, SpikingJelly neurons)            -> <out>/runs/digits-<attention>/
2. convert it to Loihi 2 fixed point (calibrated), with ONNX      -> <out>/build/digits-<attention>/
3. run the reference integer simulator on the whole test split    -> <out>/reports/<attention>-reference.json
4. run the Lava CPU simulator (fixed_pt) on the first test samples -> <out>/reports/<attention>-lava.json
   and check it against the reference: identical spikes in every layer at every time step, identical
   predictions. A divergence stops the demo with the first differing (layer, time step, neuron).
5. price the op counts (Loihi 2, 45 nm CMOS), compare with the GPU baseline and the state memory of the
   attention variants                                             -> <out>/report.html, <out>/report.json

The demo trains fewer epochs than the digits recipe (``DemoConfig.epochs``: 6 instead of 10, about 97 %
instead of 98 %) so that all of it stays within 5 minutes on 2 cores; ``epochs=None`` uses the recipe.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from spikeport.errors import ConfigError, DemoParityError

PRESET = "digits-tiny"


@dataclass
class DemoConfig:
    out: str = "demo"                      # everything is written below this folder
    attentions: tuple = ("ssa", "lrf_dyn")
    epochs: int | None = 6                 # None: the digits recipe (10 epochs, about 2-3 min per model)
    lava_samples: int = 24                 # Lava fixed_pt on the first N test samples (reference: all 360)
    calibrate: int = 256                   # training images used to calibrate the fixed-point scales
    profiles: tuple = ("loihi2", "cmos45nm")   # hw profiles that price the op counts
    gpus: tuple = ("h100",)                # GPU profile(s) for the estimated baseline (no CUDA here)
    model: dict = field(default_factory=dict)  # ModelConfig overrides (tests shrink the model)
    seed: int = 42

    def __post_init__(self):
        from spikeport.train.models import ATTENTIONS

        self.attentions = tuple(self.attentions)
        bad = [a for a in self.attentions if a not in ATTENTIONS]
        if bad or not self.attentions:
            raise ConfigError(f"demo attentions {list(self.attentions)}: expected one or more of "
                              f"{', '.join(ATTENTIONS)}")
        if self.epochs is not None and self.epochs < 1:
            raise ConfigError(f"demo epochs = {self.epochs}: expected a positive integer (or None for the recipe)")
        if self.lava_samples < 1:
            raise ConfigError(f"demo lava_samples = {self.lava_samples}: expected at least 1")


@dataclass
class DemoModel:
    """What the demo measured for one attention variant."""
    attention: str
    train_minutes: float
    accuracy: dict                         # executor -> test accuracy (reference: whole split; lava: subset)
    lava_samples: int
    lava_identical: bool                   # spikes in every layer / step and predictions equal the reference
    files: dict                            # name -> path


@dataclass
class DemoResult:
    models: list[DemoModel]
    summary: dict                          # the report (schema spikeport.report v1)
    html: Path
    json: Path
    minutes: float


def run_demo(config: DemoConfig | None = None, say: Callable[[str], None] = print) -> DemoResult:
    """Train, convert, run (reference + Lava), check parity and write the report; see the module docstring."""
    from spikeport.train.data import load_digits_split

    cfg = config or DemoConfig()
    out = Path(cfg.out)
    start = time.perf_counter()
    data = {"calib": load_digits_split("train")[0][:cfg.calibrate], "test": load_digits_split("test")}
    models, runs = [], []
    for attention in cfg.attentions:
        model, run_paths = _one_model(cfg, attention, data, out, say)
        models.append(model)
        runs += run_paths
    summary, html, js = _report(cfg, runs, out, say)
    return DemoResult(models, summary, html, js, (time.perf_counter() - start) / 60)


def _one_model(cfg: DemoConfig, attention: str, data: dict, out: Path, say) -> tuple[DemoModel, list[Path]]:
    from spikeport.convert.api import convert, write_json_atomic
    from spikeport.runtime.sim.executor import to_channels_last
    from spikeport.runtime.lava.run import compare_with_reference, reference_spikes, run_lava
    from spikeport.train.api import train

    name = f"digits-{attention.replace('_', '')}"
    say(f"[{attention}] training {PRESET} on digits"
        f" ({'recipe epochs' if cfg.epochs is None else f'{cfg.epochs} epochs'}) -> {out / 'runs' / name}")
    overrides = {"epochs": cfg.epochs} if cfg.epochs is not None else {}
    trained = train(preset=PRESET, model={"attention": attention, **cfg.model}, out=str(out / "runs" / name),
                    seed=cfg.seed, progress=False, log=False, **overrides)
    say(f"[{attention}] trained in {trained.minutes:.2f} min: float test accuracy {trained.test_acc:.4f}")

    x_test, y_test = data["test"]
    y = y_test.numpy()
    conv = convert(trained.model.eval(), out / "build" / name, calib_images=data["calib"],
                   eval_images=x_test, eval_labels=y,
                   meta={"dataset": "digits", "checkpoint": str(trained.checkpoint)})
    acc = conv.report["comparison"]["accuracy"]
    say(f"[{attention}] converted -> {conv.artifact_path}: accuracy torch-float {acc['torch-float']:.4f}, "
        f"torch-fakequant {acc['torch-fakequant']:.4f}, reference {acc['reference']:.4f}")

    reports = out / "reports"
    images = to_channels_last(x_test.numpy())
    ref = conv.reference_run            # the conversion already ran the reference on the whole test split
    ref.update(artifact=str(conv.artifact_path))
    ref["model"]["dataset"] = "digits"
    ref_path = write_json_atomic(ref, reports / f"{attention}-reference.json")
    say(f"[{attention}] reference simulator: {ref['samples']} samples in {ref['wall_time_s']:.2f} s, "
        f"accuracy {ref['accuracy']:.4f}")

    n = min(cfg.lava_samples, len(images))
    lava, lava_spikes = run_lava(conv.graph, images[:n], y[:n])
    lava["compare"] = compare_with_reference(conv.graph, lava, lava_spikes, *reference_spikes(conv.graph, images[:n]))
    if not lava["compare"]["identical"]:
        d = lava["compare"]["first_divergence"]
        where = (f"layer {d['layer']}, time step {d['time_step']}, sample {d['sample']}, neuron {d['neuron']}"
                 if d else "the predictions")
        raise DemoParityError(f"{attention}: Lava fixed_pt differs from the reference simulator first at {where} "
                              f"(artifact {conv.artifact_path}; rerun with `spikeport run ... --backend lava "
                              f"--compare reference`)")
    lava.update(artifact=str(conv.artifact_path))
    lava["model"]["dataset"] = "digits"
    lava_path = write_json_atomic(lava, reports / f"{attention}-lava.json")
    say(f"[{attention}] Lava fixed_pt: {n} samples in {lava['wall_time_s']:.1f} s, bit-exact with the reference "
        f"(every layer, every time step, every prediction)")

    model = DemoModel(attention, trained.minutes,
                      {**acc, "reference (all)": ref["accuracy"], "lava-fixed_pt (subset)": lava["accuracy"]},
                      n, lava["compare"]["identical"], {"checkpoint": str(trained.checkpoint), "artifact": str(conv.artifact_path),
                                "onnx": str(conv.onnx_path), "reference": str(ref_path), "lava": str(lava_path)})
    return model, [ref_path, lava_path]


def _report(cfg: DemoConfig, run_paths: list[Path], out: Path, say) -> tuple[dict, Path, Path]:
    from spikeport.analysis.io import write_json
    from spikeport.report.html import write_html
    from spikeport.report.summary import ReportOptions, build_summary, load_run_report

    say("report: energy per profile, GPU baseline, state memory")
    opts = ReportOptions(profiles=tuple(cfg.profiles), gpus=tuple(cfg.gpus))
    summary = build_summary([load_run_report(p) for p in run_paths], sources=[str(p) for p in run_paths],
                            options=opts)
    html = write_html(summary, out / "report.html", title="spikeport demo: digits-tiny, SSA vs LRF-Dyn")
    js = write_json(summary, out / "report.json")
    return summary, Path(html), Path(js)
