"""The run report (schema ``spikeport.run``, version 1), split by job: ``records`` (a row per layer and a record
per block: ``LayerReport``, ``Comparison``, ``LavaRun``, ``NetxRun``, ``HardwareRun``), ``report`` (``RunReport``,
the whole run, its JSON out and in), ``reading`` (a JSON object or file to the records, within the budgets of a
file), ``checks`` (the rules each field is held to) and ``merge`` (the shards of one run into one report).

The names readers import are re-exported here (``from spikeport.run_report import RunReport``). Standard library
only: the deploy side (numpy + h5py + lava, no torch) reads and writes run reports too.
"""

from spikeport.run_report.checks import HARDWARE_RUNS, MAX_SAMPLES, MAX_T
from spikeport.run_report.records import (
    LAYER_COUNTER_NAMES,
    READABLE_VERSIONS,
    REQUIRED_COUNTER_NAMES,
    SCHEMA,
    SCHEMA_VERSION,
    ComparedLayer,
    Comparison,
    HardwareRun,
    LavaRun,
    LayerReport,
    NetxRun,
)
from spikeport.run_report.report import RunReport, as_dict

__all__ = [
    "LAYER_COUNTER_NAMES",
    "HARDWARE_RUNS",
    "MAX_SAMPLES",
    "MAX_T",
    "READABLE_VERSIONS",
    "REQUIRED_COUNTER_NAMES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "ComparedLayer",
    "Comparison",
    "HardwareRun",
    "LavaRun",
    "LayerReport",
    "NetxRun",
    "RunReport",
    "as_dict",
]
