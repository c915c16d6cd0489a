"""Sharded runs under torchrun (issue 37): the samples split over the ranks, one report equal to one process's.

The torchrun tests start real jobs of two CPU processes (gloo) through `python -m torch.distributed.run`, as a user
would; the rest checks the pieces in this process: the split, the environment, ``RunReport.merge``, the message
that names failed ranks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.errors import ConfigError
from spikeport.ir import artifact
from spikeport.run_report import RunReport
from spikeport.runtime.distributed import FAIL_RANK_ENV, Ranks, _Outcome, _settle
from spikeport.runtime.executor import to_channels_last
from spikeport.runtime.recording import concat
from spikeport.runtime.targets import TARGETS, Capabilities, RunInputs, RunOptions, run_graph

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A converted digits-tiny network (lrf_dyn) whose test data is the digits test split."""
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    path = artifact.write(graph, tmp_path_factory.mktemp("dist") / "m.spk.h5")
    return artifact.read(path), path


def whole_run(report: RunReport | dict) -> dict:
    """A run report's JSON object less what differs between two runs of the same samples: the wall time, and the
    processes that shared them (``ranks``, under torchrun)."""
    data = report.to_dict() if isinstance(report, RunReport) else dict(report)
    del data["wall_time_s"]
    data.pop("ranks", None)
    return data


# ---- the pieces, in this process --------------------------------------------------------------------------


@pytest.mark.parametrize("samples", [1, 2, 7, 8, 11])
@pytest.mark.parametrize("world", [2, 3, 4])
def test_shards_are_contiguous_and_cover_the_samples_in_order(samples, world):
    shards = [Ranks(rank, world).shard(samples) for rank in range(world)]
    assert [end - first for first, end in shards] == [len(a) for a in np.array_split(np.arange(samples), world)]
    assert shards[0][0] == 0 and shards[-1][1] == samples
    assert all(shards[i][1] == shards[i + 1][0] for i in range(world - 1))


def test_torchrun_environment(monkeypatch):
    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(key, raising=False)
    assert Ranks.from_env() is None  # a plain process
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert Ranks.from_env() is None  # torchrun with one process: nothing to shard
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    ranks = Ranks.from_env()
    assert ranks == Ranks(3, 4, 1) and str(ranks) == "rank 3 of 4"
    assert ranks.device("cuda") == ranks.device("cuda:0") == "cuda:1" and ranks.device("cpu") == "cpu"
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(ConfigError, match="RANK=4, LOCAL_RANK=1 in the environment: expected ranks of WORLD_SIZE=4"):
        Ranks.from_env()
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(ConfigError, match="RANK='x' in the environment: expected an integer"):
        Ranks.from_env()


def test_merged_shards_are_the_whole_run(tiny):
    """Shards of uneven sizes, each run alone and merged in order: the report and recording of one run of all."""
    graph, path = tiny
    x = to_channels_last(random_images(11, seed=5).numpy())
    labels = np.array(TARGETS["reference"].run(graph, RunInputs(x)).predictions)
    labels[::3] += 1  # a third of the predictions wrong
    inputs = RunInputs(x, labels, artifact=str(path), artifact_digest=graph.digest, dataset="digits")
    options = RunOptions(batch_size=3, record=True)
    whole = TARGETS["reference"].run(graph, inputs, options)
    cuts = [(0, 5), (5, 6), (6, 11)]
    parts = [
        TARGETS["reference"].run(graph, RunInputs(x[a:b], labels[a:b], str(path), graph.digest, "digits"), options)
        for a, b in cuts
    ]
    merged = RunReport.merge(parts)
    assert whole.accuracy == 7 / 11 and len(set(whole.predictions)) > 1  # the accuracy is recomputed, not copied
    assert whole_run(merged) == whole_run(whole)
    assert list(merged.to_dict()) == list(whole.to_dict())  # key for key, in order
    assert merged.wall_time_s == max(part.wall_time_s for part in parts)
    joined = concat([part.recording for part in parts])
    assert list(joined) == list(whole.recording)
    assert all(np.array_equal(joined[key], whole.recording[key]) for key in joined)
    assert merged.recording is None  # recordings are runtime.recording.concat's


def test_merge_refuses_reports_of_other_runs(tiny):
    graph, _ = tiny
    x = to_channels_last(random_images(4, seed=5).numpy())
    a = TARGETS["reference"].run(graph, RunInputs(x[:2]))
    b = TARGETS["reference"].run(graph, RunInputs(x[2:]))
    with pytest.raises(ValueError, match="run report 1 has another executor"):
        RunReport.merge([a, RunReport.from_dict({**b.to_dict(), "executor": "lava-fixed_pt"})])
    renamed = RunReport.from_dict(b.to_dict())
    renamed.layers[3].name = "elsewhere"
    with pytest.raises(ValueError, match="run report 1 has another layers"):
        RunReport.merge([a, renamed])
    with pytest.raises(ValueError, match="'lava' describe one whole run"):  # runtime.merge's
        RunReport.merge([a, RunReport.from_dict({**b.to_dict(), "lava": {"reset_interval": 5}})])
    with pytest.raises(ValueError, match="'predictions' is in some of the run reports only"):
        RunReport.merge([a, RunReport.from_dict({k: v for k, v in b.to_dict().items() if k != "predictions"})])


def test_failed_ranks_are_named_with_their_causes(tiny):
    graph, _ = tiny
    ok = TARGETS["reference"].run(graph, RunInputs(to_channels_last(random_images(2, seed=5).numpy())))
    same = [_Outcome(report=ok), _Outcome(error="DataError: bad"), _Outcome(error="DataError: bad")]
    assert _settle(Ranks(0, 3), same, lambda r: r).error == "ranks 1, 2 of 3 failed: DataError: bad"
    other = [_Outcome(error="a"), _Outcome(report=ok), _Outcome(error="b")]
    assert _settle(Ranks(0, 3), other, lambda r: r).error == "ranks 0, 2 of 3 failed: rank 0: a; rank 2: b"
    settled = _settle(Ranks(0, 2), [_Outcome(report=ok), _Outcome()], lambda r: r)  # rank 1 had no samples
    assert settled.error is None and whole_run(settled.report) == whole_run(ok)

    def fails(report):
        raise ValueError("the readout broke")

    broken = _settle(Ranks(0, 2), [_Outcome(report=ok), _Outcome(report=ok)], fails).error
    assert broken.startswith("rank 0 of 2 failed after the shards were gathered: ValueError: the readout broke (")


def test_a_target_that_does_not_shard_is_refused_under_torchrun(tiny, monkeypatch):
    """Every registered target shards today; one whose Capabilities say it cannot is refused before it runs."""
    graph, _ = tiny
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    x = to_channels_last(random_images(2, seed=5).numpy())
    alone = replace(TARGETS["reference"], name="one-process", caps=Capabilities(shards=False))
    with pytest.raises(ConfigError, match="shards the samples of the reference, reference-torch, lava and loihi2 "):
        run_graph(graph, RunInputs(x), alone)


# ---- real jobs: torchrun, two CPU processes (gloo) ----------------------------------------------------------


def torchrun(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m torch.distributed.run --nproc_per_node 2 -m spikeport ARGS`` on the CPU, one thread a process."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    path = os.pathsep.join(p for p in (os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [*command, "-m", "spikeport", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, **(env or {})},
    )


@pytest.mark.slow
def test_torchrun_reference_torch_report_equals_one_process(tiny, tmp_path):
    """21 samples over 2 ranks (11 + 10, batches of 4 and a smaller last one): one report, written by rank 0, equal
    field for field to one process's run of the same samples."""
    from spikeport import api

    _, path = tiny
    out = tmp_path / "sharded.json"
    args = ["run", str(path), "--backend", "reference-torch", "--samples", "21", "--batch-size", "4"]
    proc = torchrun(*args, "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("wrote ") == 1 and proc.stdout.count("accuracy ") == 1  # rank 0 only
    one = api.run(path, "reference-torch", samples=21, batch_size=4)
    sharded = RunReport.from_json(out)
    assert sharded.samples == 21 and len(set(sharded.predictions)) > 1 and sharded.accuracy > 0
    assert whole_run(sharded) == whole_run(one)
    assert json.loads(out.read_text()).keys() == {*one.to_dict().keys(), "ranks"}


@pytest.mark.slow
def test_torchrun_numpy_reference_report_equals_one_process(tiny):
    """The numpy reference shards too; --json - puts the one report alone on stdout (rank 1 prints nothing)."""
    from spikeport import api

    _, path = tiny
    proc = torchrun("run", str(path), "--samples", "7", "--batch-size", "2", "--json", "-")
    assert proc.returncode == 0, proc.stderr[-3000:]
    sharded = RunReport.from_json(proc.stdout)  # one JSON document: a second one would not parse
    assert whole_run(sharded) == whole_run(api.run(path, "reference", samples=7, batch_size=2))
    assert sharded.executor == "reference" and sharded.ranks == 2  # the run report says it ran on 2 ranks
    line = torchrun("run", str(path), "--samples", "7", "--quiet").stdout
    assert " on 2 ranks (torchrun; the slowest rank's time)" in " ".join(line.split()), line


@pytest.mark.slow
def test_torchrun_netx_run_reads_out_the_gathered_recording(tmp_path):
    """A netx network has no readout node: its predictions come from the recorded spikes, gathered on rank 0 and
    read out there, as one process reads out its own."""
    from spikeport import api
    from spikeport.netx.write import export_netx

    graph = quantized_graph(spiky_model("ssa"), random_images(16, seed=1))
    net = tmp_path / "stem.net"
    export_netx(graph, net)
    x = (np.random.default_rng(0).random((5, 4, 8, 8, 8)) < 0.3).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "sharded.json"
    proc = torchrun("run", str(net), "--inputs", str(tmp_path / "x.npy"), "--json", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    one = api.run(net, "reference", inputs=tmp_path / "x.npy")
    assert one.netx is not None and one.samples == 5
    assert whole_run(RunReport.from_json(out)) == whole_run(one)


@pytest.mark.slow
def test_a_failing_rank_ends_the_job_with_one_line_and_no_report(tiny, tmp_path):
    _, path = tiny
    out = tmp_path / "sharded.json"
    proc = torchrun("run", str(path), "--samples", "6", "--json", str(out), "--quiet", env={FAIL_RANK_ENV: "1"})
    assert proc.returncode != 0
    ours = [line for line in proc.stderr.splitlines() if line.startswith("spikeport run")]
    assert len(ours) == 1 and proc.stderr.count("Traceback") <= 1, proc.stderr[-3000:]  # torchrun's own, at most
    assert ours[0].startswith(
        f"spikeport run: error: rank 1 of 2 failed: RuntimeError: a fault injected by {FAIL_RANK_ENV}"
    )
    assert not out.exists() and not list(tmp_path.glob("*.json*"))  # no report, no writer's leftovers
    assert proc.stdout == ""


@pytest.mark.gpu
@pytest.mark.slow
def test_torchrun_on_two_gpus_equals_one_process(tiny, tmp_path):
    """NCCL beside gloo: each rank on its own GPU (cuda:LOCAL_RANK); the report equals one process's."""
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 CUDA GPUs, this machine has {torch.cuda.device_count()}")
    from spikeport import api

    _, path = tiny
    out = tmp_path / "sharded.json"
    args = ["run", str(path), "--backend", "reference-torch", "--device", "cuda", "--samples", "9", "--batch-size", "2"]
    proc = torchrun(*args, "--json", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    one = api.run(path, "reference-torch", samples=9, batch_size=2, device="cuda")
    assert whole_run(RunReport.from_json(out)) == whole_run(one)
