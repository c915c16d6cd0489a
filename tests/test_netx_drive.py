"""The input drive of a netx network is one record, ``spikeport.netx.drive.InputDrive``: the CLI's ``--input-drive``
choices are its names (taken through spikeport.api), a name becomes a member where it enters (an unknown one is
refused, listing the choices), and the files that store a drive (artifact meta, conversion report, run report) keep
its name, as before the record."""

from __future__ import annotations

import json

import pytest

from spikeport import api
from spikeport.cli import build_parser
from spikeport.errors import ConfigError
from spikeport.ir import artifact
from spikeport.netx.drive import InputDrive
from test_cli import subcommands
from test_fuzz import netx_file, netx_spike_inputs


def test_the_cli_offers_the_api_records_names():
    commands = dict(subcommands(build_parser()))
    chip = tuple(d.value for d in api.ChipDrive)  # an artifact on --backend loihi2 / check-hw / bundle
    for command, offered in (("run", api.InputDrive.choices() + chip[1:]), ("convert", api.InputDrive.choices())):
        (flag,) = [a for a in commands[(command,)]._actions if "--input-drive" in a.option_strings]
        assert tuple(flag.choices) == offered, command
    assert api.InputDrive.choices() == ("spikes", "bias", "graded") and chip == ("bias", "adapter")
    for command in (("check-hw",), ("bundle",)):
        (flag,) = [a for a in commands[command]._actions if "--input-drive" in a.option_strings]
        assert tuple(flag.choices) == chip, command
    assert api.InputDrive is InputDrive


def test_a_name_becomes_its_member_and_an_unknown_name_is_refused():
    assert [InputDrive.of(name) for name in InputDrive.choices()] == list(InputDrive)
    assert InputDrive.of(InputDrive.GRADED) is InputDrive.GRADED
    assert [d for d in InputDrive if not d.timed] == [InputDrive.BIAS]  # images held for --steps steps
    with pytest.raises(ConfigError, match="unknown input_drive 'image'; valid choices: spikes, bias, graded"):
        InputDrive.of("image")


def test_files_store_the_drives_name(tmp_path):
    """A member given to convert_netx and run is written as its name: the artifact's meta, the conversion report
    and the run report read exactly as the string-drive code wrote them."""
    net = netx_file(tmp_path / "flat.net", conv=False)
    x = netx_spike_inputs(tmp_path / "x.npy", (16,))
    done = api.convert_netx(net, tmp_path / "out", input_drive=InputDrive.SPIKES)
    assert artifact.read_meta(done.artifact_path)["input_drive"] == "spikes"
    assert json.loads((tmp_path / "out" / "conversion_report.json").read_text())["input_drive"] == "spikes"
    for source in (net, done.artifact_path):
        report = api.run(source, inputs=x, input_drive=InputDrive.SPIKES)
        assert report.netx is not None and report.netx.input_drive == "spikes"
        assert json.loads(report.to_json())["netx"]["input_drive"] == "spikes"
    with pytest.raises(ConfigError, match="unknown input_drive 'pixels'; valid choices: spikes, bias, graded"):
        api.run(net, inputs=x, input_drive="pixels")
    with pytest.raises(ConfigError, match="unknown input_drive 'pixels'"):
        api.convert_netx(net, tmp_path / "again", input_drive="pixels")
