"""NeuroBench's metrics beside spikeport's counts: the ``neurobench`` package (the field's shared benchmark harness,
Yik et al., Nature Communications 2025) computes its static and workload metrics on an artifact's float model, and
spikeport's reference executor counts the integer artifact, on the same test images.

NeuroBench runs on the torch model; it hooks the activation modules it is told of (their outputs, and a spiking
neuron's membrane ``mem`` before and after each call) and every ``nn.Linear`` / ``nn.Conv*`` (its inputs). A
Spikformer's LIF groups run all T steps in one call, and keep ``v``, not ``mem``; so the float model's LIF groups are
each replaced by ``StepwiseLIF``: the same equations (``H = V + (X - V) / tau``, spike on ``H >= v_th``, hard reset to
0) called one step at a time through ``StepLIF``, an ``snntorch.SpikingNeuron`` whose ``mem`` NeuroBench reads. The
stepwise model's logits are checked equal to the original's before any figure is taken.

The rows and why they differ (NeuroBench on fp32 float weights, spikeport on the 8-bit integer artifact):

* **footprint**: parameters + buffers in fp32 (BN included) vs the artifact's weights at Loihi precision (8 bits, BN
  folded into them): about a quarter.
* **connection sparsity**: zero weights of Linear / Conv layers vs zero weight mantissas of the artifact's dense /
  conv / readout nodes: quantizing to 8 bits rounds the smallest weights to 0.
* **activation sparsity**: zero outputs of every LIF step vs 1 - the LIF firing rate of the reference: the same
  quantity; the integer spikes differ where quantization moves a membrane across its threshold.
* **synaptic operations**: NeuroBench's effective ACs (binary input x non-zero weight, Linear / Conv layers) vs
  spikeport's synops of the dense and conv layers (spikes x fan-out: zero weights counted); NeuroBench's effective
  MACs (non-binary inputs: the stem's pixels, the head) vs spikeport's MACs of those layers. spikeport's totals also
  count the attention's products (SSA's Q K^T V, LRF-Dyn's dendrites), which run outside any nn.Linear / Conv and
  which NeuroBench does not see.
* **membrane updates**: membranes that changed in a step vs every neuron every step (spikeport's neuron updates, as
  its energy estimate prices them: an upper bound).
* **accuracy**: the float model vs the integer reference on the same images.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.metadata
import io
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport.errors import BackendUnavailableError, BenchmarkError, ConfigError
from spikeport.ir import artifact as artifact_io, kernels
from spikeport.ir.kernels.base import KernelRole
from spikeport.run_report import RunReport
from spikeport.runtime.executor import to_channels_last
from spikeport.runtime.targets import TARGETS, RunInputs

if TYPE_CHECKING:
    import torch
    from torch import nn

SCHEMA = "spikeport.neurobench"
SCHEMA_VERSION = 1
INSTALL = (
    "pip install --no-deps neurobench==2.3.0 (it imports torch, numpy, tqdm and snntorch: requirements-nodeps.txt)"
)


@dataclass
class Row:
    """One metric: NeuroBench's figure on the float model, spikeport's nearest on the integer artifact, their ratio
    and why they differ."""

    metric: str  # NeuroBench's name
    unit: str
    neurobench: float | None
    spikeport: float | None
    spikeport_figure: str  # what spikeport's figure is
    why: str

    @property
    def ratio(self) -> float | None:
        """spikeport / NeuroBench (None where either is missing or NeuroBench's is 0)."""
        if self.neurobench in (None, 0) or self.spikeport is None:
            return None
        return self.spikeport / self.neurobench

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


@dataclass
class NeuroBenchComparison:
    """NeuroBench's metrics on an artifact's float model beside spikeport's counts of the artifact, per inference."""

    artifact: str
    checkpoint: str
    samples: int
    neurobench_version: str
    results: dict[str, Any]  # NeuroBench's own results, as its Benchmark and static metrics return them
    rows: list[Row]
    float_logits_equal: bool  # the stepwise model NeuroBench hooks gives the float model's logits
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            **{k: v for k, v in asdict(self).items() if k != "rows"},
            "rows": [r.to_dict() for r in self.rows],
        }


@functools.cache
def step_lif_class() -> type:
    """``StepLIF``: one LIF time step as an ``snntorch.SpikingNeuron`` (NeuroBench reads its ``mem`` before and after
    each call and counts its outputs); made on first use, so that importing this module imports neither."""
    import snntorch
    import torch

    class StepLIF(snntorch.SpikingNeuron):
        def __init__(self, tau: float, v_threshold: float) -> None:
            super().__init__(threshold=v_threshold, init_hidden=True, output=False, reset_mechanism="zero")
            self.tau, self.v_threshold = tau, v_threshold
            self.mem = torch.zeros(())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.mem + (x - self.mem) / self.tau  # spikeport.train.neurons: decay_input, v_reset 0
            s = (h >= self.v_threshold).to(h.dtype)
            self.mem = h * (1.0 - s)  # a new tensor every step: NeuroBench keeps the one it read
            return s

    return StepLIF


def stepwise(model: nn.Module) -> nn.Module:
    """A copy of ``model`` whose multi-step LIF groups run one step at a time through ``StepLIF`` (q, k, v projected
    one by one: NeuroBench hooks each Linear)."""
    import torch
    from torch import nn

    from spikeport.train.models import set_fused_qkv
    from spikeport.train.neurons import is_lif, lif_params

    step_lif = step_lif_class()

    class StepwiseLIF(nn.Module):
        def __init__(self, tau: float, v_threshold: float) -> None:
            super().__init__()
            self.step = step_lif(tau, v_threshold)

        def forward(self, x_seq: torch.Tensor) -> torch.Tensor:
            self.step.mem = torch.zeros_like(x_seq[0])
            return torch.stack([self.step(x) for x in x_seq])

    out = copy.deepcopy(model).eval()
    set_fused_qkv(out, False)  # q, k, v through their own Linear and LIF modules, which NeuroBench hooks
    for name, module in list(out.named_modules()):
        if is_lif(module):
            parent_name, _, child = name.rpartition(".")
            tau, v_threshold = lif_params(module)
            setattr(out.get_submodule(parent_name) if parent_name else out, child, StepwiseLIF(tau, v_threshold))
    return out


def compare(
    artifact: str | os.PathLike[str],
    checkpoint: str | os.PathLike[str] | None = None,
    samples: int = 64,
    batch_size: int = 16,
    say: Callable[[str], None] = lambda line: None,
) -> NeuroBenchComparison:
    """NeuroBench's footprint, connection sparsity, activation sparsity, synaptic operations, membrane updates and
    accuracy on the float model of ``artifact`` (its ``checkpoint``: the one it was converted from unless given),
    beside the reference executor's counts of the artifact, on the first ``samples`` test images."""
    try:
        import neurobench  # noqa: F401  # what is missing is said here, before any work
    except ImportError as err:
        raise BackendUnavailableError(f"NeuroBench is not installed ({err}): {INSTALL}") from None
    import torch

    from spikeport.train.checkpoint import load_model
    from spikeport.train.data import split_tensors
    from spikeport.train.neurons import reset_net

    if samples < 1 or batch_size < 1:
        raise ConfigError(f"samples = {samples}, batch_size = {batch_size}: expected positive integers")
    graph = artifact_io.read(artifact)
    source = checkpoint or graph.meta.get("checkpoint")
    if not source:
        raise ConfigError(
            f"{artifact}: names no checkpoint it was converted from (a netx or NIR artifact has no torch float "
            "model); give the float model's checkpoint with --checkpoint CKPT"
        )
    say(f"loading the float model {source}")
    model, _ = load_model(source)
    model.eval()
    size = (graph.meta.get("model_config") or {}).get("img_size")
    x, y = split_tensors(graph.meta.get("dataset", "digits"), graph.meta.get("data_dir"), "test", samples, size)
    say(f"spikeport: the reference executor on {len(x)} test images")
    run = TARGETS["reference"].run(graph, RunInputs(to_channels_last(x.numpy()), y.numpy()))
    nets = (model, stepwise(model))
    with torch.no_grad():
        logits = []
        for net in nets:
            reset_net(net)
            logits.append(net(x))
            reset_net(net)
    equal = bool(torch.equal(logits[0], logits[1]))
    if not torch.equal(logits[0].argmax(-1), logits[1].argmax(-1)):
        raise ConfigError(f"{source}: the stepwise model NeuroBench hooks predicts otherwise than the float model")
    say(f"NeuroBench {version()}: static metrics, then the workload metrics on {len(x)} images")
    results = neurobench_results(*nets, x, y, batch_size)
    notes = [
        "NeuroBench ran on a copy of the float model whose LIF groups step one time step at a time (StepLIF, the same "
        "equations): its logits "
        + ("equal the float model's bit for bit" if equal else "match the float model's predictions"),
        "NeuroBench counts per sample over all T time steps, as spikeport counts per inference",
    ]
    return NeuroBenchComparison(
        str(artifact), str(source), len(x), version(), results, rows(results, run, graph), equal, notes
    )


def version() -> str:
    return importlib.metadata.version("neurobench")


def neurobench_results(
    model: nn.Module, steps: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int
) -> dict[str, Any]:
    """NeuroBench's static metrics of the float model and its workload metrics of the stepwise one on ``x``."""
    from neurobench.benchmarks import Benchmark
    from neurobench.metrics.static import ConnectionSparsity, Footprint, ParameterCount
    from neurobench.metrics.workload import (
        ActivationSparsity,
        ClassificationAccuracy,
        MembraneUpdates,
        SynapticOperations,
    )
    from neurobench.models import TorchModel
    from torch.utils.data import DataLoader, TensorDataset

    static = TorchModel(model)
    results: dict[str, Any] = {
        metric.__name__: metric()(static) for metric in (Footprint, ConnectionSparsity, ParameterCount)
    }
    hooked = TorchModel(steps)
    hooked.add_activation_module(step_lif_class())
    workload = [ClassificationAccuracy, ActivationSparsity, SynapticOperations, MembraneUpdates]
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size)
    bench = Benchmark(hooked, loader, [], [lambda logits: logits.argmax(-1)], [[], workload])
    said, bars = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(bars):  # its lines and bars, read below
        results.update(bench.run(quiet=False))
    failed = [line for line in said.getvalue().splitlines() if line.startswith("Error running")]
    if failed:  # NeuroBench prints a failing metric's error and reports 0.0 for it: never a silent 0
        raise BenchmarkError(f"NeuroBench {version()}: {failed[0]}")
    return {k: (float(v) if isinstance(v, (int, float)) else v) for k, v in results.items()}


def is_synapse(op: str) -> bool:
    """A layer of weights (dense, conv, readout): NeuroBench counts the operations of its nn.Linear / nn.Conv."""
    return kernels.role(op) is KernelRole.OTHER and any(p.name == "weight" for p in kernels.spec(op).params)


def rows(results: dict[str, Any], run: RunReport, graph: Any) -> list[Row]:
    """NeuroBench's figures beside spikeport's (per inference), each with why they differ."""
    S = run.samples

    def per(layers: list[Any], *counters: str) -> float:
        return sum(layer.total(c) for layer in layers for c in counters) / S

    # NeuroBench hooks the spiking neurons and the weighted layers: the rows whose kernel records say the same
    lif = [layer for layer in run.layers if kernels.role(layer.op) is KernelRole.NEURON and kernels.fires(layer.op)]
    neuron_steps = sum(layer.neurons * len(layer.spikes) for layer in lif)
    rate = per(lif, "spikes") / neuron_steps if neuron_steps else None
    synapses = [layer for layer in run.layers if is_synapse(layer.op)]
    binary = [layer for layer in synapses if layer.input_kind == "spikes"]
    valued = [layer for layer in synapses if layer.input_kind != "spikes"]
    weights = [np.asarray(graph.nodes[n].params["weight_mant"]) for n in graph.order
               if "weight_mant" in graph.nodes[n].params]  # fmt: skip
    zeros = sum(int(np.count_nonzero(w == 0)) for w in weights) / max(sum(w.size for w in weights), 1)
    ops = results.get("SynapticOperations") or {}
    nb_ops = None if not ops else float(ops.get("Effective_ACs", 0) + ops.get("Effective_MACs", 0))
    return [
        Row("Footprint", "bytes", results.get("Footprint"), float(sum(x.weight_bytes for x in run.layers)),
            "the artifact's weights at Loihi precision (run report weight_bytes)",
            "fp32 parameters and buffers (BN kept) vs 8-bit weights with BN folded in: about a quarter"),
        Row("ConnectionSparsity", "share of weights", results.get("ConnectionSparsity"), zeros,
            "zero weight mantissas of the dense, conv and readout nodes",
            "8-bit quantization rounds the smallest float weights to 0: higher on the artifact"),
        Row("ActivationSparsity", "share of LIF outputs", results.get("ActivationSparsity"),
            None if rate is None else 1 - rate, "1 - the LIF firing rate (reference executor)",
            "the same quantity; integer spikes differ where quantization moves a membrane across its threshold"),
        Row("SynapticOperations: Effective_ACs", "per inference", ops.get("Effective_ACs"), per(binary, "synops"),
            "synops of the dense and conv layers fed binary spikes (spikes x fan-out)",
            "the same rule on the same layers; NeuroBench skips zero weights, spikeport counts every synapse of a "
            "spike; float and integer spikes differ"),
        Row("SynapticOperations: Effective_MACs", "per inference", ops.get("Effective_MACs"),
            per(valued, "synops", "macs"),
            "synops and MACs of the layers fed non-binary values (residual sums 0..2, pixels, the head's sums)",
            "NeuroBench counts a multiply-accumulate per non-zero non-binary input and weight; spikeport counts an "
            "integer input as one synop (its value: valued synops) and the pixels' MACs once a sample (the same "
            "image every step), where NeuroBench counts the stem T times"),
        Row("SynapticOperations: all", "per inference", nb_ops, (run.totals or {}).get("synops", 0) / S
            + (run.totals or {}).get("macs", 0) / S, "synops + MACs of every node, the attention's included",
            "the attention's products (SSA's Q K^T V, LRF-Dyn's dendrites) run outside nn.Linear / Conv: NeuroBench "
            "does not see them, spikeport counts them"),
        Row("MembraneUpdates", "per inference", results.get("MembraneUpdates"), per(lif, "neuron_updates"),
            "neuron updates of the LIF layers: every neuron every time step (what the energy estimate prices)",
            "NeuroBench counts the membranes that changed in a step, spikeport every neuron every step (an upper "
            f"bound); spikeport's neuron updates of every node: {per(run.layers, 'neuron_updates'):,.0f}"),
        Row("ClassificationAccuracy", "share", results.get("ClassificationAccuracy"), run.accuracy,
            "the integer reference's accuracy", "float model vs the quantized integer model on the same images"),
    ]  # fmt: skip
