"""What a report is made from, typed: the records the gathering stage (``spikeport.gather``) fills and
``report.summary`` reads.

The gathering stage does everything that reads a file, runs a tool or times a network: it loads the run
reports and the hardware profiles, reads the conversion report's float accuracy, runs check-hw on the artifact
(``ChipFootprint``), times the float network in ONNX Runtime on this CPU (``CpuBaseline``), estimates it on a GPU
profile or measures it on CUDA (``GpuBaseline``), and breaks down its memory (``AnalyticMemory``, the torch
model's measured peak inside it, and the paper's state claim priced, ``StateClaim``). ``ReportInputs`` holds all
of it; ``report.summary.build_summary(inputs)`` makes the summary from it without measuring anything. Each
record's ``to_dict`` is its part of the report's JSON (schema ``spikeport.report`` v1, key for key the
figures the gathering modules used to pass as dicts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, ClassVar, TypeVar

from spikeport.hw_profiles import HwProfile
from spikeport.metrics.energy import CountingRule
from spikeport.report.format import Ratio
from spikeport.run_report import RunReport

# The two ways a GPU (and this CPU) serves the network, each a batch: one inference as soon as it arrives, and
# energy per inference of a GPU serving many.
MODES: dict[str, int] = {"latency": 1, "throughput": 256}


def mode_of(batch: int | None) -> str:
    """The mode a baseline's batch stands for: batch 1 is latency mode, any other batch throughput mode."""
    return "latency" if batch == 1 else "throughput"


def plain(value: Any) -> Any:
    """The JSON value of a record, a Ratio, or a list / dict holding them."""
    if isinstance(value, Ratio):
        return value.value
    if hasattr(value, "to_dict") and not isinstance(value, type):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def plain_fields(record: Any) -> dict[str, Any]:
    """A record's fields as JSON values, in field order."""
    return {f.name: plain(getattr(record, f.name)) for f in fields(record)}


@dataclass
class ReportOptions:
    """What to put in a report besides the run reports' own numbers."""

    profiles: tuple[str | HwProfile, ...] = ("loihi2", "cmos45nm")  # names, .yaml paths or HwProfile
    gpus: tuple[str | HwProfile, ...] = ("h100",)  # GPU profiles for the estimated baseline (used only without CUDA)
    rule: CountingRule = field(default_factory=CountingRule)  # docs/counting.md
    gpu_baseline: bool = True  # the float network (and its ViT counterpart) on a GPU
    vit: bool = True  # include the ANN ViT of the same width/depth/heads/token grid
    gpu_bench: tuple[dict[str, Any], ...] = ()  # `spikeport bench gpu --json` results (e.g. measured on a CUDA box)
    cuda_energy_seconds: float = 5.0  # NVML energy run length when measuring here on CUDA
    measure_memory: bool = False  # also measure the torch float model's peak memory (ssa and lrf_dyn)
    # beside run report files (gather.stage.write_report): check-hw on the artifact, ONNX Runtime on this CPU
    chip: bool = True
    cpu_baseline: bool = True
    allow_missing: bool = False  # a run whose artifact is not found gets no chip footprint (a note), not an error
    # check-hw, ONNX Runtime timings, GPU estimates and the analytic memory kept across reports (gather.cache):
    # False: worked out again every time; cache_dir None: the default folder ($XDG_CACHE_HOME/spikeport/report)
    cache: bool = True
    cache_dir: str | None = None


# ---- per run: what the gathering stage finds beside a run report -----------------------------------------


@dataclass
class FloatAccuracy:
    """The float model's test accuracy, read from the conversion report beside the artifact."""

    accuracy: float
    samples: int

    @classmethod
    def of(cls, data: Mapping[str, Any] | None) -> FloatAccuracy | None:
        """``ir.artifact.float_accuracy``'s dict as a record (None: no conversion report says it)."""
        return None if not data else cls(float(data["accuracy"]), int(data["samples"]))

    def to_dict(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "samples": self.samples}


@dataclass
class ChipFootprint:
    """A converted network on a neuromorphic chip as check-hw counts it (``runtime/loihi2/check_hw.py``: the core
    model fitted to Lava's Loihi 2 compile tables), and the cores the compiler took where a run on Loihi 2 says.

    ``synapse_bytes`` is synaptic memory at the chip's weight precision: check-hw's per-neuron-group bytes
    (weight bits, plus delay bits where a group delays; a Conv's kernel once per core that holds it), summed."""

    profile: str
    artifact: str
    cores: int
    chips: int | None  # None: this check-hw places no chips (or the profile sets no cores per chip)
    neurons: int
    synapses: int
    stored_weights: int
    synapse_bytes: int
    weight_bits: int | None
    state_bytes_on_chip: int
    state_bytes_on_host: int
    host_computing: list[str]
    ok: bool
    verdict: str
    cores_high: int | None = None  # the high end of check-hw's range (extrapolated neuron models and formats)
    measured_cores: int | None = None  # what Lava's compiler took, where a run on Loihi 2 kept its table
    measured_from: str = ""
    # the chip state by what holds it (``STATE_PARTS``): why it is larger than the executor's LIF state
    state_parts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_check_hw(cls, check: dict[str, Any], artifact: str, weight_bits: int | None = None) -> ChipFootprint:
        """From ``check_hw(...).to_dict()``; fields a newer check-hw adds (chips, verdict) read where present."""
        t = check["totals"]
        chips = t.get("chips")
        cores = int(t["cores"])
        verdict = check.get("verdict") or (
            f"{'OK' if check.get('ok', True) else 'FAILS'}: ~{cores:,} cores"
            + (f" on {chips} chip{'s' if chips != 1 else ''}" if chips else "")
        )
        return cls(
            profile=str(check.get("profile", "loihi2")),
            artifact=artifact,
            cores=cores,
            chips=None if chips is None else int(chips),
            neurons=int(t.get("neurons_on_chip", 0)),
            synapses=int(t.get("synapses_on_chip", 0)),
            stored_weights=int(t.get("weights_stored_on_chip", 0)),
            synapse_bytes=int(sum(int(row.get("synapse_bytes", 0)) for row in check.get("layers", []))),
            weight_bits=weight_bits,
            state_bytes_on_chip=int(t.get("state_bytes_on_chip", 0)),
            state_bytes_on_host=int(t.get("state_bytes_on_host", 0)),
            host_computing=list(t.get("host_computing", [])),
            ok=bool(check.get("ok", True)),
            verdict=str(verdict),
            cores_high=int(t["cores_high"]) if isinstance(t.get("cores_high"), int) else None,
            state_parts=state_parts(check.get("processes", [])),
        )

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


# What holds check-hw's chip state, by a chip process's role and origin: the model's neurons (LIF u and v: the
# executor's LIF state), the synapses' input buffers, and the neurons a lowering adds (the attention's, relays)
STATE_PARTS = {
    "model neurons": "the model's neurons (LIF u and v)",
    "synapse buffers": "synapse input buffers",
    "lowering neurons": "neurons the lowering adds (attention, relays)",
    "other": "other",
}


def state_parts(processes: list[dict[str, Any]]) -> dict[str, int]:
    """check-hw's chip state summed by ``STATE_PARTS`` (the parts that hold none left out)."""
    out = dict.fromkeys(STATE_PARTS, 0)
    for p in processes:
        if p.get("placement") != "chip":
            continue
        role, origin = p.get("role"), p.get("origin")
        if role == "neuron" and origin == "model":
            part = "model neurons"
        elif role == "synapse":
            part = "synapse buffers"
        elif role in ("neuron", "relay"):
            part = "lowering neurons"
        else:
            part = "other"
        out[part] += int(p.get("state_bytes") or 0)
    return {k: v for k, v in out.items() if v}


B = TypeVar("B", bound="Baseline")


@dataclass
class Baseline:
    """The float network that ran (``network`` ``snn``), or its ANN ViT counterpart (``vit``), on one device at
    one batch: its figures as ``baselines.gpu.Baseline`` writes them (per call: ``latency_s``; per inference:
    ``energy_J``, ``flops``), where they came from (``source``) and the mode the batch stands for."""

    name: str  # the network, "SNN ssa T=4 (float, same network)"
    device: str  # "cpu", "cuda (NVIDIA H100 ...)", "h100 (profile)"
    kind: str  # measured | estimated
    label: str  # how the figures were obtained, "measured (...)" / "estimated (...)"
    batch: int
    executor: str | None = None  # torch | onnxruntime
    dtype: str | None = None  # fp32, ...
    latency_s: float | None = None  # one call at this batch
    throughput_per_s: float | None = None  # samples per second
    peak_memory_bytes: int | None = None
    energy_J: float | None = None  # per inference
    energy_dynamic_J: float | None = None  # per inference, idle subtracted
    energy_label: str | None = None
    flops: float | None = None  # per inference: 2 x the network's dense MACs
    params: int | None = None
    details: dict[str, Any] = field(default_factory=dict)  # the method's own figures (a roofline's bounds, ...)
    notes: list[str] = field(default_factory=list)
    network: str = "snn"  # snn | vit
    source: str = ""  # where it was obtained: measured here, estimated here, a bench file, an ONNX file
    mode: str = "latency"  # latency | throughput

    # the JSON's keys, in the order baselines.gpu.Baseline writes them
    FIGURES: ClassVar[tuple[str, ...]] = (
        "name",
        "executor",
        "device",
        "kind",
        "label",
        "batch",
        "dtype",
        "latency_s",
        "throughput_per_s",
        "peak_memory_bytes",
        "energy_J",
        "energy_dynamic_J",
        "energy_label",
        "flops",
        "params",
        "details",
        "notes",
    )
    TAGS: ClassVar[tuple[str, ...]] = ("network", "source", "mode")  # after the figures, in this order

    @classmethod
    def of(cls: type[B], figures: Mapping[str, Any], network: str, source: str) -> B:
        """A record of ``figures`` (``baselines.gpu.Baseline.to_dict()``, or a result of a `spikeport bench gpu`
        file: what it lacks is None), tagged; the mode is the batch's."""
        given = {k: figures[k] for k in cls.FIGURES if figures.get(k) is not None}
        return cls(**given, network=network, source=source, mode=mode_of(figures.get("batch")))

    @property
    def short_name(self) -> str:
        """The network without its parenthesis: 'SNN ssa T=4'."""
        return self.name.split(" (")[0]

    @property
    def device_name(self) -> str:
        """The device without ' (profile)': 'h100'."""
        return self.device.replace(" (profile)", "")

    @property
    def idle_floor_J(self) -> float | None:
        """An estimate's energy at idle power x time, its floor (``energy_J`` is the utilisation power model's,
        ``baselines.gpu``); None where the details give none (a measurement)."""
        floor = self.details.get("energy_idle_floor_J")
        return float(floor) if floor else None

    @property
    def tdp_bound_J(self) -> float | None:
        """An estimate's energy at TDP x time, its upper bound; None where the details give none (a measurement, or
        an estimate made before the power model, whose ``energy_J`` was TDP x time)."""
        bound = self.details.get("energy_tdp_J")
        return float(bound) if bound else None

    def to_dict(self) -> dict[str, Any]:
        return {k: plain(getattr(self, k)) for k in (*self.FIGURES, *self.TAGS)}


@dataclass
class GpuBaseline(Baseline):
    """A GPU baseline: estimated here from a GPU profile (a roofline over the network's op census; energy by the
    utilisation power model, between idle power x time and TDP x time), measured here on CUDA, or read from a
    `spikeport bench gpu` file."""


@dataclass
class CpuBaseline(Baseline):
    """The float network timed here, on this CPU, in ONNX Runtime (the check on a GPU estimate's time)."""

    TAGS: ClassVar[tuple[str, ...]] = ("network", "mode", "source")


@dataclass
class RunInput:
    """One run report and what the gathering stage found beside it (the summary reads no file itself)."""

    report: RunReport
    source: str
    float_accuracy: FloatAccuracy | None = None  # the conversion report's torch-float accuracy
    executor: str = ""  # the executor that counted, in words (its target's record, runtime.targets); "": unknown
    artifact_path: str | None = None  # where the artifact the run report names was found (gather.locate)
    artifact_note: str = ""  # how it was found where it is not as written, or why it was not found
    chip: ChipFootprint | None = None  # check-hw on the artifact that ran
    chip_note: str = ""  # why there is no chip footprint
    cpu: list[CpuBaseline] = field(default_factory=list)  # ONNX Runtime on this CPU
    gpu: list[GpuBaseline] = field(default_factory=list)  # the same network on a GPU (and its ViT counterpart)
    gpu_notes: list[str] = field(default_factory=list)  # why there is no GPU baseline, what was matched


# ---- across runs: memory -----------------------------------------------------------------------------------


@dataclass
class AttentionMemory:
    """The run's model with one attention variant: its memory as ``metrics.memory`` breaks it down (the JSON
    of a ``MemoryBreakdown``) and, when asked for, as measured on the torch float model."""

    attention: str
    analytic: dict[str, Any]  # fp32, ideal LIF
    analytic_impl: dict[str, Any]  # fp32, with the LIF implementation's scratch (``lif_impl``)
    analytic_loihi: dict[str, Any]  # Loihi precision
    lif_impl: str
    measured: dict[str, Any] | None = None  # baselines.torch_memory.MeasuredMemory's JSON

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class AnalyticMemory:
    """The analytic memory of the first run's model per attention variant (batch 1), and the summary rows of
    ``baselines.torch_memory.summarize`` (one per figure: bytes per attention, ratio to the first)."""

    label: str
    model: dict[str, Any]  # the ModelConfig broken down
    batch: int
    results: list[AttentionMemory]
    summary: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class StateClaim:
    """The paper's attention-state claim (SSA O(d^2), LRF-Dyn O(kd)) priced in bytes, next to what the chosen
    chip lowering holds and what the token-serial lowering (the one that holds the claim) would cost."""

    layers: int  # attention layers of the network
    ssa_entries: int  # K^T V, per layer: H x d_h x d_h
    ssa_bytes: int  # at the chip's K^T V precision
    dyn_entries: int  # X, per layer: k x d
    dyn_bytes: int  # at the chip's state precision
    ratio: Ratio  # dyn / ssa
    lowerings: dict[str, dict[str, Any]]  # name -> neurons, neuron_state_bytes, stored_weights, weight_bytes, cores
    chosen: str  # the lowering runtime/lava/lowerings/ builds
    serial: str  # the lowering that holds the claim
    profile: str
    statement: str  # the plain sentence

    def to_dict(self) -> dict[str, Any]:
        out = plain_fields(self)
        out["ratio_reason"] = self.ratio.reason
        return out


@dataclass
class MemoryInputs:
    """The memory the gathering stage worked out across runs: analytic (and measured), the claim priced."""

    analytic: AnalyticMemory | None = None  # None: no Spikformer model config among the runs
    claim: StateClaim | None = None  # None: no chip profile with the limits the lowering model needs
    notes: list[str] = field(default_factory=list)


@dataclass
class ReportInputs:
    """Everything a report is made from: the runs with what was found beside each, the profiles loaded, the
    memory worked out, and the options. ``report.summary.build_summary`` reads only this."""

    runs: list[RunInput]
    options: ReportOptions
    priced: list[HwProfile]  # the profiles that price op counts (neuromorphic, CMOS), loaded
    gpu_profiles: list[HwProfile]  # the GPU profiles of the estimated baselines
    memory: MemoryInputs = field(default_factory=MemoryInputs)
    attention_cores: dict[str, str] = field(default_factory=dict)  # a run's attention variant -> its core (ssa...)
    left_out: list[str] = field(default_factory=list)  # figures the gathering stage could not work out here, and why
