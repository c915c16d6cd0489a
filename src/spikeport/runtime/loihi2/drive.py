"""How the hardware plan's input reaches the chip (``plan.py``); a leaf module so that the API and the CLI can offer
the choices without loading Lava."""

from __future__ import annotations

from enum import Enum


class ChipDrive(str, Enum):
    """How the input reaches the chip."""

    BIAS = "bias"  # the first neuron layer's bias, set once a sample (PilotNet-LIF)
    ADAPTER = "adapter"  # a host stream every step through an embedded-IO adapter (PilotNet-SDNN)
