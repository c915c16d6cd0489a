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
from spikeport.runtime.executor import to_channels_last
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
    assert graph.meta["qat_kept_epoch"] in (0, 1) and all("val_acc" in h for h in history)
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
    assert report["kept_epoch"] == result.kept_epoch == graph.meta["qat_kept_epoch"]


def test_qat_keeps_the_best_validated_epoch_not_the_last():
    """Labels that the post-training quantized network itself predicts: epoch 0 validates at 100 %, no
    fine-tuned epoch can beat it, so the artifact keeps epoch 0's integers, however fine-tuning went (a user saw
    98.06 % fall to 97.78 % because the last epoch was kept)."""
    from spikeport.convert.quantize import finalize

    model = spiky_model("ssa")
    images = random_images(60, seed=3)
    ptq = finalize(plan_graph(model, images[:16]))
    labels = torch.as_tensor(np.argmax(ReferenceSimulator(ptq).run_batch(to_channels_last(images.numpy())), -1))
    graph, history = finetune(
        plan_graph(model, images[:16]),
        (images, labels),
        (images[:12], labels[:12]),
        QatConfig(epochs=2, batch_size=12, lr=0.05),
        log=lambda msg: None,
    )
    assert history[0]["val_acc"] == 1.0 and len(history) == 3
    assert graph.meta["qat_kept_epoch"] == 0
    for name, node in ptq.nodes.items():
        for key, value in node.params.items():
            assert np.array_equal(graph.nodes[name].params[key], value), (name, key)


def test_qat_epochs_flag(tmp_path):
    """`train --qat --epochs 1` ran the default 2 QAT epochs: --epochs now counts QAT epochs under --qat."""
    import argparse

    from spikeport.cli import train as cli_train
    from spikeport.errors import ConfigError

    parser = argparse.ArgumentParser()
    cli_train.register(parser.add_subparsers())
    args = parser.parse_args(["train", "--qat", "--epochs", "1", "--qat-epochs", "3", "--init", "x.pt"])
    with pytest.raises(ConfigError, match="both count QAT epochs"):
        cli_train.run(args)


def test_train_qat_without_init_is_a_config_error(tmp_path):
    """train_qat is public (convert.qat): without --init it failed with a bare TypeError from Path(None)
    after building the model; it must refuse the config itself, before writing or reading anything."""
    from spikeport.convert.qat import train_qat
    from spikeport.errors import ConfigError
    from spikeport.train.config import TrainConfig

    with pytest.raises(ConfigError, match="--qat needs --init"):
        train_qat(TrainConfig(preset="digits-tiny", qat=True, out=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("drive", [300, 200_000])  # |a_in| << 6 within float32's exact integers; beyond (wraps)
def test_fakequant_inference_lif_equals_the_formula_in_float64(drive):
    """The fake-quant executor's LIF without a gradient (the simulator's numpy step on the tensors' memory) against
    ``fixedpoint.lif_step`` on float64 tensors, over four steps that fire, reset and (at the larger drive) wrap."""
    from spikeport import fixedpoint as fx
    from spikeport.convert.fakequant import TORCH, _InferenceOps

    gen = np.random.default_rng(0)
    p = fx.LifParams(du=4095, dv=2048, vth=40, bias_mant=gen.integers(-50, 50, 6), bias_exp=3)
    ops = _InferenceOps()
    u = v = u_ref = v_ref = torch.zeros(5, 6, dtype=torch.float64)
    fired = 0
    for _ in range(4):
        a_in = torch.as_tensor(gen.integers(-drive, drive, (5, 6)), dtype=torch.float64)
        with torch.no_grad():
            u, v, s = ops.lif_step(u, v, a_in, p, {})
        u_ref, v_ref, s_ref = fx.lif_step(TORCH, u_ref, v_ref, a_in, p)
        assert s.dtype == torch.float64 and torch.equal(s, s_ref)
        assert torch.equal(v.double(), v_ref) and torch.equal(u.double(), u_ref)
        assert v.dtype == (torch.float32 if drive == 300 else torch.float64)  # the float32 path, or the formula's
        fired += int(s.sum())
    assert 0 < fired < s.numel() * 4
