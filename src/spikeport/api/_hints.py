"""The names a public function's annotations use that would import torch, numpy or a heavy spikeport module.

A module of ``spikeport.api`` imports them under ``TYPE_CHECKING`` (a type checker reads the imports) and binds
them otherwise to a :class:`_LazyModule` or a :func:`_hint`: ``typing.get_type_hints(api.convert)`` evaluates the
annotations' names in the function's module, and each resolves, on that evaluation only, to what the import names;
importing spikeport.api still imports neither torch nor numpy.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, ForwardRef


class _LazyModule:
    """A module imported on its first attribute access; a submodule's name gives another one."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and inspect probe these: no import for them
            raise AttributeError(attr)
        value = getattr(importlib.import_module(self._name), attr, None)
        if value is not None and not isinstance(value, ModuleType):
            return value
        importlib.import_module(f"{self._name}.{attr}")  # a submodule (imported or not), or ModuleNotFoundError
        return _LazyModule(f"{self._name}.{attr}")

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on use>"


_spikeport = _LazyModule("spikeport")


def _hint(path: str) -> ForwardRef:
    """A name of ``spikeport.<path>`` that typing.get_type_hints resolves (importing its module then), and that
    ``|`` joins as the class would (Python 3.11's ForwardRef). It resolves in this module, where ``_spikeport`` is,
    whichever module's annotations name it."""
    return ForwardRef(f"_spikeport.{path}", module=__name__)
