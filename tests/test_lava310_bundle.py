"""The INRC bundle's run.sh on Python 3.10 + upstream lava-nc (no torch, no compatibility step): the deploy side
as a vLab VM has it. scripts/test_lava310.sh writes the bundle with the main environment (in a folder named with
spaces, quotes, $() and non-ASCII), runs this in .venv310, then reads the result with `spikeport report`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.lava, pytest.mark.lava310]
BUNDLE = os.environ.get("SPIKEPORT_LAVA310_BUNDLE")


@pytest.mark.skipif(not BUNDLE, reason="needs the main environment's bundle: run `make test-lava310`")
def test_bundle_run_sh_on_upstream_lava_equals_the_reference():
    folder = Path(BUNDLE).resolve()
    (folder / "result.json").unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", str(folder / "run.sh")], capture_output=True, text=True, env=env,
                          cwd=folder.parent, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("spikeport bundle: SIMULATION (Loihi2SimCfg, simulated embedded IO)")
    assert "identical to the reference at every step (3 samples)" in done.stdout
    assert not (folder.parent / "pwned").exists()
    result = json.loads((folder / "result.json").read_text())
    assert result["hardware"]["outputs_identical"] is True and result["hardware"]["states_identical"] is True
    if sys.version_info < (3, 11):
        import numpy

        assert numpy.__version__.startswith("1."), "the deploy side runs on upstream lava-nc's numpy < 2"
