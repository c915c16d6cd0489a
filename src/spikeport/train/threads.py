"""torch's intra-op thread count set for a block of work and restored after it (the demo's conversions, the CPU
timing of a baseline). torch is imported on use: the modules that call this load without it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[int]:
    """``threads`` intra-op threads for the block (None or 0: torch's count as it is); yields the count in effect."""
    import torch

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield threads or before
    finally:
        torch.set_num_threads(before)
