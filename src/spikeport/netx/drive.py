"""The input drive: what feeds a netx network, one member per way lava-dl feeds a file's input (docs/netx.md,
"Input conventions").

Code compares members (``drive is InputDrive.BIAS``), never names. Files keep the name: a run report's
``netx.input_drive``, an artifact's ``meta["input_drive"]`` and a conversion report's ``input_drive`` hold
``drive.value``, so they read and write as they did. Names from users (``--input-drive``, ``input_drive="bias"``)
become members at the API's edge (:meth:`InputDrive.of`), which refuses an unknown one listing the choices.

The standard library only: ``spikeport.api`` imports it at its own import (``import spikeport.api`` loads no numpy),
and the CLI takes ``--input-drive``'s choices from it through the API.
"""

from __future__ import annotations

import enum

from spikeport.errors import unknown_choice


class InputDrive(enum.Enum):
    """What feeds a netx network; its ``value`` is the name files and flags use."""

    # 0/1 spikes [S, T, *input_shape] into the first synapse (or into an Input block's neuron)
    SPIKES = "spikes"
    # integer images [S, H, W, C] held for ``steps`` steps as the input neuron's bias_mant (lava-dl's PilotNet and
    # TinyNet tests): no time axis of their own
    BIAS = "bias"
    # signed integers [S, T, *input_shape] into an SDNN input layer's Delta encoder
    GRADED = "graded"

    @property
    def timed(self) -> bool:
        """Whether the inputs carry their own time axis ([S, T, ...]); a bias image has none (``steps`` gives T)."""
        return self is not InputDrive.BIAS

    @classmethod
    def of(cls, value: InputDrive | str) -> InputDrive:
        """The member ``value`` is or names; a ConfigError listing the choices for anything else."""
        if isinstance(value, InputDrive):
            return value
        try:
            return cls(value)
        except ValueError:
            raise unknown_choice("input_drive", value, cls.choices()) from None

    @classmethod
    def choices(cls) -> tuple[str, ...]:
        """The names, in the order the CLI and the docs list them."""
        return tuple(drive.value for drive in cls)
