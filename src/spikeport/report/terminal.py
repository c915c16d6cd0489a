"""The report in a terminal: the tables of ``report.tables`` as rich tables that fit the console's width.

The width is rich's: the terminal's, or ``COLUMNS`` when set (pipes and files: 80 columns otherwise). A table
that cannot fit without breaking a number or a word in two is printed as records instead (one block per row,
``column: value`` lines), so that nothing is cut or split, at 80 columns as at 200.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TextIO

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from spikeport.report import tables as T
from spikeport.report.format import fmt_accuracy, plural
from spikeport.report.model import ReportSummary

if TYPE_CHECKING:
    from rich.console import Console


def console(file: TextIO | None = None) -> Console:
    """A console on ``file`` (stdout) with rich's width: the terminal's, else COLUMNS, else 80."""
    return Console(file=file, highlight=False, soft_wrap=False)


def say(con: Console, text: str, indent: int = 0) -> None:
    """A line of prose, wrapped at the console's width (no markup: brackets are text)."""
    con.print(Padding(Text(text), (0, 0, 0, indent)) if indent else Text(text), markup=False)


def cell_text(cell: T.Cell) -> str:
    return "; ".join(cell) if isinstance(cell, list) else str(cell)


def print_table(con: Console, table: T.Table) -> None:
    """``table`` as a rich table at the console's width: where its columns do not fit without splitting a word or a
    number, the optional columns go first (a note names them), then it is printed as records."""
    rows = [[cell_text(c) for c in row] for row in table.rows]
    keep = list(range(len(table.columns)))
    dropped: list[str] = []
    for i in table.optional:
        if _fits(con, table, rows, keep):
            break
        keep.remove(i)
        dropped.append(table.columns[i])
    if _fits(con, table, rows, keep):
        con.print(_rich(table, rows, keep, width=con.width, overhead=_overhead(con, table, rows, keep)))
        if dropped:
            say(con, f"(left out at {con.width} columns: {', '.join(dropped)}; wider: COLUMNS=160, or --json)", 2)
    else:  # too many columns for this width: one block per row, nothing folded mid-word
        say(con, table.title)
        for r in rows:
            say(con, r[0] or "-", 2)
            for name, value in zip(table.columns[1:], r[1:], strict=True):
                say(con, f"{name}: {value}" if name else value, 4)
    for note in table.notes:
        say(con, note, 2)


def _rich(
    table: T.Table,
    rows: list[list[str]],
    keep: list[int],
    words: bool = False,
    width: int | None = None,
    overhead: int = 0,
) -> Table:
    """The rich table of the ``keep`` columns. ``words``: each cell cut to its longest word, no wrapping (the
    narrowest the table can be without splitting a word). ``width``: fit it, columns never narrower than their
    longest word, the space left shared in proportion to what each column would use unwrapped."""
    cells = [[table.columns[i], *[r[i] for r in rows]] for i in keep]
    narrowest = [max(len(_longest_word(x)) for x in col) for col in cells]
    natural = [max(len(x) for x in col) for col in cells]
    widths: list[int | None] = [None] * len(keep)
    if width is not None and not words:
        room = width - overhead - sum(narrowest)  # overhead: edges, separators and padding
        want = [n - m for n, m in zip(natural, narrowest, strict=True)]
        if room < sum(want):
            share = [room * w // max(sum(want), 1) for w in want]
            widths = [m + s for m, s in zip(narrowest, share, strict=True)]
    t = Table(title=Text(table.title), box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    for j, i in enumerate(keep):
        numeric = bool(rows) and i >= table.left and i not in table.text and all(_numberish(r[i]) for r in rows)
        name = _longest_word(table.columns[i]) if words else table.columns[i]
        t.add_column(
            Text(name), justify="right" if numeric else "left", overflow="fold", no_wrap=words, width=widths[j]
        )
    for r in rows:
        t.add_row(*[Text(_longest_word(r[i]) if words else r[i]) for i in keep])
    return t


def _longest_word(text: str) -> str:
    """The longest piece a line may not be broken in: a word, or a number with its unit ('3.072 kB')."""
    words: list[str] = []
    for w in text.split():
        if words and (_UNIT.fullmatch(w) and _NUMBER.fullmatch(words[-1].split(" ")[-1]) or words[-1] == ".."):
            words[-1] += " " + w
        else:
            words.append(w)
    return max(words or [""], key=len)


_NUMBER = re.compile(r"[~(]?-?[\d.,]+")
_UNIT = re.compile(r"[a-zA-Z%]{1,4}[),;]?")


def _narrowest(con: Console, table: T.Table, rows: list[list[str]], keep: list[int]) -> int:
    """The width of the table with every cell cut to its longest word (rich clamps a measurement to the width it
    is given: measured against an unbounded one)."""
    wide = con.options.update(width=1 << 20, max_width=1 << 20)
    return int(_rich(table, rows, keep, words=True).__rich_measure__(con, wide).maximum)


def _overhead(con: Console, table: T.Table, rows: list[list[str]], keep: list[int]) -> int:
    words = sum(max(len(_longest_word(x)) for x in [table.columns[i], *[r[i] for r in rows]]) for i in keep)
    return _narrowest(con, table, rows, keep) - words


def _fits(con: Console, table: T.Table, rows: list[list[str]], keep: list[int]) -> bool:
    return _narrowest(con, table, rows, keep) <= con.width


def _numberish(text: str) -> bool:
    """A cell that is one figure (digits, separators, a unit): right-aligned."""
    if not text or text == "-":
        return True
    head = text.split(" ")[0].replace(",", "").replace(".", "").replace("%", "").replace("x", "").lstrip("~-")
    return head.isdigit() and len(text) <= 14


def render(s: ReportSummary, con: Console, detail: bool = False) -> None:
    """The report: the headline, the answer per model and the memory story per model, then (``detail``) the paper's
    claim, each run, the state counted and the analytic memory; the caveats last. Without ``detail`` one line says
    how to get the rest."""
    for line in s.headline:
        say(con, line)
    con.print()
    print_table(con, T.answer(s))
    con.print()
    print_table(con, T.memory_story(s))
    if not detail:
        con.print()
        say(
            con,
            f"Per run ({plural(len(s.runs), 'run')}: per-layer counts, every estimate, the GPU and CPU tables, model "
            "state, notes), the paper's claim and the analytic memory: the same command with --detail, or --html "
            "FILE (folded there). Terms: docs/glossary.md.",
        )
    else:
        _detail(s, con)
    con.print()
    say(con, "read before quoting a number:")
    for c in s.caveats:
        say(con, f"- {c}", 2)


def _detail(s: ReportSummary, con: Console) -> None:
    claim = T.claim(s)
    if claim is not None:
        con.print()
        print_table(con, claim)
    for i, r in enumerate(s.runs):
        con.print()
        say(con, f"run {i + 1} of {len(s.runs)}: {r.source}")
        say(con, f"counts by {r.counts_by}", 2)
        say(con, T.run_role(s, r), 2)
        say(
            con,
            f"attention {r.attention or '-'}, T={r.T}, {plural(r.samples, 'sample')}, accuracy "
            f"{fmt_accuracy(r.accuracy)}; figures per inference, averaged over this run's samples",
            2,
        )
        for table in (T.layers(r, i), T.energy(r, i), T.gpu(r, i), T.comparison(r, i)):
            if table is not None:
                print_table(con, table)
        say(con, T.model_state_line(r), 2)
        for note in r.notes:
            say(con, f"note: {note}", 2)
    con.print()
    print_table(con, T.counted_state(s))
    analytic = T.analytic(s)
    if analytic is not None:
        print_table(con, analytic)
