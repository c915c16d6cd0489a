"""Progress of long steps on stderr, one convention for every command (docs/cli.md).

On a terminal: a line when each stage starts, and a tqdm bar inside the stages that loop over batches. Elsewhere
(a log file, CI, a pipe): the same one line per stage and no bars, so that a log shows what ran and when without
a bar's redraws. ``Progress(enabled=False)`` (``--quiet``) prints nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

X = TypeVar("X")


class Progress:
    """Stage lines (``stage``) and bars (``bar``) for one command, prefixed with its name."""

    def __init__(self, what: str, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.what = what
        self.enabled = enabled
        self.stream = stream
        self.start = time.perf_counter()

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
        """One line: the command, the seconds since it started, the stage."""
        if self.enabled:
            print(f"{self.what} [{time.perf_counter() - self.start:5.0f} s] {text}", file=self.out, flush=True)

    def bar(self, items: Iterable[X], total: int | None = None, desc: str = "", unit: str = "batch") -> Iterator[X]:
        """``items`` with a bar on a terminal (``leave=False``: it disappears when done); plain elsewhere."""
        if not self.terminal:
            yield from items
            return
        from tqdm import tqdm

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

        return Lines(what)
    return Progress(what, enabled=bool(value))
