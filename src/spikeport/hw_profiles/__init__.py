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

import math
import re
import reprlib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from spikeport.errors import ProfileError

SCHEMA_VERSION = 1
PROFILE_DIR = Path(__file__).parent
KINDS = ("neuromorphic", "cmos", "gpu")
CONFIDENCES = ("published", "measured", "vendor", "derived", "estimate")
# the confidences a verdict can rest on as they stand; "derived" (from an older chip, a formula) and "estimate"
# are used, and said to be what they are
FIRM_CONFIDENCES = frozenset({"published", "measured", "vendor"})

# unit -> factor to the SI base of its dimension (J, s, W, op/s, B/s, B, bit, count, mm2, nm)
UNITS: dict[str, dict[str, float]] = {
    "energy": {"fJ": 1e-15, "pJ": 1e-12, "nJ": 1e-9, "uJ": 1e-6, "mJ": 1e-3, "J": 1.0},
    "time": {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0},
    "power": {"uW": 1e-6, "mW": 1e-3, "W": 1.0},
    "rate": {"FLOP/s": 1.0, "GFLOP/s": 1e9, "TFLOP/s": 1e12, "OP/s": 1.0, "GOP/s": 1e9, "TOP/s": 1e12},
    "bandwidth": {"B/s": 1.0, "GB/s": 1e9, "TB/s": 1e12, "GiB/s": 2.0**30},
    "bytes": {"B": 1.0, "KB": 1e3, "KiB": 2.0**10, "MB": 1e6, "MiB": 2.0**20, "GB": 1e9, "GiB": 2.0**30},
    "bits": {"bit": 1.0},
    "count": {
        "count": 1.0,
        "neurons": 1.0,
        "cores": 1.0,
        "synapses": 1.0,
        "axons": 1.0,
        "chips": 1.0,
        "transistors": 1.0,
    },
    "area": {"mm2": 1.0},
    "length": {"nm": 1.0},
}

_DTYPES = ("int8", "int16", "int32", "fp16", "bf16", "fp32")
_ARITH = {f"{op}_{dt}": "energy" for op in ("add", "mult", "mac") for dt in _DTYPES}

# section -> key -> dimension. A key outside this table is refused: a typo must not silently price 0.
SCHEMA: dict[str, dict[str, str]] = {
    "energy": {
        **_ARITH,
        "synop": "energy",  # one synaptic op driven by a binary spike (neuromorphic core)
        "synop_graded": "energy",  # one synaptic op driven by a graded (integer-payload) spike
        "neuron_update": "energy",  # one active neuron (compartment) update per time step
        "neuron_update_inactive": "energy",
        "dendritic_update": "energy",  # one dendritic compartment update
        "synaptic_update": "energy",  # on-chip learning (not used by inference)
        "spike_local": "energy",  # a spike delivered within a tile / core
        "spike_hop_ew": "energy",
        "spike_hop_ns": "energy",  # one mesh hop
        "spike_chip_hop": "energy",  # one spike message from one chip to a neighbouring chip
        "sram_read_32b": "energy",
        "sram_write_32b": "energy",  # one 32-bit word from small local SRAM
        "cache_8kB_64b": "energy",
        "cache_32kB_64b": "energy",
        "cache_1MB_64b": "energy",
        "dram_64b": "energy",
    },
    "timing": {
        "synop": "time",
        "synaptic_update": "time",
        "neuron_update": "time",
        "neuron_update_inactive": "time",
        "spike_local": "time",
        "spike_hop_ew": "time",
        "spike_hop_ns": "time",
        "barrier_sync_min": "time",
        "barrier_sync_max": "time",
        "timestep": "time",
        "host_io_step": "time",  # neuromorphic: one time step that exchanges data with the host
        "kernel_launch": "time",  # GPU: host-side launch + minimum kernel time
    },
    "limits": {
        "cores_per_chip": "count",
        "embedded_cpus_per_chip": "count",
        "neurons_per_core": "count",
        "neurons_per_chip": "count",
        "synapses_per_chip": "count",
        "synaptic_memory_per_core": "bytes",
        "routing_memory_per_core": "bytes",
        "sram_per_core": "bytes",
        "sram_per_chip": "bytes",
        "fan_in_axons_per_core": "count",
        "fan_out_axons_per_core": "count",
        "neuron_groups_per_core": "count",
        "weight_bits": "bits",
        "delay_bits": "bits",
        "state_bits": "bits",
        "decay_bits": "bits",
        "graded_spike_bits": "bits",
    },
    "compute": {
        "flops_fp64": "rate",
        "flops_fp32": "rate",
        "flops_tf32": "rate",
        "flops_fp16": "rate",
        "flops_bf16": "rate",
        "ops_int8": "rate",
    },
    "memory": {"bandwidth": "bandwidth", "capacity": "bytes", "l2_cache": "bytes"},
    "power": {"tdp": "power", "idle": "power", "static": "power"},
    "chip": {"process_node": "length", "die_area": "area", "transistors": "count"},
}
TOP_LEVEL = {"schema_version", "name", "kind", "description", "processes", "systems", *SCHEMA}
# what a chip runs natively: 'standard' Lava processes with a chip model, or spikeport's own neurons whose
# update is expressible in the chip's programmable neuron (docs/lowering.md shows the mapping line by line)
PROCESS_KINDS = ("standard", "spikeport-microcode")
PROCESS_EVIDENCE = ("verified", "likely")
ENTRY_FIELDS = {"value", "unit", "source", "confidence", "note", "range"}
# the systems a chip is sold in (check-hw names the smallest that holds a network): a board or a whole system
SYSTEM_FORMS = ("board", "system")
SYSTEM_FIELDS = {"name", "form", "chips", "max_stack"}
MAX_BYTES = 1 << 20  # a profile file (the shipped ones have 2-6 KB)
MAX_VALUES = 100_000  # values after YAML aliases are expanded (the shipped ones have a few hundred)
MAX_DEPTH = 8  # levels of nesting (a profile has 4: section, key, entry, range)
MAX_TEXT = 2000  # characters of a name, description, source or note


@dataclass(frozen=True)
class Quantity:
    """One number of a profile, with its unit, where it comes from and how sure we are of it."""

    value: float
    unit: str
    source: str
    confidence: str  # one of CONFIDENCES
    dimension: str
    note: str = ""
    range: tuple[float, float] | None = None

    @property
    def firm(self) -> bool:
        """Published, measured or the vendor's own (FIRM_CONFIDENCES): not derived, not an estimate."""
        return self.confidence in FIRM_CONFIDENCES

    @property
    def si(self) -> float:
        """The value in the SI base of its dimension (J, s, W, op/s, B/s, B, bit, count)."""
        return self.value * UNITS[self.dimension][self.unit]

    def to_dict(self) -> dict:
        d = {"value": self.value, "unit": self.unit, "source": self.source, "confidence": self.confidence}
        if self.note:
            d["note"] = self.note
        if self.range is not None:
            d["range"] = list(self.range)
        return d


@dataclass(frozen=True)
class ChipProcess:
    """A Lava process type the chip runs: what it is, how sure we are, and the public source."""

    kind: str  # one of PROCESS_KINDS
    evidence: str  # one of PROCESS_EVIDENCE
    source: str


@dataclass(frozen=True)
class System:
    """A system built of the profile's chips: its name, whether it is a board or a whole system, its chips
    and, for a board that stacks, how many boards one stack takes (None: it does not stack)."""

    key: str
    name: str
    form: str  # one of SYSTEM_FORMS
    chips: Quantity  # chips in one board (or system)
    max_stack: Quantity | None = None  # boards in the largest stack

    def to_dict(self) -> dict:
        d: dict = {"name": self.name, "form": self.form, "chips": self.chips.to_dict()}
        if self.max_stack is not None:
            d["max_stack"] = self.max_stack.to_dict()
        return d


@dataclass(frozen=True)
class HwProfile:
    name: str
    kind: str  # one of KINDS
    description: str
    path: str
    sections: dict[str, dict[str, Quantity]] = field(default_factory=dict)
    processes: dict[str, ChipProcess] = field(default_factory=dict)  # Lava process type -> chip support
    systems: tuple[System, ...] = ()  # smallest first

    def get(self, section: str, key: str) -> Quantity | None:
        return self.sections.get(section, {}).get(key)

    def has(self, section: str, key: str) -> bool:
        return self.get(section, key) is not None

    def si(self, section: str, key: str) -> float:
        """The SI value of ``section.key``; a ProfileError naming the profile if it has none."""
        q = self.get(section, key)
        if q is None:
            raise ProfileError(
                f"{self.path}: profile '{self.name}' has no '{section}.{key}' "
                f"(needed here; add it to the profile or choose another one)"
            )
        return q.si

    def cite(self, section: str, key: str) -> str:
        """'value unit (confidence; source)' for reports."""
        q = self.get(section, key)
        return "n/a" if q is None else f"{q.value:g} {q.unit} ({q.confidence}; {q.source})"

    def to_dict(self) -> dict:
        d: dict = {
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "kind": self.kind,
            "description": self.description,
        }
        d.update({s: {k: q.to_dict() for k, q in entries.items()} for s, entries in self.sections.items()})
        if self.processes:
            d["processes"] = {k: vars(v).copy() for k, v in self.processes.items()}
        if self.systems:
            d["systems"] = {s.key: s.to_dict() for s in self.systems}
        return d


def list_profiles() -> list[str]:
    """Names of the profiles shipped with spikeport."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def resolve_profile_path(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    path = Path(text)
    if path.suffix in (".yaml", ".yml") or path.exists():
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


def parse_profile(data, where: str = "<profile>") -> HwProfile:
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
    return HwProfile(data["name"], data["kind"], data["description"].strip(), where, sections, processes, systems)


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


def _parse_entry(entry, dimension: str, where: str, section: str = "") -> Quantity:
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
