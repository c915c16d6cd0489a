"""OS-process helpers for the hygiene tests (what a run leaves behind)."""

from __future__ import annotations

import os


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
