"""The package layering holds: lint-imports checks the contracts of pyproject.toml ([tool.importlinter]:
the layers, no cycles, no torch in the IR and the integer runtimes, no Lava in training, nothing imports
the CLI) on this checkout's source, function-local imports included."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    if importlib.util.find_spec("importlinter") is None:
        pytest.fail("import-linter is not installed here: run `make setup` (requirements.txt pins it)")
    # this checkout's spikeport, whatever an installed copy points at; --no-cache: no cache folder written
    path = [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    proc = subprocess.run(
        [sys.executable, "-c", command, "--no-cache", "--no-logo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (
        f"import contracts broken (lint-imports exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
    )
