"""The mapped network in float: NIR's Euler step with exact decays, the float executor of a NIR import.

It runs the float graph ``graph_from_nir`` builds (before quantization) on analog samples, one step at a time in
Loihi's order (``neurons.py``), and gives the logits, every neuron layer's spikes and, for the calibration, the
largest synaptic input and current each layer sees. One function per IR op a NIR import produces (``FLOAT_STEPS``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spikeport.errors import ConversionError
from spikeport.fixedpoint import conv2d_sum
from spikeport.ir.graph import Graph, Node
from spikeport.ir.registry import Registry
from spikeport.nir_import.neurons import Dynamics


@dataclass
class FloatRun:
    """What one float run gives: logits [B, classes], spikes per neuron layer [T, B, *shape] (when kept), and per
    layer the largest |a_in| and |u| over the run (the calibration)."""

    logits: np.ndarray
    spikes: dict[str, np.ndarray] = field(default_factory=dict)
    a_in_max: dict[str, float] = field(default_factory=dict)
    outputs: np.ndarray | None = None  # [T, B, *shape]: the sum of the ``outputs`` nodes each step, where asked


FloatStep = Callable[["Simulator", Node, list[np.ndarray], dict[str, Any]], np.ndarray]
FLOAT_STEPS: Registry[FloatStep] = Registry("float step of a NIR import")


class Simulator:
    """The float network of a NIR import: ``run(samples)`` with samples [B, *input shape] (channels-last)."""

    def __init__(self, graph: Graph, dynamics: dict[str, Dynamics], outputs: list[str] | None = None) -> None:
        if graph.quantized:
            raise ConversionError("the float simulation runs the float graph of a NIR import, not its integers")
        self.graph, self.dynamics, self.outputs = graph, dynamics, outputs or []
        self.samples: np.ndarray = np.zeros(0)
        self.sequence = False
        self.t = 0
        self.run_record = FloatRun(np.zeros(0))

    def run(self, samples: np.ndarray, keep_spikes: bool = False, sequence: bool = False) -> FloatRun:
        """``samples`` [B, *input shape] fed every step, or with ``sequence`` [T, B, *input shape] one a step (the
        input of a part of a network, as the part before it produced it)."""
        self.samples, self.sequence = np.asarray(samples, np.float64), sequence
        if sequence:
            self.graph.T = len(self.samples)
        self.run_record = FloatRun(np.zeros(0))
        states: dict[str, dict[str, Any]] = {name: {} for name in self.graph.order}
        logits = None
        spikes: dict[str, list[np.ndarray]] = {}
        outputs: list[np.ndarray] = []
        for t in range(self.graph.T):
            self.t = t
            out: dict[str, np.ndarray] = {}
            for name in self.graph.order:
                node = self.graph.nodes[name]
                step = FLOAT_STEPS.get(node.op, name)
                out[name] = step(self, node, [out[s] for s in node.inputs], states[name])
                if name in self.dynamics and keep_spikes:
                    spikes.setdefault(name, []).append(out[name].astype(np.uint8))
            logits = next((states[n]["logits"] for n in self.graph.order if "logits" in states[n]), None)
            if self.outputs:
                outputs.append(np.sum([out[n] for n in self.outputs], axis=0))
        self.run_record.logits = np.asarray(logits)
        self.run_record.outputs = np.stack(outputs) if outputs else None
        self.run_record.spikes = {k: np.stack(v) for k, v in spikes.items()}
        return self.run_record

    def note_max(self, name: str, value: np.ndarray) -> None:
        seen = self.run_record.a_in_max.get(name, 0.0)
        self.run_record.a_in_max[name] = max(seen, float(np.abs(value).max(initial=0.0)))


@FLOAT_STEPS.register("input")
def _input(sim: Simulator, node: Node, ins: list[np.ndarray], state: dict[str, Any]) -> np.ndarray:
    return sim.samples[sim.t] if sim.sequence else sim.samples


@FLOAT_STEPS.register("conv")
def _conv(sim: Simulator, node: Node, ins: list[np.ndarray], state: dict[str, Any]) -> np.ndarray:
    a = node.attrs
    out = conv2d_sum(ins[0], node.params["weight"], a["stride"], a["padding"], a["dilation"], a["groups"], np.float64)
    return out + node.params.get("bias", 0.0)  # a bias no neuron took (a part's output synapse)


@FLOAT_STEPS.register("dense")
def _dense(sim: Simulator, node: Node, ins: list[np.ndarray], state: dict[str, Any]) -> np.ndarray:
    out: np.ndarray = ins[0] @ node.params["weight"].T + node.params.get("bias", 0.0)
    return out


@FLOAT_STEPS.register("add")
def _add(sim: Simulator, node: Node, ins: list[np.ndarray], state: dict[str, Any]) -> np.ndarray:
    total: np.ndarray = np.sum(ins, axis=0)
    return total


@FLOAT_STEPS.register("lif")
def _lif(sim: Simulator, node: Node, ins: list[np.ndarray], state: dict[str, Any]) -> np.ndarray:
    """u <- u (1 - ks) + a_in (or a_in); v <- v (1 - k) + u + bias; spike v > threshold, v <- 0."""
    dyn = sim.dynamics[node.name]
    a_in = np.sum(ins, axis=0)
    if not state:
        state["u"], state["v"] = np.zeros_like(a_in), np.zeros_like(a_in)
    u = a_in if dyn.syn_leak is None else state["u"] * (1 - dyn.syn_leak) + a_in
    v = state["v"] * (1 - dyn.leak) + u + node.params["bias"]
    s = v > dyn.threshold
    state["u"], state["v"] = u, np.where(s, 0.0, v)
    sim.note_max(node.name, a_in)
    sim.note_max(node.name, u)
    return s.astype(np.float64)


@FLOAT_STEPS.register("readout")
def _readout(sim: Simulator, node: Node, ins: list[np.ndarray], state: dict[str, Any]) -> np.ndarray:
    x = ins[0].reshape(ins[0].shape[0], -1, ins[0].shape[-1]).sum(axis=1)
    step = x @ node.params["weight"].T + node.params["bias"]
    state["logits"] = state.get("logits", 0.0) + step
    out: np.ndarray = state["logits"]
    return out
