"""The spikes that cross chips in check-hw's placement, for the energy estimate to price
(``spikeport.chip_traffic``). Apart from the rules (``rules.py``): it reads the built synapses' matrices and
a run report, not the profile's limits.

A neuron's spike is one message per destination core; the destination cores are those holding the first to
the last neuron its synapses reach (read from the built Sparse matrices and Conv geometries); a message
whose core sits on another chip crosses. Firing per group: a run report's spike counts where one is given
and counts the group, else an assumed rate (labelled). Routing inside a chip and the compiler's own
placement are not modelled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport.chip_traffic import ChipTraffic
from spikeport.ir.graph import Graph
from spikeport.run_report import RunReport, as_dict
from spikeport.runtime.lava.facts import PROCESSES, WeightStorage
from spikeport.runtime.lava.lowerings import LOWERINGS, LavaNetwork
from spikeport.runtime.loihi2.hw_records import HwCheck

DEFAULT_RATE = 0.1  # spikes per neuron and step assumed where no run report counts a group's spikes


def _reach(proc: Any) -> tuple[np.ndarray, np.ndarray]:
    """For each presynaptic neuron of a built synapse process, the first and last postsynaptic neuron (flat
    index) it reaches; lo > hi where it reaches none."""
    facts = PROCESSES.of(proc)
    if facts.storage is WeightStorage.SHARED_KERNEL:
        return _conv_reach(proc)
    from scipy import sparse

    w = sparse.csc_matrix(getattr(proc, str(facts.weights)).init)
    w.eliminate_zeros()
    w.sort_indices()
    n_out, n_in = w.shape
    lo, hi = np.full(n_in, n_out, np.int64), np.full(n_in, -1, np.int64)
    has = np.diff(w.indptr) > 0
    lo[has] = w.indices[w.indptr[:-1][has]]
    hi[has] = w.indices[w.indptr[1:][has] - 1]
    return lo, hi


def _conv_reach(proc: Any) -> tuple[np.ndarray, np.ndarray]:
    """A Lava Conv's reach from its geometry: input (x, y, z) feeds the outputs (x', y') whose window covers
    it, every output channel of z's group; flat indices in Lava's (X, Y, Z) raster order."""
    (X, Y, Z), (Xo, Yo, Zo) = proc.input_shape, proc.output_shape
    weight = np.asarray(proc.weight.init)
    k = weight.shape[1:3]
    pad, stride, dil = (
        np.broadcast_to(np.asarray(v.init).ravel(), (2,)) for v in (proc.padding, proc.stride, proc.dilation)
    )
    groups = int(np.asarray(proc.groups.init).ravel()[0])
    x, y, z = np.unravel_index(np.arange(X * Y * Z), (X, Y, Z))
    span = []
    for pos, axis, size in ((x, 0, Xo), (y, 1, Yo)):  # output o reads o * stride - pad + i * dilation, i < k
        first, last = np.full(pos.shape, size, np.int64), np.full(pos.shape, -1, np.int64)
        for tap in range(k[axis]):
            offset = pos + pad[axis] - tap * dil[axis]
            out = offset // stride[axis]
            hit = (offset >= 0) & (offset % stride[axis] == 0) & (out < size)
            first, last = np.where(hit, np.minimum(first, out), first), np.where(hit, np.maximum(last, out), last)
        span.append((first, last))
    (xlo, xhi), (ylo, yhi) = span
    zlo = (z // (Z // groups)) * (Zo // groups)
    lo = (xlo * Yo + ylo) * Zo + zlo
    hi = (xhi * Yo + yhi) * Zo + zlo + Zo // groups - 1
    none = (xlo > xhi) | (ylo > yhi)
    return np.where(none, Xo * Yo * Zo, lo).astype(np.int64), np.where(none, -1, hi).astype(np.int64)


def spike_rates(graph: Graph, run_report: RunReport | dict[str, Any] | None) -> dict[str, float]:
    """Spikes per neuron and step of every graph node a run report counts (its spiking layers), and of the
    residual sums over them (a sum is nonzero only where an input is: the sum of its inputs' rates, at most 1)."""
    if run_report is None:
        return {}
    report = as_dict(run_report)
    samples = max(int(report.get("samples") or 1), 1)
    rates: dict[str, float] = {}
    for row in report.get("layers", []):
        spikes, neurons = row.get("spikes") or [], int(row.get("neurons") or 0)
        if neurons and sum(spikes) and row.get("name") in graph.nodes:
            rates[row["name"]] = min(1.0, sum(spikes) / (samples * len(spikes) * neurons))
    for name in graph.order:
        node = graph.nodes[name]
        if LOWERINGS.get(node.op, name).relay_if_read and node.inputs and all(s in rates for s in node.inputs):
            rates[name] = min(1.0, sum(rates[s] for s in node.inputs))
    return rates


def chip_traffic(
    graph: Graph,
    net: LavaNetwork,
    check: HwCheck,
    run_report: RunReport | dict[str, Any] | None = None,
    rate: float = DEFAULT_RATE,
) -> ChipTraffic | None:
    """Spike messages per step that cross chips in ``check``'s placement (None: no chips estimated)."""
    per_chip, chips = check.cores_per_chip, check.chips
    if per_chip is None or chips is None:
        return None
    placed = {g.group: g for g in check.placement}
    built = {p.name: p for p in net.processes}
    published = {port.process.name for port in (*net.spike_out.values(), *net.stream_out.values())}
    rates = spike_rates(graph, run_report)
    measured = crossing = 0.0
    by_layer: dict[str, float] = {}
    if chips > 1:
        for src in (p for p in check.processes if p.name in placed):
            counted = src.name in published and src.layer in rates  # the node's own output, counted by the run
            src_rate = rates[src.layer] if counted else rate
            a = placed[src.name]
            src_chip = a.core_of(np.arange(a.neurons)) // per_chip
            for syn in (s for s in check.processes if s.name in src.feeds and s.chip_synapse):
                lo, hi = _reach(built[syn.name])
                for b in (placed[t] for t in syn.feeds if t in placed):
                    first, last = b.core_of(np.clip(lo, 0, None)), b.core_of(np.clip(hi, 0, None))
                    own_lo, own_hi = src_chip * per_chip, (src_chip + 1) * per_chip - 1
                    local = np.clip(np.minimum(last, own_hi) - np.maximum(first, own_lo) + 1, 0, None)
                    messages = np.where(lo <= hi, last - first + 1 - local, 0)
                    sent = src_rate * float(messages.sum())
                    crossing += sent
                    measured += sent if counted else 0.0
                    by_layer[src.layer] = by_layer.get(src.layer, 0.0) + sent
    report = None if run_report is None else as_dict(run_report)
    source = (
        f"spike counts of a {report.get('executor', '?')} run report ({report.get('samples', '?')} samples); "
        f"{rate:g} spikes per neuron and step assumed for the groups it does not count"
        if report is not None
        else f"estimate: every neuron group fires {rate:g} spikes per neuron and step (no run report given)"
    )
    share = measured / crossing if crossing else float(report is not None or chips == 1)
    ranked = dict(sorted(((k, v) for k, v in by_layer.items() if v), key=lambda kv: -kv[1]))
    return ChipTraffic(chips, crossing, graph.T, source, share, rate, ranked)
