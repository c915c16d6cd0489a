"""``atomic_write``: the one way spikeport writes a file, so that a reader never sees it half-written.

The caller writes a temporary file in the target's folder (a unique hidden name, ending in the target's
suffix so that tools which infer the format from the name, such as matplotlib and Pillow, still do);
on success it is flushed to disk, renamed onto the target with ``os.replace`` (atomic on POSIX when both
names are on one file system, which the same folder guarantees) and the folder is flushed so that the
rename survives a crash. On any error, KeyboardInterrupt included, the temporary file is removed and the
old target, if any, is left as it was; a failed write (a full disk, a file-size limit, a read-only file system, an
immutable target) is one ``WriteError`` naming the target. HDF5 files are built in memory first (``hdf5_image``):
the HDF5 library crashes the process when the file it writes cannot grow.

The file gets the mode an ordinary ``open(path, "w")`` would give (0o666 minus the umask: 0644 under the
usual umask 022): the temporary file is created with ``os.open(..., 0o666)``, so the kernel applies the
umask, without reading the umask (``os.umask`` would change it process-wide for a moment).

A process killed with SIGKILL cannot remove its temporary file. Its name carries the writer's host and pid
(``.<name>.<host>-<pid>.<random>.tmp<suffix>``), so the next write to the same target removes the temporary
files of writers on this host that are no longer alive.

Output paths are checked before the work that fills them (``check_output_file``, ``check_output_dir``), and
``write_or_fallback`` saves a finished result in the temporary folder, and says so, when its path fails anyway.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import math
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import stat
import struct
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from spikeport.errors import OutputPathError, WriteError

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_TRIES = 100  # unique-name attempts; a collision of 64 random bits in one folder does not happen
# this host in temporary names: a pid says whether a writer is alive only on its own host (shared folders)
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _dead_writer(name: str, prefix: str) -> bool:
    """``name`` is ``<prefix><pid><sep>...`` and that pid is no longer alive."""
    match = re.match(r"([0-9]{1,9})[.-]", name[len(prefix) :]) if name.startswith(prefix) else None
    return match is not None and not pid_alive(int(match.group(1)))


def _remove_stale_temps(path: Path) -> None:
    """Temporary files of ``path`` left by writers on this host that were killed (SIGKILL, power loss)."""
    prefix = f".{path.name}.{_HOST}-"
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            if entry.name.endswith(f".tmp{path.suffix}") and _dead_writer(entry.name, prefix):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _create_temp(path: Path, created: list[Path]) -> Path:
    """A new empty temporary file next to ``path``. Its name is added to ``created`` *before* the file exists, so a
    signal at any point (after ``os.open`` returned, before the caller saw the name) leaves the caller a name to
    remove; a name that another writer's file already holds is taken out again."""
    _remove_stale_temps(path)
    for _ in range(_TRIES):
        tmp = path.with_name(f".{path.name}.{_HOST}-{os.getpid()}.{secrets.token_hex(8)}.tmp{path.suffix}")
        created.append(tmp)
        try:
            os.close(os.open(tmp, _CREATE, 0o666))
        except FileExistsError:
            created.remove(tmp)
            continue
        return tmp
    raise FileExistsError(f"no free temporary name next to {path} after {_TRIES} tries")


def _unlink_all(paths: list[Path]) -> None:
    for tmp in paths:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _reason(err: OSError) -> str:
    return err.strerror or str(err) or type(err).__name__


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike[str], replace: bool = False, what: str = "output folder") -> Iterator[Path]:
    """Yield an empty temporary folder next to ``path``; fill it. When the block ends without an exception it
    becomes ``path``: a new folder, or (``replace``) in place of an existing one, which is kept until the new one
    is in place. A ``path`` that already holds files without ``replace`` is refused before anything is written (an
    OutputPathError naming it). A failed block, a signal or an OSError leaves no temporary folder (a killed
    writer's is removed by the next one) and the old folder as it was."""
    path = check_new_folder(path, replace, what)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}.{_HOST}-"
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            if entry.name.endswith((".tmpdir", ".olddir")) and _dead_writer(entry.name, prefix):
                shutil.rmtree(entry.path, ignore_errors=True)
    tmp = path.with_name(f"{prefix}{os.getpid()}.{secrets.token_hex(8)}.tmpdir")
    old = tmp.with_suffix(".olddir")
    try:
        tmp.mkdir()
        yield tmp
        with signals_held():
            if path.exists():
                os.replace(path, old)
            os.replace(tmp, path)
    except OSError as err:
        raise WriteError(path, _reason(err)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield the path of an empty temporary file next to ``path``; write it by name (``open``, ``torch.save``,
    ``fig.savefig``, ... ; HDF5 through :func:`hdf5_image`). When the block ends without an exception the file
    replaces ``path`` (see the module doc); the parent folder is created if missing. A write that fails (a full
    disk, a file-size limit, a read-only file system: any OSError in the block, the flush or the rename) is a
    one-line WriteError naming ``path``; the old target is as it was and no temporary file is left.

    ``with atomic_write(out / "report.json") as tmp: tmp.write_text(text)``
    """
    path = Path(path)
    created: list[Path] = []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _create_temp(path, created)
        yield tmp
        _fsync(tmp, os.O_RDONLY)
        os.replace(tmp, path)
    except OSError as err:
        _unlink_all(created)
        raise WriteError(path, _reason(err)) from None
    except BaseException:
        _unlink_all(created)
        raise
    try:
        # The rename is durable once the folder's entry is on disk; folders cannot be opened (Windows) or
        # fsync'ed (some network file systems) everywhere, and the file itself is already safe then.
        _fsync(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        pass


def write_bytes(path: str | os.PathLike[str], data: bytes | memoryview) -> Path:
    """``data`` written to ``path`` atomically (``atomic_write``); returns the path."""
    with atomic_write(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def hdf5_image(fill: Callable[[Any], object]) -> memoryview:
    """The bytes of an HDF5 file that ``fill(h5py.File)`` writes, built in memory. HDF5 writing into a file that
    cannot grow (a full disk, a file-size limit) ends the process with SIGSEGV after pages of library errors;
    built in memory, the file reaches the disk through one ordinary write, whose failure is an OSError."""
    import h5py

    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        fill(f)
    return buffer.getbuffer()


def write_hdf5(path: str | os.PathLike[str], fill: Callable[[Any], object]) -> Path:
    """An HDF5 file that ``fill(h5py.File)`` writes, built in memory (:func:`hdf5_image`) and written atomically."""
    return write_bytes(path, hdf5_image(fill))


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """``text`` written to ``path`` atomically (``atomic_write``); returns the path."""
    with atomic_write(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_json(path: str | os.PathLike[str], obj: Any, indent: int = 1) -> Path:
    """``obj`` as JSON (``indent``, a final newline) written to ``path`` atomically (:func:`json_safe` first);
    returns the path."""
    return write_text(path, json.dumps(json_safe(obj), indent=indent) + "\n")


def json_safe(obj: Any) -> Any:
    """``obj`` as JSON can hold it: NaN and inf as null (JSON has neither), numpy scalars and arrays as plain
    Python (through their ``tolist``; numpy is not imported here), paths and keys as strings."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return json_safe(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


@contextlib.contextmanager
def atomic_write_all(paths: list[Path]) -> Iterator[list[Path]]:
    """``atomic_write`` for a set of files that belong together (a conversion's artifact, ONNX and report): all
    are written to temporary files first, then every old target is checked (:func:`_keep_old`), then the temporary
    files are renamed in the order given with SIGINT and SIGTERM held. The set is replaced whole or not at all: a
    target that cannot be replaced (an immutable file) is found before the first rename, and should a rename still
    fail, the targets already replaced get their old files back. Only SIGKILL or a crash between the renames can mix
    sets; the files carry each other's digests so readers detect it. A failure is one WriteError naming the file."""
    paths = [Path(p) for p in paths]
    created: list[Path] = []
    kept: dict[Path, Path | bool] = {}  # target -> a hard link to its old file, or whether it had one at all
    try:
        for path in paths:
            path.parent.mkdir(parents=True, exist_ok=True)
        temps = [_create_temp(path, created) for path in paths]
        yield temps
        for tmp in temps:
            _fsync(tmp, os.O_RDONLY)
        with signals_held():
            for path in paths:
                kept[path] = _keep_old(path, created)
            for i, (tmp, path) in enumerate(zip(temps, paths, strict=True)):
                try:
                    os.replace(tmp, path)
                except OSError as err:
                    mixed = _restore(paths[:i], kept)
                    outcome = (
                        f"{', '.join(mixed)} of the set already replaced (no hard link here to restore from)"
                        if mixed
                        else "none of the set was replaced"
                    )
                    raise WriteError(path, _reason(err), outcome) from None
    except WriteError:
        _unlink_all(created)
        raise
    except OSError as err:
        _unlink_all(created)
        failed = getattr(err, "filename", None) or paths[0]
        raise WriteError(_target_of(Path(failed), paths), _reason(err), "none of the set was replaced") from None
    except BaseException:
        _unlink_all(created)
        raise
    _unlink_all([link for link in kept.values() if isinstance(link, Path)])
    for folder in {path.parent for path in paths}:
        with contextlib.suppress(OSError):
            _fsync(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))


def _keep_old(path: Path, created: list[Path]) -> Path | bool:
    """A hard link to ``path``'s old file (a temporary name, removed like one), so that a failed rename later in the
    set can put it back; False when there is no old file. Linking fails where renaming onto ``path`` would (an
    immutable or append-only file: EPERM), so it is also the check that the target can be replaced. On file systems
    without hard links only that check is made (True: an old file that could not be kept)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    link = path.with_name(f".{path.name}.{_HOST}-{os.getpid()}.{secrets.token_hex(8)}.tmp{path.suffix}")
    created.append(link)
    try:
        os.link(path, link, follow_symlinks=False)
    except OSError as err:
        created.remove(link)
        if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK) or _immutable(path):
            raise OSError(err.errno, err.strerror, str(path)) from None
        return True  # no hard links here (FAT, some network file systems): nothing to restore from
    return link


def _immutable(path: Path) -> bool:
    """Whether ``path`` carries the immutable or append-only flag (``chattr +i`` / ``+a``), which no rename onto it
    passes; False where the flags cannot be read (not Linux, no permission)."""
    try:
        import fcntl

        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except (ImportError, OSError):
        return False
    try:
        flags = struct.unpack("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(8))[:4])[0]
    except OSError:
        return False
    finally:
        os.close(fd)
    return bool(flags & (_FS_IMMUTABLE_FL | _FS_APPEND_FL))


_FS_IOC_GETFLAGS, _FS_IMMUTABLE_FL, _FS_APPEND_FL = 0x80086601, 0x10, 0x20  # linux/fs.h


def _restore(replaced: list[Path], kept: dict[Path, Path | bool]) -> list[str]:
    """Put the old files of ``replaced`` targets back (a target that had none is removed again); returns the names
    of those that stay replaced (an old file that could not be kept, or a restore that failed)."""
    mixed = []
    for path in reversed(replaced):
        link = kept.get(path, True)
        try:
            if isinstance(link, Path):
                os.replace(link, path)
            elif link is False:
                os.unlink(path)
            else:
                mixed.append(path.name)
        except OSError:
            mixed.append(path.name)
    return mixed


def _target_of(failed: Path, paths: list[Path]) -> Path:
    """The target a failed temporary file or hard link belongs to (the file to name in the error)."""
    for path in paths:
        if failed == path or failed.name.startswith(f".{path.name}.{_HOST}-"):
            return path
    return failed


@contextlib.contextmanager
def signals_held() -> Iterator[list[int]]:
    """SIGINT and SIGTERM noted during the block and sent again after it, to the handlers that are back then (the
    CLI's, Python's Ctrl-C, or an ignore). Python-level handlers, not a signal mask: a mask holds a signal in the
    masked thread only, and the kernel hands it to another thread (torch's pool) whose C handler would still
    interrupt the main thread. Used around a conversion's renames, Lava's forks and a Lava network's stop. Yields
    the signals noted so far (a block that waits may look: a second Ctrl-C during a stop hurries it)."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():  # only the main thread sets handlers
        yield caught
        return
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum)) for sig in held}
    try:
        yield caught
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(caught):
            os.kill(os.getpid(), signum)


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
            if err.errno not in _FULL or (err.filename is not None and not str(err.filename).startswith(tmp)):
                raise
            # numpy's memmaps raise without a file name: the run's own files are the ones that grew
            raise WriteError(
                f"{tmp} (the run's temporary recordings)", f"{_reason(err)}{limit_hint(err.errno)}", "the run stopped"
            ) from None


def run_dir_prefix(kind: str) -> str:
    """The name of a run folder of this process up to its random part: ``spikeport-<kind>-<host>-<pid>-``
    (``kind`` without dashes)."""
    return f"spikeport-{kind}-{_HOST}-{os.getpid()}-"


# the system's reasons for a file that cannot grow
_FULL = (errno.EFBIG, errno.ENOSPC, errno.EDQUOT)
# what a run records of resources outside its folder (LavaSession: shared memory, multiprocessing's folders), so
# that the run that finds the folder of a killed process removes them too
LEFTOVERS_FILE = "leftovers.json"
SHM_DIR = "/dev/shm"
_SHM_NAME = re.compile(r"psm_[0-9a-f]{8}")  # multiprocessing.shared_memory's names
_PYMP_NAME = re.compile(r"pymp-[a-z0-9_]{8}")  # multiprocessing.util.get_temp_dir's folders


def limit_hint(code: int | None) -> str:
    """``: <which limit of the system said no, and its value>`` for an OSError's errno, or '' where no limit did."""
    if code == errno.EFBIG:
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if soft != resource.RLIM_INFINITY:
            return f": the file-size limit, `ulimit -f`, is {soft // 1024} KiB"
    if code in (errno.EMFILE, errno.ENFILE):
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        return f": the open-file limit, `ulimit -n`, is {soft}, too low for this run"
    if code == errno.ENOMEM:
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            return f": the address-space limit, `ulimit -v`, is {soft // 1024} KiB, too low for this run"
    return ""


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
            if not (other and _dead_writer(entry.name, f"spikeport-{other}-{_HOST}-") and entry.is_dir()):
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


def _existing_ancestor(path: Path) -> Path:
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(".")


def _probe_writable(folder: Path, what: str, target: Path) -> None:
    """Create and remove a file in ``folder``: unlike ``os.access`` this also answers for root and read-only
    mounts."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise OutputPathError(f"{what} {target}: cannot write in {folder}: {err.strerror or err}") from None


def check_output_file(path: str | os.PathLike[str], what: str = "output file") -> Path:
    """``path`` can be written as a file: it is not a folder, nothing on its way is a file, its folder (or the
    nearest that exists) is writable. Nothing is created. Raises OutputPathError naming ``what``; returns the
    path with ``~`` expanded."""
    path = Path(path).expanduser()
    try:
        return _check_file(path, what)
    except OSError as err:  # a folder on the way that cannot be searched
        raise OutputPathError(f"{what} {path}: cannot be checked: {err.strerror or err}") from None


def _check_file(path: Path, what: str) -> Path:
    if path.is_dir():
        raise OutputPathError(f"{what} {path}: is a folder, expected a file name")
    if path.exists() and not path.is_file():
        raise OutputPathError(f"{what} {path}: exists and is not a regular file (a FIFO or device)")
    folder = _existing_ancestor(path)
    if not folder.is_dir():
        raise OutputPathError(f"{what} {path}: {folder} on its way is a file, not a folder")
    _probe_writable(folder, what, path)
    return path


def check_new_folder(path: str | os.PathLike[str], replace: bool = False, what: str = "output folder") -> Path:
    """``path`` can become a folder of new files (``atomic_folder``): ``check_output_dir``, and no folder holding
    files there unless ``replace``. Called before the work that fills it, so that it is refused at once."""
    path = check_output_dir(path, what)
    if path.is_dir() and any(path.iterdir()) and not replace:
        raise OutputPathError(f"{what} {path}: already holds files; choose another folder or replace it (--force)")
    return path


def check_not_an_input(
    out: str | os.PathLike[str], inputs: list[str | os.PathLike[str]], what: str = "output file"
) -> None:
    """Refuse an output that is one of the command's inputs (the same file by another name or link included): it
    would be replaced by what was computed from it (`calibrate run.json --out run.json` replaced the measured run
    report with a profile). An OutputPathError naming both; inputs that are no files (a profile's name) pass."""
    target = Path(out).expanduser()
    for given in inputs:
        source = Path(given).expanduser()
        try:
            same = source.resolve() == target.resolve() or (target.exists() and os.path.samefile(source, target))
        except OSError:  # an input that does not exist as a file: nothing of it to overwrite
            continue
        if same:
            raise OutputPathError(f"{what} {target}: is the input {given}; write the result to another file")


def check_output_dir(path: str | os.PathLike[str], what: str = "output folder") -> Path:
    """``path`` is, or can be created as, a writable folder. Nothing is created. Raises OutputPathError; returns
    the path with ``~`` expanded."""
    path = Path(path).expanduser()
    try:
        return _check_dir(path, what)
    except OSError as err:
        raise OutputPathError(f"{what} {path}: cannot be checked: {err.strerror or err}") from None


def _check_dir(path: Path, what: str) -> Path:
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{what} {path}: is a file, expected a folder")
    folder = path if path.is_dir() else _existing_ancestor(path)
    if not folder.is_dir():
        raise OutputPathError(f"{what} {path}: {folder} on its way is a file, not a folder")
    _probe_writable(folder, what, path)
    return path


def write_or_fallback(path: str | os.PathLike[str], write: Callable[[Path], object], what: str) -> Path:
    """``write(path)``; when that fails after a long run (the folder went away, the disk filled up), write the
    same result into the temporary folder instead and raise an OutputPathError that says where it is. ``write``
    must be atomic (``atomic_write``): the fallback file is then complete or absent, never partial; when it cannot
    be written either, the error says that nothing was saved."""
    path = Path(path)
    try:
        write(path)
        return path
    except WriteError as err:
        reason = err.reason
    except OSError as err:
        reason = _reason(err)
    folder = Path(tempfile.gettempdir())
    fallback = folder / f"spikeport-{path.stem}-{secrets.token_hex(6)}{path.suffix}"
    try:
        write(fallback)
    except (WriteError, OSError) as err:
        with contextlib.suppress(OSError):
            os.unlink(fallback)  # a writer that is not atomic
        again = err.reason if isinstance(err, WriteError) else _reason(err)
        raise OutputPathError(
            f"could not write {what} {path} ({reason}), nor save it in {folder} ({again}): nothing was saved"
        ) from None
    raise OutputPathError(f"could not write {what} {path} ({reason}); it is saved at {fallback}")
