"""The counters of a run: one ``Counter`` record per counter, in one place (docs/counting.md).

A record says what a counter is called in a run report (its JSON key), whether it is counted per layer and
time step or once per run, what one count is (its unit), how an energy estimate prices it, and how the report
shows it. Everything that reads or writes counts iterates over ``COUNTERS``: the run report's rows and its
reader (``run_report.LayerReport``), the run counter (``runtime/counter.py``), the energy estimate
(``metrics/energy.py``), the report's records, tables and plots, ``spikeport run``'s table. The kernels count
what they count (``ir/kernels/<op>.py``, hook ``count``, keys named here); a new counter is a record here,
its count in the kernels that produce it and, if a profile prices it, the profile entry (docs/architecture.md).

Standard library only, below ``run_report`` (the deploy side reads run reports without torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum


class Scope(Enum):
    """Where a counter's counts live in a run report."""

    LAYER = "layer"  # a per-time-step list on every layer row (summed over samples), and its sum in ``totals``
    RUN = "run"  # one number for the whole run, in ``totals`` only


class Column(Enum):
    """When the report's per-layer tables (and ``spikeport run``'s) show a counter."""

    ALWAYS = "always"
    NONZERO = "nonzero"  # where a layer of the run counted any: a diagnostic, whose zero is the good news
    NEVER = "never"  # read by the energy estimate, not a column of its own


@dataclass(frozen=True)
class Price:
    """How an energy estimate prices one count (``metrics/energy.py``, docs/counting.md "Priced classes")."""

    entry: str | None = None  # a neuromorphic profile's energy entry for one count (hw_profiles/*.yaml)
    # priced through the layer's value kind instead (``value_kinds.Pricing``: MACs on pixels, accumulates on
    # spikes, ...), sorted into the energy estimate's classes: the synaptic counters
    by_kind: bool = False


UNPRICED = Price()


@dataclass(frozen=True)
class Counter:
    """One counter of a run report."""

    name: str  # the run report's key (and the kernels' count key)
    unit: str  # what the counts are, in the plural ("spikes", "synaptic operations")
    label: str  # the column heading of the report's tables
    doc: str  # what one count is, in a line (docs/counting.md has each op's rule)
    scope: Scope = Scope.LAYER
    price: Price = UNPRICED  # unpriced: a diagnostic the estimates do not charge
    column: Column = Column.ALWAYS
    # every run report of schema spikeport.run v1 has it; a counter added since is optional in a file: a layer
    # row without it reads as zeros (the writers of before did not count it)
    required: bool = False


# In the order a layer row of a run report writes them (spikeport.run v1: files written before these records
# read back and write out key for key).
COUNTERS: tuple[Counter, ...] = (
    Counter(
        "spikes",
        "spikes",
        "spikes",
        "output events of a spiking node: binary spikes, or non-zero graded messages of a sigma-delta neuron",
        price=Price("spike_local"),
        required=True,
    ),
    Counter(
        "synops",
        "synaptic operations",
        "synops",
        "one per (non-zero input, synapse) pair: an accumulate of the weight into the target",
        price=Price(by_kind=True),
        required=True,
    ),
    Counter(
        "synops_valued",
        "value-weighted synaptic operations",
        "valued synops",
        "synops weighted by the input's value: an input of value v counts v times",
        price=Price(by_kind=True),
        column=Column.NEVER,
    ),
    Counter(
        "macs",
        "multiply-accumulates",
        "MACs",
        "multiply-accumulates on non-spike values: pixels, attention products, rescales, the readout",
        price=Price(by_kind=True),
        required=True,
    ),
    Counter(
        "neuron_updates",
        "neuron updates",
        "neuron updates",
        "one per neuron and time step, whether it fires or not",
        price=Price("neuron_update"),
        column=Column.NEVER,
        required=True,
    ),
    Counter(
        "dendritic_updates",
        "dendritic updates",
        "dendritic updates",
        "one per dendritic compartment and time step (the writes of X)",
        price=Price("dendritic_update"),
        required=True,
    ),
    Counter(
        "act_overflows",
        "activation overflows",
        "a_in overflows",
        "LIF inputs with |a_in| >= 2^17: Loihi's 24-bit a_in << 6 wraps them",
        column=Column.NONZERO,
    ),
    Counter(
        "accumulator_overflows",
        "accumulator overflows",
        "accumulator overflows",
        "sigma-delta neurons and sigma decoders whose 24-bit input accumulator (sigma) reaches +-2^23: Loihi 2 "
        "wraps it, Lava's CPU models and the reference keep the exact sum",
        column=Column.NONZERO,
    ),
)

BY_NAME = {c.name: c for c in COUNTERS}
LAYER = tuple(c for c in COUNTERS if c.scope is Scope.LAYER)
PRICED = tuple(c for c in COUNTERS if c.price.entry is not None)  # by a profile entry of their own


def counter(name: str) -> Counter:
    """The record of counter ``name``; a KeyError listing the counters where there is none."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown counter {name!r}; counters: {', '.join(BY_NAME)}") from None


def columns(*totals: Mapping[str, float | None]) -> list[Counter]:
    """The per-layer counters a table shows for runs with these ``totals`` (``Counter.column``): those always shown,
    and the diagnostics some run counted."""
    return [
        c
        for c in LAYER
        if c.column is Column.ALWAYS or (c.column is Column.NONZERO and any(t.get(c.name) for t in totals))
    ]
