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
from typing import Any

import numpy as np
from tqdm import tqdm

from spikeport.atomic import run_temp_dir
from spikeport.errors import ConversionError, LavaStallError
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import value_kind
from spikeport.run_report import LavaRun, RunReport
from spikeport.runtime.counter import Counter, build_report
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
    if value_kind(graph, "input") in (SPIKES, GRADED):  # spikes / integers [S, T, ...]: sample s, step t at s*R + t
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
) -> RunReport:
    """The run report of inputs [S, ...] (images [S, H, W, C]; spikes / integers [S, T, ...] for a netx input)
    on Lava fixed_pt, with every spiking layer's spikes [S, T, *shape] in ``report.recording``.

    A run whose Lava children all sit idle for ``stall_s`` (a deadlock inside Lava's channels, seen once
    under heavy load) is torn down and restarted from a sample early enough that every recorded step
    after it is simulated again; up to MAX_RESTARTS times, counted in the report (``lava.restarts``)."""
    compat.import_lava()

    S, T = len(images), graph.T
    _check_resets(graph, S)
    R = LB.reset_interval(T)
    depth = LB.depths(graph)
    flush = max(depth.values()) + 1
    total = S * R + flush
    chunk = max(R, chunk_samples * R)
    stream = pixel_stream(graph, images, R, flush)
    run_cfg = run_cfg or sim_config()
    start, done, restarts, resume = time.perf_counter(), 0, 0, 0
    stages = StageProgress(progress)  # processes built, compiled, started
    bar = None
    if progress:
        bar = tqdm(total=total, desc="lava", unit="step", disable=not sys.stderr.isatty())  # no redraws in logs
    with run_temp_dir("lava") as tmp:
        paths = {key: os.path.join(tmp, f"{i}.npy") for i, key in enumerate(recording_keys(graph))}
        for key, path in paths.items():
            shape = (total, *LB.flat(graph.nodes[recorded_node(key)[0]].shape))
            np.lib.format.open_memmap(path, mode="w+", dtype=dtype_of(graph, key), shape=shape)
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
        spikes = {
            key: align(np.load(path), S, T, R, depth[recorded_node(key)[0]], graph.nodes[recorded_node(key)[0]].shape)
            for key, path in paths.items()
        }
    lava = LavaRun(
        reset_interval=R,
        steps=int(done),
        processes=len(net.processes),
        host_only=net.host_only,
        max_depth=max(depth.values()),
        restarts=restarts,
        state=held_state(net.processes),  # per process: its state Vars
    )
    return lava_report(graph, images, labels, spikes, lava, time.perf_counter() - start)


def lava_report(
    graph: Graph, images: np.ndarray, labels: np.ndarray | None, spikes: Spikes, lava: LavaRun, wall: float
) -> RunReport:
    """The run report of a Lava run from its recorded spikes: the host replays the sums and the readout and
    counts every layer as the reference does (a whole or a partitioned run alike)."""
    counted = {**spikes, "input": images} if value_kind(graph, "input") == SPIKES else spikes
    counter = Counter(graph)
    logits = replay(graph, counted, counter)
    preds = np.argmax(logits, axis=-1) if logits is not None else np.zeros(0, np.int64)
    report = build_report(
        graph, counter, preds, labels, wall, LB.EXECUTOR, samples=len(images),
        latency_timesteps=graph.T + lava.max_depth, lava=lava,
    )  # fmt: skip
    report.recording = spikes
    return report


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
    nodes: list[str] | None = None,
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
