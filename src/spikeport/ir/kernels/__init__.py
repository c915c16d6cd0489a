"""The kernel records of the IR ops, one module per op, registered by op name in ``KERNELS``.

``kernel(op)`` is the lookup every executor, counter, quantizer and validator uses. A new op is one module
here (its ``Kernel``; see ``base.py`` for the hooks) plus one registration in each backend that maps it;
this package imports every module beside it, so nothing else needs editing (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import pkgutil

from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels.base import Kernel, KernelRole, OpSpec
from spikeport.ir.registry import Registry
from spikeport.value_kinds import SPIKES, VALUE_KINDS, ValueKind, densest

KERNELS: Registry[Kernel] = Registry("kernel record")


def kernel(op: str, node: str | None = None) -> Kernel:
    return KERNELS.get(op, node)


def role(op: str) -> KernelRole:
    """What an op is to the reports (``KernelRole``); OTHER for an op this version has no record of (a run report
    written by another version counts it nowhere special, and its layer row still shows it)."""
    found = KERNELS.find(op)
    return found.role if found is not None else KernelRole.OTHER


def fires(op: str) -> bool:
    """Whether an op's output is spikes (its rows count firing): declared by its record's out_kind."""
    found = KERNELS.find(op)
    return found is not None and found.spec.out_kind is SPIKES


def spec(op: str) -> OpSpec:
    return KERNELS.get(op).spec


def value_kind(graph: Graph, name: str) -> ValueKind:
    """What node ``name`` sends: its op's output kind, unless the node names its own ``kind`` (a netx
    network's input carries spikes, not pixels)."""
    node = graph.nodes[name]
    declared = node.attrs.get("kind")
    if declared is None:
        return spec(node.op).out_kind
    kind = VALUE_KINDS.find(declared)
    if kind is None:
        raise ConversionError(
            f"node '{name}' ({node.op}): attribute 'kind' = {declared!r} is not a value kind; "
            f"known kinds: {', '.join(VALUE_KINDS)}"
        )
    return kind


def input_kind(graph: Graph, node: Node) -> ValueKind:
    """The kind a node's run report row gives as its input: the densest it reads (``ValueKind.precedence``;
    ``none`` for the input layer). Its counts follow that kind."""
    return densest(value_kind(graph, src) for src in node.inputs)


for _module in pkgutil.iter_modules(__path__):
    if _module.name not in ("base", "synapse"):
        importlib.import_module(f"{__name__}.{_module.name}")
