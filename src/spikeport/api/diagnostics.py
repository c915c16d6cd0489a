"""Measurements and studies beside the pipeline: GPU baselines, inference memory, the seed papers' diagnostics of a
trained model, the ablation, tokens as particles."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from spikeport import file_kinds
from spikeport.api.choices import Attention, AttentionForm, Dataset
from spikeport.errors import ConfigError

if TYPE_CHECKING:
    from spikeport.baselines.neurobench import NeuroBenchComparison
else:  # typing.get_type_hints resolves it on use (spikeport.api._hints)
    from spikeport.api._hints import _hint

    NeuroBenchComparison = _hint("baselines.neurobench.NeuroBenchComparison")


def bench_gpu(
    target: str,
    *,
    batches: Sequence[int] = (1,),
    modes: bool = False,
    attention: Attention | None = None,
    T: int | None = None,
    include_vit: bool = True,
    progress: Callable[[str], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """GPU baselines of a preset or a trained run (schema spikeport.gpu_bench): the float SNN, its ONNX export and
    an ANN ViT of the same size, measured on CUDA or estimated from GPU profiles, and measured on this CPU. One
    batch (``batches[0]``), or with ``modes`` the sweep ``batches`` reduced to latency mode (batch 1) and
    throughput mode (the best batch), ``on_result`` called after each batch. ``options``:
    ``baselines.gpu_bench.BenchOptions`` fields."""
    from spikeport.baselines.gpu_bench import bench_gpu as one, bench_gpu_modes as sweep

    common = dict(attention=attention, T=T, include_vit=include_vit, progress=progress, **options)
    if modes:
        return sweep(target, tuple(batches), on_result=on_result, **common)
    if len(batches) != 1:
        raise ConfigError(f"batches {list(batches)}: one batch without modes (the sweep is modes=True)")
    return one(target, batch=batches[0], **common)


def memory(
    preset: str,
    attentions: Sequence[Attention] = ("ssa", "lrf_dyn"),
    *,
    batch: int = 1,
    T: int | None = None,
    dtype: Literal["fp32", "fp16", "bf16"] = "fp32",
    measure: bool = True,
    device: str = "cpu",
    form: AttentionForm = "recurrent",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Per-module inference memory of a preset per attention variant (schema spikeport.memory_compare): analytic
    (weights, LIF state, attention state, activations) at torch precision and at Loihi precision, and with
    ``measure`` the torch float model's measured peak."""
    from spikeport.baselines.torch_memory import compare

    return compare(preset, list(attentions), batch, T, dtype, measure, device, form, progress=progress)


def neurobench(
    artifact: str | os.PathLike[str],
    *,
    checkpoint: str | os.PathLike[str] | None = None,
    samples: int = 64,
    batch_size: int = 16,
    progress: Callable[[str], None] | None = None,
) -> NeuroBenchComparison:
    """NeuroBench's metrics (the ``neurobench`` package: footprint, connection sparsity, activation sparsity, synaptic
    operations, membrane updates, accuracy) computed by NeuroBench on ``artifact``'s float model (the ``checkpoint`` it
    was converted from unless given), beside the reference executor's integer counts of the artifact on the same
    first ``samples`` test images, each row with the ratio and why they differ (``baselines/neurobench.py``)."""
    from spikeport.baselines.neurobench import compare

    file_kinds.expect(artifact, file_kinds.ARTIFACT_ONLY, "neurobench")
    return compare(artifact, checkpoint, samples, batch_size, progress or (lambda line: None))


def analyze(
    checkpoint: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] = "analysis",
    *,
    hf: str | None = None,
    samples: int = 256,
    dataset: Dataset | None = None,
    data_dir: str | None = None,
    split: Literal["train", "test"] = "test",
    batch_size: int = 32,
    text: str | None = None,
    seq_len: int = 128,
    progress: bool = False,
) -> dict[str, Any]:
    """The seed papers' diagnostics of a trained model (token clustering, head correlation, attention locality)
    written to ``out``; ``hf``: a Hugging Face model instead of a spikeport checkpoint."""
    if (checkpoint is None) == (hf is None):
        raise ConfigError("give either a checkpoint or hf (a Hugging Face model)")
    if samples < 1:
        raise ConfigError(f"samples = {samples}: expected >= 1")
    if hf is not None:
        from spikeport.analysis.hf import analyze_hf

        return analyze_hf(hf, Path(out), samples=samples, seq_len=seq_len, text_file=text, batch_size=batch_size)
    from spikeport.analysis.model_analysis import analyze_checkpoint

    assert checkpoint is not None  # checked above: exactly one of checkpoint and hf
    file_kinds.expect(checkpoint, file_kinds.CHECKPOINTS, "analyze")
    return analyze_checkpoint(
        Path(checkpoint),
        Path(out),
        samples=samples,
        data_dir=data_dir,
        dataset=dataset,
        split=split,
        batch_size=batch_size,
        progress=progress,
    )


def ablation(config: Any, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Seed 000's ablation (ViT and Spikformer x baseline, no MLP, no skip) for an ``analysis.ablation.
    AblationConfig``: trains every run, counts its operations, writes the tables to ``config.out``."""
    from spikeport.analysis.ablation import run_ablation

    return run_ablation(config, log=log)


def simulate_particles(
    config: Any,
    out: str | os.PathLike[str],
    snapshots: Sequence[float] | None = None,
    *,
    animation: bool = True,
    eps: float | None = None,
) -> dict[str, Any]:
    """Tokens as particles on the sphere under (spiking) self-attention (``analysis.particles.ParticleConfig``):
    trajectories, snapshots, the animation and cluster counts, written to ``out``."""
    from spikeport.analysis.clusters import DEFAULT_EPS
    from spikeport.analysis.simulate import simulate_particles as simulate

    snaps = list(snapshots) if snapshots is not None else None
    return simulate(config, Path(out), snaps, animation=animation, eps=DEFAULT_EPS if eps is None else eps)


def simulate_sweep(
    config: Any, betas: Sequence[float], taus: Sequence[float], out: str | os.PathLike[str], *, eps: float | None = None
) -> dict[str, Any]:
    """A beta x tau grid of particle runs from the same initial positions, written to ``out``."""
    from spikeport.analysis.clusters import DEFAULT_EPS
    from spikeport.analysis.simulate import sweep

    return sweep(config, list(betas), list(taus), Path(out), eps=DEFAULT_EPS if eps is None else eps)
