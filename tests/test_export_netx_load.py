"""An exported netx file loads in lava-dl in this environment with the one line `spikeport export` prints (Python
3.11 needs spikeport's Lava compatibility steps before lava-dl imports): run in a fresh interpreter."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.cli import main

pytestmark = pytest.mark.lava


def test_the_printed_one_liner_loads_the_file_in_lava_dl(tmp_path, capsys):
    from spikeport.ir import artifact

    path = artifact.write(quantized_graph(spiky_model("ssa"), random_images(16, seed=1)), tmp_path / "m.spk.h5")
    net = tmp_path / "stem.net"
    assert main(["export", str(path), "--netx", str(net)]) == 0
    out = capsys.readouterr().out
    line = next(x.strip() for x in out.splitlines() if x.strip().startswith("python -c"))
    argv = shlex.split(line)
    argv[0] = sys.executable
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "|Conv" in done.stdout  # lava-dl prints the layers it built
