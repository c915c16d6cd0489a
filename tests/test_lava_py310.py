"""The Python 3.10 target: upstream lava-nc (numpy < 2, no compatibility step) reproduces, bit for bit,
what the main environment (Python 3.11, numpy 2, lava_compat steps) computed.

`make test-lava310` (scripts/test_lava310.sh) writes the main environment's results to
$SPIKEPORT_LAVA310_DIR and runs the tests marked lava310 in .venv310; elsewhere these tests skip.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.lava, pytest.mark.lava310]
ARTIFACTS = os.environ.get("SPIKEPORT_LAVA310_DIR")


def first_difference(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape:
        return f"shape {a.shape} != {b.shape}"
    idx = tuple(int(i) for i in np.argwhere(a != b)[0])
    return f"first at index {idx}: {a[idx]} != {b[idx]} ({int((a != b).sum())} differ)"


@pytest.mark.skipif(not ARTIFACTS, reason="needs the main environment's results: run `make test-lava310`")
def test_parity_network_matches_main_environment():
    from lava_testprocs import parity_net

    path = Path(ARTIFACTS) / "parity_net.npz"
    assert path.exists(), f"{path}: missing; scripts/test_lava310.sh writes it with the main environment"
    expected = np.load(path)
    got = parity_net.run()
    compared = [k for k in expected.files if not k.startswith("meta/")]
    assert sorted(compared) == sorted(k for k in got if not k.startswith("meta/"))
    for key in compared:
        assert np.array_equal(expected[key], got[key]), f"{key}: {first_difference(expected[key], got[key])}"
    assert any(expected[k].any() for k in compared if k.startswith("sink/"))
    if sys.version_info < (3, 11):  # the claim: the same results with and without the steps
        assert list(got["meta/compat_steps"]) == []
        print(
            f"identical to Python {expected['meta/python']} / numpy {expected['meta/numpy']} with steps "
            f"{list(expected['meta/compat_steps'])}; here Python {sys.version.split()[0]} / numpy "
            f"{np.__version__} without any"
        )


@pytest.mark.skipif(not ARTIFACTS, reason="needs the main environment's results: run `make test-lava310`")
@pytest.mark.parametrize("attention", ["ssa", "lrf_ssa", "lrf_causal", "lrf_dyn"])
def test_artifact_on_lava_matches_main_environment_reference(attention):
    """An artifact converted under Python 3.11 / torch runs here as Lava processes with the same spikes."""
    from spikeport.ir import artifact
    from spikeport.runtime.lava.run import run_lava

    folder = Path(ARTIFACTS)
    assert (folder / f"{attention}.spk.h5").exists(), f"{folder}: scripts/test_lava310.sh writes the artifacts"
    graph = artifact.read(folder / f"{attention}.spk.h5")
    expected = np.load(folder / f"{attention}.reference.npz")
    report = run_lava(graph, expected["images"])
    spikes = report.recording
    layers = [k.split("/", 1)[1] for k in expected.files if k.startswith("spikes/")]
    assert sorted(layers) == sorted(spikes)
    for name in layers:
        ref = expected[f"spikes/{name}"]
        assert np.array_equal(ref, spikes[name]), f"{attention} {name}: {first_difference(ref, spikes[name])}"
    assert sum(int(expected[f"spikes/{n}"].sum()) for n in layers) > 0
    assert report.predictions == expected["predictions"].tolist()
