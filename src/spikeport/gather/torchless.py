"""What the gathering stage leaves out where torch is not installed (a deploy install: numpy, h5py and Lava).

Two figures need the torch model: the GPU baseline (its estimate counts the float model's ops on torch's meta device,
its measurement runs the model on CUDA) and the analytic memory (its activations are traced from a torch run). Where
torch is missing each is read from the report cache (``gather.cache``), or for the GPU from ``--gpu-bench``, and else
left out of the report with one of the notes below, which say what is missing and how to get it: no figure is made
up. torch comes with the ``train`` extra of pyproject.toml."""

from __future__ import annotations

import importlib.util

INSTALL = "pip install 'spikeport[train]'"
NO_GPU = (
    "GPU baseline not estimated: torch is not installed here (the estimate counts the float model's ops in torch), "
    f"and neither the report cache nor --gpu-bench holds one for this network; {INSTALL} adds torch"
)
NO_MEMORY = (
    "analytic memory not worked out: torch is not installed here (the activations are traced from a torch run of "
    f"the model), and the report cache holds none for this model; {INSTALL} adds torch"
)
NO_MEASURED_MEMORY = f"torch float model's peak memory not measured (--memory): torch is not installed here; {INSTALL}"
LEFT_OUT = (NO_GPU, NO_MEMORY, NO_MEASURED_MEMORY)  # the report's caveats name each one it gave (gather.stage)


def torch_missing() -> bool:
    """Whether torch cannot be found here (looked up, not imported: a report read from the cache loads no torch)."""
    return importlib.util.find_spec("torch") is None
