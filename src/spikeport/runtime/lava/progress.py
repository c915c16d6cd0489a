"""Progress of a Lava network coming up: processes built, compiled, started (forked), then the steps run.

A spikformer-4-384 network is hundreds of Lava processes and takes a minute to come up on 2 cores (Lava forks one
OS process per ProcessModel), silently until now. On a terminal each stage is a tqdm bar; otherwise (logs, CI)
one line per finished stage on stderr, no redraws:

    lava build: 307 processes in 1.2 s
    lava compile: 307 processes in 3.4 s
    lava start: 309 OS processes in 41.0 s
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from tqdm import tqdm

Advance = Callable[[int], None]


class StageProgress:
    """Reports the stages of one Lava network (``label`` names it, e.g. a part of a partitioned run)."""

    def __init__(self, enabled: bool = True, label: str = "lava", stream: Any = None) -> None:
        self.enabled, self.label = enabled, label
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())

    @contextlib.contextmanager
    def stage(self, name: str, unit: str, total: int | None = None) -> Iterator[Advance]:
        """A stage; the block calls the yielded ``advance(n)`` as it goes."""
        done = [0]
        bar = None
        if self.enabled and self.terminal:
            bar = tqdm(total=total, desc=f"{self.label} {name}", unit=f" {unit}", file=self.stream, leave=False)

        def advance(n: int = 1) -> None:
            done[0] += n
            if bar is not None:
                bar.update(n)

        start = time.perf_counter()
        try:
            yield advance
        finally:
            if bar is not None:
                bar.close()
        if self.enabled:
            print(f"{self.label} {name}: {done[0]} {unit} in {time.perf_counter() - start:.1f} s", file=self.stream)


QUIET = StageProgress(enabled=False)

# The stage that counts the forks of the runtime now starting (None outside LavaSession.start): os.register_at_fork
# runs its after_in_parent hook in the parent after every fork Lava makes.
_FORKS: dict[str, Advance | None] = {"advance": None}


def _forked() -> None:
    advance = _FORKS["advance"]
    if advance is not None:
        advance(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_parent=_forked)


@contextlib.contextmanager
def counting_forks(advance: Advance) -> Iterator[None]:
    """Every fork of this process inside the block calls ``advance(1)``."""
    _FORKS["advance"] = advance
    try:
        yield
    finally:
        _FORKS["advance"] = None
