"""The neuron groups of a netx file, read as lava-dl 0.6's netx builds them: one reader per neuron type.

``NEURONS`` maps a netx neuron ``type`` to its reader, ``(layer group, name, source, layer type, depth) -> Node``:
CUBA (and LOIHI) -> ``lif`` (``recurrent_lif`` in a ``dense_rec`` layer), SDNN -> ``sigma_delta`` (``sigma``
where the group has ``sigma_output``), RF / RF_IZ / RF_PHASE -> ``rf``. Besides them: the Delta encoder of an SDNN
input layer (:func:`delta_encoder`) and the neuron netx gives a dense layer that has none
(:class:`WithNetxDefaultNeuron`). A new neuron type is one reader registered here (docs/architecture.md, "Where a
new netx layer goes"); the layers around it are read by ``netx/read.py``.

numpy + h5py only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import h5py
import numpy as np

from spikeport import fixedpoint as fx
from spikeport.ir.graph import Node
from spikeport.ir.registry import Registry
from spikeport.netx.schema import read_int, read_value
from spikeport.netx.weights import mantissa_exponent, netx_dense_layer_weights

NETX_BIAS_EXP = 6  # netx get_neuron_params: bias_exp=6 for CUBA neurons
NETX_SPIKE_EXP = NETX_STATE_EXP = 6  # netx Network(spike_exp=6) and SigmaDelta(state_exp=6) for SDNN neurons


def delta_encoder(g: h5py.Group, name: str, src: str) -> Node:
    """An SDNN input layer as netx builds it: a Lava Delta (vth, spike_exp 6, state_exp 6) whose a_in the
    network's integers drive directly (netx's Input block keeps the file's weight / bias as a transform it never
    applies, so they are ignored here too)."""
    n = g["neuron"]
    attrs = {"vth": read_int(n, "vThMant"), "spike_exp": NETX_SPIKE_EXP, "state_exp": NETX_STATE_EXP, "cum_error": 0}
    return Node(name, "delta", [src], attrs, {})


class WithNetxDefaultNeuron:
    """A dense layer group without a neuron group, read as lava-dl's ``hdf5.create_dense`` reads it: with a CUBA
    neuron of ``iDecay`` 0 (Lava ``du = -1``: ``u`` sums ``a_in << 6`` without loss), ``vDecay`` 4096 (``v = u +
    bias``) and ``vThMant`` ``1 << 18 - 1`` (= ``1 << 17``: never fires), a non-spiking integrator whose result is
    its ``v`` (mnist.net's output layer)."""

    NEURON = {
        "type": np.array(b"CUBA"),
        "iDecay": np.array(0),
        "vDecay": np.array(4096),
        "vThMant": np.array(1 << 18 - 1),  # sic: netx's precedence gives 1 << 17
        "refDelay": np.array(1),
        "gradedSpike": np.array(False),
    }

    def __init__(self, group: h5py.Group) -> None:
        self.group = group

    def __contains__(self, key: str) -> bool:
        return key == "neuron" or key in self.group

    def __getitem__(self, key: str) -> Any:
        return self.NEURON if key == "neuron" else self.group[key]


NeuronReader = Callable[[h5py.Group, str, str, str, int], Node]  # (layer group, name, source, layer type, depth)
NEURONS: Registry[NeuronReader] = Registry("netx neuron reader")


def _layer_bias(g: h5py.Group, channels: int, use: bool) -> np.ndarray:
    bias = np.asarray(g["bias"][()]).astype(np.int64).ravel() if use and "bias" in g else None
    if bias is None:
        return np.zeros(channels, np.int64)
    if bias.size != channels:
        raise ValueError(f"bias of {bias.size} values for {channels} channels (per-neuron bias maps are not supported)")
    return bias


def _channels(g: h5py.Group) -> int:
    shape = [int(s) for s in np.ravel(g["shape"][()])]
    return shape[0] if len(shape) == 3 else int(np.prod(shape))


@NEURONS.register("CUBA", "LOIHI")
def _cuba(g: h5py.Group, name: str, src: str, kind: str, depth: int) -> Node:
    """The CUBA neuron as netx builds it: a Lava LIF (netx's Input block never applies its file's bias)."""
    n = g["neuron"]
    if "messageBits" in n and read_int(n, "messageBits") > 0 or "gradedSpike" in n and read_int(n, "gradedSpike"):
        raise ValueError("graded-spike CUBA neurons are not supported (binary spikes only)")
    bias = _layer_bias(g, _channels(g), use=kind != "input")
    exp = NETX_BIAS_EXP
    while np.abs(bias).max(initial=0) > fx.BIAS_MANT_MAX and exp < fx.BIAS_EXP_MAX and not np.any(bias % 2):
        bias, exp = bias // 2, exp + 1
    dv, vth = read_int(n, "vDecay"), read_int(n, "vThMant")
    # tau and v_threshold only document the integers (sigma = 1: v_threshold in units of vth)
    attrs = {
        "tau": 4096 / max(dv, 1),
        "v_threshold": float(max(vth, 1)),
        "du": read_int(n, "iDecay") - 1,
        "dv": dv,
        "vth": vth,
        "bias_exp": exp,
    }
    if kind == "dense_rec":  # the group also reads its own spikes of the previous step
        mant, e = mantissa_exponent(netx_dense_layer_weights(g)[1], f"{name} (weight_rec)")
        return Node(
            name,
            "recurrent_lif",
            [src],
            {**attrs, "weight_exp": e},
            {"bias_mant": bias.astype(np.int32), "weight_mant": mant},
        )
    return Node(name, "lif", [src], attrs, {"bias_mant": bias.astype(np.int32)})


@NEURONS.register("SDNN")
def _sdnn(g: h5py.Group, name: str, src: str, kind: str, depth: int) -> Node:
    """A hidden SDNN layer as netx builds it: Lava's SigmaDelta (ReLU) with netx's spike_exp 6 and state_exp 6."""
    n = g["neuron"]
    if kind == "input":
        raise ValueError("an SDNN input layer is a Delta encoder: import it with input_drive='graded'")
    if "sigma_output" in n:  # netx builds a Sigma: it sums a_in, without bias, threshold or activation
        return Node(name, "sigma", [src], {"warmup": depth}, {})
    attrs = {
        "vth": read_int(n, "vThMant"),
        "spike_exp": NETX_SPIKE_EXP,
        "state_exp": NETX_STATE_EXP,
        "cum_error": 0,
        "warmup": depth,
    }
    return Node(name, "sigma_delta", [src], attrs, {"bias": _layer_bias(g, _channels(g), use=True).astype(np.int32)})


RF_TYPES = ("RF", "RF_IZ", "RF_PHASE")
RF_STATE_EXP, RF_DECAY_BITS = 6, 12  # netx get_neuron_params: state_exp 6, decay_bits 12 for RF neurons


def rf_decays(sin_decay: float, cos_decay: float) -> tuple[int, int]:
    """The integer (sin_decay, cos_decay) Lava's RF ends up with for a netx file's sinDecay / cosDecay: netx
    turns them into (period, alpha) (slayer.neuron.rf.neuron_params) and Lava's RF process back into
    ``int32((1 - alpha) * sin|cos(2 pi / period) * 2**12)``; the same float steps, so the same truncation."""
    s, c = sin_decay / (1 << RF_DECAY_BITS), cos_decay / (1 << RF_DECAY_BITS)
    alpha = 1 - np.sqrt(s**2 + c**2)
    period = 1 / (np.arctan2(s, c) / 2 / np.pi)
    return (
        int(np.int32((1 - alpha) * np.sin(np.pi * 2 * 1 / period) * (1 << RF_DECAY_BITS))),
        int(np.int32((1 - alpha) * np.cos(np.pi * 2 * 1 / period) * (1 << RF_DECAY_BITS))),
    )


@NEURONS.register(*RF_TYPES)
def _rf(g: h5py.Group, name: str, src: str, kind: str, depth: int) -> Node:
    """An RF neuron as netx builds it: Lava RF for RF_PHASE, RF_IZ otherwise (netx: 'PHASE' in the type),
    fed by the layer's real and imaginary synapses; netx's ComplexDense applies no bias."""
    n = g["neuron"]
    if "gradedSpike" in n and read_int(n, "gradedSpike"):
        raise ValueError("graded-spike RF neurons are not supported (binary spikes only)")
    sin_decay, cos_decay = rf_decays(float(np.ravel(n["sinDecay"][()])[0]), float(np.ravel(n["cosDecay"][()])[0]))
    attrs = {
        "sin_decay": sin_decay,
        "cos_decay": cos_decay,
        "decay_bits": RF_DECAY_BITS,
        "state_exp": RF_STATE_EXP,
        "vth": int(float(np.ravel(n["vThMant"][()])[0]) * (1 << RF_STATE_EXP)),  # Lava RF: int(vth << state_exp)
        "iz": int("PHASE" not in read_value(n, "type")),
    }
    real = src.removesuffix(".real")
    return Node(name, "rf", [f"{real}.real", f"{real}.imag"], attrs, {})
