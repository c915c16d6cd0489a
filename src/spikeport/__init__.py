"""spikeport: spiking transformers from PyTorch training to Intel Lava / Loihi 2.

The Python API mirrors the CLI, one function per command, in ``spikeport.api``::

    from spikeport import api

    trained = api.train(preset="digits-tiny", model={"attention": "lrf_dyn"}, out="runs/dyn")
    conv = api.convert(trained.checkpoint, "build/dyn")
    lava = api.run(conv.artifact_path, backend="lava", compare="reference", samples=24)
    assert lava.identical                        # bit-exact with the reference simulator
    summary = api.report([lava], html="report.html")

``spikeport.train``, ``spikeport.convert`` and ``spikeport.report`` are the packages of those stages
(``spikeport.train.presets``, ...), so their functions are called through ``spikeport.api``. The names that
are no package are also here: ``spikeport.run``, ``spikeport.RunReport``, ``spikeport.train_config``.

Everything is imported lazily, so that a deploy-only install (numpy + h5py + lava) never imports torch and
``import spikeport`` stays cheap: ``spikeport.runtime`` and ``spikeport.ir`` stay torch-free.
"""

from __future__ import annotations

import importlib
from typing import Any

from spikeport._version import __version__ as __version__

_API = ("run", "RunReport", "train_config")  # spikeport.api's names that no subpackage shadows
_STAGES = ("train", "convert", "report")  # packages, and functions of the same name in spikeport.api


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module("spikeport.api"), name)
    if name in _STAGES:  # the package is not imported yet
        raise AttributeError(
            f"spikeport.{name} is a package (import spikeport.{name}); the function is spikeport.api.{name}"
        )
    raise AttributeError(f"module 'spikeport' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
