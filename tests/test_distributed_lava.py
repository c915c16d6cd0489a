"""Lava under torchrun (issue 45): each rank streams its share of the samples through its own Lava network, and the
one report equals one process's, the comparison with the reference included.

The torchrun tests start real jobs of two CPU processes (gloo) through ``python -m torch.distributed.run``, each rank
with its own Lava process tree, in a temporary folder of their own (``TMPDIR``), which must be empty afterwards:
every rank's run folder, multiprocessing folder and (recorded there) shared-memory segments are gone. A Lava session
also checks, as it stops, that none of its children and segments is left (``LavaSession.find_leftovers``), so a run
that ends without an error left none. The rest merges shards run one after another in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.ir import artifact
from spikeport.run_report import HardwareRun, RunReport
from spikeport.runtime.distributed import FAIL_RANK_ENV
from spikeport.runtime.executor import to_channels_last
from spikeport.runtime.merge import merge_hardware, merge_reports
from spikeport.runtime.targets import TARGETS, RunInputs, RunOptions
from test_distributed import ROOT, torchrun, whole_run

pytest.importorskip("spikeport.runtime.lava.run")
pytestmark = pytest.mark.lava


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A converted digits-tiny network (lrf_dyn) whose test data is the digits test split."""
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    path = artifact.write(graph, tmp_path_factory.mktemp("lava-ranks") / "m.spk.h5")
    return artifact.read(path), path


def without_walls(report: RunReport | dict) -> dict:
    """``whole_run`` less each part's wall time as well (a partitioned run's; the longest rank's)."""
    data = whole_run(report)
    for row in data.get("lava", {}).get("parts") or []:
        del row["wall_s"]
    return data


def private_tmp(short_tmp) -> tuple[str, dict[str, str]]:
    """A temporary folder of the job's own, short enough for the sockets Lava's processes listen on in it."""
    return str(short_tmp), {"TMPDIR": str(short_tmp)}


def left_in(folder: str) -> list[str]:
    """What a job left in its temporary folder, less torchrun's own (its agent's folder, kept after a failure)."""
    return [name for name in os.listdir(folder) if not name.startswith("torchelastic_")]


# ---- real jobs: torchrun, two CPU processes (gloo), a Lava network each ----------------------------------------------


def test_torchrun_lava_report_equals_one_process(tiny, tmp_path, short_tmp):
    """5 samples over 2 ranks (3 + 2), compared with the reference on rank 0: the report rank 0 writes equals, field for
    field, one process's run of the same samples, its comparison with the reference included."""
    from spikeport import api

    _, path = tiny
    out = tmp_path / "sharded.json"
    folder, env = private_tmp(short_tmp)
    args = ["run", str(path), "--backend", "lava", "--samples", "5", "--compare", "reference", "--json", str(out)]
    proc = torchrun(*args, "--quiet", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("wrote ") == 1  # rank 0 only
    assert left_in(folder) == []
    sharded = RunReport.from_json(out)
    one = api.run(path, "lava", "reference", samples=5)
    assert sharded.executor == "lava-fixed_pt" and sharded.samples == 5 and sharded.identical
    assert sharded.lava is not None and sharded.lava.processes > 10
    assert whole_run(sharded) == whole_run(one)


def test_a_failing_rank_stops_the_lava_shares_of_the_others(tiny, tmp_path, short_tmp):
    """Rank 1 fails as its share starts; rank 0, with 100 samples of Lava ahead of it, stops its network within
    seconds (not after its share) and the job ends with one line naming rank 1; nothing is left on either rank."""
    _, path = tiny
    out = tmp_path / "sharded.json"
    folder, env = private_tmp(short_tmp)
    args = ["run", str(path), "--backend", "lava", "--samples", "200", "--json", str(out), "--quiet"]
    proc = torchrun(*args, env={**env, FAIL_RANK_ENV: "1"})
    assert proc.returncode != 0
    ours = [line for line in proc.stderr.splitlines() if line.startswith("spikeport run")]
    assert len(ours) == 1, proc.stderr[-3000:]
    assert ours[0].startswith(
        f"spikeport run: error: rank 1 of 2 failed: RuntimeError: a fault injected by {FAIL_RANK_ENV}"
    )
    assert ours[0].endswith("(rank 0 stopped early)")
    assert not out.exists() and left_in(folder) == []


# ---- the merge of real shards, run one after another in this process ----------------------------------------------


def shards_and_whole(graph, target: str, cuts, **options):
    x = to_channels_last(random_images(cuts[-1][1], seed=5).numpy())
    labels = np.arange(len(x)) % 10
    run = TARGETS[target].run
    whole = run(graph, RunInputs(x, labels), RunOptions(**options))
    parts = [run(graph, RunInputs(x[a:b], labels[a:b]), RunOptions(**options)) for a, b in cuts]
    return whole, parts


@pytest.mark.slow
def test_partitioned_lava_shards_merge_to_one_run(tiny):
    """A partitioned run's parts table per rank: each part's steps as one stream of every sample, restarts summed."""
    graph, _ = tiny
    whole, parts = shards_and_whole(graph, "lava", [(0, 2), (2, 3)], parts=2)
    merged = merge_reports(parts)
    assert whole.lava is not None and whole.lava.parts is not None and len(whole.lava.parts) == 2
    assert sum(part.lava.steps for part in parts) > whole.lava.steps  # each rank drained its own parts
    assert without_walls(merged) == without_walls(whole)
    assert [row["wall_s"] for row in merged.lava.parts] == [
        max(row["wall_s"] for row in rows) for rows in zip(*(part.lava.parts for part in parts), strict=True)
    ]


@pytest.mark.slow
def test_torchrun_hardware_plan_simulation_report_equals_one_process(tiny, tmp_path, short_tmp):
    """The loihi2 target in simulation: each rank runs the hardware plan on its samples and compares its outputs with
    the reference; the merged report equals one process's. Both sides run in fresh processes: the plan's JSON names
    an unnamed Lava process by Lava's count of the processes built before it (Process_<n>)."""
    _, path = tiny
    folder, env = private_tmp(short_tmp)
    args = ["run", str(path), "--backend", "loihi2", "--samples", "3", "--quiet"]
    proc = torchrun(*args, "--json", str(tmp_path / "sharded.json"), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    one = subprocess.run(
        [sys.executable, "-m", "spikeport", *args, "--json", str(tmp_path / "one.json")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.path.join(ROOT, "src")},
    )
    assert one.returncode == 0, one.stderr[-3000:]
    sharded, alone = RunReport.from_json(tmp_path / "sharded.json"), RunReport.from_json(tmp_path / "one.json")
    assert sharded.executor == "loihi2-sim" and sharded.hardware is not None and sharded.hardware.outputs_identical
    assert sharded.hardware.samples == 3 and whole_run(sharded) == whole_run(alone)
    assert left_in(folder) == []


def test_the_first_mismatch_of_merged_hardware_runs_is_the_whole_runs():
    """Each shard reports its own first mismatch; the whole run's is the first output in the plan's order (then the
    read states), at its sample counted from the run's first."""
    plan = {"outputs": ["a", "b"], "states": ["lif1", "lif2"]}
    run = HardwareRun("cfg", "io", "bias", plan, "reference", outputs_identical=True, samples=3)
    worse = {"output": "b", "sample": 0, "time_step": 0, "index": 0, "value": 1, "expected": 0}
    first = {"output": "a", "sample": 2, "time_step": 1, "index": 4, "value": 0, "expected": 1}
    state = {"state": "lif1.v", "sample": 1, "index": 0, "value": 0, "expected": 1}
    shards = [
        replace(run, outputs_identical=False, first_mismatch=worse, bias_bits=9),
        replace(run, states_identical=False, first_mismatch=state),
        replace(run, outputs_identical=False, first_mismatch=first, samples=2, bias_bits=11),
    ]
    merged = merge_hardware(shards)
    assert merged.first_mismatch == {**first, "sample": 8} and merged.samples == 8 and merged.bias_bits == 11
    assert merged.outputs_identical is False and merged.states_identical is False
    assert merge_hardware([shards[1], replace(run, first_mismatch={**state, "state": "lif1.u"})]).first_mismatch == {
        **state,
        "state": "lif1.u",
        "sample": 4,
    }
    assert merge_hardware([run, run]).first_mismatch is None and merge_hardware([run, run]).states_identical is None
    with pytest.raises(ValueError, match="another hardware.plan"):
        merge_hardware([run, replace(run, plan={**plan, "outputs": ["a"]})])
    with pytest.raises(ValueError, match="measured on Loihi 2"):
        merge_hardware([run, replace(run, compile_table={"available": False})])
