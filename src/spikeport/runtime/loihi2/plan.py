"""The hardware plan: what a Loihi 2 system runs for a converted network, built as Intel's tested runs are built.

The CPU simulation network (``runtime.lava``) records every spiking layer through host probes; no hardware run
does that. The plan is the network an INRC member deploys (DESIGN.md section 5; the sources of each call are in
docs/loihi2_sources.md section 7):

- **input**: ``bias`` (the default where it applies): the host computes the stem's first convolution (its MACs on
  analog pixels) and sets the result as the first neuron layer's ``bias_mant`` once a sample, as lava-dl's
  PilotNet-LIF test drives its input layer (``net.in_layer.neuron.bias_mant.init = image``, "to avoid IO
  bottleneck"); ``adapter``: the pixels stream every step from a host RingBuffer through
  ``eio.spike.PyToN3ConvAdapter(shape, num_message_bits=16)`` into the stem's synapses, as PilotNet-SDNN does
  (measured IO-bound on Oheo Gulch: 16.87 fps, about 59 ms a step).
- **output**: the readout's input summed over the tokens on the chip (a GradedVec relay of C neurons fed by
  token-summing synapses), read every step through ``eio.spike.NxToPyAdapter(shape, num_message_bits=24)`` into a
  host ``io.sink.RingBuffer``; the host applies the quantized head (``fixedpoint.readout``: the token sum is its
  first operation, so the logits are the reference's). A network without a readout (netx) sends its output
  layers' spikes the same way.
- **states**: chosen layers' ``u`` / ``v`` read with ``Var.get()`` after each sample, as lava-dl's hardware test
  compares PilotNet-LIF's layers after ``run()``.
- **host compute** inside the network (the attention core where the user asks for it): every edge into or out of
  it takes an adapter; each is a round trip per step, flagged.

Without lava-loihi the same plan runs on ``Loihi2SimCfg`` with stand-ins for the adapters (``procs/embedded_io.py``,
"simulated embedded IO"). ``HardwarePlan`` is the record check-hw prints; ``build_plan_network`` builds it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.chip_limits import BIAS_MANT_BITS, PIXEL_MESSAGE_BITS
from spikeport.errors import ConfigError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import kernel, value_kind
from spikeport.runtime.lava.backend import LavaNetwork, build_network, flat
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role
from spikeport.runtime.lava.lowerings.builder import GRADED_BITS, synapse
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.replay import HostStep
from spikeport.value_kinds import ACTIVATION, ANALOG, GRADED, LOGITS, SPIKES

BIAS_MANT_SIM = (-(2**15), 2**15 - 1)  # Lava's fixed_pt LIF keeps bias_mant in an int16 Var
# lava-dl benchmark notebooks, Oheo Gulch: a frame from the host every step (PilotNet-SDNN) vs on-chip steps
FRAME_PER_STEP_COST = "PilotNet-SDNN streamed a 200x66x3 frame every step: 16.87 fps, ~59 ms a step (IO-bound)"


@dataclass(frozen=True)
class AdapterKind:
    """One way across the host <-> chip boundary, and the public file that uses it."""

    call: str
    direction: str  # host->chip | chip->host
    stand_in: str  # the simulated-embedded-IO class that takes its place without lava-loihi ("" for none needed)
    source: str


ADAPTERS: dict[str, AdapterKind] = {
    a.call: a
    for a in (
        AdapterKind(
            "bias_mant.set",
            "host->chip",
            "",
            "lava-dl tests/lava/lib/dl/netx/test_hdf5_nx.py (pilotnet_lif: image as bias)",
        ),
        AdapterKind(
            "eio.spike.PyToN3ConvAdapter",
            "host->chip",
            "SimulatedPyToN3ConvAdapter",
            "lava-dl tutorials/lava/lib/dl/netx/pilotnet_sdnn/run.ipynb (num_message_bits=16)",
        ),
        AdapterKind(
            "eio.spike.PyToNxAdapter",
            "host->chip",
            "SimulatedPyToNxAdapter",
            "lava src/lava/networks/gradedvecnetwork.py (InputVec, num_message_bits=24)",
        ),
        AdapterKind(
            "eio.spike.NxToPyAdapter",
            "chip->host",
            "SimulatedNxToPyAdapter",
            "lava src/lava/networks/gradedvecnetwork.py (OutputVec); lava-dl test_hdf5_nx.py (tinynet)",
        ),
        AdapterKind(
            "Var.get", "chip->host", "", "lava-dl tests/lava/lib/dl/netx/test_hdf5_nx.py (pilotnet_lif: u.get())"
        ),
    )
}


@dataclass(frozen=True)
class Boundary:
    """One host <-> chip crossing of the plan and what crosses it. ``values``: per crossing, at most (spikes and
    graded messages are sent only where non-zero); bytes count the payload only (no packet headers)."""

    adapter: str  # an ADAPTERS key
    host: str  # the host process (or the host's role in it)
    chip: str  # the layer on the chip side
    values: int
    message_bits: int  # 0: a spike (an event without payload)
    per: str  # step | sample
    host_compute: bool = False  # the host computes here every step (a round trip inside the network)

    @property
    def bytes(self) -> int:
        return self.values * max(1, math.ceil(self.message_bits / 8))

    @property
    def streams_frame(self) -> bool:
        """Input the size of a frame from the host every step: the IO-bound pattern of PilotNet-SDNN."""
        return self.per == "step" and ADAPTERS[self.adapter].direction == "host->chip"


@dataclass(frozen=True)
class Pitfall:
    """A known way a Loihi 2 run goes wrong that this network may hit, with the public report of it."""

    what: str
    where: str
    message: str
    source: str


@dataclass
class HardwarePlan:
    drive: ChipDrive
    steps_per_sample: int  # T
    reset_interval: int  # R: a sample every R steps
    latency: int  # steps from a sample's first input to its last output (T + the deepest output's depth)
    chip: list[str] = field(default_factory=list)  # processes on NeuroCores
    host: list[tuple[str, str]] = field(default_factory=list)  # (process or node, why on the host)
    boundaries: list[Boundary] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # what the host reads every step
    states: list[str] = field(default_factory=list)  # layers whose u / v are read after each sample
    bias_layer: str | None = None  # the layer the bias drive sets
    bias_worst_bits: int | None = None  # signed bits the bias drive may need (worst case over the input range)
    pitfalls: list[Pitfall] = field(default_factory=list)
    simulated_io: bool = True  # stand-ins for the embedded-IO adapters (no lava-loihi)

    def per_step(self) -> tuple[int, int]:
        """(values, bytes) that cross host <-> chip every step, at most."""
        rows = [b for b in self.boundaries if b.per == "step"]
        return sum(b.values for b in rows), sum(b.bytes for b in rows)

    def per_sample(self) -> tuple[int, int]:
        """(values, bytes) that cross once a sample (bias writes, state reads)."""
        rows = [b for b in self.boundaries if b.per == "sample"]
        return sum(b.values for b in rows), sum(b.bytes for b in rows)

    @property
    def host_compute(self) -> list[str]:
        return sorted({b.host for b in self.boundaries if b.host_compute})

    @property
    def warnings(self) -> list[str]:
        out = [
            f"{b.host} -> {b.chip}: a frame of {b.values:,} values from the host every step through {b.adapter}; "
            f"{FRAME_PER_STEP_COST}: prefer the bias drive"
            for b in self.boundaries
            if b.streams_frame and not b.host_compute
        ]
        if self.host_compute:
            out.append(
                f"host computing processes inside the network ({', '.join(self.host_compute)}): a host <-> chip round "
                "trip every step each"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        values, size = self.per_step()
        sample_values, sample_size = self.per_sample()
        return {
            "drive": self.drive.value,
            "embedded_io": "simulated embedded IO (stand-ins)" if self.simulated_io else "lava.proc.embedded_io",
            "steps_per_sample": self.steps_per_sample,
            "reset_interval": self.reset_interval,
            "latency_timesteps": self.latency,
            "chip_processes": len(self.chip),
            "host": [{"process": name, "why": why} for name, why in self.host],
            "boundaries": [
                asdict(b) | {"bytes": b.bytes, "source": ADAPTERS[b.adapter].source} for b in self.boundaries
            ],
            "host_traffic": {
                "values_per_step": values,
                "bytes_per_step": size,
                "values_per_sample": sample_values,
                "bytes_per_sample": sample_size,
            },
            "outputs": self.outputs,
            "states": self.states,
            "bias_layer": self.bias_layer,
            "bias_worst_bits": self.bias_worst_bits,
            "warnings": self.warnings,
            "pitfalls": [asdict(p) for p in self.pitfalls],
        }


@dataclass
class PlanNetwork:
    """The plan's Lava processes (built, not compiled) and the handles a run needs."""

    net: LavaNetwork
    plan: HardwarePlan
    bias: Any = None  # the LIF process the bias drive sets (None: adapter drive)
    bias_exp: int = 0
    sinks: dict[str, Any] = field(default_factory=dict)  # output name -> its host sink RingBuffer
    ports: dict[str, Any] = field(default_factory=dict)  # output name -> the OutPort the host reads it from
    input_port: Any = None  # the input adapter's InPort (adapter drive): where the host's stream enters
    sink_depth: dict[str, int] = field(default_factory=dict)  # output name -> the Lava depth of what it receives
    sink_shape: dict[str, tuple[int, ...]] = field(default_factory=dict)
    state_procs: dict[str, Any] = field(default_factory=dict)  # layer -> its LIF process

    def state_vars(self, layer: str) -> tuple[str, ...]:
        """The Vars read of ``layer``: u and v, but v alone for the layer the bias drive feeds (its input current
        enters v as a bias, so its u stays 0 where the reference's holds the current)."""
        return ("v",) if layer == self.plan.bias_layer else ("u", "v")


# ---- the pieces ----------------------------------------------------------------------------------------------


def is_lif(node: Node) -> bool:
    """A Loihi LIF group (u, v, a bias and its exponent): what a bias can drive and whose u / v can be read."""
    return {"du", "dv", "vth", "bias_exp"} <= node.attrs.keys() and "bias_mant" in node.params


def stem(graph: Graph) -> tuple[Node, Node] | None:
    """(the synapse reading the analog input, the LIF layer it alone feeds) where the bias drive applies, else
    None."""
    if "input" not in graph.nodes or value_kind(graph, "input") != ANALOG:
        return None
    readers = graph.consumers("input")
    if len(readers) != 1 or kernel(readers[0].op).spec.out_kind != ACTIVATION:
        return None
    neurons = graph.consumers(readers[0].name)
    if len(neurons) != 1 or not is_lif(neurons[0]) or neurons[0].inputs != [readers[0].name]:
        return None
    return readers[0], neurons[0]


def default_drive(graph: Graph) -> ChipDrive:
    """The bias drive where the network has a stem that takes it (``check_bias_drive``), else the adapter."""
    try:
        check_bias_drive(graph)
    except ConfigError:
        return ChipDrive.ADAPTER
    return ChipDrive.BIAS


def bias_exponent(lif: Node) -> int:
    """The exponent the bias drive writes with: the layer's own, at most 6 (where ``a_in << 6`` lands in v), so the
    sum of the layer's bias and its input current is a whole mantissa."""
    return min(max(int(lif.attrs["bias_exp"]), 0), fx.ACT_SHIFT)


def drive_bias(graph: Graph, images: np.ndarray) -> tuple[np.ndarray, int]:
    """(bias_mant [S, neurons] int64, bias_exp): the first layer's bias plus the stem's input current for each
    image [S, H, W, C], so that v gains exactly ``u + bias`` as when the current arrives through the synapses
    (the layer's current forgets at once, du = 4095: checked by ``check_bias_drive``)."""
    found = stem(graph)
    assert found is not None
    conv, lif = found
    # the input's and the stem's own kernel steps, as the reference runs them (t = 0: the image is the same each step)
    ctx = HostStep({n.name: n.params for n in graph.nodes.values()}, images=images)
    for node in (graph.nodes["input"], conv):
        prepare = kernel(node.op).prepare
        if prepare is not None:
            ctx.prepared[node.name] = prepare(node, node.params)
    pixels = kernel(graph.nodes["input"].op).step(ctx, graph.nodes["input"], [], {}, {})
    a_in = np.asarray(kernel(conv.op).step(ctx, conv, [pixels], {}, {}))
    current = fx.INT.wrap_lava_u(fx.INT.floor_shift(a_in.reshape(len(images), -1), fx.ACT_SHIFT))
    own = np.tile(fx.floor_shift_numpy(lif.params["bias_mant"].astype(np.int64), int(lif.attrs["bias_exp"])),
                  int(np.prod(lif.shape)) // lif.shape[-1])  # fmt: skip
    exp = bias_exponent(lif)
    total = current + own[None, :]
    assert not np.any(total % (1 << exp)), "the stem's current and bias are multiples of 2**exp by construction"
    return total >> exp, exp


def check_bias_drive(graph: Graph) -> tuple[Node, Node]:
    """The stem the bias drive replaces, or a ConfigError saying why this network cannot take it."""
    found = stem(graph)
    if found is None:
        raise ConfigError(
            "input drive 'bias' needs an analog input read by one synapse (a conv) whose only reader is a LIF layer "
            "(the stem of a converted model); use the adapter drive"
        )
    lif = found[1]
    if int(lif.attrs["du"]) != fx.DECAY_UNITY - 1:
        raise ConfigError(
            f"input drive 'bias': layer '{lif.name}' keeps part of its current between steps (du = {lif.attrs['du']}), "
            "so its input cannot be a bias; use the adapter drive"
        )
    return found


def worst_bias_bits(graph: Graph) -> int:
    """Signed bits the bias drive needs at most, over the input's whole range (every pixel at its extreme)."""
    conv, lif = check_bias_drive(graph)
    lim = 2 ** (graph.nodes["input"].attrs["bits"] - 1) - 1
    w = np.abs(conv.params["weight_mant"].astype(np.int64))
    per_channel = w.reshape(w.shape[0], -1).sum(1) * lim  # [C_out]
    current = fx.floor_shift_numpy(per_channel, int(conv.attrs["weight_exp"])) << fx.ACT_SHIFT
    own = np.abs(fx.floor_shift_numpy(lif.params["bias_mant"].astype(np.int64), int(lif.attrs["bias_exp"])))
    worst = int(((current + own) >> bias_exponent(lif)).max(initial=0))
    return worst.bit_length() + 1


def _adapter(kind: str, shape: tuple[int, ...], bits: int, name: str, hardware: bool) -> Any:
    if hardware:
        from lava.proc import embedded_io as eio

        return getattr(eio.spike, kind.split(".")[-1])(shape=shape, num_message_bits=bits)
    from spikeport.runtime.loihi2.procs import embedded_io as sim

    proc = getattr(sim, ADAPTERS[kind].stand_in)(shape=shape, num_message_bits=bits, name=name)
    return proc


# ---- the build -----------------------------------------------------------------------------------------------


def build_plan_network(
    graph: Graph,
    drive: ChipDrive | str | None = None,
    states: Sequence[str] = (),
    source_data: np.ndarray | None = None,
    hardware: bool = False,
    sink_steps: int = 1,
    embed: bool = False,
) -> PlanNetwork:
    """The plan's processes for ``graph``: ``drive`` (default: bias where the network has a stem that takes it),
    ``states`` the layers read after each sample, ``source_data`` [n, steps] what the adapter drive's RingBuffer
    plays, ``hardware`` the real embedded-IO adapters (lava-loihi) instead of stand-ins, ``sink_steps`` the length
    of the host sinks' buffers. ``embed``: no host RingBuffer and no sinks; the input adapter's InPort and the
    output adapters' OutPorts are left for the caller's own processes (``PlanNetwork.ports``: ``embed.py``)."""
    drive = default_drive(graph) if drive is None else ChipDrive(drive)
    for name in states:
        if name not in graph.nodes or not is_lif(graph.nodes[name]):
            raise ConfigError(f"read state of '{name}': expected a LIF layer of the graph (u and v to read)")
    crossings: list[Boundary] = []
    entry: list[Any] = []  # the input adapter (adapter drive)
    overrides: dict[str, Callable[[LavaNetwork, Node], None]] = {}
    bias_layer: Node | None = None
    if drive is ChipDrive.BIAS:
        conv, bias_layer = check_bias_drive(graph)
        overrides["input"] = lambda net, node: None  # the pixels stay on the host
        overrides[conv.name] = _host_conv
        crossings.append(
            Boundary("bias_mant.set", "host (stem conv)", bias_layer.name, _size(bias_layer), 16, "sample")
        )
    else:
        overrides["input"] = lambda net, node: entry.append(_adapter_input(net, node, hardware, crossings, embed))
    n_in = int(np.prod(graph.nodes["input"].shape)) if "input" in graph.nodes else 1
    data = np.zeros((n_in, 1), np.int32) if source_data is None else source_data
    net = build_network(graph, data, overrides=overrides)
    port = _encode_on_host(net, entry[0], crossings) if entry else None
    _adapt_host_compute(net, hardware, crossings)
    built = PlanNetwork(net, HardwarePlan(drive, graph.T, net.R, 0, simulated_io=not hardware))
    built.input_port = port
    _outputs(built, hardware, sink_steps, crossings, embed)
    by_name = {getattr(p, "name", ""): p for p in net.processes}
    if bias_layer is not None:
        built.bias, built.bias_exp = by_name[bias_layer.name], bias_exponent(bias_layer)
        built.bias.bias_exp.init = built.bias_exp
    plan = built.plan
    plan.bias_layer = None if bias_layer is None else bias_layer.name
    for name in states:
        built.state_procs[name] = by_name[name]
        values = len(built.state_vars(name)) * _size(graph.nodes[name])
        crossings.append(Boundary("Var.get", "host (state read)", name, values, 24, "sample"))
    plan.boundaries, plan.states, plan.outputs = crossings, list(states), list(built.ports)
    plan.bias_worst_bits = None if bias_layer is None else worst_bias_bits(graph)
    plan.latency = graph.T + max(built.sink_depth.values(), default=0)
    for p in net.processes:
        facts = PROCESSES.of(p)
        if facts.role.on_host:
            plan.host.append((str(getattr(p, "name", type(p).__name__)), facts.host_only))
        else:
            plan.chip.append(str(p.name))
    return built


def _size(node: Node) -> int:
    return int(np.prod(node.shape))


def _host_conv(net: LavaNetwork, node: Node) -> None:
    """The stem's convolution under the bias drive: computed on the host, no synapse on the chip."""
    net.synapse_out[node.name] = []
    net.host_only.append(node.name)


def _adapter_input(net: LavaNetwork, node: Node, hardware: bool, crossings: list[Boundary], embed: bool) -> Any:
    """The host RingBuffer (unless ``embed``: the caller's) and the adapter that carries its stream onto the chip."""
    from lava.proc.io.source import RingBuffer

    assert net.source_data is not None
    net.host_only.append(node.name)
    kind = value_kind(net.graph, node.name)
    spikes = kind == SPIKES
    call = "eio.spike.PyToNxAdapter" if spikes else "eio.spike.PyToN3ConvAdapter"
    bits = 0 if spikes else (GRADED_BITS if kind == GRADED else PIXEL_MESSAGE_BITS)
    adapter = _adapter(call, flat(node.shape), bits, f"{node.name}.adapter", hardware)
    net.processes.append(adapter)
    if not embed:
        net.source = RingBuffer(data=net.source_data.astype(np.int32))
        net.processes.append(net.source)
        net.source.s_out.connect(adapter.inp)
    (net.spike_out if spikes else net.stream_out)[node.name] = adapter.out
    crossings.append(
        Boundary(call, "host RingBuffer (input)", _first_reader(net.graph, node), _size(node), bits, "step")
    )
    return adapter


def _first_reader(graph: Graph, node: Node) -> str:
    readers = graph.consumers(node.name)
    return readers[0].name if readers else node.name


def _encode_on_host(net: LavaNetwork, adapter: Any, crossings: list[Boundary]) -> Any:
    """Where the input's readers compute on the host (netx's SDNN input encoder, as Intel's runs keep it), the
    input goes to them from the host directly: the input adapter is dropped (its crossing moves to the encoder's
    output, ``_adapt_host_compute``). The port the input enters by (the adapter's, or the encoder's)."""
    readers = list(adapter.out.out_connections)
    if not readers or any(PROCESSES.of(r.process).role is not Role.HOST_COMPUTE for r in readers):
        return adapter.inp
    for source in list(adapter.inp.in_connections):
        source.out_connections.remove(adapter.inp)
        for reader in readers:
            source.connect(reader)
    for reader in readers:
        reader.in_connections.remove(adapter.out)
    net.processes.remove(adapter)
    crossings[:] = [c for c in crossings if c.host != "host RingBuffer (input)"]
    return readers[0]


def _adapt_host_compute(net: LavaNetwork, hardware: bool, crossings: list[Boundary]) -> None:
    """An adapter on every edge between a host computing process and the chip (out of the chip: NxToPy, into it:
    PyToNx carrying graded values, or PyToN3ConvAdapter into a Conv as Intel's SDNN runs feed theirs)."""
    for proc in [p for p in net.processes if PROCESSES.of(p).role is Role.HOST_COMPUTE]:
        for port in proc.in_ports:
            for src in list(port.in_connections):
                if PROCESSES.of(src.process).role.on_host:  # host to host: nothing crosses
                    continue
                bits = GRADED_BITS if _sends_graded(src) else 0
                adapter = _splice(src, port, "eio.spike.NxToPyAdapter", bits, hardware, net)
                values = int(np.prod(port.shape))
                crossings.append(
                    Boundary("eio.spike.NxToPyAdapter", proc.name, adapter.name, values, bits, "step", True)
                )
        for port in proc.out_ports:
            for dst in list(port.out_connections):
                conv = type(_real(dst).process).__name__ == "Conv"
                call = "eio.spike.PyToN3ConvAdapter" if conv else "eio.spike.PyToNxAdapter"
                bits = PIXEL_MESSAGE_BITS if conv else GRADED_BITS
                adapter = _splice(port, dst, call, bits, hardware, net)
                values = int(np.prod(port.shape))
                crossings.append(Boundary(call, proc.name, adapter.name, values, bits, "step", True))


def _sends_graded(port: Any) -> bool:
    return type(port.process).__name__ not in ("LIF", "LIFReset")


def _splice(src: Any, dst: Any, call: str, bits: int, hardware: bool, net: LavaNetwork) -> Any:
    """``src -> dst`` becomes ``src -> adapter -> dst`` (Lava keeps a port's connections in two plain lists). The
    adapter takes ``src``'s shape; where ``dst`` is a virtual port (a reshape between them), it now reshapes the
    adapter's output."""
    target = _real(dst)
    name = f"{target.process.name}.{target.name}.{call.split('.')[-1]}"
    adapter = _adapter(call, tuple(src.shape), bits, name, hardware)
    src.out_connections.remove(dst)
    dst.in_connections.remove(src)
    src.connect(adapter.inp)
    adapter.out.out_connections.append(dst)  # as connect() would, without its shape check (dst may reshape)
    dst.in_connections.append(adapter.out)
    net.processes.append(adapter)
    return adapter


def _real(port: Any) -> Any:
    """The first port of a process that ``port`` leads to (past any virtual reshape or flatten ports)."""
    from lava.magma.core.process.ports.ports import AbstractVirtualPort

    while isinstance(port, AbstractVirtualPort):
        port = port.out_connections[0]
    return port


def _outputs(built: PlanNetwork, hardware: bool, steps: int, crossings: list[Boundary], embed: bool) -> None:
    """The host sinks: the readout's input summed over tokens on the chip, or (no readout) every output layer; with
    ``embed`` the output adapters' ports, for the caller's sinks."""
    from lava.proc.io.sink import RingBuffer as Sink

    net, graph = built.net, built.net.graph
    readouts = [n for n in (graph.nodes[name] for name in graph.order) if kernel(n.op).spec.out_kind == LOGITS]
    taps: list[tuple[str, Any, int, int, tuple[int, ...]]] = []  # (name, port, bits, depth, shape)
    if readouts:
        for readout in readouts:
            x = graph.nodes[readout.inputs[0]]
            channels, tokens = x.shape[-1], _size(x) // x.shape[-1]
            rows = np.tile(np.arange(channels), tokens)  # token n's channel c adds into c
            name, port, depth = _summing_relay(net, f"{readout.name}.token_sum", x.name, rows, channels)
            taps.append((name, port, GRADED_BITS, depth, (channels,)))
    else:
        for name in graph.order:
            if graph.consumers(name) or name == "input":
                continue
            if name in net.stream_out or name in net.spike_out:
                graded = name in net.stream_out
                port = net.stream_out[name] if graded else net.spike_out[name]
                bits = GRADED_BITS if graded else 0
                taps.append((name, port, bits, net.depth[name], flat(graph.nodes[name].shape)))
            else:  # a sum only the host read in the simulation: one relay sends it
                size = _size(graph.nodes[name])
                tap, port, depth = _summing_relay(net, f"{name}.sum", name, np.arange(size), size)
                taps.append((tap, port, GRADED_BITS, depth, flat(graph.nodes[name].shape)))
    for name, port, bits, depth, shape in taps:
        adapter = _adapter("eio.spike.NxToPyAdapter", flat(shape), bits, f"{name}.out_adapter", hardware)
        port.connect(adapter.inp)
        net.processes.append(adapter)
        built.ports[name], built.sink_depth[name], built.sink_shape[name] = adapter.out, depth, shape
        if not embed:
            sink = Sink(shape=flat(shape), buffer=steps)
            sink.name = f"{name}.sink"  # io.sink.RingBuffer takes no name; check-hw and errors use it
            adapter.out.connect(sink.a_in)
            net.processes.append(sink)
            built.sinks[name] = sink
        crossings.append(Boundary("eio.spike.NxToPyAdapter", "host sink", name, int(np.prod(shape)), bits, "step"))


def _summing_relay(net: LavaNetwork, name: str, node: str, rows: np.ndarray, size: int) -> tuple[str, Any, int]:
    """A GradedVec of ``size`` neurons to which value i of ``node`` adds (into ``rows[i]``), fed by one synapse per
    Lava source of ``node`` (their outputs arrive aligned, as a relay's do). Returns (its name, its s_out, its
    depth)."""
    from lava.proc.graded.process import GradedVec
    from scipy import sparse

    sources = _lava_sources(net, node)
    matrix = sparse.csr_matrix((np.ones(rows.size, np.int64), (rows, np.arange(rows.size))), shape=(size, rows.size))
    net.depth[name] = max(net.depth[s] for s in sources) + 1
    relay = GradedVec(shape=(size,), vth=0, exp=0)
    relay.name = name  # GradedVec takes no name; check-hw and errors use it
    for src in sources:
        synapse(net, src, name, matrix, weight_exp=0).a_out.connect(relay.a_in)
    net.processes.append(relay)
    return name, relay.s_out, net.depth[name]


def _lava_sources(net: LavaNetwork, name: str) -> list[str]:
    """The nodes with a Lava output whose sum is ``name`` (itself when it has one)."""
    if name in net.stream_out or name in net.spike_out:
        return [name]
    return [s for src in net.graph.nodes[name].inputs for s in _lava_sources(net, src)]


# ---- known pitfalls ------------------------------------------------------------------------------------------
NETX_MAX_DELAY = 62  # lava-dl src/lava/lib/dl/netx/hdf5.py refuses larger axonal delays
CONV_MAX_X = 256  # YOLO-KP's compile log: conv spikes from x_in = n*256-1 "might get dropped" (an 8-bit x field)
YOLO_KP_CORES = 574  # YOLO-KP's compile ran the INRC login VM out of RAM (lava-dl#252)


def pitfalls(net: LavaNetwork, cores: int | None = None) -> list[Pitfall]:
    """The known hardware pitfalls this plan network can be seen to hit (docs/loihi2.md, "Known pitfalls")."""
    found: list[Pitfall] = []
    for proc in net.processes:
        facts, name = PROCESSES.of(proc), str(proc.name)
        if facts.role is Role.SYNAPSE and facts.weights is not None and _all_zero(getattr(proc, facts.weights).init):
            msg = "a synapse process whose weights are all zero fails to compile on Loihi2HwCfg"
            found.append(Pitfall("all-zero weights", name, msg, "lava#501"))
        worst = _largest(getattr(proc, facts.delays).init) if facts.delays is not None else 0
        if worst > NETX_MAX_DELAY:
            msg = f"synaptic delay {worst} > {NETX_MAX_DELAY}: netx and the chip's delay field refuse it"
            found.append(Pitfall("delay out of range", name, msg, "lava-dl#214; lava-dl src/lava/lib/dl/netx/hdf5.py"))
        if type(proc).__name__ == "Conv" and proc.input_shape[0] > CONV_MAX_X:
            msg = f"input x = {proc.input_shape[0]}: the compiler warns that spikes from x_in = n*256-1 may be dropped"
            found.append(Pitfall("conv input wider than 256", name, msg, "lava-dl yolo_kp/run_eth.ipynb (compile log)"))
    lifs = sum(type(p).__name__ in ("LIF", "LIFReset") for p in net.processes)
    if lifs:
        msg = (
            "the Nc LIF model scales du, dv, vth and the bias inside its microcode, not as Lava's CPU model does; the "
            "bundle's run compares the chip's outputs and states with the reference, and a first mismatch at a LIF "
            "layer points here"
        )
        found.append(Pitfall("LIF parameters scaled on the chip", f"{lifs} LIF groups", msg, "lava#829"))
    if cores is not None and cores > YOLO_KP_CORES:
        msg = (
            f"larger than YOLO-KP ({YOLO_KP_CORES} cores), whose compile ran the INRC login VM out of RAM: compile on "
            "a SLURM compute node (the bundle's run.slurm)"
        )
        found.append(Pitfall("compile memory", f"{cores:,} cores", msg, "lava-dl#252"))
    return found


def _all_zero(weights: Any) -> bool:
    return bool(weights.count_nonzero() == 0) if hasattr(weights, "count_nonzero") else not np.any(weights)


def _largest(values: Any) -> int:
    return int(values.max()) if (values.nnz if hasattr(values, "nnz") else np.size(values)) else 0


def bias_pitfall(plan: HardwarePlan) -> list[Pitfall]:
    if plan.bias_worst_bits is None or plan.bias_worst_bits <= BIAS_MANT_BITS:
        return []
    return [
        Pitfall(
            "bias beyond 13 bits",
            str(plan.bias_layer),
            f"the bias drive may need {plan.bias_worst_bits} signed bits (every pixel at its extreme); Loihi 2's LIF "
            f"holds {BIAS_MANT_BITS}: the bundle checks its own samples, else use --input-drive adapter",
            "lava 0.10 lava/proc/lif/models.py (bias_mant: signed 13-bit)",
        )
    ]


# ---- the process classes the plan adds (runtime/lava/facts.py) ------------------------------------------------
_EIO = "embedded IO: runs on the chip's embedded processors between the host and the NeuroCores (lava-loihi)"
PROCESSES.declare(
    *(
        ProcessFacts(name, Role.EMBEDDED_IO, source, host_only=_EIO)
        for name, source in (
            ("PyToNxAdapter", "lava.proc.embedded_io (lava-loihi); docs/loihi2_sources.md section 7"),
            ("PyToN3ConvAdapter", "lava.proc.embedded_io (lava-loihi); docs/loihi2_sources.md section 7"),
            ("NxToPyAdapter", "lava.proc.embedded_io (lava-loihi); docs/loihi2_sources.md section 7"),
        )
    ),
    *(
        ProcessFacts(
            name,
            Role.EMBEDDED_IO,
            "spikeport runtime/loihi2/procs/embedded_io.py",
            host_only=f"{_EIO}; simulated embedded IO: a stand-in that passes every message through",
        )  # fmt: skip
        for name in ("SimulatedPyToNxAdapter", "SimulatedPyToN3ConvAdapter", "SimulatedNxToPyAdapter")
    ),
    ProcessFacts(
        "lava.proc.io.sink.RingBuffer",
        Role.HOST_PROBE,
        "lava 0.10 lava/proc/io/sink.py",
        input_port="a_in",
        host_only="host I/O (lava.proc.io.sink): receives the plan's outputs every step",
    ),
)
