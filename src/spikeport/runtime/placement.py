"""In-order placement: the one rule by which consecutive pieces of a network go into bins of a fixed capacity.

Two planners place a network this way, in graph order and never reordering it: check-hw puts each neuron group's
cores onto chips of ``cores_per_chip`` cores (``runtime.loihi2.check_hw``), and a partitioned Lava run puts the
segments between its cut points, sized in Lava processes, into parts run one after another
(``runtime.lava.partition``). The rule is next-fit: a piece goes whole into the current bin if it fits in what is
left there, else it starts the next bin. A piece larger than a bin is where they differ (``Wide``): a layer wider
than a chip spans chips from where the last one ended (its cores are interchangeable), a segment that cannot be cut
gets bins of its own. Deterministic: the same pieces always get the same placement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum


class Wide(Enum):
    """Where a piece larger than a bin goes."""

    SPAN = "span"  # from where the last piece ended, across as many bins as it needs (the next piece follows it)
    ALONE = "alone"  # from the start of a bin, in bins of its own (the next piece starts a bin)


@dataclass(frozen=True)
class Slot:
    """A piece's place: ``size`` consecutive units from unit ``start`` (unit // capacity is the bin)."""

    name: str
    size: int
    start: int

    def bins(self, capacity: int) -> list[int]:
        """The bins it occupies."""
        return list(range(self.start // capacity, (self.start + self.size - 1) // capacity + 1))


@dataclass(frozen=True)
class Placement:
    """Pieces placed in order into bins of ``capacity`` units."""

    capacity: int
    slots: tuple[Slot, ...]

    @property
    def bins(self) -> int:
        """The bins it uses (at least one)."""
        end = max((s.start + s.size for s in self.slots), default=1)
        return math.ceil(end / self.capacity)

    def groups(self) -> list[tuple[Slot, ...]]:
        """The pieces by the bin they start in, in order: a bin's pieces, or a wide piece alone."""
        by_bin: dict[int, list[Slot]] = {}
        for s in self.slots:
            by_bin.setdefault(s.start // self.capacity, []).append(s)
        return [tuple(by_bin[b]) for b in sorted(by_bin)]


def place(pieces: Sequence[tuple[str, int]], capacity: int, wide: Wide) -> Placement:
    """(name, size) pieces, in order, into bins of ``capacity`` units by next-fit (see the module docstring)."""
    if capacity < 1:
        raise ValueError(f"capacity {capacity}: a bin holds at least one unit")
    slots, cursor = [], 0
    for name, size in pieces:
        if size < 1:
            raise ValueError(f"piece {name!r} has size {size}: every piece takes at least one unit")
        used = cursor % capacity
        if used and used + size > capacity and (size <= capacity or wide is Wide.ALONE):
            cursor += capacity - used  # it starts the next bin
        slots.append(Slot(name, size, cursor))
        cursor += size
        if wide is Wide.ALONE and size > capacity:
            cursor = math.ceil(cursor / capacity) * capacity  # the rest of its last bin stays empty
    return Placement(capacity, tuple(slots))


def smallest_capacity(pieces: Sequence[tuple[str, int]], bins: int) -> int:
    """The smallest capacity that places ``pieces`` in at most ``bins`` bins (a binary search between the largest
    piece and all of them: no piece is wider than a bin)."""
    if bins < 1 or not pieces:
        raise ValueError(f"{bins} bins for {len(pieces)} pieces: expected at least one of each")
    sizes = [size for _, size in pieces]
    lo, hi = max(sizes), sum(sizes)
    while lo < hi:
        mid = (lo + hi) // 2
        if place(pieces, mid, Wide.ALONE).bins <= bins:
            hi = mid
        else:
            lo = mid + 1
    return lo
