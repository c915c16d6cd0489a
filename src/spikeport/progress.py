"""Progress of long steps on stderr, one convention for every command (docs/cli.md).

On a terminal: a line when each stage starts, and a tqdm bar inside the stages that loop over batches. Elsewhere
(a log file, CI, a pipe): one line per stage when it is done, with its seconds, and no bars, so that a log shows
what ran and how long without a bar's redraws, and a command that fails prints its one error line alone (a
stage that fails is not printed). ``done()`` closes the last stage. ``Progress(enabled=False)`` (``--quiet``)
prints nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

from tqdm import tqdm

X = TypeVar("X")


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
        """``items`` with a bar on a terminal (``leave=False``: it disappears when done); plain elsewhere."""
        if not self.terminal:
            yield from items
            return

        yield from tqdm(items, total=total, desc=desc, unit=unit, leave=False, dynamic_ncols=True, file=self.out)


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
