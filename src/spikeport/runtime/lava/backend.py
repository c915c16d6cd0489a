"""Lava backend: the artifact's graph as a network of real Lava processes, run by the Lava runtime.

Mapping (node -> processes), standard Lava processes wherever one exists:

    input            io.source.RingBuffer of 16-bit graded pixels (host)
    conv on pixels   spikeport AnalogConv (host; MACs)
    conv on spikes   lava.proc.conv.Conv (weights pre-scaled by 2**weight_exp, spatially flipped:
                     Lava's Conv convolves, torch's correlates; the IR's (H, W, C) is Lava's (X, Y, Z))
    dense            lava.proc.sparse.Sparse / DelaySparse, block-diagonal over the tokens (kron(I_N, W));
                     weights 2 * mantissa with exponent - 1 (Lava's 8-bit mixed-sign mode drops one LSB)
    attention        spikeport AttentionCore (host)        dendritic  spikeport DendriticCore (host)
    lif              lava.proc.lif.LIFReset (reset at the first step of every sample window)
    maxpool          Conv(ones, stride) + LIFReset(vth 0): a spike iff any input in the window spiked
    add              lava.proc.graded.GradedVec relay (vth 0: sends the sum as a graded spike), fed by one
                     identity Sparse / DelaySparse per input; consumers read it with graded synapses
                     (num_message_bits 24). An add read only by the readout has no relay.
    readout          host, the same fixedpoint.readout as the reference, on the recorded sources

Timing: every synapse (Sparse, Conv, AnalogConv, cores, a relay's identity synapses) delays by one step,
neurons (LIF, GradedVec) by none. A node's *depth* is the Lava step offset of its output; the inputs of a
residual sum sit at different depths and their identity synapses into the relay get DelaySparse delays so
they arrive together. The residual stream is a chain of relays (each add reads the previous one), so a
block's consumers need one synapse each however deep the block sits.
Samples stream back to back, one every R = 2**ceil(log2 T) steps (a power of two, as Loihi 2's reset
interval requires); the layer at depth d resets at step offset (1 + d) mod R, so no state leaks.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.errors import BackendUnavailableError, ConversionError
from spikeport.ir.graph import Graph
from spikeport.runtime.lava import compat as lava_compat

EXECUTOR = "lava-fixed_pt"
SYNAPSE_OPS = ("conv", "dense", "attention", "dendritic")
GRADED_BITS = 24          # a relay's graded spike: the count of its inputs that spiked, far below 2**24


def import_lava():
    lava_compat.apply()
    try:
        import lava.magma.core.run_configs  # noqa: F401
    except ImportError as err:  # pragma: no cover - lava is a required dependency of the main env
        raise BackendUnavailableError(f"lava-nc is not importable ({err}); install lava-nc==0.10.0") from None


def relayed(graph: Graph) -> set[str]:
    """The add nodes realised by a relay on Lava: those read by anything but the host readout."""
    return {n.name for n in graph.by_op("add")
            if any(c.op != "readout" for c in graph.consumers(n.name))}


def depths(graph: Graph, relays: set[str] | None = None) -> dict[str, int]:
    """Lava step offset of every node's output relative to the input's (``relays``: ``relayed(graph)``)."""
    d: dict[str, int] = {}
    relays = relayed(graph) if relays is None else relays
    for name in graph.order:
        node = graph.nodes[name]
        ins = [d[s] for s in node.inputs]
        if node.op == "input":
            d[name] = 0
        elif node.op in SYNAPSE_OPS or name in relays:      # a relay's identity synapses delay by one
            d[name] = max(ins) + 1
        elif node.op == "maxpool":
            d[name] = ins[0] + 1
        else:                                    # lif, add, readout: no delay of their own
            d[name] = max(ins)
    return d


def leaves(graph: Graph, name: str) -> list[str]:
    """The spike sources behind a residual sum (adds flattened)."""
    node = graph.nodes[name]
    if node.op != "add":
        return [name]
    return [leaf for src in node.inputs for leaf in leaves(graph, src)]


def reset_interval(T: int) -> int:
    return 1 << math.ceil(math.log2(max(T, 1)))


@dataclass
class LavaNetwork:
    graph: Graph
    source: object
    spike_out: dict            # node name -> lava OutPort carrying its spikes (lif / maxpool)
    stream_out: dict           # relayed add node -> its GradedVec's OutPort (graded: the sum of its inputs)
    depth: dict
    R: int
    processes: list = field(default_factory=list)
    host_only: list = field(default_factory=list)


def _flat(shape) -> tuple[int]:
    return (int(np.prod(shape)),)


def build_network(graph: Graph, source_data: np.ndarray) -> LavaNetwork:
    """Create and connect the Lava processes of ``graph``; ``source_data`` [n_pixels, steps] int32."""
    import_lava()
    from lava.proc.conv.process import Conv
    from lava.proc.graded.process import GradedVec
    from lava.proc.io.source import RingBuffer
    from lava.proc.lif.process import LIFReset
    from lava.proc.sparse.process import DelaySparse, Sparse

    from spikeport.runtime.lava.procs.processes import AnalogConv, AttentionCore, DendriticCore

    relays = relayed(graph)
    depth, R = depths(graph, relays), reset_interval(graph.T)
    net = LavaNetwork(graph, None, {}, {}, depth, R)
    synapse_out: dict[str, object] = {}        # synapse node -> its a_out port
    for name in graph.order:
        node, a = graph.nodes[name], graph.nodes[name].attrs
        q = node.params
        if node.op == "input":
            net.source = RingBuffer(data=source_data.astype(np.int32))
            net.processes.append(net.source)
            net.host_only.append(name)
            if a.get("kind") == "spikes":           # netx imports: spikes drive Conv/Sparse directly
                net.spike_out[name] = net.source.s_out
        elif node.op == "conv" and graph.nodes[node.inputs[0]].op == "input" and node.inputs[0] not in net.spike_out:
            proc = AnalogConv(in_shape=graph.nodes[node.inputs[0]].shape, out_shape=node.shape,
                              weight=q["weight_mant"].astype(np.int64), weight_exp=a["weight_exp"],
                              stride=a["stride"], padding=a["padding"], dilation=a["dilation"],
                              groups=a["groups"], name=name)
            net.source.s_out.connect(proc.s_in)
            synapse_out[name] = proc.a_out
            net.processes.append(proc)
            net.host_only.append(name)
        elif node.op == "conv":
            if a["weight_exp"] < 0:
                raise ConversionError(f"node '{name}': spike-driven conv with weight_exp < 0 has no Lava mapping")
            w = (q["weight_mant"].astype(np.int64) << a["weight_exp"])[:, ::-1, ::-1, :]
            src = node.inputs[0]
            proc = _conv(Conv, w, graph.nodes[src].shape, a, name, graded=src in net.stream_out)
            _out_port(net, src).reshape(graph.nodes[src].shape).connect(proc.s_in)
            synapse_out[name] = proc.a_out.reshape(_flat(node.shape))
            net.processes.append(proc)
        elif node.op == "dense":
            synapse_out[name] = _dense(graph, node, net, Sparse, DelaySparse)
        elif node.op in ("attention", "dendritic"):
            shape = node.shape
            if node.op == "attention":
                proc = AttentionCore(shape=shape, heads=a["heads"], variant=a["variant"], out_mant=a["out_mant"],
                                     out_exp=a["out_exp"], name=name)
            else:
                proc = DendriticCore(shape=shape, heads=a["heads"], a_mant=q["a_mant"], gamma_mant=q["gamma_mant"],
                                     c_mant=q["c_mant"], a_shift=a["a_shift"], c_shift=a["c_shift"],
                                     out_mant=a["out_mant"], out_exp=a["out_exp"], name=name)
            for port, src in zip((proc.q_in, proc.k_in, proc.v_in), node.inputs):
                _out_port(net, src).connect(port)
            synapse_out[name] = proc.a_out
            net.processes.append(proc)
            net.host_only.append(name)
        elif node.op == "lif":
            channels = node.shape[-1]
            bias = np.tile(q["bias_mant"].astype(np.int32), int(np.prod(node.shape)) // channels)
            proc = LIFReset(shape=_flat(node.shape), du=a["du"], dv=a["dv"], vth=a["vth"], bias_mant=bias,
                            bias_exp=a["bias_exp"], reset_interval=R, reset_offset=(1 + depth[name]) % R,
                            name=name)
            for src in node.inputs:
                synapse_out[src].connect(proc.a_in)
            net.spike_out[name] = proc.s_out
            net.processes.append(proc)
        elif node.op == "maxpool":
            net.spike_out[name] = _maxpool(graph, node, net, Conv, LIFReset)
        elif node.op == "add" and name in relays:
            net.stream_out[name] = _relay(graph, node, net, GradedVec, Sparse, DelaySparse)
        elif node.op in ("add", "readout"):
            continue                              # read only by the readout, which runs on the host
        else:
            raise ConversionError(f"node '{name}': op '{node.op}' has no Lava mapping")
    return net


def _conv(Conv, weight: np.ndarray, in_shape, a: dict, name: str, graded: bool = False):
    return Conv(weight=np.ascontiguousarray(weight).astype(np.int32), weight_exp=0, input_shape=tuple(in_shape),
                padding=tuple(a["padding"]), stride=tuple(a["stride"]), dilation=tuple(a["dilation"]),
                groups=a["groups"], num_weight_bits=8, num_message_bits=GRADED_BITS if graded else 0, name=name)


def _out_port(net: LavaNetwork, name: str):
    """Where node ``name``'s output leaves: a spiking node's s_out or a relay's graded s_out."""
    if name in net.stream_out:
        return net.stream_out[name]
    if name not in net.spike_out:
        raise ConversionError(f"node '{name}' ({net.graph.nodes[name].op}) has no Lava output to read from")
    return net.spike_out[name]


def _synapse(net: LavaNetwork, Sparse, DelaySparse, src: str, target: str, weights, **kw):
    """A synapse process ``target<-src`` reading node ``src``'s output (graded when ``src`` is a relay):
    Sparse, or DelaySparse holding its input so that it reaches ``target``'s depth."""
    kw.update(name=f"{target}<-{src}", num_weight_bits=8,
              num_message_bits=GRADED_BITS if src in net.stream_out else 0)
    delay = net.depth[target] - net.depth[src] - 1
    if delay == 0:
        proc = Sparse(weights=weights, **kw)
    else:
        delays = weights.copy()
        delays.data[:] = delay
        proc = DelaySparse(weights=weights, delays=delays, max_delay=delay, **kw)
    _out_port(net, src).connect(proc.s_in)
    net.processes.append(proc)
    return proc


def _dense(graph: Graph, node, net: LavaNetwork, Sparse, DelaySparse):
    """The token-wise layer as one (Delay)Sparse with block-diagonal weights kron(I_N, W); graded when
    it reads a relay. Returns its a_out."""
    from scipy import sparse

    w = node.params["weight_mant"].astype(np.int64)
    tokens = int(np.prod(node.shape[:-1]))
    block = sparse.kron(sparse.identity(tokens, dtype=np.int64, format="csr"),
                        sparse.csr_matrix(2 * w), format="csr")
    block.eliminate_zeros()
    return _synapse(net, Sparse, DelaySparse, node.inputs[0], node.name, block,
                    weight_exp=node.attrs["weight_exp"] - 1).a_out


def _relay(graph: Graph, node, net: LavaNetwork, GradedVec, Sparse, DelaySparse):
    """A residual sum as a GradedVec (vth 0: it sends its a_in, the sum) fed by one identity synapse per
    input, delayed so that all inputs arrive in the same step. Returns the relay's s_out."""
    from scipy import sparse

    n = int(np.prod(node.shape))
    relay = GradedVec(shape=(n,), vth=0, exp=0)
    relay.name = node.name                         # GradedVec takes no name; check-hw and errors use it
    identity = sparse.identity(n, dtype=np.int64, format="csr")
    for src in node.inputs:
        _synapse(net, Sparse, DelaySparse, src, node.name, identity, weight_exp=0).a_out.connect(relay.a_in)
    net.processes.append(relay)
    return relay.s_out


def _maxpool(graph: Graph, node, net: LavaNetwork, Conv, LIFReset):
    a, src = node.attrs, node.inputs[0]
    channels = node.shape[-1]
    k = a["kernel"]
    ones = np.zeros((channels, k, k, 1), np.int32) + 1
    attrs = {"padding": (a["padding"],) * 2, "stride": (a["stride"],) * 2, "dilation": (1, 1), "groups": channels}
    conv = Conv(weight=ones, weight_exp=0, input_shape=tuple(graph.nodes[src].shape), padding=attrs["padding"],
                stride=attrs["stride"], dilation=(1, 1), groups=channels, num_weight_bits=8, name=f"{node.name}.window")
    _out_port(net, src).reshape(graph.nodes[src].shape).connect(conv.s_in)
    lif = LIFReset(shape=_flat(node.shape), du=4095, dv=4095, vth=0, bias_mant=0, bias_exp=0,
                   reset_interval=net.R, reset_offset=(1 + net.depth[node.name]) % net.R, name=node.name)
    conv.a_out.reshape(_flat(node.shape)).connect(lif.a_in)
    net.processes += [conv, lif]
    return lif.s_out
