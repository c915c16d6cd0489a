"""Long use in one process (issue 35, requirement 5): what a notebook does over an afternoon, 100 conversions and 50
Lava runs through ``spikeport.api``, with this process's file descriptors, its /dev/shm segments, its child
processes and its memory (PSS of the process and its children) sampled after each step. Lava's own leaks
(lava#71, #88, #336: shared memory and processes left by runs) must not show: nothing may grow past the bounds
below once the first few steps have warmed the caches (torch, Lava's compiler, numpy's allocator).

Deselected by default (`-m soak` runs it: about 6 minutes on 2 cores); CI runs it as its own step
(``make test-soak``). Also here: two Lava runs started at once from two threads."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field

import pytest

from conftest import spiky_model
from spikeport.runtime.lava.session import SHM_DIR, child_pids, is_resource_tracker

pytestmark = pytest.mark.lava

CONVERSIONS, LAVA_RUNS, WARMUP = 100, 50, 5
# bounds on the growth from the end of the warm-up to the end (measured: docs/reliability.md, "Long use")
MAX_FD_GROWTH = 2  # a lazily opened library file at most
MAX_PSS_GROWTH_MB = 60.0
MAX_PSS_SLOPE_MB = 0.5  # per step, least squares over the steps after the warm-up (Lava runs once grew 12 MB a run)


@dataclass
class Samples:
    fds: list[int] = field(default_factory=list)
    shm: list[int] = field(default_factory=list)  # /dev/shm segments this process or a child maps or holds open
    children: list[int] = field(default_factory=list)  # live children other than multiprocessing's resource tracker
    pss_mb: list[float] = field(default_factory=list)  # this process and its children

    def take(self) -> None:
        self.fds.append(len(os.listdir("/proc/self/fd")))
        kids = [pid for pid in child_pids() if not is_resource_tracker(pid)]
        self.children.append(len(kids))
        self.shm.append(len(set().union(*(_shm_in_use(pid) for pid in [os.getpid(), *kids]))))
        self.pss_mb.append(sum(_pss_kb(pid) for pid in [os.getpid(), *kids]) / 1024)


def _shm_in_use(pid: int) -> set[str]:
    found = set()
    try:
        with open(f"/proc/{pid}/maps") as f:
            found |= {line.split()[-1] for line in f if f" {SHM_DIR}/" in line}
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with_target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if with_target.startswith(SHM_DIR + "/"):
                found.add(with_target)
    except OSError:  # a child that has just exited
        pass
    return found


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
    except (OSError, StopIteration):
        return 0


def _slope(values: list[float]) -> float:
    n = len(values)
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    return num / sum((i - mean_x) ** 2 for i in range(n))


def _orphans(before: set[str]) -> list[str]:
    """Segments created since ``before`` that no process on this machine maps or holds open (leaked)."""
    new = {name for name in os.listdir(SHM_DIR) if name.startswith("psm_")} - before
    if not new:
        return []
    held = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            held |= {os.path.basename(p) for p in _shm_in_use(int(entry))}
    return sorted(name for name in new - held if os.path.exists(os.path.join(SHM_DIR, name)))


def _growth(samples: Samples) -> dict[str, object]:
    after = slice(WARMUP, None)
    return {
        "fds": (samples.fds[WARMUP], max(samples.fds[after]), samples.fds[-1]),
        "shm": max(samples.shm),
        "children": max(samples.children),
        "pss_mb": (
            round(samples.pss_mb[WARMUP], 1),
            round(max(samples.pss_mb[after]), 1),
            round(samples.pss_mb[-1], 1),
        ),
        "pss_slope_mb": round(_slope(samples.pss_mb[after]), 3),
    }


@pytest.mark.soak
def test_100_conversions_and_50_lava_runs_in_one_process_leave_nothing_growing(tmp_path, monkeypatch):
    import tempfile

    from spikeport import api
    from spikeport.ir.artifact import node_digest
    from spikeport.train.checkpoint import FORMAT, VERSION, save_atomic

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # what the runs leave in TMPDIR is counted too
    model = spiky_model("ssa")
    ckpt = tmp_path / "checkpoint.pt"
    save_atomic({"format": FORMAT, "version": VERSION, "model": model.state_dict(), "epoch": 1,
                 "model_config": model.cfg.to_dict(), "train_config": {"dataset": "digits"}}, ckpt)  # fmt: skip
    shm_before = set(os.listdir(SHM_DIR))
    figures = {}

    converted, samples, start = [], Samples(), time.monotonic()
    for _ in range(CONVERSIONS):
        result = api.convert(ckpt, tmp_path / "build", onnx=False, calibrate=16, eval_samples=8)
        converted.append(tuple(node_digest(result.graph.nodes[name]) for name in result.graph.order))
        samples.take()
    figures["conversions"] = {**_growth(samples), "minutes": round((time.monotonic() - start) / 60, 2)}
    assert len(set(converted)) == 1  # the same checkpoint converts to the same nodes every time (`created` aside)

    artifact = tmp_path / "build" / "model.spk.h5"
    reference = api.run(artifact, samples=1)
    runs, samples, start = [], Samples(), time.monotonic()
    for _ in range(LAVA_RUNS):
        report = api.run(artifact, backend="lava", samples=1)
        runs.append(report.layers == reference.layers and report.predictions == reference.predictions)
        samples.take()
    figures["lava runs"] = {**_growth(samples), "minutes": round((time.monotonic() - start) / 60, 2)}
    orphans = _orphans(shm_before)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("spikeport-", "pymp-")))
    print("SOAK", json.dumps({**figures, "orphan segments": len(orphans), "left in TMPDIR": left}))

    assert all(runs), "a Lava run differed from the reference"
    for name, s in figures.items():
        warm, _, last = s["fds"]
        assert last - warm <= MAX_FD_GROWTH and s["shm"] == 0 and s["children"] == 0, (name, s)
        pss_warm, _, pss_last = s["pss_mb"]  # the peak is the allocator's: it comes and goes (conversions: +80 MB)
        assert pss_last - pss_warm <= MAX_PSS_GROWTH_MB and s["pss_slope_mb"] <= MAX_PSS_SLOPE_MB, (name, s)
    assert not orphans and not left, (orphans, left)


def test_two_lava_runs_started_at_once_from_two_threads_are_both_correct(tmp_path):
    """Starting a Lava network switches process-wide state (the start method, the at-fork hook's owner, gc.freeze):
    the second run waits for the first (LavaSession's lock) and both equal the reference."""
    from conftest import quantized_graph, random_images
    from spikeport import api
    from spikeport.ir import artifact

    path = tmp_path / "model.spk.h5"
    artifact.write(quantized_graph(spiky_model("ssa"), random_images(8, seed=1)), path)
    reference = {n: api.run(path, samples=n) for n in (1, 2)}
    results: dict[int, object] = {}

    def run(n: int) -> None:
        try:
            results[n] = api.run(path, backend="lava", samples=n)
        except Exception as err:  # noqa: BLE001 - what the test looks for
            results[n] = err

    threads = [threading.Thread(target=run, args=(n,)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    for n, got in results.items():
        assert not isinstance(got, Exception), got
        assert got.layers == reference[n].layers and got.predictions == reference[n].predictions, n
    assert sorted(results) == [1, 2]
    assert not [pid for pid in child_pids() if not is_resource_tracker(pid)]
