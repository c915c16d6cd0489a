"""Run an artifact on the Lava CPU simulator (``Loihi2SimCfg(select_tag='fixed_pt')``) and report.

Samples stream through the network back to back (see backend); every spiking node's output is
recorded by a ``SpikeRecorder`` and read back after each chunk of samples. The host then replays the rest
from the recordings: residual sums (value kind ``integer``) and the readout (``logits``) by their kernel
records' ``step``, the same code as the reference simulator's. The network is always stopped, also on
errors and Ctrl-C. ``stream_part`` is the one streaming loop: a whole run streams the network as one part, a
partitioned run (``partition.py``) each of its parts in turn.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spikeport.atomic import run_temp_dir
from spikeport.errors import ConversionError, LavaStallError
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import value_kind
from spikeport.run_report import LavaRun, RunReport
from spikeport.runtime.counter import RunCounter, build_report
from spikeport.runtime.lava import backend as LB, compat
from spikeport.runtime.lava.lowerings import LOWERINGS, LavaNetwork
from spikeport.runtime.lava.lowerings.builder import out_port
from spikeport.runtime.lava.progress import QUIET, StageProgress
from spikeport.runtime.lava.session import LavaSession
from spikeport.runtime.lava.state import held_state
from spikeport.runtime.recording import Spikes, dtype_of, recorded_node, recording_keys
from spikeport.runtime.replay import replay
from spikeport.value_kinds import GRADED, SPIKES


def pixel_stream(graph: Graph, images: np.ndarray, R: int, extra_steps: int) -> np.ndarray:
    """[n_pixels, steps]: sample s occupies steps s*R .. s*R + R - 1 (the image repeated), then zeros."""
    a = graph.nodes["input"].attrs
    if value_kind(graph, "input") in (SPIKES, GRADED):  # spikes / integers [S, T, ...]
        return value_stream(images, R, extra_steps)
    lim = 2 ** (a["bits"] - 1) - 1
    pixels = np.clip(np.rint(images * 2.0 ** a["frac_bits"]), -lim, lim).astype(np.int32)
    flat = pixels.reshape(len(images), -1).T  # [n_pixels, S]
    stream = np.repeat(flat, R, axis=1)
    return np.concatenate([stream, np.zeros((flat.shape[0], extra_steps), np.int32)], axis=1)


def value_stream(values: np.ndarray, R: int, extra_steps: int) -> np.ndarray:
    """[n, S R + extra]: sample s, step t of ``values`` [S, T, *shape] at column s R + t (zeros elsewhere)."""
    S, T = values.shape[:2]
    stream = np.zeros((int(np.prod(values.shape[2:])), S * R + extra_steps), np.int32)
    cols = (np.arange(S)[:, None] * R + np.arange(T)[None, :]).reshape(-1)
    stream[:, cols] = values.reshape(S * T, -1).T
    return stream


def sim_config(fast: bool = True) -> Any:  # a Lava Loihi2SimCfg (untyped)
    """Loihi2SimCfg(fixed_pt); ``fast`` swaps in the bit-exact faster CPU models of Conv/Sparse/DelaySparse."""
    compat.import_lava()
    from lava.magma.core.run_configs import Loihi2SimCfg

    if not fast:
        return Loihi2SimCfg(select_tag="fixed_pt")
    from spikeport.runtime.lava.procs.fast_models import exception_map

    return Loihi2SimCfg(select_tag="fixed_pt", exception_proc_model_map=exception_map())


MAX_RESTARTS = 2


@dataclass(frozen=True)
class PartRun:
    """What one Lava network of a run recorded and held (a whole run is one such network)."""

    spikes: Spikes  # each recorded node of the network's nodes: [S, T, *shape]
    state: list[dict[str, Any]]  # per process: its state Vars (state.held_state)
    host_only: list[str]  # the nodes it computes on the host
    processes: int  # the Lava processes it built, recorders included
    steps: int  # Lava steps run, those run again after a restart included
    restarts: int


def run_lava(
    graph: Graph,
    images: np.ndarray,
    labels: np.ndarray | None = None,
    chunk_samples: int = 16,
    progress: bool = False,
    run_cfg: Any = None,
    stall_s: float = 60.0,
) -> RunReport:
    """The run report of inputs [S, ...] (images [S, H, W, C]; spikes / integers [S, T, ...] for a netx input)
    on Lava fixed_pt, with every spiking layer's spikes [S, T, *shape] in ``report.recording``: the whole network
    streamed as one part (``stream_part``), restarted where its Lava children stall (``lava.restarts``)."""
    compat.import_lava()

    S = len(images)
    check_resets(graph, S)
    R = LB.reset_interval(graph.T)
    depth = LB.depths(graph)
    stream = pixel_stream(graph, images, R, max(depth.values()) + 1)
    start = time.perf_counter()
    run = stream_part(
        graph, stream, depth, S, chunk_samples=chunk_samples, run_cfg=run_cfg or sim_config(), stall_s=stall_s,
        stages=StageProgress(progress),  # processes built, compiled, started, steps run
    )  # fmt: skip
    lava = LavaRun(
        reset_interval=R,
        steps=run.steps,
        processes=run.processes,
        host_only=run.host_only,
        max_depth=max(depth.values()),
        restarts=run.restarts,
        state=run.state,
    )
    return lava_report(graph, images, labels, run.spikes, lava, time.perf_counter() - start)


def stream_part(
    graph: Graph,
    stream: np.ndarray,
    depth: Mapping[str, int],
    samples: int,
    nodes: Sequence[str] | None = None,
    boundary: str | None = None,
    *,
    chunk_samples: int = 16,
    run_cfg: Any = None,
    stall_s: float = 60.0,
    stages: StageProgress = QUIET,
    label: str = "the Lava network",
) -> PartRun:
    """Stream ``samples`` samples through one Lava network and record every spiking node it lowers: the whole
    graph (``nodes`` None), or a part of a partitioned run that lowers ``nodes`` fed by the recorded output of
    ``boundary`` (``backend.build_network``). ``stream`` [n, steps] is what its input RingBuffer plays (S R steps
    and then the network's depth + 1, so that the last sample leaves its deepest node), ``depth`` each node's Lava
    depth counted from that input. Each chunk of ``chunk_samples`` samples is recorded into memory maps on disk,
    read back and aligned to [S, T, *shape] once the stream has run, so memory follows the recordings, not Lava's
    buffers.

    A network whose Lava children all sit idle for ``stall_s`` (a deadlock inside Lava's channels, seen once
    under heavy load) is torn down and restarted from a sample early enough that every recorded step after it is
    simulated again; up to MAX_RESTARTS times (``label`` names it in the warning)."""
    S, R, steps = samples, LB.reset_interval(graph.T), stream.shape[1]
    flush = steps - S * R
    inside = set(graph.order if nodes is None else nodes)
    keys = [key for key in recording_keys(graph) if recorded_node(key)[0] in inside]
    chunk = max(R, chunk_samples * R)
    run_cfg = run_cfg or sim_config()
    done, restarts, resume = 0, 0, 0
    with run_temp_dir("lava") as tmp:
        paths = {key: os.path.join(tmp, f"{i}.npy") for i, key in enumerate(keys)}
        for key, path in paths.items():
            shape = (steps, *LB.flat(graph.nodes[recorded_node(key)[0]].shape))
            np.lib.format.open_memmap(path, mode="w+", dtype=dtype_of(graph, key), shape=shape)
        while True:
            net, net_cfg = network_with_recorders(
                graph, stream[:, resume:], paths, depth, resume, run_cfg, progress=stages, nodes=nodes,
                boundary=boundary,
            )  # fmt: skip
            first = resume
            try:
                # always stopped, also on errors and Ctrl-C; no child process or shared memory left
                with LavaSession(net.source, net_cfg, stall_s=stall_s, progress=stages) as session:
                    with stages.stage("run", "steps", steps - resume) as advance:
                        while first < steps:
                            n = min(chunk, steps - first)
                            session.run(n)
                            first, done = first + n, done + n
                            advance(n)
                break
            except LavaStallError as err:
                LB.release(net.processes)
                restarts += 1
                if restarts > MAX_RESTARTS:
                    raise
                # every step before `first` is recorded; rows from `resume` on are simulated again
                resume = max(0, (first - flush) // R * R)
                warnings.warn(
                    f"{err}; restarting {label} at sample {resume // R} (restart {restarts} of at most {MAX_RESTARTS})",
                    RuntimeWarning,
                    stacklevel=3,
                )
        spikes: Spikes = {}
        for key, path in paths.items():
            node = recorded_node(key)[0]
            spikes[key] = align(np.load(path), S, graph.T, R, depth[node], graph.nodes[node].shape)
    held = held_state(net.processes)
    LB.release(net.processes)  # Lava's servers would keep every process (and weight matrix) of every network
    return PartRun(spikes, held, list(net.host_only), len(net.processes), done, restarts)


def lava_report(
    graph: Graph, images: np.ndarray, labels: np.ndarray | None, spikes: Spikes, lava: LavaRun, wall: float
) -> RunReport:
    """The run report of a Lava run from its recorded spikes: the host replays the sums and the readout and
    counts every layer as the reference does (a whole or a partitioned run alike)."""
    counted = {**spikes, "input": images} if value_kind(graph, "input") == SPIKES else spikes
    counter = RunCounter(graph)
    logits = replay(graph, counted, counter)
    preds = np.argmax(logits, axis=-1) if logits is not None else np.zeros(0, np.int64)
    report = build_report(
        graph, counter, preds, labels, wall, LB.EXECUTOR, samples=len(images),
        latency_timesteps=graph.T + lava.max_depth, lava=lava,
    )  # fmt: skip
    report.recording = spikes
    return report


def check_resets(graph: Graph, samples: int) -> None:
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


def network_with_recorders(
    graph: Graph,
    stream: np.ndarray,
    paths: dict[str, str],
    depth: Mapping[str, int],
    offset: int,
    run_cfg: Any,
    in_model: bool = True,
    progress: StageProgress = QUIET,
    nodes: Sequence[str] | None = None,
    boundary: str | None = None,
) -> tuple[LavaNetwork, Any]:
    """(the Lava network fed with ``stream``, its run config): each spiking node recorded into its memory map
    from row ``offset`` on, a node at depth d leaving its first d rows alone (they belong to earlier samples).
    A LIF records what it sends inside its own model (procs/recording_models.py: no process added); any other
    spiking process feeds a SpikeRecorder (every one does with ``in_model=False``: the benchmark's baseline).
    ``nodes`` and ``boundary``: a part of a partitioned run (``backend.build_network``), its own nodes recorded."""
    from spikeport.runtime.lava.procs.processes import SpikeRecorder, StateRecorder
    from spikeport.runtime.lava.procs.recording_models import record_in_models

    net = LB.build_network(graph, stream, nodes, boundary, progress=progress)
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
