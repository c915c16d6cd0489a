"""--backend loihi2: fails at once without lava-loihi, saying what is missing and how INRC access works."""

import pytest

from spikeport.errors import BackendUnavailableError
from spikeport.runtime.loihi2 import backend as loihi2

NO_LOIHI = bool(loihi2.missing())


@pytest.mark.skipif(not NO_LOIHI, reason="lava-loihi is installed here")
def test_require_loihi2_names_what_is_missing_and_the_access_route():
    with pytest.raises(BackendUnavailableError) as err:
        loihi2.require_loihi2()
    text = str(err.value)
    assert "lava-loihi" in text and loihi2.NC_COMPILER in text and "Loihi 2 system" in text
    assert "INRC" in text and "vLab" in text and "sinfo" in text and "--backend lava" in text


@pytest.mark.skipif(not NO_LOIHI, reason="lava-loihi is installed here")
def test_run_loihi2_fails_before_building_anything(monkeypatch):
    from spikeport.runtime.lava import backend as lava_backend, run as lava_run

    def forbidden(*args, **kwargs):
        raise AssertionError("built a network although lava-loihi is missing")

    monkeypatch.setattr(lava_backend, "build_network", forbidden)
    monkeypatch.setattr(lava_run, "run_lava", forbidden)
    with pytest.raises(BackendUnavailableError):
        loihi2.run_loihi2(graph=None, images=None)


@pytest.mark.skipif(not NO_LOIHI, reason="lava-loihi is installed here")
def test_cli_fails_at_once_before_reading_the_artifact(tmp_path, capsys):
    from spikeport.cli import main

    rc = main(["run", str(tmp_path / "does-not-exist.spk.h5"), "--backend", "loihi2"])
    err = capsys.readouterr().err
    assert rc == 2 and "lava-loihi" in err and "does not exist" not in err


@pytest.mark.skipif(not NO_LOIHI, reason="lava-loihi is installed here")
def test_energy_probe_is_inactive_without_the_profiler():
    probe = loihi2.EnergyProbe(run_cfg=None, num_steps=10)
    assert probe.results(1) == {"available": False, "reason": f"{loihi2.PROFILER} not importable"}


@pytest.mark.skipif(NO_LOIHI, reason="needs lava-loihi and a Loihi 2 system (INRC)")
def test_hw_config_is_loihi2_hwcfg():
    from lava.magma.core.run_configs import Loihi2HwCfg

    assert isinstance(loihi2.hw_config(), Loihi2HwCfg)
