"""The one way spikeport opens an HDF5 file it did not build itself: artifacts (``ir/artifact.py``), lava-dl netx
files (``netx/read.py``; ``netx/schema.py`` checks what netx reads of them) and whatever sniffs a path for either
(``netx.read.is_netx_file``, ``train.checkpoint.read`` given an HDF5 file).

HDF5 can reach outside its file: an external link opens another file (a FIFO blocks the reader, a device is read),
external raw storage reads a dataset's bytes from other files, a virtual dataset maps other files' datasets, and a
dataset whose filter is not one of the library's own makes HDF5 load a plugin (code) from ``HDF5_PLUGIN_PATH``. A
small file can also declare datasets of gigabytes: compressed, or never written (read back as fill values). Before
the file is handed to a reader, :func:`open_hdf5` walks every link of the file without following any (``H5Lvisit``
recurses through hard links only) and looks at each dataset's creation properties and header, never its data: one
``ArtifactError`` naming the file and the object refuses

- a link that is neither a hard nor a soft link (external links, user-defined link types);
- a dataset with external storage, a virtual layout or a filter outside HDF5's built-in ones;
- a dataset of more than ``limits.MAX_PARAM_ELEMENTS`` elements, or whose declared bytes exceed ``MAX_INFLATION``
  times the bytes it stores in the file once above ``SMALL_BYTES`` (a compression bomb, or an unwritten dataset);
- more than ``MAX_LINKS`` links (the walk itself stays bounded).

Soft links stay: they name a path inside the same file, whose objects the walk checks where they are hard-linked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np

from spikeport.errors import ArtifactError
from spikeport.ir import limits

# what h5py raises on a damaged file: OSError from the library, RuntimeError from a damaged B-tree or heap,
# KeyError / ValueError from a damaged name or type
HDF5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)
# HDF5's built-in filters (H5Zpublic.h): deflate, shuffle, fletcher32, szip, nbit, scale-offset. Any other id is
# a plugin, which HDF5 would look for and load as a shared library when the dataset is read
BUILTIN_FILTERS = {1: "deflate", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scale-offset"}
MAX_INFLATION = 256  # declared bytes per stored byte: deflate inflates real weights 2-20x; a bomb ~1000x
SMALL_BYTES = 1 << 24  # 16 MiB: a dataset that small may inflate as it likes (a zero bias, an unwritten flag)
MAX_LINKS = 1_000_000  # an artifact of limits.MAX_NODES nodes holds ~60 000


def open_hdf5(path: Path) -> h5py.File:
    """An existing HDF5 file opened for reading, checked as the module says, or an ArtifactError naming it."""
    try:
        exists, regular = path.exists(), path.is_file()
    except OSError as err:  # a folder on the way that cannot be searched
        raise ArtifactError(path, "<file>", f"cannot be read: {err.strerror or err}") from None
    if not exists:
        raise ArtifactError(path, "<file>", "does not exist")
    if not regular:  # a FIFO would block the open, a folder is no artifact
        raise ArtifactError(path, "<file>", "is not a regular file (a folder, FIFO or device)")
    try:
        f = h5py.File(path, "r")
    except HDF5_ERRORS as err:
        raise ArtifactError(path, "<file>", f"is not a readable HDF5 file (truncated or corrupted?): {err}") from None
    try:
        check_contained(f, path)
    except BaseException:
        f.close()
        raise
    return f


def check_contained(f: h5py.File, path: Path) -> None:
    """Every link of ``f`` stays in the file and every dataset reads from the file alone, in bounded memory."""
    links: list[tuple[bytes, int]] = []

    def visit(name: bytes, info: Any) -> int | None:  # no h5py call in here: the library's lock is held
        links.append((name, info.type))
        return 1 if len(links) > MAX_LINKS else None  # anything but None stops the walk

    try:
        f.id.links.visit(visit, info=True)
        for name, kind in links:
            problem = _link_problem(f, name, kind) if len(links) <= MAX_LINKS else f"more than {MAX_LINKS} links"
            if problem:
                raise ArtifactError(path, "/" + name.decode("utf-8", "replace"), problem)
    except (*HDF5_ERRORS, SystemError) as err:
        reason = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
        raise ArtifactError(
            path, "<file>", f"damaged HDF5 structure (corrupted or truncated?): {type(err).__name__}: {reason}"
        ) from None


def _link_problem(f: h5py.File, name: bytes, kind: int) -> str | None:
    if kind == h5py.h5l.TYPE_EXTERNAL:
        return f"is an external link to {_target(f.id.links.get_val(name))}: spikeport reads nothing outside the file"
    if kind == h5py.h5l.TYPE_HARD:
        obj = h5py.h5o.open(f.id, name)
        return _dataset_problem(obj) if isinstance(obj, h5py.h5d.DatasetID) else None
    if kind != h5py.h5l.TYPE_SOFT:
        return f"is a link of a user-defined type ({kind})"
    return None


def _target(value: Any) -> str:
    """An external link's target, as HDF5 gives it: (file, object) in bytes."""
    try:
        file, obj = (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in value)
    except (TypeError, ValueError):
        return repr(value)[:120]
    return f"'{file[:100]}':{obj[:100]}"


def _dataset_problem(ds: h5py.h5d.DatasetID) -> str | None:
    """What makes a dataset read from outside the file, load a plugin or inflate without bound, or None."""
    plist = ds.get_create_plist()
    if plist.get_layout() == h5py.h5d.VIRTUAL:
        return "is a virtual dataset (its values are mapped from other files): spikeport reads nothing outside the file"
    if plist.get_external_count():
        name = plist.get_external(0)[0]
        where = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        return (
            f"stores its values in {plist.get_external_count()} external file(s) ('{where[:100]}'): spikeport reads "
            "nothing outside the file"
        )
    for i in range(plist.get_nfilters()):
        code = int(plist.get_filter(i)[0])
        if code not in BUILTIN_FILTERS:
            return (
                f"is written through HDF5 filter {code}, a plugin (spikeport reads HDF5's built-in filters only: "
                f"{', '.join(BUILTIN_FILTERS.values())})"
            )
    space = ds.get_space()
    shape = () if space.get_simple_extent_type() == h5py.h5s.NULL else tuple(space.shape)
    elements = 0 if space.get_simple_extent_type() == h5py.h5s.NULL else int(np.prod(shape, dtype=np.float64))
    if elements > limits.MAX_PARAM_ELEMENTS:  # before the read: an unwritten or compressed dataset is tiny on disk
        return f"has {elements} elements {tuple(shape)}, the limit is {limits.MAX_PARAM_ELEMENTS}"
    declared, stored = elements * ds.get_type().get_size(), ds.get_storage_size()
    if declared > SMALL_BYTES and declared > MAX_INFLATION * stored:
        return (
            f"declares {declared} bytes {tuple(shape)} but stores {stored} in the file: a dataset that inflates more "
            f"than {MAX_INFLATION}x (a compression bomb, or never written) is not read"
        )
    return None
