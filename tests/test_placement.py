"""One placement rule (runtime/placement.py) for check-hw's neuron groups on chips and a partitioned Lava run's
segments in parts: next-fit in order; a piece wider than a bin spans bins (a layer) or gets its own (a segment)."""

from __future__ import annotations

import random

import pytest

from spikeport.runtime.placement import Wide, place, smallest_capacity


def pieces(*sizes: int) -> list[tuple[str, int]]:
    return [(f"p{i}", s) for i, s in enumerate(sizes)]


def test_next_fit_in_order_and_the_two_ways_of_a_wide_piece():
    spans = place(pieces(3, 2, 2, 9, 1), 4, Wide.SPAN)
    assert [s.start for s in spans.slots] == [0, 4, 6, 8, 17]  # p1 starts chip 1; p3 spans 3 bins; p4 follows it
    assert [s.bins(4) for s in spans.slots] == [[0], [1], [1], [2, 3, 4], [4]] and spans.bins == 5
    alone = place(pieces(3, 2, 2, 9, 1), 4, Wide.ALONE)
    assert [s.start for s in alone.slots] == [0, 4, 6, 8, 20]  # p4 does not share the wide piece's last bin
    assert [[s.name for s in g] for g in alone.groups()] == [["p0"], ["p1", "p2"], ["p3"], ["p4"]]
    assert place([], 4, Wide.SPAN).bins == 1
    with pytest.raises(ValueError, match="at least one unit"):
        place(pieces(2, 0), 4, Wide.SPAN)


def test_alone_groups_hold_at_most_the_capacity_unless_a_piece_alone_is_larger():
    rng = random.Random(7)
    for _ in range(200):
        sizes = [rng.randint(1, 9) for _ in range(rng.randint(1, 12))]
        capacity = rng.randint(1, 12)
        groups = place(pieces(*sizes), capacity, Wide.ALONE).groups()
        assert [s.size for g in groups for s in g] == sizes  # every piece once, in order
        assert all(sum(s.size for s in g) <= capacity or len(g) == 1 for g in groups)
        for g, after in zip(groups, groups[1:], strict=False):  # next-fit: a group ends when the next piece overflows
            assert sum(s.size for s in g) + after[0].size > capacity
        best = smallest_capacity(pieces(*sizes), 3)
        assert place(pieces(*sizes), best, Wide.ALONE).bins <= 3
        assert best == max(sizes) or place(pieces(*sizes), best - 1, Wide.ALONE).bins > 3


def test_check_hw_places_neuron_groups_by_the_shared_rule():
    from spikeport.runtime.loihi2.check_hw import place as place_groups

    rows = [{"group": f"g{i}", "layer": f"l{i}", "neurons": 10, "cores": c} for i, c in enumerate((100, 20, 30, 300))]
    shared = place([(r["group"], r["cores"]) for r in rows], 128, Wide.SPAN)
    assert [(g.start, g.cores) for g in place_groups(rows, 128)] == [(s.start, s.size) for s in shared.slots]
