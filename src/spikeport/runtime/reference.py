"""The reference integer simulator (``--backend reference``): the golden model of the integer contract.

numpy int64 arithmetic from ``spikeport.fixedpoint`` (no torch, no lava), batched over samples, zero
state at the start of every batch. It records, per node and per time step (summed over samples):
spikes, synaptic operations, MACs, neuron updates, dendritic state updates, and the node's held state in
bytes, using the counting rules of docs/counting.md.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.ir.graph import Graph
from spikeport.runtime.executor import GraphExecutor

EXECUTOR = "reference"
COUNTERS = ("spikes", "synops", "synops_valued", "macs", "neuron_updates", "dendritic_updates",
            "act_overflows")


@dataclass
class LayerCounts:
    name: str
    op: str
    input_kind: str
    neurons: int
    state_bytes: int
    weight_bytes: int
    fan_out: float
    fan_in: int          # synapses per output neuron (MAC count of one output on analog input)
    per_t: dict[str, list[int]] = field(default_factory=dict)

    def add(self, key: str, t: int, value) -> None:
        self.per_t[key][t] += int(value)

    def to_dict(self) -> dict:
        d = {"name": self.name, "op": self.op, "input_kind": self.input_kind, "neurons": self.neurons,
             "fan_out": self.fan_out, "state_bytes": self.state_bytes, "weight_bytes": self.weight_bytes}
        d.update({k: list(v) for k, v in self.per_t.items()})
        return d


def _input_kind(graph: Graph, node) -> str:
    from spikeport.ir.ops import value_kind

    kinds = {value_kind(graph, s) for s in node.inputs}
    return "analog" if "analog" in kinds else "integer" if "integer" in kinds else \
        "spikes" if "spikes" in kinds else "activation" if kinds else "none"


def state_bytes(graph: Graph, node) -> int:
    """Bytes of state the node holds between its inputs and outputs, at Loihi precision."""
    n = int(np.prod(node.shape))
    if node.op == "lif":
        return n * 2 * 3                                    # u and v, 24 bits each
    if node.op == "attention":
        h, c = node.attrs["heads"], node.shape[-1]
        return h * (c // h) ** 2 * 2                        # K^T V (or the running sum S): 16-bit entries
    if node.op == "dendritic":
        return node.attrs["num_dendrites"] * node.shape[-1] * 3   # X: k x d, 24 bits
    return 0


def weight_bytes(node) -> int:
    return int(sum(np.asarray(p).size * (1 if k == "weight_mant" else 4) for k, p in node.params.items()))


class Counter:
    """Observer for GraphExecutor that accumulates the per-node, per-time-step counts."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.layers: dict[str, LayerCounts] = {}
        for node in graph.nodes.values():
            lc = LayerCounts(node.name, node.op, _input_kind(graph, node), int(np.prod(node.shape))
                             if node.op == "lif" else 0, state_bytes(graph, node), weight_bytes(node),
                             _fan_out(graph, node), _fan_in(node))
            lc.per_t = {k: [0] * graph.T for k in COUNTERS}
            self.layers[node.name] = lc
        self.state_peak: dict[str, float] = {}
        self._last: dict[str, np.ndarray] = {}

    def __call__(self, t: int, name: str, out, extra: dict) -> None:
        node, lc = self.graph.nodes[name], self.layers[name]
        g = self.graph
        if node.op in ("lif", "maxpool"):
            lc.add("spikes", t, out.sum())
        if node.op == "lif":
            lc.add("neuron_updates", t, out.size)
            lc.add("act_overflows", t, np.sum(np.abs(extra["a_in"]) >= fx.ACT_MAX))
        elif node.op in ("conv", "dense"):
            x = self._last[node.inputs[0]]
            if lc.input_kind == "analog":
                lc.add("macs", t, out.size * lc.fan_in)
            else:
                events, valued = _synops(node, x)
                lc.add("synops", t, events)
                lc.add("synops_valued", t, valued)
        elif node.op in ("attention", "dendritic"):
            q, k, v = (self._last[s] for s in node.inputs)
            b = q.shape[0]
            q, k, v = (a.reshape(b, -1, a.shape[-1]) for a in (q, k, v))
            h = node.attrs["heads"]
            dh = q.shape[-1] // h
            n, c = q.shape[1], q.shape[2]
            if node.op == "attention":
                # K^T V accumulates: per token and head, (non-zero k) x (non-zero v) products
                kv = (k.reshape(b, n, h, dh).sum(-1) * v.reshape(b, n, h, dh).sum(-1)).sum()
                lc.add("synops", t, kv + q.sum() * dh)         # accumulates of K^T V and Q (K^T V)
                lc.add("macs", t, b * n * c)                   # the out_mant rescale
            else:
                kdim = node.attrs["num_dendrites"]
                lc.add("synops", t, (k * v).sum() * kdim)      # Gamma u_n into k dendrites
                lc.add("dendritic_updates", t, b * n * c * kdim)
                lc.add("macs", t, b * n * c * (3 * kdim - 2 + kdim + 1))   # A X (tridiagonal), C^T X, q*g
                self.state_peak[name] = max(self.state_peak.get(name, 0), extra.get("state_peak", 0))
        elif node.op == "readout":
            x = self._last[node.inputs[0]]
            lc.add("macs", t, x.shape[0] * node.attrs["classes"] * x.shape[-1])
            lc.add("synops_valued", t, x.sum())                    # the token sum
        self._last[name] = out



def _fan_out(graph: Graph, node) -> float:
    """Synapses one spike of this node drives (dense: out features; conv: C_out/groups * k*k)."""
    total = 0.0
    for c in graph.consumers(node.name):
        if c.op == "dense":
            total += c.attrs["out_features"]
        elif c.op == "conv":
            total += c.attrs["out_channels"] / c.attrs["groups"] * np.prod(c.attrs["kernel"])
    return float(total)


def _fan_in(node) -> int:
    a = node.attrs
    if node.op == "conv":
        return int(np.prod(a["kernel"]) * a["in_channels"] // a["groups"])
    return int(a["in_features"]) if node.op == "dense" else 0


def _synops(node, x: np.ndarray) -> tuple[int, int]:
    """(events, value-weighted) accumulates of a dense/conv on spikes or integers, exact at borders."""
    if node.op == "dense":
        out = node.attrs["out_features"]
        return int(np.count_nonzero(x)) * out, int(x.sum()) * out
    a = node.attrs
    # every input position (h, w) drives reach[h, w] output positions x C_out / groups output channels
    reach = _conv_reach(x.shape[1:3], tuple(a["kernel"]), tuple(a["stride"]), tuple(a["padding"]),
                        tuple(a["dilation"]))
    per_out = a["out_channels"] // a["groups"]
    events = (np.count_nonzero(x, axis=(0, 3)) * reach).sum()
    return int(events) * per_out, int((x.sum(axis=(0, 3)) * reach).sum()) * per_out


@functools.lru_cache(maxsize=256)
def _conv_reach(in_hw: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> np.ndarray:
    """[H, W]: how many (output position, tap) pairs read each input position (zero padding excluded)."""
    axes = []
    for size, k, s, p, d in zip(in_hw, kernel, stride, padding, dilation):
        taps = (np.arange(fx.conv_out_size(size, k, s, p, d))[:, None] * s - p + np.arange(k)[None, :] * d).ravel()
        axes.append(np.bincount(taps[(taps >= 0) & (taps < size)], minlength=size))
    return np.outer(*axes).astype(np.int64)


class ReferenceSimulator:
    """Runs an artifact's graph on batches of images; see ``run`` for the report."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.executor = GraphExecutor(graph)

    def run_batch(self, images: np.ndarray, counter: Counter | None = None, observer=None) -> np.ndarray:
        """images [B, H, W, C] -> summed integer logits [B, classes]."""
        def observe(t, name, out, extra):
            if counter is not None:
                counter(t, name, out, extra)
            if observer is not None:
                observer(t, name, out, extra)

        return self.executor.run(images, observe if (counter or observer) else None)

    def run(self, images: np.ndarray, labels: np.ndarray | None = None, batch_size: int = 64,
            progress: bool = False) -> dict:
        """The run report (schema spikeport.run v1) over all images [S, H, W, C]."""
        counter = Counter(self.graph)
        preds, start = [], time.perf_counter()
        batches = range(0, len(images), batch_size)
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="reference", unit="batch")
        for i in batches:
            logits = self.run_batch(images[i:i + batch_size], counter)
            preds.append(np.argmax(logits, axis=-1))
        wall = time.perf_counter() - start
        preds = np.concatenate(preds) if preds else np.zeros(0, np.int64)
        return build_report(self.graph, counter, preds, labels, wall, EXECUTOR)


def build_report(graph: Graph, counter: Counter, preds, labels, wall: float, executor: str) -> dict:
    layers = [counter.layers[name].to_dict() for name in graph.order]
    totals = {k: int(sum(sum(l[k]) for l in layers)) for k in COUNTERS}
    report = {
        "schema": "spikeport.run", "schema_version": 1, "executor": executor,
        "model": graph.meta.get("model_config", {}), "T": graph.T,
        "samples": int(len(preds)), "predictions": [int(p) for p in preds],
        "wall_time_s": wall, "latency_timesteps": graph.T, "layers": layers, "totals": totals,
        "state_peak": {k: float(v) for k, v in counter.state_peak.items()},
        "peak_state_bytes": int(sum(l["state_bytes"] for l in layers)),
    }
    if labels is not None:
        report["accuracy"] = float(np.mean(np.asarray(preds) == np.asarray(labels))) if len(preds) else 0.0
    return report
