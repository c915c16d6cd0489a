"""Per-op tables: the one way spikeport dispatches on an IR op name.

Every part that treats ops differently (the kernel records in ``spikeport.ir.kernels``, the Lava lowering,
the netx / NIR exporters, check-hw) keeps a ``Registry`` and registers one entry per op from its own
package, the way hls4ml registers a handler per layer type: adding an op means adding its kernel record and
one registration per backend that supports it (tests/test_op_dispatch.py checks every op of ``KERNELS`` has one).
Outside ``ir/`` an op name is named only where a stage is about that op itself: the torch frontend's passes
(which create lif, conv and readout nodes), QAT and the exporters looking up the readout, and the report's
LIF-layer rows (a neuron op other than ``lif`` is not in those rows yet).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from spikeport.errors import ConversionError

T = TypeVar("T")


class Registry(Generic[T]):
    """``op name -> entry`` for one purpose (``what``: e.g. "Lava lowering"), filled by ``register``."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._table: dict[str, T] = {}
        self.refused: dict[str, str] = {}  # op -> why this backend has no entry for it (said when it is asked)

    def refuse(self, op: str, why: str) -> None:
        """Declare that ``op`` has no entry here, and why: ``get`` says so, naming the node."""
        if op in self._table:
            raise ValueError(f"{self.what}: op '{op}' is registered and refused")
        self.refused[op] = why

    def add(self, op: str, entry: T) -> T:
        if op in self._table:
            raise ValueError(f"{self.what}: op '{op}' is registered twice")
        self._table[op] = entry
        return entry

    def register(self, *ops: str) -> Callable[[T], T]:
        """Decorator: ``@LOWERINGS.register("conv")`` above the entry (a function or record) for ``ops``."""

        def decorate(entry: T) -> T:
            for op in ops:
                self.add(op, entry)
            return entry

        return decorate

    def get(self, op: str, node: str | None = None) -> T:
        """The entry of ``op``; a ConversionError naming the node and the registered ops if there is none."""
        try:
            return self._table[op]
        except KeyError:
            where = f"node '{node}': " if node else ""
            why = f" ({self.refused[op]})" if op in self.refused else ""
            raise ConversionError(
                f"{where}op '{op}' has no {self.what}{why}; ops with one: {', '.join(sorted(self._table))}"
            ) from None

    def find(self, op: str) -> T | None:
        return self._table.get(op)

    def __contains__(self, op: object) -> bool:
        return op in self._table

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._table))

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._table.items())
