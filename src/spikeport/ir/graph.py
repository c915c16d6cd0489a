"""The deployment IR: a small graph of typed nodes (numpy only; no torch, no lava).

A node has a name (the torch module path it came from), an ``op`` (an op with a kernel record in
``spikeport.ir.kernels``), its input node names, scalar attributes, array parameters and its output shape
*per sample and time step* (channels-last: ``(H, W, C)`` maps, ``(N, C)`` tokens, ``(classes,)`` logits).
``T`` is explicit on the graph. The graph is the same object before quantization (float params) and after
(integer params); ``Graph.quantized`` says which.

This module is data only: it knows no op. ``spikeport.ir.ops`` checks a graph against the ops' records
(``validate``) and fills in its shapes (``infer_shapes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spikeport.brief import brief_repr
from spikeport.errors import ConversionError


@dataclass
class Node:
    name: str
    op: str
    inputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    params: dict[str, np.ndarray] = field(default_factory=dict)
    shape: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        self.shape = tuple(int(s) for s in self.shape)


@dataclass
class Graph:
    nodes: dict[str, Node]
    T: int
    meta: dict[str, Any] = field(default_factory=dict)  # model config, provenance, calibration notes
    quantized: bool = False
    digest: str | None = None  # the root digest of the artifact file it was read from or written to

    BRIEF = ("nodes", "T", "quantized", "digest")  # print(graph): its size, not its weights
    __repr__ = brief_repr

    @property
    def order(self) -> list[str]:
        """Topological order (insertion order is kept when it is already topological)."""
        seen: set[str] = set()
        out: list[str] = []

        def visit(name: str, stack: tuple[str, ...]) -> None:
            if name in seen:
                return
            if name in stack:
                raise ConversionError(f"graph has a cycle through node '{name}'")
            for src in self.nodes[name].inputs:
                visit(src, stack + (name,))
            seen.add(name)
            out.append(name)

        for name in self.nodes:
            visit(name, ())
        return out

    def consumers(self, name: str) -> list[Node]:
        return [n for n in self.nodes.values() if name in n.inputs]

    def last_readers(self) -> dict[str, list[str]]:
        """Per node, the outputs whose last reader (in graph order) it is, its own included when nothing reads it:
        an executor drops them once that node has run, so a step holds only the outputs still to be read."""
        last: dict[str, str] = {}
        for name in self.order:
            last[name] = name
            for src in self.nodes[name].inputs:
                last[src] = name
        done: dict[str, list[str]] = {name: [] for name in self.order}
        for name, reader in last.items():
            done[reader].append(name)
        return done

    def add(self, node: Node) -> Node:
        if node.name in self.nodes:
            raise ConversionError(f"duplicate node name '{node.name}'")
        self.nodes[node.name] = node
        return node

    def inputs_of(self, node: Node) -> list[Node]:
        return [self.nodes[s] for s in node.inputs]

    def by_op(self, op: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.op == op]
