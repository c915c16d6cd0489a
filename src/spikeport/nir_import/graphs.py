"""A .nir file read and flattened for the mapping: nested sub-graphs inlined, the nodes in topological order.

snnTorch and Norse write a recurrent layer as a NIRGraph node holding ``input -> neuron -> output`` and a weight
node that reads the neuron and feeds it back (``neuron -> w_rec -> neuron``). Inlining names the inner nodes
``outer.inner`` and routes the edges through the sub-graph's Input and Output nodes; :func:`recurrent_edges` finds
the back edges (a weight node whose only input is the neuron it feeds), which a neuron holds as its own recurrent
synapses, so the rest of the graph is acyclic.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spikeport.errors import ArtifactError, ConversionError

if TYPE_CHECKING:
    import nir

# metadata keys a NIR producer may name itself under (NIR 1.0 defines none: snnTorch and Norse write {})
LIBRARY_KEYS = ("library", "framework", "producer", "source", "generator")
WEIGHT_PRIMITIVES = ("Affine", "Linear")  # what a recurrent back edge may be


@dataclass
class FlatGraph:
    """A NIR graph with no nested graph: ``nodes`` (name -> NIR node), ``edges`` (src, dst) in file order."""

    nodes: dict[str, Any]
    edges: list[tuple[str, str]]
    metadata: dict[str, Any]

    def inputs_of(self, name: str) -> list[str]:
        return [s for s, d in self.edges if d == name]

    def readers_of(self, name: str) -> list[str]:
        return [d for s, d in self.edges if s == name]


def primitive(node: Any) -> str:
    """The NIR primitive's name (its class: LIF, Affine, NIRGraph, ...)."""
    return type(node).__name__


def read_nir(path: str | os.PathLike[str]) -> nir.NIRGraph:
    """The NIR graph in ``path``; an ArtifactError naming the file when nir cannot read it as a graph."""
    import nir

    try:
        graph = nir.read(path)
    except (OSError, KeyError, ValueError, TypeError, AttributeError, AssertionError) as err:
        raise ArtifactError(path, "/", f"is not a readable NIR graph ({type(err).__name__}: {err})") from None
    if not isinstance(graph, nir.NIRGraph):
        raise ArtifactError(path, "/node", f"is a single {primitive(graph)} node, expected a NIRGraph")
    return graph


def library_of(graph: nir.NIRGraph) -> str | None:
    """The library that wrote the graph, where its metadata says (None: NIR 1.0 files usually do not)."""
    meta = graph.metadata if isinstance(graph.metadata, dict) else {}
    for key in LIBRARY_KEYS:
        value = meta.get(key)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, str) and value:
            return value
    return None


def flatten(graph: nir.NIRGraph, prefix: str = "") -> FlatGraph:
    """``graph`` with every nested NIRGraph inlined (recursively): its inner nodes as ``outer.inner``, an edge into
    it going to what its Input feeds, an edge out of it coming from what feeds its Output."""
    nodes: dict[str, Any] = {}
    edges: list[tuple[str, str]] = []
    entries: dict[str, list[str]] = {}  # a nested graph -> the inner nodes its Input feeds
    exits: dict[str, list[str]] = {}  # a nested graph -> the inner nodes that feed its Output
    for name, node in graph.nodes.items():
        full = f"{prefix}{name}"
        if primitive(node) != "NIRGraph":
            nodes[full] = node
            continue
        inner = flatten(node, f"{full}.")
        ins = [n for n, x in inner.nodes.items() if primitive(x) == "Input"]
        outs = [n for n, x in inner.nodes.items() if primitive(x) == "Output"]
        if len(ins) != 1 or len(outs) != 1:
            raise ConversionError(
                f"NIR node '{full}' (NIRGraph): a nested graph with {len(ins)} Input and {len(outs)} Output nodes; "
                "spikeport inlines sub-graphs with one of each"
            )
        entries[full] = inner.readers_of(ins[0])
        exits[full] = inner.inputs_of(outs[0])
        nodes.update({n: x for n, x in inner.nodes.items() if n not in (ins[0], outs[0])})
        edges += [(s, d) for s, d in inner.edges if s != ins[0] and d != outs[0]]
    for src, dst in graph.edges:
        for s in exits.get(f"{prefix}{src}", [f"{prefix}{src}"]):
            for d in entries.get(f"{prefix}{dst}", [f"{prefix}{dst}"]):
                edges.append((s, d))
    for s, d in edges:
        for end in (s, d):
            if end not in nodes:
                raise ConversionError(f"NIR edge ({s!r}, {d!r}) names node '{end}', which the graph does not hold")
    meta = graph.metadata if isinstance(graph.metadata, dict) else {}
    return FlatGraph(nodes, edges, dict(meta))


def recurrent_edges(flat: FlatGraph) -> set[tuple[str, str]]:
    """The back edges ``(w, n)`` of recurrent layers: ``w`` an Affine / Linear whose only input is ``n``, which it
    feeds (the neuron reads its own spikes of the previous step through ``w``)."""
    back = set()
    for w, n in flat.edges:
        if primitive(flat.nodes[w]) in WEIGHT_PRIMITIVES and flat.inputs_of(w) == [n] and flat.readers_of(w) == [n]:
            back.add((w, n))
    return back


def topological(flat: FlatGraph, skip: set[tuple[str, str]]) -> list[str]:
    """The nodes in an order where every node comes after its inputs (edges in ``skip`` left out); a
    ConversionError naming a node of a cycle that is no recurrent layer."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for start in flat.nodes:
        stack: list[tuple[str, list[str]]] = [(start, [])]
        while stack:
            name, _ = stack[-1]
            if state.get(name) == 2:
                stack.pop()
                continue
            state[name] = 1
            pending = [s for s in flat.inputs_of(name) if (s, name) not in skip and state.get(s) != 2]
            if not pending:
                state[name] = 2
                order.append(name)
                stack.pop()
                continue
            src = pending[0]
            if state.get(src) == 1:
                raise ConversionError(
                    f"NIR node '{src}' ({primitive(flat.nodes[src])}) is on a cycle that is not a recurrent layer "
                    "(a neuron fed back through one Affine / Linear)"
                )
            stack.append((src, []))
    return order
