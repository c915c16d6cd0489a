"""The torch executor of the integer contract (runtime/sim/torch_reference.py): the numpy reference's integers in
every layer at every step, on the CPU here and on a CUDA GPU where one is present (marked ``gpu``)."""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pytest
import torch

from conftest import quantized_graph, random_images, spiky_model
from spikeport.errors import ConfigError
from spikeport.runtime.executor import GraphExecutor, to_channels_last
from spikeport.runtime.sim.fast_ops import FAST
from spikeport.runtime.sim.reference import ReferenceSimulator
from spikeport.runtime.sim.torch_counts import DeviceCounter
from spikeport.runtime.sim.torch_ops import CheckedTorchOps, TorchIntOps
from spikeport.runtime.sim.torch_reference import TorchReferenceSimulator

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)")


def host(value) -> np.ndarray:
    return value.cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


def assert_torch_walk_equals_numpy(graph, images: np.ndarray, device: str, ops_class=TorchIntOps) -> None:
    """Every node's value at every step equal to the numpy reference's (values, whatever the dtype holding them)."""
    seen: dict = {}

    def keep(key):
        def observe(t, name, value, extra):
            seen.setdefault(key, {})[t, name] = np.array(host(value), copy=True)

        return observe

    want = GraphExecutor(graph, FAST).run(images, keep("numpy"))
    ops = ops_class(device)
    with torch.no_grad():
        got = GraphExecutor(graph, ops).run(torch.as_tensor(images, device=device), keep("torch"))
    assert seen["numpy"].keys() == seen["torch"].keys()
    for key, value in seen["numpy"].items():
        assert np.array_equal(seen["torch"][key], value), f"{device} {key}"
    assert np.array_equal(host(got), want)
    if isinstance(ops, CheckedTorchOps):
        assert not bool(ops.broken), "a bound of the narrowed arithmetic broke on these inputs"


def assert_reports_equal(ours, theirs) -> None:
    ours, theirs = ours.to_dict(), theirs.to_dict()
    for report in (ours, theirs):
        report.pop("wall_time_s"), report.pop("executor")
    for a, b in zip(ours.pop("layers"), theirs.pop("layers"), strict=True):
        assert a == b, f"layer {a['name']}: " + ", ".join(f"{k} {a[k]} != {b[k]}" for k in a if a[k] != b[k])
    assert ours == theirs


@pytest.mark.parametrize("ops_class", [TorchIntOps, CheckedTorchOps])
def test_torch_executor_on_cpu_equals_the_numpy_reference_in_every_layer(variant_graph, ops_class):
    _, _, graph = variant_graph
    assert_torch_walk_equals_numpy(graph, to_channels_last(random_images(12, seed=7).numpy()), "cpu", ops_class)


def test_torch_reference_report_equals_the_numpy_report(variant_graph):
    """Every count of every layer at every step, counted on the device (each kernel's count on TorchCounts)."""
    attention, _, graph = variant_graph
    images = to_channels_last(random_images(20, seed=2).numpy())
    sim = TorchReferenceSimulator(graph, "cpu")
    ours = sim.run(images, batch_size=8)
    theirs = ReferenceSimulator(graph).run(images, batch_size=8)
    assert ours.executor == "reference-torch-cpu" and theirs.executor == "reference"
    assert sim.reruns == 0 and ours.totals["spikes"] > 0 and ours.totals["synops"] > 0
    assert_reports_equal(ours, theirs)


def test_counts_of_attention_split_over_several_chains():
    """d_h = 32 at 64 tokens: the chip-native SSA splits its heads over chains with relays (their own counts)."""
    from spikeport.ir.kernels.attention import head_chains

    graph = quantized_graph(spiky_model("ssa", embed_dim=128, num_heads=4), random_images(16, seed=1))
    assert len(head_chains(graph.by_op("attention")[0])) > 1
    images = to_channels_last(random_images(10, seed=2).numpy())
    assert_reports_equal(
        TorchReferenceSimulator(graph, "cpu").run(images, batch_size=5), ReferenceSimulator(graph).run(images)
    )


def test_a_batch_that_breaks_a_bound_runs_again_exactly(monkeypatch):
    """Where the narrowed arithmetic's bound fails on the device, the batch's logits and counts come from the
    float64 walk: the report still equals the numpy one."""
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    images = to_channels_last(random_images(12, seed=2).numpy())
    monkeypatch.setattr(CheckedTorchOps, "_check", lambda self, outside: self.broken.fill_(True))
    sim = TorchReferenceSimulator(graph, "cpu")
    ours = sim.run(images, batch_size=5)
    assert sim.reruns == 3
    assert_reports_equal(ours, ReferenceSimulator(graph).run(images, batch_size=5))


@contextlib.contextmanager
def no_host_round_trips():
    """Any read of a tensor's value on the host, or a copy of host data to a tensor, raises: what a CUDA graph
    capture refuses (and what would sync a GPU once per node)."""

    def refuse(name):
        def raise_(*args, **kwargs):
            raise AssertionError(f"a host round trip in the walk: {name}")

        return raise_

    saved = [(torch.Tensor, n) for n in ("item", "tolist", "numpy", "cpu", "__bool__", "__int__", "__float__")]
    saved += [(torch, n) for n in ("tensor", "as_tensor", "from_numpy")]
    originals = [getattr(owner, name) for owner, name in saved]
    for owner, name in saved:
        setattr(owner, name, refuse(name))
    try:
        yield
    finally:
        for (owner, name), original in zip(saved, originals, strict=True):
            setattr(owner, name, original)


def test_the_walk_with_its_counts_never_reads_back_to_the_host(variant_graph):
    """What lets a GPU capture the walk as a CUDA graph and sync once per batch: after the first walk (which copies
    the parameters and the count tables), no step or kernel count (on TorchCounts) reads a value on the host."""
    _, _, graph = variant_graph
    sim = TorchReferenceSimulator(graph, "cpu")
    counts = DeviceCounter(graph, sim.device)
    images = torch.as_tensor(to_channels_last(random_images(6, seed=3).numpy()))
    with torch.no_grad():
        sim._walk(sim.fast, images, counts)
        with no_host_round_trips():
            sim._walk(sim.fast, images, counts)


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
@pytest.mark.parametrize("ops_class", [TorchIntOps, CheckedTorchOps])
def test_cuda_executor_is_bit_exact_in_every_layer(variant_graph, ops_class):
    _, _, graph = variant_graph
    assert_torch_walk_equals_numpy(graph, to_channels_last(random_images(32, seed=7).numpy()), "cuda", ops_class)


@pytest.mark.gpu
@CUDA
def test_cuda_report_with_captured_walks_equals_the_numpy_report(variant_graph):
    """Three batches of one shape (eager, captured, replayed) and a smaller last one: every count equal."""
    _, _, graph = variant_graph
    images = to_channels_last(random_images(28, seed=2).numpy())
    sim = TorchReferenceSimulator(graph, "cuda")
    ours = sim.run(images, batch_size=8)
    assert sim.capture_error is None and sim.reruns == 0
    assert_reports_equal(ours, ReferenceSimulator(graph).run(images, batch_size=8))


@pytest.mark.gpu
@CUDA
def test_cuda_executor_on_spikformer_4_384_cifar_shape():
    """spikformer-4-384 at CIFAR-10 shape, every layer firing: the CUDA report (batch 64, captured walks) equals the
    numpy reference's on the same images, counts included. (The speed is benchmarks/bench_executor_ratios.py's.)"""
    shape = (3, 32, 32)
    graph = quantized_graph(spiky_model("ssa", preset="spikformer-4-384"), random_images(16, seed=1, shape=shape))
    images = to_channels_last(random_images(192, seed=3, shape=shape).numpy())
    sim = TorchReferenceSimulator(graph, "cuda")
    start = time.perf_counter()
    cuda = sim.run(images, batch_size=64)
    print(
        f"reference-torch-cuda, spikformer-4-384 CIFAR shape, batch 64: {192 / (time.perf_counter() - start):.0f} "
        f"samples/s incl. warm-up and capture ({torch.cuda.get_device_name()})"
    )
    assert sim.capture_error is None and sim.reruns == 0 and cuda.totals["spikes"] > 0
    assert_reports_equal(cuda, ReferenceSimulator(graph).run(images, batch_size=64))
