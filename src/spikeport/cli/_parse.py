"""The command line as typed, before and around argparse: a bare command prints its usage and examples, a mistyped
command or flag gets "did you mean", and ``--json`` with no FILE (the last argument, or before another flag) means
``--json -`` as it always did, while ``--json X`` always writes to X: an input file there is refused
(``_common._json_target``) and a positional it took is named when the command then misses it.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import NoReturn

from spikeport.cli._common import STDOUT, SUGGEST_CUTOFF


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)`` with the rules of the module doc; exits 2 with one line (or the usage of a bare
    command) on stderr, as argparse does."""
    argv, _ = bare_json_as_stdout(list(sys.argv[1:] if argv is None else argv))
    path, leaf, summary = command_path(parser, argv)
    if not argv:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: give a command; `{parser.prog} --help` lists them", file=sys.stderr)
        sys.exit(2)
    if path and argv == path and needs_arguments(leaf):
        print(short_usage(leaf, summary), file=sys.stderr)
        sys.exit(2)
    taken = json_file(argv)
    if taken is not None:  # `info --json digits-tiny`: say where the preset went, not only that it is missing
        refuse = leaf.error

        def error(message: str) -> NoReturn:
            if message.startswith("the following arguments are required"):
                message += f" (--json took {taken!r} as the file to write; --json - prints to stdout)"
            refuse(message)

        leaf.error = error  # type: ignore[method-assign]
    args, extras = parser.parse_known_args(argv)
    if extras:
        leaf.error(f"unrecognized arguments: {' '.join(extras)}{suggest_flag(leaf, extras)}")
    return args


def json_file(argv: list[str]) -> str | None:
    """The FILE given to ``--json`` (None for stdout or none)."""
    for i, arg in enumerate(argv):
        if arg == "--":
            return None
        if arg.startswith("--json="):
            value = arg.split("=", 1)[1]
            return None if value == STDOUT else value
        if arg == "--json" and i + 1 < len(argv) and argv[i + 1] != STDOUT:
            return argv[i + 1]
    return None


def bare_json_as_stdout(argv: list[str]) -> tuple[list[str], bool]:
    """``--json`` with no FILE (the last argument, or followed by another flag) as ``--json -`` (stdout), the
    shorthand scripts use; and whether it was used."""
    out: list[str] = []
    used = False
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:], used
        following = argv[i + 1] if i + 1 < len(argv) else None
        if arg == "--json" and (following is None or (following.startswith("-") and following != STDOUT)):
            out.append(f"--json={STDOUT}")
            used = True
        else:
            out.append(arg)
    return out, used


def subparsers(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """A parser's subcommands: name -> (parser, its one-line help)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return {}


def command_path(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[list[str], argparse.ArgumentParser, str]:
    """The (sub)command names at the start of ``argv`` (``bench gpu``), the parser of the last one and its help."""
    path: list[str] = []
    summary = ""
    for arg in argv:
        found = subparsers(parser).get(arg)
        if found is None:
            break
        path.append(arg)
        parser, summary = found
    return path, parser, summary


def needs_arguments(parser: argparse.ArgumentParser) -> bool:
    """Whether the command refuses to run with no arguments: a required positional, option or subcommand (or
    ``bare_usage`` set by a command whose positional is optional only beside a flag, as convert's)."""
    if getattr(parser, "bare_usage", False):
        return True
    return any(a.required for a in parser._actions if not isinstance(a, argparse._HelpAction))


def short_usage(parser: argparse.ArgumentParser, summary: str) -> str:
    """A bare command's answer: what it takes, what it does, examples to copy, where every flag is."""
    required: list[str] = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            required.append("{" + ",".join(a.choices) + "}")
        elif not a.option_strings and a.nargs != argparse.SUPPRESS:
            name = str(a.metavar or a.dest.upper())
            required.append(name if a.nargs in (None, 1) else f"{name} ..." if a.nargs in ("+", "*") else f"[{name}]")
        elif a.required:
            required.append(f"{a.option_strings[0]} {str(a.metavar or a.dest.upper())}")
    lines = [f"usage: {parser.prog} {' '.join(required)} [options]"]
    if summary:
        lines.append(f"{parser.prog}: {summary}")
    if parser.epilog:
        lines.append(parser.epilog)
    lines.append(f"every flag: {parser.prog} --help")
    return "\n".join(lines)


def suggest_flag(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """ "; did you mean --samples?" for the first unknown flag that is close to one of the command's."""
    flags = [opt for a in parser._actions for opt in a.option_strings if opt.startswith("--")]
    for extra in extras:
        if extra.startswith("-"):
            close = difflib.get_close_matches(extra.split("=", 1)[0], flags, n=1, cutoff=SUGGEST_CUTOFF)
            if close:
                return f"; did you mean {close[0]}?"
    return ""
