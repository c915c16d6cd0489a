"""Progress of long steps on stderr, one convention for every command (docs/cli.md).

On a terminal: a line when each stage starts, and a tqdm bar inside the stages that loop over batches. Elsewhere
(a log file, CI, a pipe): one line per stage when it is done, with its seconds, and no bars, so that a log shows
what ran and how long without a bar's redraws, and a command that fails prints its one error line alone (a
stage that fails is not printed). ``done()`` closes the last stage. ``Progress(enabled=False)`` (``--quiet``)
prints nothing.

:class:`Bar` is the one loop over batches every long step uses (training, the reference simulators, analyze, the
conversion's comparison): a tqdm bar on a terminal; in a log a plain line every ``LOG_EVERY_S`` seconds (a
SLURM log of a long epoch is not empty until the epoch ends) and never a carriage return, which a log file keeps
as one endless line of redraws.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import Any, Generic, TextIO, TypeVar

from tqdm import tqdm

X = TypeVar("X")

LOG_EVERY_S = 30.0  # off a terminal: a loop's line at most this often (the first one after this long)


def is_terminal(stream: TextIO | None) -> bool:
    """Whether ``stream`` (None: stderr) is a terminal: bars and redraws go there, lines everywhere else."""
    try:
        return bool((stream if stream is not None else sys.stderr).isatty())
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def _plural(unit: str) -> str:
    return unit + ("es" if unit.endswith(("ch", "sh", "s", "x")) else "s")


class Bar(Generic[X]):
    """``items`` with progress: a tqdm bar on a terminal (``leave=False``: it disappears when done); elsewhere a
    line ``desc: i/total units (s s, postfix)`` every ``every_s`` seconds (default ``LOG_EVERY_S``); nothing when
    not ``enabled``. ``set_postfix`` (as tqdm's) adds the figures a line ends with (a training batch's loss)."""

    def __init__(
        self,
        items: Iterable[X],
        total: int | None = None,
        desc: str = "",
        unit: str = "batch",
        *,
        stream: TextIO | None = None,
        enabled: bool = True,
        every_s: float | None = None,
    ) -> None:
        self.items, self.desc, self.unit, self.stream = items, desc, unit, stream
        self.every_s = LOG_EVERY_S if every_s is None else every_s  # read now: a test sets it to 0
        self.enabled = enabled
        self.total = total if total is not None else (len(items) if isinstance(items, Sized) else None)
        self.postfix: dict[str, Any] = {}
        self.tqdm: tqdm[X] | None = None

    def set_postfix(self, **values: Any) -> None:
        self.postfix = values
        if self.tqdm is not None:
            self.tqdm.set_postfix(**values)

    def __iter__(self) -> Iterator[X]:
        if not self.enabled:
            yield from self.items
            return
        out = self.stream if self.stream is not None else sys.stderr
        if is_terminal(out):
            self.tqdm = tqdm(
                self.items, total=self.total, desc=self.desc, unit=self.unit, leave=False, dynamic_ncols=True, file=out
            )
            yield from self.tqdm
            return
        start = last = time.perf_counter()
        for i, item in enumerate(self.items, 1):
            yield item
            now = time.perf_counter()
            if now - last >= self.every_s:
                last = now
                of = f"/{self.total}" if self.total is not None else ""
                extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
                print(f"{self.desc}: {i}{of} {_plural(self.unit)} ({now - start:.0f} s{extra})", file=out, flush=True)


class Progress:
    """Stage lines (``stage``) and bars (``bar``) for one command, prefixed with its name."""

    def __init__(self, what: str, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.what = what
        self.enabled = enabled
        self.stream = stream
        self.start = time.perf_counter()
        self.pending: tuple[str, float] | None = None  # off a terminal: the stage under way, printed when done

    @property
    def out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    @property
    def terminal(self) -> bool:
        try:
            return self.enabled and self.out.isatty()
        except (AttributeError, ValueError):
            return False

    def stage(self, text: str) -> None:
        """A new stage: its line now on a terminal; elsewhere the previous stage's line, now that it is done."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.terminal:
            print(f"{self.what} [{now - self.start:5.0f} s] {text}", file=self.out, flush=True)
            return
        self.done()
        self.pending = (text, now)

    def done(self) -> None:
        """Off a terminal: the line of the stage under way, with the seconds it took."""
        if self.pending is not None and self.enabled:
            text, began = self.pending
            now = time.perf_counter()
            print(f"{self.what} [{now - self.start:5.0f} s] {text} ({now - began:.1f} s)", file=self.out, flush=True)
        self.pending = None

    def bar(self, items: Iterable[X], total: int | None = None, desc: str = "", unit: str = "batch") -> Iterator[X]:
        """``items`` with a :class:`Bar`: on a terminal a bar, in a log a line every ``LOG_EVERY_S`` seconds."""
        yield from Bar(items, total, f"{self.what} {desc}".strip(), unit, stream=self.out, enabled=self.enabled)


QUIET = Progress("", enabled=False)


def progress_of(value: bool | Progress | Callable[[str], None] | None, what: str) -> Progress:
    """A Progress from what an API function was given: True / False, a Progress, or a function of one line."""
    if isinstance(value, Progress):
        return value
    if callable(value):
        say = value

        class Lines(Progress):
            def stage(self, text: str) -> None:
                say(f"{what}: {text}")

            def done(self) -> None:
                pass

        return Lines(what)
    return Progress(what, enabled=bool(value))
