"""Output that reads well in a log (issue 36): no carriage return when stderr is not a terminal (the reference
simulator and `analyze` wrote tqdm's redraws into log files), a training epoch that says where it is every
LOG_EVERY_S seconds in a log, `run` whose result comes first and whose --quiet keeps it, `info` short by default."""

from __future__ import annotations

import io
import json
import re

import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport import progress
from spikeport.cli import main
from spikeport.progress import Bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_in_a_log_is_a_line_every_interval_and_never_a_carriage_return():
    log = io.StringIO()
    bar = Bar(range(3), desc="epoch 1/2", stream=log, every_s=0)
    for _ in bar:
        bar.set_postfix(loss="0.500")
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines == [f"epoch 1/2: {i}/3 batches (0 s, loss 0.500)" for i in (1, 2, 3)]
    quiet = io.StringIO()
    assert list(Bar(range(3), stream=quiet, every_s=0, enabled=False)) == [0, 1, 2] and quiet.getvalue() == ""
    slow = io.StringIO()
    assert list(Bar(range(3), stream=slow)) == [0, 1, 2] and slow.getvalue() == ""  # within LOG_EVERY_S: no line


def test_a_bar_on_a_terminal_is_tqdm():
    term = Terminal()
    assert list(Bar(range(3), desc="reference", stream=term)) == [0, 1, 2]
    assert "reference" in term.getvalue() and "\r" in term.getvalue()  # tqdm's redraws, where they belong


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    from spikeport.ir import artifact as artifact_io

    graph = quantized_graph(spiky_model("ssa"), random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    return artifact_io.write(graph, tmp_path_factory.mktemp("logs") / "m.spk.h5")


def test_the_reference_simulator_writes_no_carriage_return_into_a_log(artifact, capsys, monkeypatch):
    from spikeport import api

    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)
    api.run(artifact, "reference", samples=6, batch_size=2, progress=True)
    err = capsys.readouterr().err
    assert "\r" not in err and "reference: 3/3 batches" in err


def test_training_in_a_log_says_where_it_is_within_an_epoch(tmp_path, capsys, monkeypatch):
    from spikeport import api

    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)
    api.train(
        preset="digits-tiny",
        model={"depth": 1, "embed_dim": 16, "num_heads": 1},
        epochs=1,
        batch_size=512,
        out=str(tmp_path / "run"),
        log=True,
        progress=False,
    )
    err = capsys.readouterr().err
    assert "\r" not in err
    assert re.search(r"^epoch 1/1: 1/\d+ batches \(\d+ s, loss \d", err, re.M), err  # within the epoch
    assert "epoch   1/1  train loss" in err  # and the epoch's line


def test_run_prints_its_result_first_and_the_layers_on_request(artifact, capsys, tmp_path):
    assert main(["run", str(artifact), "--samples", "4"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("accuracy ") and "4 samples" in out[0] and "reference" in out[0], out
    assert len(out) <= 4 and not any("patch_embed.proj_lif" in line for line in out)
    assert main(["run", str(artifact), "--samples", "4", "--layers"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("accuracy ") and "patch_embed.proj_lif" in text


def test_run_quiet_keeps_the_result_line(artifact, capsys, tmp_path):
    report = tmp_path / "r.json"
    assert main(["run", str(artifact), "--samples", "4", "--quiet", "--json", str(report)]) == 0
    out = capsys.readouterr().out.splitlines()
    accuracy = json.loads(report.read_text())["accuracy"]
    assert len(out) == 2 and out[0].startswith(f"accuracy {accuracy:.4f}") and out[1] == f"wrote {report}", out


def test_info_is_short_by_default_and_whole_with_layers(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["info", "spikformer-8-768"]) == 0
    short = capsys.readouterr().out.splitlines()
    assert main(["info", "spikformer-8-768", "--layers"]) == 0
    whole = capsys.readouterr().out.splitlines()
    assert len(short) <= 60 and len(whole) > 4 * len(short), (len(short), len(whole))
    assert any("--layers" in line for line in short)
