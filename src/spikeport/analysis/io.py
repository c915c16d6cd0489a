"""The diagnostics' outputs (JSON, PNG, HTML), each written through :func:`spikeport.atomic.atomic_write`:
never a half-written file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from spikeport.atomic import atomic_write

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def save_figure(fig: Figure, path: str | os.PathLike, dpi: int = 110) -> Path:
    import matplotlib.pyplot as plt

    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)
    return Path(path)
