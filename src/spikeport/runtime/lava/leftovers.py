"""The Lava run's temporary folder and what a run holds outside it (shared-memory segments, multiprocessing's
folders), recorded so that the next run removes what a killed one left: beside the Lava session that creates them
(``session.py``). A run folder is ``spikeport-<kind>-<host>-<pid>-*`` in the temporary folder."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from spikeport.atomic import FILE_FULL, HOST_TAG, dead_writer, limit_hint, os_reason, write_text
from spikeport.errors import LavaRunError, WriteError


@contextlib.contextmanager
def run_temp_dir(kind: str) -> Iterator[str]:
    """A temporary folder for one run's recordings (``spikeport-<kind>-<host>-<pid>-*`` in the temporary folder),
    removed when the block ends, also on errors, Ctrl-C and SIGTERM. A SIGKILL leaves it: the next run of any
    kind removes the folders of processes on this host that are no longer alive."""
    remove_dead_runs()
    with tempfile.TemporaryDirectory(prefix=run_dir_prefix(kind)) as tmp:
        try:
            yield tmp
        except OSError as err:
            if err.errno not in FILE_FULL or (err.filename is not None and not str(err.filename).startswith(tmp)):
                raise
            # numpy's memmaps raise without a file name: the run's own files are the ones that grew
            raise WriteError(
                f"{tmp} (the run's temporary recordings)", f"{os_reason(err)}{limit_hint(err.errno)}", "the run stopped"
            ) from None


def run_dir_prefix(kind: str) -> str:
    """The name of a run folder of this process up to its random part: ``spikeport-<kind>-<host>-<pid>-``
    (``kind`` without dashes)."""
    return f"spikeport-{kind}-{HOST_TAG}-{os.getpid()}-"


# what a run records of resources outside its folder (LavaSession: shared memory, multiprocessing's folders), so
# that the run that finds the folder of a killed process removes them too
LEFTOVERS_FILE = "leftovers.json"
SHM_DIR = "/dev/shm"
_SHM_NAME = re.compile(r"psm_[0-9a-f]{8}")  # multiprocessing.shared_memory's names
_PYMP_NAME = re.compile(r"pymp-[a-z0-9_]{8}")  # multiprocessing.util.get_temp_dir's folders


def note_run_leftovers(folder: str | os.PathLike[str], segments: list[str], folders: list[str]) -> None:
    """Record in a run's temporary folder (``run_temp_dir``) the shared-memory segments and multiprocessing folders
    it holds outside it: if the process is killed (SIGKILL: no clean-up runs), the next run removes them with the
    folder. Written over whole on every call (a small file, atomically)."""
    write_text(Path(folder) / LEFTOVERS_FILE, json.dumps({"shm": segments, "folders": folders}))


def remove_dead_runs() -> list[str]:
    """Remove the run folders (``spikeport-<kind>-<host>-<pid>-*`` in the temporary folder) of processes on this host
    that are no longer alive, with the shared-memory segments and ``pymp-*`` folders they recorded
    (``note_run_leftovers``). Only names of those two kinds are removed, and only what this user owns: a folder
    whose record names anything else is removed alone. Returns what was removed."""
    base = Path(tempfile.gettempdir())
    removed: list[str] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            other = entry.name.split("-")[1] if entry.name.startswith("spikeport-") else ""
            if not (other and dead_writer(entry.name, f"spikeport-{other}-{HOST_TAG}-") and entry.is_dir()):
                continue
            if entry.stat(follow_symlinks=False).st_uid == os.getuid():
                removed += _remove_recorded(base, Path(entry.path) / LEFTOVERS_FILE)
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def _remove_recorded(base: Path, record: Path) -> list[str]:
    try:
        if record.stat().st_size > 1 << 20:
            return []
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    removed = []
    for name in data.get("shm", []) if isinstance(data.get("shm"), list) else []:
        segment = os.path.join(SHM_DIR, str(name))
        if _SHM_NAME.fullmatch(str(name)) and _owned(segment):
            with contextlib.suppress(OSError):
                os.unlink(segment)
                removed.append(segment)
    for folder in data.get("folders", []) if isinstance(data.get("folders"), list) else []:
        path = Path(str(folder))
        if path.parent == base and _PYMP_NAME.fullmatch(path.name) and _owned(str(path)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path))
    return removed


def _owned(path: str) -> bool:
    try:
        return os.lstat(path).st_uid == os.getuid()
    except OSError:
        return False


# multiprocessing's managers (Lava's shared-memory manager among them) listen on an AF_UNIX socket at
# <temp folder>/pymp-XXXXXXXX/listener-XXXXXXXX, a path the kernel caps (sun_path, its NUL included)
SOCKET_PATH_MAX = 103 if sys.platform == "darwin" else 107
SOCKET_NAME_BYTES = len("/pymp-12345678/listener-12345678")


def check_socket_folder() -> None:
    """Refuse, naming the folder, a temporary folder too long for the manager's socket: Lava's start would fail in a
    child process with "AF_UNIX path too long", seen here as an EOFError and a half-started network."""
    folder = tempfile.gettempdir()
    room = SOCKET_PATH_MAX - SOCKET_NAME_BYTES
    if len(os.fsencode(folder)) > room:
        raise LavaRunError(
            f"the temporary folder {folder} is {len(os.fsencode(folder))} bytes long; Lava's shared-memory manager "
            f"listens on a socket inside it, which allows a folder of at most {room} bytes: set TMPDIR to a shorter "
            "folder (e.g. TMPDIR=/tmp)"
        )
