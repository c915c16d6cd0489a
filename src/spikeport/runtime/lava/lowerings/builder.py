"""The shared builder of the Lava lowerings: the network being built (``LavaNetwork``), the per-op record
(``LavaLowering``) and its registry ``LOWERINGS``, and the synapses the ops' lowerings make (Sparse / DelaySparse /
Conv, delayed so that they arrive in step, a convolution as a sparse matrix).

Timing: every synapse (Sparse, Conv, cores, a relay's identity synapses) delays by one step, neurons
(LIF, GradedVec, ProdNeuron) by none: each record's ``delay`` says which its op is. A synapse node's output
arrives at the depth of the neuron that reads it (``arrival``): DelaySparse holds it, and a Conv, which
cannot delay, reads its input through a memoryless relay LIF (``delayed_spikes``).

The Lava process classes that several ops' lowerings build are declared at the end of this module; a class one
op alone builds is declared beside that op's lowering.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.chip_limits import CONV_FIELD_MAX
from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import kernel
from spikeport.ir.registry import Registry
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role, WeightStorage

# The payload width of every graded message spikeport sends: relay sums (small counts), 16-bit pixels and
# sigma-delta messages (netx uses 16 bits for SDNN; 24, Lava's state width, holds any of them unclipped).
GRADED_BITS = 24

Delay = Callable[[Node, Set[str]], int]  # (node, the relayed adds) -> steps its output lags its inputs


@dataclass
class LavaNetwork:
    graph: Graph
    source: Any  # the input RingBuffer (Lava processes and ports are untyped)
    spike_out: dict[str, Any]  # node name -> lava OutPort carrying its spikes (lif / maxpool)
    stream_out: dict[str, Any]  # relayed add node -> its GradedVec's OutPort (graded: the sum of its inputs)
    depth: dict[str, int]
    R: int
    processes: list[Any] = field(default_factory=list)
    host_only: list[str] = field(default_factory=list)
    relays: Set[str] = frozenset()  # the add nodes realised by a relay (backend.relayed)
    synapse_out: dict[str, Any] = field(default_factory=dict)  # synapse node -> its a_out port (a LIF's a_in reads it)
    source_data: np.ndarray | None = None  # [n_pixels, steps] int32 the input RingBuffer plays


@dataclass(frozen=True)
class LavaLowering:
    """How one IR op becomes Lava processes.

    ``build(net, node)`` creates the node's processes, connects them to its inputs' outputs and publishes
    its own output in ``net`` (``spike_out``, ``stream_out`` or ``synapse_out``). ``delay``: the steps its
    output lags its latest input. ``on_host``: computed on the host from the recorded spikes of its
    sources (no process; its inputs need no Lava output). ``relay_if_read``: realised on Lava only when a
    Lava process reads it (otherwise the host sums the recorded spikes)."""

    build: Callable[[LavaNetwork, Node], None]
    delay: Delay
    on_host: bool = False
    relay_if_read: bool = False
    resets: bool = True  # its state is cleared between streamed samples (LIFReset's reset interval)
    summary: str = ""  # the processes it becomes, for the conversion report


LOWERINGS: Registry[LavaLowering] = Registry("Lava lowering")


def steps(n: int) -> Delay:
    return lambda node, relays: n


def flat(shape: Sequence[int]) -> tuple[int]:
    return (int(np.prod(shape)),)


def lava_model(package: str, model: str) -> str:
    """Where a standard Lava process's state widths and ports were read: the LavaPyType precisions of its
    fixed-point ProcessModel in Lava 0.10."""
    return f"lava 0.10 lava/proc/{package}/models.py ({model})"


# ------------------------------------------------------------------------------------------ ports and depths
def out_port(net: LavaNetwork, name: str) -> Any:
    """Where node ``name``'s output leaves: a spiking node's s_out or a relay's graded s_out."""
    if name in net.stream_out:
        return net.stream_out[name]
    if name not in net.spike_out:
        raise ConversionError(f"node '{name}' ({net.graph.nodes[name].op}) has no Lava output to read from")
    return net.spike_out[name]


def synapse_ports(net: LavaNetwork, names: Sequence[str]) -> list[Any]:
    """The a_out ports of synapse nodes ``names`` (a node realised by several synapse processes has several)."""
    ports: list[Any] = []
    for name in names:
        out = net.synapse_out[name]
        ports += out if isinstance(out, list) else [out]
    return ports


def arrival(net: LavaNetwork, node: Node) -> int:
    """The depth at which a synapse node's output must reach the neuron that reads it: that neuron's depth
    (its deepest input path), so that every path into one a_in arrives in the same step."""
    depths = {net.depth[c.name] for c in net.graph.consumers(node.name)}
    if len(depths) > 1:
        raise ConversionError(f"node '{node.name}' ({node.op}) feeds neurons at different Lava depths {sorted(depths)}")
    return depths.pop() if depths else net.depth[node.name]


def inputs_depth(net: LavaNetwork, node: Node) -> int:
    """The depth of a node's latest input: where a multi-step chain (token mixing, its rescale) starts."""
    return max(net.depth[src] for src in node.inputs)


# ----------------------------------------------------------------------------------------------- synapses
def synapse(net: LavaNetwork, src: str, target: str, weights: Any, arrive: int | None = None, **kw: Any) -> Any:
    """A synapse process ``target<-src`` reading node ``src``'s output (graded when ``src`` is a relay),
    delayed so that it arrives at depth ``arrive`` (default: ``target``'s depth)."""
    delay = (net.depth[target] if arrive is None else arrive) - net.depth[src] - 1
    graded = src in net.stream_out
    return sparse_synapse(net, out_port(net, src), f"{target}<-{src}", weights, delay=delay, graded=graded, **kw)


def sparse_synapse(
    net: LavaNetwork,
    port: Any,
    name: str,
    weights: Any,
    delay: int,
    graded: bool,
    extra_delays: np.ndarray | None = None,
    **kw: Any,
) -> Any:
    """Sparse, or DelaySparse holding its input ``delay`` more steps (plus ``extra_delays`` per stored synapse, in
    ``weights``' csr order), reading ``port``."""
    from lava.proc.sparse.process import DelaySparse, Sparse

    if delay < 0:
        raise ConversionError(f"Lava synapse '{name}': its input arrives {-delay} step(s) too late")
    kw.update(name=name, num_weight_bits=8, num_message_bits=GRADED_BITS if graded else 0)
    if delay == 0 and extra_delays is None:
        proc = Sparse(weights=weights, **kw)
    else:
        delays = weights.copy()
        delays.data[:] = delay + (0 if extra_delays is None else extra_delays)
        proc = DelaySparse(weights=weights, delays=delays, max_delay=int(delays.data.max(initial=0)), **kw)
    port.connect(proc.s_in)
    net.processes.append(proc)
    return proc


def spike_conv(
    net: LavaNetwork,
    node: Node,
    grid: tuple[int, ...],
    weight: np.ndarray,
    padding: tuple[int, int] = (0, 0),
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
    parts: int = 1,
) -> None:
    """A synapse node as one Lava Conv (weights already scaled: Conv has no exponent) reading its input on
    ``grid``; the input is delayed through a relay when the node's output must arrive later (Conv cannot).

    ``parts`` > 1 (more inputs per neuron than a core receives, ``counting.fan_in_parts``): the Conv computes
    ``parts`` partial sums per output over runs of its input channels (groups x parts groups, the same weights
    regrouped: ``fixedpoint.split_weight``) into a GradedVec relay, and one graded Sparse of ones sums them into
    the output, delayed to arrive in step; one step deeper (the op's lowering says so)."""
    from lava.proc.conv.process import Conv

    src = node.inputs[0]
    graded = src in net.stream_out
    if parts > 1:
        weight = fx.split_weight(np.asarray(weight), groups, parts)
        groups *= parts
        if not graded:  # the 24-bit rule for each partial sum of spikes
            worst = int(np.abs(np.asarray(weight, np.int64)).sum(axis=(1, 2, 3)).max())
            if worst > fx.STATE_MAX - 1:
                raise ConversionError(
                    f"node '{node.name}' ({node.op}): a partial sum reaches {worst:,}, past the 24-bit accumulator"
                )
    proc = Conv(
        weight=np.ascontiguousarray(weight).astype(np.int32),
        weight_exp=0,
        input_shape=grid,
        padding=padding,
        stride=stride,
        dilation=dilation,
        groups=groups,
        num_weight_bits=8,
        num_message_bits=GRADED_BITS if graded else 0,
        name=node.name,
    )
    net.processes.append(proc)
    if parts == 1:
        lag = arrival(net, node) - net.depth[node.name]
        (delayed_spikes(net, src, lag) if lag else out_port(net, src)).reshape(grid).connect(proc.s_in)
        net.synapse_out[node.name] = proc.a_out.reshape(flat(node.shape))
        return
    from lava.proc.graded.process import GradedVec
    from scipy import sparse

    out_port(net, src).reshape(grid).connect(proc.s_in)
    n = int(np.prod(proc.a_out.shape))
    relay = GradedVec(shape=(n,), vth=0, exp=0)
    relay.name = f"{node.name}.partial"  # GradedVec takes no name; check-hw and errors use it
    proc.a_out.reshape((n,)).connect(relay.a_in)
    net.processes.append(relay)
    # relay (position, (G parts + j) og + o) -> output (position, G og + o)
    og = node.shape[-1] // (groups // parts)
    col = np.arange(n)
    position, channel = np.divmod(col, node.shape[-1] * parts)
    g, rest = np.divmod(channel, parts * og)
    row = position * node.shape[-1] + g * og + rest % og
    ones = sparse.csr_matrix((np.ones(n, np.int64), (row, col)), shape=(int(np.prod(node.shape)), n))
    delay = arrival(net, node) - (net.depth[src] + 1) - 1
    net.synapse_out[node.name] = sparse_synapse(
        net, relay.s_out, f"{node.name}.sum", ones, delay=delay, graded=True, weight_exp=0
    ).a_out


def fits_conv(attrs: dict[str, Any]) -> bool:
    """Whether a convolution's geometry fits Lava's Conv fields (each at most CONV_FIELD_MAX)."""
    fields = [attrs["groups"], *attrs["kernel"], *attrs["stride"], *attrs["padding"], *attrs["dilation"]]
    return max(int(f) for f in fields) <= CONV_FIELD_MAX


def conv_matrix(in_shape: Sequence[int], out_shape: Sequence[int], weight: np.ndarray, attrs: dict[str, Any]) -> Any:
    """A convolution (torch cross-correlation, channels-last ``weight`` [C_out, kH, kW, C_in / groups]) as a
    sparse matrix [H' W' C_out, H W C_in] on raster-flattened (h, w, c) maps; zero padding and zero weights
    leave no synapse.

    Built in preallocated int32 arrays (a first pass counts the synapses of each tap): an ImageNet stem's
    224 x 224 x 64 output has 86.7 M synapses, which as int64 lists, their concatenation and the conversion peaked at
    5 GB (check-hw and every Lava build of the network)."""
    from scipy import sparse

    (h, w, c_in), (ho, wo, c_out) = in_shape, out_shape
    (sh, sw), (ph, pw), (dh, dw) = attrs["stride"], attrs["padding"], attrs["dilation"]
    cin_g = weight.shape[-1]
    out_ch = np.arange(c_out)
    first_in = (out_ch // (c_out // attrs["groups"])) * cin_g  # the first input channel of each output's group
    oh, ow = np.meshgrid(np.arange(ho), np.arange(wo), indexing="ij")

    def tap(i: int, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        ih, iw = oh * sh - ph + i * dh, ow * sw - pw + j * dw
        valid = (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w)
        out_pos, in_pos = (oh * wo + ow)[valid], (ih * w + iw)[valid]
        weights = weight[:, i, j, :]  # [C_out, C_in / groups]
        return out_pos, in_pos, weights, weights != 0

    taps = [(i, j) for i in range(weight.shape[1]) for j in range(weight.shape[2])]
    total = 0
    for i, j in taps:
        out_pos, _, _, keep = tap(i, j)
        total += len(out_pos) * int(keep.sum())
    rows, cols = np.empty(total, np.int32), np.empty(total, np.int32)
    vals = np.empty(total, np.result_type(weight.dtype, np.int32) if weight.dtype.kind in "iu" else weight.dtype)
    at = 0
    for i, j in taps:
        out_pos, in_pos, weights, keep = tap(i, j)
        co, ci = np.nonzero(keep)  # the tap's synapses within one position: output channel, input channel in group
        n = len(out_pos) * len(co)
        sl = slice(at, at + n)
        rows[sl] = (out_pos[:, None] * c_out + co[None, :]).ravel()
        cols[sl] = (in_pos[:, None] * c_in + (first_in[co] + ci)[None, :]).ravel()
        vals[sl] = np.broadcast_to(weights[co, ci][None, :], (len(out_pos), len(co))).ravel()
        at += n
    shape = (ho * wo * c_out, h * w * c_in)
    return sparse.coo_matrix((vals, (rows, cols)), shape=shape).tocsr()


def memoryless_lif(size: int, vth: int, name: str) -> Any:
    """A Lava LIF that forgets everything each step (du = dv = 4095: Lava's decay of 4096 - 4096 = 0) and
    spikes iff its summed input a_in > vth: a coincidence detector (vth 1) or a spike relay (vth 0)."""
    from lava.proc.lif.process import LIF

    return LIF(shape=(size,), du=4095, dv=4095, vth=vth, bias_mant=0, bias_exp=0, name=name)


def delayed_spikes(net: LavaNetwork, src: str, lag: int) -> Any:
    """Node ``src``'s spikes ``lag`` steps later, for a process that cannot delay (Conv): an identity
    (Delay)Sparse into a memoryless relay LIF (vth 0: a spike iff its input spiked). One relay per
    (source, lag), shared by its readers."""
    from scipy import sparse

    name = f"{src}.delay{lag}"
    if name not in net.spike_out:
        n = int(np.prod(net.graph.nodes[src].shape))
        relay = memoryless_lif(n, 0, name)
        identity = sparse.identity(n, dtype=np.int64, format="csr")
        sparse_synapse(net, out_port(net, src), f"{name}<-{src}", identity, delay=lag - 1, graded=False, weight_exp=0)
        net.processes[-1].a_out.connect(relay.a_in)
        net.processes.append(relay)
        net.spike_out[name] = relay.s_out
    return net.spike_out[name]


# ------------------------------------------------------------------------- what the non-resetting neurons need
def check_pipeline_fill(net: LavaNetwork, node: Node) -> None:
    """A non-resetting process (sigma, sigma_delta): its ``warmup`` equals its Lava depth, the zero-input steps the
    executors replay before its first sample, and no neuron before it resets per sample while firing during that
    fill (a LIF with a bias would reach this one unreplayed)."""
    if node.attrs["warmup"] != net.depth[node.name]:
        raise ConversionError(
            f"node '{node.name}' ({node.op}): warmup = {node.attrs['warmup']}, but it sits at Lava depth "
            f"{net.depth[node.name]}; the reference replays that many zero-input steps"
        )
    graph = net.graph
    todo, seen = list(node.inputs), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        src = graph.nodes[name]
        record = kernel(src.op)
        # a non-resetting process without warmup (Delta) reads the input directly: it has no fill to replay
        if record.state_bytes(src) and not record.warmup(src) and LOWERINGS.get(src.op, name).resets:
            raise ConversionError(
                f"node '{node.name}' ({node.op}) reads '{name}' ({src.op}), a neuron that resets "
                f"per sample: not supported on Lava (its spikes while the pipeline fills)"
            )
        todo += src.inputs


# ------------------------------------------------------------------- the Lava processes several lowerings build
# One record per class (runtime/lava/facts.py): check-hw places and sizes every built process from it and a
# run report lists the state it holds. State widths: the LavaPyType precisions of Lava 0.10's fixed-point
# models (lava/proc/<name>/models.py).
PROCESSES.declare(
    # the synapses of conv, dense, add, attention, dendritic, maxpool, recurrent_lif and the delay relays
    # (a_buff: one accumulator per output and pending delay step)
    ProcessFacts(
        "Sparse",
        Role.SYNAPSE,
        lava_model("sparse", "PySparseModelBitAcc"),
        {"a_buff": 16},
        "s_in",
        "weights",
        WeightStorage.PER_SYNAPSE,
    ),
    ProcessFacts(
        "DelaySparse",
        Role.SYNAPSE,
        lava_model("sparse", "PyDelaySparseModelBitAcc"),
        {"a_buff": 16},
        "s_in",
        "weights",
        WeightStorage.PER_SYNAPSE,
        delays="delays",
    ),
    ProcessFacts(
        "Conv",
        Role.SYNAPSE,
        lava_model("conv", "PyConvModelFixed"),
        {"a_buf": 24},
        "s_in",
        "weight",
        WeightStorage.SHARED_KERNEL,
    ),
    # lif and recurrent_lif (LIFReset), maxpool (LIFReset vth 0); the memoryless relay / coincidence LIFs
    # (du = dv = 4095) of the delay relays, attention and dendritic
    ProcessFacts(
        "LIFReset",
        Role.NEURON,
        lava_model("lif", "PyLifResetModelBitAcc"),
        {"u": 24, "v": 24},
        "a_in",
        decays=("du", "dv"),
    ),
    ProcessFacts(
        "LIF", Role.NEURON, lava_model("lif", "PyLifModelBitAcc"), {"u": 24, "v": 24}, "a_in", decays=("du", "dv")
    ),
    # add, split attention: the relay that sends its sum as a graded spike
    ProcessFacts("GradedVec", Role.RELAY, lava_model("graded", "PyGradedVecModelFixed"), {"v": 24}, "a_in"),
)
