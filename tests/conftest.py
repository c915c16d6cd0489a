"""Shared fixtures: small spiking models and their quantized graphs, built in-process (no training)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ATTENTIONS = ("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn")


def pytest_configure(config):
    # the report cache (spikeport.gather.cache) of a test session: in a folder of its own, never the user's
    if "SPIKEPORT_CACHE" not in os.environ:
        os.environ["SPIKEPORT_CACHE"] = config._spikeport_cache = tempfile.mkdtemp(prefix="spikeport-test-cache-")
    # pytest-xdist runs one worker per core: torch's own thread pool per worker would oversubscribe them
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


def pytest_unconfigure(config):
    made = getattr(config, "_spikeport_cache", None)  # the process that made the session's report cache removes it
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop("SPIKEPORT_CACHE", None)


@pytest.fixture(autouse=True)
def _under_load(request):
    """Tests marked ``under_load`` (signals, Lava teardown) run beside busy processes, with SIGINT inherited as
    ignored (tests/procs.busy_cores): their time bounds must be bounds on a hang, not on speed."""
    if request.node.get_closest_marker("under_load") is None:
        yield
        return
    from procs import busy_cores

    with busy_cores():
        yield


@pytest.fixture
def short_tmp():
    """An empty folder with a short path (removed after the test), for a run whose TMPDIR it is: Lava's
    shared-memory manager listens on a socket in TMPDIR, and a path under pytest-xdist's tmp_path can be too long
    for one (107 bytes on Linux; spikeport refuses such a TMPDIR by name)."""
    folder = Path(tempfile.mkdtemp(prefix="sp-", dir="/tmp" if os.path.isdir("/tmp") else None))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """pytest-xdist's workers carry COLUMNS=80, which the CLI reads as a terminal's width (it wraps prose and
    narrows tables there); a plain pytest run has none. Tests that want a width set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)


def spiky_model(
    attention: str = "ssa",
    seed: int = 0,
    backend: str = "spikingjelly",
    preset: str = "digits-tiny",
    calib=None,
    **overrides,
):
    """digits-tiny (or another ``preset``) whose every layer fires (~25 %) and whose argmax depends on the input.

    Untrained weights go silent after a few layers, which would make any parity check trivial. So one
    train-mode forward pass on random images sets every BatchNorm's statistics (momentum 1: the pass
    standardises each layer's input for the next), gains/biases are drawn so that LIFs fire, the
    dendritic readout is boosted so that lrf_dyn's attention neuron fires, and the head is centred on
    the mean feature so that different images win different classes. ``calib``: the images of that pass
    (default: 64 random ones)."""
    import torch

    from spikeport.train.attention import Dendrites
    from spikeport.train.models import build_model
    from spikeport.train.neurons import reset_net
    from spikeport.train.presets import preset_config

    torch.manual_seed(seed)
    model = build_model(preset_config(preset, attention=attention, neuron_backend="torch", **overrides))
    cfg, gen = model.cfg, torch.Generator().manual_seed(seed)
    bns = [m for m in model.modules() if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d))]
    for bn in bns:
        bn.momentum = 1.0
        bn.weight.data = torch.rand(bn.weight.shape, generator=gen) * 0.5 + 0.75
        bn.bias.data = torch.rand(bn.bias.shape, generator=gen) + 0.5
    for den in model.modules():
        if isinstance(den, Dendrites):
            den.readout.data *= 16
    torch.nn.init.normal_(model.head.weight, std=0.5, generator=gen)
    if calib is None:
        calib = random_images(64, seed=seed + 100, shape=(cfg.in_channels, cfg.img_size, cfg.img_size))
    with torch.no_grad():
        model.train()(calib)
        model.eval()
        reset_net(model)
        feats = model.forward_features(calib).mean(2).mean(0)
        model.head.bias.data = -model.head.weight @ feats.mean(0)
    for bn in bns:
        bn.momentum = 0.1
    reset_net(model)
    if backend != "torch":  # same weights, other neuron implementation (identical spikes)
        twin = build_model(preset_config(preset, attention=attention, neuron_backend=backend, **overrides))
        twin.load_state_dict(model.state_dict())
        model = twin.eval()
    return model


def random_images(n: int = 8, seed: int = 0, shape=(1, 8, 8)):
    import torch

    return torch.rand((n, *shape), generator=torch.Generator().manual_seed(seed)) * 2


def quantized_graph(model, calib=None):
    from spikeport.convert.api import build_graph

    return build_graph(model, calib)


@pytest.fixture(scope="session", params=ATTENTIONS)
def variant_graph(request):
    """(attention, model, quantized graph) for every attention variant."""
    model = spiky_model(request.param)
    return request.param, model, quantized_graph(model, random_images(16, seed=1))


def reseal(path) -> None:
    """Recompute an artifact's node digests and root digest after a test edited it in place, as someone who
    meant the edit would: the file is then intact and only the graph rules can refuse it."""
    import json

    import h5py
    import numpy as np

    from spikeport.ir.artifact import ROOT_ATTRS, file_digest, node_digest
    from spikeport.ir.graph import Node

    with h5py.File(path, "r+") as f:
        digests = []
        for i in range(sum(key.isdigit() for key in f["nodes"])):
            grp = f["nodes"][str(i)]
            attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(grp.attrs["attrs"]).items()}
            node = Node.__new__(Node)  # no __post_init__: the edit may have made the shape unusable
            node.name, node.op = str(grp.attrs["name"]), str(grp.attrs["op"])
            node.inputs = json.loads(grp.attrs["inputs"])
            node.attrs, node.params = attrs, {k: ds[()] for k, ds in grp.items()}
            node.shape = tuple(int(s) for s in np.asarray(grp.attrs["shape"]).ravel())
            grp.attrs["digest"] = node_digest(node)
            digests.append(grp.attrs["digest"])
        root = {k: f.attrs[k] for k in ROOT_ATTRS if k != "digest"}
        root = {k: v.item() if isinstance(v, np.generic) else v for k, v in root.items()}
        f.attrs["digest"] = file_digest(root, f["meta"].attrs["json"], digests)


class DemoReports:
    """The four run reports `make demo` writes (demo/reports/<attention>-<executor>.json), and their artifacts."""

    def __init__(self, folder):
        self.folder = folder
        self.runs = [folder / "reports" / f"{a}-{e}.json" for a in ("ssa", "lrf_dyn") for e in ("reference", "lava")]


@pytest.fixture(scope="session")
def demo_reports(tmp_path_factory):
    """What `make demo` writes, built through the API as the demo builds it, on untrained spiky digits-tiny models
    (no training): per attention, convert (calibration, the executors compared on 24 test images, the ONNX export
    beside the artifact), the conversion's reference run report, and Lava fixed_pt on 3 test images compared with
    the reference."""
    from spikeport import api

    folder = tmp_path_factory.mktemp("demo")
    for attention in ("ssa", "lrf_dyn"):
        conv = api.convert(
            spiky_model(attention), folder / "build" / attention, calibrate=64, eval_samples=24, dataset="digits"
        )
        conv.reference_run.to_json(folder / "reports" / f"{attention}-reference.json")
        lava = api.run(conv.artifact_path, "lava", compare="reference", samples=3)
        assert lava.identical, f"{attention}: Lava differs from the reference"
        lava.to_json(folder / "reports" / f"{attention}-lava.json")
    return DemoReports(folder)
