"""``atomic_write``: the one way spikeport writes a file, so that a reader never sees it half-written.

The caller writes a temporary file in the target's folder (a unique hidden name, ending in the target's
suffix so that tools which infer the format from the name, such as matplotlib and Pillow, still do);
on success it is flushed to disk, renamed onto the target with ``os.replace`` (atomic on POSIX when both
names are on one file system, which the same folder guarantees) and the folder is flushed so that the
rename survives a crash. On any error, KeyboardInterrupt included, the temporary file is removed and the
old target, if any, is left as it was.

The file gets the mode an ordinary ``open(path, "w")`` would give (0o666 minus the umask: 0644 under the
usual umask 022): the temporary file is created with ``os.open(..., 0o666)``, so the kernel applies the
umask, without reading the umask (``os.umask`` would change it process-wide for a moment).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_TRIES = 100  # unique-name attempts; a collision of 64 random bits in one folder does not happen


def _create_temp(path: Path) -> Path:
    for _ in range(_TRIES):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp{path.suffix}")
        try:
            os.close(os.open(tmp, _CREATE, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name next to {path} after {_TRIES} tries")


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield the path of an empty temporary file next to ``path``; write it by name (``open``, h5py,
    ``torch.save``, ``fig.savefig``, ...). When the block ends without an exception the file replaces
    ``path`` (see the module doc); the parent folder is created if missing.

    ``with atomic_write(out / "report.json") as tmp: tmp.write_text(text)``
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_temp(path)
    try:
        yield tmp
        _fsync(tmp, os.O_RDONLY)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    try:
        # The rename is durable once the folder's entry is on disk; folders cannot be opened (Windows) or
        # fsync'ed (some network file systems) everywhere, and the file itself is already safe then.
        _fsync(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        pass
