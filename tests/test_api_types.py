"""The typed API as a type checker and a REPL see it (issue 36): py.typed ships with the package, the choices are
Literal types equal to the registries they name, typing.get_type_hints resolves every public function of
spikeport.api (the names imported for type checkers only, resolved on demand), and a result prints in a line."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import pytest

from spikeport import api
from spikeport.brief import brief

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_says_it_is_typed():
    assert (ROOT / "src" / "spikeport" / "py.typed").is_file()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text()  # package-data: installed with the package


@pytest.mark.parametrize("name", [n for n in api.__all__ if typing.get_origin(getattr(api, n)) is not typing.Literal])
def test_get_type_hints_resolves_every_public_function(name):
    obj = getattr(api, name)
    hints = typing.get_type_hints(obj.__init__ if isinstance(obj, type) else obj)
    assert hints and "return" in hints or isinstance(obj, type), name


def test_the_hints_are_the_classes_and_importing_the_api_stays_light():
    from torch import nn

    from spikeport.convert.api import ConversionResult
    from spikeport.train.loop import TrainResult

    hints = typing.get_type_hints(api.convert)
    assert hints["return"] is ConversionResult and nn.Module in typing.get_args(hints["checkpoint"])
    assert TrainResult in typing.get_args(typing.get_type_hints(api.train)["return"])
    code = "import sys, spikeport.api; print(sorted(m for m in ('torch', 'numpy', 'h5py') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"


def test_the_choices_are_literal_types_equal_to_their_registries():
    from spikeport.data.images import DATASETS
    from spikeport.metrics.energy_records import INTEGER_RULES, PRECISIONS
    from spikeport.runtime.targets import TARGETS
    from spikeport.train.model_config import ATTENTIONS

    assert set(typing.get_args(api.Backend)) == set(TARGETS)
    assert set(typing.get_args(api.Attention)) == set(ATTENTIONS)
    assert set(typing.get_args(api.Dataset)) == set(DATASETS)
    assert set(typing.get_args(api.Precision)) == set(PRECISIONS)
    assert set(typing.get_args(api.IntegerInputs)) == set(INTEGER_RULES)
    assert set(typing.get_args(api.Drive)) == {d.value for d in api.InputDrive} | {d.value for d in api.ChipDrive}
    assert set(typing.get_args(api.InputDriveName)) == {d.value for d in api.InputDrive}
    assert set(typing.get_args(api.ChipDriveName)) == {d.value for d in api.ChipDrive}
    hints = typing.get_type_hints(api.run)
    assert hints["backend"] is api.Backend and api.InputLayout is hints["input_layout"]


def test_results_print_in_a_line(tmp_path):
    from conftest import spiky_model

    conv = api.convert(spiky_model("ssa"), tmp_path / "build", calibrate=16, samples=8, onnx=False)
    run = api.run(conv.artifact_path, samples=4)
    check = api.check_hw(conv.artifact_path)
    for result, shown in (
        (conv, ("artifact_path=", "<Graph: ", "reference_run=<RunReport>")),
        (run, ("executor='reference'", "samples=4", f"accuracy={run.accuracy:.4g}")),
        (check, ("verdict='OK", f"cores={check.cores}", "processes=<")),
        (conv.graph, ("nodes=<", "T=4")),
    ):
        text = repr(result)
        assert "\n" not in text and len(text) < 400 and "array(" not in text, text
        assert all(s in text for s in shown), text


def test_brief_values():
    import numpy as np

    assert brief(np.zeros((3, 4), np.int8)) == "<array (3, 4) int8>"
    assert brief(list(range(10))) == "<10 items>" and brief([1, 2]) == "[1, 2]" and brief({"a": 1}) == "{'a': 1}"
    assert brief(Path("/x/y")) == "'/x/y'" and brief(0.123456) == "0.1235" and brief("x" * 200).endswith("...'")
