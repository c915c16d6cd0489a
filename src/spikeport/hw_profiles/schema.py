"""The hardware profiles' schema: the sections and keys a profile may hold and each key's dimension, the units of
every dimension, the words a confidence, a process or a system may take, and the budgets a file is read within.
A key outside ``SCHEMA`` is refused (``hw_profiles.load``): a typo must not silently price 0."""

from __future__ import annotations

SCHEMA_VERSION = 1
KINDS = ("neuromorphic", "cmos", "gpu")
CONFIDENCES = ("published", "measured", "vendor", "derived", "estimate", "calibrated", "fitted")
# the confidences a verdict can rest on as they stand; "derived" (from an older chip, a formula), "estimate" and
# "fitted" (a model's constant fitted to measurements it reproduces, e.g. Lava's compile tables) are used, and said
# to be what they are
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
        "units": 1.0,  # a register budget in the compiler's own units (Loihi 2's SynMem)
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
        "synmem_units_per_core": "count",  # Lava's Loihi 2 partitioner's SynMem budget (core_model.py)
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
    # the constants of check-hw's core model (runtime/loihi2/core_model.py), fitted to Lava's compile tables
    "core_model": {
        "synapse_extra_bits": "bits",  # a weight matrix's synapse: bits beside its weight field
        "synapse_list_header_bits": "bits",  # one input axon's list on one core
        "synmem_unit_bits": "bits",  # bits a SynMem unit holds in the fit
        "kernel_weights_per_unit": "count",  # a shared kernel row: output-channel weights a unit holds
        "kernel_row_header_units": "count",
        "unfitted_state_factor": "count",  # the high end of an extrapolated neuron model's share of a core
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
TOP_LEVEL = {"schema_version", "name", "kind", "description", "processes", "systems", "calibration", *SCHEMA}
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
