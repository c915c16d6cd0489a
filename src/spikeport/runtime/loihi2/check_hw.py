"""Hardware readiness: which Lava processes of a converted network can go on Loihi 2, how many cores they
need, and which limit of a hardware profile a layer breaks (DESIGN.md section 5).

The processes are the ones ``runtime.lava.backend.build_network`` really creates (the network is built, not
compiled or run: no OS process is started), so the plan cannot drift from the Lava backend.

- chip-mappable: a process type in the hardware profile's ``processes`` list (hw_profiles/loihi2.yaml: standard
  Lava processes with a Loihi 2 NeuroCore model, each with its evidence, 'verified' or 'likely', and source);
- host-only: spikeport's own processes (fixed_pt ProcessModels on the CPU), I/O, the readout.

Core estimate per neuron group (a neuron process with the chip synapses that feed it; Loihi keeps a neuron's
synapses in its own core): ``max(neurons / neurons_per_core, synapse bytes / synaptic_memory_per_core,
distinct inputs / fan_in_axons_per_core)``, rounded up. Sparse synapses are stored one by one (weight bits,
plus delay bits for DelaySparse); a Conv shares its kernel: with the neurons laid out channel by channel, a
core stores the kernel slices of the channels it holds, a slice once per core its channel spans
(docs/loihi2_sources.md section 1: Intel's compile logs show a conv layer's synapse memory scaling with the
kernel, not with the pixels). Limits checked per
layer: one neuron's fan-in against the axons and the synaptic memory of a core, weight mantissa bits, delay
bits, decay bits, and a layer wider than one chip. Fan-out routing and placement are the Loihi compiler's job
and are not estimated.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport.errors import HardwareLimitError
from spikeport.ir.graph import Graph
from spikeport.ir.ops import value_kind
from spikeport.runtime.lava.backend import build_network, leaves
from spikeport.runtime.lava.lowering import LOWERINGS, LavaNetwork
from spikeport.runtime.lava.state import process_state

if TYPE_CHECKING:
    from spikeport.hw_profiles import ChipProcess, HwProfile

HOST_ONLY = {
    "RingBuffer": "host I/O (lava.proc.io): on Loihi 2 the input needs a host-to-chip adapter "
    "(eio.spike.PyToNxAdapter) or an embedded-IO process",
    "AttentionCore": "spikeport process: integer Q(K^T V) per time step, fixed_pt model on the host CPU only; "
    "used for N > 64 tokens (the chip-native Conv of ones spans 2 N - 1 lags, Lava's Conv holds <= 127)",
    "SpikeRecorder": "spikeport probe: writes spikes to a file on the host",
}
# host processes that compute (not I/O): each puts a host round trip into every time step
COMPUTING_HOST = ("AttentionCore",)
SYNAPSES = ("Dense", "Sparse", "DelaySparse", "DelayDense", "Conv")
NEURONS = ("LIF", "LIFReset", "GradedVec", "SigmaDelta", "Delta", "Sigma", "ProdNeuron", "RF", "RF_IZ")


@dataclass
class ProcessInfo:
    name: str
    type: str
    layer: str  # the graph node it realises
    placement: str  # chip | host
    evidence: str  # why (model evidence, or why host-only)
    neurons: int = 0
    inputs: int = 0  # distinct presynaptic neurons (synapse processes)
    synapses: int = 0  # connections (a Conv's kernel applied at every output)
    stored_weights: int = 0  # weights the chip stores: one per Sparse synapse, a Conv's kernel (see evaluate)
    channels: int = 0  # a Conv's output channels (its kernel has one slice per channel)
    fan_in: int = 0  # largest number of synapses into one neuron
    weight_bits: int = 0  # mantissa bits the weights need (shared exponent)
    max_delay: int = 0
    feeds: list[str] = field(default_factory=list)
    payload_bits: int = 0  # bits of the graded values it reads (synapses on graded pixels), 0 for spikes
    state: list[dict[str, Any]] = field(default_factory=list)  # the Vars it keeps between steps
    state_bytes: int = 0


@dataclass
class Finding:
    layer: str
    rule: str
    value: float
    limit: float
    severity: str  # violation | warning
    message: str

    def error(self, profile: str) -> HardwareLimitError:
        return HardwareLimitError(self.layer, self.rule, self.value, self.limit, profile)


@dataclass
class HwCheck:
    profile: str
    processes: list[ProcessInfo]
    layers: list[dict[str, Any]]  # per neuron group: neurons, synapses, bytes, cores (and what drove them)
    findings: list[Finding]
    boundaries: list[dict[str, str]]  # host <-> chip connections (each needs an adapter on hardware)

    @property
    def violations(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "violation"]

    def raise_for_violations(self) -> None:
        if self.violations:
            raise self.violations[0].error(self.profile)

    def to_dict(self) -> dict[str, Any]:
        chip = [p for p in self.processes if p.placement == "chip"]
        return {
            "schema": "spikeport.check_hw",
            "schema_version": 1,
            "profile": self.profile,
            "ok": not self.violations,
            "totals": {
                "processes": len(self.processes),
                "chip_mappable": len(chip),
                "host_only": len(self.processes) - len(chip),
                "cores": int(sum(layer["cores"] for layer in self.layers)),
                "neurons_on_chip": int(sum(layer["neurons"] for layer in self.layers)),
                "synapses_on_chip": int(sum(layer["synapses"] for layer in self.layers)),
                "weights_stored_on_chip": int(sum(layer["stored_weights"] for layer in self.layers)),
                "host_chip_boundaries": len(self.boundaries),
                "host_computing": [
                    p.name for p in self.processes if p.placement == "host" and p.type in COMPUTING_HOST
                ],
                "state_bytes_on_chip": int(sum(p.state_bytes for p in chip)),
                "state_bytes_on_host": int(sum(p.state_bytes for p in self.processes if p not in chip)),
            },
            "processes": [asdict(p) for p in self.processes],
            "layers": self.layers,
            "findings": [asdict(f) for f in self.findings],
            "boundaries": self.boundaries,
        }


def mantissa_bits(w: np.ndarray) -> int:
    """Bits of the integer mantissa the weights need once their common power of two is an exponent."""
    w = np.asarray(w, np.int64)
    w = w[w != 0]
    if not w.size:
        return 0
    tz = 0
    while tz < 32 and not np.any(w & ((1 << (tz + 1)) - 1)):
        tz += 1
    m = w >> tz
    if m.min() >= 0:
        return int(m.max()).bit_length()
    return max(int(-m.min() - 1).bit_length(), int(m.max()).bit_length()) + 1


def _downstream(port: Any) -> Iterator[Any]:  # Lava ports (untyped)
    from lava.magma.core.process.ports.ports import AbstractVirtualPort

    for c in port.out_connections:
        if isinstance(c, AbstractVirtualPort):
            yield from _downstream(c)
        else:
            yield c


def _layer_of(graph: Graph, proc: Any) -> str:
    if type(proc).__name__ == "RingBuffer":
        return graph.by_op("input")[0].name
    name: str = proc.name.split("<-")[0]
    while name not in graph.nodes and "." in name:  # a part of a node's lowering: 'x.window', 'x.product'
        name = name.rsplit(".", 1)[0]
    return name


def kernel_copies(proc: ProcessInfo, neurons_per_core: float | None) -> int:
    """How many times a Conv's kernel slices are stored: once per core a channel's outputs span (1 for a
    Sparse, whose synapses are each stored once)."""
    if proc.type != "Conv" or not proc.channels or not neurons_per_core:
        return 1
    outputs_per_channel = proc.synapses // max(proc.fan_in, 1) // proc.channels
    return max(1, math.ceil(outputs_per_channel / neurons_per_core))


def chip_processes(prof: HwProfile | None = None) -> dict[str, ChipProcess]:
    """The process types a profile runs on the chip (its ``processes`` list; loihi2's when it has none)."""
    from spikeport.hw_profiles import load_profile

    return (prof.processes if prof is not None else {}) or load_profile("loihi2").processes


def describe_processes(graph: Graph, net: LavaNetwork, prof: HwProfile | None = None) -> list[ProcessInfo]:
    """One ProcessInfo per process of a built LavaNetwork (placement, size, fan-in, weight/delay bits)."""
    chip = chip_processes(prof)
    out: list[ProcessInfo] = []
    for p in net.processes:
        kind = type(p).__name__
        layer = _layer_of(graph, p)
        name = f"{layer}.source" if kind == "RingBuffer" else p.name  # Lava's default name says nothing
        info = ProcessInfo(
            name,
            kind,
            layer,
            "chip" if kind in chip else "host",
            f"{chip[kind].kind} process, {chip[kind].evidence}: {chip[kind].source}"
            if kind in chip
            else HOST_ONLY.get(kind, "not in the profile's list of chip processes"),
        )
        info.feeds = sorted({c.process.name for port in p.out_ports for c in _downstream(port)})
        info.state = process_state(p)
        info.state_bytes = sum(s["bytes"] for s in info.state)
        if kind in NEURONS:
            port = {"ProdNeuron": "a_in1", "RF": "a_real_in", "RF_IZ": "a_real_in"}.get(kind, "a_in")
            info.neurons = int(np.prod(getattr(p, port).shape))
        if kind in SYNAPSES:
            info.inputs = int(np.prod(p.s_in.shape))
        if kind in ("Sparse", "DelaySparse", "Dense", "DelayDense"):
            from scipy import sparse

            w = sparse.csr_matrix(p.weights.init)
            w.eliminate_zeros()
            info.synapses, info.fan_in = int(w.nnz), int(np.diff(w.indptr).max(initial=0))
            info.stored_weights = info.synapses
            info.weight_bits = mantissa_bits(w.data)
            src = graph.nodes[layer].inputs[0] if layer in graph.nodes and graph.nodes[layer].inputs else None
            if src is not None and value_kind(graph, src) == "analog":  # the stem: pixels as graded spikes
                info.payload_bits = int(graph.nodes[src].attrs["bits"])
            if hasattr(p, "delays"):
                info.max_delay = int(sparse.csr_matrix(p.delays.init).max())
        elif kind == "Conv":
            w = np.asarray(p.weight.init)
            info.fan_in = int(np.prod(w.shape[1:]))
            info.synapses = int(np.prod(p.a_out.shape)) * info.fan_in
            info.stored_weights = int(w.size)  # the shared kernel (docs/loihi2_sources.md section 1)
            info.channels = int(w.shape[0])
            info.weight_bits = mantissa_bits(w)
        out.append(info)
    for node in (graph.nodes[n] for n in graph.order):
        if not LOWERINGS.get(node.op, node.name).on_host:
            continue
        out.append(ProcessInfo(node.name, node.op, node.name, "host", f"host numpy {node.op} (no Lava process)"))
        for src in (leaf for s in node.inputs for leaf in leaves(graph, s)):  # it reads their recorded spikes
            next(p for p in out if p.name == src).feeds.append(node.name)
    return out


def check_hw(graph: Graph, profile: str | Path | HwProfile = "loihi2") -> HwCheck:
    """Build the graph's Lava network (not run) and check it against ``profile`` (name, path or HwProfile)."""
    from spikeport.hw_profiles import HwProfile, load_profile

    prof = profile if isinstance(profile, HwProfile) else load_profile(profile)
    if not prof.has("limits", "neurons_per_core"):  # cores are counted in neurons per core, at the least
        from spikeport.errors import ProfileError

        raise ProfileError(
            f"{prof.path}: profile '{prof.name}' ({prof.kind}) has no chip limits (limits.neurons_per_core): check-hw "
            "maps a network onto neuromorphic cores; use a profile with a 'limits' section (loihi2, loihi1)"
        )
    n_in = int(np.prod(graph.by_op("input")[0].shape))
    net = build_network(graph, np.zeros((n_in, 1), np.int32))
    procs = describe_processes(graph, net, prof)
    return evaluate(graph, procs, prof)


def _limit(prof: HwProfile, key: str) -> float | None:
    return prof.si("limits", key) if prof.has("limits", key) else None


def evaluate(graph: Graph, procs: list[ProcessInfo], prof: HwProfile) -> HwCheck:
    by_name = {p.name: p for p in procs}
    findings: list[Finding] = []
    lim: dict[str, Any] = {
        k: _limit(prof, k)
        for k in (  # a limit, or None where the profile sets none
            "neurons_per_core",
            "synaptic_memory_per_core",
            "fan_in_axons_per_core",
            "weight_bits",
            "delay_bits",
            "decay_bits",
            "cores_per_chip",
            "state_bits",
        )
    }

    def rule(layer: str, key: str, value: float, limit: float, message: str, severity: str = "violation") -> None:
        findings.append(Finding(layer, key, value, limit, severity, message))

    layers: list[dict[str, Any]] = []
    for lif in (p for p in procs if p.type in NEURONS):
        syn = [p for p in procs if lif.name in p.feeds and p.placement == "chip" and p.type in SYNAPSES]
        fan_in = sum(p.fan_in for p in syn)
        bits = (lim["weight_bits"] or 8) + (lim["delay_bits"] or 0) * any(p.max_delay for p in syn)
        # Sparse synapses are stored one by one and split across cores. A Conv's kernel is shared: a core
        # stores the kernel slices of the output channels its neurons hold, a slice once per core its channel
        # spans. That assumes the compiler splits a Conv-fed group by feature ([inferred] from lava's
        # ConvInVarModel(x_split, f_split), docs/loihi2_sources.md section 1); in the raster order of the
        # Lava process every core would need the whole kernel
        stored = {p.name: p.stored_weights * kernel_copies(p, lim["neurons_per_core"]) for p in syn}
        kernel_bytes = sum(stored[p.name] for p in syn if p.type == "Conv") * bits / 8
        syn_bytes = sum(stored[p.name] for p in syn if p.type != "Conv") * bits / 8
        pre = sum(p.inputs for p in syn)
        drivers = {
            "neurons_per_core": _ceil(lif.neurons, lim["neurons_per_core"]),
            "synaptic_memory_per_core": _ceil(syn_bytes + kernel_bytes, lim["synaptic_memory_per_core"]),
            "fan_in_axons_per_core": _ceil(pre, lim["fan_in_axons_per_core"]),
        }
        cores = max(1, *drivers.values())
        layers.append(
            {
                "layer": lif.layer,
                "neurons": lif.neurons,
                "synapses": int(sum(p.synapses for p in syn)),
                "stored_weights": int(sum(stored.values())),
                "synapse_bytes": int(syn_bytes + kernel_bytes),
                "fan_in": fan_in,
                "cores": cores,
                "cores_by": max(drivers, key=lambda k: drivers[k]),
                "synapse_processes": [p.name for p in syn],
            }
        )
        if lim["fan_in_axons_per_core"] and fan_in > lim["fan_in_axons_per_core"]:
            rule(
                lif.layer,
                "fan_in_axons_per_core",
                fan_in,
                lim["fan_in_axons_per_core"],
                f"one neuron reads {fan_in} inputs; a core receives at most {lim['fan_in_axons_per_core']:g} axons",
            )
        if lim["synaptic_memory_per_core"] and fan_in * bits / 8 > lim["synaptic_memory_per_core"]:
            rule(
                lif.layer,
                "synaptic_memory_per_core",
                fan_in * bits / 8,
                lim["synaptic_memory_per_core"],
                f"the synapses of one neuron need {fan_in * bits / 8:g} B, more than a core's synaptic memory",
            )
        for p in syn:
            worst = p.payload_bits + p.weight_bits + math.ceil(math.log2(max(p.fan_in, 1))) if p.payload_bits else 0
            if lim["state_bits"] and worst > lim["state_bits"]:
                rule(
                    lif.layer,
                    "graded_accumulator_bits",
                    worst,
                    lim["state_bits"],
                    f"{p.name} sums {p.payload_bits}-bit graded inputs x {p.weight_bits}-bit weights over a fan-in "
                    f"of {p.fan_in}: the worst case needs {worst} bits; the chip's accumulator may saturate where "
                    "the CPU model does not (calibrated sums usually stay far below)",
                    severity="warning",
                )
        if lim["cores_per_chip"] and cores > lim["cores_per_chip"]:
            rule(
                lif.layer,
                "cores_per_chip",
                cores,
                lim["cores_per_chip"],
                f"the layer needs {cores} cores (driven by {layers[-1]['cores_by']}), more than one chip has",
            )
    for p in procs:
        if p.placement != "chip":
            continue
        if lim["weight_bits"] and p.weight_bits > lim["weight_bits"]:
            rule(
                p.layer,
                "weight_bits",
                p.weight_bits,
                lim["weight_bits"],
                f"process '{p.name}': weights need a {p.weight_bits}-bit mantissa",
            )
        if lim["delay_bits"] and p.max_delay > 2 ** lim["delay_bits"] - 1:
            rule(
                p.layer,
                "delay_bits",
                p.max_delay,
                2 ** lim["delay_bits"] - 1,
                f"process '{p.name}': delay {p.max_delay} steps does not fit {lim['delay_bits']:g} bits",
            )
    if lim["decay_bits"]:
        for node in graph.by_op("lif"):
            worst = max(node.attrs.get("du", 0), node.attrs.get("dv", 0))
            if worst > 2 ** lim["decay_bits"] - 1:
                rule(node.name, "decay_bits", worst, 2 ** lim["decay_bits"] - 1, "decay constant does not fit")
    total = sum(layer["cores"] for layer in layers)
    if lim["cores_per_chip"] and total > lim["cores_per_chip"]:
        rule(
            "<network>",
            "cores_per_chip",
            total,
            lim["cores_per_chip"],
            f"the chip-mappable part needs {total} cores: {math.ceil(total / lim['cores_per_chip'])} chips",
            severity="warning",
        )
    boundaries = [
        {"from": p.name, "to": q, "direction": f"{p.placement}->{by_name[q].placement}"}
        for p in procs
        for q in p.feeds
        if q in by_name and by_name[q].placement != p.placement
    ]
    return HwCheck(prof.name, procs, layers, findings, boundaries)


def _ceil(x: float, per: float | None) -> int:
    return int(math.ceil(x / per)) if per else 0
