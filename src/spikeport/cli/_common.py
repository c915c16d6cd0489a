"""Small helpers shared by the CLI modules: the flags every command spells the same way (docs/cli.md), JSON
output, tables, argparse types."""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

from spikeport import api, file_kinds
from spikeport.atomic import check_output_dir, check_output_file, write_json, write_or_fallback
from spikeport.errors import ConfigError, OutputPathError
from spikeport.report.format import (
    fmt_cell,
    fmt_cell as fmt,  # noqa: F401  (one cell format for every table)
)

STDOUT = "-"
N = TypeVar("N", int, float)  # a number an argparse type reads

if TYPE_CHECKING:
    from rich.console import Console

SUGGEST_CUTOFF = 0.6  # difflib's similarity from which a name is offered: '--samles' -> '--samples'


def echo(*parts: object, sep: str = " ", file: TextIO | None = None, flush: bool = False) -> None:
    """``print`` for prose: on a terminal (or with COLUMNS set) each line wrapped at its width, the continuation
    indented, paths and numbers never broken; into a file or a pipe the lines stay whole (grep finds them)."""
    stream = file if file is not None else sys.stdout
    if "COLUMNS" not in os.environ and not (hasattr(stream, "isatty") and stream.isatty()):
        print(*parts, sep=sep, file=file, flush=flush)
        return
    width = shutil.get_terminal_size((80, 24)).columns
    text = sep.join(str(p) for p in parts)
    lines = []
    for line in text.split("\n"):
        indent = " " * (len(line) - len(line.lstrip(" ")))
        lines.append(
            textwrap.fill(
                line,
                width,
                subsequent_indent=indent + "  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
            if len(line) > width
            else line
        )
    print("\n".join(lines), file=file, flush=flush)


def print_json(obj: object) -> None:
    json.dump(obj, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


# ---- the flags of docs/cli.md ---------------------------------------------------------------------------


def json_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """``--json FILE``: the machine-readable result (``what``) to FILE, or to stdout with ``-`` (or with nothing
    after it: ``_parse.bare_json_as_stdout``). The argument after ``--json`` is always its FILE, and an input file
    there (an artifact, a checkpoint) is refused, never written over. With stdout taken by the JSON, everything else
    a command prints goes to stderr or nowhere."""
    parser.add_argument(
        "--json",
        type=_json_target,
        metavar="FILE",
        help=f"write {what} as JSON to FILE, or to stdout with --json - (then the tables are not printed)",
    )


def _json_target(text: str) -> str:
    if text == STDOUT:
        return text
    kind = file_kinds.sniff(text)
    if kind not in (None, file_kinds.FileKind.JSON, file_kinds.FileKind.RUN_REPORT):
        # `run --json model.spk.h5 other.spk.h5` would have written the JSON over an artifact
        raise argparse.ArgumentTypeError(
            f"{text!r} is {file_kinds.KINDS[kind].what}, not a JSON file to write: --json takes FILE, or - for "
            f"stdout (--json - {text})"
        )
    return output_file(text)


def json_to_stdout(args: argparse.Namespace) -> bool:
    return getattr(args, "json", None) == STDOUT


def emit_json(args: argparse.Namespace, obj: object, what: str = "the result") -> None:
    """The ``--json`` output: to stdout, or atomically to the file (then 'wrote FILE' on stdout, --quiet or not)."""
    target = getattr(args, "json", None)
    if target is None:
        return
    if target == STDOUT:
        print_json(obj)
        return

    write_or_fallback(target, lambda path: write_json(path, obj), what)
    print(f"wrote {target}")


def quiet_flag(parser: argparse.ArgumentParser, what: str = "progress and tables") -> None:
    """``--quiet``: no progress and no tables; errors and the 'wrote FILE' lines are still printed."""
    parser.add_argument("--quiet", action="store_true", help=f"print no {what}, only errors and the files written")


def progress_printer(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Progress lines on stderr, or None with --quiet (and with --json to stdout, stderr stays for progress)."""
    if getattr(args, "quiet", False):
        return None
    return lambda msg: print(msg, file=sys.stderr, flush=True)


def command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    description: str,
    examples: list[str],
    **kw: Any,
) -> argparse.ArgumentParser:
    """A subcommand with its one-line help, its description and examples in its epilog (``--help`` shows them),
    and argparse's errors as one line."""
    epilog = "examples:\n" + "\n".join(f"  {e}" for e in examples)
    p = subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kw,
    )
    return one_line_errors(p)


# ---- tables ---------------------------------------------------------------------------------------------


def table(
    title: str,
    columns: list[str],
    rows: list[list[Any]],
    console: Console | None = None,
    notes: list[str] | None = None,
    optional: tuple[int, ...] = (),
) -> None:
    """A table at the terminal's width (or COLUMNS; 80 on a pipe): rich's, the ``optional`` columns left out
    first where it does not fit, or one block per row where the columns still do not fit without splitting a
    number (report.terminal.print_table)."""
    from spikeport.report.tables import Table
    from spikeport.report.terminal import console as make_console, print_table

    cells: list[list[str | list[str]]] = [[fmt_cell(v) for v in r] for r in rows]
    t = Table(title.replace(" ", "-")[:40], title, list(columns), cells, notes or [], optional=optional)
    print_table(console or make_console(), t)


# argparse types shared by every command: a bad number is refused before any work, in argparse's one line
def _number(text: str, kind: type[N], test: Callable[[N], bool], what: str) -> N:
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
def _path(text: str, check: Callable[[str, str], object]) -> str:

    try:
        return str(check(text, "path"))
    except OutputPathError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def output_file(text: str) -> str:
    return _path(text, check_output_file)


def output_dir(text: str) -> str:
    return _path(text, check_output_dir)


def refuse_flags(given: dict[str, object], why: str) -> None:
    """Flags that do not apply are refused, never ignored: ``given`` maps each flag to its parsed value, None (or
    False for a switch) when it was not given; ``why`` completes "--x does not apply ..."."""
    flags = [flag for flag, value in given.items() if value is not None and value is not False]
    if flags:
        verb = "does" if len(flags) == 1 else "do"
        raise ConfigError(f"{', '.join(flags)} {verb} not apply {why}")


def stderr_line(text: str) -> None:
    """``text`` and its line break on stderr in one write: the ranks of a torchrun job share one stderr, unbuffered
    (torchrun starts them with ``python -u``), and print's two writes (the text, then the line break) ran the ranks'
    error lines together on one line."""
    sys.stderr.write(f"{text}\n")
    sys.stderr.flush()


def one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """argparse prints the usage block on a bad flag value; spikeport prints one line and exits 2 (build_parser
    applies it to every command)."""

    def error(message: str) -> NoReturn:
        stderr_line(f"{parser.prog}: error: {suggest_choice(message)}")
        sys.exit(2)

    parser.error = error  # type: ignore[method-assign]  # argparse offers no hook for how it reports an error
    return parser


def suggest_choice(message: str) -> str:
    """argparse's "invalid choice: 'rnu' (choose from 'info', 'run', ...)" with "; did you mean 'run'?" added."""
    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not found:
        return message
    choices = re.findall(r"'([^']*)'", found.group(2))
    close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=SUGGEST_CUTOFF)
    return f"{message}; did you mean '{close[0]}'?" if close else message


def warn_stale_report(digest: str | None, path: str, command: str) -> None:
    """One line on stderr when the conversion report beside an artifact is another conversion's."""

    problem = api.stale_conversion_report(digest, path)
    if problem:
        stderr_line(f"spikeport {command}: warning: {problem}")


def deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str, **kw: Any) -> None:
    """``old``, a flag's spelling before ``new`` (one name per idea across commands): the same destination, hidden
    from --help, and a warning on stderr once the command has run (a refusal stays one line: ``deprecation_notes``)
    when a script still uses it."""
    dest = next(a.dest for a in parser._actions if new in a.option_strings)

    class Alias(argparse.Action):
        def __call__(
            self,
            _parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: Any,
            _option: str | None = None,
        ) -> None:
            setattr(namespace, self.dest, values)
            setattr(namespace, f"_typed_{self.dest}", old)  # a refusal names the flag as it was typed
            notes = getattr(namespace, "_deprecated", [])
            namespace._deprecated = [*notes, f"{parser.prog}: warning: {old} is deprecated: write {new}"]

    parser.add_argument(old, dest=dest, action=Alias, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kw)


def deprecation_notes(args: argparse.Namespace) -> None:
    """The warnings of the deprecated spellings a command ran with, on stderr after its output."""
    for note in getattr(args, "_deprecated", []):
        print(note, file=sys.stderr)


def typed(args: argparse.Namespace, flag: str) -> str:
    """``flag`` as the user typed it: its deprecated alias where that was used."""
    return getattr(args, f"_typed_{flag.lstrip('-').replace('-', '_')}", flag)


def bool_flag(parser: argparse.ArgumentParser, name: str, help: str) -> None:
    """--name / --no-name, default None (keep the preset's value)."""
    parser.add_argument(
        f"--{name}", dest=name.replace("-", "_"), action=argparse.BooleanOptionalAction, default=None, help=help
    )
