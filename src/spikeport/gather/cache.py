"""What the gathering stage worked out once, kept for the next report: check-hw's footprint of an artifact, ONNX
Runtime's timing of its network on this machine, a GPU profile's estimate and the analytic memory of a model config.

Each entry is a JSON file in the cache folder (``$SPIKEPORT_CACHE``, else ``$XDG_CACHE_HOME/spikeport``, else
``~/.cache/spikeport``; ``report/`` below it), named by the SHA-256 of its key and holding the key beside the value,
written atomically (``spikeport.atomic``). A key names everything the value depends on: the artifact's root
digest (or the file's own SHA-256 where it has none), the profile's entries, the model config, and the code that
computed it (``code_digest``: spikeport's version and its source files' sizes and times, so an edit of the code
misses the cache); a timing's key also names the machine and the ONNX Runtime version.

The folder is untrusted input: anyone who can write it may have put anything there. An entry is used only when
every check passes (``read_entry``, then the caller's ``read``): a regular file opened without following a
symbolic link (a FIFO would block the read, a link may lead out of the folder or to /dev/zero), at most
``MAX_ENTRY_BYTES`` (from its size, before it is read), JSON without NaN or infinity, the key asked for, the
SHA-256 of its key and value (``entry_digest``: an edited figure is caught), then the value of the record it claims
to be (``gather.kept``: types and bounds; a re-sealed edit is held to them). Any failure is a miss, never an error
and never a figure: the value is worked out again and replaces the entry atomically, and one note names the file
and why. Readers see a whole entry or none (writes are renames), so reports that share a folder stay correct; a
folder that cannot be written is said once and the report goes on without it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import platform
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from spikeport._version import __version__
from spikeport.atomic import json_safe, write_json
from spikeport.errors import CacheEntryError, SpikeportError
from spikeport.hw_profiles import HwProfile

ENV = "SPIKEPORT_CACHE"
# The largest entry read: a memory breakdown of Spikformer-8-768 with every attention variant is ~200 KB; a larger
# file is no entry of ours (a 3 GB sparse file was read whole)
MAX_ENTRY_BYTES = 16 << 20
T = TypeVar("T")


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
    kind (``chip``, ``cpu``, ``gpu``, ``memory``): what a test reads to see that a second report computed nothing;
    ``rejected`` the entries found and refused (file name -> why), each also said once through ``say``."""

    def __init__(self, folder: str | os.PathLike[str] | None, say: Callable[[str], None] = lambda msg: None):
        self.folder = None if folder is None else Path(folder).expanduser()
        self.say = say
        self.hits: dict[str, int] = {}
        self.misses: dict[str, int] = {}
        self.rejected: dict[str, str] = {}
        self._unwritable = False
        self._read: dict[Path, Any] = {}  # the values read and checked, or written, by this process

    def _path(self, kind: str, key: Mapping[str, Any]) -> tuple[Path, dict[str, Any]]:
        assert self.folder is not None
        full = {"kind": kind, "code": code_digest(), **key}
        name = hashlib.sha256(json.dumps(full, sort_keys=True, default=str).encode()).hexdigest()[:40]
        return self.folder / f"{kind}-{name}.json", json.loads(json.dumps(full, sort_keys=True, default=str))

    def get(self, kind: str, key: Mapping[str, Any], read: Callable[[Any], T] = copy.deepcopy) -> T | None:
        """The value kept under ``key`` as ``read`` makes it (a record from its JSON; it raises CacheEntryError,
        TypeError, ValueError or KeyError on a value that is not one), or None: no cache, no entry, or an entry
        that fails a check (a miss, said once naming the file)."""
        if self.folder is None:
            return None
        path, full = self._path(kind, key)
        result: T | None = None
        try:
            value = self._read[path] if path in self._read else read_entry(path, full)
            if value is not None:
                result = read(copy.deepcopy(value))  # the record it claims to be
        except (CacheEntryError, TypeError, ValueError, KeyError) as err:
            self._reject(path, str(err))
            value = None
        if value is None:
            self.misses[kind] = self.misses.get(kind, 0) + 1
            return None
        self.hits[kind] = self.hits.get(kind, 0) + 1
        self._read[path] = value
        return result

    def _reject(self, path: Path, why: str) -> None:
        if path.name not in self.rejected:
            self.rejected[path.name] = why
            self.say(f"report cache: {path}: {why}; not used, worked out again")

    def put(self, kind: str, key: Mapping[str, Any], value: Any) -> None:
        """Keep ``value`` (JSON) under ``key``, atomically; a folder that cannot be written is said once."""
        if self.folder is None or self._unwritable:
            return
        path, full = self._path(kind, key)
        value = json.loads(json.dumps(json_safe(value), default=str))  # as read back: NaN as null
        self._read[path] = value
        try:
            write_json(path, {"key": full, "value": value, "digest": entry_digest(full, value)})
        except (SpikeportError, OSError) as err:
            self._unwritable = True
            self.say(f"report cache {self.folder} not written ({err}): the next report works it out again")


def entry_digest(key: Any, value: Any) -> str:
    """The SHA-256 of an entry's key (which names the code that computed it) and value, as canonical JSON."""
    text = json.dumps({"key": key, "value": value}, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def read_entry(path: Path, key: dict[str, Any]) -> Any | None:
    """The value of the entry at ``path``, or None where there is none; CacheEntryError where the file is not an
    intact entry of ``key`` (see the module doc)."""
    data = _read_bounded(path)
    if data is None:
        return None
    try:
        entry = json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:  # RecursionError: nesting too deep for the parser
        raise CacheEntryError(f"not JSON ({type(err).__name__}: {str(err)[:80]})") from None
    if not isinstance(entry, dict) or set(entry) != {"key", "value", "digest"}:
        raise CacheEntryError("not a cache entry (expected an object of key, value and digest)")
    if entry["key"] != key:
        raise CacheEntryError("the entry of another key")
    try:
        digest = entry_digest(entry["key"], entry["value"])
    except (ValueError, RecursionError) as err:
        raise CacheEntryError(f"a value that is no JSON of spikeport's ({err})") from None
    if entry["digest"] != digest:
        raise CacheEntryError("its digest does not match its key and value (edited or damaged)")
    return entry["value"]


def _read_bounded(path: Path) -> bytes | None:
    """The bytes of ``path``, a regular file of at most MAX_ENTRY_BYTES; None where there is no such entry. Opened
    without following a link and without blocking (a FIFO), checked by what was opened (no race with a rename)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as err:
        if os.path.islink(path):
            raise CacheEntryError(f"a symbolic link (to {os.readlink(path)}), not a regular file") from None
        raise CacheEntryError(f"cannot be read ({err.strerror or err})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO, socket or device"
            raise CacheEntryError(f"{what}, not a regular file")
        if st.st_size > MAX_ENTRY_BYTES:
            raise CacheEntryError(f"holds {st.st_size} bytes, more than an entry ({MAX_ENTRY_BYTES})")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_ENTRY_BYTES + 1)
        if len(data) > MAX_ENTRY_BYTES:  # grew since fstat
            raise CacheEntryError(f"holds more than {MAX_ENTRY_BYTES} bytes")
        return data
    except OSError as err:
        raise CacheEntryError(f"cannot be read ({err.strerror or err})") from None
    finally:
        os.close(fd)


def _no_constant(name: str) -> None:
    raise CacheEntryError(f"holds {name}, which JSON has not and spikeport never writes")
