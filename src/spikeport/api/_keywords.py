"""A keyword's old name, kept for a while (``eval_samples``, ``parts``, ``partition``)."""

from __future__ import annotations

import warnings
from typing import TypeVar

from spikeport.errors import ConfigError

X = TypeVar("X")


def _renamed(old: str, old_value: X | None, new: str, new_value: X | None) -> X | None:
    """A keyword's value under its new name or its old one (deprecated: one name per idea across the flags, the API
    and the files); both given is an error."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ConfigError(f"{old} and {new}: give {new} only ({old} is its old name)")
    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=3)
    return old_value
