"""OS-process helpers for the hygiene tests (what a run leaves behind, signals under load)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

# A background job of a non-interactive shell (`.ci/run &`, a scheduler's script) starts with SIGINT ignored
# (POSIX), and exec keeps an ignored signal ignored: every Python below it, spikeport included, then ignores Ctrl-C,
# as every program there does. That, not the load, lost the interrupts of issue 42. A test of Ctrl-C starts its
# child through this launcher, which gives the child SIGINT's default disposition before it execs Python (which
# then installs its own Ctrl-C handler), whatever the test runner inherited.
DEFAULT_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])",
]


def with_ctrl_c(argv: list[str]) -> list[str]:
    """``argv`` (a Python command line: ``[sys.executable, ...]``) started with SIGINT at its default."""
    assert argv[0] == sys.executable
    return [*DEFAULT_SIGINT, *argv]


def process_group(pgid: int) -> list[int]:
    """The pids still alive in process group ``pgid``."""
    out = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.getpgid(int(entry)) == pgid:
                out.append(int(entry))
        except OSError:
            pass
    return out


BUSY_PROCESSES = 4  # on the project's 2-core machines: each core shared three ways with the test's own work


@contextlib.contextmanager
def busy_cores(n: int = BUSY_PROCESSES) -> Iterator[None]:
    """``n`` processes that burn CPU for the block, and SIGINT ignored in this process as a background job of a
    non-interactive shell inherits it: the conditions of the CI run that lost its interrupts (issue 42)."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL, start_new_session=True)
        for _ in range(n)
    ]
    ignored_before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, ignored_before)
        for hog in hogs:
            hog.kill()
            hog.wait()
