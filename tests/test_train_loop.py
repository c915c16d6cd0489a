"""The training loop on a tiny setting: files written, schedule, and resume == uninterrupted (bit for bit)."""

from __future__ import annotations

import json

import pytest
import torch

from spikeport.errors import CheckpointError, ConfigError
from spikeport.train import checkpoint as ck
from spikeport.train.api import TrainConfig, resolve_config
from spikeport.train.loop import Trainer, lr_at

# digits-tiny shrunk to a few thousand parameters: one block, D = 16, T = 2 (a run takes seconds)
TINY = dict(embed_dim=16, depth=1, num_heads=2, T=2, neuron_backend="torch")


def tiny_config(out, **kw) -> TrainConfig:
    base = dict(
        model=dict(TINY),
        epochs=2,
        batch_size=128,
        lr=3e-3,
        warmup_epochs=0.5,
        progress=False,
        log=False,
        out=str(out) if out else None,
        augment={"profile": "light", "mixup": 0.3},
        seed=7,
    )
    return resolve_config("digits-tiny", None, **{**base, **kw})


def states_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_resume_gives_identical_weights(tmp_path):
    straight = Trainer(tiny_config(tmp_path / "a")).run()
    Trainer(tiny_config(tmp_path / "b")).run(stop_after=1)  # "interrupted" after epoch 1
    assert ck.load(tmp_path / "b" / "checkpoint.pt")["epoch"] == 1
    resumed = Trainer(tiny_config(tmp_path / "b", resume=True)).run()
    assert states_equal(straight.model.state_dict(), resumed.model.state_dict())
    a, b = ck.load(tmp_path / "a" / "checkpoint.pt"), ck.load(tmp_path / "b" / "checkpoint.pt")
    assert states_equal(a["model"], b["model"]) and a["epoch"] == b["epoch"] == 2
    assert a["optimizer"]["state"][0]["step"] == b["optimizer"]["state"][0]["step"]
    for ma, mb in zip(a["history"], b["history"], strict=True):
        assert (ma["train_loss"], ma["test_acc"], ma["firing_rates"]) == (
            mb["train_loss"],
            mb["test_acc"],
            mb["firing_rates"],
        )
    # and a different seed really trains differently
    other = Trainer(tiny_config(None, seed=8, epochs=1)).run()
    assert not states_equal(other.model.state_dict(), straight.model.state_dict())


def test_run_folder_contents(tmp_path):
    result = Trainer(tiny_config(tmp_path, epochs=1)).run()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["checkpoint.pt", "config.yaml", "curves.png", "metrics.jsonl"]
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["epoch"] == 1
    for key in ("train_loss", "train_acc", "test_loss", "test_acc", "lr", "epoch_time_s", "firing_rates"):
        assert key in lines[0]
    rates = lines[0]["firing_rates"]
    assert "block.0.attn.attn_lif" in rates and len(rates) == 12 and all(0 <= r <= 1 for r in rates.values())
    ckpt = ck.load(tmp_path / "checkpoint.pt")
    assert ckpt["model_config"]["embed_dim"] == 16 and ckpt["train_config"]["seed"] == 7 and ckpt["seed"] == 7
    assert {"optimizer", "scheduler", "rng", "scaler"} <= ckpt.keys()
    model, _ = ck.load_model(tmp_path / "checkpoint.pt")
    assert states_equal(model.state_dict(), result.model.state_dict())
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_resume_with_another_model_is_refused(tmp_path):
    Trainer(tiny_config(tmp_path, epochs=1)).run()
    cfg = tiny_config(tmp_path, resume=True, model={**TINY, "attention": "lrf_dyn"})
    with pytest.raises(CheckpointError, match=r"another model config \(differs in \['attention'\]\)"):
        Trainer(cfg).run()
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        Trainer(tiny_config(tmp_path / "empty", resume=True)).run()


def test_init_from_a_checkpoint(tmp_path):
    first = Trainer(tiny_config(tmp_path / "a", epochs=1)).run()
    cfg = tiny_config(
        None, epochs=1, lr=1e-9, warmup_lr=1e-9, min_lr=1e-9, init=str(tmp_path / "a" / "checkpoint.pt"), augment="none"
    )
    second = Trainer(cfg).run()
    w0, w1 = first.model.head.weight, second.model.head.weight
    assert (w0 - w1).abs().max() < 1e-5  # started from the saved weights, barely moved


def test_schedule_follows_timm():
    cfg = TrainConfig(epochs=310, cooldown_epochs=10, warmup_epochs=20, lr=5e-4, warmup_lr=1e-5, min_lr=1e-5)
    assert lr_at(cfg, 0) == pytest.approx(1e-5)
    assert lr_at(cfg, 10) == pytest.approx(1e-5 + 0.5 * (5e-4 - 1e-5))
    assert lr_at(cfg, 150) == pytest.approx(1e-5 + 0.5 * (5e-4 - 1e-5))  # half way down the cosine
    assert lr_at(cfg, 300) == lr_at(cfg, 309.5) == pytest.approx(1e-5)  # cooldown at min_lr


@pytest.mark.slow
def test_torchrun_ddp_on_cpu(tmp_path):
    """Two processes with the gloo backend: the DDP path (sampler, all-reduce, rank-0 writes) runs on CPU."""
    import subprocess
    import sys

    import yaml

    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump({"model": TINY, "batch_size": 128, "augment": "none", "epochs": 1}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "spikeport",
            "train",
            "--config",
            str(cfg),
            "--device",
            "cpu",
            "--quiet",
            "--out",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    saved = ck.load(tmp_path / "run" / "checkpoint.pt")
    assert saved["epoch"] == 1 and 0 <= saved["history"][0]["test_acc"] <= 1
    assert not any(k.startswith("module.") for k in saved["model"])


def test_one_log_line_per_epoch_without_a_terminal(capfd):
    """stderr captured (a CI log, nohup): no progress-bar redraws, one line per epoch with img/s and ETA."""
    Trainer(tiny_config(None, epochs=2, log=True, progress=True)).run()
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("epoch")]
    assert "\r" not in err and len(lines) == 2
    assert all(" img/s " in line and " ETA " in line for line in lines) and lines[-1].endswith("ETA 0:00")


def test_eval_every_evaluates_on_schedule_and_after_the_last_epoch(tmp_path, capsys):
    result = Trainer(tiny_config(tmp_path, epochs=3, eval_every=0, log=True)).run()
    assert ["test_acc" in m for m in result.history] == [False, False, True]
    assert result.test_acc == result.best_acc == result.history[-1]["test_acc"] and result.firing_rates
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("epoch")]
    assert len(lines) == 3 and "test loss" not in lines[0] and "test loss" in lines[2]
    assert (tmp_path / "curves.png").stat().st_size > 0  # plots the one evaluated epoch
    every_two = Trainer(tiny_config(None, epochs=3, eval_every=2)).run(stop_after=1)
    assert "test_acc" in every_two.history[-1]  # a slice ends evaluated: its checkpoint says where it got
    assert [("test_acc" in m) for m in Trainer(tiny_config(None, epochs=3, eval_every=2)).run().history] == [
        False,
        True,
        True,
    ]
    with pytest.raises(ConfigError, match="eval_every = -1"):
        tiny_config(None, eval_every=-1)
