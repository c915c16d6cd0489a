"""`spikeport train` / `spikeport info` on bad input: one line naming what is wrong, exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from data_files import write_cifar
from spikeport.cli import main
from spikeport.train import checkpoint as ck
from spikeport.train.models import build_model
from spikeport.train.presets import preset_config

TINY = {
    "model": {"embed_dim": 16, "depth": 1, "num_heads": 2, "T": 2, "neuron_backend": "torch"},
    "batch_size": 256,
    "augment": "none",
}


def fails(capsys, argv: list[str], *expected: str) -> str:
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    err = capsys.readouterr().err.strip()
    assert code == 2, (argv, err)
    assert "Traceback" not in err, err
    # notes (e.g. "--amp needs CUDA") may come first; the error itself is one line, the last
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and err.splitlines()[-1] == errors[0], err
    err = errors[0]
    for text in expected:
        assert text in err, (text, err)
    return err


def test_unknown_choices_list_the_valid_ones(capsys):
    fails(capsys, ["train", "--preset", "spikformer-9-999"], "unknown preset 'spikformer-9-999'", "digits-tiny")
    fails(capsys, ["train", "--attention", "flash"], "unknown attention 'flash'", "lrf_dyn")
    fails(capsys, ["train", "--dataset", "mnist"], "unknown dataset 'mnist'", "cifar100")
    fails(capsys, ["train", "--neuron-backend", "cupy"], "unknown neuron backend 'cupy'", "spikingjelly, torch")
    fails(capsys, ["train", "--augment", "heavy"], "unknown augment profile 'heavy'", "none, light, cifar, imagenet")
    fails(capsys, ["train", "--epochs", "ten"], "argument --epochs: 'ten' is not a positive integer")
    fails(capsys, ["train", "--epochs", "0"], "argument --epochs: '0' is not a positive integer")
    fails(capsys, ["train", "--device", "tpu"], "unknown device 'tpu'")
    fails(capsys, ["info", "nope"], "unknown preset 'nope'")
    fails(capsys, ["info", "digits-tiny", "--attention", "x"], "unknown attention 'x'")


def test_bad_config_files(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("epochs: 3\nlearning_rate: 0.1\n")
    fails(capsys, ["train", "--config", str(bad)], "unknown keys ['learning_rate']", "valid keys:")
    bad.write_text("epochs: [3\n")
    fails(capsys, ["train", "--config", str(bad)], "bad.yaml: not valid YAML")
    bad.write_text(yaml.safe_dump({"model": {"embed_dims": 64}}))
    fails(capsys, ["train", "--config", str(bad)], "unknown model config keys ['embed_dims']")


def test_missing_corrupt_and_empty_data(capsys, tmp_path):
    folder = write_cifar(tmp_path / "c10")
    (folder / "data_batch_2").unlink()
    fails(
        capsys,
        ["train", "--preset", "spikformer-4-384", "--data-dir", str(tmp_path / "c10")],
        "data_batch_2: file not found",
        "expected a CIFAR python-pickle batch",
    )
    (folder / "data_batch_2").write_bytes(b"garbage")
    fails(
        capsys,
        ["train", "--preset", "spikformer-4-384", "--data-dir", str(tmp_path / "c10")],
        "data_batch_2: cannot read it",
    )
    (tmp_path / "inet" / "train" / "n01").mkdir(parents=True)
    (tmp_path / "inet" / "val" / "n01").mkdir(parents=True)
    fails(
        capsys,
        ["train", "--preset", "spikformer-8-384", "--data-dir", str(tmp_path / "inet")],
        "train: no images found",
    )
    fails(capsys, ["train", "--preset", "spikformer-8-384"], "--data-dir is required for imagenet")


def test_bad_checkpoints(capsys, tmp_path):
    other = build_model(preset_config("digits-tiny", attention="lrf_dyn", neuron_backend="torch"))
    path = ck.save_atomic(
        {
            "format": ck.FORMAT,
            "version": ck.VERSION,
            "model": other.state_dict(),
            "model_config": other.cfg.to_dict(),
            "epoch": 1,
        },
        tmp_path / "dyn.pt",
    )
    fails(
        capsys,
        ["train", "--attention", "ssa", "--init", str(path)],
        "dyn.pt: weights of another architecture",
        "unexpected keys [block.0.attn.lrf.convs.0.weight",
    )
    cut = tmp_path / "cut.pt"
    cut.write_bytes(path.read_bytes()[:1000])
    fails(capsys, ["train", "--init", str(cut)], "cut.pt: not a readable torch checkpoint")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "checkpoint.pt").write_bytes(path.read_bytes()[:-10])
    fails(capsys, ["train", "--out", str(run_dir), "--resume"], "checkpoint.pt: not a readable torch checkpoint")
    fails(capsys, ["train", "--qat"], "--qat needs --init")


def test_no_traceback_in_a_real_process(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "spikeport", "train", "--preset", "spikformer-4-384", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1:] == [
        f"spikeport train: error: {tmp_path}/data_batch_1: file not found; expected a CIFAR python-pickle batch: "
        f"a dict with b'data' (uint8 [N, 3072]) and b'labels' (N ints)"
    ]


def test_train_and_info_commands(capsys, tmp_path):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(TINY))
    assert (
        main(
            [
                "train",
                "--config",
                str(cfg),
                "--epochs",
                "1",
                "--out",
                str(tmp_path / "run"),
                "--quiet",
                "--attention",
                "lrf_dyn",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "digits-tiny (lrf_dyn)" in out and "test accuracy" in out
    flat = " ".join(out.split())  # the next step, as bundle ends with what to run
    assert f"next: spikeport convert {tmp_path / 'run' / 'checkpoint.pt'} --out build/digits-tiny-lrf_dyn" in flat
    saved = ck.load(tmp_path / "run" / "checkpoint.pt")
    assert saved["model_config"]["attention"] == "lrf_dyn" and saved["epoch"] == 1
    assert main(["info", "spikformer-4-384", "--dataset", "cifar10", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {"params", "macs", "layers", "T", "tokens"} <= info.keys()
    assert abs(info["params"] / 1e6 - 9.32) < 0.01 and info["T"] == 4 and info["tokens"] == 64
    assert main(["info", "digits-tiny", "--attention", "lrf_dyn"]) == 0
    assert "used by the forward pass" in capsys.readouterr().out
