"""The deployment artifact: one versioned, self-describing HDF5 file (``<name>.spk.h5``).

Layout (documented field by field in docs/artifact.md):

    /                 attrs: format="spikeport-artifact", schema_version, T, spikeport_version, created
    /meta             attr json: model config, quantization plan and errors, provenance
    /nodes/<i>        one group per node, i = 0..n-1 in topological order
        attrs         name, op, inputs (json list), shape (int array), attrs (json object), digest
        <param>       integer datasets (fletcher32 checksummed), e.g. weight_mant, bias_mant

Writes are atomic (spikeport.atomic). Reading validates, in this order: the file opens as HDF5,
format and schema version, every node's required fields, the per-node content digest (a byte flip or a
hand edit of a parameter is caught and named), then the graph rules of ``spikeport.ir.ops`` (op, attrs,
integer ranges, dtypes, shapes, connectivity). Every failure is an ArtifactError naming the field.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from spikeport import __version__
from spikeport.atomic import atomic_write
from spikeport.errors import ArtifactError, ConversionError
from spikeport.ir.graph import Graph, Node

FORMAT = "spikeport-artifact"
SCHEMA_VERSION = 1
# time steps per sample an artifact may declare: above any Spikformer's T (4) and lava-dl's longest recording
# (ntidigits: 3000), far below what makes a run allocate without end (T = 4278190084 from one flipped byte)
MAX_T = 10_000


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def node_digest(node: Node) -> str:
    h = hashlib.sha256()
    h.update(
        json.dumps(
            [
                node.name,
                node.op,
                node.inputs,
                list(node.shape),
                {k: _jsonable(v) for k, v in sorted(node.attrs.items())},
            ],
            sort_keys=True,
        ).encode()
    )
    for key in sorted(node.params):
        arr = np.ascontiguousarray(node.params[key])
        h.update(key.encode() + str(arr.dtype).encode() + str(arr.shape).encode() + arr.tobytes())
    return h.hexdigest()


def write(graph: Graph, path: str | os.PathLike[str]) -> Path:
    """Write a quantized graph atomically; returns the path."""
    if not graph.quantized:
        raise ConversionError("only quantized graphs are written as deployment artifacts")
    graph.validate()
    path = Path(path)
    with atomic_write(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.attrs.update(
                {
                    "format": FORMAT,
                    "schema_version": SCHEMA_VERSION,
                    "T": graph.T,
                    "spikeport_version": __version__,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            )
            f.create_group("meta").attrs["json"] = json.dumps(graph.meta, default=_jsonable)
            nodes = f.create_group("nodes")
            for i, name in enumerate(graph.order):
                node = graph.nodes[name]
                grp = nodes.create_group(str(i))
                grp.attrs.update(
                    {
                        "name": node.name,
                        "op": node.op,
                        "inputs": json.dumps(node.inputs),
                        "shape": np.asarray(node.shape, np.int64),
                        "attrs": json.dumps({k: _jsonable(v) for k, v in node.attrs.items()}),
                        "digest": node_digest(node),
                    }
                )
                for key, arr in node.params.items():
                    grp.create_dataset(key, data=np.asarray(arr), fletcher32=True)
    return path


def open_hdf5(path: Path) -> h5py.File:
    """An existing HDF5 file opened for reading (artifacts and netx files), or an ArtifactError naming it."""
    if not path.exists():
        raise ArtifactError(path, "<file>", "does not exist")
    if not path.is_file():  # a FIFO would block the open, a folder is no artifact
        raise ArtifactError(path, "<file>", "is not a regular file (a folder, FIFO or device)")
    try:
        return h5py.File(path, "r")
    except OSError as err:
        raise ArtifactError(path, "<file>", f"is not a readable HDF5 file (truncated or corrupted?): {err}") from None


def read_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """An artifact's ``meta`` (provenance: data set, checkpoint, netx source...) without reading its nodes."""
    path = Path(path)
    with open_hdf5(path) as f:
        fmt = _attr(f, path, "/", "format")
        if fmt != FORMAT:
            raise ArtifactError(path, "/format", f"is {fmt!r}, expected {FORMAT!r} (not a spikeport artifact)")
        meta: dict[str, Any] = json.loads(_attr(_group(f, path, "meta"), path, "/meta", "json"))
        return meta


def read(path: str | os.PathLike[str]) -> Graph:
    """Read and fully validate an artifact; raises ArtifactError naming the offending field."""
    path = Path(path)
    with open_hdf5(path) as f:
        fmt = _attr(f, path, "/", "format")
        if fmt != FORMAT:
            raise ArtifactError(path, "/format", f"is {fmt!r}, expected {FORMAT!r} (not a spikeport artifact)")
        version = _int_attr(f, path, "schema_version")
        if version != SCHEMA_VERSION:
            raise ArtifactError(
                path,
                "/schema_version",
                f"is {version}, this spikeport reads version {SCHEMA_VERSION} (re-run `spikeport convert`)",
            )
        T = _int_attr(f, path, "T")
        if not 1 <= T <= MAX_T:
            raise ArtifactError(path, "/@T", f"is {T}, expected 1..{MAX_T} time steps per sample")
        try:
            meta = json.loads(_attr(_group(f, path, "meta"), path, "/meta", "json"))
        except (TypeError, ValueError) as err:
            raise ArtifactError(path, "/meta/@json", f"is not valid JSON: {err}") from None
        if not isinstance(meta, dict):
            raise ArtifactError(path, "/meta/@json", f"is a JSON {type(meta).__name__}, expected an object")
        groups = _group(f, path, "nodes")
        nodes: dict[str, Node] = {}
        for i in range(len(groups)):
            field = f"/nodes/{i}"
            grp = _group(groups, path, str(i), field)
            node = _read_node(grp, path, field)
            if node.name in nodes:
                raise ArtifactError(path, f"{field}/name", f"duplicate node name {node.name!r}")
            nodes[node.name] = node
            digest = _attr(grp, path, field, "digest")
            if node_digest(node) != digest:
                raise ArtifactError(
                    path,
                    f"{field} ({node.name})",
                    "content digest mismatch: the node was modified after it was written (hand edit or corruption)",
                )
    graph = Graph(nodes=nodes, T=T, meta=meta, quantized=True)
    try:
        graph.validate()
    except ConversionError as err:
        raise ArtifactError(path, "/nodes", str(err)) from None
    return graph


def _int_attr(f: h5py.File, path: Path, key: str) -> int:
    """A root attribute that must be an integer: a float (4.9) or a string is refused, not truncated."""
    value = _attr(f, path, "/", key)
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        shown = value.item() if isinstance(value, np.generic) else value
        raise ArtifactError(path, f"/@{key}", f"is {shown!r} ({type(value).__name__}), expected an integer")
    return int(value)


def _attr(obj: Any, path: Path, where: str, key: str) -> Any:
    try:
        value = obj.attrs[key]
    except (KeyError, OSError):
        raise ArtifactError(path, f"{where.rstrip('/')}/@{key}", "is missing") from None
    return value.decode() if isinstance(value, bytes) else value


def _group(parent: Any, path: Path, key: str, field: str | None = None) -> h5py.Group:
    try:
        grp = parent[key]
    except (KeyError, OSError):
        raise ArtifactError(path, field or f"/{key}", "is missing or unreadable") from None
    if not isinstance(grp, h5py.Group):
        raise ArtifactError(path, field or f"/{key}", "is not a group")
    return grp


def _read_node(grp: h5py.Group, path: Path, field: str) -> Node:
    try:
        name, op = str(_attr(grp, path, field, "name")), str(_attr(grp, path, field, "op"))
        inputs = json.loads(_attr(grp, path, field, "inputs"))
        attrs = json.loads(_attr(grp, path, field, "attrs"))
        shape = tuple(int(s) for s in np.asarray(_attr(grp, path, field, "shape")).ravel())
    except (ValueError, TypeError) as err:
        raise ArtifactError(path, field, f"has a malformed attribute: {err}") from None
    if not isinstance(inputs, list) or not all(isinstance(s, str) for s in inputs):
        raise ArtifactError(path, f"{field}/@inputs", "must be a JSON list of node names")
    if not isinstance(attrs, dict):
        raise ArtifactError(path, f"{field}/@attrs", "must be a JSON object")
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}
    params = {}
    for key, ds in grp.items():
        if not isinstance(ds, h5py.Dataset):
            raise ArtifactError(path, f"{field}/{key}", "is not a dataset")
        try:
            params[key] = ds[()]
        except OSError as err:
            raise ArtifactError(path, f"{field}/{key}", f"cannot be read (checksum/corruption): {err}") from None
        if not np.issubdtype(params[key].dtype, np.integer):
            raise ArtifactError(path, f"{field}/{key}", f"has dtype {params[key].dtype}, expected integers")
    return Node(name, op, inputs, attrs, params, shape)
