"""What Lava's Loihi 2 compiler prints when it maps a network: the partitioner's messages and the per-core table, read
into records (``CompileTable``). The public tables (the saved outputs of lava-dl's tutorial notebooks) are the core
model's golden data (``hw_profiles/compile_tables/*.json``, ``tests/test_core_model.py``); a bundle run on Loihi 2
saves its own, which ``spikeport calibrate`` refits the core model on and ``report`` shows beside check-hw's cores.

Two forms are printed, one row per layer from the last layer to the first:

    Per core distribution:                       (counts on the layer's fullest core)
    | AxonIn |NeuronGr| Neurons|Synapses| AxonMap| AxonMem|  Cores |
    |    2560|       1|       8|    7253|       8|       0|      12|
    |       2|       1|    3072|      81|     253|      93|      25|Conv(4, 32, 24)

    Per core utilization:                        (percentages of a core's budgets)
    | AxonIn |NeuronGr| Neurons|Synapses| AxonMap| AxonMem|  Total |  Cores |
    |   0.01%|  12.50%|  87.52%|  86.40%|   0.35%|   0.17%|  87.47%|      32|Conv(8, 7, 64)

and, before either, the partitioner's messages: ``Violation core_id=3 reg_name='SynMem' allocation=61440
self.cost_db.registers[reg_name]=12000``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spikeport.errors import DataError

COLUMNS = ("AxonIn", "NeuronGr", "Neurons", "Synapses", "AxonMap", "AxonMem")
_VIOLATION = re.compile(r"Violation core_id=(\d+) reg_name='(\w+)' allocation=(\d+) .*registers\[reg_name\]=(\d+)")
_BLOCK = re.compile(r"Conv\(([\d, ]+)\)")
MAX_TEXT = 1 << 20  # a compile log's table part is a few kB


@dataclass(frozen=True)
class TableRow:
    """One layer of the table: its fullest core's ``values`` (``COLUMNS``; counts, or percentages of a core's
    budget in a utilization table), its ``cores`` and the block a core holds where printed (Conv(W, H, C))."""

    values: dict[str, float]
    cores: int
    block: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Violation:
    """A partitioner message: a core's ``register`` allocated past its ``budget`` before the split."""

    core: int
    register: str
    allocation: int
    budget: int


@dataclass(frozen=True)
class CompileTable:
    """A compile log's table and messages; ``percent``: a utilization table (percentages of a core's budgets)."""

    rows: tuple[TableRow, ...]
    total: int
    percent: bool
    violations: tuple[Violation, ...] = ()

    @classmethod
    def parse(cls, lines: Sequence[str] | str, where: str) -> CompileTable:
        """The table and messages in a compile log's ``lines``; DataError naming ``where`` where it holds none."""
        text = lines.splitlines() if isinstance(lines, str) else list(lines)
        if sum(len(line) for line in text) > MAX_TEXT:
            raise DataError(f"{where}: more than {MAX_TEXT:,} characters of compile log, not a compile table")
        violations = tuple(
            Violation(int(m[1]), m[2], int(m[3]), int(m[4])) for m in (_VIOLATION.search(t) for t in text) if m
        )
        header = next((i for i, t in enumerate(text) if t.replace(" ", "").startswith("|AxonIn|")), None)
        if header is None:
            raise DataError(f"{where}: no per-core table (a line '| AxonIn |NeuronGr| ...') in the compile log")
        names = [c.strip() for c in text[header].strip().strip("|").split("|")]
        if list(names[: len(COLUMNS)]) != list(COLUMNS) or names[-1] != "Cores":
            raise DataError(f"{where}: table columns {names}, expected {', '.join(COLUMNS)} ... Cores")
        rows, total = [], None
        for line in text[header + 1 :]:
            if line.startswith("| Total"):
                total = int(line.strip().strip("|").split("|")[-1])
                break
            if not line.startswith("|") or line.startswith("|--"):
                continue
            rows.append(_row(line, names, where))
        if total is None:
            raise DataError(f"{where}: the per-core table has no '| Total' line")
        percent = any(t.strip().startswith("|") and "%" in t for t in text[header:])
        return cls(tuple(rows), total, percent, violations)


def _row(line: str, names: list[str], where: str) -> TableRow:
    body, _, tail = line.rstrip().rpartition("|")
    cells = [c.strip() for c in body.strip().strip("|").split("|")]
    if len(cells) != len(names):
        raise DataError(f"{where}: table row {line!r} has {len(cells)} cells, the header {len(names)}")
    try:
        values = {name: float(cell.rstrip("%")) for name, cell in zip(names[: len(COLUMNS)], cells, strict=False)}
        cores = int(cells[-1])
    except ValueError:
        raise DataError(f"{where}: table row {line!r}: expected numbers") from None
    block = _BLOCK.search(tail)
    return TableRow(values, cores, tuple(int(x) for x in block[1].split(",")) if block else None)


@dataclass(frozen=True)
class PublicTable:
    """A compile table Lava's compiler printed for one of lava-dl's networks, with where it comes from and the
    spikeport neuron group each row is (``rows``, the table's order)."""

    name: str
    table: CompileTable
    groups: tuple[str, ...]
    source: dict[str, Any]
    network: dict[str, Any]
    run: str

    def cores(self) -> dict[str, int]:
        """Intel's cores per neuron group."""
        return {g: r.cores for g, r in zip(self.groups, self.table.rows, strict=True)}


TABLES = Path(__file__).resolve().parents[2] / "hw_profiles" / "compile_tables"


def public_tables() -> dict[str, PublicTable]:
    """The public compile tables shipped with spikeport, by network (hw_profiles/compile_tables/*.json)."""
    out = {}
    for path in sorted(TABLES.glob("*.json")):
        data = json.loads(path.read_text())
        table = CompileTable.parse(data["text"], str(path))
        if len(data["rows"]) != len(table.rows):
            raise DataError(f"{path}: 'rows' names {len(data['rows'])} groups for {len(table.rows)} table rows")
        out[data["name"]] = PublicTable(
            data["name"], table, tuple(data["rows"]), data["source"], data["network"], data["run"]
        )
    return out
