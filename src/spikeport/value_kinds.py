"""Value kinds: what travels on an edge of the IR, and what every part of spikeport needs to know about it.

Each op's record declares the kinds it reads and the kind it sends (``OpSpec.input_kinds`` / ``out_kind``);
a node reports the kind of its input in its run report row (``input_kind``). One ``ValueKind`` record per
kind holds the facts its consumers used to keep in their own tables: the dtype a run records it in, whether
the host replays it from the recordings, which kind wins when a node reads several, and how its events are
priced. A new kind is one record here; the consumers read its attributes.

A ``ValueKind`` is a ``str`` equal to its name, so JSON (run reports store kinds by name), node attributes
and comparisons with a name keep working unchanged.

This module sits below ``ir``, ``metrics`` and ``run_report`` (all three read kinds) and imports only the
standard library and ``errors`` (``import spikeport.api`` loads no numpy, and run reports name kinds through it).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from typing import Any

from spikeport.errors import ConfigError


class Pricing(enum.Enum):
    """How the events driven by an input of this kind are priced (docs/counting.md, "Priced classes")."""

    # one accumulate per (spike, synapse) pair: ``synops``
    ACCUMULATE = "accumulate"
    # integers v: v x fan-out accumulates (``synops_valued``) or one MAC per (non-zero input, synapse)
    # (``synops``), as ``metrics.energy_records.CountingRule.integer_inputs`` chooses
    VALUED = "valued"
    # signed multi-bit messages: one multiply-accumulate (payload x weight) per (message, synapse): ``synops``
    MULTIPLY = "multiply"
    # dense analog values (the encoding layer): every value is a MAC per synapse, ``macs``, charged at every
    # step or once (``CountingRule.first_layer_per_timestep``)
    DENSE = "dense"


class ValueKind(str):
    """One value kind: a ``str`` (its name) carrying the facts about it. Made only here; read-only."""

    precedence: int  # which kind a node's row reports when it reads several: the highest (the densest input)
    recorded: str | None  # the numpy dtype a run records it in, by name; None: runs do not record it
    host_replayed: bool  # the host recomputes it from the recorded values (a Lava run does not record it)
    pricing: Pricing
    doc: str

    def __new__(
        cls,
        name: str,
        *,
        precedence: int,
        pricing: Pricing,
        doc: str,
        recorded: str | None = None,
        host_replayed: bool = False,
    ) -> ValueKind:
        kind = super().__new__(cls, name)
        kind.__dict__.update(
            precedence=precedence, recorded=recorded, host_replayed=host_replayed, pricing=pricing, doc=doc
        )
        return kind

    @property
    def name(self) -> str:
        """The plain string, for places that must not hold the record (JSON, node attributes)."""
        return str.__str__(self)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"value kind '{self}' is read-only")

    def __repr__(self) -> str:
        return f"ValueKind({self.name!r})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return _named, (self.name,)  # one record per kind, also after a copy or a pickle


ANALOG = ValueKind(
    "analog",
    precedence=6,
    pricing=Pricing.DENSE,
    doc="quantized pixels: the input layer's graded spikes, dense (every value is non-zero in general)",
)
INTEGER = ValueKind(
    "integer",
    precedence=5,
    host_replayed=True,
    pricing=Pricing.VALUED,
    doc="residual sums of spikes (SEW): small non-negative integers, recomputed by the host from recorded spikes",
)
GRADED = ValueKind(
    "graded",
    precedence=4,
    recorded="int32",  # a 24-bit payload: int8 would wrap it silently
    pricing=Pricing.MULTIPLY,
    doc="signed multi-bit spikes a neuron sends (sigma-delta messages, netx SDNN inputs)",
)
SPIKES = ValueKind(
    "spikes",
    precedence=3,
    recorded="int8",
    pricing=Pricing.ACCUMULATE,
    doc="binary spikes, 0 or 1",
)
ACTIVATION = ValueKind(
    "activation",
    precedence=2,
    pricing=Pricing.ACCUMULATE,
    doc="a synaptic input a_in that only a neuron consumes, summed over all its inputs (Lava sums the "
    "connections on a_in); lives inside the network, never recorded",
)
LOGITS = ValueKind(
    "logits",
    precedence=1,
    host_replayed=True,
    pricing=Pricing.ACCUMULATE,
    doc="the readout's class scores, computed on the host from recorded values",
)
NONE = ValueKind(
    "none",
    precedence=0,
    pricing=Pricing.ACCUMULATE,
    doc="no input: the input kind of a node that reads nothing (the input layer); no edge carries it",
)


class ValueKinds:
    """The registry of value kinds by name; ``get`` refuses an unknown name, listing the known ones."""

    def __init__(self, *kinds: ValueKind) -> None:
        self._table = {kind.name: kind for kind in sorted(kinds, key=lambda k: -k.precedence)}

    def get(self, name: object, where: str | None = None) -> ValueKind:
        """The kind called ``name``; a ConfigError naming ``where`` (a node, a report field) otherwise."""
        kind = self.find(name)
        if kind is None:
            prefix = f"{where}: " if where else ""
            raise ConfigError(f"{prefix}unknown value kind {name!r}; known kinds: {', '.join(self._table)}")
        return kind

    def find(self, name: object) -> ValueKind | None:
        return self._table.get(name) if isinstance(name, str) else None

    def __contains__(self, name: object) -> bool:
        return self.find(name) is not None

    def __iter__(self) -> Iterator[ValueKind]:
        """The kinds, highest precedence first."""
        return iter(self._table.values())

    def __len__(self) -> int:
        return len(self._table)


VALUE_KINDS = ValueKinds(ANALOG, INTEGER, GRADED, SPIKES, ACTIVATION, LOGITS, NONE)


def _named(name: str) -> ValueKind:
    return VALUE_KINDS.get(name)


def densest(kinds: Iterable[ValueKind]) -> ValueKind:
    """The kind of highest precedence among ``kinds`` (``NONE`` for none): what a node reading them reports."""
    return max(kinds, key=lambda kind: kind.precedence, default=NONE)
