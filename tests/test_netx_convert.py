"""netx -> .spk.h5 -> netx (issue 13 req 3): `spikeport convert net.net` and `spikeport export --netx` round-trip a
lava-dl file to the same spikes, in spikeport's executors and in lava-dl's own netx on Lava."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from runs import netx_spikes
from spikeport.cli import main
from spikeport.ir import artifact
from spikeport.netx import inputs as netx_inputs, read as netx
from spikeport.netx.drive import InputDrive
from spikeport.runtime.lava.lavadl import run_lavadl_netx
from test_netx_interop import lava_dl_netx_tests, slayer_dense_net, spikes


def _datasets(path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    with h5py.File(path) as f:
        f.visititems(lambda name, obj: out.update({name: obj[()]}) if isinstance(obj, h5py.Dataset) else None)
    return out


def test_pilotnet_lif_converts_and_exports_back_to_the_same_network(tmp_path, capsys):
    """PilotNet-LIF (input block, 5 convs, flatten, 4 dense) -> artifact -> netx: the same layer types, weights,
    biases and neuron integers, and the same spikes in every layer at every step on the reference simulator."""
    root = lava_dl_netx_tests() / "gts" / "pilotnet_lif"
    out = tmp_path / "build"
    assert main(["convert", str(root / "network.net"), "--out", str(out), "--input-drive", "bias"]) == 0
    report = json.loads((out / "conversion_report.json").read_text())
    assert report["input_drive"] == "bias" and report["T"] == 16 and report["input_shape"] == [66, 200, 3]
    assert {layer["netx_layer"] for layer in report["layers"]} >= {"layer/0", "layer/7", "layer/10"}
    graph = artifact.read(out / "model.spk.h5")
    assert graph.meta["source"] == "netx" and graph.meta["input_drive"] == "bias"

    back = tmp_path / "back.net"
    assert main(["export", str(out / "model.spk.h5"), "--netx", str(back)]) == 0
    assert "left out: nothing" in capsys.readouterr().out
    original, exported = _datasets(root / "network.net"), _datasets(back)
    types = {k: v for k, v in exported.items() if k.endswith("/type") and k.count("/") == 2}
    assert [types[f"layer/{i}/type"][0] for i in range(11)] == [
        b"input",
        *[b"conv"] * 5,
        b"flatten",
        *[b"dense"] * 4,
    ]
    for key, value in original.items():
        if key.endswith(("/weight", "/bias", "iDecay", "vDecay", "vThMant", "Ts", "tSample")):
            theirs = exported.get(key, np.zeros_like(value))  # an all-zero bias is not written
            assert np.array_equal(np.ravel(value).astype(np.int64), np.ravel(theirs).astype(np.int64)), key

    image = netx_inputs.to_spikeport_layout(np.load(root / "image.npy"), "bias", "netx")
    _, ours = netx_spikes(root / "network.net", image, input_drive="bias", steps=17)
    _, again = netx_spikes(back, image, input_drive="bias", steps=17)
    assert sorted(ours) == sorted(again) and all(np.array_equal(ours[k], again[k]) for k in ours)
    assert sum(int(s.sum()) for s in ours.values()) > 0


@pytest.mark.lava
def test_round_trip_gives_the_same_spikes_in_lava_dl_netx(tmp_path):
    """A slayer-built network: lava-dl's netx on Lava runs the original file and its round trip through spikeport
    (convert, export) to identical spikes in every layer at every step."""
    path = slayer_dense_net(tmp_path / "slayer.net")
    assert main(["convert", str(path), "--out", str(tmp_path / "b"), "--steps", "16"]) == 0
    assert main(["export", str(tmp_path / "b" / "model.spk.h5"), "--netx", str(tmp_path / "back.net")]) == 0
    x = spikes((3, 16, 40))
    before = run_lavadl_netx(path, x)
    after = run_lavadl_netx(tmp_path / "back.net", x)
    assert len(before) == len(after) == 3
    for a, b in zip(before, after, strict=True):
        assert a.shape == b.shape and np.array_equal(a, b) and a.sum() > 0


def test_convert_refuses_a_netx_file_without_out_and_names_bad_steps(tmp_path, capsys):
    root = lava_dl_netx_tests()
    assert main(["convert", str(root / "tiny.net")]) != 0
    assert "--out" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # argparse's one line, before any work
        main(["convert", str(root / "tiny.net"), "--out", str(tmp_path), "--steps", "0"])
    assert refused.value.code == 2 and "argument --steps: '0' is not a positive integer" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_netx_steps_reads_the_files_sample_length():
    root = lava_dl_netx_tests()
    assert netx.netx_steps(root / "mnist.net") == 16
    assert netx.netx_steps(root / "gts" / "pilotnet_sdnn" / "network.net") is None


def test_converted_artifact_runs_like_its_netx_file(tmp_path, capsys):
    """`spikeport run model.spk.h5 --inputs ...` on an artifact converted from a netx file: same report figures
    as running the file itself; a drive other than the one it was converted with is refused by name."""
    root = lava_dl_netx_tests() / "gts" / "pilotnet_lif"
    out = tmp_path / "b"
    assert main(["convert", str(root / "network.net"), "--out", str(out), "--input-drive", "bias"]) == 0
    args = ["--inputs", str(root / "image.npy"), "--input-layout", "netx", "--input-drive", "bias", "--steps", "17"]
    assert main(["run", str(out / "model.spk.h5"), *args, "--json", str(tmp_path / "a.json")]) == 0
    assert main(["run", str(root / "network.net"), *args, "--json", str(tmp_path / "f.json")]) == 0
    a, f = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "f.json"))
    assert [layer["spikes"] for layer in a["layers"]] == [layer["spikes"] for layer in f["layers"]]
    assert a["predictions"] == f["predictions"] and a["totals"]["spikes"] > 0
    capsys.readouterr()
    assert main(["run", str(out / "model.spk.h5"), "--inputs", str(tmp_path / "x.npy"), "--input-drive", "spikes"]) != 0
    assert "converted from a netx file with input_drive='bias'" in capsys.readouterr().err


def test_an_sdnn_file_is_read_as_graded_input_without_being_told(capsys):
    """pilotnet_sdnn's input layer is a Delta encoder: import, check-hw and convert default to graded input."""
    path = lava_dl_netx_tests() / "gts" / "pilotnet_sdnn" / "network.net"
    assert netx.default_input_drive(path) is InputDrive.GRADED
    assert netx.default_input_drive(lava_dl_netx_tests() / "tiny.net") is InputDrive.SPIKES
    assert netx.graph_from_netx(path).nodes["input"].attrs["kind"] == "graded"
    assert main(["check-hw", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("OK: fits an Oheo Gulch board (1 of 1 chip)")


def test_report_reads_a_netx_run_like_any_run(tmp_path, capsys):
    """`spikeport report` on the run report of a lava-dl file: per-layer synops, estimated energy, no Spikformer
    legend (the layer names are netx's)."""
    root = lava_dl_netx_tests() / "gts" / "pilotnet_lif"
    run = ["run", str(root / "network.net"), "--inputs", str(root / "image.npy"), "--input-layout", "netx"]
    assert main([*run, "--input-drive", "bias", "--steps", "17", "--json", str(tmp_path / "r.json")]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "r.json"), "--no-gpu", "--json", str(tmp_path / "s.json")]) == 0
    assert "layer names: stem" not in capsys.readouterr().out
    summary = json.loads((tmp_path / "s.json").read_text())["runs"][0]
    layers = {layer["name"]: layer for layer in summary["layers"]}
    assert layers["layer1.conv"]["synops"] > 0 and layers["layer7.dense"]["synops"] > 0
    assert all(e["kind"].startswith("estimated") for e in summary["energy"]) and summary["energy"]


@pytest.mark.lava
def test_pilotnet_sdnn_round_trips_to_the_same_file_and_outputs(tmp_path):
    """pilotnet_sdnn (Delta input, SigmaDelta layers, Sigma output) -> artifact -> netx: the same layer types,
    weights, biases and thresholds; lava-dl's netx on Lava gives the same outputs in every layer on both files."""
    root = lava_dl_netx_tests() / "gts" / "pilotnet_sdnn"
    out = tmp_path / "b"
    assert main(["convert", str(root / "network.net"), "--out", str(out), "--steps", "9"]) == 0
    assert main(["export", str(out / "model.spk.h5"), "--netx", str(tmp_path / "back.net")]) == 0
    original, exported = _datasets(root / "network.net"), _datasets(tmp_path / "back.net")
    for key, value in original.items():
        if (
            key.endswith(("/weight", "/bias", "/type", "/activation"))
            or key.endswith("vThMant")
            and key != "layer/9/neuron/vThMant"
        ):
            assert np.array_equal(np.ravel(value), np.ravel(exported[key])), key
    assert exported["layer/9/neuron/sigma_output"]
    x = netx_inputs.from_netx_layout(np.load(root / "input.npy").repeat(9, axis=-1))
    before = run_lavadl_netx(root / "network.net", x)
    after = run_lavadl_netx(tmp_path / "back.net", x)
    assert len(before) == len(after) == 9
    for a, b in zip(before, after, strict=True):
        assert np.array_equal(a, b)
    assert np.abs(before[-1]).sum() > 0
