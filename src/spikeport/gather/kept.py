"""A value read back from the report cache, held to the types its record declares (``gather.cache``).

A cache entry is a file anyone who can write the folder may have edited: its digest catches a changed figure, but
whoever recomputes the digest has written a new entry, which must still be of the record it claims to be. A
dataclass is rebuilt from a JSON object field by field against its annotations: ``int`` is a whole number (not a
bool, not ``4242.4242``), ``float`` a finite number, both at least 0 where ``counts`` says the record holds only
counts and measures (cores, bytes, seconds); ``str``, ``bool``, ``None``, unions, ``list[X]``, ``tuple[X, ...]``,
``dict[str, X]`` and nested dataclasses as declared; no field the record does not have, none missing that has no
default. Anything else is a CacheEntryError naming the field, which the cache turns into a miss.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from spikeport.errors import CacheEntryError

T = TypeVar("T")


def typed(cls: type[T], data: Any, where: str = "value", counts: bool = True) -> T:
    """``cls`` (a dataclass) built from ``data`` (a JSON object), every field checked against its annotation;
    ``counts``: its numbers are counts and measures, never negative."""
    if not isinstance(data, dict):
        raise CacheEntryError(f"{where}: expected a {cls.__name__} object, found {_kind(data)}")
    declared = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(declared))
    if unknown:
        raise CacheEntryError(f"{where}.{unknown[0]}: {cls.__name__} has no such field")
    hints = typing.get_type_hints(cls)
    built = {}
    for name, f in declared.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise CacheEntryError(f"{where}.{name}: missing")
            continue
        built[name] = _checked(data[name], hints[name], f"{where}.{name}", counts)
    return cls(**built)


def _checked(value: Any, tp: Any, where: str, counts: bool) -> Any:
    """``value`` as annotation ``tp`` requires (converted where ``tp`` is a dataclass), else CacheEntryError."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        for alternative in args:
            try:
                return _checked(value, alternative, where, counts)
            except CacheEntryError:
                continue
        raise CacheEntryError(f"{where}: expected {_name(tp)}, found {_kind(value)}")
    if tp is type(None):
        if value is None:
            return None
    elif tp is bool or tp is str:
        if type(value) is tp:
            return value
    elif tp is int or tp is float:
        if isinstance(value, int if tp is int else (int, float)) and not isinstance(value, bool):
            return _number(value, where, counts)
    elif origin in (list, tuple) or tp in (list, tuple):
        if isinstance(value, list):
            item = args[0] if args else Any
            out = [_checked(v, item, f"{where}[{i}]", counts) for i, v in enumerate(value)]
            return tuple(out) if (origin or tp) is tuple else out
    elif origin in (dict, Mapping) or tp in (dict, Mapping):
        if isinstance(value, dict):
            item = args[1] if len(args) == 2 else Any
            return {k: _checked(v, item, f"{where}.{k}", counts) for k, v in value.items()}
    elif dataclasses.is_dataclass(tp):
        return typed(tp, value, where, counts)  # type: ignore[arg-type]
    else:
        raise CacheEntryError(f"{where}: a field of type {_name(tp)} is not kept in the cache")
    raise CacheEntryError(f"{where}: expected {_name(tp)}, found {_kind(value)}")


def _number(value: float, where: str, counts: bool) -> float:
    if not math.isfinite(value):
        raise CacheEntryError(f"{where}: {value} is not a finite number")
    if counts and value < 0:
        raise CacheEntryError(f"{where}: {value} is negative, expected a count or a measure")
    return value


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _kind(value: Any) -> str:
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 40 else shown[:37] + '...'}"
