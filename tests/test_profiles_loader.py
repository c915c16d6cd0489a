"""hw_profiles: the shipped profiles load and are self-consistent; bad files are refused, naming file and key."""

from __future__ import annotations

import math

import pytest
import yaml

from spikeport.errors import ProfileError
from spikeport.hw_profiles import CONFIDENCES, SCHEMA, list_profiles, load_profile, parse_profile

SHIPPED = ("a100", "cmos45nm", "h100", "loihi1", "loihi2", "v100")


def test_shipped_profiles_all_load():
    assert set(SHIPPED) <= set(list_profiles())
    for name in SHIPPED:
        p = load_profile(name)
        assert p.name == name
        for section, entries in p.sections.items():
            for key, q in entries.items():
                assert q.unit and q.source and q.confidence in CONFIDENCES, (name, section, key)
                assert math.isfinite(q.si) and q.si >= 0


def test_derived_mac_entries_equal_mult_plus_add():
    """A MAC entry that says 'mult + add' must equal the sum of the two published entries."""
    p = load_profile("cmos45nm")
    for dt in ("fp32", "fp16", "int32", "int8"):
        assert p.si("energy", f"mac_{dt}") == pytest.approx(p.si("energy", f"mult_{dt}") + p.si("energy", f"add_{dt}"))
    assert p.si("energy", "mac_fp32") == pytest.approx(4.6e-12)
    assert p.si("energy", "add_fp32") == pytest.approx(0.9e-12)


def test_loihi2_energies_are_marked_as_not_published():
    """No Loihi 2 per-op energy is published: every one must say it is derived or an estimate."""
    p = load_profile("loihi2")
    assert p.sections["energy"]
    for key, q in p.sections["energy"].items():
        assert q.confidence in ("derived", "estimate"), key
        assert "Loihi 1" in q.source or "synop" in q.note, key
    assert p.si("energy", "synop") == load_profile("loihi1").si("energy", "synop")
    # the limits the hardware check needs
    for key in (
        "neurons_per_core",
        "synmem_units_per_core",
        "fan_in_axons_per_core",
        "weight_bits",
        "delay_bits",
        "cores_per_chip",
        "state_bits",
    ):
        assert p.has("limits", key), key
    # the core model's budgets and constants each name the compile tables they were fitted on
    for section, key in [("limits", "neurons_per_core"), ("limits", "synmem_units_per_core")] + [
        ("core_model", key) for key in p.sections["core_model"] if key != "unfitted_state_factor"
    ]:
        q = p.get(section, key)
        assert q.confidence == "fitted" and "compile" in q.source + q.note or "SynMem" in q.source, key


def test_gpu_profiles_have_what_the_estimate_needs():
    for name in ("v100", "a100", "h100"):
        p = load_profile(name)
        for section, key in (
            ("compute", "flops_fp32"),
            ("compute", "flops_fp16"),
            ("memory", "bandwidth"),
            ("power", "tdp"),
            ("power", "idle"),
        ):
            assert p.si(section, key) > 0, (name, key)
    assert load_profile("h100").si("compute", "flops_fp32") > load_profile("a100").si("compute", "flops_fp32")


def _write(tmp_path, data, name="chip.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _good():
    return {
        "schema_version": 1,
        "name": "my_chip",
        "kind": "neuromorphic",
        "description": "test chip",
        "energy": {"synop": {"value": 2.5, "unit": "pJ", "source": "my measurement", "confidence": "measured"}},
        "limits": {"neurons_per_core": {"value": 512, "unit": "neurons", "source": "spec", "confidence": "vendor"}},
    }


def test_user_profile_by_path(tmp_path):
    p = load_profile(_write(tmp_path, _good()))
    assert p.name == "my_chip" and p.si("energy", "synop") == pytest.approx(2.5e-12)
    assert p.si("limits", "neurons_per_core") == 512


@pytest.mark.parametrize(
    "mutate, words",
    [
        (lambda d: d["energy"]["synop"].pop("unit"), ["energy.synop", "missing 'unit'"]),
        (lambda d: d["energy"]["synop"].pop("source"), ["energy.synop", "missing 'source'"]),
        (lambda d: d["energy"]["synop"].pop("confidence"), ["energy.synop", "missing 'confidence'"]),
        (lambda d: d["energy"].update(synopp=d["energy"]["synop"]), ["unknown key 'energy.synopp'"]),
        (lambda d: d.update(energies={}), ["unknown top-level key 'energies'"]),
        (lambda d: d["energy"]["synop"].update(unit="W"), ["energy.synop", "not a unit of energy"]),
        (lambda d: d["energy"]["synop"].update(value=-1), ["energy.synop", "-1"]),
        (lambda d: d["energy"]["synop"].update(value="2e9"), ["energy.synop", "write 1.0e+9"]),
        (lambda d: d["energy"]["synop"].update(confidence="sure"), ["energy.synop", "confidence 'sure'"]),
        (lambda d: d["energy"]["synop"].update(colour="red"), ["energy.synop", "unknown field 'colour'"]),
        (lambda d: d.update(kind="fpga"), ["key 'kind'"]),
        (lambda d: d.update(schema_version=7), ["schema_version"]),
        (lambda d: d["limits"]["neurons_per_core"].update(range=[5, 1]), ["limits.neurons_per_core", "range"]),
    ],
)
def test_bad_profile_refused_naming_file_and_key(tmp_path, mutate, words):
    data = _good()
    mutate(data)
    path = _write(tmp_path, data, "bad_chip.yaml")
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    msg = str(err.value)
    assert "bad_chip.yaml" in msg and "\n" not in msg
    for w in words:
        assert w in msg, msg


def test_unknown_name_lists_shipped_profiles():
    with pytest.raises(ProfileError, match="loihi2"):
        load_profile("loihi3")
    with pytest.raises(ProfileError, match="not found"):
        load_profile("/nonexistent/chip.yaml")


def test_missing_entry_is_a_clear_error():
    p = load_profile("cmos45nm")
    with pytest.raises(ProfileError, match="cmos45nm.*energy.synop"):
        p.si("energy", "synop")


def test_schema_keys_have_known_dimensions():
    from spikeport.hw_profiles import UNITS

    for section, keys in SCHEMA.items():
        assert all(dim in UNITS for dim in keys.values()), section


def test_round_trip_to_dict():
    p = load_profile("loihi2")
    again = parse_profile(p.to_dict(), "roundtrip")
    assert again.sections == p.sections


def test_systems_smallest_first_with_sources():
    """The systems check-hw names: Loihi 2's boards and Hala Point, Loihi 1's, each count cited."""
    p = load_profile("loihi2")
    assert [(s.name, s.form, s.chips.si) for s in p.systems] == [
        ("Oheo Gulch", "board", 1),
        ("Kapoho Point", "board", 8),
        ("Hala Point", "system", 1152),
    ]
    assert all(s.chips.source and s.chips.confidence == "vendor" for s in p.systems)
    kp = p.systems[1]
    assert kp.max_stack is not None and kp.max_stack.confidence == "estimate"  # boards per stack: not published
    assert [s.chips.si for s in load_profile("loihi1").systems] == [2, 8, 32, 64, 768]
    assert parse_profile(p.to_dict(), "roundtrip").systems == p.systems
    hop = p.get("energy", "spike_chip_hop")
    assert hop is not None and hop.confidence == "estimate" and hop.range is not None


@pytest.mark.parametrize(
    "entry, words",
    [
        ({"name": "X", "form": "board"}, ["systems.x", "name, form, chips"]),
        ({"name": "X", "form": "rack", "chips": {}}, ["systems.x", "form 'rack'"]),
        (
            {"name": "X", "form": "board", "chips": {"value": 8, "unit": "W", "source": "s", "confidence": "vendor"}},
            ["systems.x.chips", "not a unit of count"],
        ),
        (
            {
                "name": "X",
                "form": "board",
                "chips": {"value": 0.5, "unit": "chips", "source": "s", "confidence": "vendor"},
            },
            ["systems.x", "whole numbers"],
        ),
        (
            {
                "name": "X",
                "form": "system",
                "chips": {"value": 8, "unit": "chips", "source": "s", "confidence": "vendor"},
                "max_stack": {"value": 2, "unit": "count", "source": "s", "confidence": "estimate"},
            },
            ["only a board stacks"],
        ),
    ],
)
def test_bad_system_refused(tmp_path, entry, words):
    data = _good()
    data["systems"] = {"x": entry}
    with pytest.raises(ProfileError) as err:
        load_profile(_write(tmp_path, data, "bad_chip.yaml"))
    for w in words:
        assert w in str(err.value), str(err.value)
