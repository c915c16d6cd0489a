"""The Lava processes of a built network as check-hw counts them (``ProcessInfo``): where each goes, its size,
fan-in, weight and delay bits, the state it keeps, and whether the float model or the lowering owns it. One
module, so that check-hw, the benchmarks and the tests describe a network one way.

The processes are the ones ``runtime.lava.backend.build_network`` really creates (built, not compiled or run),
so the description cannot drift from the Lava backend. What each process is (synapse, neuron group, host
I/O...), the state it holds and its ports come from its class's record in ``runtime.lava.facts.PROCESSES``;
an undeclared class is an error.

- chip-mappable: a process type in the hardware profile's ``processes`` list (hw_profiles/loihi2.yaml: standard
  Lava processes with a Loihi 2 NeuroCore model, each with its evidence, 'verified' or 'likely', and source);
- host-only: spikeport's own processes (fixed_pt ProcessModels on the CPU), I/O, the readout.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport.errors import ConversionError
from spikeport.hw_profiles import load_profile
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel, value_kind
from spikeport.runtime.lava.backend import leaves
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role, WeightStorage
from spikeport.runtime.lava.lowerings import LOWERINGS, LavaNetwork
from spikeport.runtime.lava.state import process_state
from spikeport.runtime.loihi2.core_model import SynapseLoad, weight_field
from spikeport.value_kinds import ANALOG

if TYPE_CHECKING:
    from spikeport.hw_profiles import ChipProcess, HwProfile


@dataclass
class ProcessInfo:
    name: str
    type: str
    layer: str  # the graph node it realises
    placement: str  # chip | host
    evidence: str  # why (model evidence, or why host-only)
    role: str = ""  # runtime.lava.facts.Role value
    neurons: int = 0
    inputs: int = 0  # distinct presynaptic neurons (synapse processes)
    synapses: int = 0  # connections (a Conv's kernel applied at every output)
    stored_weights: int = 0  # weights the chip stores: one per Sparse synapse, a Conv's kernel (see evaluate)
    storage: str = ""  # how a synapse keeps its weights (facts.WeightStorage value)
    channels: int = 0  # a Conv's output channels (its kernel has one slice per channel)
    fan_in: int = 0  # largest number of synapses into one neuron
    weight_bits: int = 0  # mantissa bits the weights need (shared exponent)
    max_delay: int = 0
    max_decay: int = 0  # the largest decay constant it keeps (facts.ProcessFacts.decays)
    feeds: list[str] = field(default_factory=list)
    payload_bits: int = 0  # bits of the graded values it reads (synapses on graded pixels), 0 for spikes
    state: list[dict[str, Any]] = field(default_factory=list)  # the Vars it keeps between steps
    state_bytes: int = 0
    origin: str = ""  # model (the float model's neuron layer or weighted synapse) | lowering (what it adds)
    shape: list[int] = field(default_factory=list)  # a neuron group's neurons; a Conv's output map (X, Y, channels)
    kernel_rows: int = 0  # a Conv's kernel rows (input channels x kernel positions)
    # the core model's view of a synapse (core_model.SynapseLoad); not part of the record's JSON
    load: SynapseLoad | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "load"}

    @property
    def neuron_group(self) -> bool:
        return self.placement == "chip" and Role(self.role).neuron_group

    @property
    def chip_synapse(self) -> bool:
        return self.placement == "chip" and self.role == Role.SYNAPSE.value


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


def source_node(graph: Graph) -> str:
    """The graph's input: the node that reads no other node."""
    sources = [name for name in graph.order if not graph.nodes[name].inputs]
    if len(sources) != 1:
        raise ConversionError(f"check-hw needs a graph with one input node; this one has {sources or 'none'}")
    return sources[0]


def _layer_of(graph: Graph, proc: Any) -> str:
    if PROCESSES.of(proc).role is Role.HOST_INPUT:  # the input RingBuffer (Lava names it by its class)
        return source_node(graph)
    name: str = proc.name.split("<-")[0]
    while name not in graph.nodes and "." in name:  # a part of a node's lowering: 'x.window', 'x.product'
        name = name.rsplit(".", 1)[0]
    return name


def origin(graph: Graph, layer: str, name: str, role: Role) -> str:
    """'model' for the float model's own parts, 'lowering' for what the lowering adds beyond them: a neuron group
    is the model's when it is a graph node's own process and that node holds neuron state (a LIF layer; not a
    residual sum's relay, a max-pool's window neurons, a coincidence, product or partial-sum neuron); a synapse
    when it carries a graph node's weights into that node's own output (its process, or the input synapse named
    '<node><-<source>')."""
    node = graph.nodes.get(layer)
    if node is None:
        return "lowering"
    if role.neuron_group:
        return "model" if name == layer and kernel(node.op).state_bytes(node) > 0 else "lowering"
    own = name == layer or name.startswith(f"{layer}<-")
    return "model" if role is Role.SYNAPSE and own and "weight_mant" in node.params else "lowering"


def chip_processes(prof: HwProfile | None = None) -> dict[str, ChipProcess]:
    """The process types a profile runs on the chip (its ``processes`` list; loihi2's when it has none)."""
    return (prof.processes if prof is not None else {}) or load_profile("loihi2").processes


def describe_processes(
    graph: Graph, net: LavaNetwork, prof: HwProfile | None = None, host_readout: bool = True
) -> list[ProcessInfo]:
    """One ProcessInfo per process of a built LavaNetwork (placement, size, fan-in, weight/delay bits); with
    ``host_readout``, one more for each op computed on the host from recorded spikes (the simulation network's
    readout; the hardware plan reads its outputs through sinks instead)."""

    chip = chip_processes(prof)
    delay_bits = int(prof.si("limits", "delay_bits")) if prof is not None and prof.has("limits", "delay_bits") else 6
    out: list[ProcessInfo] = []
    for p in net.processes:
        kind = type(p).__name__
        facts = PROCESSES.of(p)
        layer = _layer_of(graph, p)
        name = f"{layer}.source" if facts.role is Role.HOST_INPUT else p.name  # Lava's default name says nothing
        on_chip = kind in chip and not facts.host_only
        info = ProcessInfo(
            name,
            kind,
            layer,
            "chip" if on_chip else "host",
            f"{chip[kind].kind} process, {chip[kind].evidence}: {chip[kind].source}"
            if on_chip
            else facts.host_only or "not in the profile's list of chip processes",
            role=facts.role.value,
        )
        info.origin = origin(graph, layer, name, facts.role)
        info.feeds = sorted({c.process.name for port in p.out_ports for c in _downstream(port)})
        info.state = process_state(p)
        info.state_bytes = sum(s["bytes"] for s in info.state)
        info.max_decay = max((int(np.max(getattr(p, var).init)) for var in facts.decays), default=0)
        if facts.role.neuron_group:
            assert facts.input_port is not None  # ProcessFacts requires one
            info.shape = [int(d) for d in getattr(p, facts.input_port).shape]
            info.neurons = int(np.prod(info.shape))
        if facts.role is Role.SYNAPSE:
            assert facts.input_port is not None and facts.weights is not None and facts.storage is not None
            info.inputs = int(np.prod(getattr(p, facts.input_port).shape))
            info.storage = facts.storage.value
        _describe_weights(info, p, facts, graph, delay_bits)
        out.append(info)
    for node in (graph.nodes[n] for n in graph.order):
        if not host_readout or not LOWERINGS.get(node.op, node.name).on_host:
            continue
        out.append(
            ProcessInfo(
                node.name,
                node.op,
                node.name,
                "host",
                f"host numpy {node.op} (no Lava process)",
                role=Role.HOST_OUTPUT.value,
            )
        )
        for src in (leaf for s in node.inputs for leaf in leaves(graph, s)):  # it reads their recorded spikes
            next(p for p in out if p.name == src).feeds.append(node.name)
    return out


def _describe_weights(info: ProcessInfo, p: Any, facts: ProcessFacts, graph: Graph, delay_bits: int) -> None:
    """A synapse process's stored weights: synapses, fan-in, bits and what a core's memory holds of them."""
    from scipy import sparse

    layer = info.layer
    if facts.storage in (WeightStorage.PER_SYNAPSE, WeightStorage.DENSE_MATRIX):
        w = sparse.csr_matrix(getattr(p, str(facts.weights)).init)
        w.eliminate_zeros()
        info.synapses, info.fan_in = int(w.nnz), int(np.diff(w.indptr).max(initial=0))
        info.stored_weights = int(np.prod(w.shape)) if facts.storage is WeightStorage.DENSE_MATRIX else w.nnz
        info.weight_bits = mantissa_bits(w.data)
        src = graph.nodes[layer].inputs[0] if layer in graph.nodes and graph.nodes[layer].inputs else None
        if src is not None and value_kind(graph, src) == ANALOG:  # the stem: pixels as graded spikes
            info.payload_bits = int(graph.nodes[src].attrs["bits"])
        if facts.delays:
            info.max_delay = int(sparse.csr_matrix(getattr(p, facts.delays).init).max())
        dense = facts.storage is WeightStorage.DENSE_MATRIX
        info.load = _matrix_load(info, w, zeros_stored=dense, delay_bits=delay_bits if info.max_delay else 0)
    elif facts.storage is WeightStorage.SHARED_KERNEL:
        w = np.asarray(getattr(p, str(facts.weights)).init)
        info.fan_in = int(np.prod(w.shape[1:]))
        info.synapses = int(np.prod(p.a_out.shape)) * info.fan_in
        info.stored_weights = int(w.size)  # the shared kernel (docs/loihi2_sources.md section 1)
        info.channels = int(w.shape[0])
        info.kernel_rows = info.fan_in
        info.weight_bits = mantissa_bits(w)
        info.shape = [int(d) for d in p.a_out.shape]  # (X, Y, channels): the map its neurons form
        groups = int(np.ravel(p.groups.init)[0]) if hasattr(p, "groups") else 1
        info.load = _kernel_load(info, w, int(np.prod(p.a_out.shape[:-1])), groups)


def _matrix_load(info: ProcessInfo, w: Any, zeros_stored: bool, delay_bits: int) -> SynapseLoad:
    """A weight matrix as the core model stores it: one list per input axon and core."""
    bits = weight_field(max(info.weight_bits, 1)) + delay_bits
    return SynapseLoad(info.name, info.type, bits, matrix=w.tocsr(), zeros_stored=zeros_stored)


def _kernel_load(info: ProcessInfo, w: np.ndarray, positions: int, groups: int) -> SynapseLoad:
    """A Conv as the core model stores it: its kernel rows, shared by the positions of a core; a Conv with one
    output position shares nothing and is stored as the weight matrix it is (netx's dense layers, which lava-dl
    compiles as Lava Dense). A grouped Conv (the token mixing's, a head a group) is the kernel format extrapolated:
    the public tables compile convolutions over all channels only."""
    bits = weight_field(max(info.weight_bits, 1))
    if positions > 1:
        kind = info.type if groups == 1 else f"{info.type} ({groups} groups)"
        return SynapseLoad(info.name, kind, bits, rows=info.kernel_rows, channels=info.channels)
    from scipy import sparse

    matrix = sparse.csr_matrix(w.reshape(w.shape[0], -1))
    return SynapseLoad(info.name, "Dense", bits, matrix=matrix, zeros_stored=True)
