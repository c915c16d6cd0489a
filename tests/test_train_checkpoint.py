"""Checkpoints: round trip, architecture mismatch, truncation, and the official Spikformer key sets.

The official key lists below are written from reading ZK-Zhou/spikformer cifar10/model.py (nn.Linear
q/k/v/proj and fc1/fc2 with bias, BatchNorm1d) and imagenet/model.py (Conv1d q/k/v without bias, Conv1d
proj with bias, Conv2d 1x1 fc1/fc2 with BatchNorm2d); SPS: proj_conv..proj_conv3 (no bias) + proj_bn..,
rpe_conv + rpe_bn; blocks keep the unused norm1/norm2 LayerNorms; LIF neurons hold no state-dict entries.
"""

from __future__ import annotations

import pytest
import torch

from spikeport.errors import CheckpointError
from spikeport.train import checkpoint as ck
from spikeport.train.models import build_model
from spikeport.train.presets import preset_config

BN = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")


def bn(prefix: str, c: int) -> dict:
    return {f"{prefix}.{k}": (() if k == "num_batches_tracked" else (c,)) for k in BN}


def official_keys(dim: int, depth: int, classes: int, layout: str) -> dict[str, tuple]:
    keys: dict[str, tuple] = {}
    chans = [3, dim // 8, dim // 4, dim // 2, dim]
    for i, suffix in enumerate(["", "1", "2", "3"]):
        keys[f"patch_embed.proj_conv{suffix}.weight"] = (chans[i + 1], chans[i], 3, 3)
        keys.update(bn(f"patch_embed.proj_bn{suffix}", chans[i + 1]))
    keys["patch_embed.rpe_conv.weight"] = (dim, dim, 3, 3)
    keys.update(bn("patch_embed.rpe_bn", dim))
    hidden = 4 * dim
    for b in range(depth):
        p = f"block.{b}"
        for norm in ("norm1", "norm2"):
            keys[f"{p}.{norm}.weight"] = keys[f"{p}.{norm}.bias"] = (dim,)
        for name in ("q", "k", "v"):
            if layout == "linear":  # cifar10/model.py: nn.Linear(dim, dim), bias on
                keys[f"{p}.attn.{name}_linear.weight"], keys[f"{p}.attn.{name}_linear.bias"] = (dim, dim), (dim,)
            else:  # imagenet/model.py: Conv1d(dim, dim, 1, bias=False)
                keys[f"{p}.attn.{name}_conv.weight"] = (dim, dim, 1)
            keys.update(bn(f"{p}.attn.{name}_bn", dim))
        if layout == "linear":
            keys[f"{p}.attn.proj_linear.weight"], keys[f"{p}.attn.proj_linear.bias"] = (dim, dim), (dim,)
            keys[f"{p}.mlp.fc1_linear.weight"], keys[f"{p}.mlp.fc1_linear.bias"] = (hidden, dim), (hidden,)
            keys[f"{p}.mlp.fc2_linear.weight"], keys[f"{p}.mlp.fc2_linear.bias"] = (dim, hidden), (dim,)
        else:
            keys[f"{p}.attn.proj_conv.weight"], keys[f"{p}.attn.proj_conv.bias"] = (dim, dim, 1), (dim,)
            keys[f"{p}.mlp.fc1_conv.weight"], keys[f"{p}.mlp.fc1_conv.bias"] = (hidden, dim, 1, 1), (hidden,)
            keys[f"{p}.mlp.fc2_conv.weight"], keys[f"{p}.mlp.fc2_conv.bias"] = (dim, hidden, 1, 1), (dim,)
        keys.update(bn(f"{p}.attn.proj_bn", dim))
        keys.update(bn(f"{p}.mlp.fc1_bn", hidden))
        keys.update(bn(f"{p}.mlp.fc2_bn", dim))
    keys["head.weight"], keys["head.bias"] = (classes, dim), (classes,)
    return keys


def synthetic_state(keys: dict[str, tuple], seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {
        k: (torch.tensor(7) if k.endswith("num_batches_tracked") else torch.randn(shape, generator=gen))
        for k, shape in keys.items()
    }


@pytest.mark.parametrize(
    "preset,dim,depth,classes,layout,published_m",
    [
        ("spikformer-4-384", 384, 4, 10, "linear", 9.32),
        ("spikformer-8-512", 512, 8, 1000, "conv", 29.68),
    ],
)
def test_official_checkpoint_loads_strict(preset, dim, depth, classes, layout, published_m, tmp_path):
    keys = official_keys(dim, depth, classes, layout)
    learnable = sum(
        torch.Size(s).numel()
        for k, s in keys.items()
        if not k.endswith(
            ("running_mean", "running_var", "num_batches_tracked"),
        )
        and ".norm" not in k
    )
    assert abs(learnable / 1e6 - published_m) <= 0.01  # the key list itself matches the paper
    model = build_model(preset_config(preset))
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == keys
    state = synthetic_state(keys)
    # timm wraps the weights and DDP prefixes them; the training args are an argparse.Namespace
    import argparse

    path = tmp_path / "official.pth.tar"
    torch.save(
        {
            "epoch": 299,
            "arch": "spikformer",
            "args": argparse.Namespace(lr=5e-4, model="spikformer"),
            "state_dict": {f"module.{k}": v for k, v in state.items()},
        },
        path,
    )
    ck.load_official_state_dict(model, path)
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k]), k
    ck.load_official_state_dict(build_model(preset_config(preset)), {"model": state})  # in-memory form


def test_official_checkpoint_of_other_size_names_the_keys():
    state = synthetic_state(official_keys(256, 4, 10, "linear"))
    with pytest.raises(
        CheckpointError,
        match=r"shape mismatches \[patch_embed\.proj_conv\.weight \(32, 3, 3, 3\) vs model \(48, 3, 3, 3\)",
    ):
        ck.load_official_state_dict(build_model(preset_config("spikformer-4-384")), state)


def small_model(attention="ssa"):
    torch.manual_seed(0)
    return build_model(preset_config("digits-tiny", attention=attention, neuron_backend="torch"))


def test_round_trip(tmp_path):
    model = small_model("lrf_dyn")
    path = ck.save_atomic(
        {
            "format": ck.FORMAT,
            "version": ck.VERSION,
            "model": model.state_dict(),
            "model_config": model.cfg.to_dict(),
            "epoch": 3,
        },
        tmp_path / "c.pt",
    )
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]  # no temporary file left behind
    loaded, meta = ck.load_model(path)
    assert meta["epoch"] == 3 and loaded.cfg == model.cfg
    for (ka, va), (kb, vb) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb)


def test_other_architecture_names_mismatched_keys(tmp_path):
    path = ck.save_atomic(
        {
            "format": ck.FORMAT,
            "version": ck.VERSION,
            "model": small_model("lrf_dyn").state_dict(),
            "model_config": {},
            "epoch": 1,
        },
        tmp_path / "dyn.pt",
    )
    with pytest.raises(CheckpointError) as err:
        ck.load_state_checked(small_model("ssa"), ck.load(path)["model"], path)
    msg = str(err.value)
    assert str(path) in msg and "unexpected keys [block.0.attn.lrf.convs.0.weight" in msg and "\n" not in msg


def test_truncated_and_foreign_files(tmp_path):
    good = ck.save_atomic(
        {
            "format": ck.FORMAT,
            "version": ck.VERSION,
            "model": small_model().state_dict(),
            "model_config": {},
            "epoch": 1,
        },
        tmp_path / "good.pt",
    )
    data = good.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"cut\.pt: not a readable torch checkpoint"):
        ck.load(cut)
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        ck.load(tmp_path / "missing.pt")
    plain = ck.save_atomic(small_model().state_dict(), tmp_path / "plain.pt")
    with pytest.raises(CheckpointError, match="not a spikeport checkpoint"):
        ck.load(plain)


def test_unsafe_pickles_are_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("executed",))

    path = tmp_path / "evil.pt"
    torch.save({"format": ck.FORMAT, "payload": Evil()}, path)
    with pytest.raises(CheckpointError, match="evil.pt"):
        ck.load(path)


def test_an_artifact_or_a_run_folder_is_named_for_what_it_is(tmp_path):
    """`convert` on QAT's output (an artifact) said 'not a readable torch checkpoint ... weights_only'."""
    import h5py

    art = tmp_path / "model.spk.h5"
    with h5py.File(art, "w") as f:
        f.attrs["format"] = "spikeport.artifact"
    with pytest.raises(CheckpointError, match=r"an HDF5 file .* already converted \(run it: spikeport run"):
        ck.read(art)
    with pytest.raises(CheckpointError, match="a folder, not a checkpoint file; it holds model.spk.h5"):
        ck.read(tmp_path)
