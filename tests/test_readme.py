"""The README's commands, walked on what `make demo` writes (tests/conftest.py's demo_reports), from another working
folder: every `spikeport ...` line of its "On Loihi 2" block runs as written, paths aside, and the bundle it writes
runs with its own run.sh."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from spikeport.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"
pytestmark = pytest.mark.lava


def commands(section: str) -> list[list[str]]:
    """The `spikeport` lines of the first code block after ``section``, as argument lists (comments dropped)."""
    text = README.read_text()
    block = re.search(r"```\w*\n(.*?)```", text[text.index(section) :], re.S)
    assert block is not None, f"README: no code block after {section!r}"
    lines = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("spikeport ")]


def test_readme_loihi2_commands_run_on_the_demo_outputs_from_elsewhere(demo_reports, tmp_path, monkeypatch, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    artifact = os.path.relpath(demo_reports.folder / "build" / "lrf_dyn" / "model.spk.h5", elsewhere)
    steps = commands("## On Loihi 2")
    assert [argv[0] for argv in steps] == ["check-hw", "bundle", "report"]
    for argv in steps:
        argv = [artifact if a == "build/digits-lrf_dyn/model.spk.h5" else a for a in argv]
        if argv[0] == "report":  # the bundle's result: run.sh first, as on the VM
            env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
            env.pop("PYTHONPATH", None)
            done = subprocess.run(["bash", "bundle/run.sh"], capture_output=True, text=True, env=env, timeout=600)
            assert done.returncode == 0, done.stdout + done.stderr
        assert main([*argv, "--quiet"] if argv[0] != "check-hw" else argv) == 0, argv
    out = capsys.readouterr().out
    assert "hardware plan (input drive" in out and (elsewhere / "bundle" / "result.json").exists()


def python_block(section: str) -> str:
    """The first ```python block after ``section``."""
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text[text.index(section) :], re.S)
    assert block is not None, f"README: no python block after {section!r}"
    return block.group(1)


def test_readme_lava_program_runs_as_written(demo_reports, capsys):
    """The README's "In your own Lava program" block, exactly as written but for the artifact's path: its images
    come from the artifact's test split, and Lava's predictions equal the reference's on them."""
    from spikeport import lava_startup

    code = python_block("## In your own Lava program")
    written = '"build/digits-lrf_dyn/model.spk.h5"'
    assert code.count(written) == 1
    code = code.replace(written, repr(str(demo_reports.folder / "build" / "lrf_dyn" / "model.spk.h5")))
    lava_startup.install()  # what make setup's spikeport-lava.pth does at every start of the venv's python
    scope: dict[str, object] = {}
    exec(compile(code, str(README), "exec"), scope)
    assert len(scope["predictions"]) == 8 and list(scope["predictions"]) == scope["reference"]
    assert "the same as the reference: True" in capsys.readouterr().out
