"""What the gathering stage worked out once, kept for the next report: check-hw's footprint of an artifact, ONNX
Runtime's timing of its network on this machine, a GPU profile's estimate and the analytic memory of a model config.

Each entry is a JSON file in the cache folder (``$SPIKEPORT_CACHE``, else ``$XDG_CACHE_HOME/spikeport``, else
``~/.cache/spikeport``; ``report/`` below it), named by the SHA-256 of its key and holding the key beside the value,
written atomically (``spikeport.atomic``). A key names everything the value depends on: the artifact's root
digest (or the file's own SHA-256 where it has none), the profile's entries, the model config, and the code that
computed it (``code_digest``: spikeport's version and its source files' sizes and times, so an edit of the code
misses the cache); a timing's key also names the machine and the ONNX Runtime version. An entry that cannot be
read, or whose key differs, is a miss (and is replaced); a cache folder that cannot be written is said once and
the report goes on without it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import platform
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from spikeport._version import __version__
from spikeport.atomic import write_json
from spikeport.errors import SpikeportError
from spikeport.hw_profiles import HwProfile

ENV = "SPIKEPORT_CACHE"


def default_folder() -> Path:
    """``$SPIKEPORT_CACHE``, else ``$XDG_CACHE_HOME/spikeport``, else ``~/.cache/spikeport``; ``report/`` below."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser() / "report"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "spikeport" / "report"


@functools.cache
def code_digest() -> str:
    """spikeport's version and the name, size and modification time of each of its source files and profiles (a
    stat each, not a read): a cached figure is the code's of now, an edited file misses the cache."""
    root = Path(__file__).resolve().parents[1]
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        files += [os.path.join(folder, name) for name in names if name.endswith((".py", ".yaml"))]
    h = hashlib.sha256(__version__.encode())
    for path in sorted(files):
        st = os.stat(path)
        h.update(f"{os.path.relpath(path, root)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@functools.cache
def machine() -> dict[str, str]:
    """This machine, for a timing's key: its name, CPU model and Python (a timing of another machine is not ours)."""
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"node": platform.node(), "cpu": cpu, "cores": str(os.cpu_count()), "python": platform.python_version()}


def profile_digest(profile: HwProfile) -> str:
    """The SHA-256 of a profile's entries (a cached figure of another profile, or of an edited one, is not ours)."""
    return hashlib.sha256(json.dumps(profile.to_dict(), sort_keys=True, default=str).encode()).hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (an artifact without a root digest, an ONNX file)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class ReportCache:
    """The cache folder (None: no cache, every figure worked out again). ``hits`` / ``misses`` count lookups per
    kind (``chip``, ``cpu``, ``gpu``, ``memory``): what a test reads to see that a second report computed nothing."""

    def __init__(self, folder: str | os.PathLike[str] | None, say: Callable[[str], None] = lambda msg: None):
        self.folder = None if folder is None else Path(folder).expanduser()
        self.say = say
        self.hits: dict[str, int] = {}
        self.misses: dict[str, int] = {}
        self._unwritable = False
        self._read: dict[Path, Any] = {}  # the entries read or written by this process (a run's config twice)

    def _path(self, kind: str, key: Mapping[str, Any]) -> tuple[Path, dict[str, Any]]:
        assert self.folder is not None
        full = {"kind": kind, "code": code_digest(), **key}
        name = hashlib.sha256(json.dumps(full, sort_keys=True, default=str).encode()).hexdigest()[:40]
        return self.folder / f"{kind}-{name}.json", json.loads(json.dumps(full, sort_keys=True, default=str))

    def get(self, kind: str, key: Mapping[str, Any]) -> Any | None:
        """The value kept under ``key``, or None (no cache, not there, unreadable, another key)."""
        if self.folder is None:
            return None
        path, full = self._path(kind, key)
        try:
            entry = self._read[path] if path in self._read else json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):
            entry = None
        if not isinstance(entry, dict) or entry.get("key") != full or "value" not in entry:
            self.misses[kind] = self.misses.get(kind, 0) + 1
            return None
        self.hits[kind] = self.hits.get(kind, 0) + 1
        self._read[path] = entry
        return copy.deepcopy(entry["value"])

    def put(self, kind: str, key: Mapping[str, Any], value: Any) -> None:
        """Keep ``value`` (JSON) under ``key``, atomically; a folder that cannot be written is said once."""
        if self.folder is None or self._unwritable:
            return
        path, full = self._path(kind, key)
        entry = json.loads(json.dumps({"key": full, "value": value}, default=str))
        self._read[path] = entry
        try:
            write_json(path, entry)
        except (SpikeportError, OSError) as err:
            self._unwritable = True
            self.say(f"report cache {self.folder} not written ({err}): the next report works it out again")
