"""What a file given to a command is, from its first bytes: a wrong file type is named as such, with the command
that takes it, before a reader of another format calls it damaged ("not a readable HDF5 file (truncated or
corrupted?)" for a checkpoint given to `run`).

:func:`sniff` reads at most a few kilobytes (and an HDF5 file's root names, never its data); :func:`expect` refuses a
file of a known kind that the command does not read, with what the file is and the command to run instead. A file
of no known kind (or one that cannot be read) passes: its reader says what is wrong with it, naming the field.
:func:`sniff_file` and :func:`expect_file` also name where an artifact came from (its meta's ``source``), from the
same look: what ``runtime.sources`` tells the kinds of input apart by, without opening the file again.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from spikeport.errors import ConfigError

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
NUMPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
# torch.save's legacy (pre-1.6) format opens with this magic number, pickled as a long
TORCH_LEGACY_MAGIC = b"\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"
HEAD_BYTES = 4096  # a JSON file's schema name is in its first line (spikeport writes it first)
ARTIFACT_FORMAT = "spikeport-artifact"  # ir.artifact.FORMAT (ir sits above this module)


class FileKind(str, Enum):
    """The kinds of file spikeport's commands read or write; a ``str`` equal to its name."""

    ARTIFACT = "artifact"
    NETX = "netx"
    NIR = "nir"
    HDF5 = "hdf5"  # another HDF5 file
    CHECKPOINT = "checkpoint"
    ONNX = "onnx"
    RUN_REPORT = "run_report"
    JSON = "json"  # another JSON file (a report's, check-hw's, an export's)
    NUMPY = "numpy"
    PICKLE = "pickle"
    ZIP = "zip"  # another zip archive


@dataclass(frozen=True)
class Kind:
    what: str  # what the file is, as a noun phrase
    hint: str  # what to do with it: the command that takes it ({path}: the file)


KINDS: dict[FileKind, Kind] = {
    FileKind.ARTIFACT: Kind(
        "a spikeport artifact (converted: `spikeport convert` wrote it)",
        "run it (spikeport run {path} --json run.json), then report the run reports",
    ),
    FileKind.NETX: Kind(
        "a lava-dl netx network",
        "run it (spikeport run {path} --inputs X.npy) or convert it (spikeport convert {path} --out DIR)",
    ),
    FileKind.NIR: Kind(
        "a NIR graph (snnTorch, Norse, `spikeport export --nir`, ... write it)",
        "convert it: spikeport convert {path} --out DIR --inputs SAMPLES.npy [--labels L.npy] --dt SECONDS",
    ),
    FileKind.HDF5: Kind(
        "an HDF5 file that is neither a spikeport artifact nor a lava-dl netx network",
        "give an artifact (.spk.h5) or a netx file (.net)",
    ),
    FileKind.CHECKPOINT: Kind(
        "a torch checkpoint (trained, not converted)",
        "run `spikeport convert` first: spikeport convert {path} --out build/NAME, then use build/NAME/model.spk.h5",
    ),
    FileKind.ONNX: Kind(
        "an ONNX model (the float GPU baseline `spikeport convert` writes beside the artifact)",
        "spikeport's commands read the artifact written beside it (model.spk.h5) or the checkpoint it came from",
    ),
    FileKind.RUN_REPORT: Kind("a run report (JSON)", "report it: spikeport report {path}"),
    FileKind.JSON: Kind("a JSON file", "give the file the command reads (its --help lists them)"),
    FileKind.NUMPY: Kind(
        "a NumPy array (.npy)", "netx networks read inputs from it: spikeport run NET --inputs {path}"
    ),
    FileKind.PICKLE: Kind(
        "a raw Python pickle", "spikeport loads torch checkpoints only in torch's weights-only format (torch.save)"
    ),
    FileKind.ZIP: Kind(
        "a zip archive (not a torch checkpoint)", "give the file the command reads (its --help lists them)"
    ),
}

# what each reader accepts, by name: the commands' positional arguments
ARTIFACTS = frozenset({FileKind.ARTIFACT, FileKind.NETX})  # run, check-hw (an artifact or a netx file)
ARTIFACT_ONLY = frozenset({FileKind.ARTIFACT})  # inspect, bundle, export --netx, the Lava embedding
CHECKPOINTS = frozenset({FileKind.CHECKPOINT})  # export --nir / --onnx, analyze
CONVERTIBLE = frozenset({FileKind.CHECKPOINT, FileKind.NETX, FileKind.NIR})  # convert
RUN_REPORTS = frozenset({FileKind.RUN_REPORT, FileKind.JSON})  # report, calibrate (the reader checks the schema)
EXPECTED = {
    ARTIFACTS: "an artifact (.spk.h5) or a lava-dl netx file",
    ARTIFACT_ONLY: "an artifact (.spk.h5)",
    CHECKPOINTS: "a checkpoint (runs/NAME/checkpoint.pt)",
    CONVERTIBLE: "a checkpoint (runs/NAME/checkpoint.pt), a lava-dl netx file or a NIR graph",
    RUN_REPORTS: "a run report (`spikeport run ... --json FILE` writes it)",
}


@dataclass(frozen=True)
class Sniffed:
    """What a file is, from one look at it: its kind (None: of no known kind) and, for an artifact, what it was
    converted from (its meta's ``source``: ``netx``, ``nir``; None for a checkpoint's). The origin is read, not
    checked: the artifact's reader checks the meta against the file's digest."""

    kind: FileKind | None
    origin: str | None = None


def sniff(path: str | os.PathLike[str]) -> FileKind | None:
    """The kind of file at ``path`` from its first bytes, or None: no file there, not a regular file, unreadable,
    empty, or of no kind spikeport knows (text, a damaged file)."""
    return sniff_file(path).kind


def sniff_file(path: str | os.PathLike[str]) -> Sniffed:
    """The kind of file at ``path`` (:func:`sniff`) and, for an artifact, its origin, from one look."""
    path = Path(path)
    try:
        if not path.is_file():  # a FIFO would block the read
            return Sniffed(None)
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return Sniffed(None)
    if head.startswith(HDF5_MAGIC):
        return _hdf5_kind(path)
    if head.startswith(NUMPY_MAGIC):
        return Sniffed(FileKind.NUMPY)
    if head.startswith(ZIP_MAGIC):
        return Sniffed(_zip_kind(path))
    if head.startswith(b"\x80"):  # a pickle's PROTO opcode
        return Sniffed(FileKind.CHECKPOINT if TORCH_LEGACY_MAGIC in head[:32] else FileKind.PICKLE)
    if head.lstrip()[:1] in (b"{", b"["):
        return Sniffed(FileKind.RUN_REPORT if json_schema(path) == "spikeport.run" else FileKind.JSON)
    # ONNX is a protobuf ModelProto: no magic number; its first field is ir_version (tag 0x08), then the producer
    if path.suffix.lower() == ".onnx" or (head[:1] == b"\x08" and b"pytorch" in head[:64]):
        return Sniffed(FileKind.ONNX)
    return Sniffed(None)


def _hdf5_kind(path: Path) -> Sniffed:
    import h5py  # numpy with it: loaded by a command that reads a file, not by `spikeport --help`

    try:
        with h5py.File(path, "r") as f:  # root names and attributes only: no link is followed, no data read
            if f.attrs.get("format") in (ARTIFACT_FORMAT, ARTIFACT_FORMAT.encode()):
                return Sniffed(FileKind.ARTIFACT, _artifact_origin(f))
            if "layer" in f:
                return Sniffed(FileKind.NETX)
            if "node" in f and "version" in f:
                return Sniffed(FileKind.NIR)
    except (OSError, RuntimeError, KeyError, ValueError, TypeError):  # damaged: no kind, its reader says where
        return Sniffed(None)
    return Sniffed(FileKind.HDF5)


def _artifact_origin(f: Any) -> str | None:
    """An artifact's meta ``source`` (``/meta/@json``), or None where it names none or cannot be read here."""
    import h5py

    if not isinstance(f.get("meta", getlink=True), h5py.HardLink):  # any other link: its reader refuses it by name
        return None
    text = f["meta"].attrs.get("json")
    try:
        source = json.loads(text.decode() if isinstance(text, bytes) else text).get("source")
    except (AttributeError, TypeError, ValueError, RecursionError):
        return None
    return source if isinstance(source, str) else None


def _zip_kind(path: Path) -> FileKind:
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (OSError, zipfile.BadZipFile, ValueError):  # a truncated checkpoint: torch's reader says so
        return FileKind.CHECKPOINT
    if any(n.endswith("/data.pkl") or n == "data.pkl" for n in names):
        return FileKind.CHECKPOINT
    if names and all(n.endswith(".npy") for n in names):
        return FileKind.NUMPY  # an .npz
    return FileKind.ZIP


def describe(kind: FileKind, path: str | os.PathLike[str]) -> str:
    """What a file of ``kind`` is and what to do with it, one clause each (a JSON file's schema named)."""
    k = KINDS[kind]
    what = k.what
    if kind is FileKind.JSON and (schema := json_schema(path)):
        what += f" of schema {schema}"
    return f"{what}; {k.hint.format(path=path)}"


def json_schema(path: str | os.PathLike[str]) -> str | None:
    """The ``schema`` a JSON file names in its first kilobytes (spikeport writes it first), or None."""
    try:
        with open(path, "rb") as f:
            found = re.search(rb'"schema"\s*:\s*"([^"]*)"', f.read(HEAD_BYTES))
    except OSError:
        return None
    return found.group(1).decode("utf-8", "replace") if found else None


def expect(path: str | os.PathLike[str], accepted: frozenset[FileKind], command: str) -> FileKind | None:
    """The kind of ``path`` when ``command`` reads it (or when it is of no known kind: its reader checks it); a
    ConfigError naming what it is and the command that takes it otherwise."""
    return expect_file(path, accepted, command).kind


def expect_file(path: str | os.PathLike[str], accepted: frozenset[FileKind], command: str) -> Sniffed:
    """:func:`expect`, with the artifact's origin (:class:`Sniffed`) from the same look."""
    sniffed = sniff_file(path)
    kind = sniffed.kind
    if kind is None or kind in accepted:
        return sniffed
    expected = EXPECTED.get(accepted, " or ".join(KINDS[k].what for k in sorted(accepted)))
    raise ConfigError(f"{path}: {command} reads {expected}; this is {describe(kind, path)}")
