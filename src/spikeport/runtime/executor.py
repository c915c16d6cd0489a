"""Walks a quantized IR graph time step by time step with a given ops backend (numpy ints or torch).

The reference simulator (reference.py) and the fake-quant executor (convert/fakequant.py) are both this
loop; only the ops backend and the source of the integer parameters differ. All node semantics come from
``spikeport.fixedpoint``. Every run starts from zero state (explicit reset between batches of samples).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.ir.graph import Graph

Observer = Callable[[int, str, object, dict], None]   # (t, node name, output value, extra) -> None


class GraphExecutor:
    def __init__(self, graph: Graph, ops=fx.INT, qparams: dict | None = None):
        if not graph.quantized and qparams is None:
            raise ValueError("GraphExecutor needs a quantized graph or integer parameters")
        self.graph, self.ops = graph, ops
        self.qparams = qparams if qparams is not None else {n.name: n.params for n in graph.nodes.values()}
        self.order = [graph.nodes[name] for name in graph.order]
        self.lif_params = {}
        for node in self.order:
            if node.op == "lif":
                a = node.attrs
                self.lif_params[node.name] = fx.LifParams(a["du"], a["dv"], a["vth"],
                                                          self.qparams[node.name]["bias_mant"], a["bias_exp"])

    def run(self, images, observer: Observer | None = None):
        """images [B, H, W, C] (float, normalized; spikes [B, T, ...] for a spike input) -> summed logits
        [B, classes] over T time steps (None without a readout)."""
        ops, g = self.ops, self.graph
        state: dict[str, tuple] = {}
        logits = None
        for t in range(g.T):
            self.t = t
            values: dict[str, object] = {}
            for node in self.order:
                extra: dict = {}
                out = self._step(node, images, values, state, extra)
                values[node.name] = out
                if node.op == "readout":
                    logits = out if logits is None else logits + out
                if observer is not None:
                    observer(t, node.name, out, extra)
        return logits

    def _step(self, node, images, values, state, extra):
        ops, a, q = self.ops, node.attrs, self.qparams.get(node.name, {})
        ins = [values[s] for s in node.inputs]
        if node.op == "input" and a.get("kind") == "spikes":      # images are spikes [B, T, ...]
            return ops.asint(images[:, self.t])
        if node.op == "input":
            lim = 2 ** (a["bits"] - 1) - 1
            return ops.clip(ops.round(images * 2.0 ** a["frac_bits"]), -lim, lim)
        if node.op == "conv":
            return fx.conv(ops, ins[0], q["weight_mant"], a["weight_exp"], a["stride"], a["padding"],
                           a["dilation"], a["groups"])
        if node.op == "dense":
            return fx.dense(ops, ins[0], q["weight_mant"], a["weight_exp"])
        if node.op in ("attention", "dendritic"):
            b = ins[0].shape[0]
            qkv = [x.reshape(b, -1, x.shape[-1]) for x in ins]
            if node.op == "dendritic":
                p = fx.DendriticParams(q["a_mant"], q["gamma_mant"], q["c_mant"], a["a_shift"], a["c_shift"])
                core, extra["state_peak"] = fx.dendritic_core(ops, *qkv, a["heads"], p)
            elif a["variant"] == "causal":
                core = fx.causal_core(ops, *qkv, a["heads"])
            else:
                core = fx.ssa_core(ops, *qkv, a["heads"])
            return fx.scale(ops, core, a["out_mant"], a["out_exp"]).reshape(ins[0].shape)
        if node.op == "lif":
            a_in = ins[0]
            for x in ins[1:]:
                a_in = a_in + x
            extra["a_in"] = a_in
            if node.name not in state:
                state[node.name] = (ops.zeros(a_in.shape, like=a_in), ops.zeros(a_in.shape, like=a_in))
            u, v = state[node.name]
            u, v, s = fx.lif_step(ops, u, v, a_in, self.lif_params[node.name])
            state[node.name] = (u, v)
            return s
        if node.op == "maxpool":
            return fx.maxpool(ops, ins[0], a["kernel"], a["stride"], a["padding"])
        if node.op == "add":
            total = ins[0]
            for x in ins[1:]:
                total = total + x
            return total
        if node.op == "readout":
            x = ins[0]
            return fx.readout(ops, x.reshape(x.shape[0], -1, x.shape[-1]), q["weight_mant"], q["bias_int"],
                              a["weight_exp"])
        raise ValueError(f"node '{node.name}': no kernel for op '{node.op}'")


def to_channels_last(images: np.ndarray) -> np.ndarray:
    """[B, C, H, W] (torch layout) -> [B, H, W, C]."""
    return np.ascontiguousarray(np.asarray(images).transpose(0, 2, 3, 1))
