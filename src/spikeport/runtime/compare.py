"""Comparing two recorded runs of one graph, layer by layer and step by step (``run --compare reference``).

The integer contract says the reference simulator and every executor of the same graph (Lava ``fixed_pt``,
Loihi 2, the torch reference) agree bit for bit: identical spikes in every layer at every time step and the
same predictions. A comparison of layers that never fired proves nothing, so it names them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport.ir.graph import Graph
from spikeport.run_report import ComparedLayer, Comparison, RunReport
from spikeport.runtime.recording import Spikes, recorded


def first_divergence(graph: Graph, a: Spikes, b: Spikes) -> dict[str, Any] | None:
    """The first (layer in topological order, time step, sample, neuron) where two recordings differ."""
    for name in graph.order:
        if name not in a or name not in b:
            continue
        diff = np.argwhere(a[name] != b[name])
        if len(diff):
            s, t, *neuron = (int(v) for v in diff[np.lexsort((diff[:, 0], diff[:, 1]))][0])
            at = (s, t, *neuron)
            return {
                "layer": name,
                "time_step": t,
                "sample": s,
                "neuron": neuron,
                "values": [int(a[name][at]), int(b[name][at])],
                "mismatches": int(len(diff)),
            }
    return None


def compare_runs(graph: Graph, run: RunReport, reference: RunReport) -> Comparison:
    """``run`` against ``reference`` on the same inputs (both recorded): per spiking layer the spike totals and
    whether every time step agrees, the first divergence, the predictions, and the layers where both runs
    compared only zeros (``silent_layers``: bit-exactness there says nothing)."""
    if run.recording is None or reference.recording is None:
        raise ValueError("compare_runs needs both runs recorded (RunOptions(record=True))")
    spiking = set(recorded(graph))
    rows = [
        ComparedLayer(a.name, a.total("spikes"), b.total("spikes"), a.spikes == b.spikes)
        for a, b in zip(run.layers, reference.layers, strict=True)
        if a.name in spiking
    ]
    divergence = first_divergence(graph, reference.recording, run.recording)
    preds, ref_preds = run.predictions or [], reference.predictions or []
    agreement = sum(p == q for p, q in zip(preds, ref_preds, strict=True)) / max(len(ref_preds), 1)
    silent = [row.layer for row in rows if row.spikes == 0 and row.reference_spikes == 0]
    return Comparison(
        against="reference",
        identical=divergence is None and preds == ref_preds,
        first_divergence=divergence,
        layers=rows,
        prediction_agreement=agreement,
        silent_layers=silent,
    )
