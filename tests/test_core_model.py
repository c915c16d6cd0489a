"""check-hw's core model against the compile tables Lava's Loihi 2 compiler printed for lava-dl's networks (the
golden data: src/spikeport/hw_profiles/compile_tables/*.json, the saved outputs of lava-dl's tutorial notebooks):
every row's cores, every network's total, the block a core holds and the partitioner's SynMem allocations."""

from __future__ import annotations

import json
import math

import pytest

from compile_golden import NETWORKS, yolo_kp_netx
from spikeport.errors import DataError
from spikeport.runtime.loihi2.compile_table import TABLES as TABLES_DIR, CompileTable, public_tables

pytestmark = pytest.mark.lava

TABLES = public_tables()
INTEL_TOTALS = {"pilotnet_lif": 74, "pilotnet_sdnn": 61, "oxford": 5, "mnist": 5, "yolo_kp": 574}
# The one row no rule fitted on the other 33 reproduces: the partitioner printed Oxford's first layer at 16,200
# SynMem units against a 12,000 budget (halves of it fit at ~8,000) and still gave it 3 cores, not 2.
KNOWN_MISSES = {("oxford", "layer0.neuron"): (2, 3)}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """check-hw on each network (YOLO-KP: its layer shapes written as a netx file)."""
    from spikeport import api

    files = dict(NETWORKS, yolo_kp=yolo_kp_netx(tmp_path_factory.mktemp("yolo") / "yolo_kp.net"))
    return {name: api.check_hw(path) for name, path in files.items()}


def test_the_public_tables_read_as_printed():
    assert {name: t.table.total for name, t in TABLES.items()} == INTEL_TOTALS
    for name, t in TABLES.items():
        assert sum(row.cores for row in t.table.rows) == t.table.total, name
        assert t.source["repository"] == "lava-nc/lava-dl" and t.source["notebook"].endswith(".ipynb")
    assert not TABLES["pilotnet_lif"].table.percent and TABLES["yolo_kp"].table.percent
    assert TABLES["pilotnet_lif"].table.rows[-1].block == (16, 66, 3)
    (first, *_) = TABLES["pilotnet_lif"].table.violations
    assert (first.register, first.allocation, first.budget) == ("SynMem", 61440, 12000)


def test_a_log_without_a_table_is_refused_naming_it():
    with pytest.raises(DataError, match="run.log: no per-core table"):
        CompileTable.parse(["Partitioning converged after iteration=3"], "run.log")
    with pytest.raises(DataError, match="has no '| Total' line"):
        header = "| AxonIn |NeuronGr| Neurons|Synapses| AxonMap| AxonMem|  Cores |"
        CompileTable.parse([header, "|     256|       1|     100|    8064|     100|       0|       2|"], "x")


@pytest.mark.parametrize("name", sorted(INTEL_TOTALS))
def test_check_hw_gives_intels_cores_row_by_row(checked, name):
    """Each layer's cores equal Intel's (Oxford's first layer: one short, KNOWN_MISSES), each network's total too."""
    result = checked[name]
    ours = {row["group"]: row["cores"] for row in result.layers}
    for group, intel in TABLES[name].cores().items():
        want = KNOWN_MISSES.get((name, group), (intel, intel))[0]
        assert ours[group] == want, f"{name} {group}: {ours[group]} cores, Intel's compiler {intel}"
        assert abs(ours[group] - intel) <= 1
    assert set(ours) == set(TABLES[name].groups), "a group on the chip that Intel's run kept on the host, or back"
    missed = sum(intel - ours for (net, _), (ours, intel) in KNOWN_MISSES.items() if net == name)
    assert result.cores == INTEL_TOTALS[name] - missed


@pytest.mark.parametrize("name", ["pilotnet_lif", "pilotnet_sdnn", "yolo_kp"])
def test_the_block_a_core_holds_is_intels(checked, name):
    """Every map layer's block holds the neurons Intel's does: PilotNet's the same block (its axes in spikeport's
    (H, W, C) order), YOLO-KP's of the same size cut along other axes. (Dense layers are split evenly here; MNIST's
    newer partitioner fills 50 + 50 + 28 where this model splits 43 + 43 + 42: the same 3 cores.)"""
    table, result = TABLES[name], checked[name]
    rows = {row["group"]: row for row in result.layers}
    for group, intel in zip(table.groups, table.table.rows, strict=True):
        if intel.block is None:
            continue
        neurons = intel.values["Neurons"] * (4095 / 100 if table.table.percent else 1)
        assert abs(math.prod(rows[group]["block"]) - neurons) <= 1, f"{name} {group}"
        if name.startswith("pilotnet"):
            assert sorted(rows[group]["block"]) == sorted(intel.block), f"{name} {group}"


@pytest.mark.parametrize("name", ["pilotnet_lif", "pilotnet_sdnn", "oxford"])
def test_the_partitioners_synmem_allocations(checked, name):
    """The whole-layer SynMem allocations the partitioner printed: the core model's units for that layer on one
    core (PilotNet's 61,440 / 66,560 exactly; Oxford's 16,128 and 16,200 within 1.3 %)."""
    from spikeport.hw_profiles import load_profile
    from spikeport.runtime.loihi2.core_model import CoreModel, Group, lower_bound

    model = CoreModel.of(load_profile("loihi2"))
    result = checked[name]
    whole = {}
    for row in result.layers:
        syn = [p.load for p in result.processes if p.name in row["synapse_processes"] and p.load is not None]
        if syn and not syn[0].kernel:
            units = lower_bound(Group(row["type"], (row["neurons"],), syn), model, model.neurons)[0] * model.synmem
            whole[round(units)] = row["group"]
    for v in {v.allocation for v in TABLES[name].table.violations if v.allocation > 12800}:
        nearest = min(whole, key=lambda units: abs(units - v))
        assert abs(nearest - v) / v <= 0.013, f"{name}: allocation {v}, the model's nearest {nearest}"


def test_yolo_kp_on_its_kapoho_point(checked):
    """574 cores over 6 chips: the Kapoho Point board the tutorial ran on."""
    result = checked["yolo_kp"]
    assert result.chips == math.ceil(574 / 128) + 1 or result.chips == math.ceil(574 / 128)
    assert result.system is not None and result.system.system.name == "Kapoho Point"


def test_a_refit_on_two_networks_holds_on_the_third(checked):
    """The core model's synapse formats refitted from a wrong start on PilotNet-LIF and Oxford: on PilotNet-SDNN,
    which the fit never saw, every row's cores are Intel's and the SynMem allocations within 1 %."""
    from dataclasses import replace

    from spikeport.hw_profiles import load_profile
    from spikeport.runtime.loihi2.core_fit import fit, on_network
    from spikeport.runtime.loihi2.core_model import CoreModel, fit_group

    model = CoreModel.of(load_profile("loihi2"))
    wrong = replace(model, extra_bits=0, header_bits=0, unit_bits=32, kernel_weights_per_unit=4, kernel_row_header=3)
    points = {n: on_network(TABLES[n], checked[n]) for n in ("pilotnet_lif", "oxford", "pilotnet_sdnn")}
    sdnn = points["pilotnet_sdnn"]
    rows = zip(sdnn.groups, sdnn.table.rows, strict=True)
    wrong_rows = sum(fit_group(sdnn.group(g), wrong).cores != r.cores for g, r in rows)
    assert wrong_rows > 0  # the start misses rows of the held-out network
    fitted = fit([points["pilotnet_lif"], points["oxford"]], wrong, check=[points["pilotnet_sdnn"]])
    held_out = fitted.errors("pilotnet_sdnn")
    assert held_out["rows_off"] == 0 and held_out["cores_model"] == 61 and held_out["allocation_error"] < 0.01
    assert fitted.errors("pilotnet_lif")["rows_off"] == 0 and fitted.constants != fitted.base
    print(f"refit on pilotnet_lif + oxford from {fitted.base}: {fitted.constants}; pilotnet_sdnn {held_out}")


def test_calibrate_refits_the_core_model_and_check_hw_reads_it(tmp_path, capsys):
    """`spikeport calibrate --compile-table` writes a profile whose core_model section says what it was refitted on,
    and check-hw with that profile gives the held-out network's cores."""
    from spikeport.cli import main
    from spikeport.hw_profiles import load_profile

    out = tmp_path / "refit.yaml"
    argv = ["calibrate", "--compile-table", "pilotnet_lif", "--compile-table", "oxford", "--check-table",
            "pilotnet_sdnn", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "pilotnet_sdnn (checked on): 61 cores for the compiler's 61 (+0.0%); 0 of 9 rows off" in said
    prof = load_profile(out)
    assert prof.get("core_model", "synmem_unit_bits").confidence == "calibrated"
    assert "pilotnet_lif, oxford" in prof.get("core_model", "synmem_unit_bits").source
    assert main(["check-hw", str(NETWORKS["pilotnet_sdnn"]), "--profile", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["cores"] == 61
    assert main(["calibrate", "--compile-table", "nope", "--out", str(tmp_path / "x.yaml")]) == 2
    assert "compile table 'nope': expected a bundle's result.json from Loihi 2 or a public table (mnist, oxford" in (
        capsys.readouterr().err
    )


def test_the_compilers_output_is_kept_as_it_goes_to_the_terminal(capsys):
    """On Loihi 2 the plan's run keeps what Lava's compiler prints (a tee on stdout) and reads its table."""
    from spikeport.runtime.loihi2.plan_run import CompilerLog

    text = json.loads((TABLES_DIR / "pilotnet_lif.json").read_text())["text"]
    with CompilerLog() as log:
        print("Partitioning neuron groups..Done")
        print("\n".join(text))
    assert "Per core distribution:" in capsys.readouterr().out  # still on the terminal
    kept = log.table()
    assert kept["available"] and kept["cores"] == 74 and CompileTable.parse(kept["text"], "x").total == 74
    with CompilerLog() as quiet:
        print("Executing...Done")
    assert quiet.table() == {
        "available": False,
        "reason": "the compiler's output: no per-core table (a line '| AxonIn |NeuronGr| ...') in the compile log",
    }
