"""The torch executor of the integer contract (runtime/sim/torch_reference.py): the numpy reference's integers in
every layer at every step, on the CPU here and on a CUDA GPU where one is present (marked ``gpu``)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from conftest import quantized_graph, random_images, spiky_model
from spikeport.errors import ConfigError
from spikeport.runtime.sim.executor import GraphExecutor, to_channels_last
from spikeport.runtime.sim.fast_ops import FAST
from spikeport.runtime.sim.reference import ReferenceSimulator
from spikeport.runtime.sim.torch_reference import TorchIntOps, TorchReferenceSimulator

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)")


def host(value) -> np.ndarray:
    return value.cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


def assert_torch_walk_equals_numpy(graph, images: np.ndarray, device: str) -> None:
    seen: dict = {}

    def keep(key):
        def observe(t, name, value, extra):
            seen.setdefault(key, {})[t, name] = np.array(host(value), copy=True)

        return observe

    want = GraphExecutor(graph, FAST).run(images, keep("numpy"))
    with torch.no_grad():
        got = GraphExecutor(graph, TorchIntOps(device)).run(torch.as_tensor(images, device=device), keep("torch"))
    assert seen["numpy"].keys() == seen["torch"].keys()
    for key, value in seen["numpy"].items():
        assert np.array_equal(seen["torch"][key], value), f"{device} {key}"
    assert np.array_equal(host(got), want)


def test_torch_executor_on_cpu_equals_the_numpy_reference_in_every_layer(variant_graph):
    _, _, graph = variant_graph
    assert_torch_walk_equals_numpy(graph, to_channels_last(random_images(12, seed=7).numpy()), "cpu")


def test_torch_reference_report_equals_the_numpy_report():
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    images = to_channels_last(random_images(20, seed=2).numpy())
    ours = TorchReferenceSimulator(graph, "cpu").run(images, batch_size=8).to_dict()
    theirs = ReferenceSimulator(graph).run(images, batch_size=8).to_dict()
    assert ours["executor"] == "reference-torch-cpu" and theirs["executor"] == "reference"
    for report in (ours, theirs):
        report.pop("wall_time_s"), report.pop("executor")
    assert ours == theirs


def test_device_is_checked_before_anything_runs(tmp_path):
    from spikeport import api

    missing = tmp_path / "none.spk.h5"
    with pytest.raises(ConfigError, match="applies to the reference-torch target only"):
        api.run(missing, "lava", device="cuda")
    with pytest.raises(ConfigError, match="not a torch device"):
        api.run(missing, device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="torch sees no CUDA GPU"):
            api.run(missing, device="cuda")


@pytest.mark.gpu
@CUDA
def test_cuda_executor_is_bit_exact_in_every_layer(variant_graph):
    _, _, graph = variant_graph
    assert_torch_walk_equals_numpy(graph, to_channels_last(random_images(32, seed=7).numpy()), "cuda")


@pytest.mark.gpu
@CUDA
def test_cuda_executor_on_spikformer_4_384_cifar_shape():
    """The issue's figure: samples/s at batch 256 on spikformer-4-384 at CIFAR-10 shape, every layer firing;
    the CUDA report equals the numpy reference's on the same images."""
    shape = (3, 32, 32)
    graph = quantized_graph(spiky_model("ssa", preset="spikformer-4-384"), random_images(16, seed=1, shape=shape))
    images = to_channels_last(random_images(512, seed=3, shape=shape).numpy())
    sim = TorchReferenceSimulator(graph, "cuda")
    sim.run(images[:256], batch_size=256)  # warm-up: CUDA context, kernels
    start = time.perf_counter()
    cuda = sim.run(images, batch_size=256).to_dict()
    print(
        f"reference-torch-cuda, spikformer-4-384 CIFAR shape, batch 256: {512 / (time.perf_counter() - start):.0f} "
        f"samples/s ({torch.cuda.get_device_name()})"
    )
    numpy_report = ReferenceSimulator(graph).run(images[:64]).to_dict()
    assert cuda["predictions"][:64] == numpy_report["predictions"]
    assert cuda["totals"]["spikes"] > 0
