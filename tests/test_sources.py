"""The files a run takes are Source records (runtime/sources.py), declared like the targets: each kind names the
options it takes, every refusal derives from the declarations, the file is sniffed once, and the netx input drive and
the hardware plan's drive are two options with their own types."""

from __future__ import annotations

import collections
import warnings

import h5py
import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport import api
from spikeport.errors import ConfigError
from spikeport.ir import artifact
from spikeport.netx.drive import InputDrive
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.sources import (
    ARTIFACT,
    KINDS,
    NETX,
    NETX_ARTIFACT,
    NIR_ARTIFACT,
    OPTIONS,
    Source,
    SourceOptions,
)
from spikeport.runtime.targets import RunOptions
from test_fuzz import netx_file, netx_spike_inputs

# one value per option, set: what a user would give
SET = {
    "dataset": (SourceOptions(dataset="cifar10"), RunOptions()),
    "data_dir": (SourceOptions(data_dir="data"), RunOptions()),
    "input_shape": (SourceOptions(input_shape=(8, 8, 1)), RunOptions()),
    "input_drive": (SourceOptions(input_drive=InputDrive.BIAS), RunOptions()),
    "steps": (SourceOptions(steps=4), RunOptions()),
    "input_layout": (SourceOptions(input_layout="netx"), RunOptions()),
    "num_layers": (SourceOptions(num_layers=2), RunOptions()),
    "device": (SourceOptions(), RunOptions(device="cuda")),
    "partition": (SourceOptions(), RunOptions(parts=2)),
    "chip_drive": (SourceOptions(), RunOptions(drive=ChipDrive.ADAPTER)),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{kind name: path}: an artifact of each origin and a netx file, with the netx file's spike inputs."""
    root = tmp_path_factory.mktemp("sources")
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    made = {"artifact": artifact.write(graph, root / "m.spk.h5")}
    graph.meta["source"] = "nir"  # what the NIR import writes; the kind reads no more of it
    made["nir-artifact"] = artifact.write(graph, root / "nir.spk.h5")
    made["netx"] = netx_file(root / "flat.net", conv=False)
    made["netx-artifact"] = api.convert_netx(made["netx"], root / "netx_build").artifact_path
    made["inputs"] = netx_spike_inputs(root / "x.npy", (16,))
    return made


def test_a_file_is_sniffed_into_its_kind(files):
    kinds = {name: Source.open(files[name]).kind for name in ("artifact", "nir-artifact", "netx", "netx-artifact")}
    assert kinds == {"artifact": ARTIFACT, "nir-artifact": NIR_ARTIFACT, "netx": NETX, "netx-artifact": NETX_ARTIFACT}
    assert {k.name for k in KINDS} == set(kinds)
    with pytest.raises(ConfigError, match="run reads an artifact .* or a lava-dl netx file; this is a NumPy array"):
        Source.open(files["inputs"])


def test_every_refusal_derives_from_the_declarations(files):
    """One rule refuses an option a kind of file does not take: one line naming the file, what it is, the option
    and its flag, and every kind that takes it; the options a kind takes pass."""
    assert {o.name for o in OPTIONS} == set(SET)
    for option in OPTIONS:
        takers = [k for k in KINDS if option.name in k.takes]
        assert takers and len(takers) < len(KINDS), option.name  # an option every kind took would be no option
        for kind in KINDS:
            asked, run_options = SET[option.name]
            if kind in takers:
                kind.refuse("f", asked, run_options)
                continue
            with pytest.raises(ConfigError) as err:
                kind.refuse("f", asked, run_options)
            line = str(err.value)
            assert "\n" not in line and line.startswith(f"f is {kind.what}: ") and f"({option.flag})" in line, line
            assert f"applies to {' and '.join(k.plural for k in takers)} only; {kind.runs_on}" in line, line


def test_run_refuses_what_the_file_does_not_take(files):
    x = np.load(files["inputs"])
    with pytest.raises(ConfigError, match=r"is a lava-dl netx file: device = 'cuda' \(--device\) applies to"):
        api.run(files["netx"], device="cuda", inputs=x)  # before any GPU is looked for
    with pytest.raises(ConfigError, match=r"artifact converted from a netx file: num_layers = 1 \(--num-layers\)"):
        api.run(files["netx-artifact"], inputs=x, num_layers=1)
    with pytest.raises(ConfigError, match=r"converted from a NIR graph: dataset = 'digits' \(--dataset\) applies"):
        api.run(files["nir-artifact"], dataset="digits")
    with pytest.raises(ConfigError, match=r"converted from a NIR graph: dataset = 'digits'"):
        api.test_images(files["nir-artifact"], dataset="digits")
    with pytest.raises(ConfigError, match=r"checkpoint: input_shape = \[8, 8, 1\] \(--input-shape\)"):
        api.check_hw(files["artifact"], input_shape=(8, 8, 1))


def test_input_drive_and_chip_drive_are_separate(files):
    """``input_drive`` feeds a netx network (InputDrive); ``chip_drive`` the hardware plan (ChipDrive). A chip drive
    given as ``input_drive`` for an artifact, its name before chip_drive, still works, with a DeprecationWarning;
    the command line's one --input-drive flag sets the one the file's kind takes, with no warning."""
    assert ARTIFACT.drive_option("adapter") == ARTIFACT.drive_option("bias") == "chip_drive"
    assert ARTIFACT.drive_option("spikes") == NETX.drive_option("bias") == "input_drive"
    with pytest.raises(ConfigError, match=r"chip_drive = 'adapter' \(--input-drive\) applies to artifacts of a"):
        api.run(files["netx"], "loihi2", inputs=np.load(files["inputs"]), chip_drive="adapter")
    refused = r"drive = 'bias' \(--input-drive bias\) applies to the loihi2 target only"
    with pytest.warns(DeprecationWarning, match="use chip_drive"), pytest.raises(ConfigError, match=refused):
        api.run(files["artifact"], "lava", input_drive="bias")
    with pytest.raises(ConfigError, match=refused):
        api.run(files["artifact"], "lava", chip_drive=ChipDrive.BIAS)
    with pytest.raises(ConfigError, match="give chip_drive only"):
        api.run(files["artifact"], "loihi2", input_drive="bias", chip_drive="adapter")
    from spikeport.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert main(["run", str(files["artifact"]), "--backend", "lava", "--input-drive", "bias"]) == 2


@pytest.mark.parametrize(("name", "opens"), [("artifact", 2), ("netx", 3), ("netx-artifact", 2)])
def test_run_opens_the_file_once_to_sniff_and_once_to_read(files, monkeypatch, name, opens):
    """Following the path ``api.run`` is given: one look to tell its kind (file_kinds) and one read (the artifact's
    graph; a netx file's declarations, then its layers for the inputs). Before the Source records: 4, 9 and 11."""
    path, seen = files[name], collections.Counter()

    class Counting(h5py.File):
        def __init__(self, name, *args, **kwargs):
            seen[str(name)] += 1
            super().__init__(name, *args, **kwargs)

    monkeypatch.setattr(h5py, "File", Counting)
    kwargs = {"samples": 2} if name == "artifact" else {"inputs": files["inputs"]}
    report = api.run(path, **kwargs)
    assert report.samples in (2, 4) and seen[str(path)] == opens, dict(seen)
