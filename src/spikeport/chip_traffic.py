"""``ChipTraffic``: the spikes that cross from chip to chip, a record check-hw writes and the energy estimate prices.

``runtime.loihi2.check_hw`` counts them from its placement; ``metrics.energy`` prices them (a neuromorphic
estimate's ``chip_crossings`` line). The record sits below both, so pricing needs no runtime import.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChipTraffic:
    """Spike messages that cross from one chip to another, as check-hw's placement gives them (one message
    per destination core on another chip). ``measured_share``: the part of the messages counted from a run
    report's spikes; the rest assumes every neuron fires at ``rate`` per step."""

    chips: int
    messages_per_step: float  # per sample
    steps: int  # time steps per sample
    source: str  # where the firing came from: a run report's spike counts or an assumed rate
    measured_share: float = 0.0
    rate: float = 0.0
    by_layer: dict[str, float] = field(default_factory=dict)  # crossing messages per step, by sending layer

    @property
    def messages_per_inference(self) -> float:
        return self.messages_per_step * self.steps

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"messages_per_inference": self.messages_per_inference}
