"""Hardware profiles: per-operation energy, chip limits, GPU peak rates, as YAML files.

One file per target (``loihi2.yaml``, ``cmos45nm.yaml``, ``h100.yaml``, ...), shipped as package data;
users add their own by passing a path (``spikeport report --profile my_chip.yaml``) without touching
code. Every number is an entry ``{value, unit, source, confidence[, note, range]}``: a number without
its unit, source or confidence, a key the schema does not know, or a unit of the wrong dimension is
refused with a ``ProfileError`` naming the file and the key. The schema is in docs/hw_profiles.md.

A profile file is read within budgets (``MAX_BYTES``; ``MAX_VALUES`` values once YAML's aliases are expanded, so an
8 KB alias bomb is refused instead of filling memory; ``MAX_DEPTH`` levels), every value is typed (strings are
strings of at most ``MAX_TEXT`` characters, numbers finite) and ranged (>= 0; a chip limit > 0, whole for counts and
bits: a limit of 0 is an error, not "no limit"), and every message quotes at most a short piece of the file.

    >>> p = load_profile("cmos45nm")
    >>> p.si("energy", "mac_fp32")          # joules
    4.6e-12
"""

from __future__ import annotations

from spikeport.hw_profiles.load import PROFILE_DIR, list_profiles, load_profile, parse_profile, resolve_profile_path
from spikeport.hw_profiles.records import ChipProcess, HwProfile, Quantity, System
from spikeport.hw_profiles.schema import CONFIDENCES, FIRM_CONFIDENCES, SCHEMA, SCHEMA_VERSION, UNITS

__all__ = [
    "CONFIDENCES",
    "FIRM_CONFIDENCES",
    "PROFILE_DIR",
    "SCHEMA",
    "SCHEMA_VERSION",
    "UNITS",
    "ChipProcess",
    "HwProfile",
    "Quantity",
    "System",
    "list_profiles",
    "load_profile",
    "parse_profile",
    "resolve_profile_path",
]
