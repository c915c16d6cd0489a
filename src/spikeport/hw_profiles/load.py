"""Reading a hardware profile: a shipped one by name or any file by path, within the schema's budgets, every entry
checked against ``hw_profiles.schema`` (a ``ProfileError`` naming the file and the key), into the records of
``hw_profiles.records``."""

from __future__ import annotations

import math
import re
import reprlib
from pathlib import Path

import yaml

from spikeport.errors import ProfileError
from spikeport.hw_profiles.records import ChipProcess, HwProfile, Quantity, System
from spikeport.hw_profiles.schema import (
    CONFIDENCES,
    ENTRY_FIELDS,
    KINDS,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_TEXT,
    MAX_VALUES,
    PROCESS_EVIDENCE,
    PROCESS_KINDS,
    SCHEMA,
    SCHEMA_VERSION,
    SYSTEM_FIELDS,
    SYSTEM_FORMS,
    TOP_LEVEL,
    UNITS,
)

PROFILE_DIR = Path(__file__).parent  # the shipped profiles, package data beside this module


def list_profiles() -> list[str]:
    """Names of the profiles shipped with spikeport."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def resolve_profile_path(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    path = Path(text)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if path.is_dir():
            raise ProfileError(f"{path}: a folder, expected a hardware profile file (.yaml)")
        if path.exists() and not path.is_file():  # a FIFO would block the read
            raise ProfileError(f"{path}: not a regular file (a FIFO or device), expected a hardware profile file")
        if not path.is_file():
            raise ProfileError(f"{path}: hardware profile file not found")
        return path
    candidate = PROFILE_DIR / f"{text}.yaml"
    if not candidate.is_file():
        raise ProfileError(
            f"unknown hardware profile '{text}'; shipped profiles: {', '.join(list_profiles())} "
            f"(or pass the path of a .yaml file)"
        )
    return candidate


def load_profile(name_or_path: str | Path) -> HwProfile:
    """A shipped profile by name (``"loihi2"``) or any profile file by path, validated (see the module doc)."""
    path = resolve_profile_path(name_or_path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ProfileError(f"{path}: {size} bytes, not a hardware profile (at most {MAX_BYTES})")
        text = path.read_bytes().decode("utf-8")
    except OSError as err:
        raise ProfileError(f"{path}: cannot be read ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not UTF-8 text (a binary file?), expected a YAML hardware profile") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ProfileError(f"{path}: not valid YAML: {_short(' '.join(str(err).split()), 300)}") from None
    except RecursionError:
        raise ProfileError(f"{path}: nested too deeply, not a hardware profile") from None
    _check_size(data, str(path))
    return parse_profile(data, str(path))


def _check_size(data: object, where: str) -> None:
    """At most MAX_VALUES values and MAX_DEPTH levels once aliases are expanded, counted without expanding them."""
    stack: list[tuple[object, int]] = [(data, 0)]
    count = 0
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise ProfileError(
                f"{where}: more than {MAX_VALUES} values once YAML aliases are expanded (an alias bomb?)"
            )
        if depth > MAX_DEPTH:
            raise ProfileError(f"{where}: nested more than {MAX_DEPTH} levels deep, not a hardware profile")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for kv in value.items() for v in kv)
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


_REPR = reprlib.Repr()  # never the whole of a value: a few elements, two levels, 60 characters each
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxstring, _REPR.maxother = 2, 4, 4, 60, 60


def _short(value: object, limit: int = 60) -> str:
    """``value`` as the message shows it: repr (str as it is with ``limit``), cut to ``limit`` characters."""
    text = value if isinstance(value, str) and limit > 60 else _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _text(value: object, where: str, what: str) -> str:
    """A non-empty string of at most MAX_TEXT characters."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise ProfileError(
            f"{where}: '{what}' must be a non-empty string of at most {MAX_TEXT} characters, got {_short(value)}"
        )
    return value.strip()


def parse_profile(data: object, where: str = "<profile>") -> HwProfile:
    """Validate a profile's parsed YAML (a dict) and build the HwProfile."""
    if not isinstance(data, dict):
        raise ProfileError(f"{where}: a profile is a mapping with keys {sorted(TOP_LEVEL)}")
    unknown = sorted(str(k) for k in set(data) - TOP_LEVEL)
    if unknown:
        raise ProfileError(f"{where}: unknown top-level key {_short(unknown[0])}; valid keys: {sorted(TOP_LEVEL)}")
    version = data.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise ProfileError(f"{where}: key 'schema_version': expected {SCHEMA_VERSION}, got {_short(version)}")
    for key in ("name", "kind", "description"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ProfileError(f"{where}: key '{key}': a non-empty string is required")
        _text(data[key], where, key)
    if data["kind"] not in KINDS:
        raise ProfileError(f"{where}: key 'kind': {_short(data['kind'])} is not one of {', '.join(KINDS)}")
    sections = {}
    for section, spec in SCHEMA.items():
        entries = data.get(section)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            raise ProfileError(f"{where}: section '{section}' must be a mapping of key -> entry")
        parsed = {}
        for key, entry in entries.items():
            if key not in spec:
                raise ProfileError(
                    f"{where}: unknown key '{section}.{str(key)[:60]}'; valid keys in '{section}': "
                    f"{', '.join(sorted(spec))}"
                )
            parsed[key] = _parse_entry(entry, spec[key], f"{where}: key '{section}.{key}'", section)
        sections[section] = parsed
    processes = _parse_processes(data.get("processes") or {}, where)
    systems = _parse_systems(data.get("systems") or {}, where)
    calibration = data.get("calibration") or {}
    if not isinstance(calibration, dict):
        raise ProfileError(f"{where}: key 'calibration': expected a mapping (what the calibration was fit on)")
    return HwProfile(
        data["name"], data["kind"], data["description"].strip(), where, sections, processes, systems, calibration
    )


def _parse_systems(entries: object, where: str) -> tuple[System, ...]:
    if not isinstance(entries, dict):
        raise ProfileError(f"{where}: section 'systems' must be a mapping of system key -> entry")
    out = []
    for key, entry in entries.items():
        at = f"{where}: key 'systems.{key}'"
        if not isinstance(entry, dict) or not {"name", "form", "chips"} <= set(entry) <= SYSTEM_FIELDS:
            raise ProfileError(
                f"{at}: expected a mapping with name, form, chips (and max_stack for a board that stacks)"
            )
        if not isinstance(entry["name"], str) or not entry["name"].strip():
            raise ProfileError(f"{at}: 'name' must be a non-empty string")
        if entry["form"] not in SYSTEM_FORMS:
            raise ProfileError(f"{at}: form {entry['form']!r} is not one of {', '.join(SYSTEM_FORMS)}")
        chips = _parse_entry(entry["chips"], "count", f"{where}: key 'systems.{key}.chips'")
        stack = (
            None
            if "max_stack" not in entry
            else _parse_entry(entry["max_stack"], "count", f"{where}: key 'systems.{key}.max_stack'")
        )
        if chips.si < 1 or chips.si != int(chips.si) or (stack is not None and stack.si < 1):
            raise ProfileError(f"{at}: chips and max_stack must be whole numbers >= 1")
        if stack is not None and entry["form"] != "board":
            raise ProfileError(f"{at}: only a board stacks; a {entry['form']} takes no max_stack")
        out.append(System(str(key), entry["name"].strip(), entry["form"], chips, stack))
    return tuple(sorted(out, key=lambda s: s.chips.si))


def _parse_processes(entries: object, where: str) -> dict[str, ChipProcess]:
    if not isinstance(entries, dict):
        raise ProfileError(f"{where}: section 'processes' must be a mapping of Lava process type -> entry")
    out = {}
    for name, entry in entries.items():
        if not isinstance(name, str) or len(name) > 200:
            raise ProfileError(f"{where}: section 'processes': {_short(name)} is not a Lava process type's name")
        at = f"{where}: key 'processes.{name}'"
        if not isinstance(entry, dict) or set(entry) != {"kind", "evidence", "source"}:
            raise ProfileError(f"{at}: expected a mapping with exactly kind, evidence, source")
        if entry["kind"] not in PROCESS_KINDS:
            raise ProfileError(f"{at}: kind {_short(entry['kind'])} is not one of {', '.join(PROCESS_KINDS)}")
        if entry["evidence"] not in PROCESS_EVIDENCE:
            raise ProfileError(
                f"{at}: evidence {_short(entry['evidence'])} is not one of {', '.join(PROCESS_EVIDENCE)}"
            )
        if not isinstance(entry["source"], str) or not entry["source"].strip():
            raise ProfileError(f"{at}: 'source' must name the public source")
        out[name] = ChipProcess(entry["kind"], entry["evidence"], _text(entry["source"], at, "source"))
    return out


def _parse_entry(entry: object, dimension: str, where: str, section: str = "") -> Quantity:
    if not isinstance(entry, dict):
        raise ProfileError(f"{where}: expected a mapping {{value, unit, source, confidence}}, got {_short(entry)}")
    unknown = sorted(str(k) for k in set(entry) - ENTRY_FIELDS)
    if unknown:
        raise ProfileError(f"{where}: unknown field {_short(unknown[0])}; valid fields: {sorted(ENTRY_FIELDS)}")
    for name in ("value", "unit", "source", "confidence"):
        if name not in entry or entry[name] is None or entry[name] == "":
            raise ProfileError(f"{where}: missing '{name}' (every number needs value, unit, source, confidence)")
    value = entry["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        hint = (
            " (YAML reads 1e9 as text: write 1.0e+9)"
            if isinstance(value, str) and re.fullmatch(r"[-+]?[0-9.]+[eE][0-9]+", value)
            else ""
        )
        raise ProfileError(f"{where}: value {_short(value)} is not a finite non-negative number{hint}")
    if section == "limits" and (value == 0 or dimension in ("count", "bits") and value != int(value)):
        raise ProfileError(
            f"{where}: value {_short(value)}: a chip limit is a number > 0{', whole' if dimension != 'bytes' else ''} "
            "(leave a limit out where the chip sets none; 0 is not 'no limit')"
        )
    unit = entry["unit"]
    if not isinstance(unit, str) or unit not in UNITS[dimension]:
        raise ProfileError(
            f"{where}: unit {_short(unit)} is not a unit of {dimension}; use one of {', '.join(UNITS[dimension])}"
        )
    if entry["confidence"] not in CONFIDENCES:
        raise ProfileError(f"{where}: confidence {_short(entry['confidence'])} is not one of {', '.join(CONFIDENCES)}")
    source = _text(entry["source"], where, "source")
    note = _text(entry["note"], where, "note") if entry.get("note") is not None else ""
    rng = entry.get("range")
    if rng is not None:
        ok = (
            isinstance(rng, (list, tuple))
            and len(rng) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in rng)
            and rng[0] <= rng[1]
        )
        if not ok:
            raise ProfileError(f"{where}: range {_short(rng)} must be [low, high] in the entry's unit, finite")
        rng = (float(rng[0]), float(rng[1]))
    return Quantity(float(value), unit, source, entry["confidence"], dimension, note, rng)
