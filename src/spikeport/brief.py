"""Short reprs for the records the API returns: ``print(api.convert(...))`` printed the whole graph with its weights,
a run report every per-step count of every layer.

A record sets ``__repr__ = brief_repr`` (a dataclass keeps a ``__repr__`` its class defines) and may name the fields
(or properties) its repr shows in ``BRIEF``; without it, every field that is set. Each value is shown in a few
characters: numbers and short strings as they are, a path as its text, a long list, dict or array by its size, a
nested record or a model by its type (and a graph by its node count). ``to_dict()`` / ``to_json()`` keep
everything.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Mapping
from typing import Any

MAX_STR = 100  # a string longer than this is cut (a verdict, a digest are shorter)
MAX_ITEMS = 4  # a list or dict of at most this many plain values is shown whole


def brief_repr(record: Any) -> str:
    """``Name(field=value, ...)`` with each value in brief (see the module doc)."""
    names = getattr(type(record), "BRIEF", None)
    if names is None:
        names = [f.name for f in dataclasses.fields(record) if f.repr] if dataclasses.is_dataclass(record) else []
    shown = []
    for name in names:
        value = getattr(record, name, None)
        if value is None or (isinstance(value, (list, tuple, dict, set, str)) and not value):
            continue
        shown.append(f"{name}={brief(value)}")
    return f"{type(record).__name__}({', '.join(shown)})"


def brief(value: Any) -> str:
    """One value in a few characters."""
    if isinstance(value, enum.Enum):
        return repr(value.value)
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str):
        return repr(value) if len(value) <= MAX_STR else repr(value[: MAX_STR - 3] + "...")
    if isinstance(value, os.PathLike):
        return brief(os.fspath(value))
    if isinstance(value, Mapping):
        if len(value) <= MAX_ITEMS and all(_plain(v) for v in value.values()):
            return "{" + ", ".join(f"{k!r}: {brief(v)}" for k, v in value.items()) + "}"
        return f"<{len(value)} {'entry' if len(value) == 1 else 'entries'}>"
    if isinstance(value, (list, tuple, set)):
        if len(value) <= MAX_ITEMS and all(_plain(v) for v in value):
            items = ", ".join(brief(v) for v in value)
            return f"({items})" if isinstance(value, tuple) else f"[{items}]"
        return f"<{len(value)} {'item' if len(value) == 1 else 'items'}>"
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):  # a numpy array or a torch tensor
        return f"<array {tuple(shape)} {value.dtype}>"
    nodes = getattr(value, "nodes", None)
    if isinstance(nodes, Mapping):  # an IR graph
        return f"<{type(value).__name__}: {len(nodes)} nodes>"
    return f"<{type(value).__name__}>"


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str, enum.Enum, os.PathLike))
