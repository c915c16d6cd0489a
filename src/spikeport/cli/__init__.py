"""`spikeport` command line: a thin layer over the Python API.

Each subcommand lives in its own module ``spikeport/cli/<name>.py`` exposing
``register(subparsers)``, which adds a parser and sets ``func`` (``args -> int | None``). Heavy imports
(torch, lava) happen inside ``func`` so that ``spikeport --help`` and deploy-only installs stay fast.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import importlib.util
import os
import signal
import sys
import threading
from types import FrameType

from spikeport import __version__, api
from spikeport.atomic import limit_hint
from spikeport.cli._common import deprecation_notes, one_line_errors, stderr_line
from spikeport.cli._parse import parse
from spikeport.errors import SpikeportError

# Order is the order in `spikeport --help`: the pipeline first, then the diagnostics.
COMMANDS = (
    "info",
    "train",
    "convert",
    "inspect",
    "run",
    "check_hw",
    "bundle",
    "calibrate",
    "export",
    "report",
    "bench",
    "memory",
    "demo",
    "simulate",
    "analyze",
    "ablation",
)


EPILOG = """the pipeline:
  spikeport train --preset digits-tiny --attention lrf_dyn --out runs/digits-lrf_dyn
  spikeport convert runs/digits-lrf_dyn/checkpoint.pt --out build/digits-lrf_dyn
  spikeport run build/digits-lrf_dyn/model.spk.h5 --backend lava --compare reference --samples 24 --json lava.json
  spikeport report lava.json --html report.html
or all of it on the embedded digits data: spikeport demo

every command: --json FILE (machine-readable; --json - to stdout), --quiet (the result line only), --out DIR for
folders, --help (docs/cli.md)"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spikeport",
        description="Spiking transformers from PyTorch to Intel Lava / Loihi 2: train, convert, run, report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"spikeport {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        if importlib.util.find_spec(f"spikeport.cli.{name}") is not None:
            importlib.import_module(f"spikeport.cli.{name}").register(sub)
    _one_line_errors_everywhere(parser)
    return parser


def _one_line_errors_everywhere(parser: argparse.ArgumentParser) -> None:
    one_line_errors(parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _one_line_errors_everywhere(sub)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a job scheduler, `timeout`), raised like Ctrl-C so that the same clean-up runs: the Lava network
    stopped, its shared memory and temporary folder removed."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    api.leave_no_torchrun_folders()  # under torchrun: its launcher's empty folders go when the job's ranks exit
    parser = build_parser()
    args = parse(parser, argv)  # argparse's, with usage for a bare command and "did you mean" (cli/_parse.py)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        status = int(args.func(args) or 0)
        deprecation_notes(args)  # after the output, and never before an error's one line
        _flush_stdout()  # `spikeport inspect --json > out.json` on a full disk fails here, not at exit
        return status
    except SpikeportError as err:
        _error(args.command, str(err))
        return 2
    except BrokenPipeError:  # `spikeport info ... | head`
        sys.stderr.close()
        return 0
    except OSError as err:  # a write no writer of spikeport made (a redirected stdout), a limit of the system
        _error(args.command, _os_error(err))
        _discard_stdout()
        return 2
    except MemoryError:
        _error(args.command, f"out of memory{limit_hint(errno.ENOMEM)}")
        return 2
    except ImportError as err:  # torch or Lava that cannot load: under `ulimit -v`, a broken install
        reason = str(err).split("\n")[0]
        hint = limit_hint(errno.ENOMEM) if "map" in reason or "memory" in reason.lower() else ""
        _error(args.command, f"could not load {_imported_package(err)} ({reason}){hint}")
        return 2
    except Terminated:
        stderr_line(f"spikeport {args.command}: terminated (SIGTERM)")
        return 143
    except KeyboardInterrupt:
        stderr_line(f"spikeport {args.command}: interrupted")
        return 130


def _os_error(err: OSError) -> str:
    """An OSError that no part of spikeport turned into a message: the file it names; else stdout where stdout is
    what fails (a redirected stdout on a full disk); else the system's reason and the limit behind it, if any (an
    open-file limit reached inside a library says nothing about stdout)."""
    reason = f"{err.strerror or err}{limit_hint(err.errno)}"
    if err.filename:
        return f"{err.filename}: {reason}"
    return f"the output (stdout): {reason}" if _stdout_fails() else reason


def _imported_package(err: ImportError) -> str:
    """The package whose import failed: the first module outside spikeport and importlib on the traceback (torch
    for torch._C's shared library), else the name the error gives."""
    tb = err.__traceback__
    while tb is not None:
        name = str(tb.tb_frame.f_globals.get("__name__", ""))
        if name and not name.startswith(("spikeport", "importlib", "_frozen_importlib")):
            return name.split(".")[0]
        tb = tb.tb_next
    return (err.name or "a module").split(".")[0]


def _stdout_fails() -> bool:
    try:
        sys.stdout.flush()  # what a failed write left in the buffer is written again: it fails again
    except OSError:
        return True
    except ValueError:  # closed
        return False
    return False


MAX_ERROR_CHARS = 2000  # a message that quotes a damaged file's content stays readable


def _error(command: str, message: str) -> None:
    """The one line an error is: line breaks joined, a message beyond MAX_ERROR_CHARS cut (a YAML error can quote a
    whole line of the file)."""
    line = " ".join(message.split("\n"))
    if len(line) > MAX_ERROR_CHARS:
        line = f"{line[: MAX_ERROR_CHARS - 30]}... ({len(line) - MAX_ERROR_CHARS + 30} characters more)"
    stderr_line(f"spikeport {command}: error: {line}")


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except OSError:
        _discard_stdout()
        raise


def _discard_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's own flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (captured in tests)
        pass


if __name__ == "__main__":
    sys.exit(main())
