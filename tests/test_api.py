"""The typed public API (spikeport.api): train / convert / run / report, RunReport and its JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import spikeport
from conftest import quantized_graph, random_images, spiky_model
from spikeport import api
from spikeport.api import run
from spikeport.errors import ConfigError, ReportError
from spikeport.run_report import RunReport


@pytest.fixture(scope="module")
def small_artifact(tmp_path_factory):
    """A converted digits-tiny network (lrf_dyn) whose test data is the digits test split."""
    from spikeport.ir import artifact

    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    return artifact.write(graph, tmp_path_factory.mktemp("api") / "m.spk.h5")


@pytest.fixture(scope="module")
def reference_report(small_artifact) -> RunReport:
    return run(small_artifact, "reference", samples=12, batch_size=5)


def test_run_returns_a_run_report(small_artifact, reference_report):
    r = reference_report
    assert isinstance(r, RunReport) and r.executor == "reference" and r.samples == 12
    assert r.artifact == str(small_artifact) and r.model["dataset"] == "digits" and r.model["attention"] == "lrf_dyn"
    assert len(r.predictions) == 12 and 0 <= r.accuracy <= 1 and r.T == r.model["T"]
    assert r.compare is None and r.identical is None  # compare with the reference on itself: nothing to do
    assert r.totals["spikes"] == sum(layer.total("spikes") for layer in r.layers) > 0
    assert r.peak_state_bytes == sum(layer.state_bytes for layer in r.layers)
    # the same counts as the reference simulator run by hand on the same images
    from spikeport.ir import artifact
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.sim.reference import ReferenceSimulator
    from spikeport.train.data import load_digits_split

    x, y = load_digits_split("test")
    direct = ReferenceSimulator(artifact.read(small_artifact)).run(to_channels_last(x[:12].numpy()), y[:12].numpy())
    assert direct.layers == r.layers and direct.predictions == r.predictions
    assert run(small_artifact, "reference", "reference", samples=12).compare is None


def test_package_and_api_names():
    assert spikeport.run is run and spikeport.RunReport is RunReport
    import spikeport.train.presets as presets  # a stage's package is a plain package; its function is in api

    assert spikeport.train.presets is presets and not callable(spikeport.train)
    with pytest.raises(ConfigError, match="--qat needs --init"):
        api.train(preset="digits-tiny", qat=True)
    code = "import spikeport\ntry:\n    spikeport.convert\nexcept AttributeError as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert (
        out.strip()
        == "spikeport.convert is a package (import spikeport.convert); the function is spikeport.api.convert"
    )
    from spikeport.train.api import train as train_float

    with pytest.raises(ConfigError, match="spikeport.train"):
        train_float(preset="digits-tiny", qat=True, init="x.pt")


def test_import_is_cheap():
    code = (
        "import sys, spikeport; spikeport.RunReport; spikeport.run; import spikeport.api; "
        "print(sorted(m for m in ('torch', 'lava', 'h5py', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_bad_arguments_fail_before_running(small_artifact):
    with pytest.raises(ConfigError, match="unknown backend 'gpu'"):
        run(small_artifact, "gpu")
    with pytest.raises(ConfigError, match="unknown compare 'lava'"):
        run(small_artifact, "lava", compare="lava")
    with pytest.raises(ConfigError, match="samples = 0"):
        run(small_artifact, samples=0)


def test_json_round_trip(tmp_path, reference_report):
    path = tmp_path / "r.json"
    text = reference_report.to_json(path)
    assert path.read_text() == text and json.loads(text) == reference_report.to_dict()
    again = RunReport.from_json(path)
    assert again == reference_report and RunReport.from_json(text) == reference_report
    assert again.to_json() == text
    assert oct(path.stat().st_mode & 0o777) != oct(0o600)  # an ordinary file, not mkstemp's 0600


def test_reads_the_json_the_executors_write(tmp_path):
    """A run report written the way `spikeport run` always has (executor dict + json.dump) reads back to the
    same JSON, key order included; unknown fields of newer writers are kept."""
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.sim.reference import ReferenceSimulator

    graph = quantized_graph(spiky_model("ssa"), random_images(16, seed=1))
    d = ReferenceSimulator(graph).run(to_channels_last(random_images(4, seed=2).numpy()), np.arange(4)).to_dict()
    d["artifact"] = "m.spk.h5"
    d["model"]["dataset"] = "digits"
    d["from_the_future"] = {"x": 1}
    (tmp_path / "old.json").write_text(json.dumps(d, indent=1))
    r = RunReport.from_json(tmp_path / "old.json")
    assert r.to_json() == json.dumps(d, indent=1) and r.extra == {"from_the_future": {"x": 1}}


def _corrupt(tmp_path, report: RunReport, edit) -> str:
    d = report.to_dict()
    edit(d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    return str(path)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.update(schema="spikeport.conversion"), "'schema'"),
        (lambda d: d.update(schema_version=7), "'schema_version'"),
        (lambda d: d.update(samples="many"), "'samples'"),
        (lambda d: d.pop("executor"), "'executor'"),
        (lambda d: d["layers"][2].update(synops=[1, "x"]), "'layers[2].synops'"),
        (lambda d: d.update(accuracy=3.5), "'accuracy'"),
        (lambda d: d.update(predictions=[1, None]), "'predictions'"),
        (lambda d: d.update(compare={"layers": []}), "'compare'"),
    ],
)
def test_corrupted_report_is_refused_naming_the_field(tmp_path, reference_report, edit, field):
    path = _corrupt(tmp_path, reference_report, edit)
    with pytest.raises(ReportError) as err:
        RunReport.from_json(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: field {field}")


def test_unreadable_files_and_the_cli(tmp_path, capsys, reference_report):
    from spikeport.cli import main

    cut = tmp_path / "cut.json"
    cut.write_text(reference_report.to_json()[:200])
    with pytest.raises(ReportError, match=f"{cut}: not a JSON file"):
        RunReport.from_json(cut)
    with pytest.raises(ReportError, match="nope.json: run report not found"):
        RunReport.from_json(tmp_path / "nope.json")
    bad = _corrupt(tmp_path, reference_report, lambda d: d["layers"][1].update(macs="lots"))
    assert main(["report", bad, "--no-gpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"spikeport report: error: {bad}: field 'layers[1].macs'") and "\n" not in err


def test_report_and_energy_take_run_reports(tmp_path, reference_report):
    from spikeport.metrics.energy import energy_report

    path = tmp_path / "ref.json"
    reference_report.to_json(path)
    s = api.report([path, reference_report], gpu_baseline=False, json=tmp_path / "s.json", html=tmp_path / "s.html")
    assert [r.source for r in s.runs] == [str(path), "run report 2"]  # a ReportSummary: typed records
    assert s.runs[0].energy == s.runs[1].energy
    assert s.to_dict() == json.loads((tmp_path / "s.json").read_text())
    assert json.loads((tmp_path / "s.json").read_text())["schema"] == "spikeport.report"
    assert "<svg" in (tmp_path / "s.html").read_text()
    assert energy_report(reference_report).to_dict() == energy_report(reference_report.to_dict()).to_dict()


def test_cli_run_writes_the_api_report(tmp_path, capsys, small_artifact):
    from spikeport.cli import main

    assert main(["run", str(small_artifact), "--samples", "6", "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())  # prose may be wrapped at the terminal's width
    assert "on 6 samples (reference)" in flat and f"wrote {tmp_path / 'r.json'}" in flat
    r = RunReport.from_json(tmp_path / "r.json")
    assert r.samples == 6 and r.artifact == str(small_artifact)


def test_convert_in_memory_then_run(tmp_path):
    """spikeport.api.convert on a model in memory; its reference run is the run report `spikeport.run` gives
    on the same test images."""
    conv = api.convert(spiky_model("ssa"), tmp_path / "build", calibrate=16, eval_samples=8, onnx=False)
    assert conv.artifact_path == tmp_path / "build" / "model.spk.h5" and conv.onnx_path is None
    assert conv.graph.meta["dataset"] == "digits" and "onnx" not in conv.report
    # the api attaches each op's Lava lowering to the conversion report (the converter names no backend)
    lowering = conv.report["lowering"]
    assert set(lowering) == {node.op for node in conv.graph.nodes.values()} and lowering["lif"] == "LIFReset"
    ref = conv.reference_run
    assert isinstance(ref, RunReport) and ref.samples == 8 and ref.artifact == str(conv.artifact_path)
    again = run(conv.artifact_path, samples=8)
    assert again.layers == ref.layers and again.predictions == ref.predictions and again.accuracy == ref.accuracy
    assert again.model == ref.model and again.artifact_digest == ref.artifact_digest == conv.graph.digest
    with pytest.raises(ConfigError, match="give `out`"):
        api.convert(spiky_model("ssa"))


def test_an_artifact_runs_on_the_users_own_images(tmp_path, capsys, small_artifact, reference_report):
    """api.run(artifact, inputs=array) and `run ARTIFACT --inputs FILE.npy`: the user's images [S, H, W, C] run as the
    data set's do (the same predictions on the same images); a wrong shape is refused in one line naming it."""
    from spikeport.cli import main
    from spikeport.errors import DataError

    images, labels = api.test_images(small_artifact, samples=12)
    assert images.shape == (12, 8, 8, 1) and labels.shape == (12,)
    own = run(small_artifact, inputs=images)
    assert own.predictions == reference_report.predictions and own.accuracy is None and own.samples == 12
    assert own.layers == reference_report.layers
    assert run(small_artifact, inputs=images[0]).predictions == own.predictions[:1]  # one image [H, W, C]
    np.save(tmp_path / "images.npy", images[:5])
    assert main(["run", str(small_artifact), "--inputs", str(tmp_path / "images.npy"), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["predictions"] == own.predictions[:5]
    with pytest.raises(DataError) as err:
        run(small_artifact, inputs=images.transpose(0, 3, 1, 2))
    text = str(err.value)
    assert "\n" not in text and "(12, 1, 8, 8)" in text and "[S, 8, 8, 1]" in text and "channels-first" in text
    np.save(tmp_path / "flat.npy", images.reshape(12, -1))
    assert main(["run", str(small_artifact), "--inputs", str(tmp_path / "flat.npy")]) == 2
    err_text = capsys.readouterr().err
    assert "flat.npy: images of shape (12, 64)" in err_text and "[S, 8, 8, 1]" in err_text
    with pytest.raises(ConfigError, match="--input-shape"):
        run(small_artifact, inputs=images, input_shape=(8, 8, 1))
