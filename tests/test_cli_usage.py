"""Files and commands as a new user types them (issue 36): a wrong file type named as such with the command that takes
it, `export --onnx`, one meaning for export's positional, `--json FILE` that never takes a positional for its file,
"did you mean" for a mistyped command or flag, and a bare command's usage with examples."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport import api, file_kinds
from spikeport.cli import main
from spikeport.errors import ConfigError
from spikeport.file_kinds import FileKind


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """One file of each kind a command reads: a checkpoint, its ONNX export, an artifact, a run report."""
    from spikeport.ir import artifact as artifact_io
    from spikeport.train import checkpoint as ck

    folder = tmp_path_factory.mktemp("kinds")
    model = spiky_model("ssa")
    ckpt = ck.save_atomic(
        {
            "format": ck.FORMAT,
            "version": ck.VERSION,
            "model": model.state_dict(),
            "epoch": 1,
            "model_config": model.cfg.to_dict(),
            "train_config": {"dataset": "digits"},
        },
        folder / "checkpoint.pt",
    )
    graph = quantized_graph(model, random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    artifact = artifact_io.write(graph, folder / "model.spk.h5")
    api.run(artifact, samples=2).to_json(folder / "run.json")
    np.save(folder / "x.npy", np.zeros((1, 4), np.int8))
    return {"checkpoint": ckpt, "artifact": artifact, "run": folder / "run.json", "npy": folder / "x.npy"}


def test_files_are_known_by_their_first_bytes(files, tmp_path):
    assert file_kinds.sniff(files["checkpoint"]) is FileKind.CHECKPOINT
    assert file_kinds.sniff(files["artifact"]) is FileKind.ARTIFACT
    assert file_kinds.sniff(files["run"]) is FileKind.RUN_REPORT
    assert file_kinds.sniff(files["npy"]) is FileKind.NUMPY
    renamed = tmp_path / "weights.spk.h5"  # the name does not matter, the content does
    renamed.write_bytes(files["checkpoint"].read_bytes())
    assert file_kinds.sniff(renamed) is FileKind.CHECKPOINT
    (tmp_path / "notes.txt").write_text("hello")
    assert file_kinds.sniff(tmp_path / "notes.txt") is None and file_kinds.sniff(tmp_path / "missing") is None
    (tmp_path / "c.json").write_text('{"schema": "spikeport.conversion", "T": 4}')
    assert file_kinds.sniff(tmp_path / "c.json") is FileKind.JSON
    with pytest.raises(ConfigError, match="of schema spikeport.conversion"):
        file_kinds.expect(tmp_path / "c.json", file_kinds.ARTIFACTS, "run")


@pytest.mark.parametrize("command", ["run", "inspect", "check-hw"])
def test_a_checkpoint_given_for_an_artifact_says_convert_first(files, command, capsys):
    assert main([command, str(files["checkpoint"])]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "torch checkpoint" in err and "spikeport convert" in err, err
    assert "corrupt" not in err and "HDF5" not in err


def test_bundle_and_the_api_name_the_wrong_file_too(files, tmp_path, capsys):
    assert main(["bundle", str(files["checkpoint"]), "--out", str(tmp_path / "b")]) == 2
    assert "run `spikeport convert` first" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="this is a spikeport artifact.*spikeport run"):
        api.report([files["artifact"]])
    with pytest.raises(ConfigError, match="inspect reads an artifact.*this is a run report"):
        api.inspect(files["run"])


def test_an_onnx_file_is_named_as_onnx(files, tmp_path, capsys):
    onnx = tmp_path / "model.onnx"
    assert main(["export", str(files["checkpoint"]), "--onnx", str(onnx), "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {onnx}"
    assert file_kinds.sniff(onnx) is FileKind.ONNX
    for argv in (["run", str(onnx)], ["inspect", str(onnx)], ["convert", str(onnx), "--out", str(tmp_path / "o")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "an ONNX model" in err and "corrupt" not in err, err


def test_export_onnx_writes_the_checked_float_model(files, tmp_path, capsys):
    import onnxruntime as ort

    out = tmp_path / "m.onnx"
    report = tmp_path / "m.json"
    argv = ["export", str(files["checkpoint"]), "--onnx", str(out), "--batch-size", "2", "--json", str(report)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    data = json.loads(report.read_text())
    assert data["schema"] == "spikeport.export_onnx" and data["input_shape"] == [2, 1, 8, 8]
    assert data["check"]["samples"] == 64 and data["check"]["argmax_agreement"] > 0.9
    assert "checked in ONNX Runtime" in text and f"wrote {out}" in text
    session = ort.InferenceSession(str(out))
    assert session.run(None, {"images": np.zeros((2, 1, 8, 8), np.float32)})[0].shape == (2, 10)
    assert "spikeport.preprocessing" in {p.key for p in __import__("onnx").load(str(out)).metadata_props}


def test_export_says_which_file_each_format_reads(files, tmp_path, capsys):
    assert main(["export", str(files["checkpoint"]), "--netx", str(tmp_path / "a.net")]) == 2
    err = capsys.readouterr().err
    assert "export --netx reads an artifact" in err and "--nir or --onnx export a checkpoint" in err
    assert main(["export", str(files["artifact"]), "--nir", str(tmp_path / "a.nir")]) == 2
    assert "export --nir reads a checkpoint" in capsys.readouterr().err
    assert main(["export", str(files["artifact"]), "--netx", str(tmp_path / "a.net"), "--opset", "17"]) == 2
    assert "--opset does not apply to --netx" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_json_never_takes_a_positional_for_its_file(files, tmp_path, capsys):
    before = files["artifact"].read_bytes()
    with pytest.raises(SystemExit) as done:
        main(["run", "--json", str(files["artifact"]), str(files["artifact"])])
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert "is a spikeport artifact" in err and "--json -" in err, err
    assert files["artifact"].read_bytes() == before  # never written over
    assert main(["run", str(files["artifact"]), "--samples", "2", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["samples"] == 2  # `-`: stdout, the JSON alone
    assert main(["run", str(files["artifact"]), "--samples", "2", "--json"]) == 0  # last: the shorthand for -
    captured = capsys.readouterr()
    assert json.loads(captured.out)["samples"] == 2 and not captured.err
    with pytest.raises(SystemExit):
        main(["info", "--json", "digits-tiny"])
    assert "--json took 'digits-tiny' as the file to write; --json - prints to stdout" in capsys.readouterr().err
    out = tmp_path / "r.json"
    assert main(["run", str(files["artifact"]), "--json", str(out), "--samples", "2", "--quiet"]) == 0
    assert json.loads(out.read_text())["samples"] == 2


def test_report_refuses_to_write_its_summary_over_a_run_report(files, tmp_path, capsys):
    before = files["run"].read_bytes()
    assert main(["report", "--json", str(files["run"]), str(files["run"])]) == 2
    err = capsys.readouterr().err
    assert "is a run report, an input of report" in err and files["run"].read_bytes() == before


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["rnu", "x"], "did you mean 'run'?"),
        (["info", "digits-tiny", "--atention", "ssa"], "did you mean --attention?"),
        (["run", "x.spk.h5", "--samles", "3"], "did you mean --samples?"),
        (["bench", "gpu", "digits-tiny", "--bathc", "2"], "did you mean --batch?"),
    ],
)
def test_a_mistyped_command_or_flag_gets_did_you_mean(argv, suggestion, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert done.value.code == 2 and len(err.splitlines()) == 1 and err.endswith(suggestion), err


def test_a_mistyped_value_and_a_missing_file_read_plainly(files, tmp_path, capsys):
    """A backend value one letter off gets "did you mean" as a command does; a missing artifact is named with what
    is wrong, not as a field of it."""
    assert main(["run", str(files["artifact"]), "--backend", "loihi"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.endswith("did you mean 'loihi2'?"), err
    assert main(["run", str(tmp_path / "nope.spk.h5")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("nope.spk.h5: does not exist") and "field" not in err, err


def test_the_rate_on_the_result_line_never_reads_zero():
    from spikeport.cli.run import rate

    assert rate(24, 118.5) == "4.9 s a sample" and rate(360, 2.0) == "180.0 samples/s"
    assert rate(2, 600.0) == "300.0 s a sample"


@pytest.mark.parametrize("command", [["run"], ["inspect"], ["report"], ["convert"], ["bench", "gpu"], ["export"]])
def test_a_bare_command_prints_its_usage_and_examples(command, capsys):
    with pytest.raises(SystemExit) as done:
        main(command)
    err = capsys.readouterr().err
    name = " ".join(command)
    assert done.value.code == 2 and err.startswith(f"usage: spikeport {name} ")
    assert f"\n  spikeport {name} " in err and f"every flag: spikeport {name} --help" in err


def test_one_name_per_idea_old_spellings_still_work(files, capsys):
    """--samples everywhere (convert's --eval-samples, demo's --lava-samples kept as deprecated aliases), --partition
    in the CLI and the API."""
    import inspect

    assert "partition" in inspect.signature(api.run).parameters
    for command, old in (("convert", "--eval-samples"), ("demo", "--lava-samples")):
        parser = __import__("spikeport.cli", fromlist=["build_parser"]).build_parser()
        sub = next(a for a in parser._actions if hasattr(a, "choices") and a.choices and command in a.choices)
        flags = {opt: a for a in sub.choices[command]._actions for opt in a.option_strings}
        assert "--samples" in flags and old in flags and flags[old].dest == flags["--samples"].dest
        assert old not in sub.choices[command].format_help()  # the alias is not advertised


def test_a_deprecated_spelling_warns_after_the_output_and_never_before_an_error(files, tmp_path, capsys):
    argv = ["convert", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "o"), "--eval-samples", "4"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such checkpoint" in err[0], err  # a refusal is its one line
    out = tmp_path / "o"
    argv = ["convert", str(files["checkpoint"]), "--out", str(out), "--calibrate", "0", "--no-onnx", "--quiet"]
    assert main([*argv, "--eval-samples", "4"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "spikeport convert: warning: --eval-samples is deprecated: write --samples", err
    assert json.loads((out / "conversion_report.json").read_text())["comparison"]["samples"] == 4


def test_convert_leads_with_its_verdict_and_ends_with_the_next_step(files, tmp_path, capsys):
    """convert prints the executors' accuracies and a one-line summary of its layers, the per-layer table only with
    --layers (as run and info do), and the command to run next; api.convert reports its stages as api.train does."""
    out = tmp_path / "o"
    argv = ["convert", str(files["checkpoint"]), "--out", str(out), "--calibrate", "0", "--no-onnx", "--samples", "4"]
    assert main(argv) == 0
    said = capsys.readouterr()
    lines = [line for line in said.out.splitlines() if line.strip()]
    assert lines[0].startswith("accuracy on 4 test samples: torch-float")
    assert "saturated weights" in lines[1] and "a_in wraps" in lines[1] and "worst quantization error" in lines[1]
    assert "conversion report (executors" not in said.out and "--layers" in said.out
    assert lines[-1].startswith(f"next: spikeport run {out / 'model.spk.h5'} --backend lava --compare reference")
    assert "convert" in said.err  # the stages, on stderr
    assert main([*argv[:3], str(tmp_path / "o2"), *argv[4:], "--layers"]) == 0
    assert "conversion report (executors: torch-float, torch-fakequant, reference)" in capsys.readouterr().out
    stages: list[str] = []
    api.convert(files["checkpoint"], tmp_path / "o3", calibrate=0, samples=4, onnx=False, progress=stages.append)
    assert stages and all(line.startswith("convert: ") for line in stages)
    api.convert(files["checkpoint"], tmp_path / "o4", calibrate=0, samples=4, onnx=False)
    assert "convert" in capsys.readouterr().err  # by default, as api.train reports its epochs
