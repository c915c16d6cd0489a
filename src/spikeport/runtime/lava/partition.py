"""Partitioned Lava runs: the network cut into parts that run one after another, each its own Lava network.

Lava's CPU runtime forks one OS process per ProcessModel, and each costs 15-20 MB that no setting removes (Python
objects of the parent copied on write, Lava's per-process channels, threads and step buffers; docs/lava_backend.md
"Memory at the papers' sizes"): a whole spikformer-4-384 with chip-native SSA is 307 processes and 4.4 GB of summed
PSS (LRF-causal: 315, 6.3 GB). A partitioned run
bounds the processes alive at a time, so memory follows the largest part, not the network.

Cuts fall where the rest of the graph reads one node only (``cut_points``): between the stem's stages, and at
every residual sum of the blocks (the relay chain of docs/lava_backend.md). Part k + 1 is the whole network's
processes for its nodes, with the same delays and resets, shifted by the depth of its boundary node; in place of
the boundary's own processes a RingBuffer plays what they sent, computed from part k's recorded spikes (a
residual sum is replayed on the host from its sources' spikes, as ``run_lava`` replays it for the readout). So
every part computes exactly the spikes it computes inside the whole network: bit-exact by construction, which
tests/test_lava_partition.py checks against the reference in every layer. The cut is the one a multi-chip
mapping makes: the boundary's spikes are what crosses between chips.

The price is time: each part forks, compiles and tears down its own processes (the same count in total) and
runs the samples' steps plus its own depth. ``parts`` splits the network into that many parts with the fewest
processes in the largest; ``max_processes`` makes parts of at most that many (a segment between two cuts that
is larger stays whole). Segments go into parts by ``runtime.placement``'s rule, the one check-hw places neuron
groups onto chips with.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spikeport.errors import ConfigError
from spikeport.ir.graph import Graph
from spikeport.ir.kernels import value_kind
from spikeport.run_report import LavaRun, RunReport
from spikeport.runtime.lava import backend as LB, compat
from spikeport.runtime.lava.lowerings import LOWERINGS
from spikeport.runtime.lava.progress import StageProgress
from spikeport.runtime.lava.run import (
    PartRun,
    check_resets,
    lava_report,
    pixel_stream,
    sim_config,
    stream_part,
    value_stream,
)
from spikeport.runtime.placement import Wide, place, smallest_capacity
from spikeport.runtime.recording import Spikes
from spikeport.runtime.replay import replay
from spikeport.value_kinds import INTEGER, SPIKES


@dataclass(frozen=True)
class Part:
    """One Lava network of a partitioned run: the nodes it lowers (graph order) and the node whose recorded output
    feeds it (None: the graph's input pixels), with the Lava processes it builds (recorders not counted)."""

    nodes: tuple[str, ...]
    boundary: str | None
    processes: int


def cut_points(graph: Graph) -> list[str]:
    """The nodes after which the graph can be cut: every later node that runs on Lava reads, of the nodes up to
    this one, this one only; and it is a spiking layer or a relayed residual sum (what a RingBuffer can stand in
    for). The last node is not one."""
    on_lava = {n for n in graph.order if not LOWERINGS.get(graph.nodes[n].op, n).on_host}
    relays = LB.relayed(graph)
    cuts, open_reads = [], set[str]()
    readers_left = {name: {c.name for c in graph.consumers(name) if c.name in on_lava} for name in graph.order}
    for name in graph.order[:-1]:
        for src in graph.nodes[name].inputs:
            readers_left[src].discard(name)
            if not readers_left[src]:
                open_reads.discard(src)
        if readers_left[name]:
            open_reads.add(name)
        kind = value_kind(graph, name)
        if open_reads == {name} and (kind == SPIKES or (kind == INTEGER and name in relays)):
            cuts.append(name)
    return cuts


def segments(graph: Graph) -> list[tuple[str | None, tuple[str, ...]]]:
    """(boundary, nodes) between consecutive cut points: the smallest parts a run can be cut into."""
    cuts = cut_points(graph)
    out: list[tuple[str | None, tuple[str, ...]]] = []
    start, boundary = 0, None
    for cut in [*cuts, graph.order[-1]]:
        end = graph.order.index(cut) + 1
        out.append((boundary, tuple(graph.order[start:end])))
        start, boundary = end, cut
    return out


def lowered(graph: Graph, nodes: Sequence[str]) -> list[str]:
    """The nodes of a part that get Lava processes: all but a residual sum no other node of the part reads (the
    last node of a part that ends at a sum: the host replays it, and the next part's RingBuffer sends it)."""
    inside = set(nodes)
    return [n for n in nodes if value_kind(graph, n) != INTEGER or any(c.name in inside for c in graph.consumers(n))]


def count_processes(graph: Graph, nodes: Sequence[str], boundary: str | None) -> int:
    """The Lava processes a part builds (a throwaway build with a one-step input; the stand-in RingBuffer counts)."""
    width = _width(graph, boundary)
    net = LB.build_network(graph, np.zeros((width, 1), np.int32), lowered(graph, nodes), boundary)
    LB.release(net.processes)
    return len(net.processes)


def _width(graph: Graph, boundary: str | None) -> int:
    return int(np.prod(graph.nodes["input" if boundary is None else boundary].shape))


def plan_parts(graph: Graph, parts: int | None = None, max_processes: int | None = None) -> list[Part]:
    """The parts of a partitioned run: ``parts`` consecutive pieces with the fewest processes in the largest, or
    pieces of at most ``max_processes`` (a segment between two cut points is never split)."""
    if (parts is None) == (max_processes is None):
        raise ConfigError("partitioned Lava run: give exactly one of parts (N >= 1) or max_processes")
    if parts is not None and parts < 1 or max_processes is not None and max_processes < 1:
        raise ConfigError(f"parts = {parts}, max_processes = {max_processes}: expected a positive integer")
    segs = segments(graph)
    pieces = [(str(i), count_processes(graph, nodes, boundary)) for i, (boundary, nodes) in enumerate(segs)]
    if parts is not None:
        if parts > len(segs):
            raise ConfigError(
                f"parts = {parts}: this graph has {len(segs)} places to cut it into at most {len(segs)} parts"
            )
        limit = smallest_capacity(pieces, parts)
    else:
        assert max_processes is not None
        limit = max_processes
    out = []
    for group in place(pieces, limit, Wide.ALONE).groups():  # a segment over the limit: a part of its own
        first, last = int(group[0].name), int(group[-1].name)
        boundary = segs[first][0]
        nodes = tuple(n for _, seg in segs[first : last + 1] for n in seg)
        out.append(Part(nodes, boundary, count_processes(graph, nodes, boundary)))
    return out


def run_lava_partitioned(
    graph: Graph,
    images: np.ndarray,
    labels: np.ndarray | None = None,
    *,
    parts: int | None = None,
    max_processes: int | None = None,
    chunk_samples: int = 16,
    progress: bool = False,
    run_cfg: Any = None,
    stall_s: float = 60.0,
    on_part: Callable[[int, Part], None] | None = None,
) -> RunReport:
    """The run report of images [S, H, W, C] on Lava fixed_pt, with every spiking layer's spikes in
    ``report.recording``, as ``run_lava`` returns it, with the network run as ``parts`` pieces (or pieces of at
    most ``max_processes`` processes) one after another (see the module docstring), each streamed by
    ``run.stream_part`` as a whole run is. The report's ``lava.parts`` lists each piece: its first and last node,
    boundary, processes, steps and wall time. ``on_part(index, part)`` is called before each part starts (the
    benchmark measures the parts' memory with it). A part whose Lava children stall is restarted as a whole run
    is (``run.stream_part``), at most MAX_RESTARTS times each."""
    compat.import_lava()
    S, T = len(images), graph.T
    check_resets(graph, S)
    R = LB.reset_interval(T)
    depth = LB.depths(graph)
    plan = plan_parts(graph, parts, max_processes)
    run_cfg = run_cfg or sim_config()
    start = time.perf_counter()
    spikes: Spikes = {}
    rows: list[dict[str, Any]] = []
    state: list[dict[str, Any]] = []
    host_only: list[str] = []
    restarts = 0
    feed: np.ndarray | None = None  # the boundary's values [S, T, *shape] for the next part
    for index, part in enumerate(plan):
        if on_part is not None:
            on_part(index, part)
        run, row = _run_part(graph, images, part, (index, len(plan)), feed, depth, chunk_samples, run_cfg,
                             stall_s, progress)  # fmt: skip
        spikes.update(run.spikes)
        state += run.state
        host_only += [n for n in run.host_only if n not in host_only]
        restarts += run.restarts
        rows.append(row)
        if index + 1 < len(plan):
            boundary = plan[index + 1].boundary
            assert boundary is not None  # only the first part reads the pixels
            feed = boundary_values(graph, boundary, spikes, S)
    lava = LavaRun(
        reset_interval=R,
        steps=sum(r["steps"] for r in rows),
        processes=sum(p.processes for p in plan),
        host_only=host_only,
        max_depth=max(depth.values()),
        restarts=restarts,
        state=state,
        parts=rows,
    )
    return lava_report(graph, images, labels, spikes, lava, time.perf_counter() - start)


def _run_part(
    graph: Graph,
    images: np.ndarray,
    part: Part,
    of: tuple[int, int],
    feed: np.ndarray | None,
    depth: dict[str, int],
    chunk_samples: int,
    run_cfg: Any,
    stall_s: float,
    progress: bool,
) -> tuple[PartRun, dict[str, Any]]:
    """Part ``of[0]`` of ``of[1]`` streamed as one Lava network, fed the pixels (the first part) or ``feed``, the
    recorded values [S, T, *shape] of its boundary; (its run, its row of the report's ``lava.parts``)."""
    S, R = len(images), LB.reset_interval(graph.T)
    name = f"lava part {of[0] + 1}/{of[1]}"
    _say(progress, f"{name}: {part.processes} processes, {part.nodes[0]} .. {part.nodes[-1]}")
    offset = depth[part.boundary] if part.boundary is not None else 0
    local = {n: depth[n] - offset for n in part.nodes}
    steps = S * R + max(local.values()) + 1
    if part.boundary is None:
        stream = pixel_stream(graph, images, R, steps - S * R)
    else:
        assert feed is not None  # the part before computed it
        stream = value_stream(feed, R, steps - S * R)
    t0 = time.perf_counter()
    run = stream_part(
        graph, stream, local, S, lowered(graph, part.nodes), part.boundary, chunk_samples=chunk_samples,
        run_cfg=run_cfg, stall_s=stall_s, stages=StageProgress(progress, name), label=f"Lava part {of[0] + 1}",
    )  # fmt: skip
    row = {"first": part.nodes[0], "last": part.nodes[-1], "boundary": part.boundary, "processes": part.processes,
           "steps": steps, "wall_s": time.perf_counter() - t0}  # fmt: skip
    return run, row


def _say(progress: bool, line: str) -> None:
    if progress:
        print(line, file=sys.stderr, flush=True)


def boundary_values(graph: Graph, boundary: str, spikes: Spikes, samples: int) -> np.ndarray:
    """[S, T, *shape]: what ``boundary``'s processes send: its recorded spikes, or a residual sum the host
    replays from the recorded spikes of its sources (``runtime.replay``, as a whole run's readout is)."""
    if boundary in spikes:
        return np.asarray(spikes[boundary])
    out = np.zeros((samples, graph.T, *graph.nodes[boundary].shape), np.int64)

    def keep(t: int, name: str, value: Any, extra: dict[str, Any]) -> None:
        if name == boundary:
            out[:, t] = value

    replay(graph, spikes, keep, nodes=_sources(graph, boundary))
    return out


def _sources(graph: Graph, name: str) -> list[str]:
    """``name`` and the host-replayed nodes behind it, down to recorded spiking nodes, in graph order."""
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if value_kind(graph, n) == INTEGER:
            todo += graph.nodes[n].inputs
    return [n for n in graph.order if n in seen]
