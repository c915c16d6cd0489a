"""The Lava lowering of each IR op: which Lava processes realise it and how many steps it delays.

One ``LavaLowering`` per op, registered by op name in ``LOWERINGS`` (``spikeport.ir.registry``);
``backend.build_network`` and ``backend.depths`` look each node's op up here. Standard Lava processes
wherever one exists:

    input            io.source.RingBuffer of 16-bit graded pixels (host)
    conv on pixels   lava.proc.sparse.Sparse reading the 16-bit graded pixels: the convolution unrolled into
                     a matrix (each synapse stored: Loihi 2's Conv shares its kernel but applies no weight
                     exponent, lava#803, and the first layer floors); weights 2 * mantissa, exponent - 1
    conv on spikes   lava.proc.conv.Conv (weights pre-scaled by 2**weight_exp, spatially flipped:
                     Lava's Conv convolves, torch's correlates; the IR's (H, W, C) is Lava's (X, Y, Z));
                     a Sparse where a field exceeds CONV_FIELD_MAX (fits_conv)
    dense            lava.proc.conv.Conv 1 x 1 over the token grid (W stored once) on spikes and relay sums;
                     else (sigma-delta input, a lagged graded input) Sparse / DelaySparse, block-diagonal over
                     the tokens (kron(I_N, W)), weights 2 * mantissa with exponent - 1 (Lava's 8-bit
                     mixed-sign mode drops one LSB)
    attention        N <= 64: chip-native (docs/lowering.md section 9): fan-out Sparse -> coincidence LIF per
                     (c, c') of a head -> all-ones token Conv -> ProdNeuron (q gate) -> rescale Sparse, in
                     chains of heads; three steps deep. Beyond: spikeport AttentionCore (host)
    dendritic        chip-native (docs/lowering.md): permutation Sparse -> coincidence LIF -> token-mixing Conv
                     (groups = H) -> ProdNeuron (q gate) -> rescale Sparse per out_exp; three steps deep
    lif              lava.proc.lif.LIFReset (reset at the first step of every sample window)
    maxpool          Conv(ones, stride) + LIFReset(vth 0): a spike iff any input in the window spiked (a
                     Sparse window past CONV_FIELD_MAX channels)
    add              lava.proc.graded.GradedVec relay (vth 0: sends the sum as a graded spike), fed by one
                     identity Sparse / DelaySparse per input; consumers read it with graded synapses
                     (num_message_bits 24). An add read only by the readout has no relay.
    readout          host, the same fixedpoint.readout as the reference, on the recorded sources
    sigma_delta      lava.proc.sdn.SigmaDelta (ReLU); its graded s_out is read with graded synapses. It has
                     no reset interval: its state runs on from one sample to the next
    rf               lava.proc.rf.RF / lava.proc.rf_iz.RF_IZ, a_real_in / a_imag_in from its two synapses; no
                     reset interval either
    delta            lava.proc.sdn.Delta reading the input RingBuffer's integers (kind 'graded': netx's SDNN input
                     layer) on its a_in; graded s_out, no reset
    sigma            lava.proc.sdn.Sigma (netx's ``sigma_output`` layer): sends the running sum of its a_in; no reset
    recurrent_lif    LIFReset (as lif) plus a Sparse from its s_out back to its a_in (kron(I_N, 2 W), exponent
                     weight_exp - 1): the synapse's step of delay is the recurrence's t - 1. Its pending sum
                     outlives the reset, so it runs one sample per stream

Every synapse (Sparse, Conv, cores, a relay's identity synapses) delays by one step, neurons
(LIF, GradedVec, ProdNeuron) by none: each record's ``delay`` says which its op is. A synapse node's output
arrives at the depth of the neuron that reads it (``arrival``): DelaySparse holds it, and a Conv, which
cannot delay, reads its input through a memoryless relay LIF (``delayed_spikes``). A new op is one more
``LOWERINGS.add`` here (and its kernel record in ``spikeport.ir.kernels``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from spikeport.counting import CONV_FIELD_MAX
from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import kernel
from spikeport.ir.kernels.attention import head_chains, on_chip as attention_on_chip
from spikeport.ir.ops import value_kind
from spikeport.ir.registry import Registry
from spikeport.runtime.executor import GraphExecutor
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role, WeightStorage
from spikeport.value_kinds import ANALOG, GRADED, SPIKES

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


# ------------------------------------------------------------------------------------- per-op lowerings
def _input(net: LavaNetwork, node: Node) -> None:
    from lava.proc.io.source import RingBuffer

    assert net.source_data is not None  # build_network sets it before lowering any node
    net.source = RingBuffer(data=net.source_data.astype(np.int32))
    net.processes.append(net.source)
    net.host_only.append(node.name)
    if node.attrs.get("kind") == "spikes":  # netx imports: spikes drive Conv/Sparse directly
        net.spike_out[node.name] = net.source.s_out
    else:  # pixels as graded spikes (16-bit payload): read with graded synapses
        net.stream_out[node.name] = net.source.s_out


def _conv(net: LavaNetwork, node: Node) -> None:

    graph, a, q, src = net.graph, node.attrs, node.params, node.inputs[0]
    if value_kind(graph, src) == ANALOG or not fits_conv(a):
        # graded pixels (Conv applies no exponent), or fields past Lava's Conv (depthwise over > 127
        # channels): the convolution unrolled into a Sparse, each synapse stored
        weights = conv_matrix(graph.nodes[src].shape, node.shape, 2 * q["weight_mant"].astype(np.int64), a)
        # weights 2 * mantissa with exponent - 1, as for dense: Lava's 8-bit mixed-sign mode drops one LSB;
        # Sparse applies its exponent as a floor shift of the sum (Conv has no exponent: lava#803)
        net.synapse_out[node.name] = _synapse(
            net, src, node.name, weights, arrive=arrival(net, node), weight_exp=a["weight_exp"] - 1
        ).a_out
        return
    if a["weight_exp"] < 0:
        raise ConversionError(f"node '{node.name}': spike-driven conv with weight_exp < 0 has no Lava mapping")
    w = (q["weight_mant"].astype(np.int64) << a["weight_exp"])[:, ::-1, ::-1, :]
    geometry = {k: tuple(a[k]) for k in ("padding", "stride", "dilation")}
    _spike_conv(net, node, tuple(graph.nodes[src].shape), w, groups=a["groups"], **geometry)


def _spike_conv(
    net: LavaNetwork,
    node: Node,
    grid: tuple[int, ...],
    weight: np.ndarray,
    padding: tuple[int, int] = (0, 0),
    stride: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    groups: int = 1,
) -> None:
    """A synapse node as one Lava Conv (weights already scaled: Conv has no exponent) reading its input on
    ``grid``; the input is delayed through a relay when the node's output must arrive later (Conv cannot)."""
    from lava.proc.conv.process import Conv

    src = node.inputs[0]
    proc = Conv(
        weight=np.ascontiguousarray(weight).astype(np.int32),
        weight_exp=0,
        input_shape=grid,
        padding=padding,
        stride=stride,
        dilation=dilation,
        groups=groups,
        num_weight_bits=8,
        num_message_bits=GRADED_BITS if src in net.stream_out else 0,
        name=node.name,
    )
    lag = arrival(net, node) - net.depth[node.name]
    (delayed_spikes(net, src, lag) if lag else out_port(net, src)).reshape(grid).connect(proc.s_in)
    net.synapse_out[node.name] = proc.a_out.reshape(flat(node.shape))
    net.processes.append(proc)


def _dense(net: LavaNetwork, node: Node) -> None:
    """The token-wise layer as a 1 x 1 Conv over the token grid (its kernel W stored once per core, as every
    Conv's) where the sum needs no floor (weight_exp >= 0: Conv applies no exponent, lava#803); otherwise one
    (Delay)Sparse with block-diagonal weights kron(I_N, W), weights 2 * mantissa with exponent - 1. Graded when
    it reads a relay."""
    from scipy import sparse

    a, src = node.attrs, node.inputs[0]
    w = node.params["weight_mant"].astype(np.int64)  # [C_out, C_in]
    lag = arrival(net, node) - net.depth[node.name]
    graded = src in net.stream_out
    # a graded input cannot be delayed through a spike relay; sigma-delta inputs (netx imports) keep the
    # Sparse they were verified with
    conv_ok = (not graded or (src in net.relays and not lag)) and "delay" not in node.params
    if a["weight_exp"] >= 0 and conv_ok:
        _spike_conv(net, node, token_grid(net.graph.nodes[src].shape), (w << a["weight_exp"])[:, None, None, :])
        return
    tokens = int(np.prod(node.shape[:-1]))
    block = sparse.kron(sparse.identity(tokens, dtype=np.int64, format="csr"), sparse.csr_matrix(2 * w), format="csr")
    block.eliminate_zeros()
    delays = None
    if "delay" in node.params:  # netx's axonal delays, on top of the alignment delay, per synapse
        ident = sparse.identity(tokens, dtype=np.int64, format="csr")
        per_synapse = sparse.kron(ident, sparse.csr_matrix(node.params["delay"].astype(np.int64) + 1), format="csr")
        delays = np.asarray(per_synapse[block.nonzero()]).ravel() - 1  # +1 -1: a delay of 0 is not a sparse zero
    net.synapse_out[node.name] = _synapse(
        net, src, node.name, block, arrive=arrival(net, node), weight_exp=a["weight_exp"] - 1, extra_delays=delays
    ).a_out


def token_grid(shape: Sequence[int]) -> tuple[int, int, int]:
    """A token map as Lava's (X, Y, Z) Conv input: (H, W, C) as is, a token sequence (N, C) as (N, 1, C)."""
    if len(shape) == 3:
        return (int(shape[0]), int(shape[1]), int(shape[2]))
    return (int(np.prod(shape[:-1])), 1, int(shape[-1]))


def _attention(net: LavaNetwork, node: Node) -> None:
    """SSA / causal attention. Chip-native where its token kernel fits one Conv (N <= 64, docs/lowering.md):
    one coincidence pair per (c, c') of a head, u = k[c] AND v[c'], summed over the tokens by a Conv of ones
    (all lags for SSA, lags >= 0 for causal) into S[n, c, c'], gated by q[n, c] in a ProdNeuron, then one
    rescale Sparse sums over c (2 out_mant, exponent out_exp - 2); three steps deep. Otherwise spikeport's
    AttentionCore on the host."""
    a = node.attrs
    if not attention_on_chip(node):
        from spikeport.runtime.lava.procs.processes import AttentionCore

        proc = AttentionCore(
            shape=node.shape,
            heads=a["heads"],
            variant=a["variant"],
            out_mant=a["out_mant"],
            out_exp=a["out_exp"],
            name=node.name,
        )
        _core(net, node, proc)
        return
    dh, tokens = node.shape[-1] // a["heads"], int(np.prod(node.shape[:-1]))
    kernel = np.ones((1, tokens), np.int64)
    chains = head_chains(node)
    ports = []
    for first, last in chains:
        h, i, j = (x.ravel() for x in np.meshgrid(np.arange(first, last), np.arange(dh), np.arange(dh), indexing="ij"))
        layout = PairLayout(rows=h.size, groups=1, k=h * dh + i, v=h * dh + j, q=h * dh + i, out=h * dh + j)
        part = "" if len(chains) == 1 else f".heads{first}-{last - 1}"
        product = _token_mixing(net, node, layout, kernel, full=a["variant"] == "ssa", part=part)
        weight = np.full(layout.size, 2 * a["out_mant"])
        if len(chains) == 1:
            ports.append(_rescale(net, node, product, layout, weight, a["out_exp"] - 2))
        else:
            ports.append(_chain_sum(net, node, product, layout, weight, a["out_exp"] - 2, part, first * dh))
    net.synapse_out[node.name] = ports


def _chain_sum(
    net: LavaNetwork, node: Node, product: Any, layout: PairLayout, weight: np.ndarray, exp: int, part: str, c0: int
) -> Any:
    """One chain of a split attention: its rescale sums into a GradedVec relay over the chain's own channels
    (so the attention LIF reads N C_chain relay neurons, not the chain's N H d_h^2 products), then an identity
    graded Sparse places them among all C channels; one step deeper than an unsplit attention."""
    from lava.proc.graded.process import GradedVec
    from scipy import sparse

    tokens, channels = int(np.prod(node.shape[:-1])), node.shape[-1]
    width = int(layout.out.max()) + 1 - c0  # the chain's channels: c0 .. c0 + width - 1
    local = PairLayout(layout.rows, layout.groups, layout.k, layout.v, layout.q, layout.out - c0)
    relay = GradedVec(shape=(tokens * width,), vth=0, exp=0)
    relay.name = f"{node.name}{part}.sum"  # GradedVec takes no name; check-hw and errors use it
    _rescale(net, node, product, local, weight, exp, part=part, channels=width, delay=0).connect(relay.a_in)
    net.processes.append(relay)
    rows = (np.arange(tokens)[:, None] * channels + c0 + np.arange(width)[None, :]).ravel()
    place = sparse.csr_matrix(
        (np.ones(rows.size, np.int64), (rows, np.arange(rows.size))), shape=(tokens * channels, rows.size)
    )
    start = inputs_depth(net, node)
    proc = _sparse(
        net,
        relay.s_out,
        f"{node.name}{part}.place",
        place,
        delay=arrival(net, node) - (start + 4),
        graded=True,
        weight_exp=0,
    )
    return proc.a_out


def fits_conv(attrs: dict[str, Any]) -> bool:
    """Whether a convolution's geometry fits Lava's Conv fields (each at most CONV_FIELD_MAX)."""
    fields = [attrs["groups"], *attrs["kernel"], *attrs["stride"], *attrs["padding"], *attrs["dilation"]]
    return max(int(f) for f in fields) <= CONV_FIELD_MAX


def _core(net: LavaNetwork, node: Node, proc: Any) -> None:
    """A host core reading q, k, v (in that order) and feeding its LIF's a_in."""
    for port, src in zip((proc.q_in, proc.k_in, proc.v_in), node.inputs, strict=True):
        out_port(net, src).connect(port)
    net.synapse_out[node.name] = proc.a_out
    net.processes.append(proc)
    net.host_only.append(node.name)


@dataclass(frozen=True)
class PairLayout:
    """The coincidence pairs of a q-gated token mixing, per token: pair p = row * groups + group reads
    k[k[p]] AND v[v[p]], is gated by q[q[p]] and adds into output channel out[p]. Pairs of one ``group``
    share a token kernel (a Conv group: Lava's Conv takes at most CONV_FIELD_MAX groups)."""

    rows: int
    groups: int
    k: np.ndarray  # [rows * groups] channel indices
    v: np.ndarray
    q: np.ndarray
    out: np.ndarray

    @property
    def size(self) -> int:
        return self.rows * self.groups

    def select(self, channel: np.ndarray, tokens: int, channels: int) -> Any:
        """The 0/1 matrix [tokens * size, tokens * channels] routing channel[p] of each token to its pair p."""
        from scipy import sparse

        rows = np.arange(tokens * self.size)
        cols = (rows // self.size) * channels + np.tile(channel, tokens)
        return sparse.csr_matrix((np.ones(len(rows), np.int64), (rows, cols)), shape=(len(rows), tokens * channels))


def _token_mixing(
    net: LavaNetwork, node: Node, layout: PairLayout, kernel: Any, full: bool = False, part: str = ""
) -> Any:
    """The chip-native core of a q-gated token mixing (dendritic, SSA, causal; docs/lowering.md): coincidence
    LIF (k AND v per pair) -> token-mixing Conv (``kernel`` [groups, taps] along the raster tokens; ``full``:
    the anti-causal half mirrors it) -> ProdNeuron gated by q. Returns the product's graded s_out, two steps
    after the latest input (the rescale synapse is the third). ``part`` names one of several such chains."""
    from lava.proc.conv.process import Conv
    from lava.proc.prodneuron.process import ProdNeuron

    q, k, v = node.inputs
    tokens, channels = int(np.prod(node.shape[:-1])), node.shape[-1]
    taps, size = kernel.shape[1], tokens * layout.size
    if max(layout.groups, 2 * taps - 1) > CONV_FIELD_MAX:
        raise ConversionError(
            f"node '{node.name}' ({node.op}): its token-mixing Conv needs {layout.groups} groups and a "
            f"{2 * taps - 1}-lag kernel; Lava's Conv holds at most {CONV_FIELD_MAX} of each (8-bit fields)"
        )
    start = inputs_depth(net, node)

    coincidence = memoryless_lif(size, 1, f"{node.name}{part}.coincidence")  # a_in 2 (k and v) > vth 1
    net.processes.append(coincidence)
    for src, channel in ((k, layout.k), (v, layout.v)):
        select = layout.select(channel, tokens, channels)
        _synapse(net, src, coincidence.name, select, arrive=start + 1, weight_exp=0).a_out.connect(coincidence.a_in)

    # Lava's Conv convolves (flips its kernel): w[taps - 1 + m] = K[m] puts lag m on token n - m, and
    # w[taps - 1 - m] on token n + m (zero for a causal kernel), so symmetric padding keeps N outputs.
    # 2 K: the 8-bit mixed-sign convention of every spikeport synapse (even weights), undone downstream.
    weight = np.zeros((layout.groups, 2 * taps - 1, 1, 1), np.int32)
    weight[:, taps - 1 :, 0, 0] = 2 * kernel
    if full:
        weight[:, : taps - 1, 0, 0] = 2 * kernel[:, :0:-1]
    grid = (tokens, layout.rows, layout.groups)  # Lava's (X, Y, Z): Z is the Conv group, X the token axis
    mix = Conv(
        weight=weight,
        weight_exp=0,
        input_shape=grid,
        padding=(taps - 1, 0),
        stride=(1, 1),
        dilation=(1, 1),
        groups=layout.groups,
        num_weight_bits=8,
        num_message_bits=0,
        name=f"{node.name}{part}.token_mix",
    )
    coincidence.s_out.reshape(grid).connect(mix.s_in)

    product = ProdNeuron(shape=(size,), vth=0, exp=0)
    product.name = f"{node.name}{part}.product"  # ProdNeuron takes no name; check-hw and errors use it
    mix.a_out.reshape((size,)).connect(product.a_in1)
    q_select = layout.select(layout.q, tokens, channels)
    _synapse(net, q, product.name, q_select, arrive=start + 2, weight_exp=0).a_out.connect(product.a_in2)
    net.processes += [mix, product]
    return product.s_out


def _rescale(
    net: LavaNetwork,
    node: Node,
    product: Any,
    layout: PairLayout,
    weight: np.ndarray,
    exp: int,
    part: str = "",
    channels: int | None = None,
    delay: int | None = None,
) -> Any:
    """A graded Sparse summing the gated products of ``layout``'s pairs into their output channels
    (``weight`` [size] per pair, exponent ``exp``), arriving at the attention LIF's depth (or after ``delay``
    steps, into ``channels`` outputs per token when a chain's relay reads it)."""
    from scipy import sparse

    tokens = int(np.prod(node.shape[:-1]))
    channels = node.shape[-1] if channels is None else channels
    cols = np.arange(tokens * layout.size)
    rows = (cols // layout.size) * channels + np.tile(layout.out, tokens)
    vals = np.tile(weight.astype(np.int64), tokens)
    keep = vals != 0
    weights = sparse.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(tokens * channels, len(cols)))
    start = inputs_depth(net, node)
    name = f"{node.name}{part}.rescale_exp{exp}"
    delay = arrival(net, node) - (start + 3) if delay is None else delay
    proc = _sparse(net, product, name, weights, delay=delay, graded=True, weight_exp=exp)
    return proc.a_out


def _dendritic(net: LavaNetwork, node: Node) -> None:
    """The chip-native dendritic attention (docs/lowering.md): ``_token_mixing`` with one pair per channel
    (u = k AND v), laid out (token, channel in head, head) so that each head's kernel K is one Conv group,
    then one rescale Sparse per distinct out_exp (graded: 2 out_mant[h], exponent out_exp[h] - 2) into the
    attention LIF; three steps deep."""
    a = node.attrs
    channels, heads = node.shape[-1], a["heads"]
    dh = channels // heads
    j, h = (x.ravel() for x in np.meshgrid(np.arange(dh), np.arange(heads), indexing="ij"))
    channel = h * dh + j
    layout = PairLayout(rows=dh, groups=heads, k=channel, v=channel, q=channel, out=channel)
    product = _token_mixing(net, node, layout, node.params["kernel_mant"].astype(np.int64))
    out_mant, out_exp = np.asarray(a["out_mant"]), np.asarray(a["out_exp"])
    net.synapse_out[node.name] = [
        _rescale(net, node, product, layout, np.where(out_exp[h] == e, 2 * out_mant[h], 0), int(e) - 2)
        for e in sorted(set(out_exp.tolist()))
    ]


def _lif(net: LavaNetwork, node: Node) -> None:
    from lava.proc.lif.process import LIFReset

    a, R = node.attrs, net.R
    channels = node.shape[-1]
    bias = np.tile(node.params["bias_mant"].astype(np.int32), int(np.prod(node.shape)) // channels)
    proc = LIFReset(
        shape=flat(node.shape),
        du=a["du"],
        dv=a["dv"],
        vth=a["vth"],
        bias_mant=bias,
        bias_exp=a["bias_exp"],
        reset_interval=R,
        reset_offset=(1 + net.depth[node.name]) % R,
        name=node.name,
    )
    for port in synapse_ports(net, node.inputs):
        port.connect(proc.a_in)
    net.spike_out[node.name] = proc.s_out
    net.processes.append(proc)


def _maxpool(net: LavaNetwork, node: Node) -> None:
    from lava.proc.conv.process import Conv
    from lava.proc.lif.process import LIFReset

    a, src, graph = node.attrs, node.inputs[0], net.graph
    channels = node.shape[-1]
    k = a["kernel"]
    ones = np.zeros((channels, k, k, 1), np.int32) + 1
    lif = LIFReset(
        shape=flat(node.shape),
        du=4095,
        dv=4095,
        vth=0,
        bias_mant=0,
        bias_exp=0,
        reset_interval=net.R,
        reset_offset=(1 + net.depth[node.name]) % net.R,
        name=node.name,
    )
    net.spike_out[node.name] = lif.s_out
    window = dict(stride=(a["stride"],) * 2, padding=(a["padding"],) * 2, dilation=(1, 1), groups=channels)
    if not fits_conv({**window, "kernel": (k, k)}):  # one window synapse per input, each stored
        weights = conv_matrix(graph.nodes[src].shape, node.shape, 2 * ones, window)
        _synapse(net, src, node.name, weights, weight_exp=-1).a_out.connect(lif.a_in)
        net.processes.append(lif)
        return
    conv = Conv(
        weight=ones,
        weight_exp=0,
        input_shape=tuple(graph.nodes[src].shape),
        padding=(a["padding"],) * 2,
        stride=(a["stride"],) * 2,
        dilation=(1, 1),
        groups=channels,
        num_weight_bits=8,
        name=f"{node.name}.window",
    )
    out_port(net, src).reshape(graph.nodes[src].shape).connect(conv.s_in)
    conv.a_out.reshape(flat(node.shape)).connect(lif.a_in)
    net.processes += [conv, lif]


def _add(net: LavaNetwork, node: Node) -> None:
    """A relayed residual sum as a GradedVec (vth 0: it sends its a_in, the sum) fed by one identity
    synapse per input, delayed so that all inputs arrive in the same step. An add only the host readout
    reads has no process (the host sums the recorded spikes)."""
    if node.name not in net.relays:
        return
    from lava.proc.graded.process import GradedVec
    from scipy import sparse

    n = int(np.prod(node.shape))
    relay = GradedVec(shape=(n,), vth=0, exp=0)
    relay.name = node.name  # GradedVec takes no name; check-hw and errors use it
    identity = sparse.identity(n, dtype=np.int64, format="csr")
    for src in node.inputs:
        _synapse(net, src, node.name, identity, weight_exp=0).a_out.connect(relay.a_in)
    net.processes.append(relay)
    net.stream_out[node.name] = relay.s_out


def _sigma_delta(net: LavaNetwork, node: Node) -> None:
    from lava.proc.sdn.process import ActivationMode, SigmaDelta

    a = node.attrs
    if a["warmup"] != net.depth[node.name]:
        raise ConversionError(
            f"node '{node.name}' (sigma_delta): warmup = {a['warmup']}, but it sits at Lava depth "
            f"{net.depth[node.name]}; the reference replays that many zero-input steps"
        )
    _no_resetting_neuron_before(net.graph, node)
    channels = node.shape[-1]
    bias = np.tile(node.params["bias"].astype(np.int32), int(np.prod(node.shape)) // channels)
    proc = SigmaDelta(
        shape=flat(node.shape),
        vth=a["vth"],
        bias=bias,
        act_mode=ActivationMode.RELU,
        cum_error=bool(a["cum_error"]),
        spike_exp=a["spike_exp"],
        state_exp=a["state_exp"],
        name=node.name,
    )
    for port in synapse_ports(net, node.inputs):
        port.connect(proc.a_in)
    net.stream_out[node.name] = proc.s_out  # graded: its readers take num_message_bits
    net.processes.append(proc)


def _rf(net: LavaNetwork, node: Node) -> None:
    """Lava's RF (iz 0) or RF_IZ (iz 1), its real input from the node's first synapse, the imaginary from its
    second. The process derives its integer Vars from (period, alpha, vth) floats; the node's integers are
    written over them (what lava-dl's netx loader computes is the importer's business)."""
    from lava.proc.rf.process import RF
    from lava.proc.rf_iz.process import RF_IZ

    a = node.attrs
    proc = (RF_IZ if a["iz"] else RF)(
        shape=flat(node.shape), period=4, alpha=0.0, state_exp=0, decay_bits=0, vth=0, name=node.name
    )
    for var, key in ((proc.sin_decay, "sin_decay"), (proc.cos_decay, "cos_decay"), (proc.decay_bits, "decay_bits")):
        var.init = np.array([a[key]])
    proc.state_exp.init, proc.vth.init = np.array([a["state_exp"]]), np.array([a["vth"]])
    for port, src in zip((proc.a_real_in, proc.a_imag_in), node.inputs, strict=True):
        for out in synapse_ports(net, [src]):
            out.connect(port)
    net.spike_out[node.name] = proc.s_out
    net.processes.append(proc)


def _delta(net: LavaNetwork, node: Node) -> None:
    """Lava's Delta encoder reading the input RingBuffer's integers on its a_in (netx's SDNN input layer)."""
    from lava.proc.sdn.process import Delta

    a = node.attrs
    proc = Delta(
        shape=flat(node.shape),
        vth=a["vth"],
        cum_error=bool(a["cum_error"]),
        spike_exp=a["spike_exp"],
        state_exp=a["state_exp"],
    )
    proc.name = node.name  # Delta takes no name; check-hw and errors use it
    for src in node.inputs:
        out_port(net, src).connect(proc.a_in)
    net.stream_out[node.name] = proc.s_out  # graded: its readers take num_message_bits
    net.processes.append(proc)


def _sigma(net: LavaNetwork, node: Node) -> None:
    """Lava's Sigma decoder (netx's ``sigma_output`` layer): it sends the running sum of its a_in."""
    from lava.proc.sdn.process import Sigma

    if node.attrs["warmup"] != net.depth[node.name]:
        raise ConversionError(
            f"node '{node.name}' (sigma): warmup = {node.attrs['warmup']}, but it sits at Lava depth "
            f"{net.depth[node.name]}; the reference replays that many zero-input steps"
        )
    _no_resetting_neuron_before(net.graph, node)
    proc = Sigma(shape=flat(node.shape))
    proc.name = node.name  # Sigma takes no name; check-hw and errors use it
    for port in synapse_ports(net, node.inputs):
        port.connect(proc.a_in)
    net.stream_out[node.name] = proc.s_out
    net.processes.append(proc)


def _recurrent_lif(net: LavaNetwork, node: Node) -> None:
    """A LIF group (``_lif``: LIFReset) and its recurrent synapse: a Sparse from the group's s_out back to its own
    a_in, block-diagonal over the tokens (kron(I_N, 2 W), exponent weight_exp - 1, as ``_dense``). A synapse sends
    what it received one step later, so the group reads its spikes of the previous step."""
    from scipy import sparse

    _silent_before_its_input(net, node)
    _lif(net, node)
    group = net.processes[-1]
    tokens = int(np.prod(node.shape[:-1]))
    w = sparse.csr_matrix(2 * node.params["weight_mant"].astype(np.int64))
    block = sparse.kron(sparse.identity(tokens, dtype=np.int64, format="csr"), w, format="csr")
    block.eliminate_zeros()
    if block.nnz:  # no recurrent weight: a plain LIF group
        loop = _sparse(
            net,
            group.s_out,
            f"{node.name}<-{node.name}",
            block,
            delay=0,
            graded=False,
            weight_exp=node.attrs["weight_exp"] - 1,
        )
        loop.a_out.connect(group.a_in)


def _silent_before_its_input(net: LavaNetwork, node: Node) -> None:
    """A group d steps deep runs d steps on Lava before its sample's first input reaches it, and resets only then:
    a spike it sent in the last of them would reach it again through its recurrent synapse in the sample's first
    step, where the reference has no spike before the first step. So the group and everything before it must stay
    silent on zero input for d steps from zero state (they do unless a bias drives them), checked here by the
    reference's own steps."""
    graph = net.graph
    cone, todo = {}, [node.name]
    while todo:
        name = todo.pop()
        if name not in cone:
            cone[name] = graph.nodes[name]
            todo += graph.nodes[name].inputs
    steps = net.depth[node.name]
    before = replace(graph, nodes={n: cone[n] for n in graph.order if n in cone}, T=steps)
    (source,) = [n for n in before.order if not before.nodes[n].inputs]
    fed = value_kind(graph, source) in (SPIKES, GRADED)  # spikes / integers [S, T, ...], else pixels [S, ...]
    zeros = np.zeros((1, *((steps,) if fed else ()), *graph.nodes[source].shape))
    fired: list[str] = []

    def watch(t: int, name: str, out: Any, extra: dict[str, Any]) -> None:
        if not fired and np.any(np.asarray(out)):
            fired.append(name)

    GraphExecutor(before).run(zeros, watch, watch)
    if fired:
        raise ConversionError(
            f"node '{node.name}' (recurrent_lif): on Lava it runs {steps} step(s) before its input arrives and "
            f"'{fired[0]}' sends values then without any input (a bias drives it); the group's recurrent synapse "
            "would carry those steps' spikes into the sample, which the reference does not: not supported on Lava"
        )


def _no_resetting_neuron_before(graph: Graph, node: Node) -> None:
    """The executors replay the pipeline fill of non-resetting processes only; a neuron that resets per
    sample but fires during the fill (a LIF with a bias) would reach this one unreplayed."""
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


def _on_host(net: LavaNetwork, node: Node) -> None:
    """Computed on the host from recorded spikes: no Lava process."""


LOWERINGS.add("input", LavaLowering(_input, steps(0), summary="host RingBuffer of graded pixels (I/O)"))
LOWERINGS.add("conv", LavaLowering(_conv, steps(1), summary="Conv (spikes) / graded Sparse (pixels)"))
LOWERINGS.add(
    "dense",
    LavaLowering(_dense, steps(1), summary="1x1 Conv over the tokens (weight_exp >= 0), else Sparse kron(I_N, W)"),
)
LOWERINGS.add(
    "attention",
    LavaLowering(
        _attention,
        lambda node, relays: (4 if len(head_chains(node)) > 1 else 3) if attention_on_chip(node) else 1,
        summary="chip-native for N <= 64: coincidence LIF per (c, c') -> Conv of ones over the tokens -> ProdNeuron "
        "(q gate) -> rescale Sparse; host AttentionCore beyond",
    ),
)
LOWERINGS.add(
    "dendritic",
    LavaLowering(
        _dendritic,
        steps(3),
        summary="chip-native: coincidence LIF -> token-mixing Conv (K_m = C^T A^m Gamma) -> ProdNeuron (q gate) "
        "-> rescale Sparse per out_exp",
    ),
)
LOWERINGS.add("lif", LavaLowering(_lif, steps(0), summary="LIFReset"))
LOWERINGS.add("maxpool", LavaLowering(_maxpool, steps(1), summary="Conv(ones) + LIFReset(vth 0)"))
LOWERINGS.add(
    "add",
    LavaLowering(
        _add,
        lambda node, relays: int(node.name in relays),  # identity synapses
        relay_if_read=True,
        summary="GradedVec relay fed by identity (Delay)Sparse",
    ),
)
LOWERINGS.add("readout", LavaLowering(_on_host, steps(0), on_host=True, summary="host readout (I/O)"))
LOWERINGS.add("sigma_delta", LavaLowering(_sigma_delta, steps(0), resets=False, summary="SigmaDelta"))
LOWERINGS.add("rf", LavaLowering(_rf, steps(0), resets=False, summary="RF / RF_IZ (resonate-and-fire)"))
LOWERINGS.add("delta", LavaLowering(_delta, steps(0), resets=False, summary="Delta (encoder of graded inputs)"))
LOWERINGS.add("sigma", LavaLowering(_sigma, steps(0), resets=False, summary="Sigma (decoder: running sum)"))
# resets=False: the recurrent synapse's pending sum is not cleared with the group's u and v
LOWERINGS.add(
    "recurrent_lif",
    LavaLowering(_recurrent_lif, steps(0), resets=False, summary="LIFReset + Sparse from its s_out to its a_in"),
)


# ------------------------------------------------------------------- the Lava processes these lowerings build
# One record per class (runtime/lava/facts.py): check-hw places and sizes every built process from it and a
# run report lists the state it holds. State widths: the LavaPyType precisions of Lava 0.10's fixed-point
# models (lava/proc/<name>/models.py) and of spikeport's own (runtime/lava/procs/processes.py).
_LAVA = "lava 0.10 lava/proc/{}/models.py ({})"
PROCESSES.declare(
    # input
    ProcessFacts(
        "RingBuffer",
        Role.HOST_INPUT,
        "lava 0.10 lava/proc/io/source.py",
        host_only="host I/O (lava.proc.io): on Loihi 2 the input needs a host-to-chip adapter "
        "(eio.spike.PyToNxAdapter) or an embedded-IO process",
    ),
    # conv, dense, add, attention, dendritic, maxpool: their synapses (a_buff: one accumulator per output and
    # pending delay step)
    ProcessFacts(
        "Sparse",
        Role.SYNAPSE,
        _LAVA.format("sparse", "PySparseModelBitAcc"),
        {"a_buff": 16},
        "s_in",
        "weights",
        WeightStorage.PER_SYNAPSE,
    ),
    ProcessFacts(
        "DelaySparse",
        Role.SYNAPSE,
        _LAVA.format("sparse", "PyDelaySparseModelBitAcc"),
        {"a_buff": 16},
        "s_in",
        "weights",
        WeightStorage.PER_SYNAPSE,
        delays="delays",
    ),
    ProcessFacts(
        "Conv",
        Role.SYNAPSE,
        _LAVA.format("conv", "PyConvModelFixed"),
        {"a_buf": 24},
        "s_in",
        "weight",
        WeightStorage.SHARED_KERNEL,
    ),
    # lif (LIFReset), maxpool (LIFReset vth 0); the memoryless relay / coincidence LIFs (du = dv = 4095)
    ProcessFacts(
        "LIFReset",
        Role.NEURON,
        _LAVA.format("lif", "PyLifResetModelBitAcc"),
        {"u": 24, "v": 24},
        "a_in",
        decays=("du", "dv"),
    ),
    ProcessFacts(
        "LIF", Role.NEURON, _LAVA.format("lif", "PyLifModelBitAcc"), {"u": 24, "v": 24}, "a_in", decays=("du", "dv")
    ),
    # add, split attention: the relay that sends its sum as a graded spike
    ProcessFacts("GradedVec", Role.RELAY, _LAVA.format("graded", "PyGradedVecModelFixed"), {"v": 24}, "a_in"),
    # attention, dendritic: the q-gated product (a_in1: the token mixing, a_in2: q)
    ProcessFacts("ProdNeuron", Role.NEURON, _LAVA.format("prodneuron", "PyProdNeuronModelFixed"), {"v": 24}, "a_in1"),
    # attention past the chip's token kernel: K^T V (or the causal running sum), d_h x d_h per head
    ProcessFacts(
        "AttentionCore",
        Role.HOST_COMPUTE,
        "spikeport runtime/lava/procs/processes.py (PyAttentionCoreModel: kv precision 16)",
        {"kv": 16},
        "q_in",
        host_only="spikeport process: integer Q(K^T V) per time step, fixed_pt model on the host CPU only; "
        "used for N > 64 tokens (the chip-native Conv of ones spans 2 N - 1 lags, Lava's Conv holds <= 127)",
    ),
    # sigma_delta, delta, sigma (Delta's model never integrates its sigma Var), rf
    ProcessFacts(
        "SigmaDelta",
        Role.NEURON,
        _LAVA.format("sdn", "PySigmaDeltaModelFixed"),
        {"sigma": 24, "act": 24, "residue": 24, "error": 24},
        "a_in",
    ),
    ProcessFacts(
        "Delta",
        Role.NEURON,
        _LAVA.format("sdn", "PyDeltaModelFixed"),
        {"act": 24, "residue": 24, "error": 24},
        "a_in",
    ),
    ProcessFacts("Sigma", Role.NEURON, _LAVA.format("sdn", "PySigmaModelFixed"), {"sigma": 24}, "a_in"),
    ProcessFacts(
        "RF",
        Role.NEURON,
        _LAVA.format("rf", "PyRFModelFixed"),
        {"real": 24, "imag": 24},
        "a_real_in",
        decays=("sin_decay", "cos_decay"),
    ),
    ProcessFacts(
        "RF_IZ",
        Role.NEURON,
        _LAVA.format("rf_iz", "PyRF_IZModelFixed"),
        {"real": 24, "imag": 24},
        "a_real_in",
        decays=("sin_decay", "cos_decay"),
    ),
    # not built by these lowerings: the synapses of lava-dl's own netx Network
    ProcessFacts(
        "Dense",
        Role.SYNAPSE,
        _LAVA.format("dense", "PyDenseModelBitAcc"),
        {"a_buff": 16},
        "s_in",
        "weights",
        WeightStorage.PER_SYNAPSE,
    ),
    ProcessFacts(
        "DelayDense",
        Role.SYNAPSE,
        _LAVA.format("dense", "PyDelayDenseModelBitAcc"),
        {"a_buff": 16},
        "s_in",
        "weights",
        WeightStorage.PER_SYNAPSE,
        delays="delays",
    ),
)


# ------------------------------------------------------------------------------------- shared helpers
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
        _sparse(net, out_port(net, src), f"{name}<-{src}", identity, delay=lag - 1, graded=False, weight_exp=0)
        net.processes[-1].a_out.connect(relay.a_in)
        net.processes.append(relay)
        net.spike_out[name] = relay.s_out
    return net.spike_out[name]


def _synapse(net: LavaNetwork, src: str, target: str, weights: Any, arrive: int | None = None, **kw: Any) -> Any:
    """A synapse process ``target<-src`` reading node ``src``'s output (graded when ``src`` is a relay),
    delayed so that it arrives at depth ``arrive`` (default: ``target``'s depth)."""
    delay = (net.depth[target] if arrive is None else arrive) - net.depth[src] - 1
    graded = src in net.stream_out
    return _sparse(net, out_port(net, src), f"{target}<-{src}", weights, delay=delay, graded=graded, **kw)


def _sparse(
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
