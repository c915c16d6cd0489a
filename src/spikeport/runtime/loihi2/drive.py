"""How the hardware plan's input reaches the chip (``plan.py``); a leaf module so that the API and the CLI can offer
the choices without loading Lava."""

from __future__ import annotations

from enum import Enum

from spikeport.errors import ConfigError


class ChipDrive(str, Enum):
    """How the input reaches the chip."""

    BIAS = "bias"  # the first neuron layer's bias, set once a sample (PilotNet-LIF)
    ADAPTER = "adapter"  # a host stream every step through an embedded-IO adapter (PilotNet-SDNN)

    @classmethod
    def of(cls, value: ChipDrive | str) -> ChipDrive:
        """The member named ``value``; a ConfigError listing the choices for any other."""
        try:
            return cls(value)
        except ValueError:
            raise ConfigError(
                f"unknown chip input drive {value!r}; valid choices: {', '.join(d.value for d in cls)}"
            ) from None
