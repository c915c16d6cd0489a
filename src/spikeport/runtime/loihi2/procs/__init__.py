"""Lava processes of the hardware plan's simulation (see embedded_io.py). A package of its own because Lava's
compiler imports every module next to a Process when it looks for ProcessModels."""
