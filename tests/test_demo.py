"""`spikeport demo` on a reduced setting: both attention variants trained, converted, run on the reference
simulator and on Lava (bit-exact check), and reported."""

from __future__ import annotations

import json

import pytest

from spikeport.demo import DemoConfig, DemoParityError, run_demo
from spikeport.errors import ConfigError

TINY = dict(embed_dim=16, depth=1, num_heads=2, T=2)


def test_bad_demo_config_names_the_field():
    with pytest.raises(ConfigError, match="demo attentions .*expected one or more of ssa"):
        DemoConfig(attentions=("flash",))
    with pytest.raises(ConfigError, match="demo lava_samples = 0"):
        DemoConfig(lava_samples=0)
    assert issubclass(DemoParityError, Exception)


@pytest.mark.slow
@pytest.mark.lava
def test_demo_reduced(tmp_path, capsys, monkeypatch):
    from spikeport.cli.demo import print_result

    messages = []
    result = run_demo(DemoConfig(out=str(tmp_path / "demo"), epochs=1, lava_samples=3, model=TINY), say=messages.append)
    assert [m.attention for m in result.models] == ["ssa", "lrf_dyn"]
    for m in result.models:
        assert m.lava_identical and m.lava_samples == 3
        assert set(m.accuracy) >= {"torch-float", "torch-fakequant", "reference (all)", "lava-fixed_pt (subset)"}
        for path in m.files.values():
            assert (tmp_path / "demo").resolve() in __import__("pathlib").Path(path).resolve().parents
        lava = json.loads(open(m.files["lava"]).read())
        assert lava["executor"] == "lava-fixed_pt" and lava["samples"] == 3 and lava["compare"]["identical"]
        ref = json.loads(open(m.files["reference"]).read())
        assert ref["executor"] == "reference" and ref["samples"] == 360
    summary = json.loads(result.json.read_text())
    assert summary["schema"] == "spikeport.report" and len(summary["runs"]) == 4
    assert [(m["name"], m["counts_by"], m["counted_samples"]) for m in summary["models"]] == [
        ("ssa", "reference", 360),
        ("lrf_dyn", "reference", 360),
    ]  # a model per artifact: the reference's counts over the whole split, Lava's verdict on 3 samples beside them
    for m in summary["models"]:
        assert [(x["executor"], x["identical"], x["samples"]) for x in m["exactness"]] == [("lava-fixed_pt", True, 3)]
    assert {r["executor"] for r in summary["runs"]} == {"reference", "lava-fixed_pt"}
    for m, reported in zip(result.models, summary["models"], strict=True):  # check-hw's figures: the report's own
        chip = reported["chip"]
        assert m.hardware == {"cores": chip["cores"], "host_computing": chip["host_computing"]}
        assert f"[{m.attention}] check-hw loihi2: ~{chip['cores']} cores" in "\n".join(messages)
    html = result.html.read_text()
    assert "<svg" in html and "estimated" in html
    assert any("bit-exact" in m for m in messages)
    if len(__import__("os").sched_getaffinity(0)) > 1:  # the two trainings ran side by side, a thread each
        assert any("training the 2 variants side by side, 1 torch thread(s) each" in m for m in messages)
        epoch_lines = [line for line in capsys.readouterr().err.splitlines() if " train loss " in line]
        assert epoch_lines and all(line.startswith("[ssa] ") for line in epoch_lines)  # trained in this process
    assert (tmp_path / "demo" / "runs" / "digits-lrf_dyn" / "checkpoint.pt").is_file()  # the attention's name
    monkeypatch.setenv("COLUMNS", "200")  # wide enough that no table label wraps
    print_result(result)
    out = capsys.readouterr().out
    assert "loihi2 energy (estimated, static included)" in out and str(result.html.resolve()) in out  # its answer
    words = " ".join(out.split())
    assert "ssa needs ~" in words and "lrf_dyn needs ~" in words  # its headline: each variant's cores
    # the table says what each accuracy is over: the test split for three executors, Lava's first images for one
    assert "accuracy on the digits test split (360 images; Lava on the first 3)" in words
    assert "training (min)" in words and "lava-fixed_pt (first 3)" in words and "(3)" not in words
