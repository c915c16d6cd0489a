"""spikeport: spiking transformers from PyTorch training to Intel Lava / Loihi 2.

The Python API mirrors the CLI (``spikeport.api``)::

    import spikeport

    trained = spikeport.train(preset="digits-tiny", model={"attention": "lrf_dyn"}, out="runs/dyn")
    conv = spikeport.convert(trained.checkpoint, "build/dyn")
    lava = spikeport.run(conv.artifact_path, backend="lava", compare="reference", samples=24)
    assert lava.identical                        # bit-exact with the reference simulator
    summary = spikeport.report([lava], html="report.html")

Everything is imported lazily, so that a deploy-only install (numpy + h5py + lava) never imports torch and
``import spikeport`` stays cheap: ``spikeport.runtime`` and ``spikeport.ir`` stay torch-free.

``train``, ``convert`` and ``report`` are also the names of the pipeline's packages (``spikeport/train/``,
...). Each of those packages is made callable here: ``spikeport.train`` is the package *and*
``spikeport.train(...)`` calls ``spikeport.api.train``, whichever was imported first. Type checkers see
the packages: typed code imports the functions from ``spikeport.api``.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.1.0"

_API = ("train", "convert", "run", "report", "RunReport", "train_config")
_STAGES = ("train", "convert", "report")  # a package and an API function of the same name


class _Stage(types.ModuleType):
    """A pipeline package that is also its API function (``spikeport.api.<name>``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module("spikeport.api"), self.__name__.rpartition(".")[2])(*args, **kwargs)


class _Spikeport(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        # the import system sets spikeport.<stage> to the subpackage once it is imported: make it callable
        if name in _STAGES and type(value) is types.ModuleType:
            value.__class__ = _Stage
        super().__setattr__(name, value)


def __getattr__(name: str) -> Any:
    if name in _STAGES:
        return importlib.import_module(f"spikeport.{name}")  # the callable package (see _Spikeport)
    if name in _API:
        return getattr(importlib.import_module("spikeport.api"), name)
    raise AttributeError(f"module 'spikeport' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})


sys.modules[__name__].__class__ = _Spikeport
