"""The run seam: every Target in the registry runs a tiny artifact through `spikeport run --backend NAME`, the
unknown ones are refused once, and comparisons name the layers that compared only zeros."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.errors import ConfigError
from spikeport.ir import artifact
from spikeport.run_report import RunReport
from spikeport.runtime.executor import to_channels_last
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.targets import (
    TARGETS,
    RunInputs,
    RunOptions,
    describe_executor,
    refuse_options,
    run_graph,
    target,
)

# options each target runs with here: the torch reference on the CPU (CI has no GPU)
OPTIONS = {"reference-torch": RunOptions(device="cpu")}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    path = artifact.write(graph, tmp_path_factory.mktemp("t") / "model.spk.h5")
    return artifact.read(path), path, to_channels_last(random_images(3, seed=5).numpy())


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_available_target_runs_and_agrees_with_the_reference(name, tiny):
    graph, path, x = tiny
    options = OPTIONS.get(name, RunOptions())
    why = TARGETS[name].available(options)
    if why is not None:
        pytest.skip(f"target {name} is not available here: {why}")
    inputs = RunInputs(x, np.zeros(3, np.int64), artifact=str(path), artifact_digest=graph.digest, dataset="digits")
    report = TARGETS[name].run(graph, inputs, options)
    reference = TARGETS["reference"].run(graph, inputs)
    assert isinstance(report, RunReport) and report.samples == 3 and report.artifact == str(path)
    assert report.predictions == reference.predictions
    assert [row.spikes for row in report.layers] == [row.spikes for row in reference.layers]
    assert any(e.names(report.executor) for e in TARGETS[name].executors)
    assert report.recording is None  # kept only when asked


def test_cli_backend_goes_through_the_registry(tiny, capsys):
    from spikeport.cli import main

    _, path, _ = tiny
    assert main(["run", str(path), "--backend", "gpu9000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown backend 'gpu9000'" in err[0]
    assert all(name in err[0] for name in TARGETS)


def test_every_refusal_derives_from_the_capabilities():
    """One rule refuses an option a target does not take, naming the option and every target that takes it; no
    target's name is written in a rule."""
    for option, flag in (
        (RunOptions(device="cuda"), "devices"),
        (RunOptions(parts=2), "partitions"),
        (RunOptions(drive=ChipDrive.BIAS), "chip_drive"),
        (RunOptions(read_states=("a.lif",)), "chip_drive"),
        (RunOptions(record=True), "records"),
    ):
        takers = [t.name for t in TARGETS.values() if getattr(t.caps, flag)]
        assert takers and len(takers) < len(TARGETS), flag
        for t in TARGETS.values():
            if t.name in takers:
                refuse_options(t, option)  # taken: no error
                continue
            with pytest.raises(ConfigError) as err:
                refuse_options(t, option)
            line = str(err.value)
            assert "\n" not in line and f"(backend = {t.name!r})" in line, line
            assert all(f"{n} " in line for n in takers) and "applies to the " in line, line
            assert f"run with --backend {' | '.join(takers)}" in line, line  # the flag to use
    said = TARGETS["lava"].available(RunOptions(drive=ChipDrive.BIAS))
    assert "drive = 'bias' (--input-drive bias) applies to the loihi2 target only" in said


def test_the_report_names_every_executor_a_target_writes():
    """The report's "counts by" words come from the targets' records: every executor of every target has them,
    the device of reference-torch's included; an executor no target writes has none."""
    assert describe_executor("reference").startswith("the reference integer simulator")
    assert describe_executor("reference-torch-cuda") == describe_executor("reference-torch-cpu") is not None
    assert describe_executor("loihi2-sim") != describe_executor("loihi2") is not None
    assert describe_executor("reference-torch-") is None and describe_executor("onnxruntime") is None
    assert all(describe_executor(e.name.replace("<device>", "cpu")) for t in TARGETS.values() for e in t.executors)


def test_reference_on_a_device_is_the_torch_target():
    assert target("reference", "cuda").name == "reference-torch"
    assert target("reference").name == "reference"
    with pytest.raises(ConfigError, match="applies to the reference-torch target only"):
        TARGETS["lava"].check(RunOptions(device="cuda"))


def test_comparison_names_layers_that_never_fired(tiny):
    """A layer silenced in the artifact compares equal (zeros vs zeros): the comparison lists it as silent."""
    from spikeport import fixedpoint as fx
    from spikeport.runtime.compare import compare_runs

    _, path, x = tiny
    quiet = artifact.read(path)
    last = [n for n in quiet.order if quiet.nodes[n].op == "lif"][-1]
    quiet.nodes[last].attrs["vth"] = fx.VTH_MAX + 1  # beyond any v the 24-bit state reaches
    a = run_graph(quiet, RunInputs(x), TARGETS["reference"], RunOptions(record=True))
    b = run_graph(quiet, RunInputs(x), TARGETS["reference"], RunOptions(record=True, batch_size=1))
    comparison = compare_runs(quiet, a, b)
    assert comparison.identical and a.layer(last).total("spikes") == 0
    assert last in comparison.silent() and len(comparison.silent()) < len(comparison.layers)


def test_run_report_json_of_a_comparison_round_trips(tiny, tmp_path):
    graph, path, x = tiny
    from spikeport.runtime.compare import compare_runs

    a = run_graph(graph, RunInputs(x), TARGETS["reference"], RunOptions(record=True))
    from dataclasses import replace

    with_cmp = replace(a, compare=compare_runs(graph, a, a))
    text = with_cmp.to_json(tmp_path / "r.json")
    back = RunReport.from_json(tmp_path / "r.json")
    assert back.compare is not None and back.compare.silent_layers == with_cmp.compare.silent_layers
    assert back.to_json() == text
