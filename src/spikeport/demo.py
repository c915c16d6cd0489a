"""``spikeport demo`` / ``run_demo()``: the whole pipeline on the embedded default, in a few minutes on a CPU.

For each attention (``ssa`` and ``lrf_dyn`` by default), on scikit-learn's digits:

1. train ``digits-tiny`` (float, compiled LIF loops)              -> <out>/runs/digits-<attention>/
2. convert it to Loihi 2 fixed point (calibrated), with ONNX      -> <out>/build/digits-<attention>/
3. run the reference integer simulator on the whole test split    -> <out>/reports/<attention>-reference.json
4. run the Lava CPU simulator (fixed_pt) on the first test samples -> <out>/reports/<attention>-lava.json
   and check it against the reference: identical spikes in every layer at every time step, identical
   predictions. A divergence stops the demo with the first differing (layer, time step, neuron).
5. price the op counts (Loihi 2, 45 nm CMOS), compare with the GPU baseline and the state memory of the
   attention variants, check-hw's cores on Loihi 2 (the demo's
   check-hw line reads the report's figures)                      -> <out>/report.html, <out>/report.json

Each step is one call of the public API (``spikeport.api``: train, convert, run, report), the calls a
user's own script would make.

The demo trains fewer epochs than the digits recipe (``DemoConfig.epochs``: 6 instead of 10, about 96 %
instead of 98 %), and trains the variants side by side with one torch thread each, the first in this process and
the others in child processes (``DemoConfig.side_by_side``): a digits-tiny epoch is no faster on two threads than on
one (the model is small: the time goes to per-layer overheads, not arithmetic), so two cores train both models in
the time of one. It trains
with ``neuron_backend="torch"``, whose training step runs the LIF as compiled loops (train/lif_kernels.py: the
step in 0.60x the time with SpikingJelly's neurons) and each BatchNorm with its LIF as one compiled node
(train/bn_lif.py), evaluates the test split once, after the last epoch, and runs
the conversions and the report on one torch thread (``DemoConfig.threads``: a second one bought 3 s of a 23 s
conversion for 9 s more CPU). All of it: about 2 minutes and 155-205 s of CPU on 2 cores (docs/demo.md).
``epochs=None`` uses the recipe.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spikeport import api
from spikeport.errors import ConfigError, DemoParityError
from spikeport.report.model import ReportSummary
from spikeport.train.model_config import ATTENTIONS
from spikeport.train.threads import torch_threads

PRESET = "digits-tiny"


@dataclass
class DemoConfig:
    out: str = "demo"  # everything is written below this folder
    attentions: tuple = ("ssa", "lrf_dyn")
    epochs: int | None = 6  # None: the digits recipe (10 epochs, about 2-3 min per model)
    lava_samples: int = 24  # Lava fixed_pt on the first N test samples (reference: all 360)
    calibrate: int = 256  # training images used to calibrate the fixed-point scales
    profiles: tuple = ("loihi2", "cmos45nm")  # hw profiles that price the op counts
    gpus: tuple = ("h100",)  # GPU profile(s) for the estimated baseline (no CUDA here)
    model: dict = field(default_factory=dict)  # ModelConfig overrides (tests shrink the model)
    seed: int = 42
    verbose: bool = True  # per-epoch training lines and the Lava progress bar (on a terminal), on stderr
    side_by_side: bool = True  # train the variants in parallel, one torch thread each (module doc)
    neuron_backend: str = "torch"  # the compiled LIF loops: ~1.7x SpikingJelly's CPU path (module doc)
    threads: int | None = 1  # torch threads of the conversions and the report (None: torch's default; module doc)

    def __post_init__(self) -> None:
        self.attentions = tuple(self.attentions)
        bad = [a for a in self.attentions if a not in ATTENTIONS]
        if bad or not self.attentions:
            raise ConfigError(
                f"demo attentions {list(self.attentions)}: expected one or more of {', '.join(ATTENTIONS)}"
            )
        if self.epochs is not None and self.epochs < 1:
            raise ConfigError(f"demo epochs = {self.epochs}: expected a positive integer (or None for the recipe)")
        if self.lava_samples < 1:
            raise ConfigError(f"demo lava_samples = {self.lava_samples}: expected at least 1")


@dataclass
class DemoModel:
    """What the demo measured for one attention variant."""

    attention: str
    train_minutes: float
    accuracy: dict  # executor -> test accuracy (reference: whole split; lava: subset)
    lava_samples: int
    lava_identical: bool  # spikes in every layer / step and predictions equal the reference
    files: dict  # name -> path
    hardware: dict = field(default_factory=dict)  # the report's check-hw (loihi2 unless profiles say): cores, host
    test_samples: int = 0  # the test images the float, fake-quant and reference accuracies are over


@dataclass
class DemoResult:
    models: list[DemoModel]
    summary: ReportSummary  # the report (schema spikeport.report v1; .to_dict() is its JSON)
    html: Path
    json: Path
    minutes: float


def run_demo(config: DemoConfig | None = None, say: Callable[[str], None] = print) -> DemoResult:
    """Train, convert, run (reference + Lava), check parity and write the report; see the module docstring."""
    cfg = config or DemoConfig()
    out = Path(cfg.out)
    start = time.perf_counter()
    trained = _train_all(cfg, out, say)
    models, runs = [], []
    with torch_threads(cfg.threads):
        for attention in cfg.attentions:
            model, run_paths = _one_model(cfg, attention, trained[attention], out, say)
            models.append(model)
            runs += run_paths
        say("report: energy per profile, GPU baseline, state memory")
        html, js = out / "report.html", out / "report.json"
        summary = api.report(
            runs,
            profiles=cfg.profiles,
            gpus=cfg.gpus,
            html=html,
            json=js,
            title="spikeport demo: digits-tiny, SSA vs LRF-Dyn",
        )
    for model in models:
        _chip_line(model, summary, say)
    return DemoResult(models, summary, html, js, (time.perf_counter() - start) / 60)


@dataclass(frozen=True)
class Trained:
    """What a training left for the rest of the demo (a child process returns it: no model object)."""

    checkpoint: Path
    minutes: float
    test_acc: float


def _name(attention: str) -> str:
    return f"digits-{attention}"  # the attention's one name in folders, reports and flags (digits-lrf_dyn)


def _train_all(cfg: DemoConfig, out: Path, say: Callable[[str], None]) -> dict[str, Trained]:
    """Every variant trained: side by side in child processes, one torch thread each, where the CPUs allow
    (their lines on stderr prefixed with the variant), else one after another here."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    parallel = cfg.side_by_side and len(cfg.attentions) > 1 and cpus > 1
    epochs = "recipe epochs" if cfg.epochs is None else f"{cfg.epochs} epochs"
    for a in cfg.attentions:
        say(f"[{a}] training {PRESET} on digits ({epochs}) -> {out / 'runs' / _name(a)}")
    jobs = {a: _train_args(cfg, a, out, bars=not parallel) for a in cfg.attentions}
    if not parallel:
        done = {a: _train(kw) for a, kw in jobs.items()}
    else:
        threads = max(1, cpus // len(jobs))
        say(f"training the {len(jobs)} variants side by side, {threads} torch thread(s) each")
        here, *others = jobs  # the first trains in this process: a child pays ~5 s of CPU importing torch & co.
        # spawn: a fresh interpreter per child (forking a process that holds torch's thread pools can hang)
        pool = multiprocessing.get_context("spawn").Pool(len(others))
        try:
            pending = {a: pool.apply_async(_train_child, (a, jobs[a], threads)) for a in others}
            with torch_threads(threads), _prefixed_stderr(here):
                trained_here = _train(jobs[here])
            done = {here: trained_here, **{a: p.get() for a, p in pending.items()}}
            pool.close()
        finally:
            pool.terminate()  # a failure, Ctrl-C or SIGTERM here ends the other trainings too
            pool.join()
    for a, t in done.items():
        say(f"[{a}] trained in {t.minutes:.2f} min: float test accuracy {t.test_acc:.4f}")
    return done


def _train_args(cfg: DemoConfig, attention: str, out: Path, bars: bool) -> dict[str, Any]:
    return dict(
        preset=PRESET,
        model={"attention": attention, "neuron_backend": cfg.neuron_backend, **cfg.model},
        out=str(out / "runs" / _name(attention)),
        eval_every=0,  # the test split once, after the last epoch: the accuracy the demo reports
        seed=cfg.seed,
        progress=cfg.verbose and bars,  # batch bars on a terminal (none in a log, none side by side)
        log=cfg.verbose,  # one line per epoch (loss, accuracy, img/s, ETA) on stderr
        epochs=cfg.epochs,  # None: the recipe's
    )


def _train(kw: dict[str, Any]) -> Trained:
    from spikeport.train.loop import TrainResult

    trained = api.train(**kw)
    assert isinstance(trained, TrainResult) and trained.checkpoint is not None  # float training into `out`
    return Trained(trained.checkpoint, trained.minutes, trained.test_acc)


def _train_child(attention: str, kw: dict[str, Any], threads: int) -> Trained:
    """One variant's training in a child process: ``threads`` torch threads, each stderr line prefixed."""
    import torch

    torch.set_num_threads(threads)
    sys.stderr = _Prefixed(sys.stderr, f"[{attention}] ")
    return _train(kw)


@contextlib.contextmanager
def _prefixed_stderr(attention: str) -> Iterator[None]:
    """This process's stderr lines prefixed with the variant for the block (a training beside a child's)."""
    stream = sys.stderr
    sys.stderr = _Prefixed(stream, f"[{attention}] ")
    try:
        yield
    finally:
        sys.stderr = stream


class _Prefixed:
    """A text stream that starts every line with ``prefix`` (two trainings share one terminal or log)."""

    def __init__(self, stream: Any, prefix: str) -> None:
        self.stream, self.prefix, self.at_start = stream, prefix, True

    def write(self, text: str) -> int:
        for part in text.splitlines(keepends=True):
            self.stream.write((self.prefix if self.at_start else "") + part)
            self.at_start = part.endswith("\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False  # lines, not bars: two bars would overwrite each other


def _chip_line(model: DemoModel, summary: ReportSummary, say: Callable[[str], None]) -> None:
    """The model's check-hw footprint on Loihi 2 as the report worked it out (one computation, the report's figures),
    into ``model.hardware`` and one line."""
    lava = model.files["lava"]
    chip = next((m.chip for m in summary.models if lava in m.runs and m.chip is not None), None)
    if chip is None:
        return
    model.hardware = {"cores": chip.cores, "host_computing": chip.host_computing}
    host = f" ({', '.join(chip.host_computing)})" if chip.host_computing else ""
    say(
        f"[{model.attention}] check-hw {chip.profile}: ~{chip.cores} cores, {len(chip.host_computing)} computing "
        f"processes on the host{host}"
    )


def _one_model(
    cfg: DemoConfig, attention: str, trained: Trained, out: Path, say: Callable[[str], None]
) -> tuple[DemoModel, list[Path]]:
    name = _name(attention)

    say(f"[{attention}] converting: calibration, fake-quant and reference on the test split, ONNX export and check")
    conv = api.convert(
        trained.checkpoint, out / "build" / name, calibrate=cfg.calibrate, dataset="digits", progress=cfg.verbose
    )
    acc = conv.report["comparison"]["accuracy"]
    say(
        f"[{attention}] converted -> {conv.artifact_path}: accuracy torch-float {acc['torch-float']:.4f}, "
        f"torch-fakequant {acc['torch-fakequant']:.4f}, reference {acc['reference']:.4f}"
    )

    reports = out / "reports"
    ref = conv.reference_run  # the conversion already ran the reference on the whole test split
    assert ref is not None and conv.artifact_path is not None  # it evaluated on the test split and wrote the file
    ref_path = reports / f"{attention}-reference.json"
    ref.to_json(ref_path)
    say(
        f"[{attention}] reference simulator: {ref.samples} samples in {ref.wall_time_s:.2f} s, "
        f"accuracy {ref.accuracy:.4f}"
    )

    say(f"[{attention}] Lava fixed_pt on {cfg.lava_samples} test images, compared with the reference in every layer")
    lava = api.run(conv.artifact_path, "lava", compare="reference", samples=cfg.lava_samples, progress=cfg.verbose)
    if not lava.identical:
        d = lava.compare.first_divergence if lava.compare else None
        where = (
            f"layer {d['layer']}, time step {d['time_step']}, sample {d['sample']}, neuron {d['neuron']}"
            if d
            else "the predictions"
        )
        raise DemoParityError(
            f"{attention}: Lava fixed_pt differs from the reference simulator first at {where} "
            f"(artifact {conv.artifact_path}; rerun with `spikeport run ... --backend lava "
            f"--compare reference`)"
        )
    lava_path = reports / f"{attention}-lava.json"
    lava.to_json(lava_path)
    say(
        f"[{attention}] Lava fixed_pt: {lava.samples} samples in {lava.wall_time_s:.1f} s, bit-exact with the "
        f"reference (every layer, every time step, every prediction)"
    )

    files = {
        "checkpoint": str(trained.checkpoint),
        "artifact": str(conv.artifact_path),
        "onnx": str(conv.onnx_path),
        "reference": str(ref_path),
        "lava": str(lava_path),
    }
    model = DemoModel(
        attention,
        trained.minutes,
        {**acc, "reference (all)": ref.accuracy, "lava-fixed_pt (subset)": lava.accuracy},
        lava.samples,
        bool(lava.identical),
        files,
        test_samples=ref.samples,
    )
    return model, [ref_path, lava_path]
