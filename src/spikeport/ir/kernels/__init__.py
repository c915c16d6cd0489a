"""The kernel records of the IR ops, one module per op, registered by op name in ``KERNELS``.

``kernel(op)`` is the lookup every executor, counter, quantizer and validator uses. A new op is one module
here (its ``Kernel``; see ``base.py`` for the hooks) plus one registration in each backend that maps it;
this package imports every module beside it, so nothing else needs editing (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import pkgutil

from spikeport.ir.graph import Graph
from spikeport.ir.kernels.base import Kernel, OpSpec
from spikeport.ir.registry import Registry

KERNELS: Registry[Kernel] = Registry("kernel record")


def kernel(op: str, node: str | None = None) -> Kernel:
    return KERNELS.get(op, node)


def spec(op: str) -> OpSpec:
    return KERNELS.get(op).spec


def value_kind(graph: Graph, name: str) -> str:
    """What node ``name`` sends: its op's output kind, unless the node names its own ``kind`` (a netx
    network's input carries spikes, not pixels)."""
    node = graph.nodes[name]
    kind: str = node.attrs.get("kind") or spec(node.op).out_kind
    return kind


for _module in pkgutil.iter_modules(__path__):
    if _module.name not in ("base", "synapse"):
        importlib.import_module(f"{__name__}.{_module.name}")
