"""Run an artifact on the Lava CPU simulator (``Loihi2SimCfg(select_tag='fixed_pt')``) and report.

Samples stream through the network back to back (see backend); every spiking node's output is
recorded by a ``SpikeRecorder`` and read back after each chunk of samples. The host then replays the rest
from the recordings: residual sums (value kind ``integer``) and the readout (``logits``) by their kernel
records' ``step``, the same code as the reference simulator's. The network is always stopped, also on
errors and Ctrl-C.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.atomic import run_temp_dir
from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import kernel
from spikeport.ir.kernels.lif import is_integrator
from spikeport.ir.ops import value_kind
from spikeport.runtime.lava import backend as LB, compat
from spikeport.runtime.lava.lowering import LOWERINGS, LavaNetwork, out_port
from spikeport.runtime.lava.progress import QUIET, StageProgress
from spikeport.runtime.lava.state import held_state
from spikeport.runtime.sim.reference import Counter, build_report

Spikes = dict[str, np.ndarray]  # node name -> recorded spikes [S, T, *shape]

HOST_REPLAYED = ("integer", "logits")  # value kinds the host recomputes from the recorded spikes
RECORDED = {"spikes": np.int8, "graded": np.int32}  # value kinds a Lava run records, and their dtypes


def integrators(graph: Graph) -> list[str]:
    """The non-spiking integrators whose ``v`` a run records next to the spikes, as ``v_key(name)``."""
    return [n for n in graph.order if is_integrator(graph.nodes[n])]


V_SUFFIX = ":v"  # recordings of an integrator's v sit beside the spikes, under "<node>:v"


def v_key(name: str) -> str:
    return name + V_SUFFIX


def recorded_node(key: str) -> tuple[str, bool]:
    """(node name, whether it is the node's v) of a recording key."""
    return (key.removesuffix(V_SUFFIX), True) if key.endswith(V_SUFFIX) else (key, False)


def recorded(graph: Graph) -> list[str]:
    """The nodes whose spikes a Lava run records (and compares with the reference): every spiking output
    the network computes (value kind ``spikes`` or ``graded``; a spike input is fed, not computed)."""
    return [n for n in graph.order if graph.nodes[n].inputs and value_kind(graph, n) in RECORDED]


def pixel_stream(graph: Graph, images: np.ndarray, R: int, extra_steps: int) -> np.ndarray:
    """[n_pixels, steps]: sample s occupies steps s*R .. s*R + R - 1 (the image repeated), then zeros."""
    a = graph.nodes["input"].attrs
    if a.get("kind") in ("spikes", "graded"):  # spikes / integers [S, T, ...]: sample s, step t at s*R + t
        S, T = images.shape[:2]
        stream = np.zeros((int(np.prod(images.shape[2:])), S * R + extra_steps), np.int32)
        cols = (np.arange(S)[:, None] * R + np.arange(T)[None, :]).reshape(-1)
        stream[:, cols] = images.reshape(S * T, -1).T
        return stream
    lim = 2 ** (a["bits"] - 1) - 1
    pixels = np.clip(np.rint(images * 2.0 ** a["frac_bits"]), -lim, lim).astype(np.int32)
    flat = pixels.reshape(len(images), -1).T  # [n_pixels, S]
    stream = np.repeat(flat, R, axis=1)
    return np.concatenate([stream, np.zeros((flat.shape[0], extra_steps), np.int32)], axis=1)


def sim_config(fast: bool = True) -> Any:  # a Lava Loihi2SimCfg (untyped)
    """Loihi2SimCfg(fixed_pt); ``fast`` swaps in the bit-exact faster CPU models of Conv/Sparse/DelaySparse."""
    compat.import_lava()
    from lava.magma.core.run_configs import Loihi2SimCfg

    if not fast:
        return Loihi2SimCfg(select_tag="fixed_pt")
    from spikeport.runtime.lava.procs.fast_models import exception_map

    return Loihi2SimCfg(select_tag="fixed_pt", exception_proc_model_map=exception_map())


MAX_RESTARTS = 2


def run_lava(
    graph: Graph,
    images: np.ndarray,
    labels: np.ndarray | None = None,
    chunk_samples: int = 16,
    progress: bool = False,
    run_cfg: Any = None,
    stall_s: float = 60.0,
) -> tuple[dict[str, Any], Spikes]:
    """(run report, {node: spikes [S, T, *shape]}) for images [S, H, W, C] on Lava fixed_pt.

    A run whose Lava children all sit idle for ``stall_s`` (a deadlock inside Lava's channels, seen once
    under heavy load) is torn down and restarted from a sample early enough that every recorded step
    after it is simulated again; up to MAX_RESTARTS times, counted in the report (``lava.restarts``)."""
    compat.import_lava()
    from spikeport.errors import LavaStallError
    from spikeport.runtime.lava.session import LavaSession

    S, T = len(images), graph.T
    _check_resets(graph, S)
    R = LB.reset_interval(T)
    depth = LB.depths(graph)
    flush = max(depth.values()) + 1
    total = S * R + flush
    chunk = max(R, chunk_samples * R)
    stream = pixel_stream(graph, images, R, flush)
    names = recorded(graph)
    run_cfg = run_cfg or sim_config()
    start, done, restarts, resume = time.perf_counter(), 0, 0, 0
    stages = StageProgress(progress)  # processes built, compiled, started
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc="lava", unit="step", disable=not sys.stderr.isatty())  # no redraws in logs
    with run_temp_dir("lava") as tmp:
        paths = {name: os.path.join(tmp, f"{i}.npy") for i, name in enumerate(names)}
        paths.update({v_key(name): os.path.join(tmp, f"{i}.v.npy") for i, name in enumerate(integrators(graph))})
        for key, path in paths.items():
            node, is_v = recorded_node(key)
            dtype = np.int32 if is_v else RECORDED[value_kind(graph, node)]
            np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(total, *LB.flat(graph.nodes[node].shape)))
        while True:
            net, net_cfg = _network_with_recorders(
                graph, stream[:, resume:], paths, depth, resume, run_cfg, progress=stages
            )
            first = resume
            try:
                # always stopped, also on errors and Ctrl-C; no child process or shared memory left
                with LavaSession(net.source, net_cfg, stall_s=stall_s, progress=stages) as session:
                    while first < total:
                        n = min(chunk, total - first)
                        session.run(n)
                        first, done = first + n, done + n
                        if bar is not None:
                            bar.update(n)
                break
            except LavaStallError as err:
                restarts += 1
                if restarts > MAX_RESTARTS:
                    raise
                # every step before `first` is recorded; rows from `resume` on are simulated again
                resume = max(0, (first - flush) // R * R)
                warnings.warn(
                    f"{err}; restarting the Lava network at sample {resume // R} "
                    f"(restart {restarts} of at most {MAX_RESTARTS})",
                    RuntimeWarning,
                    stacklevel=2,
                )
        if bar is not None:
            bar.close()
        spikes = {name: align(np.load(paths[name]), S, T, R, depth[name], graph.nodes[name].shape) for name in names}
        for name in integrators(graph):
            spikes[v_key(name)] = align(np.load(paths[v_key(name)]), S, T, R, depth[name], graph.nodes[name].shape)
    wall = time.perf_counter() - start
    counted = {**spikes, "input": images} if value_kind(graph, "input") == "spikes" else spikes
    counter = Counter(graph)
    logits = replay(graph, counted, counter)
    preds = np.argmax(logits, axis=-1) if logits is not None else np.zeros(0, np.int64)
    report = build_report(graph, counter, preds, labels, wall, LB.EXECUTOR)
    report.update(
        {
            "lava": {
                "reset_interval": R,
                "steps": int(done),
                "processes": len(net.processes),
                "host_only": net.host_only,
                "max_depth": max(depth.values()),
                "restarts": restarts,
                "state": held_state(net.processes),  # per process: its state Vars
            },
            "latency_timesteps": T + max(depth.values()),
        }
    )
    return report, spikes


def _check_resets(graph: Graph, samples: int) -> None:
    """Samples stream back to back through one network: a process without a reset interval would carry
    its state from one sample into the next, which the reference (zero state per sample) does not."""
    if samples <= 1:
        return
    for name in graph.order:
        # a synapse's delay buffer is not reset either: its pending sums would land in the next sample
        if not LOWERINGS.get(graph.nodes[name].op, name).resets or "delay" in graph.nodes[name].params:
            raise ConversionError(
                f"node '{name}' ({graph.nodes[name].op}): its Lava process has no reset between "
                f"samples, so {samples} samples cannot stream through one network; run one "
                f"sample (one continuous input stream) per call"
            )


def _network_with_recorders(
    graph: Graph,
    stream: np.ndarray,
    paths: dict[str, str],
    depth: dict[str, int],
    offset: int,
    run_cfg: Any,
    in_model: bool = True,
    progress: StageProgress = QUIET,
) -> tuple[LavaNetwork, Any]:
    """(the Lava network fed with ``stream``, its run config): each spiking node recorded into its memory map
    from row ``offset`` on, a node at depth d leaving its first d rows alone (they belong to earlier samples).
    A LIF records what it sends inside its own model (procs/recording_models.py: no process added); any other
    spiking process feeds a SpikeRecorder (every one does with ``in_model=False``: the benchmark's baseline)."""
    from spikeport.runtime.lava.procs.processes import SpikeRecorder, StateRecorder
    from spikeport.runtime.lava.procs.recording_models import record_in_models

    net = LB.build_network(graph, stream, progress=progress)
    by_name = {proc.name: proc for proc in net.processes}
    spikes: dict[str, dict[str, Any]] = {}
    for key, path in paths.items():
        node, is_v = recorded_node(key)
        spec: dict[str, Any] = {"shape": LB.flat(graph.nodes[node].shape), "path": path, "offset": offset}
        spec["skip"] = depth[node] if offset else 0
        if is_v:  # an integrator's v, read from its LIF after every step
            rec = StateRecorder(**spec)
            rec.ref.connect_var(by_name[node].v)
            net.processes.append(rec)
        else:
            spikes[node] = spec
    ports = {node: out_port(net, node) for node in spikes}
    own = {ports[node].process: spec for node, spec in spikes.items() if in_model and ports[node].name == "s_out"}
    run_cfg, recording = record_in_models(run_cfg, own)
    for node, spec in spikes.items():
        if ports[node].process not in recording:
            rec = SpikeRecorder(**spec)
            ports[node].connect(rec.s_in)
            net.processes.append(rec)
    return net, run_cfg


def align(stream: np.ndarray, S: int, T: int, R: int, d: int, shape: tuple[int, ...]) -> np.ndarray:
    """[steps, n] as recorded at Lava steps 1.. -> [S, T, *shape]: sample s, step t sits at s*R + t + d."""
    idx = (np.arange(S)[:, None] * R + np.arange(T)[None, :] + d).reshape(-1)
    return np.asarray(stream[idx]).reshape(S, T, *shape)


@dataclass
class _HostStep:
    """What a kernel's ``step`` sees when the host replays it (``spikeport.ir.kernels.base.Step``)."""

    qparams: Mapping[str, Mapping[str, Any]]
    prepared: dict[str, Any] = field(default_factory=dict)
    ops: Any = fx.INT
    t: int = 0
    images: Any = None


def replay(
    graph: Graph, spikes: Spikes, observer: Callable[[int, str, Any, dict[str, Any]], None] | None = None
) -> np.ndarray | None:
    """The host's view of a Lava run, time step by time step: recorded spikes as recorded, residual sums
    and the readout (value kinds ``integer`` / ``logits``) recomputed from them by their kernel records'
    ``step``, every other value (synaptic activations inside Lava) as zeros. ``observer(t, name, value,
    extra)`` sees each (a ``Counter``: the reference's counts; activations are not recorded, so
    ``act_overflows`` stays 0). Returns the logits summed over T (None without a readout)."""
    S = next(iter(spikes.values())).shape[0] if spikes else 0
    ctx = _HostStep({n.name: n.params for n in graph.nodes.values()})
    kinds = {name: value_kind(graph, name) for name in graph.order}
    replayed = [name for name in graph.order if name not in spikes and kinds[name] in HOST_REPLAYED]
    for name in replayed:
        prepare = kernel(graph.nodes[name].op).prepare
        if prepare is not None:
            ctx.prepared[name] = prepare(graph.nodes[name], graph.nodes[name].params)
    state: dict[str, dict[str, Any]] = {name: {} for name in replayed}
    logits = None
    for t in range(graph.T):
        ctx.t = t
        values: dict[str, np.ndarray] = {}
        for name in graph.order:
            node = graph.nodes[name]
            if name in spikes:
                out = spikes[name][:, t].astype(np.int64)
            elif name in state:
                out = kernel(node.op).step(ctx, node, [values[s] for s in node.inputs], state[name], {})
            else:
                out = np.zeros((S, *node.shape), np.int64)
            values[name] = out
            if kinds[name] == "logits":
                logits = out if logits is None else logits + out
            if observer is not None:
                observer(t, name, out, {"a_in": np.zeros(1)})
    return logits


def count_from_spikes(graph: Graph, spikes: Spikes) -> Counter:
    """The reference simulator's counters, fed with recorded spikes (activations are not recorded, so
    ``act_overflows`` stays 0 for Lava runs)."""
    counter = Counter(graph)
    replay(graph, spikes, counter)
    return counter


def first_divergence(graph: Graph, a: Spikes, b: Spikes) -> dict[str, Any] | None:
    """The first (layer in topological order, time step, sample, neuron) where two spike records differ."""
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


def compare_with_reference(
    graph: Graph, report: dict[str, Any], spikes: Spikes, ref_report: dict[str, Any], ref_spikes: Spikes
) -> dict[str, Any]:
    """A run (report + spikes) against the reference simulator's on the same inputs: per spiking layer the
    spike totals and whether every time step agrees, the first divergence, and the predictions."""
    rows, spiking = [], set(recorded(graph))
    for a, b in zip(report["layers"], ref_report["layers"], strict=True):
        if a["name"] in spiking:
            rows.append(
                {
                    "layer": a["name"],
                    "spikes": sum(a["spikes"]),
                    "reference_spikes": sum(b["spikes"]),
                    "per_step_equal": a["spikes"] == b["spikes"],
                }
            )
    divergence = first_divergence(graph, ref_spikes, spikes)
    preds, ref_preds = report["predictions"], ref_report["predictions"]
    return {
        "against": "reference",
        "identical": divergence is None and preds == ref_preds,
        "first_divergence": divergence,
        "layers": rows,
        "prediction_agreement": sum(p == q for p, q in zip(preds, ref_preds, strict=True)) / max(len(ref_preds), 1),
    }


def reference_spikes(graph: Graph, images: np.ndarray, batch_size: int = 64) -> tuple[dict[str, Any], Spikes]:
    """(report, {node: spikes [S, T, *shape]}) from the reference simulator, for comparisons."""
    from spikeport.runtime.sim.reference import ReferenceSimulator

    sim = ReferenceSimulator(graph)
    names = recorded(graph)
    # graded spikes (sigma_delta) need their full width: int8 would wrap them silently
    out = {n: np.zeros((len(images), graph.T, *graph.nodes[n].shape), RECORDED[value_kind(graph, n)]) for n in names}
    out.update(
        {v_key(n): np.zeros((len(images), graph.T, *graph.nodes[n].shape), np.int32) for n in integrators(graph)}
    )
    counter = Counter(graph)
    preds = []
    start = time.perf_counter()
    for i in range(0, len(images), batch_size):

        def observe(t: int, name: str, value: Any, extra: dict[str, Any], i: int = i) -> None:
            if name in out:
                out[name][i : i + len(value), t] = value
            if v_key(name) in out:
                out[v_key(name)][i : i + len(value), t] = extra["v"]

        logits = sim.run_batch(images[i : i + batch_size], counter, observer=observe)
        if logits is not None:
            preds.append(np.argmax(logits, -1))
    report = build_report(
        graph,
        counter,
        np.concatenate(preds) if preds else np.zeros(0, np.int64),
        None,
        time.perf_counter() - start,
        "reference",
    )
    return report, out
