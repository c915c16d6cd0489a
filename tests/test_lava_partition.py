"""Partitioned Lava runs (runtime/lava/partition.py): each part its own Lava network, fed with the recorded output
of the part before; the spikes of every layer at every step are still the reference's."""

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from runs import reference_spikes
from spikeport.errors import ConfigError
from spikeport.runtime.compare import first_divergence
from spikeport.runtime.executor import to_channels_last

partition = pytest.importorskip("spikeport.runtime.lava.partition")
pytestmark = pytest.mark.lava


def images(n, seed=5):
    return to_channels_last(random_images(n, seed=seed).numpy())


@pytest.fixture(scope="module")
def ssa():
    return quantized_graph(spiky_model("ssa"), random_images(16, seed=1))


def test_cut_points_are_where_later_nodes_read_one_node_only(ssa):
    cuts = partition.cut_points(ssa)
    stem = ["patch_embed.proj_lif", "patch_embed.proj_lif1", "patch_embed.proj_lif2", "patch_embed.proj_lif3"]
    assert cuts == [*stem, "patch_embed.rpe_add", "block.0.attn_add", "block.0.mlp_add", "block.1.attn_add"]
    for cut in cuts:
        before = set(ssa.order[: ssa.order.index(cut) + 1])
        read = {s for n in ssa.order[ssa.order.index(cut) + 1 :] if n != "head" for s in ssa.nodes[n].inputs}
        assert read & before == {cut}
    # the last sum is read by the host readout only: no relay, nothing to stand in for
    assert "block.1.mlp_add" not in cuts


@pytest.mark.parametrize(("attention", "how"), [("ssa", {"max_processes": 1}), ("lrf_dyn", {"parts": 2})])
def test_partitioned_run_equals_the_reference_in_every_layer(attention, how, capsys):
    """Cut at every cut point (binary spike boundaries in the stem, graded sums in the blocks) or in two: the same
    spikes as the reference at every step of every layer, the same predictions and counts, nothing left behind."""
    from spikeport.runtime.lava.session import child_pids, is_resource_tracker

    graph = quantized_graph(spiky_model(attention), random_images(16, seed=1))
    x = images(3)
    report = partition.run_lava_partitioned(graph, x, np.zeros(3, np.int64), progress=True, **how)
    rep, spikes = report.to_dict(), report.recording
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert set(spikes) == set(ref_spikes)
    assert first_divergence(graph, ref_spikes, spikes) is None
    assert rep["predictions"] == ref_rep["predictions"] and rep["executor"] == "lava-fixed_pt"
    for a, b in zip(rep["layers"], ref_rep["layers"], strict=True):
        assert a["spikes"] == b["spikes"] and a["synops"] == b["synops"]
    parts = rep["lava"]["parts"]
    assert len(parts) == (len(partition.segments(graph)) if "max_processes" in how else 2)
    assert [p["boundary"] for p in parts[1:]] == [p["last"] for p in parts[:-1]]
    assert rep["lava"]["processes"] == sum(p["processes"] for p in parts)
    assert not [p for p in child_pids() if not is_resource_tracker(p)]  # every part's children are gone
    # off a terminal, one line per stage of each part: processes built, compiled, OS processes started, steps run
    err = capsys.readouterr().err
    for i, part in enumerate(parts, 1):
        label = f"lava part {i}/{len(parts)}"
        assert f"{label} compile: {part['processes']} processes in" in err
        assert f"{label} run: {part['steps']} steps in" in err
        started = int(err.split(f"{label} start: ")[1].split()[0])
        assert started >= part["processes"] + 2  # a runtime service and the shared-memory server besides


def test_a_stalled_part_restarts_mid_part_and_stays_bit_exact(ssa, tmp_path, monkeypatch):
    """A part's network whose Lava children stall is restarted from an earlier sample, as a whole run is (the one
    streaming loop, run.stream_part): here the second part, fed through its boundary's RingBuffer, so the restart
    replays the boundary's values from that sample on. Every layer stays the reference's."""
    import time

    from spikeport.runtime.lava.compat import import_lava

    import_lava()
    from lava.proc.lif.models import PyLifResetModelBitAcc

    second, flag = tmp_path / "second-part", tmp_path / "stalled-once"
    run_spk = PyLifResetModelBitAcc.run_spk

    def stall_once(self):  # the forked children inherit this: one LIF of the second part hangs at step 37
        if self.time_step == 37 and second.exists() and not flag.exists():
            flag.touch()
            time.sleep(3600)
        run_spk(self)

    def on_part(index, part):
        if index == 1:
            second.touch()

    monkeypatch.setattr(PyLifResetModelBitAcc, "run_spk", stall_once)
    x = images(12)
    with pytest.warns(RuntimeWarning, match=r"restarting Lava part 2 at sample [1-9]\d* \(restart 1 of"):
        report = partition.run_lava_partitioned(ssa, x, parts=2, chunk_samples=2, stall_s=2.0, on_part=on_part)
    assert flag.exists() and report.lava is not None and report.lava.restarts == 1
    _, ref_spikes = reference_spikes(ssa, x)
    assert first_divergence(ssa, ref_spikes, report.recording) is None


def test_parts_balance_processes_and_bad_requests_fail_in_one_line(ssa):
    segs = partition.segments(ssa)
    two = partition.plan_parts(ssa, parts=2)
    assert len(two) == 2 and [n for p in two for n in p.nodes] == ssa.order
    counts = [partition.count_processes(ssa, nodes, b) for b, nodes in segs]
    assert max(p.processes for p in two) < sum(counts)
    small = partition.plan_parts(ssa, max_processes=20)
    # a part over the limit is one segment between two cut points, which is never split
    assert all(p.processes <= 20 or p.nodes in {nodes for _, nodes in segs} for p in small)
    assert len(small) > len(two)
    with pytest.raises(ConfigError, match="exactly one of parts"):
        partition.plan_parts(ssa)
    with pytest.raises(ConfigError, match=f"at most {len(segs)} parts"):
        partition.plan_parts(ssa, parts=len(segs) + 1)
    with pytest.raises(ConfigError, match="expected a positive integer"):
        partition.plan_parts(ssa, max_processes=0)


def test_the_lava_target_runs_in_parts_and_compares_with_the_reference(ssa):
    """``run --backend lava --partition N`` is RunOptions(parts=N) on the lava target: the user's path, with the
    comparison every run --compare makes; other targets refuse parts in one line."""
    from spikeport.runtime.targets import RunInputs, RunOptions, run_graph, target

    x = images(2)
    report = run_graph(ssa, RunInputs(x, np.zeros(2, np.int64)), target("lava"), RunOptions(parts=2), "reference")
    assert report.compare is not None and report.compare.identical
    assert report.lava is not None and report.lava.parts is not None and len(report.lava.parts) == 2
    assert report.to_dict()["lava"]["parts"][1]["boundary"] == report.lava.parts[0]["last"]
    with pytest.raises(ConfigError, match=r"parts = 2 \(--partition\) applies to the lava target only"):
        target("reference").run(ssa, RunInputs(x), RunOptions(parts=2))
    with pytest.raises(ConfigError, match="expected a positive integer"):
        target("lava").check(RunOptions(parts=0))
