"""`spikeport train --qat`: fine-tuning through the fake-quant executor yields an artifact whose integers
the reference simulator executes with the same predictions as the fake-quant network."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from conftest import random_images, spiky_model
from spikeport.api import train
from spikeport.convert.api import plan_graph
from spikeport.convert.fakequant import FakeQuantExecutor
from spikeport.convert.qat import QatConfig, finetune
from spikeport.ir import artifact
from spikeport.runtime.sim.executor import to_channels_last
from spikeport.runtime.sim.reference import ReferenceSimulator

TINY = dict(embed_dim=16, depth=1, num_heads=2, T=2, neuron_backend="torch")


@pytest.mark.parametrize("attention", ["ssa", "lrf_dyn"])
def test_finetuned_integers_run_the_same_on_fakequant_and_reference(attention):
    model = spiky_model(attention)
    images, labels = random_images(48, seed=3), torch.arange(48) % 10
    planned = plan_graph(model, images[:16])
    before = {k: v.copy() for k, v in planned.nodes["block.0.mlp.fc1_linear"].params.items()}
    graph, history = finetune(
        planned,
        (images, labels),
        (images[:16], labels[:16]),
        QatConfig(epochs=1, batch_size=16, lr=1e-3),
        log=lambda msg: None,
    )
    assert graph.quantized and graph.meta["qat"] and [h["epoch"] for h in history] == [0, 1]
    assert not np.array_equal(before["weight"], graph.nodes["block.0.mlp.fc1_linear"].params["weight_mant"])
    x = to_channels_last(images.numpy())
    ref = ReferenceSimulator(graph).run_batch(x)
    fq = FakeQuantExecutor(graph).run(x).numpy()
    assert np.array_equal(ref, fq)


@pytest.mark.slow
def test_train_qat_writes_a_runnable_artifact(tmp_path):
    float_run = train(
        preset="digits-tiny",
        model=TINY,
        epochs=1,
        batch_size=128,
        progress=False,
        log=False,
        out=str(tmp_path / "float"),
    )
    result = train(
        preset="digits-tiny",
        model=TINY,
        qat=True,
        init=str(float_run.checkpoint),
        qat_epochs=1,
        log=False,
        out=str(tmp_path / "qat"),
    )
    assert result.artifact == tmp_path / "qat" / "model.spk.h5"
    graph = artifact.read(result.artifact)
    assert graph.meta["qat"] and graph.meta["dataset"] == "digits"
    report = json.loads((tmp_path / "qat" / "qat_report.json").read_text())
    assert report["test_acc"] == result.test_acc and 0 <= report["ptq_acc"] <= 1
    assert len((tmp_path / "qat" / "qat_metrics.jsonl").read_text().splitlines()) == 2
