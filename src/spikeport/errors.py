"""Typed exceptions. Each names the offending file / layer / field and what was expected.

The CLI prints ``str(error)`` on one line and exits with status 2, without a traceback; the Python API
raises them as they are. Subclasses stay small: add one when a caller needs to tell a case apart.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable


class SpikeportError(Exception):
    """Base class for every error spikeport raises on purpose (bad input, unsupported model, limits)."""


class ConfigError(SpikeportError, ValueError):
    """An unknown preset, attention, dataset, flag value or config key."""


def unknown_choice(what: str, value: object, choices: Iterable[object]) -> ConfigError:
    """ "unknown backend 'loihi'; valid choices: ...; did you mean 'loihi2'?" (the closest choice, where one is close,
    as the command line suggests a mistyped command or flag)."""
    names = [str(c) for c in choices]
    close = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6) if isinstance(value, str) else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown {what} {value!r}; valid choices: {', '.join(names)}{hint}")


class OutputPathError(SpikeportError):
    """An output path that cannot be written: a folder where a file goes, a file in the path, a read-only folder.
    Checked before the work starts; a write that still fails at the end says where the results were saved."""


class WriteError(OutputPathError):
    """A file that could not be written although its path passed the checks: a full disk (ENOSPC), a file-size limit
    (EFBIG), a read-only file system, an immutable target. Nothing was written there: the old file, if any, is as it
    was (``spikeport.atomic``). ``reason`` is the system's word for it."""

    def __init__(self, path: str | os.PathLike[str], reason: str, outcome: str = "nothing was written there") -> None:
        self.path, self.reason = path, reason
        super().__init__(f"{path}: could not be written ({reason}); {outcome}")


class DataError(SpikeportError):
    """A missing, corrupt or empty dataset file or folder."""


class CheckpointError(SpikeportError):
    """A checkpoint that is truncated, of another architecture, or not a spikeport/official one."""


class ConversionError(SpikeportError):
    """The torch model cannot be converted to the IR."""


class UnsupportedModuleError(ConversionError):
    def __init__(self, path: str, type_name: str, alternative: str) -> None:
        self.path, self.type_name, self.alternative = path, type_name, alternative
        super().__init__(
            f"cannot convert module '{path}' of type {type_name}: no handler is registered for it "
            f"(nearest supported: {alternative}; see `spikeport convert --list-supported`)"
        )


class ArtifactError(SpikeportError):
    """A deployment artifact (.spk.h5) or netx file that fails validation."""

    def __init__(self, path: str | os.PathLike[str], field: str, problem: str) -> None:
        self.path, self.field, self.problem = path, field, problem
        # FILE (the field "<file>": the file itself, not a member of it) reads "nope.spk.h5: does not exist"
        super().__init__(f"{path}: {problem}" if field == FILE else f"{path}: field '{field}': {problem}")


FILE = "<file>"  # ArtifactError's field for the file itself (missing, unreadable, not HDF5)


class HardwareLimitError(SpikeportError):
    """A layer breaks a limit of the target hardware profile."""

    def __init__(self, layer: str, rule: str, value: object, limit: object, profile: str) -> None:
        self.layer, self.rule, self.value, self.limit, self.profile = layer, rule, value, limit, profile
        super().__init__(f"layer '{layer}' breaks {profile} rule '{rule}': {value} > {limit}")


class BackendUnavailableError(SpikeportError):
    """An executor whose software or hardware is missing (lava, lava-loihi, CUDA)."""


class RankError(SpikeportError, RuntimeError):
    """A rank of a sharded run (torchrun) failed or did not answer; raised on every rank with the same message,
    which names the ranks and their causes (the CLI says it on rank 0 only). No report was written."""


class LavaRunError(SpikeportError, RuntimeError):
    """A Lava ProcessModel failed (or a Lava child died) during a run; the network was torn down."""


class LavaStallError(LavaRunError):
    """No Lava child used any CPU for ``stall_s`` while a run waited for them: the network is deadlocked
    (seen once under heavy load in Lava 0.10's channels); the network was torn down."""


class DemoParityError(SpikeportError):
    """Lava fixed_pt and the reference simulator disagree: the numerical contract is broken."""


class BenchmarkError(SpikeportError, RuntimeError):
    """A benchmark harness (NeuroBench) failed on a model: the metric that failed and its message."""


class ProfileError(SpikeportError):
    """A hw_profiles YAML file with a missing unit, unknown key or bad value."""


class ReportError(SpikeportError, ValueError):
    """A run report (schema spikeport.run) that is missing, not JSON, or fails validation when it is read;
    ``field`` is the offending field (None when the file itself cannot be read)."""

    def __init__(self, where: str | os.PathLike[str], field: str | None, problem: str) -> None:
        self.where, self.field, self.problem = where, field, problem
        super().__init__(f"{where}: field '{field}': {problem}" if field else f"{where}: {problem}")


class CacheEntryError(SpikeportError, ValueError):
    """A report cache entry that fails a check (file type, size, JSON, digest, key, the value's types and bounds).
    Never reaches the user: the entry is a miss, worked out again and replaced, with a note naming the file."""
