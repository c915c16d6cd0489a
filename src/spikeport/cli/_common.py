"""Small helpers shared by the CLI modules: JSON output, tables, choices."""

from __future__ import annotations

import json
import sys


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def table(title: str, columns: list[str], rows: list[list], console=None) -> None:
    """A rich table that never cuts a name or a number: in a narrow terminal the first column (names) and the
    numeric columns keep their full width and the other text columns wrap."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for i, c in enumerate(columns):
        numeric = bool(rows) and all(isinstance(r[i], (int, float)) for r in rows if r[i] != "")
        whole = numeric or i == 0
        t.add_column(c, justify="right" if numeric else "left", no_wrap=whole, overflow="ellipsis" if whole else "fold")
    for r in rows:
        t.add_row(*[fmt(v) for v in r])
    if console is None:
        console = Console()
        if not console.is_terminal:  # files and pipes: do not squeeze layer names into 80 columns
            console = Console(width=160)
    console.print(t)


# argparse types shared by every command: a bad number is refused before any work, in argparse's one line
def _number(text: str, kind: type, test, what: str):
    import argparse
    import math

    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if (kind is float and not math.isfinite(value)) or not test(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, lambda v: v > 0, "a positive integer")


def nonnegative_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 0, "an integer >= 0")


def positive_float(text: str) -> float:
    return _number(text, float, lambda v: v > 0, "a finite number > 0")


def finite_float(text: str) -> float:
    return _number(text, float, lambda v: True, "a finite number")


def shape_arg(text: str) -> tuple[int, ...]:
    """A shape such as ``34,34,2``: positive integers separated by commas."""
    import argparse

    try:
        shape = tuple(int(s) for s in text.split(","))
    except ValueError:
        shape = ()
    if not shape or any(s <= 0 for s in shape):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a shape (positive integers separated by commas, e.g. 34,34,2)"
        )
    return shape


# output paths, checked by the same argparse types: a folder where a file goes, a file on the way, a read-only
# folder are refused before the work that would fill them
def _path(text: str, check) -> str:
    import argparse

    from spikeport.errors import OutputPathError

    try:
        return str(check(text, "path"))
    except OutputPathError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def output_file(text: str) -> str:
    from spikeport.atomic import check_output_file

    return _path(text, check_output_file)


def output_dir(text: str) -> str:
    from spikeport.atomic import check_output_dir

    return _path(text, check_output_dir)


def refuse_flags(given: dict[str, object], why: str) -> None:
    """Flags that do not apply are refused, never ignored: ``given`` maps each flag to its parsed value, None (or
    False for a switch) when it was not given; ``why`` completes "--x does not apply ..."."""
    from spikeport.errors import ConfigError

    flags = [flag for flag, value in given.items() if value is not None and value is not False]
    if flags:
        verb = "does" if len(flags) == 1 else "do"
        raise ConfigError(f"{', '.join(flags)} {verb} not apply {why}")


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def one_line_errors(parser):
    """argparse prints the usage block on a bad flag value; spikeport prints one line and exits 2 (build_parser
    applies it to every command)."""
    import sys

    def error(message: str):
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)

    parser.error = error
    return parser


def warn_stale_report(digest: str | None, path: str, command: str) -> None:
    """One line on stderr when the conversion report beside an artifact is another conversion's."""
    import sys

    from spikeport.ir.artifact import stale_report

    problem = stale_report(digest, path)
    if problem:
        print(f"spikeport {command}: warning: {problem}", file=sys.stderr)


def bool_flag(parser, name: str, help: str) -> None:
    """--name / --no-name, default None (keep the preset's value)."""
    import argparse

    parser.add_argument(
        f"--{name}", dest=name.replace("-", "_"), action=argparse.BooleanOptionalAction, default=None, help=help
    )
