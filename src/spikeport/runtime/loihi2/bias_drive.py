"""The hardware plan's bias drive: the stem it replaces, the bias it writes, and whether a network can take it.

Under ``--input-drive bias`` the host computes the stem's first convolution and sets the result, plus the first
LIF layer's own bias, as that layer's ``bias_mant`` once a sample (lava-dl's PilotNet-LIF test drives its input
layer so: ``net.in_layer.neuron.bias_mant.init = image``). :func:`check_bias_drive` says whether a graph has such a
stem, :func:`drive_bias` computes the bias for a batch of images, :func:`worst_bias_bits` the signed bits it may
need over the input's whole range. The plan that uses it is ``plan.py``; its run, ``plan_run.py``.
"""

from __future__ import annotations

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.errors import ConfigError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import kernel, value_kind
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.replay import HostStep
from spikeport.value_kinds import ACTIVATION, ANALOG

BIAS_MANT_SIM = (-(2**15), 2**15 - 1)  # Lava's fixed_pt LIF keeps bias_mant in an int16 Var


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
            "(the stem of a converted model); run with --input-drive adapter"
        )
    lif = found[1]
    if int(lif.attrs["du"]) != fx.DECAY_UNITY - 1:
        raise ConfigError(
            f"input drive 'bias': layer '{lif.name}' keeps part of its current between steps (du = {lif.attrs['du']}), "
            "so its input cannot be a bias; run with --input-drive adapter"
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
