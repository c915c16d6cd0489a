"""The proof at the papers' size (issue 25): spikformer-4-384 at CIFAR-10 shape, every attention variant, converted
from a checkpoint by ``spikeport.convert`` like a trained one, Lava == the reference in every layer at every step,
with every LIF layer firing on at least 1 % of its neuron-steps (a silent layer would compare zeros). And the
paper's flagship (issue 34): spikformer-8-512 at ImageNet shape with SSA, its attention chip-native (196 tokens on
the 2-D token grid, no host process), one sample, in 9 parts (24 min and 12.4 GB of summed PSS here, 2026-11-28).

Lava runs the network in 4 parts (runtime/lava/partition.py: each part the whole network's processes for its
nodes, fed with the part before's recorded output), which keeps each run near 2 GB and its ~300 OS processes from
running at once. About 6 minutes on 2 cores: marked ``scale`` (and ``slow``), which CI deselects
(pyproject.toml's addopts); run it with ``pytest -m scale tests/test_scale.py``.
"""

import numpy as np
import pytest

from conftest import ATTENTIONS
from runs import reference_spikes
from scale_models import (
    FIRING_FLOOR,
    dataset_images,
    firing_checkpoint,
    firing_rates,
    write_synthetic_cifar,
    write_synthetic_imagenet,
)
from spikeport.runtime.compare import first_divergence
from spikeport.runtime.executor import to_channels_last
from spikeport.runtime.recording import recorded

partition = pytest.importorskip("spikeport.runtime.lava.partition")
pytestmark = [pytest.mark.lava, pytest.mark.slow, pytest.mark.scale]

PRESET, SAMPLES, PARTS = "spikformer-4-384", 2, 4
# 9 parts: the stem and one block each (an attention node, 8 chains of 8 processes, is one segment of the cut)
IMAGENET, IMAGENET_PARTS = "spikformer-8-512", 9


def lava_equals_reference_with_every_layer_firing(graph, images, labels, parts):
    """Lava in ``parts`` parts == the reference in every layer at every step, in predictions and per-layer spikes,
    with every LIF layer firing on >= FIRING_FLOOR of its neuron-steps; (Lava's report as a dict, its spikes, the
    reference's spikes, the LIF layers, their firing rates)."""
    report = partition.run_lava_partitioned(graph, images, labels.numpy(), parts=parts)
    rep, spikes = report.to_dict(), report.recording
    ref_rep, ref_spikes = reference_spikes(graph, images)
    assert set(spikes) == set(ref_spikes) >= set(recorded(graph))
    divergence = first_divergence(graph, ref_spikes, spikes)
    assert divergence is None, divergence
    assert rep["predictions"] == ref_rep["predictions"]
    for a, b in zip(rep["layers"], ref_rep["layers"], strict=True):
        assert a["spikes"] == b["spikes"], a["name"]
    lifs = [node.name for node in graph.by_op("lif")]
    rates = firing_rates(ref_spikes, lifs)
    silent = {name: rate for name, rate in rates.items() if rate < FIRING_FLOOR}
    assert not silent, f"layers firing on < {FIRING_FLOOR:.0%} of neuron-steps compare (almost) zeros: {silent}"
    assert len(rep["lava"]["parts"]) == parts
    return rep, spikes, ref_spikes, lifs, rates


@pytest.fixture(scope="module")
def cifar(tmp_path_factory):
    return write_synthetic_cifar(tmp_path_factory.mktemp("cifar"), per_file=16)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_lava_equals_reference_at_cifar_shape_with_every_layer_firing(attention, cifar, tmp_path):
    from spikeport import api
    from spikeport.ir import artifact

    ckpt = firing_checkpoint(PRESET, attention, "cifar10", cifar, tmp_path / "run", calib=16)
    converted = api.convert(ckpt, tmp_path / "build", calibrate=16, eval_samples=4, onnx=False)
    graph = artifact.read(converted.artifact_path)
    x, y = dataset_images("cifar10", cifar, "test", SAMPLES, 32)
    images = to_channels_last(x.numpy())

    _, spikes, _, lifs, rates = lava_equals_reference_with_every_layer_firing(graph, images, y, PARTS)
    assert np.isclose(sum(rates.values()) / len(rates), np.mean(list(firing_rates(spikes, lifs).values())))


@pytest.fixture(scope="module")
def imagenet(tmp_path_factory):
    return write_synthetic_imagenet(tmp_path_factory.mktemp("imagenet"), classes=2, per_class=4)


def test_lava_equals_reference_at_imagenet_shape_with_chip_native_ssa(imagenet, tmp_path):
    """spikformer-8-512 at 224 x 224 (a 2-class head on a synthetic ImageNet folder), SSA: every attention layer
    chip-native (one Conv a head over the 14 x 14 token grid, no AttentionCore), Lava in 9 parts == the reference
    in every layer at every step for one sample, every LIF layer firing on >= 1 % of its neuron-steps."""
    from spikeport import api
    from spikeport.ir import artifact
    from spikeport.ir.kernels.attention import on_chip

    ckpt = firing_checkpoint(IMAGENET, "ssa", "imagenet", imagenet, tmp_path / "run", calib=4)
    converted = api.convert(ckpt, tmp_path / "build", calibrate=4, eval_samples=1, onnx=False)
    graph = artifact.read(converted.artifact_path)
    attention = graph.by_op("attention")
    assert len(attention) == 8 and all(on_chip(node) and node.shape == (14, 14, 512) for node in attention)
    x, y = dataset_images("imagenet", imagenet, "test", 1, 224)
    images = to_channels_last(x.numpy())

    rep, _, _, _, _ = lava_equals_reference_with_every_layer_firing(graph, images, y, IMAGENET_PARTS)
    assert "AttentionCore" not in {row["type"] for row in rep["lava"]["state"]}
